"""Verdicts on the seed's own comparisons, computed by hand from its printed numbers."""

import pytest

from benchbook.analysis.stats import Cell, fmt_pct, fmt_ratio, run_spread
from benchbook.analysis.verdict import NOT_A_RESULT, compare, noise_band
from benchbook.errors import InputError

SPREAD = run_spread([3.430, 3.686])  # tuned vs tuned2, 7.46 %


def R(med, lo, hi):
    return Cell.from_range(med, lo, hi)


def one(x):
    return Cell.from_range(x, x, x, n=1)


def test_tuned_vs_default_decode_is_a_result_148x_and_146x():
    short = compare(R(3.554, 3.529, 3.571), R(5.248, 5.205, 5.371), spread=SPREAD)
    assert fmt_ratio(short.speedup) == "1.48x"
    assert short.is_result and short.mark == "✓" and short.direction == "improvement"
    assert short.verdict == "result (improvement)"
    assert short.overlap is False
    assert "ranges do not overlap" in short.reason and "exceeds the 7.5% spread" in short.reason
    long = compare(R(3.328, 3.248, 3.387), R(4.868, 4.785, 4.936), spread=SPREAD)
    assert fmt_ratio(long.speedup) == "1.46x" and long.is_result


def test_ccb339d_long_decode_plus_6_5_is_not_a_result():
    c = compare(R(4.685, 4.442, 4.872), R(4.988, 4.796, 5.099), spread=SPREAD)
    assert fmt_pct(c.change, signed=True) == "+6.5%"
    assert not c.is_result and c.verdict == NOT_A_RESULT and c.mark == "~"
    assert c.overlap is True
    # both conditions fail: 4.796 ≤ 4.872 and 6.47 % < 7.46 %
    assert c.reason.startswith("both: ranges overlap")
    assert "6.5% does not exceed the 7.5% spread" in c.reason
    assert c.direction == "improvement"  # the direction is reported even when not a result


def test_1536681_batch_long_decode_is_a_result_under_seed_rule():
    # the seed's prose says "within noise on every field"; its table says otherwise
    tuned, batch = R(4.868, 4.785, 4.936), R(4.446, 4.441, 4.602)
    c = compare(tuned, batch, spread=SPREAD)
    assert c.overlap is False  # 4.602 < 4.785
    assert fmt_pct(c.change, signed=True) == "−8.7%"
    assert c.is_result and c.direction == "regression" and c.verdict == "result (regression)"
    s = compare(tuned, batch, spread=SPREAD, rule="strict")
    assert fmt_pct(s.threshold, 0) == "15%" and s.threshold == pytest.approx(2 * SPREAD)
    assert not s.is_result and s.mark == "~" and s.verdict == NOT_A_RESULT
    assert "inside the band 14.9%" in s.reason


def test_change_below_spread_with_disjoint_ranges():
    # ablation: prefetch short decode 3.428 (3.416–3.442) vs default 3.554 (3.529–3.571)
    c = compare(R(3.554, 3.529, 3.571), R(3.428, 3.416, 3.442), spread=SPREAD)
    assert c.overlap is False and not c.is_result
    assert c.reason.startswith("change below spread")


def test_ranges_overlap_but_change_exceeds_spread():
    c = compare(R(10.0, 9.0, 12.0), R(11.5, 11.0, 13.0), spread=0.05)
    assert not c.is_result and c.reason.startswith("ranges overlap (although")


# batched / serial, ccb339d whole-request rows: single runs, n=1 each side
@pytest.mark.parametrize(
    "serial,batched,higher,printed,result",
    [
        (3.697, 3.564, True, "0.96x", False),  # single request rate
        (3.609, 3.860, True, "1.07x", False),  # n=2 aggregate rate: +6.95 % < 7.46 %
        (3.682, 4.634, True, "1.26x", True),  # n=4
        (69.495, 42.927, False, "1.62x", True),  # n=8 wall time (a latency)
        (19.660, 18.538, False, "1.06x", False),  # interleave short latency: serial/batched
    ],
)
def test_batched_over_serial_ratios(serial, batched, higher, printed, result):
    c = compare(one(serial), one(batched), spread=SPREAD, higher_is_better=higher)
    assert fmt_ratio(c.speedup) == printed
    assert c.is_result is result
    assert c.overlap is None
    assert c.reason.startswith("n=1 for each side (no range), so only the spread test applies")
    assert c.direction == ("regression" if printed == "0.96x" else "improvement")


