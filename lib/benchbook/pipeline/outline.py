"""A page's outline, made at export: every section heading gets an id and a link to itself, and the
table of contents under the findings box lists every section.

Page modules write ``<h2>`` headings (with a chosen id through ``display.heading(..., id=...)`` when
the findings box links to them, or none); :func:`outline` runs on the exported HTML, so every page
kind gets anchors and a table of contents by construction, without a script. Headings are built by
``benchbook.pages.display`` from escaped text, so their inner HTML is trusted here and copied as is.
"""

from __future__ import annotations

import re

from benchbook.pages.sections import slug

_HEADING = re.compile(r"<h([23])((?:\s[^>]*)?)>(.*?)</h\1>", re.DOTALL)
_ID = re.compile(r'\sid="([^"]*)"')
_TAG = re.compile(r"<[^>]+>")
# display.TOC_PLACEHOLDER as the exporter serializes it (attribute order may change)
_TOC = re.compile(r'<nav\b[^>]*\bid="bb-toc"[^>]*>\s*</nav>')


def outline(html: str) -> str:
    """Give every ``<h2>``/``<h3>`` an id (``sec-<slug of its text>``, made unique) and an anchor
    link, and replace the table-of-contents placeholder with links to every ``<h2>`` after it."""
    used = set(_ID.findall(html))
    entries: list[tuple[str, str]] = []  # (id, inner html) of every h2, in page order

    def fix(m: re.Match) -> str:
        level, attrs, inner = m.group(1), m.group(2), m.group(3)
        found = _ID.search(attrs)
        if found:
            hid = found.group(1)
        else:
            base = "sec-" + slug(_TAG.sub("", inner).strip())[:48].strip("-")
            hid, i = base, 2
            while hid in used:
                hid, i = f"{base}-{i}", i + 1
            used.add(hid)
            attrs = f'{attrs} id="{hid}"'
        if level == "2":
            entries.append((hid, inner))
        link = f'<a class="bb-anchor" href="#{hid}" aria-label="link to this section">#</a>'
        return f"<h{level}{attrs}>{inner}{link}</h{level}>"

    found = _TOC.search(html)
    if not found:  # a page without a findings box: anchors only
        return _HEADING.sub(fix, html)
    head, tail = html[: found.start()], html[found.end() :]
    head = _HEADING.sub(fix, head)
    entries.clear()  # the contents list what follows the box (the findings heading is above it)
    tail = _HEADING.sub(fix, tail)
    items = "".join(f'<li><a href="#{hid}">{_TAG.sub("", inner).strip()}</a></li>' for hid, inner in entries)
    toc = (
        '<nav class="bb-toc" id="bb-toc" aria-label="Contents"><p class="bb-toc-title">Contents</p>'
        f"<ol>{items}</ol></nav>"
    )
    return head + toc + tail
