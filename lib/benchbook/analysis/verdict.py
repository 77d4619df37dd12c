"""Noise-aware comparisons: ratio, signed change and a verdict that says why.

Two rules (``docs/statistics.md`` is the reader's version):

``seed`` (default) — a RESULT only when the two cells' [min–max] ranges do not overlap AND the
difference exceeds the measured run-to-run spread for that metric. Otherwise "within noise — not a
result", naming the condition(s) that failed. With n=1 on either side there is no range, so only
the spread test applies and the reason says so.

``strict`` — a noise band ``max(2%, 2 × spread)``; marks ``✓`` result, ``~`` within band, ``?``
ranges overlap although the difference is beyond the band, ``unstable`` when either side's own range
is wider than the band (checked first).

The *difference* tested against the spread/band is symmetric: ``max(a, b) / min(a, b) − 1`` between
the two medians, the spread's own formula. It equals |change| when the candidate is higher and is
slightly larger than |change| when it is lower; either way swapping the arms never changes whether a
comparison is a result. The signed ``change`` shown to readers is relative to the baseline.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from benchbook.analysis.stats import Cell, fmt_pct, fmt_ratio, rel_diff
from benchbook.errors import InputError

Rule = Literal["seed", "strict"]
RULES: tuple[str, ...] = ("seed", "strict")

NOT_A_RESULT = "within noise — not a result"

# How each rule reads on a page ("How to read this page").
RULE_TEXT: dict[str, str] = {
    "seed": (
        "a difference is a result only when the [min–max] ranges do not overlap AND it exceeds the "
        "run-to-run spread measured between two identical runs; otherwise it is within noise — not a result"
    ),
    "strict": (
        "strict: a noise band of max(2 %, 2 × the measured spread); a result needs disjoint ranges and a "
        "difference beyond the band; a side whose own range is wider than the band is unstable"
    ),
}

STRICT_MIN_BAND = 0.02

MARKS = {
    "✓": "result: ranges disjoint and the difference exceeds the noise threshold",
    "~": "within noise: the difference is inside the threshold",
    "?": "ranges overlap although the difference exceeds the band (strict rule only)",
    "unstable": "one side's own min–max range is wider than the band (strict rule only)",
}


def noise_band(spread: float) -> float:
    """The strict rule's band: ``max(2%, 2 × spread)`` (spread 7.46% → 14.9%)."""
    return max(STRICT_MIN_BAND, 2 * spread)


@dataclass(frozen=True)
class Comparison:
    """Candidate vs baseline for one metric, with the verdict and its reason.

    ``ratio`` is candidate/baseline; ``speedup`` is the same ratio oriented so > 1 is better
    (candidate/baseline for rates, baseline/candidate for latencies — the seed's "batched / serial"
    row); ``change`` is (candidate − baseline)/baseline; ``difference`` the symmetric gap the
    threshold is tested on.
    """

    baseline: Cell
    candidate: Cell
    higher_is_better: bool
    rule: str
    spread: float
    threshold: float  # the spread (seed) or the band (strict)
    ratio: float
    speedup: float
    change: float
    difference: float
    overlap: bool | None  # None when a side has n=1 (no range)
    is_result: bool
    mark: str
    direction: str  # "improvement" | "regression" | "no change"
    reason: str

    @property
    def verdict(self) -> str:
        """``result (improvement)`` / ``result (regression)`` / ``within noise — not a result``."""
        return f"result ({self.direction})" if self.is_result else NOT_A_RESULT

    def describe(self) -> str:
        """One line: ``1.48x (+47.7%) ✓ result (improvement): <reason>``."""
        return (
            f"{fmt_ratio(self.speedup)} ({fmt_pct(self.change, signed=True)}) {self.mark} {self.verdict}: {self.reason}"
        )


def _check_positive(c: Cell, side: str) -> None:
    if not c.min > 0:
        raise InputError(None, side, f"verdicts need positive values (rates or seconds), got min {c.min}")


