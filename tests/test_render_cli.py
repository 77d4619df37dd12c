"""`benchbook render` CLI: single campaign, --all with index, skipped notebooks, exit codes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from benchbook.commands.cli import main

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
    visible = sorted(p.name for p in out.iterdir() if not p.name.startswith("."))
    assert visible == ["baseline.html", "baseline.ipynb", "baseline.values.json"]
    assert "<title>Alpha — baseline</title>" in (out / "baseline.html").read_text()


def test_bad_manifest_exits_2_with_file_and_line(tmp_path, capsys):
    c = tmp_path / "data" / "broken"
    c.mkdir(parents=True)
    (c / "campaign.json").write_text('{"title": "x",\n "arms": }')
    assert main(["render", str(c), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "campaign.json: line 2 column 10: not valid JSON" in err
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


# --------------------------------------------------------------------------- one campaign never stops the others

BROKEN_MANIFESTS = {
    "bad-byte": b'{"title": "x\xff"}',  # undecodable bytes
    "nesting-bomb": b'{"title": "x", "arms": {}, "runs": [], "x": ' + b"[" * 1000 + b"]" * 1000 + b"}",
    "duplicate-key": b'{"title": "x", "title": "y", "arms": {}, "runs": []}',
    "not-an-object": b"[1, 2]",
}


def test_all_isolates_every_kind_of_campaign_failure(tmp_path, notebooks, capsys, monkeypatch):
    """Bad bytes, a nesting bomb, a duplicate key, a RecursionError, a kernel that dies: each is its
    campaign's failure; later campaigns render, the previous pages stay, the index marks them."""
    from benchbook.pipeline import plan

    data, out = tmp_path / "data", tmp_path / "reports"
    names = [*BROKEN_MANIFESTS, "recursion", "kernel-dies"]
    for name in [*names, "zz-last"]:
        _campaign(data, name, title=f"T {name}", date="2026-01-01")
    argv = ["render", "--all", str(data), "--out", str(out), "--notebooks", str(notebooks)]
    assert main(argv) == 0
    before = {n: (out / n / "baseline.html").read_bytes() for n in names}

    for name, raw in BROKEN_MANIFESTS.items():
        (data / name / "campaign.json").write_bytes(raw)
    (data / "kernel-dies" / "render.yml").write_text("baseline: {exit_kernel: true}\n")
    _campaign(tmp_path / "new", "zz-last", title="T zz-last, changed", date="2026-01-01")  # so it renders again
    shutil.copy(tmp_path / "new" / "zz-last" / "campaign.json", data / "zz-last" / "campaign.json")
    real = plan.read_manifest

    def recursing(campaign):
        if campaign.name == "recursion":
            raise RecursionError("maximum recursion depth exceeded")
        return real(campaign)

    monkeypatch.setattr(plan, "read_manifest", recursing)
    capsys.readouterr()
    assert main([*argv, "--force"]) == 2  # bad input among the failures; --force: zz-last renders again
    err = capsys.readouterr().err
    assert "zz-last/baseline: wrote" in err
    assert "bad-byte/campaign.json: line 1 column 13: not UTF-8 (byte 0xff" in err
    assert (
        "nesting-bomb/campaign.json: line 1 column 108: nested 1001 levels deep (the limit, 64, is passed here)" in err
    )
    assert "duplicate-key/campaign.json: $: key 'title' appears twice" in err
    assert "not-an-object/campaign.json: $: expected a JSON object" in err
    assert "recursion: render failed: RecursionError: maximum recursion depth exceeded" in err
    assert "kernel-dies/baseline: render failed:" in err
    for name in names:
        assert (out / name / "baseline.html").read_bytes() == before[name], f"{name}: previous page not kept"
    index = (out / "index.html").read_text()
    assert index.count("campaign failed") == 5 and index.count("last render failed; previous page kept") == 6
    for name in names:
        assert f'href="{name}/baseline.html"' in index


def test_all_with_only_render_failures_exits_3(tmp_path, notebooks, monkeypatch):
    from benchbook.pipeline import plan

    data = tmp_path / "data"
    _campaign(data, "a", title="A", date="2026-01-01")
    monkeypatch.setattr(plan, "read_manifest", lambda c: (_ for _ in ()).throw(MemoryError()))
    assert main(["render", "--all", str(data), "--out", str(tmp_path / "o"), "--notebooks", str(notebooks)]) == 3
    assert "campaign failed" in (tmp_path / "o" / "index.html").read_text()


