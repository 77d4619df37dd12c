"""Latency SLOs, attainment and goodput per run, and the highest load of a sweep that meets them.

An SLO is a set of limits in milliseconds — ``ttft_ms``, ``tpot_ms``, ``itl_ms``, ``e2el_ms`` — that
must all hold together, and one target:

* ``attainment: A`` (default 0.99) — the run meets the SLO when at least the share ``A`` of its
  requests meets every limit (DistServe's SLO attainment);
* ``percentile: P`` — the run meets the SLO when the P-th percentile of every limited metric is
  within its limit (how ``vllm bench serve`` results are usually read: "P99 TTFT ≤ 200 ms").

From per-request records (vLLM/SGLang per-request arrays, AIPerf and llmperf records), per run:

* a request is *good* when it succeeded and its TTFT, its TPOT ``(e2e − ttft) / (output tokens − 1)``
  (0 for a single-token answer, as vLLM counts it), its largest inter-token gap (for ``itl_ms``: no
  stall longer than the limit) and its E2E latency are all within their limits — vLLM's
  ``--goodput`` rule, with ITL added;
* attainment = good requests / requests sent (a failed request is not good);
* request goodput = good requests / duration (DistServe: completed requests per second that meet all
  SLOs; vLLM's ``request_goodput``); token goodput = output tokens of good requests / duration.

Without per-request records (or with only a sample of them, as GuideLLM keeps) attainment is
*unknown*, and only the file's own percentiles can be held against the limits: with a percentile
target that decides; with an attainment target ``A`` a ``p(100·A)`` beyond its limit proves the
target missed (more than ``1 − A`` of requests exceed that limit alone), while percentiles within
their limits cannot prove it met (the limits must hold together) — "cannot tell".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from benchbook.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    from benchbook.ingest.formats import BenchmarkRun

LIMITS = ("ttft_ms", "tpot_ms", "itl_ms", "e2el_ms")
NAMES = {"ttft_ms": "TTFT", "tpot_ms": "TPOT", "itl_ms": "ITL", "e2el_ms": "E2E"}
DEFAULT_ATTAINMENT = 0.99


@dataclass(frozen=True)
class Slo:
    limits: dict[str, float]  # {"ttft_ms": 200.0, ...}
    percentile: float | None = None
    attainment: float | None = None

    @property
    def target_pct(self) -> float:
        """The percentile held against the limits: P, or 100·A for an attainment target."""
        return self.percentile if self.percentile is not None else 100 * (self.attainment or DEFAULT_ATTAINMENT)

    def describe(self) -> str:
        lim = " and ".join(f"{NAMES[k]} ≤ {v:g} ms" for k, v in self.limits.items())
        if self.percentile is not None:
            return f"P{self.percentile:g} {lim}"
        return f"{lim} for at least {self.attainment:.0%} of requests" if self.attainment is not None else lim


def parse(value: Mapping[str, Any] | None) -> Slo | None:
    """The ``slo`` page parameter: ``{}``/None means no SLO; bad keys or values are InputErrors."""
    if not value:
        return None
    if not isinstance(value, Mapping):
        raise InputError(
            "parameters", "slo", f"expected a mapping such as {{ttft_ms: 200}}, found {type(value).__name__}"
        )
    limits: dict[str, float] = {}
    pct = att = None
    for k, v in value.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
            raise InputError("parameters", f"slo.{k}", f"expected a positive number, found {v!r}")
        if k in LIMITS:
            limits[k] = float(v)
        elif k == "percentile":
            if not 0 < v < 100:
                raise InputError("parameters", "slo.percentile", f"expected 0 < percentile < 100, found {v!r}")
            pct = float(v)
        elif k == "attainment":
            if not 0 < v <= 1:
                raise InputError("parameters", "slo.attainment", f"expected a share 0 < attainment ≤ 1, found {v!r}")
            att = float(v)
        else:
            raise InputError(
                "parameters", f"slo.{k}", f"unknown key; choose from {', '.join((*LIMITS, 'percentile', 'attainment'))}"
            )
    if not limits:
        raise InputError("parameters", "slo", f"no limit given; set at least one of {', '.join(LIMITS)}")
    if pct is not None and att is not None:
        raise InputError("parameters", "slo", "give either percentile or attainment, not both")
    if pct is None and att is None:
        att = DEFAULT_ATTAINMENT
    return Slo(limits, pct, att)


@dataclass(frozen=True)
class RunSlo:
    """One run against the SLO. ``meets`` is True/False, or None for "cannot tell" (``why`` says why)."""

    records: bool  # judged from complete per-request records
    sent: int | None
    good: int | None
    attainment: float | None
    request_goodput: float | None
    token_goodput: float | None
    percentiles: dict[str, float | None]  # limit key -> the run's target percentile, ms
    percentile_source: str  # "per-request records" | "the file's summary" | "not available"
    meets: bool | None
    margin: float | None  # ≥ 0 meets, < 0 misses: attainment − target, or min (limit − value) / limit
    why: str


def per_request_ms(run: BenchmarkRun) -> Any:
    """A polars frame of each request's ``success, ttft_ms, tpot_ms, itl_ms (largest gap), e2el_ms,
    completion_tokens`` from the run's records."""
    import polars as pl

    df = run.requests
    assert df is not None
    has_itl = df["itl"].null_count() < df.height
    return df.select(
        pl.col("success").fill_null(False),
        (pl.col("ttft_s") * 1000).alias("ttft_ms"),
        pl.when(pl.col("completion_tokens") > 1)
        .then((pl.col("e2e_s") - pl.col("ttft_s")) / (pl.col("completion_tokens") - 1) * 1000)
        .otherwise(0.0)
        .alias("tpot_ms"),
        (  # a one-token answer has no gap: it meets any ITL limit
            pl.when(pl.col("itl").list.len() == 0).then(0.0).otherwise(pl.col("itl").list.max() * 1000)
            if has_itl
            else pl.lit(None, pl.Float64)
        ).alias("itl_ms"),
        (pl.col("e2e_s") * 1000).alias("e2el_ms"),
        "completion_tokens",
        pl.col("itl"),
    )


