"""Noise-aware comparisons: ratio, signed change and a verdict that says why.

Every comparison in the package is decided by :func:`decide` from an :class:`Evidence` (both sides'
samples, the metric's direction, the rule, the spread) and gives one typed :class:`Verdict` (a
:class:`State`, the direction, the reason, the evidence). :func:`compare` (cells) and :func:`judge`
(run-level figures) wrap it for their callers. Rules ``seed`` and ``strict`` below; ``small-n``
(pairwise differences, Hodges–Lehmann) and ``rank`` (Mann–Whitney + bootstrap, n ≥ 5 per side) in
``docs/statistics.md``.

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

import dataclasses
import enum
import math
from dataclasses import dataclass, field
from typing import Any, Literal

from benchbook.analysis.stats import Cell, fmt_pct, fmt_ratio, rel_diff
from benchbook.errors import InputError

Rule = Literal["seed", "strict", "small-n"]
RULES: tuple[str, ...] = ("seed", "strict", "small-n")

#: the one spelling of "not a result" (pages, summaries and every analysis use this constant)
NOT_A_RESULT = "within noise — not a result"

# What each rule is called where a reader meets it (--help, "How to read this page", docs/statistics.md):
# the words say what the rule tests; the short name is what --rule and render.yml take.
RULE_NAMES: dict[str, str] = {
    "seed": "the range-and-spread rule",
    "strict": "the doubled-band rule",
    "small-n": "the pairwise rule",
}

# How each rule reads on a page ("How to read this page").
RULE_TEXT: dict[str, str] = {
    "seed": (
        "the range-and-spread rule (seed): a difference is a result only when the [min–max] ranges do not "
        "overlap AND it exceeds the run-to-run spread measured between two identical runs; otherwise it is "
        "within noise — not a result"
    ),
    "strict": (
        "the doubled-band rule (strict): a noise band of max(2 %, 2 × the measured spread); a result needs "
        "disjoint ranges and a difference beyond the band; a side whose own range is wider than the band is "
        "unstable"
    ),
    "small-n": (
        "the pairwise rule (small-n): every pairwise difference between the two sides' runs must agree in sign "
        "and exceed the run-to-run spread measured between identical runs; the Hodges–Lehmann shift is shown "
        "with the [min, max] of the pairwise differences (90 % coverage at 3 vs 3); otherwise within noise "
        "(all pairs inside the spread) or cannot tell"
    ),
}

# --rule's help, one line per rule (summary; the pages' render.yml `rule:` takes the same names)
RULE_HELP = (
    "the noise rule that decides a verdict: seed = the range-and-spread rule (default: the [min–max] ranges "
    "apart and the difference beyond the measured run-to-run spread); strict = the doubled-band rule (the "
    "difference beyond max(2 %%, 2 × the spread), ranges apart); small-n = the pairwise rule (every pairwise "
    "difference between the two sides' runs beyond the spread). docs/statistics.md#choosing-a-noise-rule"
)

STRICT_MIN_BAND = 0.02


def check_rule(rule: str, where: Any = "parameters") -> str:
    """``rule`` when it names a noise rule (:data:`RULES`), else the one error every caller raises."""
    if rule not in RULES:
        raise InputError(where, "rule", f"unknown noise rule {rule!r}; choose {', '.join(RULES[:-1])} or {RULES[-1]}")
    return rule


MARKS = {
    "✓": "result: ranges disjoint and the difference exceeds the noise threshold",
    "~": "within noise: the difference is inside the threshold",
    "?": "ranges overlap although the difference exceeds the band (strict rule only)",
    "unstable": "one side's own min–max range is wider than the band (strict rule only)",
}


def noise_band(spread: float) -> float:
    """The strict rule's band: ``max(2%, 2 × spread)`` (spread 7.46% → 14.9%)."""
    return max(STRICT_MIN_BAND, 2 * spread)


# --- the one typed verdict ------------------------------------------------------------------------


