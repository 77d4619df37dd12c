"""Rendered pages in headless Chromium, offline: charts draw, tables exist, nothing runs or loads.

Skipped (with the reason) only when /usr/bin/chromium is absent; CI installs it (make browser-deps).
Screenshots land in test-artifacts/.
"""

from __future__ import annotations

import json
import shutil

from benchbook.commands.cli import main
from benchbook.pipeline.execute import render_page
from benchbook.pipeline.offline import scan

XSS_TITLE = '<script>alert("title")</script>"><img src=x onerror=alert(1)>'
XSS_LABEL = '"><img src=x onerror=alert(2)><script>alert(3)</script>'


def test_smoke_page_draws_offline(tmp_path, smoke_notebook, open_page):
    res = render_page(smoke_notebook, {}, tmp_path / "smoke.html", title="benchbook smoke page")
    assert scan([res.html]) == []
    report = open_page(res.html, table_ids=["bb-smoke-table", "bb-provenance-summary"], screenshot="smoke.png")
    assert report.ok, report.problems()
    assert report.requests == []  # nothing tried to leave the page
    assert report.console_errors == [] and report.page_errors == []
    assert report.charts == 1
    assert report.title == "benchbook smoke page"
    assert report.screenshot.is_file() and report.screenshot.stat().st_size > 10_000


def test_hostile_strings_render_inert(tmp_path, smoke_notebook, open_page):
    res = render_page(smoke_notebook, {"label": XSS_LABEL, "title": XSS_TITLE}, tmp_path / "xss.html", title=XSS_TITLE)
    report = open_page(res.html, table_ids=["bb-smoke-table"], screenshot="xss.png")
    assert report.dialogs == [], "a script from input ran"
    assert report.requests == [], "an <img src=x> from input tried to load"
    assert report.ok, report.problems()
    assert report.title == XSS_TITLE  # shown as text, exactly


def test_index_page_opens_offline(tmp_path, smoke_notebook, open_page):
    data = tmp_path / "data" / "alpha"
    data.mkdir(parents=True)
    (data / "campaign.json").write_text(
        json.dumps(
            {
                "title": XSS_TITLE,
                "date": "2026-01-02",
                "provenance": "synthetic",
                "arms": {"a": {"mode": "serial"}},
                "runs": [{"id": "r", "arm": "a", "harness": "requests"}],
            }
        )
    )
    nbs = tmp_path / "nb"
    nbs.mkdir()
    shutil.copy(smoke_notebook, nbs / "baseline.ipynb")
    out = tmp_path / "reports"
    assert main(["render", "--all", str(tmp_path / "data"), "--out", str(out), "--notebooks", str(nbs)]) == 0
    assert scan([out]) == []
    report = open_page(out / "index.html", table_ids=["bb-index"], screenshot="index.png")
    assert report.ok, report.problems()
    page = open_page(out / "alpha" / "baseline.html")
    assert page.ok and page.charts == 1 and page.dialogs == []


def test_a_published_copy_of_the_reports_opens(tmp_path, smoke_notebook, open_page):
    """The page files were links into .pages/<generation>/: rsync -a, zip -y or cp -P of the reports
    published dangling links. Copy the output folder as rsync -a does (links kept as links: cp -a)
    and one page's three files as cp -P does, then open the copies."""
    import subprocess

    data = tmp_path / "data" / "alpha"
    data.mkdir(parents=True)
    (data / "campaign.json").write_text(
        json.dumps(
            {
                "title": "alpha",
                "date": "2026-01-02",
                "provenance": "synthetic",
                "arms": {"a": {"mode": "serial"}},
                "runs": [{"id": "r", "arm": "a", "harness": "requests"}],
            }
        )
    )
    nbs = tmp_path / "nb"
    nbs.mkdir()
    shutil.copy(smoke_notebook, nbs / "baseline.ipynb")
    out = tmp_path / "reports"
    argv = ["render", "--all", str(tmp_path / "data"), "--out", str(out), "--notebooks", str(nbs)]
    assert main(argv) == 0
    published = tmp_path / "published"
    subprocess.run(["cp", "-a", str(out), str(published)], check=True)
    one = tmp_path / "one-page"
    one.mkdir()
    subprocess.run(["cp", "-P", *(str(out / "alpha" / f"baseline{s}") for s in SUFFIXES), str(one)], check=True)
    for folder in (published / "alpha", one):
        assert not [p for p in folder.iterdir() if p.is_symlink()]
        assert json.loads((folder / "baseline.values.json").read_text())["rows"] == 4
    page = open_page(published / "alpha" / "baseline.html")
    assert page.ok and page.charts == 1, page.problems()
    assert open_page(one / "baseline.html").ok
    assert open_page(published / "index.html", table_ids=["bb-index"]).ok


SUFFIXES = (".html", ".ipynb", ".values.json")
