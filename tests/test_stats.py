"""Cell statistics, spread, ratios, interval rates and the n=3 notes, on the seed's printed numbers."""

from fractions import Fraction

import polars as pl
import pytest

from benchbook.analysis.stats import (
    INTERVAL_RATE_LABEL,
    Cell,
    bootstrap_median_ci,
    bootstrap_median_distribution,
    cell,
    change,
    fmt_pct,
    fmt_ratio,
    interval_rate,
    min_mannwhitney_p,
    rel_diff,
    run_spread,
    small_n_notes,
    spreads,
)
from benchbook.errors import InputError


def test_cell_discards_warmup_then_median_min_max():
    # one warm-up round (9.9 is the cold first sample) then the tuned short decode triple
    c = cell([9.9, 5.371, 5.205, 5.248], discard=1)
    assert (c.median, c.min, c.max, c.n, c.discarded) == (5.248, 5.205, 5.371, 3, 1)
    assert sorted(c.samples) == [c.min, c.median, c.max]  # n=3: the samples ARE min, median, max


def test_cell_with_warmup_flags():
    c = cell([1.0, 4.0, 2.0, 3.0], warmup=[True, False, False, False])
    assert (c.median, c.min, c.max, c.n, c.discarded) == (3.0, 2.0, 4.0, 3, 1)


def test_cell_even_n_median_is_mean_of_middle_two():
    assert cell([1.0, 2.0, 4.0, 10.0]).median == 3.0


def test_cell_rejects_empty_after_discard_and_non_finite():
    with pytest.raises(InputError, match="no samples left after discarding 1"):
        cell([1.0], discard=1)
    with pytest.raises(InputError, match="not a finite number"):
        cell([1.0, float("nan")])
    with pytest.raises(InputError, match="either discard"):
        cell([1.0, 2.0], discard=1, warmup=[True, False])
    with pytest.raises(InputError, match="2 warm-up flags for 3"):
        cell([1.0, 2.0, 3.0], warmup=[True, False])


def test_cell_from_range_is_the_three_samples():
    c = Cell.from_range(4.868, 4.785, 4.936)
    assert c.samples == (4.785, 4.868, 4.936) and c.n == 3
    assert c.fmt() == "4.868 (4.785–4.936)"
    assert Cell.from_range(3.5, 3.5, 3.5, n=1).fmt() == "3.500"
    with pytest.raises(InputError, match="not inside its range"):
        Cell.from_range(5.0, 4.0, 4.5)
    with pytest.raises(InputError, match="n=1 but"):
        Cell.from_range(5.0, 4.0, 6.0, n=1)


def test_cell_overlap_is_closed_interval():
    a = Cell.from_range(2.0, 1.0, 3.0)
    assert a.overlaps(Cell.from_range(4.0, 3.0, 5.0))  # touching at 3.0 overlaps
    assert not a.overlaps(Cell.from_range(4.0, 3.01, 5.0))
    # seed: sparse long prefill 241.0–244.2 against default 244.0–245.9 overlap by 0.2
    assert Cell.from_range(241.4, 241.0, 244.2).overlaps(Cell.from_range(244.5, 244.0, 245.9))


def test_cell_rel_width():
    # seed: "short-prompt prefill range is 43.0–44.7 tok/s (4%)", long decode 4.785–4.936 "(3%)"
    assert Cell.from_range(44.5, 43.0, 44.7).rel_width == pytest.approx(1.7 / 43.0)
    assert fmt_pct(Cell.from_range(44.5, 43.0, 44.7).rel_width, 0) == "4%"
    assert fmt_pct(Cell.from_range(4.868, 4.785, 4.936).rel_width, 0) == "3%"


def test_run_spread_seed_tuned_vs_tuned2():
    s = run_spread([3.430, 3.686])
    assert s == pytest.approx(0.256 / 3.430)  # 0.074636
    assert round(s * 100, 2) == 7.46
    assert fmt_pct(s) == "7.5%"
    assert run_spread([3.686, 3.430]) == s  # order does not matter
    # default arm: 2.684 vs 2.823 → 5.2 %
    assert fmt_pct(run_spread([2.684, 2.823])) == "5.2%"


def test_run_spread_needs_two_positive_runs():
    with pytest.raises(InputError, match="at least two runs"):
        run_spread([3.43])
    with pytest.raises(InputError, match="positive"):
        run_spread([0.0, 1.0])


def test_spreads_frame_per_arm_and_metric():
    f = pl.DataFrame(
        {
            "arm": ["tuned", "tuned", "tuned", "tuned", "batch"],
            "run": ["tuned", "tuned2", "tuned", "tuned2", "batch"],
            "metric": ["single", "single", "n8", "n8", "single"],
            "value": [3.430, 3.686, 3.444, 3.770, 3.618],
        }
    )
    out = spreads(f)
    assert out["arm"].to_list() == ["batch", "tuned", "tuned"]
    assert out["metric"].to_list() == ["single", "n8", "single"]
    assert out["spread"][0] is None  # one run: nothing measured, not 0
    assert out["spread"][1] == pytest.approx(0.326 / 3.444)
    assert out["spread"][2] == pytest.approx(0.256 / 3.430)