def test_latency_ratio_is_oriented_serial_over_batched():
    c = compare(one(19.660), one(18.538), spread=SPREAD, higher_is_better=False)
    assert c.ratio == pytest.approx(18.538 / 19.660)  # raw candidate/baseline
    assert c.speedup == pytest.approx(19.660 / 18.538)  # what the seed prints: 1.06x
    assert c.change < 0 and c.direction == "improvement"


def test_n1_on_one_side_only_says_which():
    c = compare(R(4.0, 3.9, 4.1), one(5.0), spread=0.05)
    assert c.overlap is None and "n=1 for the candidate" in c.reason and c.is_result


def test_strict_marks():
    band = noise_band(SPREAD)
    assert noise_band(0.004) == 0.02  # floor of 2 %
    # ✓: disjoint, 47.7 % > 14.9 %
    assert compare(R(3.554, 3.529, 3.571), R(5.248, 5.205, 5.371), spread=SPREAD, rule="strict").mark == "✓"
    # ?: ranges overlap (10.9 ≤ 11.0), difference 20 % > band 14.9 %, own ranges 14.6 % and 11.9 %
    q = compare(R(10.0, 9.6, 11.0), R(12.0, 10.9, 12.2), spread=SPREAD, rule="strict")
    assert q.mark == "?" and not q.is_result and "ranges overlap although" in q.reason
    # unstable: the pair's short prefill 38.2–43.3 is 13.4 % wide; with spread 5 % the band is 10 %
    u = compare(R(46.5, 46.2, 46.7), R(42.6, 38.2, 43.3), spread=0.05, rule="strict")
    assert u.mark == "unstable" and "candidate range 13.4%" in u.reason and not u.is_result
    assert band == pytest.approx(0.14927, abs=1e-5)


def test_bad_arguments():
    with pytest.raises(InputError, match="unknown noise rule"):
        compare(one(1.0), one(2.0), spread=0.1, rule="loose")
    with pytest.raises(InputError, match="positive"):
        compare(one(0.0), one(2.0), spread=0.1)
    with pytest.raises(InputError, match="non-negative"):
        compare(one(1.0), one(2.0), spread=-0.1)


def test_describe_line():
    c = compare(R(3.554, 3.529, 3.571), R(5.248, 5.205, 5.371), spread=SPREAD)
    assert c.describe().startswith("1.48x (+47.7%) ✓ result (improvement): ranges do not overlap")


# --- three states: a result, within noise, cannot tell ------------------------------------------


def test_judge_cannot_tell_without_a_measured_spread():
    from benchbook.analysis.verdict import judge

    j = judge([661.83], [665.46], spread=None, higher_is_better=True)  # two SGLang PD runs, n=1 each
    assert j.state == "cannot" and not j.is_result
    assert j.ratio == pytest.approx(665.46 / 661.83)
    assert "run-to-run noise is unknown" in j.why and "no rank test at n=1 vs 1" in j.why


def test_judge_below_five_uses_the_spread_rule_and_says_why_no_test():
    from benchbook.analysis.verdict import judge

    j = judge([3.430, 3.686], [5.1, 5.3], spread=SPREAD, higher_is_better=True)
    assert j.state == "result" and j.direction == "improvement" and j.p_value is None and j.ci is None
    assert "smallest p-value 2 vs 2 runs can give is 0.33" in j.why
    j = judge([3.430, 3.686], [3.5, 3.6], spread=SPREAD, higher_is_better=True)
    assert j.state == "noise"


def test_judge_at_five_per_side_uses_mann_whitney_and_a_bootstrap_interval():
    from benchbook.analysis.verdict import judge

    base = [10.0, 10.2, 10.1, 9.9, 10.3]
    fast = [12.0, 12.4, 12.1, 11.9, 12.2]
    j = judge(base, fast, spread=0.04, higher_is_better=True)
    # complete separation at 5 vs 5: exact two-sided p = 2 / C(10, 5) = 2 / 252
    assert j.state == "result" and j.p_value == pytest.approx(2 / 252)
    lo, hi = j.ci
    assert 1 < lo <= 12.1 / 10.1 <= hi
    mixed = [10.1, 9.8, 10.4, 10.0, 10.2]
    j = judge(base, mixed, spread=0.04, higher_is_better=True)
    assert j.state == "noise" and j.p_value > 0.05 and j.ci[0] < 1 < j.ci[1]
    # swapping the sides never changes whether it is a result
    assert judge(fast, base, spread=0.04, higher_is_better=True).state == "result"
