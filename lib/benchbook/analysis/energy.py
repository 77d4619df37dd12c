"""Energy per window from GPU power samples: joules per output token and per request (docs/checks.md).

For each GPU, the energy of a window ``[t0, t1]`` is the trapezoid integral of its ``power.draw``
samples (``ingest/gpu_samples.read_gpu_csv``: ``t, gpu, power_w``), with the power at ``t0`` and
``t1`` interpolated linearly between the samples either side; the window's energy is the sum over its
GPUs. Idle power is the median of each GPU's last :data:`IDLE_SAMPLES` samples at 0 % utilization before
the window (:func:`idle_samples`: the server loaded and waiting), summed over GPUs, and stated separately: ``idle_w × (t1 − t0)`` is the part of the window's
energy the GPUs would have drawn doing nothing, so "above idle" is the load's own share.

Where the telemetry carries the GPU's own cumulative energy counter (DCGM
``DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION``, AIPerf's GPU telemetry export: ``energy_j`` in
``ingest/telemetry``'s frame), the counter is used instead: its rise over the window, interpolated at
``t0`` and ``t1`` (:func:`gpu_counter_joules`); a counter that falls inside the window was reset and
the power integral is used, with the reason in ``notes``.

A window needs samples on both sides and at least :data:`MIN_SAMPLES` inside it; otherwise it is
"not measured" with the reason — a 0.2-s phase sample under 0.5-s sampling is one of those.
Arms are compared with the project's noise rules (:func:`benchbook.analysis.verdict.judge`).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import polars as pl

MIN_SAMPLES = 2  # power samples inside a window, besides the interpolated ends
MAX_GAP_S = 5.0  # a window with a larger gap between power samples is not measured
#: an energy counter and the power samples of the same GPU and window that differ by more than this
#: (relative to the larger, and by more than COUNTER_SLACK_J) disagree: the counter is not used
COUNTER_TOLERANCE = 0.25
COUNTER_SLACK_J = 5.0
#: a GPU's mean power over a window may exceed its board limit by this much (limits are enforced over
#: about a second; a sample average can sit a little above) before the reading is refused
POWER_MARGIN = 0.10
#: without a known accelerator: no GPU draws more than this (a counter jump or ×1e300 is refused)
MAX_ANY_GPU_W = 3000.0


def _interp(ts: list[float], ps: list[float], t: float) -> float:
    for (ta, pa), (tb, pb) in zip(zip(ts, ps), zip(ts[1:], ps[1:])):
        if ta <= t <= tb:
            return pa if tb == ta else pa + (pb - pa) * (t - ta) / (tb - ta)
    raise ValueError(t)


def gpu_joules(ts: list[float], ps: list[float], t0: float, t1: float) -> tuple[float | None, int, str]:
    """(joules, samples inside, why not) of one GPU's samples over ``[t0, t1]`` by the trapezoid rule."""
    if not ts or ts[0] > t0 or ts[-1] < t1:
        return None, 0, "the power samples do not cover the window"
    inside = [(t, p) for t, p in zip(ts, ps) if t0 < t < t1]
    if len(inside) < MIN_SAMPLES:
        return None, len(inside), f"{len(inside)} power sample(s) inside the window (needs {MIN_SAMPLES})"
    pts = [(t0, _interp(ts, ps, t0)), *inside, (t1, _interp(ts, ps, t1))]
    gap = max(b[0] - a[0] for a, b in zip(pts, pts[1:]))
    if gap > MAX_GAP_S:
        return None, len(inside), f"a {gap:.1f} s gap between power samples (more than {MAX_GAP_S:g} s)"
    return sum((b[0] - a[0]) * (a[1] + b[1]) / 2 for a, b in zip(pts, pts[1:])), len(inside), ""


def gpu_counter_joules(ts: list[float], es: list[float], t0: float, t1: float) -> tuple[float | None, int, str]:
    """(joules, samples used, why not) of one GPU's cumulative energy counter over ``[t0, t1]``:
    the counter interpolated at both ends, so a window between two samples is measured too."""
    if len(ts) < 2 or ts[0] > t0 or ts[-1] < t1:
        return None, 0, "the energy counter does not cover the window"
    used = [(t, e) for t, e in zip(ts, es) if t0 <= t <= t1]
    span = [e for t, e in zip(ts, es) if t0 - MAX_GAP_S <= t <= t1 + MAX_GAP_S]
    if any(b < a for a, b in zip(span, span[1:])):
        return None, len(used), "the energy counter fell (reset) in the window: integrated power instead"
    return _interp(ts, es, t1) - _interp(ts, es, t0), len(used), ""


