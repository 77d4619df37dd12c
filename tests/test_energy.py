"""Energy from GPU telemetry (analysis.energy), by hand on the AIPerf telemetry fixture: GPU 0 draws
300, 400, 500 W at 1-s samples and its counter rises 0.0008 MJ = 800 J; GPU 1 draws 301, 401, 501 W."""

from pathlib import Path

import polars as pl
import pytest

from benchbook.analysis import energy
from benchbook.ingest import telemetry

AIPERF = Path(__file__).parent / "fixtures" / "tools" / "aiperf-0.13.0-telemetry" / "gpu_telemetry_export.jsonl"
T0 = 1767225600.0


def test_counter_and_power_integral_agree():
    df = telemetry.read_aiperf_telemetry(AIPERF)
    e = energy.window_energy(df)
    g0, g1 = e.gpus
    assert (g0.method, g0.joules, g0.span_s, g0.mean_power_w) == (
        "counter",
        pytest.approx(800.0),
        2.0,
        pytest.approx(400.0),
    )
    assert e.joules == pytest.approx(1600.0)
    # the same window from power alone: trapezoid (300+400)/2 + (400+500)/2 = 800 J; GPU 1: 802 J
    p = energy.window_energy(df.drop("energy_j"))
    assert [g.method for g in p.gpus] == ["power", "power"]
    assert [g.joules for g in p.gpus] == [pytest.approx(800.0), pytest.approx(802.0)]
    assert energy.joules_per_token(e, 3200) == pytest.approx(0.5)
    assert energy.joules_per_token(e, 0) is None


def test_window_and_counter_reset():
    df = telemetry.read_aiperf_telemetry(AIPERF)
    w = energy.window_energy(df, T0 + 1, T0 + 2)  # last two samples: 400 -> 500 W, counter +400 J
    assert w.gpus[0].joules == pytest.approx(400.0) and w.gpus[0].samples == 2
    reset = df.with_columns(
        pl.when((pl.col("gpu") == 0) & (pl.col("t") == T0 + 2))
        .then(0.0)
        .otherwise(pl.col("energy_j"))
        .alias("energy_j")
    )
    r = energy.window_energy(reset)
    assert r.gpus[0].method == "power" and r.gpus[0].joules == pytest.approx(800.0)
    assert "counter fell" in r.notes[0]
    one = energy.window_energy(df, T0 + 2, T0 + 2)
    assert one.joules is None and one.gpus[0].method == "none"