class State(str, enum.Enum):
    """What a comparison concluded. Pages branch on this, never on a verdict's words."""

    IMPROVEMENT = "improvement"
    REGRESSION = "regression"
    WITHIN_NOISE = "within noise"
    SAME_WITHIN_MARGIN = "same within margin"
    CANNOT_TELL = "cannot tell"
    NOT_COMPARABLE = "not comparable"

    @property
    def is_result(self) -> bool:
        return self in (State.IMPROVEMENT, State.REGRESSION)

    def mirrored(self) -> State:
        """The state with the arms swapped: improvement ↔ regression, every other state unchanged."""
        return {State.IMPROVEMENT: State.REGRESSION, State.REGRESSION: State.IMPROVEMENT}.get(self, self)

    @property
    def legacy(self) -> str:
        """The three-state word older summaries carry (``result`` / ``noise`` / ``cannot``)."""
        if self.is_result:
            return "result"
        return "noise" if self in (State.WITHIN_NOISE, State.SAME_WITHIN_MARGIN) else "cannot"


#: the reader's words for each state (the verdict column of a page)
STATE_WORDS: dict[State, str] = {
    State.IMPROVEMENT: "result (improvement)",
    State.REGRESSION: "result (regression)",
    State.WITHIN_NOISE: NOT_A_RESULT,
    State.SAME_WITHIN_MARGIN: "same within the stated margin",
    State.CANNOT_TELL: "cannot tell",
    State.NOT_COMPARABLE: "not comparable",
}

DIRECTION_FLIP = {"improvement": "regression", "regression": "improvement", "no change": "no change"}
NO_SPREAD = "no configuration in this comparison was run more than once, so the run-to-run noise is unknown"
#: the same, true where a side was repeated but no spread of this figure was given to judge it by
NO_SPREAD_GIVEN = "no run-to-run spread of this figure was measured, so its noise is unknown"
#: a measured spread of exactly 0 is no yardstick: identical repeats are copies of one run (or figures
#: rounded to a few digits), and any difference would beat it
ZERO_SPREAD = (
    "the run-to-run spread is 0.0 %: repeats that agree exactly are copies of one run (or rounded "
    "figures), not a measure of noise, so no difference can be called a result"
)