def test_ratio_change_and_formats():
    assert fmt_ratio(5.248 / 3.554) == "1.48x"
    assert fmt_ratio(4.868 / 3.328) == "1.46x"
    assert fmt_pct(change(4.988, 4.685), signed=True) == "+6.5%"
    assert fmt_pct(change(4.446, 4.868), signed=True) == "−8.7%"
    assert fmt_pct(0.0, signed=True) == "±0.0%"
    assert rel_diff(4.446, 4.868) == pytest.approx(0.422 / 4.446)
    assert rel_diff(4.868, 4.446) == rel_diff(4.446, 4.868)
    with pytest.raises(InputError, match="baseline is zero"):
        change(1.0, 0.0)


def test_interval_rate_seed():
    r = interval_rate(120, 2.699, 1446, 5.139)
    assert r.value == pytest.approx(1326 / 2.440)  # 543.44
    assert round(r.value) == 543
    assert r.label == INTERVAL_RATE_LABEL == "interval rate, not a throughput"
    assert "543 tok/s over the 120 → 1446 token interval" in r.describe()
    assert interval_rate(1446, 5.139, 120, 2.699).value == r.value  # order of points irrelevant
    with pytest.raises(InputError, match="times are equal"):
        interval_rate(120, 2.0, 1446, 2.0)


def test_smallest_mannwhitney_p_at_3_vs_3_is_0_10():
    from scipy.stats import mannwhitneyu

    # the most separated data possible: seed default vs tuned short decode, disjoint
    default = [3.529, 3.554, 3.571]
    tuned = [5.205, 5.248, 5.371]
    res = mannwhitneyu(default, tuned, alternative="two-sided", method="exact")
    assert res.pvalue == pytest.approx(0.10)
    assert min_mannwhitney_p(3, 3) == pytest.approx(res.pvalue)
    assert min_mannwhitney_p(2, 2) == pytest.approx(1 / 3)
    assert min_mannwhitney_p(4, 4) == pytest.approx(2 / 70)


def test_bootstrap_ci_of_median_of_three_is_min_max():
    assert bootstrap_median_distribution(3) == [Fraction(7, 27), Fraction(13, 27), Fraction(7, 27)]
    assert sum(bootstrap_median_distribution(5)) == 1
    assert bootstrap_median_ci([5.371, 5.205, 5.248]) == (5.205, 5.371)
    assert bootstrap_median_ci([5.371, 5.205, 5.248], level=0.5) == (5.205, 5.371)


def test_bootstrap_ci_agrees_with_scipy_resampling():
    import numpy as np
    from scipy.stats import bootstrap

    res = bootstrap(
        (np.array([5.205, 5.248, 5.371]),),
        np.median,
        method="percentile",
        n_resamples=2000,
        random_state=0,
    )
    assert (res.confidence_interval.low, res.confidence_interval.high) == (5.205, 5.371)


def test_small_n_notes_say_what_n3_allows():
    text = " ".join(small_n_notes(3))
    assert "0.10" in text and "p < 0.05" in text and "[min, max]" in text
    assert "unit of replication" in text


def test_mannwhitney_and_bootstrap_ratio_interval():
    from benchbook.analysis.stats import bootstrap_ratio_ci, mannwhitney_p

    assert mannwhitney_p([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]) == pytest.approx(2 / 252)
    assert mannwhitney_p([1, 2, 3], [4, 5, 6]) == pytest.approx(0.1)  # the floor at 3 vs 3
    ci = bootstrap_ratio_ci([10, 11, 12, 10.5, 11.5], [20, 22, 24, 21, 23])
    assert ci == bootstrap_ratio_ci([10, 11, 12, 10.5, 11.5], [20, 22, 24, 21, 23])  # seeded: same every render
    assert 20 / 12 <= ci[0] <= 2.0 <= ci[1] <= 24 / 10


def test_bootstrap_ratio_interval_is_reciprocal_when_both_sides_hold_the_same_values():
    # found by hypothesis: the same multiset in another order on each side gave (0.5, 2.0) one way
    # and (0.4, 2.0) the other, so a verdict could depend on which side was the baseline
    from benchbook.analysis.stats import bootstrap_ratio_ci

    xs, ys = [2.0, 4.0, 1.0, 1.0, 2.0, 1.0], [4.0, 1.0, 1.0, 1.0, 2.0, 2.0]
    a, b = bootstrap_ratio_ci(xs, ys), bootstrap_ratio_ci(ys, xs)
    assert b == pytest.approx((1 / a[1], 1 / a[0]))
    assert a[0] <= 1 <= a[1]
