"""Open a rendered page in headless Chromium with the network cut off, and report what happened.

Reusable by any test (the ``chromium`` and ``open_page`` fixtures in conftest.py wrap it)::

    report = open_page(path, table_ids=["bb-smoke-table"], screenshot="smoke.png")
    assert report.ok, report.problems()

Every request other than the page document itself is aborted by route interception and recorded,
so ``report.requests`` lists anything that tried to leave the page (http, https, a separate local
file, ...). Console errors, uncaught page errors and JavaScript dialogs (``alert``) are collected.
Charts are counted as top-level ``<svg>`` elements with a non-empty box and drawn marks inside.
Screenshots go to ``test-artifacts/`` at the repository root (ignored by git; CI uploads it).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

CHROMIUM = os.environ.get("BENCHBOOK_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"

_COUNT_CHARTS = """() => Array.from(document.querySelectorAll('svg')).filter(s => {
  if (s.parentElement && s.parentElement.closest('svg')) return false;
  const r = s.getBoundingClientRect();
  return r.width > 0 && r.height > 0 &&
         s.querySelectorAll('path[d]:not([d=""]), line, rect, circle, text').length > 0;
}).length"""


# What a new reader sees at the page's width: where the findings box is, whether the table of
# contents reaches every section, whether anything is wider than its box or cut off, and whether
# every table and caption is readable: captions at a reading width, no cell squeezed until its words
# stack, no row taller than most of the screen, no name broken inside a word.
_LAYOUT = r"""() => {
  const vw = document.documentElement.clientWidth, vh = window.innerHeight;
  const box = document.querySelector('#bb-findings');
  const head = box && box.querySelector('.bb-headline');
  const sections = Array.from(document.querySelectorAll('main h2'))
    .filter(h => !h.closest('#bb-findings') && !h.closest('#bb-toc'))
    .map(h => ({id: h.id, text: h.textContent.replace(/#$/, '').trim()}));
  const toc = Array.from(document.querySelectorAll('#bb-toc a')).map(a => a.getAttribute('href'));
  const wide = [];
  for (const t of document.querySelectorAll('table')) {
    const wrap = t.closest('.bb-table-wrap') || t.parentElement;
    if (t.getBoundingClientRect().width === 0) continue;  // inside a closed <details>
    if (t.scrollWidth > wrap.clientWidth + 1 || wrap.scrollWidth > wrap.clientWidth + 1)
      wide.push(`${t.id || t.className}: ${Math.max(t.scrollWidth, wrap.scrollWidth)} > ${wrap.clientWidth}`);
  }
  const clipped = [];
  const main = document.querySelector('main') || document.body;
  const right = main.getBoundingClientRect().right;
  for (const el of main.querySelectorAll('*')) {
    if (el.closest('svg') && el.tagName.toLowerCase() !== 'svg') continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    if (r.right > right + 1 || r.left < -1) clipped.push(`${el.tagName.toLowerCase()}#${el.id || ''}.${el.className && el.className.baseVal === undefined ? el.className : ''} spans ${Math.round(r.left)}..${Math.round(r.right)}`);
    if (el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX !== 'visible' && el.clientWidth > 0)
      clipped.push(`${el.tagName.toLowerCase()}#${el.id || ''} scrolls sideways (${el.scrollWidth} > ${el.clientWidth})`);
  }
  // a caption read at a width it cannot be read at (a table squeezed to its columns): narrower than
  // its frame and 30rem
  const narrow = [];
  for (const c of main.querySelectorAll('caption, figcaption')) {
    const r = c.getBoundingClientRect();
    if (r.width === 0 || !c.textContent.trim()) continue;
    const frame = (c.closest('.bb-table-wrap, figure') || c.parentElement).parentElement.getBoundingClientRect().width;
    if (r.width + 1 < Math.min(frame, 480)) narrow.push(`${c.closest('table, figure').id}: caption ${Math.round(r.width)} px wide in a ${Math.round(frame)} px frame`);
  }
  // a cell squeezed so narrow that its words stack (run names on many short lines), and rows
  // taller than most of the screen
  const squeezed = [];
  for (const td of main.querySelectorAll('td')) {
    const r = td.getBoundingClientRect();
    if (r.width === 0 || td.closest('details:not([open])')) continue;
    const text = td.innerText.trim();
    const lh = parseFloat(getComputedStyle(td).fontSize) * 1.45;
    const range = document.createRange(); range.selectNodeContents(td);
    const own = range.getBoundingClientRect().height;  // its text, not the row it sits in
    if (/[A-Za-z]{3}/.test(text) && own > 5 * lh && r.width < 6 * lh)
      squeezed.push(`${td.closest('table').id}: "${text.slice(0, 30)}" in a ${Math.round(r.width)} px cell, ${Math.round(own)} px of text`);
  }
  for (const tr of main.querySelectorAll('tbody tr')) {
    const r = tr.getBoundingClientRect();
    if (r.height > 0.6 * vh) squeezed.push(`${tr.closest('table').id}: a row ${Math.round(r.height)} px tall`);
  }
  // a long name broken mid-word: a line of a .bb-long name starts right after a letter or digit
  const broken = [];
  for (const el of main.querySelectorAll('.bb-long')) {
    if (el.getBoundingClientRect().width === 0) continue;
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    let prev = null, prevTop = null;
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      for (let i = 0; i < n.length; i++) {
        const range = document.createRange(); range.setStart(n, i); range.setEnd(n, i + 1);
        const rect = range.getClientRects()[0];
        if (!rect) continue;
        const ch = n.data[i];
        if (prevTop !== null && rect.top > prevTop + 2 && /[A-Za-z0-9]/.test(prev) && /[A-Za-z0-9]/.test(ch))
          broken.push(`"${el.textContent.slice(0, 60)}" breaks inside a word, before "${n.data.slice(i, i + 8)}"`);
        prev = ch;  // a space between is a line break opportunity, not a word broken
        if (!/\s/.test(ch)) prevTop = rect.top;
      }
    }
  }
  for (const svg of document.querySelectorAll('svg')) {
    if (svg.parentElement && svg.parentElement.closest('svg')) continue;
    const b = svg.getBoundingClientRect();
    if (b.width === 0) continue;
    for (const t of svg.querySelectorAll('text')) {
      const r = t.getBoundingClientRect();
      if (r.width === 0 || !t.textContent.trim()) continue;
      if (r.left < b.left - 1 || r.right > b.right + 1 || r.top < b.top - 1 || r.bottom > b.bottom + 1)
        clipped.push(`chart text "${t.textContent.trim()}" outside its chart`);
    }
  }
  return {
    height: document.documentElement.scrollHeight, width: vw, viewport_height: vh,
    page_scrolls_sideways: document.documentElement.scrollWidth > vw,
    findings_top: box ? box.getBoundingClientRect().top + window.scrollY : null,
    findings_headline_bottom: head ? head.getBoundingClientRect().bottom + window.scrollY : null,
    sections, toc, wide_tables: wide, clipped: Array.from(new Set(clipped)).slice(0, 40),
    narrow_captions: narrow, squeezed: squeezed.slice(0, 20), broken_words: Array.from(new Set(broken)).slice(0, 20),
  };
}"""


@dataclass
class Layout:
    height: int
    width: int
    viewport_height: int
    page_scrolls_sideways: bool
    findings_top: float | None
    findings_headline_bottom: float | None
    sections: list[dict]
    toc: list[str]
    wide_tables: list[str]
    clipped: list[str]
    narrow_captions: list[str] = field(default_factory=list)
    squeezed: list[str] = field(default_factory=list)
    broken_words: list[str] = field(default_factory=list)

    def problems(self) -> list[str]:
        """What a reader would miss: findings below the fold, a section the contents do not reach, a
        table wider than its box, anything cut off."""
        out = []
        if self.findings_top is None:
            out.append("no findings box")
        elif not (
            0 <= self.findings_top < self.viewport_height
            and (self.findings_headline_bottom or self.findings_top) <= self.viewport_height
        ):
            out.append(f"findings box at {self.findings_top:.0f}px, not in the first {self.viewport_height}px")
        missing = [s for s in self.sections if not s["id"] or f"#{s['id']}" not in self.toc]
        if missing:
            out.append(f"sections without an entry in the contents: {missing}")
        if self.wide_tables:
            out.append(f"tables wider than their box: {self.wide_tables}")
        if self.page_scrolls_sideways:
            out.append("the page scrolls sideways")
        if self.clipped:
            out.append(f"clipped: {self.clipped}")
        if self.narrow_captions:
            out.append(f"captions squeezed narrower than they read: {self.narrow_captions}")
        if self.squeezed:
            out.append(f"cells squeezed, rows too tall: {self.squeezed}")
        if self.broken_words:
            out.append(f"names broken inside a word: {self.broken_words}")
        return out


@dataclass
class PageReport:
    url: str
    title: str = ""
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)  # attempted, all aborted
    dialogs: list[str] = field(default_factory=list)
    charts: int = 0
    tables: list[str] = field(default_factory=list)  # ids of every <table id=...> on the page
    missing_tables: list[str] = field(default_factory=list)
    screenshot: Path | None = None
    layout: Layout | None = None
    texts: dict[str, str] = field(default_factory=dict)  # selector -> innerText of its first match ("" if none)

    @property
    def ok(self) -> bool:
        return not (self.console_errors or self.page_errors or self.requests or self.dialogs or self.missing_tables)

    def problems(self) -> str:
        parts = [
            f"{k}={v}"
            for k, v in (
                ("console_errors", self.console_errors),
                ("page_errors", self.page_errors),
                ("requests", self.requests),
                ("dialogs", self.dialogs),
                ("missing_tables", self.missing_tables),
            )
            if v
        ]
        return "; ".join(parts) or "none"


def chromium_available() -> bool:
    return Path(CHROMIUM).is_file() and os.access(CHROMIUM, os.X_OK)


@contextlib.contextmanager
def launch() -> Iterator[object]:
    """A headless Chromium (the Debian one; never a downloaded build)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-default-apps",
                "--disable-sync",
                "--no-first-run",
                "--disable-gpu",
            ],
        )
        try:
            yield browser
        finally:
            browser.close()


def open_page(
    browser,
    path: Path,
    *,
    table_ids: Iterable[str] = (),
    screenshot: str | Path | None = None,
    first_screen: str | Path | None = None,
    viewport: tuple[int, int] = (1280, 900),
    settle_ms: int = 300,
    text_of: Iterable[str] = (),
) -> PageReport:
    """Load ``path`` from file:// with every other request blocked; see :class:`PageReport`.

    ``screenshot``: the whole page; ``first_screen``: what a reader sees before scrolling (one
    viewport). Relative names land in ``test-artifacts/``."""
    path = Path(path).resolve()
    url = path.as_uri()
    report = PageReport(url=url)
    context = browser.new_context(
        viewport={"width": viewport[0], "height": viewport[1]}, java_script_enabled=True, service_workers="block"
    )
    try:

        def note(req) -> None:
            line = f"{req.resource_type} {req.url}"
            if line not in report.requests:
                report.requests.append(line)

        def route(r):
            if r.request.url == url and r.request.resource_type == "document":
                r.continue_()
            else:
                note(r.request)
                r.abort("blockedbyclient")

        context.route("**/*", route)
        page = context.new_page()
        # file:// sub-resources may bypass routing in some builds: record every request anyway
        page.on("request", lambda req: note(req) if req.url != url and not req.url.startswith("data:") else None)
        page.on("console", lambda m: report.console_errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: report.page_errors.append(str(e)))

        def on_dialog(d):
            report.dialogs.append(f"{d.type}: {d.message}")
            d.dismiss()

        page.on("dialog", on_dialog)
        page.goto(url, wait_until="load")
        page.wait_for_timeout(settle_ms)
        report.title = page.title()
        report.charts = page.evaluate(_COUNT_CHARTS)
        report.tables = page.evaluate("() => Array.from(document.querySelectorAll('table[id]')).map(t => t.id)")
        report.missing_tables = [t for t in table_ids if t not in report.tables]
        report.layout = Layout(**page.evaluate(_LAYOUT))
        for sel in text_of:
            report.texts[sel] = page.evaluate(
                "(s) => { const e = document.querySelector(s); return e ? e.innerText : ''; }", sel
            )
        if screenshot is not None:
            shot = Path(screenshot)
            if not shot.is_absolute():
                shot = ARTIFACTS / shot
            shot.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(shot), full_page=True)
            report.screenshot = shot
        if first_screen is not None:
            first = Path(first_screen) if Path(first_screen).is_absolute() else ARTIFACTS / first_screen
            first.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(first), full_page=False)
        # what is folded must fit too, once opened: measure again with every <details> open
        page.evaluate("() => document.querySelectorAll('details').forEach(d => { d.open = true; })")
        opened = Layout(**page.evaluate(_LAYOUT))
        report.layout.wide_tables = sorted(set(report.layout.wide_tables) | set(opened.wide_tables))
        report.layout.clipped = sorted(set(report.layout.clipped) | set(opened.clipped))
        for name in ("narrow_captions", "squeezed", "broken_words"):
            setattr(report.layout, name, sorted(set(getattr(report.layout, name)) | set(getattr(opened, name))))
        report.layout.page_scrolls_sideways |= opened.page_scrolls_sideways
    finally:
        context.close()
    return report
