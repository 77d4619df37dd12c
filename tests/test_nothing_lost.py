"""Nothing lost, nothing drifts: raw inputs are never written, a failed render keeps the last good
output, and every bundled page renders byte-identically.

- ``render --all data`` (twice, and once more for the campaigns of the pages compared without
  ``SOURCE_DATE_EPOCH``) and ``summary`` leave every file of every campaign under
  ``data/`` as it was (and a campaign copy in tmp_path).
- With ``SOURCE_DATE_EPOCH`` and ``BENCHBOOK_GIT_SHA`` set, two renders of every bundled page
  (dsv4-163 baseline and ablation, pd-prefill-cap pd, the index) are byte-identical; without
  ``SOURCE_DATE_EPOCH`` the pages differ only inside the provenance timestamp.
- ``render --all`` where one page fails (bad input met by a notebook cell), where the export fails,
  where a write fails (disk full) or where the index cannot be built: the previous page, executed
  notebook, values JSON and index are byte-identical and no temporary file is left behind.
  (``render_page``'s own cell-error case is in test_render.py.)
"""

from __future__ import annotations

import difflib
import errno
import hashlib
import json
import os
import re
import shutil
from pathlib import Path

import pytest

import benchbook.pipeline.plan as R
from benchbook.commands.cli import main
from benchbook.pipeline import execute
from benchbook.pipeline import index as index_page

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
MINI = ROOT / "tests" / "fixtures" / "mini"
BUNDLED = ["dsv4-163/baseline.html", "dsv4-163/ablation.html", "pd-prefill-cap/pd.html", "index.html"]
STAMP = re.compile(r'<span class="bb-timestamp">[^<]*</span>')
SHA = "0" * 40  # teammates committing mid-test must not change the SHA a page shows


def _raw() -> dict[str, str]:
    """Every file of every campaign folder under data/ (data/README.md is documentation a teammate
    may be editing in a shared checkout while this runs)."""
    return {f"{c.name}/{k}": v for c in R.find_campaigns(DATA) for k, v in _tree(c).items()}


