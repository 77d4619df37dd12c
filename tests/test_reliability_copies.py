"""Copies are never repeats (issue 36, item 1): a run folder read twice — byte for byte, or with its
timestamps, file names and paths changed — is counted once by the baseline ladder, the phase noise and
the whole-request noise yardstick (``analysis.copies``, the compare section's identity-and-data rule),
listed as a todo line, and a zero spread never makes a result (``verdict.decide``)."""

from __future__ import annotations

import json
import shutil
from argparse import Namespace

import pytest

from benchbook.analysis import stats
from benchbook.analysis.campaign_analysis import analyse
from benchbook.analysis.verdict import ZERO_SPREAD, Evidence, State, compare, decide, judge
from benchbook.commands import init as init_cmd
from benchbook.commands.validate import validate_campaign
from h200_campaign import H200, ROOT

# the phase split, its captures, the log and two load points; the big sweep files stay out
SKIP = shutil.ignore_patterns(
    "*_scrapes.jsonl", "*rate*", "gpu_samples.csv", "host_samples.csv", "*conc16*", "*conc32*", "*conc64*", "*conc8*"
)


def _init(tmp, edit=None):
    src = tmp / "runs"
    for p in ("p1", "p2"):
        shutil.copytree(H200 / "batch", src / "batch" / p, ignore=SKIP)
    shutil.copytree(H200 / "serial", src / "serial", ignore=SKIP)
    if edit is not None:
        edit(src / "batch" / "p2")
    dest = tmp / "camp"
    rc = init_cmd.run(
        Namespace(dir=dest, inputs=[src / "serial", src / "batch"], title=None, question=None, quiet=True)
    )
    assert rc == 0
    return dest


def _retimed(p2):
    """The same measurements with other bytes: other dates, another key order and indent, the phase
    captures under other names (paths), the phase times re-serialized."""
    for f in (p2 / "results").glob("*.json"):
        d = json.loads(f.read_text())
        d["date"] = "20300101-120000"
        f.write_text(json.dumps(dict(reversed(list(d.items()))), indent=3))
    doc = json.loads((p2 / "phases.json").read_text())
    for s in doc["samples"]:
        for k in ("metrics_before", "metrics_after"):
            old = p2 / s[k]
            new = old.with_name("moved_" + old.name)
            if old.exists():
                old.rename(new)
            s[k] = str(new.relative_to(p2))
    (p2 / "phases.json").write_text(json.dumps(doc, indent=1))
    (p2 / "server.log").write_text((p2 / "server.log").read_text().replace("2026", "2031"))


def _assert_counted_once(an):
    assert an.phase_noise is None  # the copy is not a second process
    rl = an.results_ladder
    assert rl["spread"] is None and rl["comparisons"]
    # the campaign's one decision per comparison (the one-answer merge): not a result, and the copy is
    # not the repeat that would have measured a spread (one server process each)
    assert all(
        c["verdict"] in ("no verdict", "cannot tell")
        and not c["is_result"]
        and "one server process each" in c["reason"]
        for c in rl["comparisons"]
    ), rl["comparisons"]
    assert not any(c["is_result"] for c in an.comparisons)
    assert {c.run for c in an.copies} >= {"batch-p2-conc1", "batch-p2-conc2", "batch-p2-phases"}
    assert {c.of for c in an.copies} >= {"batch-p1-conc1", "batch-p1-phases"}
    # counted once: the ladder holds one process of batch, the phase cells one run of it
    assert set(an.results_ladder["points"][0].keys()) >= {"process"}
    assert {p["process"] for p in rl["points"] if p["arm"] == "batch"} == {"batch/p1"}
    assert set(an.phase_cells.filter(an.phase_cells["arm"] == "batch")["run"].to_list()) == {"batch-p1-phases"}
    lines = [x["text"] for x in an.baseline_findings().as_dict()["lines"]]
    copy = [t for t in lines if "server process batch/p2 is a copy of batch/p1" in t]
    assert len(copy) == 1 and "not as a repeat" in copy[0], lines  # said once for the process
    summary = an.as_dict()
    assert {c["run"] for c in summary["copies"]} == {c.run for c in an.copies}
    assert any(e["sample"] == "run batch-p2-phases" for e in summary["exclusions"])


def test_byte_identical_process_folders_are_one_process(tmp_path):
    dest = _init(tmp_path)
    _assert_counted_once(analyse(dest))
    found = []
    assert validate_campaign(dest, found.append) == []
    todo = [x for x in found if ": todo: server process batch/p2 is a copy of batch/p1" in x]
    assert len(todo) == 1, found


def test_copies_that_differ_in_timestamps_and_paths_are_copies(tmp_path):
    dest = _init(tmp_path, _retimed)
    # the bytes differ: not a byte comparison
    a, b = (dest / "runs" / "batch" / p / "results" / "bench_conc1.json" for p in ("p1", "p2"))
    assert a.read_bytes() != b.read_bytes()
    _assert_counted_once(analyse(dest))


