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
    rs = rset.build(files)
    assert [p.kind for p in rs.pairings] == ["sweep"] * 3 and rs.verdicts == []  # no "candidate vs baseline"
    (sw,) = rs.sweeps
    assert sw.axis == "request rate" and sw.kind == "load"
    assert [p.load_shown for p in sw.points] == ["1", "4", "16", "inf"]
    assert [p.achieved_req_s for p in sw.points] == pytest.approx([0.9745666, 3.1751913, 6.3332499, 8.3983048])
    assert [p.send_rate for p in sw.points[:3]] == pytest.approx([1.0003, 3.4955, 8.0427], abs=1e-4)
    assert [p.saturated for p in sw.points] == [False, False, True, True]
    assert sw.saturation == "16"
    assert "achieved 6.33 req/s" in sw.points[2].saturation_why
    assert sw.points[3].saturation_why.startswith("offered rate inf")
    # 31.6 s and 23.8 s runs fail the 60 s duration gate: kept, drawn as invalid
    assert [p.valid for p in sw.points] == [True, True, False, False]
    assert "minimum duration" in sw.points[2].invalid_why
    assert any(f.kind == "saturation" and "saturated at request rate 16" in f.text for f in rs.findings)


def test_a_different_model_is_not_a_sweep_point():
    rs = rset.build([shared(LLAMA.format("01")), shared(LLAMA.format("inf")), shared(DEEPSEEK)])
    (sw,) = rs.sweeps
    assert [p.load_shown for p in sw.points] == ["1", "inf"]
    assert [p.kind for p in rs.pairings] == ["sweep", "not comparable"]


def _pt(run, load, req_s, e2e_ms):
    return S.Point(run, "c", load, S.shown(load), req_s, None, {"median_e2el_ms": e2e_ms})


def test_latency_rising_without_throughput_is_saturation():
    sw = S.Sweep("s", "max concurrency", "load", [_pt("a", 8, 10.0, 100.0), _pt("b", 16, 18.0, 120.0),
                                                  _pt("c", 32, 18.5, 240.0), _pt("d", 64, 18.6, 480.0)])  # fmt: skip
    S.mark_saturation(sw, {}, {}, {})
    assert [p.saturated for p in sw.points] == [False, False, True, True]
    assert sw.saturation == "32" and sw.points[2].saturation_why == (
        "median E2E rose 100% over 16 while achieved req/s rose +3%"
    )


def test_gpu_frontier_figures():
    p = S.Point("r", "c", 4.0, "4", 3.0, 800.0, {"median_tpot_ms": 25.0}, gpus=8)
    assert p.per_user_tok_s == 40.0 and p.per_gpu_tok_s == 100.0


def test_repeats_at_one_load_are_compared_with_the_lower_load_not_each_other():
    sw = S.Sweep("s", "max concurrency", "load", [_pt("a", 8, 10.0, 100.0), _pt("b", 8, 10.1, 130.0),
                                                  _pt("c", 16, 18.0, 110.0)])  # fmt: skip
    S.mark_saturation(sw, {}, {}, {})
    assert [p.saturated for p in sw.points] == [False, False, False] and sw.saturation is None


def test_one_swept_engine_parameter_is_a_parameter_sweep(tmp_path):
    import json

    from test_identity import ER

    src = json.loads((ER / "er0080_sweep_maxnumseqs4_conc2_run0.json").read_text())
    files = []
    for k, seqs in enumerate((4, 8, 16)):
        files.append(tmp_path / f"seqs{seqs}.json")
        files[-1].write_text(json.dumps({**src, "max_num_seqs": seqs, "duration": 1.3 - 0.2 * k}))
    rs = rset.build(files)
    assert [p.kind for p in rs.pairings] == ["sweep", "sweep"] and rs.verdicts == []
    (sw,) = rs.sweeps
    assert (sw.axis, sw.kind) == ("max_num_seqs", "parameter")
    assert [p.load_shown for p in sw.points] == ["4", "8", "16"] and sw.saturation is None
