"""analysis.energy: joules per window by the trapezoid rule, idle power, and arms compared with the noise rules;
on the shared H200 campaign's gpu_samples.csv over its events.jsonl bench windows (read in place)."""

from __future__ import annotations

import json

import polars as pl
import pytest

from benchbook.analysis import energy
from benchbook.ingest.gpu_samples import read_gpu_csv
from h200_campaign import H200


def _frame(points, gpu=0):
    return pl.DataFrame(
        {"t": [float(t) for t, _ in points], "gpu": [gpu] * len(points), "power_w": [float(p) for _, p in points]}
    )


def test_trapezoid_by_hand():
    # 100 W at t=0..1, ramping to 300 W at t=2, 300 W at t=3: window [0.5, 2.5]
    s = _frame([(0, 100), (1, 100), (2, 300), (3, 300)])
    w = energy.window_energy(s, "w", 0.5, 2.5, output_tokens=10, requests=2, idle_w=50)
    # 0.5 s × 100 + 1 s × (100 + 300)/2 + 0.5 s × 300 = 50 + 200 + 150
    assert w.joules == pytest.approx(400)
    assert w.j_per_token == pytest.approx(40) and w.j_per_request == pytest.approx(200)
    assert w.idle_joules == pytest.approx(100) and w.above_idle_j_per_token == pytest.approx(30)


def test_gpus_are_summed_and_a_short_window_is_not_measured():
    s = pl.concat([_frame([(t, 100) for t in range(5)], 0), _frame([(t, 50) for t in range(5)], 1)])
    w = energy.window_energy(s, "w", 0.0, 4.0, output_tokens=1)
    assert w.joules == pytest.approx(600) and w.per_gpu == {0: 400, 1: 200}
    short = energy.window_energy(s, "phase", 1.1, 1.3)
    assert short.joules is None and "inside the window" in short.why_not
    outside = energy.window_energy(s, "late", 3.0, 9.0)
    assert outside.joules is None and "do not cover" in outside.why_not


def _bench_windows(arm):
    ev = [json.loads(x) for x in (H200 / arm / "events.jsonl").read_text().splitlines()]
    return {e["event"].removeprefix("bench_"): e for e in ev if e["event"].startswith("bench_")}, {
        e["event"]: e for e in ev
    }


def test_joules_per_token_per_arm_on_the_h200():
    per_arm, got = {}, {}
    for arm in ("serial", "batch", "eager", "noprefix"):
        s = read_gpu_csv(H200 / arm / "gpu_samples.csv")
        bench, _ev = _bench_windows(arm)
        b = bench["conc1"]
        idle, n = energy.idle_power(energy.idle_samples(s, b["t_start"]), b["t_start"])
        assert n == energy.IDLE_SAMPLES and 60 < idle < 160  # the loaded server waiting, stated apart
        res = json.loads((H200 / arm / "results" / "bench_conc1.json").read_text())
        w = energy.window_energy(
            s,
            arm,
            b["t_start"],
            b["t_end"],
            output_tokens=res["total_output_tokens"],
            requests=res["completed"],
            idle_w=idle,
        )
        assert w.samples >= 20  # 0.5-s sampling over a 12–33 s window
        got[arm] = w
        per_arm[arm] = [w.j_per_token]
    # the same 16 × 128 tokens at concurrency 1: ~450 W for ~12.7 s with CUDA graphs, ~2.9 J per token
    for arm in ("serial", "batch", "noprefix"):
        assert 2.5 < got[arm].j_per_token < 3.2 and 400 < got[arm].mean_w < 520
    assert got["eager"].j_per_token > 1.3 * got["serial"].j_per_token  # eager decode takes 2.7× longer per token
    rows = {r["candidate"]: r for r in energy.compare_arms(per_arm, "serial", spread=0.075)}
    assert rows["eager"]["is_result"] and rows["eager"]["direction"] == "regression"
    assert not rows["batch"]["is_result"] and not rows["noprefix"]["is_result"]
    assert energy.compare_arms(per_arm, "serial", spread=None)[0]["state"] == "cannot"


def test_batching_lowers_joules_per_token_along_the_ladder():
    s = read_gpu_csv(H200 / "batch" / "gpu_samples.csv")
    bench, _ = _bench_windows("batch")
    jpt = []
    for p in ("conc1", "conc2", "conc4", "conc8", "conc16", "conc32", "conc64"):
        res = json.loads((H200 / "batch" / "results" / f"bench_{p}.json").read_text())
        jpt.append(
            energy.window_energy(
                s, p, bench[p]["t_start"], bench[p]["t_end"], output_tokens=res["total_output_tokens"]
            ).j_per_token
        )
    assert jpt == sorted(jpt, reverse=True) and jpt[0] / jpt[-1] > 10
