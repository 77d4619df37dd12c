"""The concurrency ladder: walls, aggregate rates, serialization and queueing checks, batching amortization.

Input is the loader's whole-request frame (one row per request; columns ``run, arm, scenario, n,
index, prompt_class, start, end, prompt_tokens, completion_tokens, finish_reason, stream``) for
:func:`ladder_table`, and plain numbers / sequences for everything else, so each check can be fed
from a table or from a seed's printed figures. Formulas are in ``docs/statistics.md``.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from benchbook.analysis.stats import fmt_pct, fmt_ratio, rel_diff
from benchbook.errors import InputError

if TYPE_CHECKING:
    import polars as pl

LADDER_COLUMNS = ("run", "scenario", "n", "start", "end", "completion_tokens")


def group_wall(starts: Sequence[float], ends: Sequence[float]) -> float:
    """A group's wall time: ``max(end) − min(start)``."""
    if not starts or len(starts) != len(ends):
        raise InputError(None, "group", f"{len(starts)} starts for {len(ends)} ends")
    wall = max(ends) - min(starts)
    if not wall > 0:
        raise InputError(None, "group", f"wall time {wall} is not positive (end before start?)")
    return wall


def aggregate_rate(completion_tokens: Sequence[float], starts: Sequence[float], ends: Sequence[float]) -> float:
    """``Σ completion_tokens / wall`` (= n × tokens / wall when every request got its budget)."""
    return sum(completion_tokens) / group_wall(starts, ends)


def ladder_table(requests: pl.DataFrame) -> pl.DataFrame:
    """Per (run, scenario, n) group: wall, aggregate rate and the queue shape.

    ``requests`` is the loader's whole-request frame (needs ``run, scenario, n, start, end,
    completion_tokens``; ``arm`` is carried if present). Warm-up rows (``scenario == "warmup"``) are
    dropped; excluding requests that did not reach their budget is the caller's job (and the page
    lists them). With a ``round`` column (``requests.ndjson``) a group is (round, scenario, n) and
    ``round`` is carried. Output columns: ``[arm,] run, [round,] scenario, n, requests, tokens,
    wall_s, rate_tok_s, mean_latency_s, worst_latency_s, best_latency_s``, sorted by run, scenario,
    n[, round].
    """
    import polars as pl

    missing = [c for c in LADDER_COLUMNS if c not in requests.columns]
    if missing:
        raise InputError(None, "requests", f"frame lacks column(s) {', '.join(missing)}")
    # a group is (round, scenario, n) within a run: requests.ndjson repeats the protocol
    keys = (
        (["arm"] if "arm" in requests.columns else [])
        + ["run"]
        + (["round"] if "round" in requests.columns else [])
        + ["scenario", "n"]
    )
    lat = pl.col("end") - pl.col("start")
    out = (
        requests.filter(pl.col("scenario") != "warmup")
        .group_by(keys)
        .agg(
            pl.len().alias("requests"),
            pl.col("completion_tokens").sum().alias("tokens"),
            (pl.col("end").max() - pl.col("start").min()).alias("wall_s"),
            lat.mean().alias("mean_latency_s"),
            lat.max().alias("worst_latency_s"),
            lat.min().alias("best_latency_s"),
        )
        .with_columns((pl.col("tokens") / pl.col("wall_s")).alias("rate_tok_s"))
        .sort(["run", "scenario", "n"] + (["round"] if "round" in keys else []))
    )
    bad = out.filter(pl.col("wall_s") <= 0)
    if bad.height:
        r = bad.row(0, named=True)
        rnd = f" round {r['round']}" if "round" in r else ""
        raise InputError(None, f"run {r['run']}{rnd} {r['scenario']} n={r['n']}", "group wall time is not positive")
    cols = keys + [
        "requests",
        "tokens",
        "wall_s",
        "rate_tok_s",
        "mean_latency_s",
        "worst_latency_s",
        "best_latency_s",
    ]
    return out.select(cols)


@dataclass(frozen=True)
class Flatness:
    """Whether the aggregate rate stays within the spread of the n=1 rate at every n."""

    single_rate: float
    rates: dict[int, float]
    differences: dict[int, float]  # symmetric relative difference to the n=1 rate
    spread: float
    flat: bool
    reason: str


