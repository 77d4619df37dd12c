"""Curves: one configuration's runs over its loads (request rate or concurrency: the sweep axis).

What a sweep's users ask is not "candidate vs baseline" at each load but the latency–throughput
curve of each server configuration, where it stops growing and the highest load that meets an SLO.
A configuration (:func:`benchbook.analysis.identity.same_configuration`) has one curve per load axis;
runs of it at one load are *repeats*: the point is their median with a [min–max] band and n. Per point:

* achieved request and output-token rates (the tool's ``completed / duration``) and latency
  p50/p99 of TTFT, TPOT, ITL and E2E — medians over the repeats that passed every validity gate
  (over all repeats, drawn as failed, when none did);
* **saturation** (:func:`mark_saturation`): the first load whose throughput gain over the previous
  valid load is within noise — below max(:data:`THROUGHPUT_RISE`, the run-to-run spread of either
  point) or with overlapping [min–max] bands — while median E2E still grows by more than
  :data:`LATENCY_RISE`. On a request-rate curve a point is also saturated when its send-window rate
  ``completed / (duration − mean E2E)`` is below :data:`KEEP_UP` × offered, and an offered ``inf``
  is capacity by construction. Points that failed a gate are never used: a curve whose points all
  failed one has no saturation, and says so;
* per GPU, where the GPU count is known: output tokens/s per GPU against tokens/s per user
  (``1000 / median TPOT``) — the throughput–interactivity frontier.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

KEEP_UP = 0.8
LATENCY_RISE = 0.10
THROUGHPUT_RISE = 0.05
LATENCIES = ("ttft", "tpot", "itl", "e2el")


@dataclass
class Point:
    """One load of one configuration's curve: the median over its repeats (``runs``, ``n``)."""

    run_id: str  # the first repeat (``runs`` lists every one)
    config: str
    load: float | None  # offered rate / max concurrency / parameter value (inf allowed)
    load_shown: str
    achieved_req_s: float | None
    output_tok_s: float | None
    latency: dict[str, float | None]  # "median_ttft_ms", "p99_ttft_ms", ...
    gpus: int | None = None
    valid: bool = True
    invalid_why: str = ""
    saturated: bool = False
    saturation_why: str = ""
    send_rate: float | None = None
    runs: list[str] = field(default_factory=list)
    # per figure, the values of the repeats the point's median is taken over (valid ones when any)
    values: dict[str, list[float]] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.runs) or 1

    def band(self, key: str) -> tuple[float, float] | None:
        v = self.values.get(key) or []
        return (min(v), max(v)) if v else None

    def spread(self, key: str) -> float:
        v = [x for x in self.values.get(key) or [] if x > 0]
        return (max(v) - min(v)) / min(v) if len(v) >= 2 else 0.0

    @property
    def per_user_tok_s(self) -> float | None:
        t = self.latency.get("median_tpot_ms")
        return 1000.0 / t if t else None

    @property
    def per_gpu_tok_s(self) -> float | None:
        return self.output_tok_s / self.gpus if self.output_tok_s is not None and self.gpus else None


@dataclass
class Sweep:
    series: str  # what the points share, in words
    axis: str  # "request rate" | "max concurrency" | a parameter name
    kind: str  # "load" | "parameter"
    points: list[Point]
    saturation: str | None = None  # load_shown of the first saturated point
    notes: list[str] = field(default_factory=list)
    configuration: str = ""  # the configuration whose curve this is


def _order(v: float | None) -> float:
    return -math.inf if v is None else float(v)


def shown(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return "inf" if math.isinf(v) else f"{v:g}"
    return str(v)


def _med(v: list[float]) -> float | None:
    import statistics

    return statistics.median(v) if v else None


def _gain_key(p: Point) -> str:
    return "output_throughput" if p.values.get("output_throughput") else "request_throughput"


def mark_saturation(sw: Sweep) -> None:
    """Set ``saturated``/``saturation_why`` on each point and the curve's saturation point (rule in
    the module docstring). Points are in increasing load; only points that passed the gates count."""
    sw.points.sort(key=lambda p: (_order(p.load), p.run_id))
    chain = [p for p in sw.points if p.valid]
    sw.saturation = None
    for p in sw.points:
        p.saturated, p.saturation_why = False, ""
        if not p.valid:
            p.saturation_why = "not judged: failed a validity gate"
    if not chain:
        if sw.points:
            sw.notes.append("saturation not judged: every point failed a validity gate")
        return
    prev: Point | None = None
    for p in chain:
        why = []
        if sw.kind == "load" and sw.axis == "request rate" and p.load is not None:
            if math.isinf(p.load):
                why.append("offered rate inf: every request sent at once, the achieved rate is the server's capacity")
            else:
                done, dur, e2e = (_med(p.values.get(k) or []) for k in ("completed", "duration_s", "mean_e2el_s"))
                if done and dur:
                    window = dur - e2e if e2e is not None and 0 < e2e < dur else dur
                    p.send_rate = done / window
                    if p.send_rate < KEEP_UP * p.load:
                        why.append(
                            f"achieved {p.achieved_req_s:.3g} req/s (send window {p.send_rate:.3g} req/s) "
                            f"< {KEEP_UP:.0%} of offered {p.load:g}"
                        )
        if prev is not None and sw.kind == "load":
            key = _gain_key(p)
            t0, t1 = _med(prev.values.get(key) or []), _med(p.values.get(key) or [])
            l0, l1 = prev.latency.get("median_e2el_ms"), p.latency.get("median_e2el_ms")
            if t0 and t1 and l0 and l1:
                gain = t1 / t0 - 1
                noise = max(THROUGHPUT_RISE, prev.spread(key), p.spread(key))
                b0, b1 = prev.band(key), p.band(key)
                overlap = b0 is not None and b1 is not None and b0[1] >= b1[0] and b1[1] >= b0[0]
                rise = l1 / l0 - 1
                if (gain < noise or overlap) and rise > LATENCY_RISE:
                    what = "output tok/s" if key == "output_throughput" else "req/s"
                    within = "[min–max] bands overlap" if overlap else f"below the noise band {noise:.0%}"
                    why.append(f"{what} {gain:+.1%} over {prev.load_shown} ({within}) while median E2E rose {rise:.0%}")
        p.saturated = bool(why)
        p.saturation_why = "; ".join(why)
        if p.saturated and sw.saturation is None:
            sw.saturation = p.load_shown
        prev = p
