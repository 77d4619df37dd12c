"""What a run's per-request records show beyond its summary: distributions, time course, outcome
shares and a saturation flag.

Input is a :class:`benchbook.ingest.formats.BenchmarkRun` whose ``requests`` table is present (vLLM
``--save-detailed``, AIPerf records, GuideLLM request samples, llmperf individual responses, SGLang
``--output-details``). :func:`analyse` returns a :class:`RequestViews` the page formats as is.

Definitions, the same for every tool (the tools' own definitions differ; see :data:`DEFINITIONS`):

* **TTFT** and **E2E** per successful request, as the file records them;
* **TPOT** per successful request with more than one output token: ``(e2e − ttft) / (tokens − 1)``
  (vLLM's definition: the first token is excluded);
* **ITL**: every gap between streamed chunks, pooled over requests, when the file keeps the gaps;
  otherwise the tool's own per-request mean ITL, labelled as such.

Percentiles use linear interpolation (numpy's default, as vLLM's benchmark does); ``n`` is the
number of values behind each distribution.

**Saturation rule** (:data:`SATURATION_RULE`): requests with a start time and an E2E are ordered by
start and cut into :data:`SATURATION_BINS` bins of equal count (at least :data:`SATURATION_MIN_PER_BIN`
requests each). In each bin we take the median number of requests in flight at a request's start
and the median TTFT. The run is flagged *saturated* when both medians never fall from one bin to the
next, the last bin's in-flight median is above the first's, and the last bin's TTFT median is at
least :data:`SATURATION_TTFT_GROWTH` × the first's: the server is taking requests in faster than it
finishes them and the queue shows up as time to first token.

Large runs are drawn from a deterministic sample so a page never carries a million SVG points: the
ECDF at :data:`ECDF_POINTS` evenly spaced quantiles (exact values at those quantiles), the time
course as every k-th request in start order so at most :data:`TIMELINE_POINTS` remain.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl

    from benchbook.ingest.formats import BenchmarkRun

__all__ = [
    "DEFINITIONS",
    "Distribution",
    "RequestViews",
    "SATURATION_RULE",
    "Saturation",
    "analyse",
    "in_flight_at_start",
    "saturation",
]

PERCENTILES = (50, 90, 99)
ECDF_POINTS = 200
TIMELINE_POINTS = 1000
SATURATION_BINS = 4
SATURATION_MIN_PER_BIN = 5
SATURATION_TTFT_GROWTH = 1.5
SATURATION_RULE = (
    f"requests ordered by start time are cut into {SATURATION_BINS} equal-count bins (at least "
    f"{SATURATION_MIN_PER_BIN} each); saturated when the median in-flight count at request start and the median "
    f"TTFT never fall from bin to bin, in-flight ends higher than it starts, and the last bin's TTFT median is at "
    f"least {SATURATION_TTFT_GROWTH:g}x the first's"
)

METRIC_NAMES = {"ttft": "TTFT", "tpot": "TPOT", "itl": "ITL", "e2e": "E2E"}

# What each tool means by its own figures; benchbook's per-request views use the first column's
# definitions for every tool, so one run read from two tools gives figures that reconcile.
DEFINITIONS: dict[str, dict[str, str]] = {
    "benchbook (this section)": {
        "TPOT": "(E2E − TTFT) / (output tokens − 1): the first token excluded",
        "ITL": "every gap between streamed chunks, pooled (a chunk may carry several tokens)",
        "E2E": "request sent to last token received, client clock",
    },
    "vllm-bench-serve": {
        "TPOT": "(E2E − TTFT) / (output tokens − 1): first token excluded",
        "ITL": "gaps between streamed chunks, pooled over requests (per chunk, not per token)",
        "E2E": "TTFT + Σ ITL (client clock)",
    },
    "sglang-bench-serving": {
        "TPOT": "(E2E − TTFT) / (output tokens − 1), as vLLM",
        "ITL": "gaps between streamed chunks, pooled (per chunk)",
        "E2E": "request sent to last chunk (client clock)",
    },
    "guidellm-report": {
        "TPOT": "E2E / output tokens: GuideLLM's time_per_output_token spreads the whole request over every output "
        "token, so the first token's latency is included",
        "ITL": "(E2E − TTFT) / (output tokens − 1) per request: GuideLLM's inter_token_latency is vLLM's TPOT",
        "E2E": "request_latency: request start to last token (client clock)",
    },
    "aiperf": {
        "TPOT": "AIPerf's inter_token_latency = (request_latency − TTFT) / (output_sequence_length − 1), vLLM's TPOT",
        "ITL": "AIPerf's inter_chunk_latency: gaps between streamed chunks (per chunk)",
        "E2E": "request_latency (client clock)",
    },
    "llmperf": {
        "TPOT": "not reported; llmperf's inter_token_latency_s is E2E / output tokens (first token included)",
        "ITL": "inter_token_latency_s: per-request mean over all output tokens (includes TTFT)",
        "E2E": "end_to_end_latency_s (client clock)",
    },
    "inference-perf": {
        "TPOT": "computed_metrics.time_per_output_token: (last token time − first token time) / (output tokens − 1) "
        "per request, vLLM's TPOT measured from token times",
        "ITL": "inter_token_latency: the mean of one request's token-time gaps (per request, not pooled)",
        "E2E": "request start to the last token (client clock)",
    },
    "llmd-benchmark-report": {
        "TPOT": "time_per_output_token as the harness that filled the report defines it (aggregates only: no "
        "per-request records)",
        "ITL": "inter_token_latency as that harness defines it (aggregates only)",
        "E2E": "request_latency (the harness's client clock)",
    },
}
# every inference-perf report (lifecycle summary and stages, per-request, server metrics) shares its definitions
for _name in ("inference-perf-lifecycle", "inference-perf-per-request", "inference-perf-server-metrics"):
    DEFINITIONS[_name] = DEFINITIONS["inference-perf"]


def definitions_for(fmt: str) -> dict[str, str] | None:
    """The definitions row for a format name (``aiperf-records`` → ``aiperf``, ``llmperf-*`` → ``llmperf``)."""
    if fmt in DEFINITIONS:
        return DEFINITIONS[fmt]
    family = fmt.split("-")[0]
    return DEFINITIONS.get(family)


@dataclass
class Distribution:
    metric: str  # ttft | tpot | itl | e2e
    n: int
    mean_ms: float | None
    percentiles_ms: dict[int, float]  # 50, 90, 99
    ecdf: list[tuple[float, float]]  # (value ms, cumulative share), at most ECDF_POINTS + 1 points
    source: str  # what the values are ("pooled chunk gaps", "per-request mean ITL (tool's)", ...)
    sampled: bool  # True when the ECDF is drawn at quantiles rather than at every value

    def as_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "n": self.n,
            "mean_ms": self.mean_ms,
            **{f"p{p}_ms": v for p, v in self.percentiles_ms.items()},
            "source": self.source,
            "sampled": self.sampled,
            "ecdf_points": len(self.ecdf),
        }


@dataclass
class Saturation:
    status: str  # "saturated" | "not saturated" | "not judged"
    detail: str
    bins: list[dict[str, float]] = field(default_factory=list)  # per bin: start_s, in_flight, ttft_ms
    reason: str = ""  # the rule's outcome in a few words (the detail without the per-bin figures)

    def as_dict(self) -> dict[str, Any]:
        return {"status": self.status, "detail": self.detail, "reason": self.reason, "bins": self.bins}


@dataclass
class RequestViews:
    run_id: str
    config: str
    format: str
    tool_version: str | None
    total: int
    shares: dict[str, int]  # successful / incomplete / errored counts
    distributions: dict[str, Distribution]
    timeline: pl.DataFrame  # x_s (or order), ttft_ms, e2e_ms, status; sampled
    timeline_axis: str  # "start" (seconds since the first request start) or "order"
    timeline_step: int  # every k-th request kept (1: all)
    saturation: Saturation
    notes: list[str] = field(default_factory=list)

    @property
    def definitions(self) -> dict[str, str] | None:
        """What this run's tool means by TPOT, ITL and E2E (:func:`definitions_for` its format)."""
        return definitions_for(self.format)

    def as_dict(self) -> dict[str, Any]:
        return {
            "run": self.run_id,
            "config": self.config,
            "format": self.format,
            "tool_version": self.tool_version,
            "total": self.total,
            "shares": self.shares,
            "distributions": {k: d.as_dict() for k, d in self.distributions.items()},
            "timeline_axis": self.timeline_axis,
            "timeline_points": self.timeline.height,
            "timeline_step": self.timeline_step,
            "saturation": self.saturation.as_dict(),
            "notes": self.notes,
        }


