"""Energy over a window from GPU telemetry, and joules per token.

Input is a telemetry frame (``t, gpu, power_w, energy_j`` …: :mod:`benchbook.ingest.telemetry` for
AIPerf's export and DCGM-exporter scrapes, :mod:`benchbook.ingest.gpu_samples` for nvidia-smi
CSV, whose frame has no ``energy_j``). Per GPU, over the samples inside ``[t0, t1]``:

* **counter**: the rise of the GPU's cumulative energy counter (last − first sample), when the
  frame has it at two samples or more and it never falls (a fall is a counter reset: not used);
* **power**: otherwise the trapezoid integral of ``power_w`` over the sample times — an estimate
  whose error grows with the sampling interval (stated: ``max_gap_s``).

The window's energy is the sum over GPUs; ``joules_per_token`` divides it by the tokens the window
produced. The two methods agree on a steady load (tests/test_energy.py checks both on one file).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["EnergyFigures", "GpuEnergy", "joules_per_token", "window_energy"]


@dataclass(frozen=True)
class GpuEnergy:
    gpu: int
    joules: float | None
    method: str  # "counter" | "power" | "none"
    samples: int
    span_s: float
    mean_power_w: float | None  # joules / span
    max_gap_s: float | None  # the longest interval between samples (the power integral's resolution)
    reason: str = ""


@dataclass
class EnergyFigures:
    gpus: list[GpuEnergy]
    joules: float | None  # sum over GPUs (None when any GPU has no figure)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"joules": self.joules, "gpus": [g.__dict__ for g in self.gpus], "notes": list(self.notes)}


def _one(gpu: int, t: list[float], power: list[float | None], energy: list[float | None]) -> GpuEnergy:
    n = len(t)
    span = t[-1] - t[0] if n > 1 else 0.0
    gaps = [b - a for a, b in zip(t, t[1:])]
    max_gap = max(gaps) if gaps else None
    e = [x for x in energy if x is not None]
    why = ""
    if len(e) >= 2 and len(e) == n:
        if all(b >= a for a, b in zip(e, e[1:])):
            j = e[-1] - e[0]
            return GpuEnergy(gpu, j, "counter", n, span, j / span if span else None, max_gap)
        why = "energy counter fell (reset): integrated power instead"
    if n >= 2 and all(p is not None for p in power):
        j = sum((power[i] + power[i + 1]) / 2 * gaps[i] for i in range(n - 1))
        return GpuEnergy(gpu, j, "power", n, span, j / span if span else None, max_gap, why)
    return GpuEnergy(gpu, None, "none", n, span, None, max_gap, why or "fewer than two samples with power or energy")


def window_energy(frame: Any, t0: float | None = None, t1: float | None = None) -> EnergyFigures:
    """Energy per GPU and in all over ``[t0, t1]`` (the whole frame when not given)."""
    import polars as pl

    f = frame.filter(pl.col("t").is_not_null())
    if t0 is not None:
        f = f.filter(pl.col("t") >= t0)
    if t1 is not None:
        f = f.filter(pl.col("t") <= t1)
    has_energy = "energy_j" in f.columns
    out = []
    for gpu in sorted(f["gpu"].unique().to_list()):
        g = f.filter(pl.col("gpu") == gpu).sort("t")
        energy = g["energy_j"].to_list() if has_energy else [None] * g.height
        out.append(_one(gpu, g["t"].to_list(), g["power_w"].to_list(), energy))
    notes = [f"GPU {g.gpu}: {g.reason}" for g in out if g.reason]
    total = None if not out or any(g.joules is None for g in out) else sum(g.joules for g in out)
    if not out:
        notes.append("no samples with a time in the window")
    return EnergyFigures(out, total, notes)


def joules_per_token(energy: EnergyFigures, tokens: int | float | None) -> float | None:
    """The window's joules ÷ the tokens it produced (None when either is unknown or tokens is 0)."""
    if energy.joules is None or not tokens:
        return None
    return energy.joules / tokens
