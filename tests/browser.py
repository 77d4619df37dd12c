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
    viewport: tuple[int, int] = (1280, 900),
    settle_ms: int = 300,
    text_of: Iterable[str] = (),
) -> PageReport:
    """Load ``path`` from file:// with every other request blocked; see :class:`PageReport`."""
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
    finally:
        context.close()
    return report