def records_complete(run: BenchmarkRun) -> tuple[bool, str]:
    """Whether the run's per-request records cover every request it sent (not a sample)."""
    df = run.requests
    if df is None or df.height == 0:
        return False, "the file has no per-request records"
    s = run.summary
    sent = (s.get("completed") or 0) + (s.get("failed") or 0) + (s.get("incomplete") or 0)
    if s.get("completed") is not None and df.height < sent:
        return False, f"the per-request records are a sample ({df.height} of {sent} requests)"
    if df["success"].null_count() == df.height:
        return False, "the per-request records do not say which requests succeeded"
    return True, ""


def _pct(values: Any, q: float) -> float | None:
    s = values.drop_nulls()
    return None if s.is_empty() else float(s.quantile(q / 100, interpolation="linear"))


def _file_pct(run: BenchmarkRun, key: str, p: float) -> float | None:
    m = key[: -len("_ms")]
    names = [f"p{p:g}_{m}_ms"] + ([f"median_{m}_ms"] if p == 50 else [])
    for n in names:
        v = run.summary.get(n)
        if v is not None:
            return float(v)
    return None


def evaluate(run: BenchmarkRun, slo: Slo) -> RunSlo:
    import polars as pl

    p = slo.target_pct
    ok, why_not = records_complete(run)
    if ok:
        reqs = per_request_ms(run)
        if "itl_ms" in slo.limits and reqs["itl_ms"].null_count() == reqs.height:
            ok, why_not = False, "the per-request records carry no inter-token gaps (needed for itl_ms)"
    if ok:
        cond = pl.col("success")
        for k, lim in slo.limits.items():
            cond = cond & pl.col(k).is_not_null() & (pl.col(k) <= lim)
        good_df = reqs.filter(cond)
        sent, good = reqs.height, good_df.height
        att = good / sent if sent else None
        dur = run.summary.get("duration_s")
        rg = good / dur if dur else None
        tg = float(good_df["completion_tokens"].fill_null(0).sum()) / dur if dur else None
        okr = reqs.filter(pl.col("success"))
        pcts: dict[str, float | None] = {}
        for k in slo.limits:
            if k == "itl_ms":  # pooled over every gap, as vLLM reports ITL percentiles
                pcts[k] = _pct(okr["itl"].explode().cast(pl.Float64) * 1000, p)
            else:
                pcts[k] = _pct(okr[k], p)
        pct_margin = _pct_margin(slo, pcts)
        if slo.attainment is not None:
            assert att is not None
            margin = att - slo.attainment
            meets = margin >= 0
            why = f"{good} of {sent} requests meet every limit: attainment {att:.1%} vs target {slo.attainment:.0%}"
        else:
            margin = pct_margin
            meets = None if margin is None else margin >= 0
            why = _pct_why(slo, pcts, "per-request records")
        return RunSlo(True, sent, good, att, rg, tg, pcts, "per-request records", meets, margin, why)
    pcts = {k: _file_pct(run, k, p) for k in slo.limits}
    src = "the file's summary" if any(v is not None for v in pcts.values()) else "not available"
    margin = _pct_margin(slo, pcts)
    if slo.percentile is not None:
        meets = None if margin is None else margin >= 0
        why = f"attainment unknown ({why_not}); " + _pct_why(slo, pcts, "the file's summary")
    else:
        missing = [NAMES[k] for k, v in pcts.items() if v is None]
        over = [NAMES[k] for k, v in pcts.items() if v is not None and v > slo.limits[k]]
        if over:
            meets = False
            why = (
                f"attainment unknown ({why_not}), but P{p:g} {', '.join(over)} exceed{'s' if len(over) == 1 else ''} "
                f"the limit: more than {1 - slo.attainment:.0%} of requests miss it"  # type: ignore[operator]
            )
        else:
            meets, margin = None, None
            why = f"cannot tell: attainment unknown ({why_not}); " + (
                f"the file has no P{p:g} for {', '.join(missing)}"
                if missing
                else f"each P{p:g} is within its limit, but the limits must hold together for one request"
            )
    return RunSlo(False, None, None, None, None, None, pcts, src, meets, margin, why)


