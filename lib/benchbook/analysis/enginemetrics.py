"""Engine `/metrics` figures per series: counters, gauges and histograms, in one scrape or over a window.

Every quantity is looked up through an :class:`~benchbook.metrics.profiles.EngineProfile`, so the same code
reads vLLM, SGLang, TGI or pocket. Series that differ in any label (``model_name``, ``engine`` /
``dp_rank``, ``tp_rank`` …) are **kept apart**: results are dicts keyed by the label set. The only
labels ever added up are the ones a profile names on purpose (``MetricRef.sum_label``, e.g. vLLM's
``finished_reason``).

Histograms give count, sum, mean and quantiles. Quantiles are **bucket-interpolated exactly as
Prometheus' ``histogram_quantile``**: rank = q × count; find the first bucket whose cumulative count
reaches the rank; interpolate *linearly within that bucket* between its lower bound (the previous
``le``, 0 for the first bucket) and its upper bound. A rank that falls in the ``+Inf`` bucket
returns the highest finite bound. This assumes observations are spread evenly inside a bucket, so a
quantile is only as fine as the bucket layout.

A window is a before/after pair of scrapes: every counter and histogram is ``after − before``. A
counter (or histogram count/sum/bucket) that went down is a **reset** (engine restarted inside the
window): it is reported, and no delta is given for it — never a negative one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from benchbook import findings
from benchbook.analysis.reconcile import figure_check
from benchbook.errors import InputError
from benchbook.metrics.profiles import EngineProfile, MetricRef, detect_profile
from benchbook.metrics.prometheus import LabelKey, Snapshot

INTERPOLATION = (
    "linear within the bucket, as Prometheus histogram_quantile: lower bound = previous le (0 for the "
    "first bucket); a rank in the +Inf bucket returns the highest finite bound"
)


def fmt_labels(key: LabelKey) -> str:
    return "{" + ",".join(f'{k}="{v}"' for k, v in key) + "}" if key else "{}"


def _select(snap: Snapshot, ref: MetricRef, name: str, drop: tuple[str, ...] = ()) -> dict[LabelKey, float]:
    """Series of sample ``name`` matching ``ref.labels``, keyed by their labels minus ``drop``; series
    that differ only in ``ref.sum_label`` (restricted to ``ref.sum_values``) are added up."""
    out: dict[LabelKey, float] = {}
    for key, v in snap.match(name, ref.label_dict).items():
        d = dict(key)
        if ref.sum_label is not None:
            if d.get(ref.sum_label) not in ref.sum_values:
                continue
            del d[ref.sum_label]
        for k in drop:
            d.pop(k, None)
        k2 = tuple(sorted(d.items()))
        if ref.sum_label is None and k2 in out:
            raise InputError(snap.source, name, f"two series with labels {fmt_labels(k2)}")
        out[k2] = out.get(k2, 0.0) + v
    return out


def values(snap: Snapshot, profile: EngineProfile, quantity: str) -> dict[LabelKey, float]:
    """A counter or gauge quantity in one scrape, one value per label set."""
    ref = profile.ref(quantity)
    if ref.kind == "histogram":
        raise InputError(snap.source, quantity, "is a histogram; use histogram()")
    return _select(snap, ref, ref.name)


# ---------------------------------------------------------------------------------------- histograms


@dataclass(frozen=True)
class Histogram:
    """One histogram series (one scrape, or a window's delta)."""

    quantity: str
    labels: LabelKey
    count: float
    sum: float
    buckets: tuple[tuple[float, float], ...]  # (le, cumulative count), sorted, last le = +Inf

    @property
    def mean(self) -> float | None:
        return self.sum / self.count if self.count else None

    def quantile(self, q: float) -> float | None:
        return quantile(q, self.buckets)


def quantile(q: float, buckets: tuple[tuple[float, float], ...] | list[tuple[float, float]]) -> float | None:
    """``histogram_quantile(q)`` over cumulative ``(le, count)`` buckets; None when there are no
    observations. See :data:`INTERPOLATION`."""
    if not 0 <= q <= 1:
        raise InputError(None, "quantile", f"q must be within 0–1, got {q}")
    b = sorted(buckets)
    if not b or not math.isinf(b[-1][0]):
        raise InputError(None, "buckets", "a histogram needs a +Inf bucket")
    total = b[-1][1]
    if total <= 0:
        return None
    rank = q * total
    for i, (le, c) in enumerate(b):
        if c >= rank:
            if math.isinf(le):
                return b[i - 1][0] if i > 0 else None
            lo, prev = (b[i - 1][0], b[i - 1][1]) if i > 0 else (0.0, 0.0)
            if i == 0 and le <= 0:
                return le
            if c == prev:
                return le
            return lo + (le - lo) * (rank - prev) / (c - prev)
    return b[-2][0] if len(b) > 1 else None  # pragma: no cover - last bucket always reaches the total


def histogram(snap: Snapshot, profile: EngineProfile, quantity: str) -> dict[LabelKey, Histogram]:
    """Every series of a histogram quantity in one scrape."""
    ref = profile.ref(quantity)
    if ref.kind != "histogram":
        raise InputError(snap.source, quantity, f"is a {ref.kind}, not a histogram")
    counts = _select(snap, ref, ref.name + "_count")
    sums = _select(snap, ref, ref.name + "_sum")
    out: dict[LabelKey, Histogram] = {}
    for key, n in counts.items():
        bk: list[tuple[float, float]] = []
        for bkey, c in snap.match(ref.name + "_bucket", ref.label_dict).items():
            d = dict(bkey)
            le = d.pop("le", None)
            if le is not None and tuple(sorted(d.items())) == key:
                bk.append((float(le), c))
        out[key] = Histogram(quantity, key, n, sums.get(key, math.nan), tuple(sorted(bk)))
    return out


# -------------------------------------------------------------------------------------------- windows


@dataclass(frozen=True)
class CounterDelta:
    quantity: str
    labels: LabelKey
    before: float | None
    after: float | None

    @property
    def reset(self) -> bool:
        return self.before is not None and self.after is not None and self.after < self.before

    @property
    def value(self) -> float | None:
        """after − before; None when a side is missing or the counter was reset (never negative)."""
        if self.before is None or self.after is None or self.reset:
            return None
        return self.after - self.before


@dataclass(frozen=True)
class HistogramDelta:
    quantity: str
    labels: LabelKey
    delta: Histogram | None  # None: reset or missing
    reset: bool
    missing: bool


def counter_delta(
    before: Snapshot, after: Snapshot, profile: EngineProfile, quantity: str
) -> dict[LabelKey, CounterDelta]:
    b, a = values(before, profile, quantity), values(after, profile, quantity)
    return {k: CounterDelta(quantity, k, b.get(k), a.get(k)) for k in sorted(set(b) | set(a))}


def histogram_delta(
    before: Snapshot, after: Snapshot, profile: EngineProfile, quantity: str
) -> dict[LabelKey, HistogramDelta]:
    """after − before of every series of a histogram; a series whose count, sum or any bucket went
    down is a reset (``delta`` None)."""
    hb, ha = histogram(before, profile, quantity), histogram(after, profile, quantity)
    out: dict[LabelKey, HistogramDelta] = {}
    for k in sorted(set(hb) | set(ha)):
        x, y = hb.get(k), ha.get(k)
        if x is None or y is None:
            out[k] = HistogramDelta(quantity, k, None, False, True)
            continue
        bx = dict(x.buckets)
        went_down = y.count < x.count or y.sum < x.sum or any(c < bx.get(le, 0.0) for le, c in y.buckets)
        if went_down or set(bx) != {le for le, _ in y.buckets}:
            out[k] = HistogramDelta(quantity, k, None, went_down, not went_down)
            continue
        d = Histogram(quantity, k, y.count - x.count, y.sum - x.sum, tuple((le, c - bx[le]) for le, c in y.buckets))
        out[k] = HistogramDelta(quantity, k, d, False, False)
    return out


HISTOGRAMS = ("ttft", "e2e", "queue", "prefill", "decode", "itl")
COUNTERS = ("requests_success", "requests_aborted", "requests_error", "prompt_tokens", "generation_tokens")
GAUGES = ("running", "waiting", "kv_cache_usage")


@dataclass
class MetricsWindow:
    """Engine figures over a before/after window, per label set."""

    profile: EngineProfile
    before: Snapshot
    after: Snapshot
    counters: dict[str, dict[LabelKey, CounterDelta]] = field(default_factory=dict)
    histograms: dict[str, dict[LabelKey, HistogramDelta]] = field(default_factory=dict)
    gauges_after: dict[str, dict[LabelKey, float]] = field(default_factory=dict)
    checks: list[findings.Check] = field(default_factory=list)

    @property
    def series(self) -> list[LabelKey]:
        keys: set[LabelKey] = set()
        for d in (*self.counters.values(), *self.histograms.values()):
            keys |= set(d)
        return sorted(keys)

    def rows(self, quantiles: tuple[float, ...] = (0.5, 0.9, 0.99)) -> list[dict[str, Any]]:
        """One row per (quantity, series): delta or count/sum/mean/quantiles, reset flag."""
        out: list[dict[str, Any]] = []
        for q, per in self.counters.items():
            for k, d in per.items():
                out.append(
                    {"quantity": q, "series": fmt_labels(k), "kind": "counter", "delta": d.value, "reset": d.reset}
                )
        for q, per in self.histograms.items():
            for k, hd in per.items():
                h = hd.delta
                row: dict[str, Any] = {
                    "quantity": q,
                    "series": fmt_labels(k),
                    "kind": "histogram",
                    "reset": hd.reset,
                    "count": None if h is None else h.count,
                    "sum": None if h is None else h.sum,
                    "mean": None if h is None else h.mean,
                }
                for p in quantiles:
                    row[f"p{round(p * 100):g}"] = None if h is None else h.quantile(p)
                out.append(row)
        for q, per in self.gauges_after.items():
            for k, v in per.items():
                out.append({"quantity": q, "series": fmt_labels(k), "kind": "gauge (at end)", "value": v})
        return out

    def engine(self, labels: LabelKey | None = None) -> dict[str, float]:
        """The dict :func:`benchbook.analysis.reconcile.reconcile` takes, for one series. ``labels`` may be
        omitted when the window holds a single series; several series are never added up."""
        keys = self.series
        if labels is None:
            if len(keys) != 1:
                raise InputError(
                    self.after.source,
                    "-",
                    f"{len(keys)} series ({', '.join(fmt_labels(k) for k in keys[:4])}); name one",
                )
            labels = keys[0]
        out: dict[str, float] = {}
        g = self.counters.get("generation_tokens", {}).get(labels)
        if g is not None and g.value is not None:
            out["generation_tokens"] = g.value
        s = self.counters.get("requests_success", {}).get(labels)
        if s is not None and s.value is not None:
            out["successes"] = s.value
        for q in ("ttft", "e2e"):
            hd = self.histograms.get(q, {}).get(labels)
            if hd is not None and hd.delta is not None:
                out[f"{q}_sum"], out[f"{q}_count"] = hd.delta.sum, hd.delta.count
        return out


def window(before: Snapshot, after: Snapshot, profile: EngineProfile | None = None) -> MetricsWindow:
    """Deltas of every counter and histogram the profile maps, gauges at the end, and the checks."""
    profile = profile or detect_profile(after)
    w = MetricsWindow(profile, before, after)
    for q in COUNTERS:
        if profile.has(q):
            w.counters[q] = counter_delta(before, after, profile, q)
    for q in HISTOGRAMS:
        if profile.has(q):
            w.histograms[q] = histogram_delta(before, after, profile, q)
    for q in GAUGES:
        if profile.has(q):
            w.gauges_after[q] = values(after, profile, q)
    w.checks = window_checks(w)
    return w


def window_checks(w: MetricsWindow) -> list[findings.Check]:
    checks: list[findings.Check] = []
    for q, per in w.counters.items():
        for k, d in per.items():
            if d.reset:
                checks.append(
                    figure_check(
                        f"counter reset: {q}{fmt_labels(k)}",
                        "fail",
                        f"went down from {d.before:g} to {d.after:g}: the engine restarted inside the window; no delta reported",
                    )
                )
    for q, per in w.histograms.items():
        for k, hd in per.items():
            if hd.reset:
                checks.append(
                    figure_check(
                        f"counter reset: {q}{fmt_labels(k)}",
                        "fail",
                        "histogram count, sum or a bucket went down: the engine restarted inside the window; no delta reported",
                    )
                )
            elif hd.missing:
                checks.append(
                    figure_check(
                        f"series missing: {q}{fmt_labels(k)}",
                        "warn",
                        "present in only one scrape (or its buckets changed); no delta",
                    )
                )
    if len(w.series) > 1:
        checks.append(
            figure_check(
                "series kept apart",
                "pass",
                f"{len(w.series)} label sets ({', '.join(fmt_labels(k) for k in w.series[:4])}) are reported separately, never summed",
            )
        )
    for k in w.series:
        t = w.histograms.get("ttft", {}).get(k)
        e = w.histograms.get("e2e", {}).get(k)
        name = f"TTFT count vs E2E count{fmt_labels(k) if len(w.series) > 1 else ''}"
        if t is None or e is None or t.delta is None or e.delta is None:
            continue
        tc, ec = t.delta.count, e.delta.count
        run = w.gauges_after.get("running", {}).get(k)
        if tc == ec:
            checks.append(
                figure_check(
                    name,
                    "pass",
                    f"{tc:g} requests got a first token and {ec:g} finished in the window",
                    ec,
                    tc,
                    tc - ec,
                )
            )
        elif tc > ec:
            extra = f"; the running gauge reads {run:g} at the end of the window" if run is not None else ""
            checks.append(
                figure_check(
                    name,
                    "warn",
                    (
                        f"TTFT count {tc:g} vs E2E count {ec:g}: {tc - ec:g} requests had their first token but had not finished "
                        f"when the window closed (still in flight){extra}. Mean TTFT covers {tc:g} requests, mean E2E {ec:g}; "
                        "they describe different sets of requests"
                    ),
                    ec,
                    tc,
                    tc - ec,
                )
            )
        else:
            checks.append(
                figure_check(
                    name,
                    "warn",
                    (
                        f"TTFT count {tc:g} vs E2E count {ec:g}: {ec - tc:g} requests finished in the window whose first token came "
                        "before it opened (in flight at the first scrape)"
                    ),
                    ec,
                    tc,
                    tc - ec,
                )
            )
        s = w.counters.get("requests_success", {}).get(k)
        a = w.counters.get("requests_aborted", {}).get(k)
        er = w.counters.get("requests_error", {}).get(k)
        if s is not None and s.value is not None:
            fin = s.value + sum(x.value for x in (a, er) if x is not None and x.value is not None)
            nm = f"finished requests: E2E count vs request counters{fmt_labels(k) if len(w.series) > 1 else ''}"
            st = "pass" if fin == ec else "warn"
            checks.append(
                figure_check(
                    nm,
                    st,
                    f"E2E histogram counted {ec:g}, request counters {fin:g} (success {s.value:g})",
                    ec,
                    fin,
                    ec - fin,
                )
            )
    return checks