def _tree(root: Path) -> dict[str, str]:
    """sha256 of every file under root (hidden files included), by relative path."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def bundled(tmp_path_factory, bundled_reports):
    """``render --all data`` twice — the run's bundled reports (conftest: with SOURCE_DATE_EPOCH and
    BENCHBOOK_GIT_SHA) and once more so — then ``render --all`` without SOURCE_DATE_EPOCH of the campaigns
    whose pages :data:`BUNDLED` names (a folder of links to them in data/: the other campaigns' pages are
    the same code and compared byte for byte in the second render; the H200 campaign alone is most of a
    render's time), and ``summary`` of every campaign; the hashes of data/ before and after those renders.
    ``c-index.html`` is the index that render wrote (moved there), and ``c/index.html`` the one written when the same
    command runs again with SOURCE_DATE_EPOCH (its pages are current then: not rendered again)."""
    base = tmp_path_factory.mktemp("bundled")
    (base / "a").symlink_to(bundled_reports, target_is_directory=True)
    digests = json.loads((bundled_reports / ".data-digests.json").read_text())
    renders = [(_flat(digests["before"]), _flat(digests["after"]))]
    links = base / "data"
    links.mkdir()
    for name in sorted({rel.split("/")[0] for rel in BUNDLED if "/" in rel}):
        (links / name).symlink_to(DATA / name, target_is_directory=True)
    before = _raw()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BENCHBOOK_GIT_SHA", SHA)
        mp.setenv("SOURCE_DATE_EPOCH", "1790000000")
        assert main(["render", "--all", str(DATA), "--out", str(base / "b")]) == 0
        mp.delenv("SOURCE_DATE_EPOCH")
        assert main(["render", "--all", str(links), "--out", str(base / "c")]) == 0
        os.replace(base / "c" / "index.html", base / "c-index.html")  # the next render must write it again
        mp.setenv("SOURCE_DATE_EPOCH", "1790000000")
        assert main(["render", "--all", str(links), "--out", str(base / "c")]) == 0
        for c in R.find_campaigns(DATA):
            assert main(["summary", str(c), "--json"]) == 0
    renders.append((before, _raw()))
    return base, renders


def _flat(by_campaign: dict[str, dict[str, str]]) -> dict[str, str]:
    return {f"{c}/{k}": v for c, tree in by_campaign.items() for k, v in tree.items()}


def test_render_and_summary_never_write_raw_input(bundled):
    for before, after in bundled[1]:
        assert len(before) > 100
        changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
        assert changed == []


def test_every_bundled_page_is_byte_identical_with_source_date_epoch(bundled):
    base = bundled[0]
    a, b = _outputs(base / "a"), _outputs(base / "b")
    assert set(BUNDLED) <= set(a)
    assert a == b  # pages, executed notebooks, values JSON, render keys, the history page and the index
    assert not list(base.rglob("*.tmp"))  # no temporary files


def test_without_source_date_epoch_only_the_timestamp_differs(bundled):
    base = bundled[0]
    for rel in BUNDLED:
        if rel == "index.html":  # the index of the render without SOURCE_DATE_EPOCH, against the one with it
            fixed, now = (base / "c" / rel).read_text(), (base / "c-index.html").read_text()
        else:
            fixed, now = (base / "a" / rel).read_text(), (base / "c" / rel).read_text()
        changed = [
            line
            for line in difflib.unified_diff(fixed.splitlines(), now.splitlines(), lineterm="", n=0)
            if line[:1] in "+-" and not line.startswith(("+++", "---"))
        ]
        assert all("bb-timestamp" in line for line in changed), (rel, changed[:4])
        assert STAMP.sub("", fixed) == STAMP.sub("", now), rel
        if rel != "index.html":  # the index has no timestamp at all
            assert len(changed) == 2 and "2026-09-21" in fixed  # 1790000000 = 2026-09-21T...Z
        else:
            assert changed == []


def _outputs(out: Path) -> dict[str, bytes]:
    """What readers open: every file by its public name (hidden files, the pages' manifests and
    locks, are the writer's business)."""
    return {
        str(p.relative_to(out)): p.read_bytes()
        for p in sorted(out.rglob("*"))
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(out).parts)
    }


def test_failed_renders_keep_the_previous_pages_and_index(tmp_path, monkeypatch, capsys):
    """One real campaign pair (mini), rendered with the real notebooks, then broken four ways."""
    monkeypatch.setenv("BENCHBOOK_GIT_SHA", SHA)
    data, out = tmp_path / "data", tmp_path / "reports"
    for name in ("alpha", "beta"):
        shutil.copytree(MINI, data / name)
    raw = _tree(data)
    # --force: every run renders (render --all is incremental); -j 1: in this process, where the
    # monkeypatched failures below apply
    args = ["render", "--all", str(data), "--out", str(out), "--force", "-j", "1"]
    assert main(args) == 0
    assert main(["summary", str(data / "alpha"), "--json"]) == 0
    assert _tree(data) == raw  # a campaign copy outside data/ is not written either
    good = _outputs(out)
    alpha = {k: v for k, v in good.items() if k.startswith("alpha/")}
    assert sorted(alpha) == [
        "alpha/baseline.html",
        "alpha/baseline.ipynb",
        "alpha/baseline.key",
        "alpha/baseline.values.json",
        "alpha/findings.json",  # the campaign's findings box from its analysis: what the index shows
        "alpha/headline.json",
        "alpha/headline.key",
    ]
    capsys.readouterr()

    # 1. a notebook cell meets bad input in alpha: alpha's three files kept, beta re-rendered, index says so
    snap = data / "alpha" / "runs" / "phases-serial" / "metrics" / "s2.prom"
    snap.write_text('pocket_tokens_total{type="prompt" 12\n')
    assert main(args) == 2
    assert "1 failure(s); first:" in capsys.readouterr().err.strip().splitlines()[-1]
    now = _outputs(out)
    assert {k: now[k] for k in alpha} == alpha
    assert sorted(now) == sorted(good)  # no temporary file left, nothing removed
    index = (out / "index.html").read_text()
    assert "last render failed; previous page kept" in index and 'href="alpha/baseline.html"' in index
    shutil.copy(MINI / "runs" / "phases-serial" / "metrics" / "s2.prom", snap)

    # 2. the export fails after execution: every page, notebook and values file is kept
    before = _outputs(out)

    def broken_export(nb, *, title):
        raise ValueError("template exploded")

    monkeypatch.setattr(execute, "export_html", broken_export)
    assert main(args) == 3
    assert "export failed: ValueError: template exploded" in capsys.readouterr().err
    after = _outputs(out)
    assert {k: v for k, v in after.items() if k != "index.html"} == {
        k: v for k, v in before.items() if k != "index.html"
    }
    assert sorted(after) == sorted(before)
    monkeypatch.undo()
    monkeypatch.setenv("BENCHBOOK_GIT_SHA", SHA)

    # 3. the disk fills while the temporary files are written: nothing replaced, no temporary file left
    before = _outputs(out)
    calls = []

    def full_disk(fd):
        calls.append(fd)
        if len(calls) == 2:  # the notebook's temp file is written, the values file's is not
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    assert main(["render", str(data / "alpha"), "--out", str(out / "alpha")]) == 3  # a render failure, not a crash
    err = capsys.readouterr().err.strip().splitlines()
    assert "No space left on device" in err[-1] and not any("Traceback" in line for line in err)
    assert _outputs(out) == before
    monkeypatch.undo()

    # 4. the index cannot be built: the previous index is kept (pages skipped: no notebooks here)
    before = _outputs(out)
    empty = tmp_path / "no-notebooks"
    empty.mkdir()

    def broken_index(outcomes, reports):
        raise RuntimeError("index template missing")

    monkeypatch.setattr(index_page, "index_html", broken_index)
    assert main([*args, "--notebooks", str(empty)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("benchbook render: internal error: RuntimeError: index template missing")
    assert _outputs(out) == before
    assert _tree(data) == raw