# --------------------------------------------------------------------------- parameters never choose the input


@pytest.mark.parametrize("where", ["render.yml", "--params"])
@pytest.mark.parametrize(
    "override",
    [{"campaign": "/some/other/folder"}, {"campaign": "../other"}, {"inputs": "/etc/hostname"}, {"files": ["/x"]}],
)
def test_parameter_files_cannot_choose_what_a_page_reads(tmp_path, notebooks, where, override, capsys):
    c = _campaign(tmp_path / "data", "alpha", title="Alpha", date="2026-01-02")
    argv = ["render", str(c), "--out", str(tmp_path / "o"), "--notebooks", str(notebooks), "--page", "baseline"]
    if where == "render.yml":
        (c / "render.yml").write_text(json.dumps({"baseline": override}))
        source = "render.yml"
    else:
        (tmp_path / "p.json").write_text(json.dumps({"baseline": override}))
        argv += ["--params", str(tmp_path / "p.json")]
        source = "--params"
    assert main(argv) == 2
    key = next(iter(override))
    err = capsys.readouterr().err
    assert f"{source}: $.baseline.{key}: '{key}' chooses which files the page reads" in err
    assert not (tmp_path / "o" / "baseline.html").exists()


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (
            "a: &a [x, x, x]\nb: &b [*a, *a, *a]\nc: [*b, *b, *b]\n",
            "line 2 column 8: not valid YAML: aliases (*name) are not allowed",
        ),
        (
            "baseline: {rule: seed}\nbaseline: {rule: strict}\n",
            "line 2 column 1: not valid YAML: key 'baseline' appears twice",
        ),
        ("baseline: " + "[" * 200 + "]" * 200 + "\n", "not valid YAML: nested deeper than 64 levels"),
        ('baseline: {label: "\xff"}\n', "not UTF-8"),
    ],
)
def test_render_yml_limits(tmp_path, notebooks, text, says, capsys):
    c = _campaign(tmp_path / "data", "alpha", title="Alpha", date="2026-01-02")
    (c / "render.yml").write_bytes(text.encode("utf-8", "surrogateescape").replace(b"\xc3\xbf", b"\xff"))
    assert main(["render", str(c), "--out", str(tmp_path / "o"), "--notebooks", str(notebooks)]) == 2
    assert says in capsys.readouterr().err


def _published(out: Path) -> dict[str, int]:
    """mtime of every published name (not the hidden lock and generation files)."""
    return {
        str(p.relative_to(out)): p.stat().st_mtime_ns
        for p in sorted(out.rglob("*"))
        if not any(part.startswith(".") for part in p.relative_to(out).parts) and not p.is_dir()
    }


def test_a_no_op_render_all_touches_nothing(tmp_path, notebooks, capsys):
    """A no-op ``render --all`` rewrote index.html (same bytes, new mtime), so rsync and make saw a
    change; now it leaves every file as it was, and an index whose bytes did not change is not
    rewritten by a render that did change something."""
    data = tmp_path / "data"
    alpha = _campaign(data, "alpha", title="Alpha", date="2026-01-02")
    out = tmp_path / "reports"
    argv = ["render", "--all", str(data), "--out", str(out), "--notebooks", str(notebooks)]
    assert main(argv) == 0
    before = _published(out)
    assert "index.html" in before and "alpha/baseline.html" in before
    capsys.readouterr()
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert _published(out) == before
    assert "alpha/baseline: unchanged" in err and "0 page(s) rendered, 1 unchanged, 0 failed" in err
    assert "(unchanged)" in err and "wrote" not in err
    # something the render reads changes: that campaign is planned and rendered again, the index
    # (same bytes) keeps its mtime
    (alpha / "notes.txt").write_text("a file the digest covers\n")
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "alpha/baseline: wrote" in err
    after = _published(out)
    assert after["index.html"] == before["index.html"] and after["alpha/baseline.html"] != before["alpha/baseline.html"]
    # a published file gone: not a no-op, the page comes back
    (out / "alpha" / "baseline.html").unlink()
    assert main(argv) == 0
    assert "alpha/baseline: wrote" in capsys.readouterr().err and (out / "alpha" / "baseline.html").is_file()