def flatness(rates: Mapping[int, float], spread: float) -> Flatness:
    """Serialization check: every rate at n > 1 within ``spread`` of the n=1 rate ⇒ flat.

    ``rates`` maps concurrency n → aggregate rate and must contain n=1 (the single request).
    Seed serial row 2.684 / 2.686 / 2.686 / 2.686 is flat; the batched row 3.564 → 5.964 is not.
    """
    if 1 not in rates:
        raise InputError(None, "ladder", "flatness needs the n=1 (single request) rate")
    others = {n: r for n, r in sorted(rates.items()) if n != 1}
    if not others:
        raise InputError(None, "ladder", "flatness needs at least one rate at n > 1")
    r1 = rates[1]
    diffs = {n: rel_diff(r1, r) for n, r in others.items()}
    outside = [n for n, d in diffs.items() if d > spread]
    if outside:
        worst = max(outside, key=lambda n: diffs[n])
        reason = (
            f"not flat: the rate at n={worst} ({others[worst]:.3f}) differs from the single-request "
            f"rate ({r1:.3f}) by {fmt_pct(diffs[worst])}, beyond the {fmt_pct(spread)} spread"
        )
    else:
        reason = (
            f"flat: every rate at n={'/'.join(map(str, others))} is within the {fmt_pct(spread)} "
            f"spread of the single-request rate {r1:.3f} — requests are served one at a time "
            "(serialization)"
        )
    return Flatness(r1, dict(sorted(rates.items())), diffs, spread, not outside, reason)


@dataclass(frozen=True)
class Queueing:
    """Completion offsets compared with k × the single-request time."""

    single_s: float
    offsets: tuple[float, ...]  # sorted completion offsets from the group's first start
    expected: tuple[float, ...]  # k × single_s, k = 1..n
    errors: tuple[float, ...]  # |offset − expected| / expected
    tolerance: float
    pure: bool
    reason: str


def queueing(single_s: float, completion_offsets: Sequence[float], tolerance: float = 0.05) -> Queueing:
    """Pure-queueing check: the k-th completion (sorted) lands at k × the single-request time.

    ``completion_offsets`` are ``end − min(start)`` of the group's requests (any order). Each must
    be within ``tolerance`` (relative) of k × ``single_s``. Seed: serial n=8 finishes at 11.9 s,
    23.8 s, 35.7 s, …, 95.3 s against a single request of 11.922 s — pure serialization.
    """
    if not single_s > 0:
        raise InputError(None, "queueing", f"single-request time must be positive, got {single_s}")
    if not completion_offsets:
        raise InputError(None, "queueing", "no completions")
    offs = tuple(sorted(float(o) for o in completion_offsets))
    exp = tuple(k * single_s for k in range(1, len(offs) + 1))
    errs = tuple(abs(o - e) / e for o, e in zip(offs, exp))
    worst = max(range(len(errs)), key=lambda i: errs[i])
    pure = errs[worst] <= tolerance
    what = (
        f"completion {worst + 1} at {offs[worst]:.3f} s against {worst + 1} × {single_s:.3f} = "
        f"{exp[worst]:.3f} s ({fmt_pct(errs[worst])} off; tolerance {fmt_pct(tolerance)})"
    )
    reason = ("pure queueing: the worst case is " if pure else "not pure queueing: ") + what
    return Queueing(single_s, offs, exp, errs, tolerance, pure, reason)


@dataclass(frozen=True)
class QueueShape:
    """Latency distribution of one group: mean, worst and best request latency."""

    n: int
    mean: float
    worst: float
    best: float


def queue_shape(latencies: Sequence[float]) -> QueueShape:
    """Mean, worst and best of a group's request latencies (``end − start`` per request)."""
    if not latencies:
        raise InputError(None, "queue", "no latencies")
    vals = [float(x) for x in latencies]
    return QueueShape(len(vals), statistics.fmean(vals), max(vals), min(vals))


