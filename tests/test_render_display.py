"""benchbook.pages.display and benchbook.pages.charts: escaping, fixed ids, deterministic output (no kernel)."""

from __future__ import annotations

from pathlib import Path

import altair as alt
import polars as pl
import pytest

from benchbook.pages import charts
from benchbook.pages import display as bd

EVIL = '"><img src=x onerror=alert(1)><script>alert(2)</script>'


def test_table_escapes_every_input_string_and_has_a_fixed_id():
    df = pl.DataFrame({EVIL: [EVIL, "ok"], "x": [1.23456, None], "n": [1, 2]})
    html = bd.table(df, id="t-1", caption=EVIL, note=EVIL, formats={"x": "{:.2f}"}).html
    assert "<img" not in html and "<script" not in html
    # header, cell, caption, note (a long token in a cell may break after its separators: <wbr>)
    assert html.replace("<wbr>", "").count("&lt;img src=x onerror=alert(1)&gt;") == 4
    assert 'id="bb-t-1"' in html
    assert '<td class="num">1.23</td>' in html and "—" in html
    assert bd.table(df, id="t-1", caption=EVIL, note=EVIL, formats={"x": "{:.2f}"}).html == html


def test_table_keeps_marks_unescaped_and_rejects_bad_ids():
    df = pl.DataFrame({"verdict": ["x"]}).with_columns(pl.lit(None).alias("m"))
    html = bd.table([{"verdict": bd.mark("noise"), "arm": EVIL}], id="v").html
    assert 'class="bb-mark bb-mark-noise"' in html and "within noise — not a result" in html
    with pytest.raises(ValueError):
        bd.table(df, id='x" onclick="y')
    with pytest.raises(ValueError):
        bd.mark("great")


def test_text_and_heading_escape_values_not_the_template():
    assert bd.text("Title: <em>{t}</em>", t=EVIL).html.startswith("<p>Title: &lt;em&gt;")
    assert "<img" not in bd.text("{t}", t=EVIL).html
    assert "<img" not in bd.heading(EVIL, 1).html
    assert bd.text("{m} here", m=bd.mark("result")).html.count("<span") == 2


def test_how_to_read_lists_the_rules_and_marks():
    html = bd.how_to_read(n_per_cell="3 runs", warmup="1 round", noise_rule=EVIL).html
    assert "How to read this page" in html and "<img" not in html
    assert "a result" in html and "within noise" in html


def test_provenance_hashes_inputs_and_honours_source_date_epoch(tmp_path, monkeypatch):
    (tmp_path / "b.json").write_text("{}")
    (tmp_path / "a.txt").write_text("hello")
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "0")
    monkeypatch.setenv("BENCHBOOK_GIT_SHA", "abc")
    html = bd.provenance(inputs=[tmp_path], parameters={"title": EVIL, "n": 3}).html
    assert "1970-01-01T00:00:00Z" in html and "git abc" in html
    assert "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824" in html  # sha256("hello")
    assert html.index("a.txt") < html.index("b.json")
    assert "<img" not in html and "polars" in html
    assert bd.provenance(inputs=[tmp_path], parameters={"title": EVIL, "n": 3}).html == html


def test_chart_is_inline_svg_with_prefixed_ids_and_no_script():
    df = pl.DataFrame({"n": [1, 2, 4], "rate": [1.0, 2.0, 3.5], "arm": ["a", "b", "a"]})
    ch = alt.Chart(df).mark_bar().encode(x="n:O", y="rate:Q", color="arm:N")
    svg = charts.to_svg(ch)
    assert svg.startswith("<svg") and "<script" not in svg and "http://" not in svg.replace("http://www.w3.org", "")
    assert svg == charts.to_svg(ch)
    fig = bd.chart(ch, id="rates", caption=EVIL).html
    assert 'id="bb-rates"' in fig and "<img" not in fig
    import re

    ids = re.findall(r'\bid="([^"]+)"', fig)
    assert all(i.startswith("bb-rates") for i in ids)
    assert charts.PALETTE[0] in svg  # house theme applied


def test_record_rejects_values_that_are_not_json():
    with pytest.raises(TypeError):
        bd._jsonable(object())
    assert bd._jsonable(pl.DataFrame({"a": [1]})) == [{"a": 1}]
    assert bd._jsonable({"x": float("nan")}) == {"x": None}


def test_numbers_and_text_starting_with_a_number_are_right_aligned_header_included():
    html = bd.table(
        [{"run": "serial", "rate": "2.684 tok/s", "n": 3}, {"run": "tuned2", "rate": "3.430 tok/s", "n": 3}], id="r"
    ).html
    assert '<th scope="col">run</th>' in html
    assert '<th scope="col" class="num">rate</th>' in html and '<td class="numtext">2.684 tok/s</td>' in html
    assert '<th scope="col" class="num">n</th>' in html and '<td class="num">3</td>' in html
    prose = bd.table([{"load": "640 requests, C128, 6 req/s"}, {"load": "320 requests"}], id="p").html
    assert '<th scope="col">load</th>' in prose  # starts with a number, but it is words


def test_the_font_stack_names_cjk_families_and_stays_local():
    css = (Path(charts.__file__).parents[1] / "templates" / "benchbook" / "page.css").read_text()
    for family in ("Noto Sans CJK SC", "Source Han Sans SC", "PingFang SC", "Microsoft YaHei", "WenQuanYi Micro Hei"):
        assert f'"{family}"' in css and family in charts.FONT
    assert "@font-face" not in css and "url(" not in css


