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
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchbook.analysis.stats import fmt_pct, fmt_ratio, rel_diff
from benchbook.analysis.tables import tables_for
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
    """Serialization check (the seeds' "aggregate rate flat across the 2/4/8 ladder"): with two or
    more steps at n > 1, flat when every pair of them is within ``spread`` of each other (the
    single-request rate is shown beside them, not judged: a lone request pays its client and HTTP
    overhead without a queued request to overlap it, so a serial engine's n=1 rate can sit below
    its queued rates); with one step at n > 1, that step against the n=1 rate.

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
    steps = "/".join(map(str, others))
    if len(others) >= 2:
        lo_n = min(others, key=lambda n: others[n])
        hi_n = max(others, key=lambda n: others[n])
        width = rel_diff(others[lo_n], others[hi_n])
        flat = width <= spread
        single = f"; the single request's rate {r1:.3f} is {fmt_pct(max(diffs.values()))} from them at most"
        if flat:
            reason = (
                f"flat: the rates at n={steps} are within {fmt_pct(width)} of each other, inside the "
                f"{fmt_pct(spread)} spread — requests are served one at a time (serialization){single}"
            )
        else:
            seq = [others[n] for n in others]
            path = " → ".join(f"{others[n]:.3f} (n={n})" for n in others)
            if all(a <= b for a, b in zip(seq, seq[1:])):
                how = f"the rate grows from {others[lo_n]:.3f} (n={lo_n}) to {others[hi_n]:.3f} (n={hi_n})"
            elif all(a >= b for a, b in zip(seq, seq[1:])):
                how = f"the rate falls from {others[hi_n]:.3f} (n={hi_n}) to {others[lo_n]:.3f} (n={lo_n})"
            else:
                how = f"the rate goes up and down, {path}"
            reason = f"not flat: {how}, {fmt_pct(width)} apart, beyond the {fmt_pct(spread)} spread{single}"
        return Flatness(r1, dict(sorted(rates.items())), diffs, spread, flat, reason)
    outside = [n for n, d in diffs.items() if d > spread]
    if outside:
        worst = max(outside, key=lambda n: diffs[n])
        reason = (
            f"not flat: the rate at n={worst} ({others[worst]:.3f}) differs from the single-request "
            f"rate ({r1:.3f}) by {fmt_pct(diffs[worst])}, beyond the {fmt_pct(spread)} spread"
        )
    else:
        reason = (
            f"flat: the rate at n={steps} is within the {fmt_pct(spread)} spread of the single-request rate "
            f"{r1:.3f} — requests are served one at a time (serialization)"
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


# ---- the ladder from results runs (benchmark-tool result files, one per load point) -------------


def results_ladder(camp) -> pl.DataFrame:
    """One row per results run that is a load point of a server process (``process`` in the
    manifest: ``benchbook init``'s arm/run layout): ``arm, process, run, point, concurrency,
    request_rate, requests, tokens, wall_s, rate_tok_s, tokens_per_request, single_s`` (median
    request latency, the single-request time at concurrency 1), ``mean_latency_s,
    worst_latency_s, best_latency_s, median_ttft_ms, median_tpot_ms``.

    The aggregate rate is the run's output tokens over its wall time (the tool's ``duration``);
    latencies are per request (``e2e``). Sorted by arm, process, request rate, concurrency."""
    import polars as pl

    return tables_for(camp).derived("results_ladder", lambda: _results_ladder(camp, pl))


def _results_ladder(camp, pl) -> pl.DataFrame:
    from benchbook.analysis.copies import copied_benchmarks
    from benchbook.analysis.results import benchmark_runs

    procs = {r["id"]: (r.get("process"), r.get("point")) for r in camp.manifest.get("runs", []) if r.get("process")}
    copies = copied_benchmarks(camp)  # a copy of another point is counted once, never as a repeat
    rows = []
    for rr in camp.results_runs:
        if rr.id not in procs:
            continue
        process, point = procs[rr.id]
        for f, b in benchmark_runs(camp, rr):
            if (rr.id, str(f), b.location) in copies:
                continue
            s, c, q = b.summary, b.config, b.requests
            ok = q.filter(pl.col("success")) if q is not None and q.height else None
            tokens = float(ok["completion_tokens"].sum()) if ok is not None else s.get("total_output_tokens")
            wall = s.get("duration_s")
            if not tokens or not wall or wall <= 0:
                raise InputError(f, b.location, "no output tokens or no positive duration: no aggregate rate")
            e2e = ok["e2e_s"].drop_nulls() if ok is not None and "e2e_s" in ok.columns else None
            has_e2e = e2e is not None and e2e.len() > 0
            rows.append(
                {
                    "arm": rr.arm,
                    "process": process,
                    "run": rr.id,
                    "point": point or Path(f).stem,
                    "concurrency": c.get("max_concurrency"),
                    "request_rate": float(c.get("request_rate") or float("inf")),
                    "requests": int(ok.height if ok is not None else s.get("completed") or 0),
                    "tokens": float(tokens),
                    "wall_s": float(wall),
                    "rate_tok_s": float(tokens) / float(wall),
                    "tokens_per_request": float(tokens) / max(1, ok.height if ok is not None else 1),
                    "single_s": float(e2e.median()) if has_e2e else None,
                    "mean_latency_s": float(e2e.mean()) if has_e2e else None,
                    "worst_latency_s": float(e2e.max()) if has_e2e else None,
                    "best_latency_s": float(e2e.min()) if has_e2e else None,
                    "median_ttft_ms": s.get("median_ttft_ms"),
                    "median_tpot_ms": s.get("median_tpot_ms"),
                    "offsets": (
                        ((ok["start_s"] + ok["e2e_s"]) - ok["start_s"].min()).to_list()
                        if has_e2e and "start_s" in ok.columns
                        else None
                    ),
                }
            )
    schema = {
        "arm": pl.String,
        "process": pl.String,
        "run": pl.String,
        "point": pl.String,
        "concurrency": pl.Int64,
        "request_rate": pl.Float64,
        "requests": pl.Int64,
        "tokens": pl.Float64,
        "wall_s": pl.Float64,
        "rate_tok_s": pl.Float64,
        "tokens_per_request": pl.Float64,
        "single_s": pl.Float64,
        "mean_latency_s": pl.Float64,
        "worst_latency_s": pl.Float64,
        "best_latency_s": pl.Float64,
        "median_ttft_ms": pl.Float64,
        "median_tpot_ms": pl.Float64,
        "offsets": pl.List(pl.Float64),
    }
    return pl.DataFrame(rows, schema=schema).sort(["arm", "process", "request_rate", "concurrency"], nulls_last=True)


DEFAULT_FLAT_TOLERANCE = 0.05  # without a measured spread: the pure-queueing check's own tolerance
# a median TPOT below this is no decode step (the fastest GPU engines step in ~2-5 ms; 0.1 ms leaves a
# wide margin): the tokens arrived in bursts, several per streamed chunk (the vLLM CPU engine's
# 0.0027 ms), and the figure measures the client's gaps between chunks
BURST_TPOT_MS = 0.1


def results_ladder_analysis(
    camp,
    *,
    rule: str = "seed",
    spread_override: float | None = None,
    decided: Mapping[tuple, Any] | None = None,
    pairs: Sequence[tuple[str, str]] | None = None,
) -> dict[str, Any]:
    """The seeds' ladder questions for results runs, per arm and server process:

    * ``serialization``: :func:`flatness` of the aggregate rate over the closed-loop concurrencies
      (n=1 needed), against the measured run-to-run spread, else a 5 % tolerance (said so);
      ``serialization_not_judged``: the processes it cannot be judged for (one load point, no single
      request, rate points only), with the reason;
    * ``bursts``: points whose median TPOT is below :data:`BURST_TPOT_MS` (tokens streamed in bursts);
    * ``queueing``: :func:`queueing` of each concurrency > 1 against the process's single-request
      time (median latency at concurrency 1): completions at k × that time ⇒ pure queueing;
    * ``spread``: run-to-run spread of the rate between processes of one arm at one point (the
      largest such); None when no arm ran twice;
    * ``comparisons``: the rate at each common concurrency, candidate vs baseline arm (a serial arm
      against the role-baseline / first batched arm; ablation arms against the baseline arm), one
      value per process, judged with :func:`benchbook.analysis.verdict.compare` against the spread
      (or ``spread_override``); without either, "no verdict" and why. ``decided``: the campaign's one
      decision per comparison (:meth:`benchbook.analysis.resultset.ResultSet.verdict_lookup`, by
      (baseline arm, candidate arm, metric, concurrency)): where it holds the pair, its verdict is
      the row's — the compare page and the summary carry the same; ``pairs``: the campaign's
      (baseline, candidate) arms (default: each serial arm against the baseline, the baseline
      against each ablation arm);
    * ``amortization``: :func:`amortization` at each concurrency of a batched arm with a serial arm
      (mean request latency at n against the serial arm's single request; the speedup from rates).
    """
    from benchbook.analysis import stats
    from benchbook.analysis.verdict import ZERO_SPREAD, compare

    lad = results_ladder(camp)
    out: dict[str, Any] = {
        "points": [],
        "serialization": [],
        "serialization_not_judged": [],  # processes whose points cannot show flatness, and why
        "bursts": [],  # points whose median TPOT no engine reaches: the tokens came in bursts
        "queueing": [],
        "comparisons": [],
        "amortization": [],
        "spread": None,
    }
    if lad.height == 0:
        return out
    out["points"] = lad.drop("offsets").to_dicts()
    for p in out["points"]:
        tpot = p.get("median_tpot_ms")
        if tpot is not None and 0 < tpot < BURST_TPOT_MS:
            out["bursts"].append(
                {
                    "arm": p["arm"],
                    "process": p["process"],
                    "point": p["point"],
                    "median_tpot_ms": tpot,
                    "reason": f"median TPOT {tpot:.2g} ms, below the {BURST_TPOT_MS:g} ms no engine's decode step "
                    "reaches: the server streamed its tokens in bursts (several per chunk), so the gaps between "
                    "chunks, not decode steps, make this figure",
                }
            )
    closed = lad.filter(pl_col_inf(lad))
    for (arm, process), g in lad.group_by(["arm", "process"], maintain_order=True):
        ns = sorted({int(n) for n in g.filter(pl_col_inf(g))["concurrency"] if n is not None})
        if 1 in ns and len(ns) > 1:
            continue  # judged below
        if not ns:
            why = "no closed-loop point (every point is a request-rate point): flatness is judged over concurrencies"
        elif len(ns) == 1:
            why = (
                f"one load point (concurrency {ns[0]}) in this process: flatness needs the single request "
                "(concurrency 1) and at least one queued step (2, 4, 8)"
            )
        else:
            why = (
                f"no single request (concurrency 1) among its points ({', '.join(map(str, ns))}): the queued "
                "steps are held against it"
            )
        out["serialization_not_judged"].append({"arm": arm, "process": process, "concurrencies": ns, "reason": why})
    # run-to-run spread: processes of one arm at one point
    spreads = []
    for (arm, point), g in closed.group_by(["arm", "point"], maintain_order=True):
        if g["process"].n_unique() >= 2:
            vals = g["rate_tok_s"].to_list()
            spreads.append({"arm": arm, "point": point, "values": vals, "spread": stats.run_spread(vals)})
    measured = max((s["spread"] for s in spreads), default=None)
    out["spread"] = None if measured is None else {"spread": measured, "from": spreads}
    spread = spread_override if spread_override is not None else measured
    for (arm, process), g in closed.group_by(["arm", "process"], maintain_order=True):
        rates = {int(n): float(r) for n, r in zip(g["concurrency"], g["rate_tok_s"]) if n is not None}
        if 1 in rates and len(rates) > 1:
            # a spread of 0 is no yardstick (identical processes): the check's own tolerance instead
            tol = spread if spread else DEFAULT_FLAT_TOLERANCE
            fl = flatness(rates, tol)
            serial = camp.arms.get(arm, {}).get("mode") == "serial"
            out["serialization"].append(
                {
                    "arm": arm,
                    "process": process,
                    # a serial arm should be flat, a batched one should rise: the other outcome warns
                    "status": "pass" if fl.flat == serial else "warn",
                    "rates": {str(k): v for k, v in fl.rates.items()},
                    "tolerance": tol,
                    "tolerance_from": "override"
                    if spread_override
                    else "measured spread"
                    if measured
                    else "assumed 5 % (the measured spread is 0: no yardstick)"
                    if spread == 0
                    else "assumed 5 % (no arm ran twice)",
                    "flat": fl.flat,
                    "reason": fl.reason,
                }
            )
        one = g.filter(g["concurrency"] == 1)
        single = one["single_s"][0] if one.height and one["single_s"][0] is not None else None
        for row in g.iter_rows(named=True):
            n = row["concurrency"]
            if single is None or n is None or n <= 1 or not row["offsets"]:
                continue
            qu = queueing(single, row["offsets"])
            out["queueing"].append(
                {
                    "arm": arm,
                    "process": process,
                    "concurrency": n,
                    "single_s": single,
                    "pure": qu.pure,
                    "reason": qu.reason,
                }
            )
    arms = camp.arms
    serial = [a for a in arms if arms[a].get("mode") == "serial" and a in set(closed["arm"])]
    base = next((a for a, v in arms.items() if v.get("role") == "baseline"), None) or next(
        (a for a in arms if arms[a].get("mode") == "batch" and a in set(closed["arm"])), None
    )
    present = set(closed["arm"])
    if pairs is None:  # a serial arm against the baseline; ablation arms against the baseline
        pairs = [(s, base) for s in serial if base]
        pairs += [(base, a) for a, v in arms.items() if v.get("role") == "ablation" and base and a in present]
    for b_arm, c_arm in [(b, c) for b, c in pairs if b in present and c in present]:
        ns = sorted(
            set(closed.filter(closed["arm"] == b_arm)["concurrency"])
            & set(closed.filter(closed["arm"] == c_arm)["concurrency"])
        )
        for n in ns:
            bv = closed.filter((closed["arm"] == b_arm) & (closed["concurrency"] == n))["rate_tok_s"].to_list()
            cv = closed.filter((closed["arm"] == c_arm) & (closed["concurrency"] == n))["rate_tok_s"].to_list()
            b, c = stats.cell(bv), stats.cell(cv)
            row = {
                "baseline": b_arm,
                "candidate": c_arm,
                "metric": "output_tok_s",
                "concurrency": n,
                "baseline_median": b.median,
                "baseline_n": b.n,
                "candidate_median": c.median,
                "candidate_n": c.n,
                "ratio": c.median / b.median,
                "speedup": c.median / b.median,  # a rate: > 1 is better
                "direction": direction_of(b.median, c.median, True),
            }
            v = (decided or {}).get((b_arm, c_arm, "output_throughput", int(n)))
            if v is not None:
                row.update(decided_row(v))
            elif not spread:  # none measured, or 0 (identical processes): no yardstick, no verdict
                row.update(
                    verdict="no verdict",
                    is_result=False,
                    reason="no arm was run twice (one server process each), so there is no measured spread; "
                    "no difference can be called a result"
                    if spread is None
                    else ZERO_SPREAD,
                )
            else:
                cmp = compare(b, c, spread=spread, higher_is_better=True, rule=rule)
                row.update(
                    verdict=cmp.verdict, is_result=bool(cmp.is_result), reason=cmp.reason, threshold=cmp.threshold
                )
            out["comparisons"].append(row)
    for s_arm in serial:
        srow = closed.filter((closed["arm"] == s_arm) & (closed["concurrency"] == 1))
        if not srow.height or srow["single_s"][0] is None:
            continue
        single = float(srow["single_s"].median())
        for b_arm in [a for a in arms if arms[a].get("mode") == "batch" and a == base]:
            for row in closed.filter(closed["arm"] == b_arm).iter_rows(named=True):
                n = row["concurrency"]
                if n is None or n < 2 or row["mean_latency_s"] is None:
                    continue
                sr = closed.filter((closed["arm"] == s_arm) & (closed["concurrency"] == n))
                am = amortization(
                    single, row["mean_latency_s"], n, None, decode_steps=max(1, round(row["tokens_per_request"]))
                )
                out["amortization"].append(
                    {
                        "serial_arm": s_arm,
                        "batched_arm": b_arm,
                        "concurrency": n,
                        "single_row_steps": am.single_row_steps,
                        "effective_width": am.effective_width,
                        "speedup": float(row["rate_tok_s"] / sr["rate_tok_s"].median()) if sr.height else None,
                        "explanation": am.explanation,
                    }
                )
    return out


def ladder_checks(rl: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The results ladder's serialization rows as the campaign's checks (one per server process): the
    status each row carries, the same in its section, the checks table, the findings and the summary."""
    from benchbook.findings import Check

    return [
        Check(
            f"serialization: {s['process']}",
            s["status"],
            s["reason"]
            + (
                " — a serial arm should serve one request at a time"
                if s["status"] == "warn" and s["flat"] is False
                else ""
            )
            + (" — a batched arm that serializes: see the clamp check" if s["status"] == "warn" and s["flat"] else ""),
            {"kind": "serialization", "arm": s["arm"], "process": s["process"], "flat": s["flat"]},
        ).as_dict()
        for s in (rl or {}).get("serialization", [])
    ]


def decided_row(v: Any) -> dict[str, Any]:
    """A comparison row's figures and verdict from the campaign's decision (a result set's
    ``VerdictRow``): the medians and n it judged, its typed verdict, the words of its state."""
    from benchbook.analysis.verdict import STATE_WORDS, State, typed_fields

    j, typed = v.judgement, v.judgement.verdict
    state = typed.state if typed is not None else State.CANNOT_TELL
    return {
        "baseline_median": v.baseline_cell.median,
        "baseline_n": v.baseline_cell.n,
        "candidate_median": v.candidate_cell.median,
        "candidate_n": v.candidate_cell.n,
        "ratio": j.ratio,
        "speedup": j.ratio if v.higher_is_better else 1 / j.ratio,
        "direction": j.direction,
        "verdict": STATE_WORDS[state],
        "is_result": j.is_result,
        "reason": j.why,
        "threshold": j.spread,
        "below_gates": list(v.below_gates),
        **typed_fields(typed),
    }


def pl_col_inf(frame):
    """Closed-loop points: no request rate (``inf``) and a concurrency."""
    import polars as pl

    return pl.col("request_rate").is_infinite() & pl.col("concurrency").is_not_null()


def direction_of(baseline: float, candidate: float, higher_is_better: bool) -> str:
    """improvement / regression / no change, as :func:`benchbook.analysis.verdict.compare` names it."""
    if candidate == baseline:
        return "no change"
    return "improvement" if (candidate > baseline) == higher_is_better else "regression"
