"""The small-n rule (n ≤ 5 per side): Hodges–Lehmann shift, the pairwise-difference interval, a result
only when every pairwise difference agrees in sign and exceeds the A/A spread; hand-computed cases and
invariants (hypothesis)."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchbook.analysis import stats
from benchbook.analysis.stats import cell
from benchbook.analysis.verdict import Evidence, State, decide, judge


def _small(xs, ys, spread, hib=True, margin=None):
    return decide(Evidence(cell(xs), cell(ys), hib, "small-n", spread, margin=margin))


def test_coverage_of_the_pairwise_interval_by_hand():
    # 1 − 2 / C(6, 3) = 1 − 2/20 = 0.90; 4 vs 4: 1 − 2/70; 2 vs 2: 1 − 2/6
    assert stats.pairwise_interval_coverage(3, 3) == pytest.approx(0.90)
    assert stats.pairwise_interval_coverage(4, 4) == pytest.approx(1 - 2 / 70)
    assert stats.pairwise_interval_coverage(2, 2) == pytest.approx(2 / 3)


def test_hodges_lehmann_by_hand():
    # differences of (4, 5, 6) − (1, 2, 3): 1 2 3 2 3 4 3 4 5 → median 3, range 1–5
    assert stats.hodges_lehmann([1, 2, 3], [4, 5, 6]) == (3, 1, 5)


def test_a_result_needs_every_pair_beyond_the_spread():
    # 10, 10.2, 10.4 against 11.5, 11.6, 11.8: the closest pair 11.5 / 10.4 = +10.6 % > 5 % spread
    v = _small([10, 10.2, 10.4], [11.5, 11.6, 11.8], 0.05)
    assert v.state is State.IMPROVEMENT and v.coverage == pytest.approx(0.9)
    assert v.interval == pytest.approx((11.5 / 10.4, 11.8 / 10))
    assert v.shift == pytest.approx(
        math.exp(sorted(math.log(y / x) for x in (10, 10.2, 10.4) for y in (11.5, 11.6, 11.8))[4])
    )
    # the same medians, one pair inside the spread (10.9 / 10.4 = +4.8 %): cannot tell, and says what n can reach
    w = _small([10, 10.2, 10.4], [10.9, 11.6, 11.8], 0.05)
    assert w.state is State.CANNOT_TELL
    assert "n=3 vs 3 cannot reach p<0.10 (smallest two-sided p 0.10); ≥4 per side can" in w.reason
    assert w.p_min == pytest.approx(0.10)


def test_within_noise_and_same_within_margin():
    assert _small([10, 10.1, 10.2], [10.05, 10.15, 10.25], 0.05).state is State.WITHIN_NOISE
    v = _small([10, 10.1, 10.2], [10.05, 10.15, 10.25], 0.01, margin=0.03)
    assert v.state is State.SAME_WITHIN_MARGIN and "3.0% margin" in v.reason


def test_judge_uses_the_small_n_rule_below_five_runs_and_the_rank_test_from_five():
    j = judge([10, 10.2, 10.4], [11.5, 11.6, 11.8], spread=0.05, higher_is_better=True)
    assert j.state == "result" and j.verdict.rule == "small-n" and j.p_value is None
    k = judge([10, 10.1, 10.2, 10.3, 10.4], [12, 12.1, 12.2, 12.3, 12.4], spread=0.05, higher_is_better=True)
    assert k.verdict.rule == "rank" and k.p_value == pytest.approx(2 / 252)


def test_design_note_states_the_smallest_p():
    note = stats.design_note(3, 3)
    assert "smallest two-sided p-value any data can give is 0.10" in note and "≥ 4 runs per side can" in note
    assert "90 %" in note


value = st.floats(min_value=1e-2, max_value=1e3, allow_nan=False, allow_infinity=False)
side = st.lists(value, min_size=1, max_size=5)
spread = st.floats(min_value=0.0, max_value=0.5, allow_nan=False)
margin = st.one_of(st.none(), st.floats(min_value=0.0, max_value=0.5, allow_nan=False))


@settings(max_examples=300)
@given(side, side, spread, st.booleans(), margin)
def test_small_n_is_symmetric(xs, ys, s, hib, m):
    a, b = _small(xs, ys, s, hib, m), _small(ys, xs, s, hib, m)
    assert a.mirrors(b)
    assert a.interval == pytest.approx((1 / b.interval[1], 1 / b.interval[0]), rel=1e-9)


@settings(max_examples=300)
@given(side, spread, st.booleans(), margin)
def test_identical_arms_are_never_a_result(xs, s, hib, m):
    v = _small(xs, xs, s, hib, m)
    assert not v.is_result and v.direction == "no change"


@settings(max_examples=200, deadline=None)  # no timed assertion: a loaded host once took 0.8 s for one case
@given(st.sampled_from([1.0, 2.5, 7.0]), st.sampled_from([1.0, 2.5, 7.0]), spread)
def test_ties_at_n3(x, y, s):
    v = _small([x, x, x], [y, y, y], s)
    # all nine pairwise differences are the one difference: a result exactly when it beats the spread
    assert v.interval[0] == pytest.approx(v.interval[1])
    if x == y:
        assert v.state is State.WITHIN_NOISE
    else:
        # … and never against a zero spread (identical repeats are copies, not a yardstick)
        assert v.is_result == (s > 0 and abs(math.log(y) - math.log(x)) > math.log1p(s))
        assert v.state in (State.IMPROVEMENT, State.REGRESSION, State.WITHIN_NOISE, State.CANNOT_TELL)