# ---------------------------------------------------------------------------------------------


def _percentiles(values: np.ndarray) -> dict[int, float]:
    return {p: float(np.percentile(values, p)) for p in PERCENTILES}


def _ecdf(values: np.ndarray) -> tuple[list[tuple[float, float]], bool]:
    """ECDF points; beyond ECDF_POINTS values, the exact values at evenly spaced quantiles."""
    v = np.sort(values)
    n = v.size
    if n <= ECDF_POINTS:
        return [(float(x), (i + 1) / n) for i, x in enumerate(v)], False
    qs = np.linspace(0.0, 1.0, ECDF_POINTS + 1)
    xs = np.quantile(v, qs, method="inverted_cdf")
    return [(float(x), float(q)) for x, q in zip(xs, qs)], True


def _distribution(metric: str, values: np.ndarray, source: str) -> Distribution | None:
    values = values[np.isfinite(values)]
    if values.size == 0:
        return None
    ms = values * 1000.0
    ecdf, sampled = _ecdf(ms)
    return Distribution(metric, int(ms.size), float(ms.mean()), _percentiles(ms), ecdf, source, sampled)


def status_of(df: pl.DataFrame) -> pl.Series:
    """successful / incomplete / errored per request. Incomplete: the tool cut the request off when the
    benchmark ended (GuideLLM's status; readers write the error text ``incomplete...``)."""
    import polars as pl

    return df.select(
        pl.when(pl.col("success").fill_null(False))
        .then(pl.lit("successful"))
        .when(pl.col("error").fill_null("").str.starts_with("incomplete"))
        .then(pl.lit("incomplete"))
        .otherwise(pl.lit("errored"))
        .alias("status")
    )["status"]