def _pct_margin(slo: Slo, pcts: Mapping[str, float | None]) -> float | None:
    if any(v is None for v in pcts.values()):
        return None
    return min((slo.limits[k] - v) / slo.limits[k] for k, v in pcts.items())  # type: ignore[operator]


def _pct_why(slo: Slo, pcts: Mapping[str, float | None], src: str) -> str:
    p = slo.target_pct
    parts = [
        f"P{p:g} {NAMES[k]} "
        + ("not recorded" if v is None else f"{v:.1f} ms {'≤' if v <= slo.limits[k] else '>'} {slo.limits[k]:g}")
        for k, v in pcts.items()
    ]
    return f"from {src}: " + ", ".join(parts)


@dataclass(frozen=True)
class HighestLoad:
    """The highest load of a sweep meeting the SLO."""

    status: str  # "every" | "none" | "interpolated" | "cannot tell"
    achieved_req_s: float | None  # interpolated achieved request rate (or the highest point's)
    offered: float | None  # interpolated offered load, when both bracketing points have a finite one
    between: tuple[str, str] | None  # (last passing, first failing) point labels
    text: str


def highest_load(points: Sequence[tuple[str, float | None, float | None, RunSlo]], axis: str) -> HighestLoad:
    """``points``: (label, offered load, achieved req/s, RunSlo) in increasing load.

    Interpolates linearly, in the achieved request rate (always finite; an offered ``inf`` is not a
    point on a line), between the last point meeting the SLO and the first missing it, at the load
    where the margin (attainment − target, or the tightest percentile's headroom) crosses zero."""
    states = [pt[3].meets for pt in points]
    if not points:
        return HighestLoad("cannot tell", None, None, None, "no points")
    if all(s is True for s in states):
        lab, off, ach, _ = points[-1]
        return HighestLoad("every", ach, off, None, f"met at every load tested (up to {axis} {lab})")
    if all(s is False for s in states):
        return HighestLoad("none", None, None, None, f"met at none of the loads tested (from {axis} {points[0][0]})")
    first_fail = next((i for i, s in enumerate(states) if s is False), None)
    if first_fail is None or first_fail == 0 or states[first_fail - 1] is not True:
        return HighestLoad(
            "cannot tell", None, None, None, "cannot tell: some points could not be judged against the SLO"
        )
    (l0, o0, a0, s0), (l1, o1, a1, s1) = points[first_fail - 1], points[first_fail]
    later = [pt[0] for pt, s in zip(points[first_fail + 1 :], states[first_fail + 1 :]) if s is True]
    if s0.margin is None or s1.margin is None or a0 is None or a1 is None:
        return HighestLoad(
            "cannot tell", a0, o0, (l0, l1), f"met at {axis} {l0}, missed at {l1}; no margin to interpolate"
        )
    frac = s0.margin / (s0.margin - s1.margin) if s0.margin != s1.margin else 0.0
    ach = a0 + (a1 - a0) * frac
    off = (
        o0 + (o1 - o0) * frac if o0 is not None and o1 is not None and math.isfinite(o0) and math.isfinite(o1) else None
    )
    text = (
        f"≈ {ach:.3g} req/s achieved"
        + (f" (offered {axis} ≈ {off:.3g})" if off is not None else "")
        + f", interpolated between {axis} {l0} (met) and {l1} (missed)"
    )
    if later:
        text += f"; met again at {', '.join(later)}: not monotonic, read the points"
    return HighestLoad("interpolated", ach, off, (l0, l1), text)
