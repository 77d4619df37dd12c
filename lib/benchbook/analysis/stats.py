"""Cell statistics, run-to-run spread, ratios and interval rates — the seed's arithmetic, written once.

Everything here is a pure function on plain Python sequences of floats (or, for ``spreads``, a small
polars frame). Nothing loads files. The verdict rules that use these numbers live in
:mod:`benchbook.analysis.verdict`; what each formula means for a reader is in ``docs/statistics.md``.

Replication unit: a *cell* is the samples of one metric in one configuration after warm-up rounds
are discarded (the phase harness's three repeats); the *spread* is measured between runs (server
processes) of the same arm. Per-request samples inside one run never count as n.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from benchbook.errors import InputError
from benchbook.numfmt import fmt_pct, fmt_ratio  # noqa: F401 - moved to the base layer; callers keep stats.fmt_pct

if TYPE_CHECKING:  # polars is only needed by ``spreads``
    import polars as pl

INTERVAL_RATE_LABEL = "interval rate, not a throughput"


def _finite(values: Sequence[float], what: str) -> list[float]:
    out = []
    for i, v in enumerate(values):
        try:
            f = float(v)
        except (TypeError, ValueError):
            raise InputError(None, f"{what}[{i}]", f"not a number: {v!r}") from None
        if not math.isfinite(f):
            raise InputError(None, f"{what}[{i}]", f"not a finite number: {v!r}")
        out.append(f)
    return out


@dataclass(frozen=True)
class Cell:
    """One table cell: the median with its [min–max] range over ``n`` samples.

    ``samples`` are the kept samples in their original order (warm-up rounds removed);
    ``discarded`` counts the warm-up rounds dropped. With n=3 the samples are exactly
    (min, median, max), which is why a seed table row is raw data in disguise.
    """

    median: float
    min: float
    max: float
    n: int
    samples: tuple[float, ...]
    discarded: int = 0

    @classmethod
    def from_range(cls, median: float, lo: float, hi: float, n: int = 3) -> Cell:
        """Rebuild a cell from a printed ``median (lo–hi)`` triple.

        For n=3 the samples are exactly (lo, median, hi); for n=1 lo = median = hi is required.
        Other n cannot be rebuilt from three numbers, so the samples hold just (lo, median, hi)
        as a summary and ``n`` records the real count.
        """
        med, lo_, hi_ = _finite([median, lo, hi], "cell")
        if not lo_ <= med <= hi_:
            raise InputError(None, "cell", f"median {med} is not inside its range {lo_}–{hi_}")
        if n < 1:
            raise InputError(None, "cell", f"n must be at least 1, got {n}")
        if n == 1:
            if not lo_ == med == hi_:
                raise InputError(None, "cell", "n=1 but min, median and max differ")
            return cls(med, med, med, 1, (med,))
        return cls(med, lo_, hi_, n, (lo_, med, hi_))

    @property
    def has_range(self) -> bool:
        """True when the cell has more than one sample, so its range means something."""
        return self.n >= 2

    @property
    def rel_width(self) -> float:
        """The cell's own range as a fraction of its minimum, ``(max − min) / min`` (0 when n=1).

        The same formula as the run-to-run spread, applied to the samples inside the cell.
        """
        return _rel_gap(self.min, self.max)

    def overlaps(self, other: Cell) -> bool:
        """Closed-interval overlap: ranges that touch at one point overlap."""
        return self.min <= other.max and other.min <= self.max

    def scaled(self, factor: float) -> Cell:
        """The same cell with every sample multiplied by ``factor`` (> 0); for unit changes."""
        if not factor > 0:
            raise InputError(None, "scale", f"factor must be positive, got {factor}")
        return Cell(
            self.median * factor,
            self.min * factor,
            self.max * factor,
            self.n,
            tuple(s * factor for s in self.samples),
            self.discarded,
        )

    def fmt(self, digits: int = 3) -> str:
        """``5.248 (5.205–5.371)`` as the seed prints it; a bare median when n=1."""
        if self.n == 1:
            return fmt_fixed(self.median, digits)
        return f"{fmt_fixed(self.median, digits)} ({fmt_fixed(self.min, digits)}–{fmt_fixed(self.max, digits)})"


def fmt_fixed(v: float, digits: int = 3) -> str:
    """``v`` with ``digits`` decimals — unless that would show a non-zero value as zero (a denormal
    latency as ``0.000``): then two significant digits (``4.9e-324``)."""
    out = f"{v:.{digits}f}"
    if v != 0 and math.isfinite(v) and float(out) == 0:
        return f"{v:.2g}"
    return out


def cell(
    values: Sequence[float],
    *,
    discard: int = 0,
    warmup: Sequence[bool] | None = None,
    what: str = "samples",
) -> Cell:
    """Median, min, max and n of ``values`` after discarding warm-up rounds.

    ``values`` are in measurement order. Either drop the first ``discard`` of them (the harness's
    ``--warmup-rounds``) or pass ``warmup`` flags of the same length (``phases.json``'s ``warmup``);
    not both. Raises :class:`InputError` if nothing is left or a value is not finite.
    """
    vals = _finite(values, what)
    if warmup is not None:
        if discard:
            raise InputError(None, what, "pass either discard= or warmup= flags, not both")
        if len(warmup) != len(vals):
            raise InputError(None, what, f"{len(warmup)} warm-up flags for {len(vals)} samples")
        kept = [v for v, w in zip(vals, warmup) if not w]
        dropped = len(vals) - len(kept)
    else:
        if discard < 0:
            raise InputError(None, what, f"cannot discard {discard} warm-up rounds")
        kept = vals[discard:]
        dropped = len(vals) - len(kept)
    if not kept:
        raise InputError(None, what, f"no samples left after discarding {dropped} warm-up round(s)")
    return Cell(
        median=statistics.median(kept),
        min=min(kept),
        max=max(kept),
        n=len(kept),
        samples=tuple(kept),
        discarded=dropped,
    )


def _rel_gap(a: float, b: float) -> float:
    """``(larger − smaller) / smaller``; 0 for equal values; inf if the smaller one is ≤ 0."""
    lo, hi = (a, b) if a <= b else (b, a)
    if hi == lo:
        return 0.0
    if lo <= 0:
        return math.inf
    return (hi - lo) / lo


def rel_diff(a: float, b: float) -> float:
    """Symmetric relative difference ``max(a, b) / min(a, b) − 1`` = ``(max − min) / min``.

    The spread's own formula applied to two numbers; it does not depend on which is the baseline,
    which is what makes verdicts symmetric. Needs positive values (inf otherwise).
    """
    return _rel_gap(float(a), float(b))


def run_spread(values: Sequence[float], what: str = "runs") -> float:
    """Run-to-run spread ``(max − min) / min`` of one metric over runs of the same arm.

    ``values`` holds one figure per run (server process) of one arm, e.g. the tuned and tuned2
    single-request rates 3.430 and 3.686 → 0.0746 (printed 7.5%). Needs at least two runs and
    positive values.
    """
    vals = _finite(values, what)
    if len(vals) < 2:
        raise InputError(None, what, f"a run-to-run spread needs at least two runs of the same arm, got {len(vals)}")
    if min(vals) <= 0:
        raise InputError(None, what, f"spread needs positive values, got min {min(vals)}")
    return (max(vals) - min(vals)) / min(vals)


def spreads(
    frame: pl.DataFrame,
    *,
    arm: str = "arm",
    run: str = "run",
    metric: str = "metric",
    value: str = "value",
) -> pl.DataFrame:
    """Run-to-run spread per (arm, metric) from a long frame with one row per (arm, run, metric).

    Returns columns ``arm, metric, runs, min, max, spread`` sorted by arm then metric; arms with a
    single run get ``spread`` null (nothing to measure), never 0.
    """
    import polars as pl

    missing = [c for c in (arm, run, metric, value) if c not in frame.columns]
    if missing:
        raise InputError(None, "spreads", f"frame lacks column(s) {', '.join(missing)}")
    if frame.height and frame[value].min() <= 0:
        raise InputError(None, "spreads", "spread needs positive values")
    out = (
        frame.group_by([arm, metric])
        .agg(
            pl.col(run).n_unique().alias("runs"),
            pl.col(value).min().alias("min"),
            pl.col(value).max().alias("max"),
        )
        .with_columns(
            pl.when(pl.col("runs") >= 2)
            .then((pl.col("max") - pl.col("min")) / pl.col("min"))
            .otherwise(None)
            .alias("spread")
        )
        .rename({arm: "arm", metric: "metric"})
        .sort(["arm", "metric"])
    )
    return out


def ratio(candidate: float, baseline: float) -> float:
    """``candidate / baseline`` (baseline must be non-zero)."""
    if baseline == 0:
        raise InputError(None, "ratio", "baseline is zero; a ratio is undefined")
    return candidate / baseline


def change(candidate: float, baseline: float) -> float:
    """Signed relative change ``(candidate − baseline) / baseline`` as a fraction (0.065 = +6.5%)."""
    return ratio(candidate, baseline) - 1.0


@dataclass(frozen=True)
class IntervalRate:
    """``(ptok₂ − ptok₁) / (t₂ − t₁)`` between two prompt lengths — never a throughput."""

    tokens_from: float
    tokens_to: float
    seconds_from: float
    seconds_to: float
    value: float
    label: str = INTERVAL_RATE_LABEL

    def describe(self) -> str:
        return (
            f"{self.value:.0f} tok/s over the {self.tokens_from:g} → {self.tokens_to:g} token "
            f"interval ({self.label}: the interval contains the fixed per-request cost)"
        )


def interval_rate(ptok1: float, t1: float, ptok2: float, t2: float) -> IntervalRate:
    """Marginal rate between two (prompt tokens, seconds) points, labelled as an interval rate.

    Seed: 120 tokens at 2.699 s and 1446 tokens at 5.139 s → 1326 / 2.440 = 543 tok/s.
    """
    p1, s1, p2, s2 = _finite([ptok1, t1, ptok2, t2], "interval")
    if p2 == p1:
        raise InputError(None, "interval", "the two prompt lengths are equal; no interval")
    if s2 == s1:
        raise InputError(None, "interval", "the two times are equal; the rate is undefined")
    if (p1, s1) > (p2, s2):
        p1, s1, p2, s2 = p2, s2, p1, s1
    return IntervalRate(p1, p2, s1, s2, (p2 - p1) / (s2 - s1))


# --- what n=3 allows -------------------------------------------------------------------------


def min_mannwhitney_p(n1: int, n2: int) -> float:
    """Smallest two-sided exact Mann–Whitney p-value reachable with n1 vs n2 samples.

    Complete separation is the most extreme outcome; it has probability 1 / C(n1+n2, n1) per tail,
    so the two-sided minimum is ``2 / C(n1+n2, n1)``: 0.10 at 3 vs 3, 0.33 at 2 vs 2. No rank test
    on 3 vs 3 can reach p < 0.05, whatever the data.
    """
    if n1 < 1 or n2 < 1:
        raise InputError(None, "mannwhitney", f"sample sizes must be ≥ 1, got {n1} and {n2}")
    return min(1.0, 2 / math.comb(n1 + n2, n1))


def pairwise_interval_coverage(n1: int, n2: int) -> float:
    """Coverage of the [min, max] of the n1 × n2 pairwise differences as an interval for a shift.

    The interval misses the true shift only when every difference lies on one side of it, i.e. when
    one sample lies wholly above the other after the shift: under the shift model each of the two
    orders has probability 1 / C(n1+n2, n1), so the coverage is ``1 − 2 / C(n1+n2, n1)``
    (3 vs 3: 1 − 2/20 = 90 %; 4 vs 4: 97.1 %; 1 vs 1: 0)."""
    if n1 < 1 or n2 < 1:
        raise InputError(None, "pairwise", f"sample sizes must be ≥ 1, got {n1} and {n2}")
    return 1.0 - 2 / math.comb(n1 + n2, n1)


def design_note(n1: int, n2: int) -> str:
    """What a design of n1 vs n2 runs can support, in one sentence: the smallest two-sided p-value
    any data can give (instead of quoting a p-value that cannot mean what it seems to) and the
    coverage of the pairwise-difference interval.

    3 vs 3: "With 3 vs 3 runs the smallest two-sided p-value any data can give is 0.10 — no rank test
    can reach p < 0.10 (≥ 4 runs per side can); the [min, max] of the 9 pairwise differences covers
    the true shift with 90 % probability." """
    p = min_mannwhitney_p(n1, n2)
    need = next(k for k in range(1, 50) if min_mannwhitney_p(k, k) < 0.10)
    reach = (
        f"no rank test can reach p < 0.10 (≥ {need} runs per side can)"
        if p >= 0.10
        else "so a rank test can reach p < 0.10"
        + (
            ""
            if p < 0.05
            else f", not p < 0.05 (≥ {next(k for k in range(1, 50) if min_mannwhitney_p(k, k) < 0.05)} per side can)"
        )
    )
    cov = pairwise_interval_coverage(n1, n2)
    ival = (
        "one run per side gives a single difference and no interval"
        if n1 * n2 == 1
        else f"the [min, max] of the {n1 * n2} pairwise differences covers the true shift with {cov * 100:.0f} % probability"
    )
    shown = f"{p:.2f}" if p >= 0.01 else f"{p:.4f}"
    return f"With {n1} vs {n2} runs the smallest two-sided p-value any data can give is {shown} — {reach}; {ival}."


def hodges_lehmann(a: Sequence[float], b: Sequence[float]) -> tuple[float, float, float]:
    """Hodges–Lehmann shift of ``b`` against ``a`` with the distribution-free [min, max] interval:
    (median, min, max) of the pairwise differences ``b_j − a_i``."""
    x, y = _finite(a, "hodges_lehmann.a"), _finite(b, "hodges_lehmann.b")
    if not x or not y:
        raise InputError(None, "hodges_lehmann", "both sides need at least one value")
    d = sorted(yj - xi for xi in x for yj in y)
    return statistics.median(d), d[0], d[-1]


def bootstrap_median_distribution(n: int) -> list[Fraction]:
    """Exact distribution of the bootstrap median's rank for a sample of ``n`` distinct values.

    Entry k is P(median of a size-n resample = the (k+1)-th smallest sample), for odd ``n``.
    For n=3: [7/27, 13/27, 7/27].
    """
    if n < 1 or n % 2 == 0:
        raise InputError(None, "bootstrap", f"exact median distribution is for odd n, got {n}")
    need = n // 2 + 1  # the median is ≤ x_(k) iff at least `need` draws are ≤ x_(k)

    def cdf(k: int) -> Fraction:  # P(median ≤ x_(k)), k = 1..n
        p = Fraction(k, n)
        return sum((math.comb(n, j) * p**j * (1 - p) ** (n - j) for j in range(need, n + 1)), Fraction(0))

    cdfs = [Fraction(0)] + [cdf(k) for k in range(1, n + 1)]
    return [cdfs[k] - cdfs[k - 1] for k in range(1, n + 1)]


def bootstrap_median_ci(samples: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """Exact percentile-bootstrap CI of the median of an odd number of samples.

    Computed from :func:`bootstrap_median_distribution` rather than by resampling, so it is
    deterministic. For three samples it is always [min, max]: each tail carries 7/27 ≈ 26% of the
    bootstrap mass, so any level above ~48% reaches the extremes. Printing it as a "95% CI" would
    only restate the range.
    """
    vals = sorted(_finite(samples, "bootstrap"))
    probs = bootstrap_median_distribution(len(vals))
    tail = Fraction(1) - Fraction(level).limit_denominator(10**6)
    alpha = tail / 2
    acc, lo_i = Fraction(0), 0
    for i, p in enumerate(probs):
        acc += p
        if acc > alpha:
            lo_i = i
            break
    acc, hi_i = Fraction(0), len(vals) - 1
    for i in range(len(vals) - 1, -1, -1):
        acc += probs[i]
        if acc > alpha:
            hi_i = i
            break
    return vals[lo_i], vals[hi_i]


def small_n_notes(n_per_side: int = 3) -> list[str]:
    """Sentences for a page's "How to read this page" block on what n per side allows."""
    p = min_mannwhitney_p(n_per_side, n_per_side)
    notes = [
        f"Each cell is the median of n={n_per_side} samples after the warm-up rounds are discarded; "
        "the brackets are the min and max of those samples"
        + (" (with three samples, the three samples themselves)." if n_per_side == 3 else "."),
        "Runs (server processes) are the unit of replication; requests inside one run never count as n.",
        f"No p-value is printed: at {n_per_side} vs {n_per_side} the smallest two-sided Mann–Whitney "
        f"p-value any data can give is {p:.2f}" + (", so no rank test can reach p < 0.05." if p >= 0.05 else "."),
    ]
    if n_per_side % 2 == 1 and n_per_side <= 3:
        notes.append(
            f"A bootstrap confidence interval of a median of {n_per_side} is just [min, max], "
            "so it is not printed separately from the range."
        )
    return notes


# --- what n >= 5 allows ------------------------------------------------------------------------

#: repeats per side from which a rank test and a bootstrap interval are given
MIN_N_FOR_TEST = 5
BOOTSTRAP_RESAMPLES = 10_000
BOOTSTRAP_SEED = 20240613


def mannwhitney_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided Mann–Whitney U p-value between two sets of run-level figures (scipy; exact when
    there are no ties, the normal approximation with tie correction otherwise)."""
    from scipy.stats import mannwhitneyu

    x, y = _finite(a, "mannwhitney.a"), _finite(b, "mannwhitney.b")
    if not x or not y:
        raise InputError(None, "mannwhitney", "both sides need at least one value")
    ties = len(set(x) | set(y)) < len(x) + len(y)
    res = mannwhitneyu(x, y, alternative="two-sided", method="asymptotic" if ties else "exact")
    return float(res.pvalue)


def bootstrap_ratio_ci(
    baseline: Sequence[float],
    candidate: Sequence[float],
    level: float = 0.95,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, float]:
    """Percentile-bootstrap interval of median(candidate) / median(baseline), resampling runs within
    each side independently. A fixed seed keeps a page's numbers the same from render to render, and
    the sides are resampled in a canonical order with order-statistic bounds, so swapping them gives
    exactly the reciprocal interval (a verdict never depends on which side is the baseline)."""
    import numpy as np

    bx, cy = _finite(baseline, "bootstrap.baseline"), _finite(candidate, "bootstrap.candidate")
    if not bx or not cy or min(bx) <= 0 or min(cy) <= 0:
        raise InputError(None, "bootstrap", "both sides need positive values")
    if (len(cy), sorted(cy)) < (len(bx), sorted(bx)):
        lo, hi = bootstrap_ratio_ci(cy, bx, level, resamples, seed)
        return 1 / hi, 1 / lo
    x, y = np.sort(np.asarray(bx)), np.sort(np.asarray(cy))  # the interval depends on the values, not their order
    rng = np.random.default_rng(seed)
    mx = np.median(x[rng.integers(0, x.size, (resamples, x.size))], axis=1)
    my = np.median(y[rng.integers(0, y.size, (resamples, y.size))], axis=1)
    r = np.sort(my / mx)
    k = int((1 - level) / 2 * resamples)
    lo, hi = float(r[k]), float(r[resamples - 1 - k])
    if x.size == y.size and np.array_equal(x, y):  # the same values on both sides: no canonical order, so the
        lo, hi = min(lo, 1 / hi), max(hi, 1 / lo)  # interval is made closed under swapping (1/hi, 1/lo)
    return lo, hi
