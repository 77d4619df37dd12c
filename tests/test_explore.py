"""notebooks/explore.ipynb executes top to bottom with papermill on data/dsv4-163; row counts
recorded by the notebook agree with counts taken straight from the raw files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchbook.pipeline.execute import render_page

pytestmark = pytest.mark.slow

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
    # results runs (other tools' files) have no explore frames yet: the notebook must still run
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
