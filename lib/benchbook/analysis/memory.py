"""Memory figures: GPU peak and steady per rank, host footprint from Shmem/MemAvailable, summed Pss.

Two layers:

* :func:`summarize_memory` works on plain sequences for one run (times, per-sample per-rank GPU MiB,
  host KiB series, marker list) and returns a :class:`MemorySummary`.
* :func:`memory_summaries` takes the loader's three frames (``Campaign.memory``: gpu ``run, arm, t,
  rank, gpu_used_mib``; host ``run, arm, t, shmem_kib, mem_available_kib, pss_kib_sum``; markers
  ``run, arm, t, event, label``) and returns one summary per run; :func:`memory_table` lays them out.

Definitions (``docs/statistics.md``): *loaded* samples are those with ``load_end ≤ t ≤ stop``;
*idle* samples those with ``t < load_start``. Peak = max over all samples per rank; steady = median
over the second half (``loaded[m // 2:]``) of the m loaded samples per rank; host footprint = median
Shmem over loaded samples, and the MemAvailable fall = median idle − median loaded. Summed Pss is
reported and marked "not a footprint": page cache of a shared read-only checkpoint is charged to
every process that maps it.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from benchbook.analysis import stats
from benchbook.analysis.verdict import NOT_A_RESULT, Evidence, Verdict, decide, point, typed_fields
from benchbook.errors import InputError

if TYPE_CHECKING:
    import polars as pl

    from benchbook.ingest.campaign import Campaign

MIB_PER_GIB = 1024.0
KIB_PER_GIB = 1024.0 * 1024.0
PSS_NOTE = (
    "summed Pss — not a footprint: the page cache of a shared read-only checkpoint is charged to "
    "every process that maps it"
)


def fmt_gib(gib: float, digits: int = 1, signed: bool = False) -> str:
    """``7.38 → '7.4 GiB'``; with ``signed`` a leading + or −."""
    body = f"{abs(gib):.{digits}f} GiB"
    if signed:
        return ("+" if gib >= 0 else "−") + body
    return body if gib >= 0 else "−" + body


@dataclass(frozen=True)
class MemorySummary:
    """One memory run. GPU figures in GiB per rank; host figures in GiB (None when not sampled)."""

    peak_gib: tuple[float, ...]
    steady_gib: tuple[float, ...]
    loaded_samples: int
    shmem_loaded_gib: float | None
    mem_available_idle_gib: float | None
    mem_available_loaded_gib: float | None
    mem_available_fall_gib: float | None
    pss_sum_gib: float | None
    notes: tuple[str, ...] = ()

    @property
    def peak_max_gib(self) -> float:
        """The highest per-rank peak (the figure to plan a card's budget against)."""
        return max(self.peak_gib)

    @property
    def steady_max_gib(self) -> float:
        return max(self.steady_gib)

    def figures(self) -> dict[str, Any]:
        """The run's figures by name (GPU ones the max over ranks): the memory table's row and the summary's."""
        return {
            "peak_gib": self.peak_max_gib,
            "steady_gib": self.steady_max_gib,
            "loaded_samples": self.loaded_samples,
            "shmem_gib": self.shmem_loaded_gib,
            "mem_available_fall_gib": self.mem_available_fall_gib,
            "host_other_gib": self.host_other_gib,
            "pss_sum_gib": self.pss_sum_gib,
        }

    @property
    def host_other_gib(self) -> float | None:
        """MemAvailable fall not explained by Shmem: anonymous and pinned memory."""
        if self.mem_available_fall_gib is None or self.shmem_loaded_gib is None:
            return None
        return self.mem_available_fall_gib - self.shmem_loaded_gib


def loaded_window(markers: Sequence[tuple[float, str]], where: str = "markers") -> tuple[float | None, float, float]:
    """``(load_start, load_end, stop)`` from ``(t, event)`` markers.

    Uses the first ``load_start``/``load_end`` and the last ``stop``; ``load_start`` may be absent
    (no idle samples can then be identified). Raises if ``load_end`` or ``stop`` is missing.
    """

    def first(ev: str) -> float | None:
        ts = [float(t) for t, e in markers if e == ev]
        return min(ts) if ts else None

    load_start, load_end = first("load_start"), first("load_end")
    stops = [float(t) for t, e in markers if e == "stop"]
    if load_end is None or not stops:
        need = "load_end" if load_end is None else "stop"
        raise InputError(None, where, f"no {need!r} marker: cannot tell loaded samples apart")
    stop = max(stops)
    if stop < load_end:
        raise InputError(None, where, f"stop at {stop} comes before load_end at {load_end}")
    return load_start, load_end, stop


def steady_of(loaded: Sequence[float]) -> float:
    """Median over the second half of the loaded samples: ``median(loaded[m // 2:])``."""
    if not loaded:
        raise InputError(None, "memory", "no loaded samples")
    return statistics.median(loaded[len(loaded) // 2 :])


def summarize_memory(
    t: Sequence[float],
    gpu_used_mib: Sequence[Sequence[float]],
    markers: Sequence[tuple[float, str]],
    *,
    shmem_kib: Sequence[float | None] | None = None,
    mem_available_kib: Sequence[float | None] | None = None,
    pss_kib_sum: Sequence[float | None] | None = None,
    where: str = "memory",
) -> MemorySummary:
    """Summarize one memory run.

    ``t`` sample times (increasing); ``gpu_used_mib[i]`` the per-rank MiB at sample i (same number
    of ranks in every sample); host series aligned with ``t`` (None entries = not sampled);
    ``markers`` ``(t, event)`` pairs with events ``load_start``, ``load_end``, ``stop``.
    """
    n = len(t)
    if n == 0 or len(gpu_used_mib) != n:
        raise InputError(None, where, f"{len(gpu_used_mib)} GPU samples for {n} times")
    ranks = len(gpu_used_mib[0])
    if ranks == 0 or any(len(row) != ranks for row in gpu_used_mib):
        raise InputError(None, where, "every sample needs the same, non-zero number of ranks")
    load_start, load_end, stop = loaded_window(markers, where)
    loaded = [i for i in range(n) if load_end <= t[i] <= stop]
    if not loaded:
        raise InputError(None, where, f"no samples between load_end {load_end} and stop {stop}")
    idle = [i for i in range(n) if load_start is not None and t[i] < load_start]

    peak = tuple(max(row[r] for row in gpu_used_mib) / MIB_PER_GIB for r in range(ranks))
    steady = tuple(steady_of([gpu_used_mib[i][r] for i in loaded]) / MIB_PER_GIB for r in range(ranks))
    notes: list[str] = []

    def med(series: Sequence[float | None] | None, idx: list[int]) -> float | None:
        if series is None:
            return None
        if len(series) != n:
            raise InputError(None, where, f"host series has {len(series)} samples for {n} times")
        vals = [float(series[i]) for i in idx if series[i] is not None]
        return statistics.median(vals) / KIB_PER_GIB if vals else None

    shmem = med(shmem_kib, loaded)
    avail_loaded = med(mem_available_kib, loaded)
    avail_idle = med(mem_available_kib, idle)
    fall = None
    if avail_loaded is not None and avail_idle is not None:
        fall = avail_idle - avail_loaded
    elif mem_available_kib is not None:
        notes.append(
            "MemAvailable fall not computed: no idle samples before load_start"
            if avail_idle is None
            else "MemAvailable fall not computed: no MemAvailable while loaded"
        )
    pss = med(pss_kib_sum, loaded)
    if pss is not None:
        notes.append(PSS_NOTE)
    return MemorySummary(
        peak_gib=peak,
        steady_gib=steady,
        loaded_samples=len(loaded),
        shmem_loaded_gib=shmem,
        mem_available_idle_gib=avail_idle,
        mem_available_loaded_gib=avail_loaded,
        mem_available_fall_gib=fall,
        pss_sum_gib=pss,
        notes=tuple(notes),
    )


def memory_summaries(gpu: pl.DataFrame, host: pl.DataFrame, markers: pl.DataFrame) -> dict[str, MemorySummary]:
    """One :class:`MemorySummary` per run from the loader's ``(gpu, host, markers)`` frames."""
    import polars as pl

    out: dict[str, MemorySummary] = {}
    for run in sorted(gpu["run"].unique().to_list()):
        g = gpu.filter(pl.col("run") == run).sort(["t", "rank"])
        times = g["t"].unique(maintain_order=True).to_list()
        wide = g.pivot(on="rank", index="t", values="gpu_used_mib", sort_columns=True).sort("t")
        rank_cols = [c for c in wide.columns if c != "t"]
        rows = [list(r) for r in wide.select(rank_cols).iter_rows()]
        if any(v is None for row in rows for v in row):
            raise InputError(None, f"run {run}", "a GPU sample lacks a rank")
        h = host.filter(pl.col("run") == run).sort("t")
        hmap = {r["t"]: r for r in h.iter_rows(named=True)}

        def series(col: str) -> list[float | None] | None:
            if col not in host.columns or h[col].null_count() == h.height:
                return None
            return [hmap[x][col] if x in hmap else None for x in times]

        m = markers.filter(pl.col("run") == run)
        out[run] = summarize_memory(
            times,
            rows,
            list(zip(m["t"].to_list(), m["event"].to_list())),
            shmem_kib=series("shmem_kib"),
            mem_available_kib=series("mem_available_kib"),
            pss_kib_sum=series("pss_kib_sum"),
            where=f"run {run}",
        )
    return out


def memory_table(summaries: dict[str, MemorySummary]) -> pl.DataFrame:
    """A display table, one row per run: ``run, peak_gib, steady_gib, loaded_samples, shmem_gib,
    mem_available_fall_gib, host_other_gib, pss_sum_gib`` (GPU columns are the max over ranks)."""
    import polars as pl

    rows = [{"run": run, **s.figures()} for run, s in sorted(summaries.items())]
    return pl.DataFrame(
        rows,
        schema={
            "run": pl.String,
            "peak_gib": pl.Float64,
            "steady_gib": pl.Float64,
            "loaded_samples": pl.Int64,
            "shmem_gib": pl.Float64,
            "mem_available_fall_gib": pl.Float64,
            "host_other_gib": pl.Float64,
            "pss_sum_gib": pl.Float64,
        },
    )


@dataclass(frozen=True)
class MemoryDelta:
    """Candidate − baseline, per-rank GiB (max over ranks), at peak and at steady."""

    peak_gib: float
    steady_gib: float

    def describe(self) -> str:
        return (
            f"{fmt_gib(self.peak_gib, signed=True)} per rank at peak, {fmt_gib(self.steady_gib, signed=True)} at steady"
        )


def memory_delta(baseline: MemorySummary, candidate: MemorySummary) -> MemoryDelta:
    """What the candidate costs over the baseline per rank (seed: tuned − default = +7.4 GiB peak)."""
    return MemoryDelta(
        candidate.peak_max_gib - baseline.peak_max_gib,
        candidate.steady_max_gib - baseline.steady_max_gib,
    )


RAMP_MAX_POINTS = 400  # per run and rank: a chart of a day of 0.5-s samples stays small


def load_ramp(gpu: pl.DataFrame, markers: pl.DataFrame, run: str, max_points: int = RAMP_MAX_POINTS):
    """One run's GPU memory over time (the load ramp: weights, KV cache, graphs, then the load) as
    ``(samples, markers)``: samples ``t_s`` (seconds from the first sample), ``rank``, ``gib`` — the
    maximum of each time bin when there are more than ``max_points`` samples per rank, so a peak is
    never averaged away; markers ``t_s, event, label`` (the run's events: load_start, load_end, each
    load point's request_start, stop)."""
    import polars as pl

    g = gpu.filter(pl.col("run") == run).sort("t")
    if g.height == 0:
        raise InputError(None, f"run {run}", "no GPU samples")
    t0 = float(g["t"].min())
    span = float(g["t"].max()) - t0
    per_rank = g.group_by("rank").len()["len"].max()
    g = g.with_columns((pl.col("t") - t0).alias("t_s"), (pl.col("gpu_used_mib") / MIB_PER_GIB).alias("gib"))
    if per_rank > max_points and span > 0:
        width = span / max_points
        g = (  # at most max_points bins per rank: the last sample joins the last bin
            g.with_columns(((pl.col("t_s") / width).floor().clip(0, max_points - 1) * width).alias("t_s"))
            .group_by(["t_s", "rank"])
            .agg(pl.col("gib").max())
        )
    samples = g.select("t_s", "rank", "gib").sort(["rank", "t_s"])
    m = (
        markers.filter(pl.col("run") == run)
        .filter(pl.col("event") != "request_end")
        .select((pl.col("t") - t0).alias("t_s"), "event", pl.col("label").fill_null(pl.col("event")).alias("label"))
        .sort("t_s")
    )
    return samples, m


RAMP_MIN_POINTS = 10  # a rank's line needs a few points to show a ramp at all


def load_ramps(
    gpu: pl.DataFrame, markers: pl.DataFrame, runs: list[str], budget: int
) -> dict[str, tuple[pl.DataFrame, pl.DataFrame]]:
    """:func:`load_ramp` of every run in ``runs`` inside one row budget: the ``budget`` rows (less the
    markers) shared equally by every (run, rank) line, at most :data:`RAMP_MAX_POINTS` each. Where even
    :data:`RAMP_MIN_POINTS` per line would not fit (16 GPUs in 25 runs), each run's ranks are drawn as
    two lines, the largest and the smallest rank at each time (``rank`` says so), so every peak stays."""
    import polars as pl

    g = gpu.filter(pl.col("run").is_in(runs))
    ranks = dict(g.group_by("run").agg(pl.col("rank").n_unique()).iter_rows())
    marks = markers.filter(pl.col("run").is_in(runs) & (pl.col("event") != "request_end")).height
    room = max(0, budget - marks)
    series = sum(ranks.get(r, 0) for r in runs)
    collapse = series * RAMP_MIN_POINTS > room
    if collapse:
        series = 2 * sum(1 for r in runs if ranks.get(r))
    k = max(2, min(RAMP_MAX_POINTS, room // max(1, series)))
    out = {}
    for r in runs:
        rg = g.filter(pl.col("run") == r)
        if collapse and rg.height:
            n = ranks[r]
            rg = pl.concat(
                [
                    rg.group_by("t").agg(pl.col("gpu_used_mib").max(), pl.lit(f"largest of {n} GPUs").alias("rank")),
                    rg.group_by("t").agg(pl.col("gpu_used_mib").min(), pl.lit(f"smallest of {n} GPUs").alias("rank")),
                ]
            ).with_columns(pl.lit(r).alias("run"))
        out[r] = load_ramp(rg if collapse else gpu, markers, r, k)
    return out


def process_footprints(host: pl.DataFrame, load_end: float, stop: float) -> list[dict[str, Any]]:
    """Per sampled process of one run (``pid, comm``): the median Pss and Rss while loaded
    (``load_end`` … ``stop``) and the peak Rss, in GiB, with the number of loaded samples — largest
    median Pss first. ``host`` is the host sampler's frame (``ingest.gpu_samples.read_host_csv``: one
    row per process per sample). A process seen only outside the loaded window (a compiler the engine
    ran at start-up) is listed with ``loaded_samples`` 0 and its peak Rss. Each Pss counts its
    share of shared pages, so the per-process figures add up to the summed Pss, which is not a
    footprint either."""
    import polars as pl

    h = host.filter(pl.col("pid").is_not_null())
    if h.height == 0:
        return []
    inside = (pl.col("t") >= load_end) & (pl.col("t") <= stop)
    out = (
        h.group_by(["pid", "comm"])
        .agg(
            pl.col("pss_kib").filter(inside).median().alias("pss_kib"),
            pl.col("rss_kib").filter(inside).median().alias("rss_kib"),
            pl.col("rss_kib").max().alias("peak_rss_kib"),
            inside.sum().alias("loaded_samples"),
        )
        .sort(["pss_kib", "pid"], descending=[True, False], nulls_last=True)
    )
    return [
        {
            "pid": int(r["pid"]),
            "comm": r["comm"],
            "pss_gib": None if r["pss_kib"] is None else r["pss_kib"] / KIB_PER_GIB,
            "rss_gib": None if r["rss_kib"] is None else r["rss_kib"] / KIB_PER_GIB,
            "peak_rss_gib": None if r["peak_rss_kib"] is None else r["peak_rss_kib"] / KIB_PER_GIB,
            "loaded_samples": int(r["loaded_samples"]),
        }
        for r in out.iter_rows(named=True)
    ]


# ---- memory deltas between arms, judged (the campaign analysis's memory comparisons) -----------------
@dataclass(frozen=True)
class MemoryDeltaResult:
    """Candidate − baseline memory per rank (GiB, the largest rank) for one compared arm pair."""

    baseline: str
    candidate: str
    baseline_run: str
    candidate_run: str
    quantity: str  # "peak" | "steady"
    baseline_gib: float
    candidate_gib: float
    delta_gib: float
    threshold_gib: float | None  # the spread applied to the smaller of the two figures
    verdict: str
    is_result: bool
    reason: str
    typed: Verdict | None = None

    def describe(self) -> str:
        return (
            f"{self.candidate} vs {self.baseline}: {fmt_gib(self.delta_gib, 2, signed=True)} per rank at "
            f"{self.quantity} ({self.candidate_gib:.2f} against {self.baseline_gib:.2f} GiB, one memory run each) — "
            f"{self.verdict}"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline,
            "candidate": self.candidate,
            "baseline_run": self.baseline_run,
            "candidate_run": self.candidate_run,
            "quantity": self.quantity,
            "metric": f"memory_{self.quantity}_gib",
            "baseline_gib": self.baseline_gib,
            "candidate_gib": self.candidate_gib,
            "delta_gib": self.delta_gib,
            "threshold_gib": self.threshold_gib,
            "verdict": self.verdict,
            "is_result": self.is_result,
            "reason": self.reason,
            **typed_fields(self.typed),
            "text": self.describe(),
        }


def memory_decision(base_gib: float, cand_gib: float, spread: float | None) -> Verdict:
    """The typed verdict on a memory delta between two single memory runs (n=1 each).

    A memory run is one process sampled once, so no memory spread is measured; the campaign's
    run-to-run spread (the noise yardstick) is the threshold on the symmetric difference
    max/min − 1 — equivalently |Δ| against the spread × the *smaller* figure, so swapping the arms
    never changes the verdict. Less memory is the better direction. Without a measured spread
    nothing is called a result."""
    ev = Evidence(
        point(base_gib),
        point(cand_gib),
        higher_is_better=False,
        rule="seed",
        spread=spread,
        spread_from="the campaign's run-to-run spread (noise yardstick); n=1 memory run per arm",
        no_spread="no arm was run twice, so there is no measured spread",
    )
    return decide(ev)


def memory_verdict(base_gib: float, cand_gib: float, spread: float | None) -> tuple[float | None, str, bool, str]:
    """(threshold GiB, verdict words, is_result, reason) of :func:`memory_decision` (kept for callers)."""
    v = memory_decision(base_gib, cand_gib, spread)
    return _memory_words(v, base_gib, cand_gib)


def _memory_words(v: Verdict, base_gib: float, cand_gib: float) -> tuple[float | None, str, bool, str]:
    spread = v.evidence.spread
    if spread is None:
        return None, "no verdict", False, v.reason
    delta = cand_gib - base_gib
    thr = spread * min(base_gib, cand_gib)
    where = (
        f"the {stats.fmt_pct(spread)} run-to-run spread of the smaller figure "
        f"{min(base_gib, cand_gib):.2f} GiB ({thr:.2f} GiB); n=1 memory run per arm"
    )
    if v.is_result:
        word = "more memory" if delta > 0 else "less memory"
        return thr, f"result ({word})", True, f"|{delta:.2f}| GiB exceeds {where}"
    return thr, NOT_A_RESULT, False, f"|{delta:.2f}| GiB is inside {where}"


def memory_processes(camp: Campaign, markers: pl.DataFrame) -> dict[str, list[dict[str, Any]]]:
    """Each gpu run's sampled processes (host sampler rows) while loaded, from its markers."""
    import polars as pl

    from benchbook.ingest.gpu_runs import host_processes

    out = {}
    for r in camp.runs_of("gpu"):
        host = host_processes(camp, r)
        if host is None:
            continue
        m = markers.filter(pl.col("run") == r.id)
        _start, load_end, stop = loaded_window(list(zip(m["t"].to_list(), m["event"].to_list())), f"run {r.id}")
        out[r.id] = process_footprints(host, load_end, stop)
    return out


def memory_deltas(camp: Campaign, summ: dict[str, MemorySummary], spread: float | None) -> list[MemoryDeltaResult]:
    """Candidate − baseline peak and steady memory for each compared arm pair with a memory run each,
    judged by :func:`memory_decision`."""
    from benchbook.analysis import baseline

    out = []
    for base, cand in baseline.comparison_pairs(camp):
        rb, rc = camp.runs_of("memory", base), camp.runs_of("memory", cand)
        if not rb or not rc:
            continue
        sb, sc = summ[rb[0].id], summ[rc[0].id]
        d = memory_delta(sb, sc)
        for quantity, b, c, dv in (
            ("peak", sb.peak_max_gib, sc.peak_max_gib, d.peak_gib),
            ("steady", sb.steady_max_gib, sc.steady_max_gib, d.steady_gib),
        ):
            v = memory_decision(b, c, spread)
            thr, verdict, is_result, reason = _memory_words(v, b, c)
            out.append(
                MemoryDeltaResult(
                    base, cand, rb[0].id, rc[0].id, quantity, b, c, dv, thr, verdict, is_result, reason, v
                )
            )
    return out


@dataclass(frozen=True)
class HostMemorySummary:
    """One server process sampled on the host only (``host_samples.csv``, no GPU samples): its host
    figures in GiB over the loaded window, as :class:`MemorySummary` has them, and the summed Pss's
    peak; the GPU is "not measured"."""

    loaded_samples: int
    shmem_loaded_gib: float | None
    mem_available_idle_gib: float | None
    mem_available_loaded_gib: float | None
    mem_available_fall_gib: float | None
    pss_sum_gib: float | None  # median over the loaded samples
    pss_sum_peak_gib: float | None
    notes: tuple[str, ...] = ()

    def figures(self) -> dict[str, Any]:
        return {
            "gpu": "not measured (no GPU samples: host_samples.csv only)",
            "loaded_samples": self.loaded_samples,
            "shmem_gib": self.shmem_loaded_gib,
            "mem_available_fall_gib": self.mem_available_fall_gib,
            "pss_sum_gib": self.pss_sum_gib,
            "pss_sum_peak_gib": self.pss_sum_peak_gib,
        }


def host_memory_summaries(gpu: pl.DataFrame, host: pl.DataFrame, markers: pl.DataFrame) -> dict[str, HostMemorySummary]:
    """One :class:`HostMemorySummary` per run with host samples and no GPU samples (a capture on a host
    without nvidia-smi): Shmem and Pss over the loaded window (its markers), the MemAvailable fall from
    the idle samples before ``load_start``."""
    import polars as pl

    out: dict[str, HostMemorySummary] = {}
    with_gpu = set(gpu["run"].unique().to_list())
    for run in sorted(set(host["run"].unique().to_list()) - with_gpu):
        h = host.filter(pl.col("run") == run).sort("t")
        m = markers.filter(pl.col("run") == run)
        load_start, load_end, stop = loaded_window(list(zip(m["t"].to_list(), m["event"].to_list())), f"run {run}")
        loaded = h.filter((pl.col("t") >= load_end) & (pl.col("t") <= stop))
        idle = h.filter(pl.col("t") < load_start) if load_start is not None else h.head(0)

        def med(frame: pl.DataFrame, col: str) -> float | None:
            v = frame[col].drop_nulls()
            return float(v.median()) / KIB_PER_GIB if v.len() else None

        avail_loaded, avail_idle = med(loaded, "mem_available_kib"), med(idle, "mem_available_kib")
        pss = loaded["pss_kib_sum"].drop_nulls()
        notes = [PSS_NOTE] if pss.len() else []
        if avail_idle is None and avail_loaded is not None:
            notes.append("MemAvailable fall not computed: no idle samples before load_start")
        out[run] = HostMemorySummary(
            loaded_samples=loaded.height,
            shmem_loaded_gib=med(loaded, "shmem_kib"),
            mem_available_idle_gib=avail_idle,
            mem_available_loaded_gib=avail_loaded,
            mem_available_fall_gib=None if avail_idle is None or avail_loaded is None else avail_idle - avail_loaded,
            pss_sum_gib=med(loaded, "pss_kib_sum"),
            pss_sum_peak_gib=float(pss.max()) / KIB_PER_GIB if pss.len() else None,
            notes=tuple(notes),
        )
    return out
