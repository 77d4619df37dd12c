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


def test_figures_carry_the_precision_they_have():
    """numfmt.fmt_num, the pages' default for a measured figure: a user's page showed "1091.400" for
    1091.356 (a value rounded, then printed with 3 decimals) and "0.000 ms" for a 0.0027 ms TPOT."""
    from benchbook.numfmt import fmt_num

    assert fmt_num(1091.356) == "1091.4" and fmt_num(552.137) == "552.14" and fmt_num(12013.4) == "12013"
    # the seed pages' 3 decimals where a figure has them
    assert fmt_num(4.8683) == "4.868" and fmt_num(11.78) == "11.780" and fmt_num(0.175) == "0.175"
    # never zero for a value that is not: two significant digits
    assert fmt_num(0.0027) == "0.0027" and fmt_num(0.0456) == "0.046" and fmt_num(4.9e-7) == "0.00000049"
    assert fmt_num(0.0) == "0.000" and fmt_num(-3.2) == "-3.200" and fmt_num(7) == "7"
    # transcribed figures (the PD page): up to 4 decimals, never more than recorded
    pd = lambda v: fmt_num(v, 4, sig=7, trim=True)  # noqa: E731
    assert [pd(v) for v in (166.24, 216.5483, 23.0, 2.5975, 42.9285, 2659.84)] == [
        "166.24",
        "216.5483",
        "23",
        "2.5975",
        "42.9285",
        "2659.84",
    ]
    assert fmt_num(float("nan")) == "nan" and fmt_num(float("inf")) == "∞"


def test_a_table_formats_raw_floats_with_their_precision():
    from benchbook.pages import display as bd

    html = str(bd.table([{"rate": 1091.356, "tpot": 0.0027, "wall": 4.8683}], id="t"))
    assert ">1091.4<" in html and ">0.0027<" in html and ">4.868<" in html
    assert "1091.356" not in html and "0.000<" not in html
    html = str(bd.table([{"rate": 1091.356}], id="t", float_format="{:.2f}"))
    assert ">1091.36<" in html  # an explicit format still wins
