"""Invariants of the verdict rules (hypothesis)."""

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from benchbook.analysis.stats import cell
from benchbook.analysis.verdict import compare

value = st.floats(min_value=1e-3, max_value=1e4, allow_nan=False, allow_infinity=False)
samples = st.lists(value, min_size=1, max_size=5)
spread = st.floats(min_value=0.0, max_value=0.5, allow_nan=False)
rule = st.sampled_from(["seed", "strict"])
higher = st.booleans()
# powers of two scale binary floats exactly, so threshold ties cannot be created by rounding
power_of_two = st.integers(min_value=-8, max_value=8).map(lambda k: 2.0**k)


@settings(max_examples=300)
@given(samples, spread, rule, higher)
def test_identical_arms_are_never_a_result(xs, s, r, h):
    c = compare(cell(xs), cell(xs), spread=s, rule=r, higher_is_better=h)
    assert not c.is_result
    assert c.direction == "no change" and c.change == 0


@settings(max_examples=300)
@given(samples, samples, spread, rule, higher)
def test_swapping_arms_flips_only_direction(xs, ys, s, r, h):
    a = compare(cell(xs), cell(ys), spread=s, rule=r, higher_is_better=h)
    b = compare(cell(ys), cell(xs), spread=s, rule=r, higher_is_better=h)
    assert a.is_result == b.is_result
    assert a.mark == b.mark
    assert a.difference == b.difference
    flip = {"improvement": "regression", "regression": "improvement", "no change": "no change"}
    assert b.direction == flip[a.direction]
    assert (a.change > 0) == (b.change < 0) or a.change == b.change == 0


@settings(max_examples=300)
@given(samples, samples, spread, rule, higher, power_of_two)
def test_scaling_both_arms_changes_no_verdict(xs, ys, s, r, h, k):
    a = compare(cell(xs), cell(ys), spread=s, rule=r, higher_is_better=h)
    b = compare(cell(xs).scaled(k), cell(ys).scaled(k), spread=s, rule=r, higher_is_better=h)
    assert (a.is_result, a.mark, a.direction, a.overlap) == (b.is_result, b.mark, b.direction, b.overlap)


@settings(max_examples=300)
@given(st.sampled_from([1.0, 2.5, 7.0]), st.sampled_from([1.0, 2.5, 7.0]), spread, rule)
def test_ties_and_zero_width_ranges_at_n3(x, y, s, r):
    c = compare(cell([x, x, x]), cell([y, y, y]), spread=s, rule=r)
    assert c.baseline.rel_width == 0 and c.candidate.rel_width == 0
    if x == y:
        assert not c.is_result and c.overlap is True
    else:
        # disjoint points: a result exactly when the gap beats the threshold — and never against a
        # zero spread (identical repeats are copies, not a yardstick)
        assert c.overlap is False
        assert c.is_result == (s > 0 and c.difference > c.threshold)


@settings(max_examples=200)
@given(samples, samples, spread, higher)
def test_strict_result_implies_seed_result(xs, ys, s, h):
    strict = compare(cell(xs), cell(ys), spread=s, rule="strict", higher_is_better=h)
    seed = compare(cell(xs), cell(ys), spread=s, rule="seed", higher_is_better=h)
    if strict.is_result:
        assert seed.is_result


runs5 = st.lists(value, min_size=5, max_size=7)
maybe_spread = st.one_of(st.none(), spread)


@settings(max_examples=60, deadline=None)
@given(runs5, runs5, maybe_spread, higher)
def test_judge_is_symmetric_and_identical_sides_are_never_a_result(xs, ys, s, h):
    from benchbook.analysis.verdict import judge

    a = judge(xs, ys, spread=s, higher_is_better=h)
    b = judge(ys, xs, spread=s, higher_is_better=h)
    assert a.state == b.state
    if a.ci is not None:
        assert b.ci is not None and math.isclose(b.ci[0], 1 / a.ci[1]) and math.isclose(b.ci[1], 1 / a.ci[0])
    assert judge(xs, xs, spread=s, higher_is_better=h).state == "noise"