def compare(
    baseline: Cell,
    candidate: Cell,
    *,
    spread: float,
    higher_is_better: bool = True,
    rule: Rule = "seed",
) -> Comparison:
    """Compare ``candidate`` against ``baseline`` for one metric.

    ``spread`` is the measured run-to-run spread for this metric as a fraction (0.0746), from
    :func:`benchbook.analysis.stats.run_spread`. ``higher_is_better`` is True for rates (tok/s), False for
    latencies (seconds). Cells must be positive.
    """
    if rule not in RULES:
        raise InputError(None, "rule", f"unknown noise rule {rule!r}; expected one of {', '.join(RULES)}")
    if not spread >= 0:
        raise InputError(None, "spread", f"spread must be a non-negative fraction, got {spread}")
    _check_positive(baseline, "baseline")
    _check_positive(candidate, "candidate")

    b, c = baseline.median, candidate.median
    ratio_ = c / b
    change_ = ratio_ - 1.0
    speedup = ratio_ if higher_is_better else b / c
    diff = rel_diff(b, c)
    if c == b:
        direction = "no change"
    elif (c > b) == higher_is_better:
        direction = "improvement"
    else:
        direction = "regression"
    ranged = baseline.has_range and candidate.has_range
    overlap = baseline.overlaps(candidate) if ranged else None

    if rule == "seed":
        threshold = spread
        mark, is_result, reason = _seed(diff, spread, overlap, baseline, candidate)
    else:
        threshold = noise_band(spread)
        mark, is_result, reason = _strict(diff, spread, threshold, overlap, baseline, candidate)

    return Comparison(
        baseline=baseline,
        candidate=candidate,
        higher_is_better=higher_is_better,
        rule=rule,
        spread=spread,
        threshold=threshold,
        ratio=ratio_,
        speedup=speedup,
        change=change_,
        difference=diff,
        overlap=overlap,
        is_result=is_result,
        mark=mark,
        direction=direction,
        reason=reason,
    )


def _n1_prefix(baseline: Cell, candidate: Cell) -> str:
    sides = [s for s, c in (("baseline", baseline), ("candidate", candidate)) if not c.has_range]
    which = "each side" if len(sides) == 2 else f"the {sides[0]}"
    return f"n=1 for {which} (no range), so only the spread test applies; "


def _seed(diff: float, spread: float, overlap: bool | None, baseline: Cell, candidate: Cell) -> tuple[str, bool, str]:
    exceeds = diff > spread
    d, s = fmt_pct(diff), fmt_pct(spread)
    spread_ok = f"the difference {d} exceeds the {s} spread"
    spread_bad = f"the difference {d} does not exceed the {s} spread"
    if overlap is None:
        prefix = _n1_prefix(baseline, candidate)
        return ("✓", True, prefix + spread_ok) if exceeds else ("~", False, prefix + spread_bad)
    if not overlap and exceeds:
        return "✓", True, f"ranges do not overlap and {spread_ok}"
    if overlap and not exceeds:
        return "~", False, f"both: ranges overlap and {spread_bad}"
    if overlap:
        return "~", False, f"ranges overlap (although {spread_ok})"
    return "~", False, f"change below spread: {spread_bad} (although the ranges do not overlap)"


def _strict(
    diff: float,
    spread: float,
    band: float,
    overlap: bool | None,
    baseline: Cell,
    candidate: Cell,
) -> tuple[str, bool, str]:
    b = fmt_pct(band)
    band_txt = f"band {b} = max(2%, 2 × {fmt_pct(spread, 2)} spread)"
    wide = [
        f"{side} range {fmt_pct(c.rel_width)}"
        for side, c in (("baseline", baseline), ("candidate", candidate))
        if c.has_range and c.rel_width > band
    ]
    if wide:
        return "unstable", False, f"{' and '.join(wide)} wider than the {band_txt}"
    d = fmt_pct(diff)
    if diff <= band:
        return "~", False, f"the difference {d} is inside the {band_txt}"
    if overlap is None:
        prefix = _n1_prefix(baseline, candidate)
        return "✓", True, prefix.replace("spread test", "band test") + f"the difference {d} exceeds the {band_txt}"
    if overlap:
        return "?", False, f"ranges overlap although the difference {d} exceeds the {band_txt}"
    return "✓", True, f"ranges do not overlap and the difference {d} exceeds the {band_txt}"