def compare_queue_shape(baseline: QueueShape, candidate: QueueShape) -> str:
    """One sentence on how the queue changes shape (seed n=8: mean 39.113 → 42.830 s, worst 69.490 → 42.925 s)."""
    ceiling = (
        "lower ceiling"
        if candidate.worst < baseline.worst
        else "higher ceiling"
        if candidate.worst > baseline.worst
        else "same ceiling"
    )
    avg = (
        "higher average"
        if candidate.mean > baseline.mean
        else "lower average"
        if candidate.mean < baseline.mean
        else "same average"
    )
    floor = (
        "higher floor"
        if candidate.best > baseline.best
        else "lower floor"
        if candidate.best < baseline.best
        else "same floor"
    )
    return (
        f"worst latency {baseline.worst:.3f} → {candidate.worst:.3f} s, mean {baseline.mean:.3f} → "
        f"{candidate.mean:.3f} s, best {baseline.best:.3f} → {candidate.best:.3f} s: "
        f"a {ceiling}, a {avg}, a {floor}"
    )


@dataclass(frozen=True)
class Amortization:
    """What one batched step costs in single-row steps, and whether that matches the speedup."""

    n: int
    decode_steps: int
    step_cost_n: float  # batched wall at width n / decode steps
    step_cost_1: float  # single-request wall / decode steps
    single_row_steps: float  # step_cost_n / step_cost_1
    effective_width: float  # n / single_row_steps
    speedup: float | None  # serial wall at n / batched wall at n
    tolerance: float
    agree: bool | None
    explanation: str


def amortization(
    single_wall: float,
    batched_wall: float,
    n: int,
    serial_wall: float | None = None,
    *,
    decode_steps: int = 32,
    tolerance: float = 0.02,
) -> Amortization:
    """Batching amortization at width ``n``.

    ``single_wall``: one request alone (serial arm, n=1); ``batched_wall``: the batched arm's wall
    at concurrency n; ``serial_wall``: the serial arm's wall at n (for the speedup). Per-step costs
    divide by ``decode_steps`` (the generation length); walls include prefill, so these are costs per
    generated token of the whole request, as in the seed. Seed (n=8): 42.927/32 = 1.342 s,
    8.656/32 = 0.271 s, 4.96 single-row steps, effective width 8/4.96 = 1.61; speedup
    69.495/42.927 = 1.62. The two agree exactly iff serial_wall = n × single_wall (pure queueing);
    beyond ``tolerance`` the result is flagged with that explanation.
    """
    if n < 1 or decode_steps < 1:
        raise InputError(None, "amortization", f"n and decode_steps must be ≥ 1, got {n}, {decode_steps}")
    for name, v in (("single_wall", single_wall), ("batched_wall", batched_wall), ("serial_wall", serial_wall)):
        if v is not None and not v > 0:
            raise InputError(None, "amortization", f"{name} must be positive, got {v}")
    c_n = batched_wall / decode_steps
    c_1 = single_wall / decode_steps
    rows = c_n / c_1
    eff = n / rows
    head = (
        f"at n={n} one batched step costs {c_n:.3f} s against {c_1:.3f} s for one row alone: "
        f"{n} rows cost {rows:.2f} single-row steps, an effective width of {eff:.2f}"
    )
    if serial_wall is None:
        return Amortization(n, decode_steps, c_n, c_1, rows, eff, None, tolerance, None, head + ".")
    speedup = serial_wall / batched_wall
    gap = rel_diff(eff, speedup)
    queued = n * single_wall
    agree = gap <= tolerance
    if agree:
        tail = (
            f"; the speedup {fmt_ratio(speedup)} agrees with it (within {fmt_pct(tolerance)}), as it "
            "must when the serial arm is pure queueing"
        )
    else:
        tail = (
            f"; DISAGREES with the speedup {fmt_ratio(speedup)} by {fmt_pct(gap)}: the serial wall at "
            f"n={n} is {serial_wall:.3f} s, not {n} × {single_wall:.3f} = {queued:.3f} s, so the serial "
            f"arm is {fmt_pct(rel_diff(serial_wall, queued))} "
            f"{'slower' if serial_wall > queued else 'faster'} than pure queueing of its single request "
            "and the speedup counts that while the effective width does not"
        )
    return Amortization(n, decode_steps, c_n, c_1, rows, eff, speedup, tolerance, agree, head + tail + ".")
