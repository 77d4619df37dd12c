"""Sweeps: the Llama-3.3-70B request-rate sweep (1, 4, 16, inf) and the saturation rules.

By hand from the files: achieved 0.9746, 3.1752, 6.3332, 8.3983 req/s (completed / duration); mean
E2E (TTFT + Σ ITL per request) 5.27, 5.77, 6.71, 7.57 s; send-window rate completed / (duration −
mean E2E) = 200 / (205.219 − 5.270) = 1.0003, 200 / (62.988 − 5.772) = 3.4955, 200 / (31.579 − 6.712)
= 8.0427 — 16 is the first offered rate the client could not keep up with (8.04 < 0.8 × 16).
"""

from __future__ import annotations

import pytest

from benchbook.analysis import resultset as rset
from benchbook.analysis import sweep as S
from test_identity import DEEPSEEK, LLAMA, shared


def test_llama_rate_sweep_saturates_at_16():
    files = [shared(LLAMA.format(q)) for q in ("inf", "16", "04", "01")]  # any order
    rs = rset.build(files, min_duration_s=20)  # every run passes the gates (the shortest is 23.8 s)
    assert rs.pairings == [] and rs.verdicts == []  # one configuration: its curve, no "candidate vs baseline"
    (sw,) = rs.sweeps
    assert sw.axis == "request rate" and sw.kind == "load"
    assert [p.load_shown for p in sw.points] == ["1", "4", "16", "inf"]
    assert [p.achieved_req_s for p in sw.points] == pytest.approx([0.9745666, 3.1751913, 6.3332499, 8.3983048])
    assert [p.send_rate for p in sw.points[:3]] == pytest.approx([1.0003, 3.4955, 8.0427], abs=1e-4)
    assert [p.saturated for p in sw.points] == [False, False, True, True]
    assert sw.saturation == "16"
    assert "achieved 6.33 req/s" in sw.points[2].saturation_why
    assert sw.points[3].saturation_why.startswith("offered rate inf")
    assert any(f.kind == "saturation" and "saturated at request rate 16" in f.text for f in rs.findings)
    # 31.6 s and 23.8 s runs fail the 60 s duration gate: kept, drawn as invalid
    assert [p.valid for p in sw.points] == [True, True, True, True]


def test_saturation_is_never_claimed_from_points_that_failed_a_gate():
    files = [shared(LLAMA.format(q)) for q in ("inf", "16", "04", "01")]
    rs = rset.build(files, min_duration_s=60)  # the 31.6 s and 23.8 s runs at 16 and inf fail it
    (sw,) = rs.sweeps
    assert [p.valid for p in sw.points] == [True, True, False, False]
    assert "minimum duration" in sw.points[2].invalid_why
    assert [p.saturated for p in sw.points] == [False] * 4 and sw.saturation is None
    assert sw.points[2].saturation_why == "not judged: failed a validity gate"
    assert not any(f.kind == "saturation" for f in rs.findings)


def test_a_different_model_is_not_a_sweep_point():
    rs = rset.build([shared(LLAMA.format("01")), shared(LLAMA.format("inf")), shared(DEEPSEEK)])
    (sw,) = rs.sweeps
    assert [p.load_shown for p in sw.points] == ["1", "inf"]
    assert [p.kind for p in rs.pairings] == ["not comparable"]


def _pt(run, load, req_s, e2e_ms, repeats=(1.0,)):
    """A point of ``len(repeats)`` runs, whose req/s are ``req_s`` times each factor."""
    vals = {"request_throughput": [req_s * f for f in repeats], "median_e2el_ms": [e2e_ms] * len(repeats)}
    return S.Point(run, "c", load, S.shown(load), req_s, None, {"median_e2el_ms": e2e_ms},
                   runs=[f"{run}{k}" for k in range(len(repeats))], values=vals)  # fmt: skip


def test_latency_rising_without_throughput_is_saturation():
    sw = S.Sweep("s", "max concurrency", "load", [_pt("a", 8, 10.0, 100.0), _pt("b", 16, 18.0, 120.0),
                                                  _pt("c", 32, 18.5, 240.0), _pt("d", 64, 18.6, 480.0)])  # fmt: skip
    S.mark_saturation(sw)
    assert [p.saturated for p in sw.points] == [False, False, True, True]
    assert sw.saturation == "32" and sw.points[2].saturation_why == (
        "req/s +2.8% over 16 (below the noise band 5%) while median E2E rose 100%"
    )


def test_a_gain_beyond_5_percent_but_within_the_measured_spread_is_noise():
    # 16 -> 32: +8 % req/s, but the repeats at 32 spread 12 % ([min–max] bands overlap): within noise
    sw = S.Sweep("s", "max concurrency", "load", [_pt("a", 16, 18.0, 120.0),
                                                  _pt("b", 32, 19.44, 240.0, repeats=(0.95, 1.0, 1.064))])  # fmt: skip
    S.mark_saturation(sw)
    assert sw.saturation == "32" and "noise band 12%" in sw.points[1].saturation_why


def test_gpu_frontier_figures():
    p = S.Point("r", "c", 4.0, "4", 3.0, 800.0, {"median_tpot_ms": 25.0}, gpus=8)
    assert p.per_user_tok_s == 40.0 and p.per_gpu_tok_s == 100.0


def test_repeats_at_one_load_are_one_point_compared_with_the_lower_load():
    sw = S.Sweep("s", "max concurrency", "load", [_pt("a", 8, 10.0, 100.0, repeats=(1.0, 1.01)),
                                                  _pt("c", 16, 18.0, 110.0)])  # fmt: skip
    S.mark_saturation(sw)
    assert [p.saturated for p in sw.points] == [False, False] and sw.saturation is None
    assert sw.points[0].n == 2 and sw.points[0].band("request_throughput") == (10.0, 10.1)


def test_one_swept_engine_parameter_is_three_configurations_at_one_load(tmp_path):
    """max_num_seqs is what the server ran (deployment), not the load: three configurations judged at
    their one matched load (concurrency 2), no curve."""
    import json

    from test_identity import ER

    src = json.loads((ER / "er0080_sweep_maxnumseqs4_conc2_run0.json").read_text())
    files = []
    for k, seqs in enumerate((4, 8, 16)):
        files.append(tmp_path / f"seqs{seqs}.json")
        files[-1].write_text(json.dumps({**src, "max_num_seqs": seqs, "duration": 1.3 - 0.2 * k}))
    rs = rset.build(files)
    assert [c.label for c in rs.configs] == ["max_num_seqs 4", "max_num_seqs 8", "max_num_seqs 16"]
    assert [p.kind for p in rs.pairings] == ["verdicts", "verdicts"] and rs.sweeps == []
    assert {v.load for v in rs.verdicts} == {"concurrency 2"}
