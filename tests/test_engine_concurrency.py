"""Engine-side concurrency (running + waiting, time-averaged) against the client's λ × W; hand-computed."""

from __future__ import annotations

import pytest

from benchbook.analysis.engine_concurrency import (
    GaugeSample,
    engine_concurrency,
    in_flight,
    samples_from_snapshots,
    time_average,
)
from benchbook.errors import InputError
from benchbook.metrics import prometheus
from benchbook.metrics.profiles import PROFILES


def _vllm(running: float, waiting: float, engines: int = 1) -> prometheus.Snapshot:
    lines = ["# TYPE vllm:num_requests_running gauge"]
    lines += [f'vllm:num_requests_running{{engine="{e}",model_name="m"}} {running}' for e in range(engines)]
    lines += ["# TYPE vllm:num_requests_waiting gauge"]
    lines += [f'vllm:num_requests_waiting{{engine="{e}",model_name="m"}} {waiting}' for e in range(engines)]
    return prometheus.parse("\n".join(lines) + "\n", "snap.prom")


def test_time_average_is_the_trapezoid_area_over_the_span():
    # 0 -> 4 over [0, 2] (area 4), flat 4 over [2, 3] (area 4), 4 -> 0 over [3, 4] (area 2): 10 / 4
    pts = [GaugeSample(0, 0), GaugeSample(2, 4), GaugeSample(3, 4), GaugeSample(4, 0)]
    assert time_average(pts) == pytest.approx(2.5)
    assert time_average(list(reversed(pts))) == pytest.approx(2.5)  # order of the input does not matter


def test_uneven_spacing_is_weighted_by_time_not_by_sample_count():
    # nine samples at 8 in the first second, then one at 0 nine seconds later: the mean of samples would be 7.2
    pts = [GaugeSample(i / 8, 8) for i in range(9)] + [GaugeSample(10, 0)]
    assert time_average(pts) == pytest.approx((1 * 8 + 9 * 4) / 10)


def test_agreement_passes_and_the_figures_are_both_sides():
    # 10 s window, L = 2.0 (constant 2); the client completed 20 requests of mean E2E 1.0 s: λW = 2 × 1.0
    pts = [GaugeSample(t, 2) for t in (0, 5, 10)]
    r = engine_concurrency(pts, completed=20, mean_e2e_s=1.0)
    assert (r.mean_in_flight, r.completion_rate, r.check.implied) == (2.0, 2.0, 2.0)
    assert r.check.status == "pass"
    assert (r.snapshots, r.max_gap_s, r.duration_s, r.peak_in_flight) == (3, 5, 10, 2)
    assert "engine running + waiting, time-averaged over 3 snapshots" in r.check.detail


def test_disagreement_fails_with_the_gap():
    # L = 1.0 but λW = 2.0: gap 50 % > 25 % (snapshots every 0.5 s, requests of 1 s: resolved)
    every = [t / 2 for t in range(21)]
    r = engine_concurrency([GaugeSample(t, 1) for t in every], completed=20, mean_e2e_s=1.0)
    assert r.check.status == "fail"
    assert r.check.gap == pytest.approx(0.5)
    # 2.0 vs 2.3: gap 0.3 / 2.3 = 13 % -> warn
    r = engine_concurrency([GaugeSample(t, 2) for t in every], completed=23, mean_e2e_s=1.0)
    assert r.check.status == "warn"


def test_snapshots_sparser_than_a_request_are_not_judged():
    # the capture a loaded CI machine made: scrapes bunch up while the server idles, one gap of 3.74 s spans the
    # busy stretch of 1-s requests; L comes out far below λW, which says nothing about the engine
    pts = [GaugeSample(t / 4, 0) for t in range(80)] + [GaugeSample(20.03, 1), GaugeSample(23.77, 0)]
    r = engine_concurrency(pts, completed=6, mean_e2e_s=0.98)
    assert r.max_gap_s == pytest.approx(3.74)
    assert r.check.gap > 0.25 and r.check.status == "warn"
    assert "not judged: the largest gap between snapshots (3.74 s) is longer than a request's mean time W (0.98 s)" in (
        r.check.detail
    )
    # the same disagreement with a gap no longer than W is a fail
    dense = [GaugeSample(t / 4, 0) for t in range(96)]
    assert engine_concurrency(dense, completed=6, mean_e2e_s=0.98).check.status == "fail"


def test_one_snapshot_is_not_a_window():
    with pytest.raises(ValueError, match="two snapshots"):
        engine_concurrency([GaugeSample(0, 1)], completed=1, mean_e2e_s=1.0)


def test_in_flight_sums_running_and_waiting_over_engine_ranks():
    assert in_flight(_vllm(3, 1), PROFILES["vllm"]) == 4
    assert in_flight(_vllm(3, 1, engines=2), PROFILES["vllm"]) == 8
    snaps = [(0.0, _vllm(0, 0)), (2.0, _vllm(3, 1))]
    assert samples_from_snapshots(snaps, PROFILES["vllm"]) == [GaugeSample(0.0, 0), GaugeSample(2.0, 4)]


def test_a_missing_gauge_is_named():
    snap = prometheus.parse("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 1\n", "x.prom")
    with pytest.raises(InputError, match="waiting gauge is missing"):
        in_flight(snap, PROFILES["vllm"])