@dataclass(frozen=True)
class Evidence:
    """Everything a verdict is decided from: both sides' samples, the metric's direction, the rule and
    the noise yardstick. :func:`decide` reads nothing else, so ``decide(e.swapped())`` is the verdict
    with the arms swapped (the swap test in ``tests/test_verdict_swap.py`` relies on it).

    ``spread`` is the run-to-run spread measured between identical runs (a fraction) — or, where the
    analysis says so in ``spread_from``, a threshold given by the user; None when nothing was measured.
    ``margin`` is a stated equivalence margin (fraction) for "same within margin"; ``not_comparable``
    the reason the two sides may not be judged at all (e.g. an invalid measurement window)."""

    baseline: Cell
    candidate: Cell
    higher_is_better: bool
    rule: str = "seed"  # seed | strict | small-n | rank
    spread: float | None = None
    spread_from: str = ""
    margin: float | None = None
    not_comparable: str | None = None
    no_spread: str = NO_SPREAD
    alpha: float = 0.05

    def swapped(self) -> Evidence:
        return dataclasses.replace(self, baseline=self.candidate, candidate=self.baseline)

    def as_dict(self) -> dict[str, Any]:
        """Complete: :meth:`from_dict` rebuilds the same evidence (so a summary can be re-judged)."""

        def side(c: Cell) -> dict[str, Any]:
            return {"median": c.median, "min": c.min, "max": c.max, "n": c.n, "samples": list(c.samples)}

        return {
            "rule": self.rule,
            "n_baseline": self.baseline.n,
            "n_candidate": self.candidate.n,
            "baseline": side(self.baseline),
            "candidate": side(self.candidate),
            "higher_is_better": self.higher_is_better,
            "spread": self.spread,
            "spread_from": self.spread_from or None,
            "margin": self.margin,
            "not_comparable": self.not_comparable,
            "no_spread": self.no_spread,
            "alpha": self.alpha,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Evidence:
        def side(x: dict[str, Any]) -> Cell:
            return Cell(x["median"], x["min"], x["max"], x["n"], tuple(x["samples"]))

        return cls(
            side(d["baseline"]),
            side(d["candidate"]),
            d["higher_is_better"],
            d["rule"],
            d["spread"],
            d.get("spread_from") or "",
            d.get("margin"),
            d.get("not_comparable"),
            d.get("no_spread", NO_SPREAD),
            d.get("alpha", 0.05),
        )


@dataclass(frozen=True)
class Verdict:
    """One comparison's judgement: a :class:`State`, the direction of the point estimate, the reason in
    words and the evidence (n per side, spread, rule). Made only by :func:`decide`."""

    state: State
    direction: str  # of the medians: "improvement" | "regression" | "no change"
    reason: str
    evidence: Evidence
    mark: str = ""
    threshold: float | None = None  # the spread or band the difference was tested against
    difference: float | None = None  # symmetric gap of the medians, max/min − 1
    shift: float | None = None  # Hodges–Lehmann ratio (small-n rule): exp(median of pairwise log ratios)
    interval: tuple[float, float] | None = None  # ratio interval (small-n: [min, max] of pairwise ratios)
    coverage: float | None = None  # the interval's distribution-free coverage
    p_value: float | None = None  # rank rule only
    p_min: float | None = None  # the smallest two-sided p-value this design (n per side) allows

    @property
    def is_result(self) -> bool:
        return self.state.is_result

    @property
    def rule(self) -> str:
        return self.evidence.rule

    @property
    def n_baseline(self) -> int:
        return self.evidence.baseline.n

    @property
    def n_candidate(self) -> int:
        return self.evidence.candidate.n

    @property
    def text(self) -> str:
        return STATE_WORDS[self.state]

    def mirrors(self, other: Verdict) -> bool:
        """True when ``other`` is this verdict with the arms swapped: the state mirrored
        (improvement ↔ regression, others equal) and the direction flipped."""
        return other.state == self.state.mirrored() and other.direction == DIRECTION_FLIP[self.direction]

    def as_dict(self) -> dict[str, Any]:
        return {
            "state": self.state.value,
            "direction": self.direction,
            "is_result": self.is_result,
            "reason": self.reason,
            "threshold": self.threshold,
            "difference": self.difference,
            "shift": self.shift,
            "interval": list(self.interval) if self.interval else None,
            "coverage": self.coverage,
            "p_value": self.p_value,
            "p_min": self.p_min,
            **self.evidence.as_dict(),
        }


def typed_fields(v: Verdict | None) -> dict[str, Any]:
    """A typed verdict's fields to add to a serialized comparison row beside its older ``verdict``
    words: ``state``, ``direction``, ``threshold``/``p_min`` in ``verdict_evidence`` with the complete
    evidence (rule, n and samples per side, spread) — enough to judge the row again, arms swapped."""
    if v is None:
        return {}
    return {
        "state": v.state.value,
        "direction": v.direction,
        "verdict_evidence": {**v.evidence.as_dict(), "threshold": v.threshold, "p_min": v.p_min},
    }


def _direction(b: float, c: float, higher_is_better: bool) -> str:
    if c == b:
        return "no change"
    return "improvement" if (c > b) == higher_is_better else "regression"


def point(value: float) -> Cell:
    """A one-sample cell (n=1) for figures that are single measurements (a memory run, a level)."""
    from benchbook.analysis import stats

    return stats.cell([value])


def decide(ev: Evidence) -> Verdict:
    """The one verdict function: every comparison in the package ends here (see the module docstring
    and ``docs/statistics.md`` for each rule). Symmetric by construction: every test below is on a
    quantity that does not change when the two sides swap (the symmetric difference, range overlap,
    the set of pairwise |differences|), and only the direction flips."""
    b, c = ev.baseline, ev.candidate
    direction = _direction(b.median, c.median, ev.higher_is_better)
    common = {"difference": rel_diff(b.median, c.median), "p_min": _p_min(b.n, c.n)}
    if ev.not_comparable:
        return Verdict(State.NOT_COMPARABLE, direction, ev.not_comparable, ev, "–", **common)
    _check_positive(b, "baseline")
    _check_positive(c, "candidate")
    result = State.IMPROVEMENT if direction == "improvement" else State.REGRESSION
    if ev.spread is not None and not ev.spread >= 0:
        raise InputError(None, "spread", f"spread must be a non-negative fraction, got {ev.spread}")
    v = _decide(ev, direction, result, common)
    if ev.spread == 0 and v.state.is_result:  # a zero yardstick is beaten by any difference: no result
        return dataclasses.replace(v, state=State.CANNOT_TELL, reason=f"{ZERO_SPREAD} ({v.reason})", mark="?")
    return v


def _decide(ev: Evidence, direction: str, result: State, common: dict) -> Verdict:
    b, c = ev.baseline, ev.candidate
    diff = common["difference"]
    if ev.rule == "rank":
        return _rank(ev, direction, result, common)
    if ev.spread is None:
        reason = ev.no_spread
        if max(b.n, c.n) > 1 and reason == NO_SPREAD:  # repeats exist, but no spread was measured for this figure
            reason = f"no run-to-run spread was measured for this figure (n={b.n} vs {c.n}), so its noise is unknown"
        return Verdict(State.CANNOT_TELL, direction, reason, ev, "?", **common)
    ranged = b.has_range and c.has_range
    overlap = b.overlaps(c) if ranged else None
    if ev.rule == "seed":
        mark, is_result, reason = _seed(diff, ev.spread, overlap, b, c)
        state = result if is_result else State.WITHIN_NOISE
        return Verdict(state, direction, reason, ev, mark, ev.spread, **common)
    if ev.rule == "strict":
        band = noise_band(ev.spread)
        mark, is_result, reason = _strict(diff, ev.spread, band, overlap, b, c)
        state = result if is_result else State.CANNOT_TELL if mark == "unstable" else State.WITHIN_NOISE
        return Verdict(state, direction, reason, ev, mark, band, **common)
    if ev.rule == "small-n":
        return _small_n(ev, direction, result, common)
    raise InputError(None, "rule", f"unknown noise rule {ev.rule!r}; expected one of {', '.join(RULES)}")


def _p_min(nb: int, nc: int) -> float:
    from benchbook.analysis import stats

    return stats.min_mannwhitney_p(nb, nc)


def _small_n(ev: Evidence, direction: str, result: State, common: dict) -> Verdict:
    """Hodges–Lehmann on log values: every pairwise difference log(c_j) − log(b_i)."""
    from benchbook.analysis import stats

    b, c = ev.baseline, ev.candidate
    spread = ev.spread or 0.0
    logs = sorted(math.log(y) - math.log(x) for x in b.samples for y in c.samples)
    mid = len(logs) // 2
    hl = logs[mid] if len(logs) % 2 else (logs[mid - 1] + logs[mid]) / 2
    shift, interval = math.exp(hl), (math.exp(logs[0]), math.exp(logs[-1]))
    coverage = stats.pairwise_interval_coverage(b.n, c.n)
    thr = math.log1p(spread)
    pairs = f"{len(logs)} pairwise ratio{'s' * (len(logs) != 1)}"
    ival = f"{interval[0]:.3f}–{interval[1]:.3f}"
    est = f"Hodges–Lehmann ratio {shift:.3f}, {pairs} span {ival}"
    if b.n >= 2 and c.n >= 2:
        est += f" ({coverage * 100:.0f} % distribution-free interval)"
    extra = {"shift": shift, "interval": interval, "coverage": coverage}
    s = fmt_pct(spread)
    if all(d > thr for d in logs) or all(d < -thr for d in logs):
        reason = f"{est}: every pairwise difference agrees in sign and exceeds the {s} spread"
        return Verdict(result, direction, reason, ev, "✓", spread, **common, **extra)
    if ev.margin is not None and all(abs(d) <= math.log1p(ev.margin) for d in logs):
        reason = f"{est}: every pairwise difference is inside the stated {fmt_pct(ev.margin)} margin"
        return Verdict(State.SAME_WITHIN_MARGIN, direction, reason, ev, "=", spread, **common, **extra)
    if all(abs(d) <= thr for d in logs):
        reason = f"{est}: every pairwise difference is inside the {s} spread"
        return Verdict(State.WITHIN_NOISE, direction, reason, ev, "~", spread, **common, **extra)
    reason = (
        f"cannot tell — {est}: the pairwise differences do not all agree in sign and exceed the {s} spread; "
        + small_n_reach(b.n, c.n)
    )
    return Verdict(State.CANNOT_TELL, direction, reason, ev, "?", spread, **common, **extra)


def small_n_reach(nb: int, nc: int, level: float = 0.10) -> str:
    """What a design of ``nb`` vs ``nc`` runs can reach, in words: "n=3 vs 3 cannot reach p<0.10
    (smallest two-sided p 0.10); ≥4 per side can"."""
    p = _p_min(nb, nc)
    if p < level:
        return f"the smallest two-sided p-value n={nb} vs {nc} allows is {p:.3f}"
    need = next(k for k in range(1, 50) if _p_min(k, k) < level)
    return f"n={nb} vs {nc} cannot reach p<{level:.2f} (smallest two-sided p {p:.2f}); ≥{need} per side can"


def _rank(ev: Evidence, direction: str, result: State, common: dict) -> Verdict:
    from benchbook.analysis import stats

    xs, ys = list(ev.baseline.samples), list(ev.candidate.samples)
    p = stats.mannwhitney_p(xs, ys)
    lo, hi = stats.bootstrap_ratio_ci(xs, ys)
    excl = lo > 1 or hi < 1
    a = ev.alpha
    state = result if p < a and excl else State.WITHIN_NOISE
    why = (
        f"n={len(xs)} vs {len(ys)}: Mann–Whitney p = {p:.3g} ({'<' if p < a else '≥'} {a:g}), "
        f"95% bootstrap interval of the ratio {lo:.3f}–{hi:.3f} ({'excludes' if excl else 'includes'} 1)"
    )
    mark = "✓" if state.is_result else "~"
    return Verdict(state, direction, why, ev, mark, ev.spread, interval=(lo, hi), coverage=0.95, p_value=p, **common)


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
    typed: Verdict | None = field(default=None, compare=False)  # the verdict itself

    @property
    def state(self) -> State:
        return self.typed.state if self.typed else (State.WITHIN_NOISE if not self.is_result else State.IMPROVEMENT)

    @property
    def verdict(self) -> str:
        """``result (improvement)`` / ``result (regression)`` / ``within noise — not a result`` (``cannot
        tell`` against a zero spread)."""
        if self.typed is not None and self.typed.reason.startswith(ZERO_SPREAD):
            return STATE_WORDS[State.CANNOT_TELL]
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
    spread_from: str = "",
) -> Comparison:
    """Compare ``candidate`` against ``baseline`` for one metric (a :class:`Comparison` around the
    typed :class:`Verdict` that :func:`decide` makes).

    ``spread`` is the measured run-to-run spread for this metric as a fraction (0.0746), from
    :func:`benchbook.analysis.stats.run_spread`. ``higher_is_better`` is True for rates (tok/s), False for
    latencies (seconds). Cells must be positive.
    """
    check_rule(rule, None)
    if not spread >= 0:
        raise InputError(None, "spread", f"spread must be a non-negative fraction, got {spread}")
    v = decide(Evidence(baseline, candidate, higher_is_better, rule, spread, spread_from))
    b, c = baseline.median, candidate.median
    ratio_ = c / b
    ranged = baseline.has_range and candidate.has_range
    return Comparison(
        baseline=baseline,
        candidate=candidate,
        higher_is_better=higher_is_better,
        rule=rule,
        spread=spread,
        threshold=v.threshold if v.threshold is not None else spread,
        ratio=ratio_,
        speedup=ratio_ if higher_is_better else b / c,
        change=ratio_ - 1.0,
        difference=rel_diff(b, c),
        overlap=baseline.overlaps(candidate) if ranged else None,
        is_result=v.is_result,
        mark=v.mark,
        direction=v.direction,
        reason=v.reason,
        typed=v,
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
    """Candidate vs baseline over their repeats, in one of three legacy states (:data:`STATES`), with
    the typed :class:`Verdict` behind it (``verdict``).

    * ``n ≥ 5`` runs per side: a two-sided Mann–Whitney test on the run-level figures and a bootstrap
      95 % interval of the ratio of medians; a result when p < 0.05 and the interval excludes 1;
    * fewer: the small-n rule — the Hodges–Lehmann shift with the [min, max] of the pairwise
      differences, a result only when every pairwise difference agrees in sign and exceeds the
      measured spread (the strict rule's band under ``rule="strict"``);
    * no spread measured (no configuration in the comparison was run twice): cannot tell.
    """

    state: str
    ratio: float  # median(candidate) / median(baseline)
    direction: str  # "improvement" | "regression" | "no change"
    why: str
    p_value: float | None = None
    ci: tuple[float, float] | None = None
    spread: float | None = None
    verdict: Verdict | None = field(default=None, compare=False)

    @property
    def is_result(self) -> bool:
        return self.state == "result"


def _from_verdict(v: Verdict, spread: float | None, why: str | None = None) -> Judgement:
    b, c = v.evidence.baseline, v.evidence.candidate
    ci = v.interval if v.rule == "rank" else None
    return Judgement(v.state.legacy, c.median / b.median, v.direction, why or v.reason, v.p_value, ci, spread, v)


def cannot_tell(baseline: list[float], candidate: list[float], *, higher_is_better: bool, why: str) -> Judgement:
    """ "Cannot tell" for a reason decided before any statistics (e.g. every run of a side failed a
    validity gate): the ratio of medians is kept for display, no verdict is given."""
    from benchbook.analysis import stats

    b, c = stats.cell(baseline, what="baseline"), stats.cell(candidate, what="candidate")
    v = decide(Evidence(b, c, higher_is_better, "seed", None, no_spread=why))
    return _from_verdict(v, None)


def judge(
    baseline: list[float],
    candidate: list[float],
    *,
    spread: float | None,
    higher_is_better: bool,
    rule: Rule = "seed",
    alpha: float = 0.05,
    margin: float | None = None,
) -> Judgement:
    from benchbook.analysis import stats

    check_rule(rule, None)
    b, c = stats.cell(baseline, what="baseline"), stats.cell(candidate, what="candidate")
    nb, nc = len(baseline), len(candidate)
    if nb >= stats.MIN_N_FOR_TEST and nc >= stats.MIN_N_FOR_TEST:
        v = decide(Evidence(b, c, higher_is_better, "rank", spread, margin=margin, alpha=alpha))
        return _from_verdict(v, spread)
    # a zero spread stays 0 (never a result: decide), not the strict band's 2 % floor
    threshold = None if spread is None else noise_band(spread) if rule == "strict" and spread else spread
    why = NO_SPREAD if nb < 2 and nc < 2 else NO_SPREAD_GIVEN  # never "not run twice" beside n = 2
    v = decide(Evidence(b, c, higher_is_better, "small-n", threshold, margin=margin, alpha=alpha, no_spread=why))
    reach = f"no rank test at n={nb} vs {nc} (needs ≥ {stats.MIN_N_FOR_TEST} runs per side"
    if v.state is State.CANNOT_TELL and v.evidence.spread is not None:
        reach += ")"  # the reason already says what this design can reach
    else:
        reach += f"; the smallest p-value {nb} vs {nc} runs can give is {stats.min_mannwhitney_p(nb, nc):.2f})"
    return _from_verdict(v, spread, f"{v.reason}; {reach}")


def verdict_fields(j: Judgement) -> dict[str, Any]:
    """A :class:`Judgement` row's typed fields, added beside its legacy three-state ``state``:
    ``verdict_state`` (a :class:`State` value) and ``verdict_evidence`` (see :func:`typed_fields`)."""
    if j.verdict is None:
        return {}
    t = typed_fields(j.verdict)
    return {"verdict_state": t["state"], "verdict_evidence": t["verdict_evidence"]}