# --- three states: a result, within noise, cannot tell ------------------------------------------

STATES = ("result", "noise", "cannot")
STATE_TEXT = {"result": "a result", "noise": NOT_A_RESULT, "cannot": "cannot tell"}


@dataclass(frozen=True)
class Judgement:
    """Candidate vs baseline over their repeats, in one of three states (:data:`STATES`).

    * ``n ≥ 5`` runs per side: a two-sided Mann–Whitney test on the run-level figures and a bootstrap
      95 % interval of the ratio of medians; a result when p < 0.05 and the interval excludes 1;
    * fewer: the spread rule (:func:`compare`) with the run-to-run spread measured between repeats;
      no rank test is given, and ``why`` says so;
    * no spread measured (no configuration in the comparison was run twice): cannot tell.
    """

    state: str
    ratio: float  # median(candidate) / median(baseline)
    direction: str  # "improvement" | "regression" | "no change"
    why: str
    p_value: float | None = None
    ci: tuple[float, float] | None = None
    spread: float | None = None

    @property
    def is_result(self) -> bool:
        return self.state == "result"


def _ratio(baseline: list[float], candidate: list[float], higher_is_better: bool):
    from benchbook.analysis import stats

    b, c = stats.cell(baseline, what="baseline"), stats.cell(candidate, what="candidate")
    _check_positive(b, "baseline")
    _check_positive(c, "candidate")
    direction = (
        "no change"
        if c.median == b.median
        else "improvement"
        if (c.median > b.median) == higher_is_better
        else "regression"
    )
    return b, c, c.median / b.median, direction


def cannot_tell(baseline: list[float], candidate: list[float], *, higher_is_better: bool, why: str) -> Judgement:
    """ "Cannot tell" for a reason decided before any statistics (e.g. every run of a side failed a
    validity gate): the ratio of medians is kept for display, no verdict is given."""
    _, _, ratio_, direction = _ratio(baseline, candidate, higher_is_better)
    return Judgement("cannot", ratio_, direction, why)


def judge(
    baseline: list[float],
    candidate: list[float],
    *,
    spread: float | None,
    higher_is_better: bool,
    rule: Rule = "seed",
    alpha: float = 0.05,
) -> Judgement:
    from benchbook.analysis import stats

    b, c, ratio_, direction = _ratio(baseline, candidate, higher_is_better)
    nb, nc = len(baseline), len(candidate)
    if nb >= stats.MIN_N_FOR_TEST and nc >= stats.MIN_N_FOR_TEST:
        p = stats.mannwhitney_p(baseline, candidate)
        lo, hi = stats.bootstrap_ratio_ci(baseline, candidate)
        excl = lo > 1 or hi < 1
        state = "result" if p < alpha and excl else "noise"
        why = (
            f"n={nb} vs {nc}: Mann–Whitney p = {p:.3g} ({'<' if p < alpha else '≥'} {alpha:g}), "
            f"95% bootstrap interval of the ratio {lo:.3f}–{hi:.3f} ({'excludes' if excl else 'includes'} 1)"
        )
        return Judgement(state, ratio_, direction, why, p, (lo, hi), spread)
    no_test = (
        f"no rank test at n={nb} vs {nc} (needs ≥ {stats.MIN_N_FOR_TEST} runs per side; the smallest p-value "
        f"{nb} vs {nc} runs can give is {stats.min_mannwhitney_p(nb, nc):.2f})"
    )
    if spread is None:
        return Judgement(
            "cannot",
            ratio_,
            direction,
            "no configuration in this comparison was run more than once, so the run-to-run noise is unknown; "
            + no_test,
            None,
            None,
            None,
        )
    v = compare(b, c, spread=spread, higher_is_better=higher_is_better, rule=rule)
    return Judgement(
        "result" if v.is_result else "noise", ratio_, direction, f"{v.reason}; {no_test}", None, None, spread
    )
