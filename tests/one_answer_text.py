"""A rendered page's visible text in sentences, for tests that count what a page says more than once."""

from __future__ import annotations

import collections
import re
from html.parser import HTMLParser

BLOCKS = {"p", "div", "tr", "td", "th", "li", "ul", "ol", "h1", "h2", "h3", "h4", "summary", "details", "table",
          "caption", "section", "br", "figcaption"}  # fmt: skip


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self.skip = 0

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style", "svg"):
            self.skip += 1
        if tag in BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag):
        if tag in ("script", "style", "svg"):
            self.skip -= 1
        if tag in BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data):
        if not self.skip:
            self.parts.append(data)


def sentences(html: str) -> list[str]:
    """Every explanation sentence or clause of the page's visible text (folded parts included): split at
    block elements, sentence ends, semicolons and dashes; at least 40 characters and 5 words of letters
    (not a label, a path or a hash)."""
    p = _Text()
    p.feed(html)
    out = []
    for block in "".join(p.parts).split("\n"):
        for s in re.split(r"(?<=[.;!?])\s+| — ", " ".join(block.split())):
            s = s.strip(" ;.")
            if len(s) >= 40 and sum(bool(re.fullmatch(r"[A-Za-z][a-z'’]+", w)) for w in s.split()) >= 5:
                out.append(s)
    return out


def repeated_sentences(html: str, most: int = 5) -> list[tuple[int, str]]:
    """(count, sentence) of every sentence a page says more than ``most`` times, most repeated first."""
    c = collections.Counter(sentences(html))
    return [(n, s) for s, n in c.most_common() if n > most]
