"""Sweeps: configurations that differ only in offered load (or in one swept engine parameter).

What a sweep's users ask is not "candidate vs baseline" at each load but the latency–throughput
curve, where it saturates and the highest load that meets an SLO. Per point (one run):

* achieved request and output-token rates (the tool's ``completed / duration``) and latency
  p50/p99 of TTFT, TPOT, ITL and E2E;
* **saturation** (load sweeps): an offered rate of ``inf`` (every request sent at once) measures
  capacity and is saturated by construction; a finite offered rate is saturated when the client's
  *send-window rate* ``completed / (duration − mean E2E)`` — the achieved rate with the drain of the
  last requests taken out, which a short run otherwise charges to the server — falls below
  :data:`KEEP_UP` × offered. Any point is also saturated when, against the previous point, latency
  (median E2E) rose by more than :data:`LATENCY_RISE` while achieved throughput rose by less than
  :data:`THROUGHPUT_RISE` ("latency rising without throughput"). The saturation point is the first
  saturated load;
* validity: the run's gates (``reconcile.gates``); points failing one are kept and drawn distinctly;
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
    run_id: str
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


def _order(v: float | None) -> float:
    return -math.inf if v is None else float(v)


def shown(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return "inf" if math.isinf(v) else f"{v:g}"
    return str(v)


def mark_saturation(
    sw: Sweep, mean_e2e_s: dict[str, float | None], durations: dict[str, float | None], completed: dict[str, int | None]
) -> None:
    """Set ``saturated``/``saturation_why`` on each point and the sweep's saturation point."""
    sw.points.sort(key=lambda p: (_order(p.load), p.run_id))
    prev: Point | None = None  # the last point at a lower load (repeats at one load are not compared)
    last: Point | None = None
    for p in sw.points:
        if last is not None and last.load != p.load:
            prev = last
        why = []
        if sw.kind == "load" and sw.axis == "request rate" and p.load is not None:
            if math.isinf(p.load):
                why.append("offered rate inf: every request sent at once, the achieved rate is the server's capacity")
            else:
                done, dur, e2e = completed.get(p.run_id), durations.get(p.run_id), mean_e2e_s.get(p.run_id)
                if done and dur:
                    window = dur - e2e if e2e is not None and 0 < e2e < dur else dur
                    p.send_rate = done / window
                    if p.send_rate < KEEP_UP * p.load:
                        why.append(
                            f"achieved {p.achieved_req_s:.3g} req/s (send window {p.send_rate:.3g} req/s) "
                            f"< {KEEP_UP:.0%} of offered {p.load:g}"
                        )
        if prev is not None and sw.kind == "load":
            l0, l1 = prev.latency.get("median_e2el_ms"), p.latency.get("median_e2el_ms")
            t0, t1 = prev.achieved_req_s, p.achieved_req_s
            if l0 and l1 and t0 and t1 and l1 / l0 - 1 > LATENCY_RISE and t1 / t0 - 1 < THROUGHPUT_RISE:
                why.append(
                    f"median E2E rose {l1 / l0 - 1:.0%} over {prev.load_shown} while achieved req/s rose {t1 / t0 - 1:+.0%}"
                )
        p.saturated = bool(why)
        p.saturation_why = "; ".join(why)
        if p.saturated and sw.saturation is None:
            sw.saturation = p.load_shown
        last = p
