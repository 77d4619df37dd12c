"""Charts bin or aggregate before Altair sees per-request or per-sample rows (issue 22, real sizes).

The helpers of benchbook.pages.charts are checked on hand-made frames; one render builds a compare
page from 14 generated `vllm bench serve --save-detailed` files of 1,000 requests each (the size that
failed with Altair's MaxRowsError) and checks every chart stays inside the row budget and the page
under 5 MiB. The 100k-record case is in `make bench` (bench/run.py, "sizes")."""

import json
import re

import polars as pl
import pytest

from benchbook.commands.cli import main
from benchbook.pages import charts
from vllm_results import write_results


def test_thin_sorted_keeps_ends_and_order():
    pts = list(range(1001))
    out = charts.thin_sorted(pts, 11)
    assert out == [0, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000]
    assert charts.thin_sorted(pts[:5], 11) == pts[:5]


def test_per_series_shares_the_budget():
    assert charts.per_series(50, budget=4000) == 80
    assert charts.per_series(50, budget=4000, cap=40) == 40
    assert charts.per_series(1000, budget=4000) == 10  # the floor


def test_bin_series_keeps_extremes_per_group():
    # run a: x 0..99, y = x except one slow request (y=1000 at x=57); run b: constant 5
    a = pl.DataFrame({"run": ["a"] * 100, "x": [float(i) for i in range(100)], "y": [float(i) for i in range(100)]})
    a = a.with_columns(pl.when(pl.col("x") == 57).then(1000.0).otherwise(pl.col("y")).alias("y"))
    b = pl.DataFrame({"run": ["b"] * 10, "x": [float(i) for i in range(10)], "y": [5.0] * 10})
    out = charts.bin_series(pl.concat([a, b]), x="x", y="y", by=["run"], bins=10)
    ra = out.filter(pl.col("run") == "a")
    assert ra.height == 10 and ra["n"].sum() == 100
    # bin width 9.9: x=57 falls in bin 5 (49.5..59.4), whose values are 50..59 with 57 replaced
    b5 = ra.row(5, named=True)
    assert (b5["lo"], b5["hi"], b5["n"]) == (50.0, 1000.0, 10)
    assert b5["mid"] == pytest.approx(54.5)  # median of 50..56, 58, 59, 1000
    assert b5["x"] == pytest.approx(99 / 10 * 5.5)
    rb = out.filter(pl.col("run") == "b")
    assert rb["n"].sum() == 10 and set(rb["mid"]) == {5.0}


def test_histogram_counts_every_value_once():
    f = pl.DataFrame({"g": ["x"] * 7 + ["y"] * 3, "v": [0.0, 1, 2, 3, 4, 5, 10, 10, None, float("nan")]})
    h = charts.histogram(f, value="v", by=["g"], bins=5)
    assert h.filter(pl.col("g") == "x")["count"].sum() == 7
    assert h.filter(pl.col("g") == "y")["count"].sum() == 1  # null and NaN are not values
    assert h["lo"].min() == 0.0 and h["hi"].max() == pytest.approx(10.0)
    first = h.row(0, named=True)
    assert (first["lo"], first["hi"], first["count"]) == (0.0, 2.0, 2)  # 0 and 1


def test_compare_page_of_14_files_of_1000_requests_renders_within_budget(tmp_path):
    files = write_results(tmp_path / "results", 14, 1000, seed=1)
    out = tmp_path / "out"
    assert main(["render", "--compare", *map(str, files), "--out", str(out)]) == 0
    html = (out / "compare.html").resolve()
    assert html.stat().st_size < 5 * 2**20
    values = json.loads((out / "compare.values.json").read_text())
    views = values["request_views"]
    assert len(views) == 14 and sum(v["total"] for v in views) == 14_000
    text = html.read_text()
    for id_ in ("request-ecdf", "request-timeline"):
        assert f'id="bb-{id_}"' in text
    # the timeline is binned: its caption says how, and no chart carries one mark per request
    assert "equal time bins" in text
    # every file has errored requests (about 1%): no outcome row is folded away
    assert all(v["shares"]["errored"] > 0 for v in views)
    assert 'id="bb-request-outcomes"' in text and 'id="bb-request-outcomes-rest"' not in text
    # 56 percentile rows: the 28 TTFT and E2E rows stay in view, TPOT and ITL are folded below
    m = re.search(
        r'<details class="bb-collapsed"><summary>(\d+) more rows</summary>.*?id="bb-request-percentiles-rest"', text
    )
    assert m and m.group(1) == "28"


def test_request_view_charts_stay_inside_the_row_budget(monkeypatch):
    """50 runs x 2,000 requests: each chart carries at most ROW_BUDGET rows (Altair stops at 5000)."""
    from benchbook.ingest import formats
    from benchbook.pages import display as bd
    from benchbook.pages import request_views as rv
    from vllm_results import result

    runs = []
    for k in range(50):
        doc = result(2000, seed=k)
        r = formats.BenchmarkRun("x", "vllm-bench-serve", formats.make_config(), formats.make_summary())
        r.requests = formats.requests_frame(
            {
                "index": list(range(2000)),
                "start_s": doc["start_times"],
                "ttft_s": doc["ttfts"],
                "e2e_s": doc["latencies"],
                "itl": doc["itls"],
                "prompt_tokens": doc["input_lens"],
                "completion_tokens": doc["output_lens"],
                "success": [not e for e in doc["errors"]],
                "error": [e or None for e in doc["errors"]],
            }
        )
        runs.append((f"run-{k}", f"conc {k % 7}", r))
    from benchbook.analysis.per_request import views

    vs = views(runs)
    built = []
    monkeypatch.setattr(rv.bd, "chart", lambda ch, **kw: built.append(ch) or bd.Block(""))
    rv._ecdf_chart(vs)
    rv._timeline_chart(vs)
    assert len(built) == 2
    rows = [charts.data_rows(c) for c in built]
    assert all(0 < n <= charts.ROW_BUDGET for n in rows), rows


def test_explore_latency_chart_bins_past_the_budget(tmp_path):
    """explore.latency_chart drew one dot per request: 8,400 requests (2 arms x 2 runs x 2,100) were a
    MaxRowsError. Past the budget it draws per run and scenario the median and min-max per time bin."""
    from benchbook.pages import explore

    out = tmp_path / "c"
    args = ["synth", "--out", str(out), "--kind", "batch", "--runs", "2", "--requests", "2100", "--no-memory"]
    assert main([*args, "--snapshots", "0"]) == 0
    t = explore.load(str(out))
    assert t.requests.height > charts.ROW_BUDGET
    block = explore.latency_chart(t)
    assert 0 < charts.data_rows(block.spec) <= charts.ROW_BUDGET
    assert "binned" in str(block)
