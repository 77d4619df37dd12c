"""analysis.energy: joules per window by the trapezoid rule, idle power, and arms compared with the noise rules;
on the shared H200 campaign's gpu_samples.csv over its events.jsonl bench windows (read in place)."""

from __future__ import annotations

import json
from pathlib import Path

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


# --------------------------------------------------------------------------- the GPU's energy counter
# AIPerf's GPU telemetry export (tests/fixtures/tools/aiperf-0.13.0-telemetry): GPU 0 draws 300, 400,
# 500 W at 1-s samples and its counter rises 800 J; GPU 1 draws 301, 401, 501 W (counter +800 J too).

AIPERF_TELEMETRY = (
    Path(__file__).parent / "fixtures" / "tools" / "aiperf-0.13.0-telemetry" / "gpu_telemetry_export.jsonl"
)
T0_TELEMETRY = 1767225600.0


def test_the_energy_counter_is_used_where_the_telemetry_has_one():
    from benchbook.ingest import telemetry

    df = telemetry.read_aiperf_telemetry(AIPERF_TELEMETRY)
    w = energy.window_energy(df, "all", T0_TELEMETRY, T0_TELEMETRY + 2, output_tokens=3200)
    assert dict(w.methods) == {0: "counter", 1: "counter"}
    assert w.per_gpu[0] == pytest.approx(800.0) and w.joules == pytest.approx(1600.0)
    assert w.j_per_token == pytest.approx(0.5)
    # between samples: the counter interpolated at both ends (GPU 0: +400 J over the second second)
    half = energy.window_energy(df, "half", T0_TELEMETRY + 1.5, T0_TELEMETRY + 2)
    assert half.per_gpu[0] == pytest.approx(200.0)
    # the same window from power alone, with one sample inside allowed: (300+400)/2 + (400+500)/2 = 800 J
    p = df.filter(pl.col("gpu") == 0)
    j, k, why = energy.gpu_joules(p["t"].to_list(), p["power_w"].to_list(), T0_TELEMETRY, T0_TELEMETRY + 2)
    assert j is None and k == 1 and "needs 2" in why  # the power rule needs two samples inside
    assert energy.gpu_counter_joules(p["t"].to_list(), p["energy_j"].to_list(), T0_TELEMETRY, T0_TELEMETRY + 2)[
        0
    ] == pytest.approx(800.0)


def test_a_counter_reset_falls_back_to_power_and_says_so():
    from benchbook.ingest import telemetry

    df = telemetry.read_aiperf_telemetry(AIPERF_TELEMETRY)
    reset = df.with_columns(
        pl.when((pl.col("gpu") == 0) & (pl.col("t") == T0_TELEMETRY + 2))
        .then(0.0)
        .otherwise(pl.col("energy_j"))
        .alias("energy_j")
    )
    w = energy.window_energy(reset, "all", T0_TELEMETRY, T0_TELEMETRY + 2)
    assert w.joules is None and "counter fell" in w.notes[0]  # and power alone has too few samples inside
    assert "GPU 0" in w.why_not