def test_a_real_repeat_is_still_a_repeat(tmp_path):
    """One phase time 1 % longer and a result file's requests re-timed: a second measurement."""

    def repeat(p2):
        doc = json.loads((p2 / "phases.json").read_text())
        for s in doc["samples"]:
            s["client_total_s"] *= 1.01
        (p2 / "phases.json").write_text(json.dumps(doc))
        for f in (p2 / "results").glob("*.json"):
            d = json.loads(f.read_text())
            d["duration"] *= 1.01
            d["ttfts"] = [t * 1.01 for t in d["ttfts"]]
            d["itls"] = [[t * 1.01 for t in row] for row in d["itls"]]
            f.write_text(json.dumps(d))

    an = analyse(_init(tmp_path, repeat))
    assert an.copies == []
    assert an.phase_noise is not None and an.phase_noise.spread == pytest.approx(0.01)
    assert an.results_ladder["spread"]["spread"] == pytest.approx(0.01, rel=1e-3)


def test_a_whole_request_run_shifted_in_time_is_a_copy(tmp_path):
    """The hand-made campaign's batch ladder run a second time — its every start and end moved by an
    hour and 0.25 s (epoch seconds lose precision: the latencies differ by ~1e-7 s): one run."""
    camp = tmp_path / "mini"
    shutil.copytree(ROOT / "tests" / "fixtures" / "mini", camp)
    shutil.copytree(camp / "runs" / "req-batch", camp / "runs" / "elsewhere" / "again")
    doc = json.loads((camp / "runs" / "elsewhere" / "again" / "requests.json").read_text())
    for q in doc["requests"]:
        q["start"], q["end"] = q["start"] + 1.7e9 + 3600.25, q["end"] + 1.7e9 + 3600.25
    (camp / "runs" / "elsewhere" / "again" / "requests.json").write_text(json.dumps(doc))
    m = json.loads((camp / "campaign.json").read_text())
    m["runs"].append({"id": "req-batch-2", "arm": "batch", "harness": "requests", "path": "runs/elsewhere/again"})
    m["noise"] = {"reference_arm": "batch", "rule": "seed"}
    (camp / "campaign.json").write_text(json.dumps(m))
    an = analyse(camp)
    assert [(c.run, c.of, c.harness) for c in an.copies] == [("req-batch-2", "req-batch", "requests")]
    assert an.noise is None  # before: batch "run twice", spread 0.0 %
    assert "req-batch-2" not in set(an.whole_cells["run"].to_list())
    assert not any(c["is_result"] for c in an.comparisons)
    lines = [x["text"] for x in an.baseline_findings().as_dict()["lines"]]
    assert any("run 'req-batch-2' is a copy of run 'req-batch'" in t for t in lines), lines


@pytest.mark.parametrize("rule", ["seed", "strict", "small-n"])
def test_a_zero_spread_never_makes_a_result(rule):
    b, c = stats.cell([10.0, 10.0, 10.0]), stats.cell([10.5, 10.5, 10.5])  # disjoint, 5 % apart
    v = decide(Evidence(b, c, True, rule, 0.0))
    assert v.state is State.CANNOT_TELL and not v.is_result and v.reason.startswith(ZERO_SPREAD)
    cmp = compare(b, c, spread=0.0, rule=rule)
    assert not cmp.is_result and cmp.verdict == "cannot tell"
    # identical sides stay within noise; a measured spread still judges
    assert decide(Evidence(b, b, True, rule, 0.0)).state is State.WITHIN_NOISE
    assert decide(Evidence(b, c, True, rule, 0.01)).is_result


def test_a_zero_spread_never_makes_a_result_by_rank_or_judge():
    xs, ys = [10.0, 10.1, 10.2, 10.3, 10.4], [12.0, 12.1, 12.2, 12.3, 12.4]
    assert judge(xs, ys, spread=0.0, higher_is_better=True).state == "cannot"
    assert judge(xs[:3], ys[:3], spread=0.0, higher_is_better=True, rule="strict").state == "cannot"
    assert judge(xs, ys, spread=0.05, higher_is_better=True).state == "result"


def test_results_runs_outside_the_ladder_are_the_compare_sections_duplicates_only(tmp_path):
    """Two results runs without a server process holding one vllm bench serve result: the compare
    section lists the duplicate (once); it is not listed a second time as a copy."""
    camp = tmp_path / "c"
    src = ROOT / "tests" / "fixtures" / "tools" / "vllm-0.32.0+cpu" / "bench_serve.json"
    runs = []
    for rid in ("a", "b"):
        (camp / "runs" / rid).mkdir(parents=True)
        shutil.copy(src, camp / "runs" / rid / "bench_serve.json")
        (camp / "runs" / rid / "results.json").write_text(
            json.dumps({"format": "benchbook.results/1", "files": ["bench_serve.json"]})
        )
        runs.append({"id": rid, "harness": "results", "path": f"runs/{rid}"})
    manifest = {
        "format": "benchbook.campaign/1",
        "title": "one result twice",
        "question": "?",
        "date": "2026-12-01",
        "provenance": "measured",
        "runs": runs,
    }
    (camp / "campaign.json").write_text(json.dumps(manifest))
    an = analyse(camp)
    assert an.copies == []
    assert [d["copies"] for d in an.results.duplicates] == [["b"]]
