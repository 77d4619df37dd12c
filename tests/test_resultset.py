"""Result sets: runs that fail a validity gate are shown but never judged or used as noise (real files)."""

from __future__ import annotations

import pytest

from benchbook.analysis import resultset as rset
from test_identity import ER

# two repeats of one opt-125m configuration (max_num_seqs 4; 1.365 s and 0.642 s, 8 requests each) and one
# run of another backend at the same load: a verdict pairing
SWEEP = [ER / "er0080_sweep_maxnumseqs4_conc2_run0.json", ER / "er0080_sweep_maxnumseqs4_conc2_run1.json"]
BENCH = ER / "er0080_bench_serve_v0.25.1.json"


def test_runs_failing_a_gate_get_no_verdict_and_say_why():
    rs = rset.build([*SWEEP, BENCH])
    assert [p.kind for p in rs.pairings] == ["verdicts"]
    failed = {e.id: sorted(g.name for g in e.gates if g.status == "fail") for e in rs.entries}
    assert set(map(tuple, failed.values())) == {("minimum completed requests", "minimum duration")}
    assert rs.verdicts and {v.judgement.state for v in rs.verdicts} == {"cannot"}
    v = next(v for v in rs.verdicts if v.metric == "median_ttft_ms")
    ref, cand = rs.config(v.baseline), rs.config(v.candidate)
    assert v.judgement.why == (
        f"every run of {ref.label} at concurrency 2 failed a validity gate (minimum completed requests, minimum duration); "
        f"every run of {cand.label} at concurrency 2 failed a validity gate (minimum completed requests, minimum duration), "
        "so the figures are shown but not judged"
    )
    # the ratio of medians is still shown, from every run
    ttft = {e.id: e.get("median_ttft_ms") for e in rs.entries}
    sweep = sorted(ttft[p.stem] for p in SWEEP)
    assert v.judgement.ratio == pytest.approx(ttft[BENCH.stem] / ((sweep[0] + sweep[1]) / 2))
    assert rs.spreads == {}  # failed runs measure no noise either
    cannot = [f.text for f in rset._findings(rs) if f.kind == "cannot"]
    assert cannot and all("failed a validity gate" in t for t in cannot)


def test_the_same_runs_are_judged_once_the_gates_admit_them():
    # gates lowered below these runs (1 s, 8 requests): the spread of the two repeats is the yardstick
    rs = rset.build([*SWEEP, BENCH], min_duration_s=0.5, min_completed=4)
    states = {v.metric: v.judgement.state for v in rs.verdicts}
    # 2 vs 1 runs, the small-n rule: both pairwise ratios of the TTFT (1.24, 1.46) agree in sign and exceed
    # the 17.6 % spread -> a result; the throughput's (0.42, 0.88) agree in sign but only one exceeds the
    # 112.7 % spread, and not both are inside it -> cannot tell (the median rule called it noise)
    assert states["median_ttft_ms"] == "result" and states["output_throughput"] == "cannot"
    v = next(v for v in rs.verdicts if v.metric == "output_throughput")
    assert v.judgement.verdict.interval == pytest.approx((0.416, 0.884), abs=1e-3)
    assert not any("validity gate" in v.judgement.why for v in rs.verdicts)
    (spread,) = rs.spreads.values()  # the repeats at the matched load
    assert spread["median_ttft_ms"] > 0


def test_a_failed_repeat_is_left_out_and_named():
    # run1 only fails when the minimum duration sits between the two repeats' 0.642 s and 1.365 s
    rs = rset.build([*SWEEP, BENCH], min_duration_s=1.0, min_completed=4)
    run1 = SWEEP[1].stem
    assert {g.name for e in rs.entries if e.id == run1 for g in e.gates if g.status == "fail"} == {"minimum duration"}
    assert all(f"left out, failed a validity gate: {run1}" in v.judgement.why for v in rs.verdicts), [
        v.judgement.why for v in rs.verdicts
    ]
    # one valid run per side: no spread measured, so no verdict
    assert {v.judgement.state for v in rs.verdicts} == {"cannot"}
    assert all(v.baseline_cell.n == 1 for v in rs.verdicts)
