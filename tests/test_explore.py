"""notebooks/explore.ipynb executes top to bottom with papermill on data/dsv4-163; row counts
recorded by the notebook agree with counts taken straight from the raw files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchbook.pipeline.execute import render_page

ROOT = Path(__file__).resolve().parents[1]
CAMPAIGN = ROOT / "data" / "dsv4-163"


def _raw_counts():
    m = json.loads((CAMPAIGN / "campaign.json").read_text())
    n = {"requests": 0, "phase_samples": 0, "memory_samples": 0, "memory_markers": 0, "gpu": 0}
    for r in m["runs"]:
        doc = json.loads((CAMPAIGN / r["path"] / f"{r['harness']}.json").read_text())
        if r["harness"] == "requests":
            n["requests"] += len(doc["requests"])
        elif r["harness"] == "phases":
            n["phase_samples"] += len(doc["samples"])
        else:
            n["memory_samples"] += len(doc["samples"])
            n["memory_markers"] += len(doc["markers"])
            n["gpu"] += sum(len(s["gpu_used_mib"]) for s in doc["samples"])
    return m, n


@pytest.fixture(scope="module")
def explored(tmp_path_factory):
    out = tmp_path_factory.mktemp("explore") / "explore.html"
    return render_page(ROOT / "notebooks" / "explore.ipynb", {"campaign": str(CAMPAIGN)}, out, title="explore")


def test_recorded_row_counts(explored):
    m, raw = _raw_counts()
    rows = explored.values["rows"]
    assert explored.values["campaign"] == "dsv4-163"
    assert rows["requests"] == raw["requests"] == 168  # nothing excluded in this campaign
    assert rows["phase_samples"] == raw["phase_samples"] == 72
    assert rows["memory_host"] == raw["memory_samples"] and rows["memory_gpu"] == raw["gpu"]
    assert rows["memory_markers"] == raw["memory_markers"]
    # 9 phase arms x 2 prompt classes x 5 metrics
    assert rows["phase_cells"] == 9 * 2 * 5
    # 8 counter series per sample (ttft/duration sum+count, 2 token types, 2 request statuses)
    assert rows["metric_deltas"] == 8 * raw["phase_samples"]
    # 7 request runs x (single + ladder 2/4/8 + interleave)
    assert rows["ladder"] == 7 * 5


def test_every_chart_drawn_and_offline(explored, open_page):
    rep = open_page(explored.html, table_ids=["bb-explore-frames"], screenshot="explore.png")
    assert rep.ok, rep.problems()
    assert rep.charts >= 4


BUNDLED = sorted(p.name for p in (ROOT / "data").iterdir() if (p / "campaign.json").is_file())


@pytest.mark.parametrize("name", BUNDLED)
def test_runs_on_every_bundled_campaign(name, tmp_path):
    res = render_page(
        ROOT / "notebooks" / "explore.ipynb", {"campaign": str(ROOT / "data" / name)}, tmp_path / "e.html", title="e"
    )
    rows = res.values["rows"]
    assert res.values["campaign"] == name
    m = json.loads((ROOT / "data" / name / "campaign.json").read_text())
    harnesses = {r["harness"] for r in m["runs"]}
    # the bundled results runs' files keep no per-request records: the notebook must still run
    assert (sum(rows.values()) > 0) == bool(harnesses - {"results"})
    if any(r["harness"] == "pd" for r in m["runs"]):  # a PD campaign: frames that hold the PD data
        from benchbook.analysis.disaggregation import analyse

        rep = analyse(ROOT / "data" / name)
        assert rows["pd_cells"] == len(rep.cells) > 0
        assert rows["pd_comparisons"] == len(rep.comparisons) > 0
        assert rows["phase_samples"] == rows["requests"] == 0


def test_charts_are_live_in_jupyterlab_and_static_svg_on_the_page(explored):
    import nbformat

    from benchbook.pages.charts import VEGALITE_MIME

    nb = nbformat.read(str(explored.notebook), as_version=4)
    specs = [
        o["data"][VEGALITE_MIME] for c in nb.cells for o in c.get("outputs", []) if VEGALITE_MIME in o.get("data", {})
    ]
    assert len(specs) >= 4  # latency, ladder, phase split, memory: JupyterLab draws these with Vega-Lite
    assert sum('"bind": "scales"' in json.dumps(s) for s in specs) >= 2  # pan and zoom
    assert all('"tooltip"' in json.dumps(s) for s in specs)
    html = explored.html.read_text()
    assert "<script" not in html and html.count("<svg") >= 4  # the page itself stays static


def test_results_runs_per_request_records_are_explored(tmp_path):
    """A results campaign whose files keep each request (vllm bench serve --save-detailed): t.requests
    had 0 rows and the latency chart said "No whole-request runs" though the run held 30 records."""
    import polars as pl

    from benchbook.commands.cli import main
    from benchbook.ingest import formats
    from benchbook.pages import explore as ex

    src = ROOT / "tests" / "fixtures" / "tools" / "vllm-0.32.0+cpu" / "bench_serve.json"
    (raw,) = formats.read(src)
    assert main(["init", "-q", str(tmp_path / "c"), str(src)]) == 0
    t = ex.load(str(tmp_path / "c"))
    res = t.requests.filter(pl.col("harness") == "results")
    assert res.height == t.requests.height == raw.requests.height == 30
    assert res["latency"].to_list() == raw.requests["e2e_s"].to_list()
    assert res["ttft"].to_list() == raw.requests["ttft_s"].to_list()
    assert res["start"].min() == 0 and set(res["n"]) == {raw.config["max_concurrency"]}
    chart = ex.latency_chart(t).html
    assert "<svg" in chart and "No per-request records" not in chart


def test_every_frame_as_pandas_with_arrow_columns():
    """t.pandas.<frame>: the same rows and columns as the polars frame, pyarrow-backed."""
    import pandas as pd

    from benchbook.pages import explore as ex

    t = ex.load(str(CAMPAIGN))
    for name in ex.Tables.FRAMES:
        frame, pframe = getattr(t, name), getattr(t.pandas, name)
        assert isinstance(pframe, pd.DataFrame) and pframe.shape == frame.shape, name
        assert list(pframe.columns) == frame.columns
        assert all(isinstance(d, pd.ArrowDtype) for d in pframe.dtypes), name
    views = t.pandas
    assert views.requests is views.requests  # converted once
    assert t.pandas.requests["latency"].sum() == pytest.approx(t.requests["latency"].sum())
    with pytest.raises(AttributeError, match="no frame"):
        t.pandas.nothing
