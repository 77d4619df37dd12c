"""`benchbook render` CLI: single campaign, --all with index, skipped notebooks, exit codes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from benchbook.commands.cli import main

pytestmark = pytest.mark.slow
EVIL = '"><img src=x onerror=alert(1)><script>alert(2)</script>'


def _campaign(root: Path, name: str, *, title: str, date: str, harness: str = "requests", mode: str = "serial") -> Path:
    c = root / name
    c.mkdir(parents=True)
    manifest = {
        "format": "benchbook.campaign/1",
        "title": title,
        "question": f"q {name}",
        "date": date,
        "provenance": "synthetic",
        "arms": {"a": {"mode": mode, "label": "a"}},
        "runs": [{"id": "r1", "arm": "a", "harness": harness, "path": "runs/r1"}],
    }
    (c / "campaign.json").write_text(json.dumps(manifest))
    return c


@pytest.fixture
def notebooks(tmp_path, smoke_notebook) -> Path:
    """A notebooks folder whose only page notebook is the smoke notebook posing as `baseline`."""
    d = tmp_path / "notebooks"
    d.mkdir()
    shutil.copy(smoke_notebook, d / "baseline.ipynb")
    return d


def test_all_renders_what_exists_and_writes_the_index(tmp_path, notebooks, capsys):
    data = tmp_path / "data"
    _campaign(data, "alpha", title=f"Alpha {EVIL}", date="2026-01-02")
    _campaign(data, "beta", title="Beta PD", date="2026-03-04", harness="memory", mode="pd")
    (data / "not-a-campaign").mkdir()
    out = tmp_path / "reports"
    assert main(["render", "--all", str(data), "--out", str(out), "--notebooks", str(notebooks)]) == 0
    err = capsys.readouterr().err
    assert "beta/pd: skipped" in err and "pd.ipynb does not exist yet" in err
    assert "alpha/baseline: wrote" in err
    assert (out / "alpha" / "baseline.html").is_file()
    assert json.loads((out / "alpha" / "baseline.values.json").read_text())["rows"] == 4
    assert not (out / "beta").exists() or not list((out / "beta").glob("*.html"))
    index = (out / "index.html").read_text()
    assert 'href="alpha/baseline.html"' in index
    assert "<img src=x" not in index and "Alpha &#34;&gt;&lt;img" in index
    assert index.index("Beta PD") < index.index("Alpha")  # newest first
    assert "notebook not written yet" in index
    assert "<script" not in index.lower()
    assert '--bb-sans: system-ui, -apple-system, "Segoe UI"' in index  # CSS not HTML-escaped


def test_all_succeeds_while_no_page_notebook_exists(tmp_path, capsys):
    data = tmp_path / "data"
    _campaign(data, "alpha", title="Alpha", date="2026-01-02")
    empty = tmp_path / "nb"
    empty.mkdir()
    out = tmp_path / "reports"
    assert main(["render", "--all", str(data), "--out", str(out), "--notebooks", str(empty)]) == 0
    assert "Alpha" in (out / "index.html").read_text()
    assert "does not exist yet" in capsys.readouterr().err


def test_single_campaign_writes_into_out(tmp_path, notebooks, monkeypatch):
    c = _campaign(tmp_path / "data", "alpha", title="Alpha", date="2026-01-02")
    out = tmp_path / "pages"
    assert main(["render", str(c), "--out", str(out), "--page", "baseline", "--notebooks", str(notebooks)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["baseline.html", "baseline.ipynb", "baseline.values.json"]
    assert "<title>Alpha — baseline</title>" in (out / "baseline.html").read_text()


def test_bad_manifest_exits_2_with_file_and_line(tmp_path, capsys):
    c = tmp_path / "data" / "broken"
    c.mkdir(parents=True)
    (c / "campaign.json").write_text('{"title": "x",\n "arms": }')
    assert main(["render", str(c), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "campaign.json: line 2: not valid JSON" in err
    assert main(["render", "--all", str(tmp_path / "data"), "--out", str(tmp_path / "o")]) == 2
    assert (tmp_path / "o" / "index.html").is_file()


def test_failing_page_exits_3_and_keeps_previous(tmp_path, notebooks, capsys):
    c = _campaign(tmp_path / "data", "alpha", title="Alpha", date="2026-01-02")
    out = tmp_path / "pages"
    args = ["render", str(c), "--out", str(out), "--notebooks", str(notebooks)]
    assert main(args) == 0
    before = (out / "baseline.html").read_bytes()
    params = tmp_path / "params.json"
    params.write_text(json.dumps({"baseline": {"fail": True}}))
    assert main(args + ["--params", str(params)]) == 3
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("benchbook render: alpha/baseline: render failed:")
    assert "ValueError: smoke notebook asked to fail" in err
    assert (out / "baseline.html").read_bytes() == before


def test_unknown_override_and_missing_explicit_page(tmp_path, notebooks, capsys):
    c = _campaign(tmp_path / "data", "alpha", title="Alpha", date="2026-01-02")
    params = tmp_path / "params.json"
    params.write_text(json.dumps({"baseline": {"nope": 1}}))
    out = str(tmp_path / "o")
    assert main(["render", str(c), "--out", out, "--notebooks", str(notebooks), "--params", str(params)]) == 2
    assert "declares no parameter 'nope'" in capsys.readouterr().err
    assert main(["render", str(c), "--out", out, "--notebooks", str(notebooks), "--page", "pd"]) == 3
    assert "pd.ipynb does not exist" in capsys.readouterr().err