def power_estimate(ts: list[float], ps: list[float], t0: float, t1: float) -> float | None:
    """The trapezoid integral of the power over ``[t0, t1]`` whatever the samples inside (the counter's
    cross-check: a window too short for :func:`gpu_joules` still has an estimate); None uncovered."""
    if not ts or ts[0] > t0 or ts[-1] < t1:
        return None
    pts = [(t0, _interp(ts, ps, t0)), *[(t, p) for t, p in zip(ts, ps) if t0 < t < t1], (t1, _interp(ts, ps, t1))]
    return sum((b[0] - a[0]) * (a[1] + b[1]) / 2 for a, b in zip(pts, pts[1:]))


def counter_disagrees(counter_j: float, power_j: float) -> str | None:
    """Why an energy counter's rise and the power samples' integral over one window cannot both be
    right (:data:`COUNTER_TOLERANCE`), else None: a counter stuck while the GPU draws 490 W, a counter
    jump of megajoules."""
    gap = abs(counter_j - power_j)
    if gap <= COUNTER_SLACK_J or gap <= COUNTER_TOLERANCE * max(abs(counter_j), abs(power_j)):
        return None
    return (
        f"the energy counter rose {counter_j:.6g} J, the power samples integrate to {power_j:.6g} J: they differ "
        f"by more than {COUNTER_TOLERANCE:.0%}, so the counter is not used"
    )


def _counters(samples: pl.DataFrame) -> dict[int, tuple[list[float], list[float]]]:
    import polars as pl

    if "energy_j" not in samples.columns:
        return {}
    ok = samples.filter(pl.col("energy_j").is_not_null()).sort(["gpu", "t"])
    return {
        int(g): (d["t"].to_list(), d["energy_j"].to_list())
        for (g,), d in sorted(ok.group_by(["gpu"], maintain_order=True), key=lambda kv: kv[0][0])
    }


def _per_gpu(samples: pl.DataFrame) -> dict[int, tuple[list[float], list[float]]]:
    import polars as pl

    ok = samples.filter(pl.col("power_w").is_not_null()).sort(["gpu", "t"])
    return {
        int(g): (d["t"].to_list(), d["power_w"].to_list())
        for (g,), d in sorted(ok.group_by(["gpu"], maintain_order=True), key=lambda kv: kv[0][0])
    }


def idle_power(samples: pl.DataFrame, before: float, after: float | None = None) -> tuple[float | None, int]:
    """(Σ over GPUs of the median power of the samples in ``[after, before)``, samples used)."""

    total, n = 0.0, 0
    for _g, (ts, ps) in _per_gpu(samples).items():
        vals = [p for t, p in zip(ts, ps) if t < before and (after is None or t >= after)]
        if not vals:
            return None, 0
        total += statistics.median(vals)
        n += len(vals)
    return (total, n) if n else (None, 0)


IDLE_SAMPLES = 10  # per GPU: the last samples at 0 % utilization before a window


def idle_samples(samples: pl.DataFrame, t0: float) -> pl.DataFrame:
    """The samples that tell a GPU's idle power before ``t0``: per GPU the last :data:`IDLE_SAMPLES`
    samples before it at 0 % utilization (the server loaded and waiting), or the last ones at all where
    the file has no utilization figures."""
    import polars as pl

    before = samples.filter(pl.col("t") < t0)
    if "util_gpu_pct" in before.columns and before["util_gpu_pct"].null_count() < before.height:
        before = before.filter(pl.col("util_gpu_pct") == 0)
    return before.sort("t").group_by("gpu", maintain_order=True).tail(IDLE_SAMPLES)