def in_flight_at_start(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """For each request, how many requests (itself included) were in flight when it started:
    started at or before its start and not yet finished."""
    s = np.sort(start)
    e = np.sort(end)
    started = np.searchsorted(s, start, side="right")
    ended = np.searchsorted(e, start, side="right")
    return (started - ended).astype(float)


def saturation(start: np.ndarray, e2e: np.ndarray, ttft: np.ndarray) -> Saturation:
    """Apply :data:`SATURATION_RULE` to requests with a start time, E2E and TTFT (seconds)."""
    ok = np.isfinite(start) & np.isfinite(e2e) & np.isfinite(ttft)
    n = int(ok.sum())
    need = SATURATION_BINS * SATURATION_MIN_PER_BIN
    if n < need:
        why = f"{n} request(s) with start time, TTFT and E2E; the rule needs {need}"
        return Saturation("not judged", why, reason=why)
    start, e2e, ttft = start[ok], e2e[ok], ttft[ok]
    flight = in_flight_at_start(start, start + e2e)
    order = np.argsort(start, kind="stable")
    bins = []
    t0 = float(start.min())
    for idx in np.array_split(order, SATURATION_BINS):
        bins.append(
            {
                "start_s": float(start[idx].min()) - t0,
                "in_flight": float(np.median(flight[idx])),
                "ttft_ms": float(np.median(ttft[idx])) * 1000.0,
                "n": int(idx.size),
            }
        )
    fl = [b["in_flight"] for b in bins]
    tt = [b["ttft_ms"] for b in bins]
    rising = all(b >= a for a, b in zip(fl, fl[1:])) and all(b >= a for a, b in zip(tt, tt[1:]))
    growth = tt[-1] / tt[0] if tt[0] > 0 else math.inf
    desc = (
        f"median in flight {' → '.join(f'{x:g}' for x in fl)}; median TTFT "
        f"{' → '.join(f'{x:.1f}' for x in tt)} ms over {SATURATION_BINS} bins of ~{n // SATURATION_BINS} requests"
    )
    if rising and fl[-1] > fl[0] and growth >= SATURATION_TTFT_GROWTH:
        why = f"both keep rising (TTFT x{growth:.2f})"
        return Saturation("saturated", f"{desc}: {why}", bins, why)
    why = []
    if not all(b >= a for a, b in zip(fl, fl[1:])) or fl[-1] <= fl[0]:
        why.append("in-flight count does not keep rising")
    if not all(b >= a for a, b in zip(tt, tt[1:])):
        why.append("TTFT does not keep rising")
    elif growth < SATURATION_TTFT_GROWTH:
        why.append(f"TTFT grows only x{growth:.2f}")
    return Saturation("not saturated", f"{desc}: {'; '.join(why)}", bins, "; ".join(why))


def analyse(run: BenchmarkRun, *, run_id: str = "", config: str = "") -> RequestViews | None:
    """The per-request views of one run (None when the file has no per-request records)."""
    import polars as pl

    df = run.requests
    if df is None or df.height == 0:
        return None
    notes: list[str] = []
    status = status_of(df)
    shares = {k: int((status == k).sum()) for k in ("successful", "incomplete", "errored")}
    ok = df.filter(status == "successful")

    def arr(col: str, frame: pl.DataFrame = ok) -> np.ndarray:
        return frame[col].cast(pl.Float64).fill_null(float("nan")).to_numpy()

    ttft, e2e, tokens = arr("ttft_s"), arr("e2e_s"), arr("completion_tokens")
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(tokens > 1, (e2e - ttft) / (tokens - 1), np.nan)
    dists: dict[str, Distribution] = {}
    for metric, values, source in (
        ("ttft", ttft, "per successful request"),
        ("tpot", tpot, "per successful request with > 1 output token: (E2E − TTFT) / (tokens − 1)"),
        ("e2e", e2e, "per successful request"),
    ):
        d = _distribution(metric, values, source)
        if d is not None:
            dists[metric] = d
    if ok["itl"].null_count() < ok.height:
        gaps = ok["itl"].explode().drop_nulls().cast(pl.Float64).to_numpy()
        d = _distribution("itl", gaps, "every gap between streamed chunks, pooled over successful requests")
    else:
        d = _distribution("itl", arr("itl_mean_s"), "the tool's own per-request mean ITL (chunk gaps not in the file)")
    if d is not None:
        dists["itl"] = d
    sampled = [METRIC_NAMES[k] for k, v in dists.items() if v.sampled]
    if sampled:
        notes.append(
            f"ECDF of {', '.join(sampled)} drawn at {ECDF_POINTS + 1} evenly spaced quantiles (exact values there), "
            "not at every request"
        )

    # time course: all requests (failed ones show as such), by start time when the file has it
    start_all = arr("start_s", df)
    has_start = bool(np.isfinite(start_all).any())
    if has_start:
        t0 = float(np.nanmin(start_all))
        x = start_all - t0
        axis = "start"
    else:
        x = np.arange(df.height, dtype=float)
        axis = "order"
        notes.append("the file has no request start times: the time course is drawn against request order")
    tl = pl.DataFrame(
        {
            "x": x,
            "ttft_ms": arr("ttft_s", df) * 1000.0,
            "e2e_ms": arr("e2e_s", df) * 1000.0,
            "status": status,
        }
    ).sort("x", maintain_order=True)
    step = max(1, math.ceil(tl.height / TIMELINE_POINTS))
    if step > 1:
        tl = tl.gather_every(step)
        notes.append(f"time course: every {step}th request in start order ({tl.height} of {df.height} drawn)")
    tl = tl.with_columns(pl.col("ttft_ms").fill_nan(None), pl.col("e2e_ms").fill_nan(None))

    sat = (
        saturation(arr("start_s"), e2e, ttft)
        if has_start
        else Saturation(
            "not judged", "the file has no request start times", reason="the file has no request start times"
        )
    )
    return RequestViews(
        run_id=run_id or run.location,
        config=config,
        format=run.format,
        tool_version=getattr(run, "tool_version", None),
        total=df.height,
        shares=shares,
        distributions=dists,
        timeline=tl,
        timeline_axis=axis,
        timeline_step=step,
        saturation=sat,
        notes=notes,
    )


def views(items: Iterable[tuple[str, str, Any]]) -> list[RequestViews]:
    """The per-request views of each ``(run id, configuration, run)`` that carries per-request records."""
    out = []
    for run_id, config, run in items:
        v = analyse(run, run_id=run_id, config=config)
        if v is not None:
            out.append(v)
    return out
