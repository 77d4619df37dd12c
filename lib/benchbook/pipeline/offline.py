"""Check that rendered pages load nothing from outside themselves.

``python -m benchbook.pipeline.offline DIR_OR_FILE...`` scans every ``*.html`` and lists each reference that
would leave the page: an absolute or protocol-relative URL in any ``src``/``href``/``srcset``/
``action``/``data``/``poster``/``xlink:href``/``formaction``/``background``/``manifest``/``ping``
attribute, ``@import`` or ``url(...)`` in a ``<style>`` element or ``style`` attribute, and
``<meta http-equiv="refresh">``. Resource attributes (everything except ``<a>``/``<area>`` links)
must also not point at a separate local file: a page is one self-contained file. ``data:`` URIs and
``#fragment`` references are fine; ``<a href="other.html">`` (the index linking its pages) is fine.

Exit 0 when every page is clean, 1 when something was found (one line per finding:
``file:line: <tag attr="value"> reason``), 2 when a given path does not exist.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

URL_ATTRS = {
    "src",
    "href",
    "srcset",
    "action",
    "data",
    "poster",
    "xlink:href",
    "formaction",
    "background",
    "manifest",
    "ping",
    "longdesc",
    "cite",
    "codebase",
    "archive",
    "icon",
}
NAVIGATION = {("a", "href"), ("area", "href")}
_SCHEME = re.compile(r"^\s*([a-zA-Z][a-zA-Z0-9+.\-]*):")
_CSS_IMPORT = re.compile(r"@import\s+(?:url\(\s*)?['\"]?([^'\")\s;]+)", re.I)
_CSS_URL = re.compile(r"url\(\s*(['\"]?)(.*?)\1\s*\)", re.I | re.S)


@dataclass(frozen=True)
class OutsideReference:
    """A reference in a rendered page that would leave it (where, which tag and attribute, why)."""

    file: str
    line: int
    what: str
    reason: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.what} {self.reason}"


def classify(url: str, *, navigation: bool) -> str | None:
    """Why ``url`` breaks the offline guarantee, or ``None`` when it is fine."""
    u = url.strip()
    if not u or u.startswith("#"):
        return None
    m = _SCHEME.match(u)
    if m:
        scheme = m.group(1).lower()
        if scheme == "data":
            return None
        if scheme == "javascript":
            return "is a javascript: URL"
        return f"is an external {scheme}: URL"
    if u.startswith("//"):
        return "is a protocol-relative external URL"
    if navigation:
        return None  # a link to a sibling page (index -> pages) loads nothing by itself
    return "loads a separate file: the page is not self-contained"


def _css_findings(css: str) -> list[tuple[str, str]]:
    out = []
    for m in _CSS_IMPORT.finditer(css):
        if not m.group(1).lower().startswith("data:"):
            out.append((f"@import {m.group(1)}", "imports an external stylesheet"))
    for m in _CSS_URL.finditer(css):
        reason = classify(m.group(2), navigation=False)
        if reason:
            out.append((f"url({m.group(2)})", reason))
    return out


class _Scanner(HTMLParser):
    def __init__(self, file: str):
        super().__init__(convert_charrefs=True)
        self.file = file
        self.findings: list[OutsideReference] = []
        self._in_style = False
        self._style_line = 0

    def _add(self, what: str, reason: str, line: int | None = None) -> None:
        self.findings.append(OutsideReference(self.file, line or self.getpos()[0], what, reason))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            name = name.lower()
            if name in URL_ATTRS:
                urls = [p.strip().split()[0] for p in value.split(",") if p.strip()] if name == "srcset" else [value]
                for u in urls:
                    reason = classify(u, navigation=(tag, name) in NAVIGATION)
                    if reason:
                        self._add(f'<{tag} {name}="{value[:120]}">', reason)
            elif name == "style":
                for what, reason in _css_findings(value):
                    self._add(f"<{tag} style> {what}", reason)
            elif tag == "meta" and name == "http-equiv" and value.lower() == "refresh":
                self._add("<meta http-equiv=refresh>", "redirects the page")
        if tag == "style":
            self._in_style = True
            self._style_line = self.getpos()[0]

    handle_startendtag = handle_starttag

    def handle_endtag(self, tag: str) -> None:
        if tag == "style":
            self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            for what, reason in _css_findings(data):
                self._add(f"<style> {what}", reason, self._style_line)


def scan_html(text: str, file: str = "<html>") -> list[OutsideReference]:
    """Every external reference in one HTML document."""
    s = _Scanner(file)
    s.feed(text)
    s.close()
    return s.findings


def pages_under(folder: Path) -> list[Path]:
    """The HTML files under a folder as readers open them: not the copies inside hidden folders
    (a page's generation folders, ``.pages/``, which the page's own name links to)."""
    return sorted(
        f for f in folder.rglob("*.html") if not any(part.startswith(".") for part in f.relative_to(folder).parts[:-1])
    )


def scan(paths: list[Path]) -> list[OutsideReference]:
    files: list[Path] = []
    for p in paths:
        if p.is_dir():
            files.extend(pages_under(p))
        elif p.is_file():
            files.append(p)
        else:
            raise FileNotFoundError(str(p))
    out: list[OutsideReference] = []
    for f in files:
        out.extend(scan_html(f.read_text(encoding="utf-8", errors="replace"), str(f)))
    return out


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    paths = [Path(a) for a in argv]
    try:
        findings = scan(paths)
    except FileNotFoundError as e:
        print(f"benchbook.pipeline.offline: {e}: no such file or folder", file=sys.stderr)
        return 2
    n_files = sum(1 for p in paths for _ in (pages_under(p) if p.is_dir() else [p]))
    for f in findings:
        print(f)
    if findings:
        print(
            f"benchbook.pipeline.offline: {len(findings)} external reference(s) in {n_files} page(s)", file=sys.stderr
        )
        return 1
    print(
        f"benchbook.pipeline.offline: {n_files} page(s) checked, nothing loads from outside the page", file=sys.stderr
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