@dataclass(frozen=True)
class WindowEnergy:
    window: str
    t0: float
    t1: float
    joules: float | None  # Σ over GPUs; None: not measured
    per_gpu: Mapping[int, float] = field(default_factory=dict)
    output_tokens: float | None = None
    requests: float | None = None
    idle_w: float | None = None
    run: str | None = None
    arm: str | None = None
    samples: int = 0
    why_not: str = ""
    methods: Mapping[int, str] = field(default_factory=dict)  # per GPU: "counter" | "power"
    notes: tuple[str, ...] = ()
    interval_s: float | None = None  # the median gap between the samples used
    window_source: str = ""  # where [t0, t1] came from (events.jsonl marker, capture times, result date)

    @property
    def method(self) -> str:
        """How the joules were measured, in words, with the sampling interval ("not measured" without)."""
        every = f", sampled every {self.interval_s:.2f} s" if self.interval_s else ""
        kinds = set(self.methods.values())
        if kinds == {"counter"}:
            return "the GPU's cumulative energy counter, its rise over the window (interpolated at the ends)" + every
        if kinds == {"power"}:
            return "the trapezoid integral of power.draw over the window" + every
        if kinds:
            return "the energy counter where the GPU has one, else the integral of power.draw" + every
        return "not measured"

    @property
    def how(self) -> str:
        """:attr:`method` and where the window came from."""
        return self.method + (f"; window: {self.window_source}" if self.window_source else "")

    @property
    def seconds(self) -> float:
        return self.t1 - self.t0

    @property
    def mean_w(self) -> float | None:
        return None if self.joules is None or self.seconds <= 0 else self.joules / self.seconds

    @property
    def j_per_token(self) -> float | None:
        return None if self.joules is None or not self.output_tokens else self.joules / self.output_tokens

    @property
    def j_per_request(self) -> float | None:
        return None if self.joules is None or not self.requests else self.joules / self.requests

    @property
    def idle_joules(self) -> float | None:
        return None if self.idle_w is None else self.idle_w * self.seconds

    @property
    def above_idle_j_per_token(self) -> float | None:
        if self.joules is None or self.idle_joules is None or not self.output_tokens:
            return None
        return (self.joules - self.idle_joules) / self.output_tokens

    def describe(self) -> str:
        if self.joules is None:
            return f"{self.window}: not measured ({self.why_not})"
        parts = [f"{self.joules:,.0f} J over {self.seconds:.1f} s (mean {self.mean_w:,.0f} W, {len(self.per_gpu)} GPU)"]
        if self.j_per_token is not None:
            parts.append(f"{self.j_per_token:.3f} J per output token")
        if self.j_per_request is not None:
            parts.append(f"{self.j_per_request:.1f} J per request")
        if self.idle_w is not None:
            parts.append(f"idle {self.idle_w:.0f} W (above idle: {self.above_idle_j_per_token or 0:.3f} J/token)")
        return f"{self.window}: " + ", ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        return {
            "window": self.window,
            "run": self.run,
            "arm": self.arm,
            "t0": self.t0,
            "t1": self.t1,
            "seconds": self.seconds,
            "joules": self.joules,
            "per_gpu": {str(k): v for k, v in self.per_gpu.items()},
            "mean_w": self.mean_w,
            "samples": self.samples,
            "output_tokens": self.output_tokens,
            "requests": self.requests,
            "j_per_token": self.j_per_token,
            "j_per_request": self.j_per_request,
            "idle_w": self.idle_w,
            "idle_joules": self.idle_joules,
            "above_idle_j_per_token": self.above_idle_j_per_token,
            "why_not": self.why_not or None,
            "methods": {str(k): v for k, v in self.methods.items()},
            "notes": list(self.notes),
            "interval_s": self.interval_s,
            "window_source": self.window_source or None,
            "method": self.method,
            "how": self.how,
            "text": self.describe(),
        }


