"""The shared number formats (benchbook.numfmt), which analysis and pages both use."""

from benchbook.analysis import stats
from benchbook.numfmt import fmt_pct, fmt_ratio


def test_percentages_signed_and_unsigned():
    assert fmt_pct(0.0746) == "7.5%"
    assert fmt_pct(-0.087) == "−8.7%"
    assert fmt_pct(0.065, signed=True) == "+6.5%"
    assert fmt_pct(-0.087, signed=True) == "−8.7%"
    assert fmt_pct(0.0001, signed=True) == "±0.0%"
    assert fmt_pct(float("inf")) == "∞"
    assert fmt_ratio(1.6189) == "1.62x"


def test_stats_keeps_the_names_for_analysis_callers():
    assert stats.fmt_pct is fmt_pct and stats.fmt_ratio is fmt_ratio
