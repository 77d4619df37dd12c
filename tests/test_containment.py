"""A page shows its campaign and nothing else: every file a campaign names must resolve, after
symlinks, inside the campaign folder. Each kind of reference x each way out (../, an absolute
path, a symlink to a file, a symlink to a folder) is bad input for validate (and render), naming
the document and the place, and nothing outside is read."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from benchbook.commands.cli import main

MINI = Path(__file__).resolve().parent / "fixtures" / "mini"
PD = Path(__file__).resolve().parents[1] / "data" / "pd-prefill-cap"

_opened: list[str] | None = None


def _audit(event, args):
    if _opened is not None and event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        _opened.append(os.fsdecode(args[0]))


sys.addaudithook(_audit)


def _validate_reads(argv, capsys) -> tuple[int, str, list[str]]:
    """Run `benchbook ...`, returning (exit code, stderr, every path it opened)."""
    global _opened
    _opened = []
    try:
        code = main(argv)
    finally:
        opened, _opened = _opened, None
    return code, capsys.readouterr().err, opened


@pytest.fixture
def world(tmp_path):
    """camp/ (a copy of the mini campaign) beside other/ (another campaign's files, all valid)."""
    camp, other = tmp_path / "camp", tmp_path / "other"
    shutil.copytree(MINI, camp)
    shutil.copytree(MINI, other)
    return camp, other


def _edit(path: Path, fn) -> None:
    doc = json.loads(path.read_text())
    fn(doc)
    path.write_text(json.dumps(doc, indent=1))


def _run_path(camp, other, how):
    """$.runs[0].path of campaign.json (the req-serial run)."""
    target = other / "runs" / "req-serial"
    if how == "dotdot":
        rel = "../other/runs/req-serial"
    elif how == "absolute":
        rel = str(target)
    elif how == "symlink-folder":
        os.symlink(target, camp / "runs" / "elsewhere")
        rel = "runs/elsewhere"
    else:  # symlink to a file: the run's harness file
        (camp / "runs" / "req-serial" / "requests.json").unlink()
        os.symlink(target / "requests.json", camp / "runs" / "req-serial" / "requests.json")
        return "campaign.json", "$.runs[0].path", "run file requests.json"
    _edit(camp / "campaign.json", lambda d: d["runs"][0].__setitem__("path", rel))
    return "campaign.json", "$.runs[0].path", "run folder"


def _snapshot(camp, other, how):
    """$.samples[1].metrics_before of phases.json (a /metrics capture)."""
    run = camp / "runs" / "phases-serial"
    target = other / "runs" / "phases-serial" / "metrics"
    if how == "dotdot":
        rel = "../../../other/runs/phases-serial/metrics/s1.prom"
    elif how == "absolute":
        rel = str(target / "s1.prom")
    elif how == "symlink-file":
        os.symlink(target / "s1.prom", run / "metrics" / "borrowed.prom")
        rel = "metrics/borrowed.prom"
    else:
        os.symlink(target, run / "borrowed")
        rel = "borrowed/s1.prom"
    _edit(run / "phases.json", lambda d: d["samples"][1].__setitem__("metrics_before", rel))
    return "runs/phases-serial/phases.json", "$.samples[1].metrics_before", "snapshot"


def _named_file(name: str, run: str, index: int):
    """A file the loader reads by its fixed name (server.log, memory.json, phases.json)."""

    def make(camp, other, how):
        mine = camp / "runs" / run / name
        if how == "symlink-file":
            mine.unlink()
            os.symlink(other / "runs" / run / name, mine)
        else:  # symlink-folder: the run folder itself
            shutil.rmtree(camp / "runs" / run)
            os.symlink(other / "runs" / run, camp / "runs" / run)
        what = f"run file {name}" if how == "symlink-file" else "run folder"
        return "campaign.json", f"$.runs[{index}].path", what

    return make


def _manifest(camp, other, how):
    (camp / "campaign.json").unlink()
    os.symlink(other / "campaign.json", camp / "campaign.json")
    return "campaign.json", "-", "campaign.json"


CASES = [
    *[("run path", _run_path, how) for how in ("dotdot", "absolute", "symlink-folder", "symlink-file")],
    *[("snapshot", _snapshot, how) for how in ("dotdot", "absolute", "symlink-file", "symlink-folder")],
    *[("server.log", _named_file("server.log", "req-batch", 1), how) for how in ("symlink-file", "symlink-folder")],
    *[("phases.json", _named_file("phases.json", "phases-serial", 2), how) for how in ("symlink-file",)],
    *[("memory.json", _named_file("memory.json", "mem-serial", 3), how) for how in ("symlink-file", "symlink-folder")],
    ("campaign.json", _manifest, "symlink-file"),
]


@pytest.mark.parametrize(("kind", "make", "how"), CASES, ids=[f"{k}-{h}" for k, _, h in CASES])
def test_validate_rejects_every_way_out_and_reads_nothing_outside(world, kind, make, how, capsys):
    camp, other = world
    doc, where, what = make(camp, other, how)
    code, err, opened = _validate_reads(["validate", str(camp)], capsys)
    assert code == 2, err
    line = f"{camp / doc}: {where}: {what} "
    assert line in err, err
    assert ("the campaign folder: a campaign reads only its own files" in err) != (how == "absolute")
    assert ("is an absolute path: name files relative to the campaign folder" in err) == (how == "absolute")
    outside = [p for p in opened if Path(p).resolve().is_relative_to(other.resolve())]
    assert not outside, f"read outside the campaign: {outside}"


def test_a_symlink_that_stays_inside_and_a_dotdot_that_stays_inside_are_fine(world, capsys):
    camp, _ = world
    run = camp / "runs" / "phases-serial"
    os.symlink("metrics", run / "captures")  # a folder link inside the campaign
    _edit(
        run / "phases.json",
        lambda d: (
            d["samples"][1].__setitem__("metrics_before", "captures/s1.prom"),
            d["samples"][2].__setitem__("metrics_before", "../phases-serial/metrics/s2.prom"),
        ),
    )
    assert main(["validate", str(camp)]) == 0, capsys.readouterr().err


@pytest.mark.parametrize("how", ["dotdot", "absolute", "symlink-file", "symlink-folder"])
@pytest.mark.parametrize("key", ["prefill_log", "requests"])
def test_pd_run_references_stay_inside(tmp_path, key, how, capsys):
    camp, other = tmp_path / "camp", tmp_path / "other"
    shutil.copytree(PD, camp)
    other.mkdir()
    (other / "sub").mkdir()
    (other / "sub" / "f.txt").write_text("x\n")
    run = camp / "runs" / "cap1-n320"
    rel = {
        "dotdot": "../../../other/sub/f.txt",
        "absolute": str(other / "sub" / "f.txt"),
        "symlink-file": "f.txt",
        "symlink-folder": "sub/f.txt",
    }[how]
    if how == "symlink-file":
        os.symlink(other / "sub" / "f.txt", run / "f.txt")
    elif how == "symlink-folder":
        os.symlink(other / "sub", run / "sub")
    _edit(run / "pd.json", lambda d: d.__setitem__(key, rel))
    code, err, opened = _validate_reads(["validate", str(camp)], capsys)
    assert code == 2
    assert f"{run / 'pd.json'}: $.{key}: file {rel!r} " in err and "the campaign folder" in err
    assert not [p for p in opened if Path(p).resolve().is_relative_to(other.resolve())]


@pytest.mark.parametrize(("kind", "make", "how"), [c for c in CASES if c[2] in ("dotdot", "symlink-file")][:4])
def test_render_rejects_what_validate_rejects(world, tmp_path, kind, make, how, capsys):
    camp, other = world
    doc, where, what = make(camp, other, how)
    out = tmp_path / "out"
    assert main(["render", str(camp), "--out", str(out), "--page", "baseline"]) == 2
    err = capsys.readouterr().err
    assert f"{doc}: {where}: {what} " in err and "the campaign folder" in err
    assert not (out / "baseline.html").exists()


def test_same_campaign_from_two_folders_gives_the_same_page(tmp_path, monkeypatch):
    """No absolute path of the rendering machine in the page, its notebook or its values."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    monkeypatch.setenv("BENCHBOOK_GIT_SHA", "0" * 40)
    made = {}
    for where in ("a", "b/deeper/still"):
        camp = tmp_path / where / "mini"
        shutil.copytree(MINI, camp)
        out = tmp_path / f"out-{where.replace('/', '-')}"
        assert main(["render", str(camp), "--out", str(out), "--page", "baseline"]) == 0
        made[where] = {s: (out / f"baseline{s}").read_bytes() for s in (".html", ".ipynb", ".values.json")}
    for s in (".html", ".ipynb", ".values.json"):
        assert made["a"][s] == made["b/deeper/still"][s], s
        assert str(tmp_path).encode() not in made["a"][s], s
    assert b"mini/runs/phases-serial/metrics/s1.prom" in made["a"][".html"]  # named from the campaign


def test_compare_reads_what_it_is_given_says_which_and_embeds_no_machine_path(tmp_path, monkeypatch, capsys):
    fix = Path(__file__).resolve().parent / "fixtures" / "realdata" / "vllm_bench_serving"
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    monkeypatch.setenv("BENCHBOOK_GIT_SHA", "0" * 40)
    pages = {}
    for where in ("x", "y/z"):
        d = tmp_path / where / "results"
        d.mkdir(parents=True)
        files = [shutil.copy(fix / f"nv-action_serving_llama8B_tp1_{i}.json", d) for i in (1, 2)]
        out = tmp_path / f"out-{where.replace('/', '-')}"
        assert main(["render", "--compare", *map(str, files), "--out", str(out)]) == 0
        err = capsys.readouterr().err
        assert f"compare: reading 2 file(s): {files[0]}, {files[1]}" in err
        pages[where] = (out / "compare.html").read_bytes()
        assert str(tmp_path).encode() not in pages[where]
        assert b"results/nv-action_serving_llama8B_tp1_1.json" in pages[where]
    assert pages["x"] == pages["y/z"]