def window_energy(
    samples: pl.DataFrame,
    window: str,
    t0: float,
    t1: float,
    *,
    output_tokens: float | None = None,
    requests: float | None = None,
    idle_w: float | None = None,
    run: str | None = None,
    arm: str | None = None,
    window_source: str = "",
    source: str | None = None,
    max_power_w: float | None = None,
    limit_from: str = "",
) -> WindowEnergy:
    """The energy of ``[t0, t1]`` summed over the GPUs of ``samples`` (module docstring): the GPU's
    energy counter where the samples carry one and the power samples do not contradict it
    (:func:`counter_disagrees`), else the trapezoid integral of its power. A GPU whose mean power over
    the window is above ``max_power_w`` (its board limit, :data:`POWER_MARGIN` allowed; without one,
    :data:`MAX_ANY_GPU_W`) is bad input: InputError naming ``source``, the GPU and the window."""
    per, methods, notes, n, why = {}, {}, [], 0, ""
    gaps: list[float] = []
    gpus = _per_gpu(samples)
    counters = _counters(samples)
    if not gpus and not counters:
        why = "no power.draw samples"
    for g in sorted(set(gpus) | set(counters)):
        if g in counters:
            j, k, w = gpu_counter_joules(*counters[g], t0, t1)
            est = power_estimate(*gpus[g], t0, t1) if j is not None and g in gpus else None
            w = counter_disagrees(j, est) if est is not None else w
            if j is not None and (est is None or w is None):
                per[g], methods[g], n = j, "counter", n + k
                gaps += _gaps(counters[g][0], t0, t1)
                continue
            notes.append(f"GPU {g}: {w}")
        if g not in gpus:
            why = f"GPU {g}: {notes[-1] if notes else 'no power samples'}"
            break
        j, k, w = gpu_joules(*gpus[g], t0, t1)
        if j is None:
            why = f"GPU {g}: {w}"
            break
        per[g], methods[g], n = j, "power", n + k
        gaps += _gaps(gpus[g][0], t0, t1)
    total = sum(per.values()) if per and not why else None
    if total is not None and t1 > t0:
        _check_power(per, methods, t0, t1, source, max_power_w, limit_from)
    return WindowEnergy(
        window,
        t0,
        t1,
        total,
        per if total is not None else {},
        output_tokens,
        requests,
        idle_w,
        run,
        arm,
        n,
        why,
        methods if total is not None else {},
        tuple(notes),
        statistics.median(gaps) if gaps and total is not None else None,
        window_source,
    )


def _gaps(ts: list[float], t0: float, t1: float) -> list[float]:
    """The gaps between one GPU's samples from the last before ``t0`` to the first after ``t1``."""
    lo = max([i for i, t in enumerate(ts) if t <= t0], default=0)
    hi = min([i for i, t in enumerate(ts) if t >= t1], default=len(ts) - 1)
    return [b - a for a, b in zip(ts[lo:hi], ts[lo + 1 : hi + 1])]


def _check_power(per, methods, t0, t1, source, max_power_w, limit_from) -> None:
    from benchbook.errors import InputError

    limit = max_power_w or MAX_ANY_GPU_W
    name = limit_from or ("any accelerator" if not max_power_w else "the GPU")
    for g, j in sorted(per.items()):
        mean = j / (t1 - t0)
        if mean > limit * (1 + POWER_MARGIN):
            how = "its energy counter" if methods.get(g) == "counter" else "its power samples"
            raise InputError(
                source or "<GPU samples>",
                f"GPU {g} [{t0:.3f}, {t1:.3f}]",
                f"mean power {mean:.6g} W from {how} is above the {limit:g} W that {name} can draw "
                f"({POWER_MARGIN:.0%} allowed): not a reading of one GPU",
            )


def compare_arms(
    per_arm: Mapping[str, Sequence[float]], baseline: str, *, spread: float | None, rule: str = "seed"
) -> list[dict[str, Any]]:
    """Joules per output token of each arm against ``baseline`` (lower is better), judged with the
    project's noise rules; one row per other arm with figures."""
    from benchbook.analysis.verdict import STATE_TEXT, judge

    out = []
    base = list(per_arm.get(baseline, []))
    for arm, vals in per_arm.items():
        if arm == baseline or not vals or not base:
            continue
        j = judge(base, list(vals), spread=spread, higher_is_better=False, rule=rule)  # type: ignore[arg-type]
        out.append(
            {
                "metric": "j_per_token",
                "baseline": baseline,
                "candidate": arm,
                "baseline_values": base,
                "candidate_values": list(vals),
                "ratio": j.ratio,
                "direction": j.direction,
                "state": j.state,
                "verdict": STATE_TEXT[j.state],
                "is_result": j.is_result,
                "why": j.why,
            }
        )
    return out