def test_a_long_token_may_break_inside_its_cell_and_stays_escaped():
    long = "DEEPSEEK_GPU_PREFILL_MOE_MAX_CACHED_LAYERS" + EVIL
    html = bd.table([{"v": long, "w": "short words only"}], id="l").html
    # it breaks after its separators, never mid-word ("…SPARSE_A RENA=12" on the ablation page)
    assert '<span class="bb-long">DEEPSEEK_<wbr>GPU_<wbr>PREFILL_<wbr>MOE_' in html and "<img" not in html
    assert "short words only</td>" in html
    env = bd.table([{"Label": "POCKETLLM_CPP_DECODE_SPARSE_ARENA=12"}], id="e").html
    assert "SPARSE_<wbr>ARENA=<wbr>12" in env


def test_a_figure_with_range_and_ratio_wraps_between_its_parts():
    """A compare table of ten such columns was 2095 px wide in a 1080 px frame: each cell now wraps
    between its median, its range (after the dash) and its ratio, each part whole."""
    html = bd.table([{"Run": "a", "tok/s": "146.56 (93.75–199.37) (1.768x)"}], id="f").html
    assert (
        '<td class="numtext"><span class="bb-nw">146.56</span> <span class="bb-nw">(93.75–</span><wbr>'
        '<span class="bb-nw">199.37)</span> <span class="bb-nw">(1.768x)</span></td>'
    ) in html
    wide = bd.table([{f"c{i}": "1.0 (0.9–1.1)" for i in range(bd.MANY_COLUMNS)}], id="w").html
    assert 'class="bb-table bb-many"' in wide


def test_findings_box_lists_each_line_linked_to_its_section_escaped():
    box = bd.findings_box(
        [bd.BoxLine("regression", EVIL, "comparisons"), bd.BoxLine("fail", "clamped", "clamps")], headline=EVIL
    ).html
    assert box.index('href="#sec-comparisons"') < box.index('href="#sec-clamps"')
    assert "<img" not in box and 'id="bb-findings"' in box and bd.TOC_PLACEHOLDER in box
    assert "bb-mark-regression" in box and "bb-mark-fail" in box
    with pytest.raises(ValueError):
        bd.BoxLine("great", "x", "s")
    with pytest.raises(ValueError):
        bd.BoxLine("fail", "x", 'x" onclick="y')
    assert "Nothing to report." in bd.findings_box([], headline="0 results").html


def test_collapsed_keeps_its_body_in_the_html_and_headings_get_section_ids():
    html = bd.collapsed(EVIL, bd.table([{"a": 1}], id="folded")).html
    assert html.startswith('<details class="bb-collapsed"><summary>&quot;&gt;&lt;img')
    assert 'id="bb-folded"' in html and "<img" not in html
    assert bd.collapsed("s", bd.Block("<p>x</p>"), open=True).html.startswith('<details class="bb-collapsed" open>')
    assert bd.heading("Checks", id="checks").html == '<h2 id="sec-checks">Checks</h2>'


def test_an_interactive_chart_is_live_in_jupyterlab_and_static_svg_on_the_page():
    d = pl.DataFrame({"x": [1, 2, 3], "y": [2.0, 1.0, 3.0]})
    ch = alt.Chart(d).mark_point().encode(x="x:Q", y="y:Q", tooltip=["x", "y"]).interactive()
    block = bd.chart(ch, id="live", interactive=True)
    bundle = block._repr_mimebundle_()
    assert set(bundle) == {charts.VEGALITE_MIME, "text/html"}
    assert any(p.get("bind") == "scales" for p in bundle[charts.VEGALITE_MIME].get("params", []))
    assert "<svg" in bundle["text/html"] and "<script" not in bundle["text/html"]
    assert not hasattr(bd.chart(ch, id="still"), "_repr_mimebundle_")


def test_a_forest_chart_draws_each_ratio_its_range_and_the_noise_band():
    rows = [
        {"group": "b vs a", "label": f"figure {i}", "ratio": r, "lo": r * 0.95, "hi": r * 1.05}
        | {"band_lo": 1 / 1.075, "band_hi": 1.075, "verdict": v}
        for i, (r, v) in enumerate([(1.01, "within noise"), (1.48, "improvement"), (0.91, "regression")])
    ]
    svg = charts.to_svg(charts.forest(rows))
    assert "<script" not in svg and all(f"figure {i}" in svg for i in range(3))
    assert charts.VERDICT_COLOURS["regression"] in svg and charts.VERDICT_COLOURS["improvement"] in svg


def test_charts_are_validated_by_altair_under_test_and_the_spec_is_the_same_without(monkeypatch):
    df = pl.DataFrame({"n": [1, 2, 4], "rate": [1.0, 2.0, 3.5]})
    good = alt.Chart(df).mark_line().encode(x="n:Q", y="rate:Q")
    bad = alt.Chart(df).mark_line().encode(x=alt.X("n:Q"), y="rate:Q")
    bad.encoding.x.scale = {"type": "not-a-scale"}  # set after construction: only to_dict's validation sees it
    assert charts.validating()  # tests/conftest.py: every chart a test builds is checked
    validated = charts.spec(good)
    with pytest.raises(Exception, match="not-a-scale"):
        charts.spec(bad)
    monkeypatch.delenv(charts.VALIDATE_ENV)
    assert not charts.validating()
    assert charts.spec(good) == validated  # rendering without validation builds the same spec
    assert charts.spec(bad)["encoding"]["x"]["scale"] == {"type": "not-a-scale"}
