"""The PD page: papermill runs notebooks/pd.ipynb over data/pd-prefill-cap; tests assert on pd.values.json.

The sections on what the runs measured are tested by calling them (tests/test_pd_measures.py,
tests/test_pd_seam.py)."""

import json
from pathlib import Path

import pytest

from benchbook.pipeline.offline import scan_html

ROOT = Path(__file__).resolve().parents[1]
PD = ROOT / "data" / "pd-prefill-cap"


@pytest.fixture(scope="module")
def pd_page(bundled_reports):
    """data/pd-prefill-cap's PD page from the run's `render --all data` (conftest: bundled_reports)."""
    return bundled_reports / PD.name / "pd.html"


@pytest.fixture(scope="module")
def v(pd_page):
    return json.loads(pd_page.with_suffix(".values.json").read_text())


def test_screen_native_window_is_too_short(v):
    w = {c["name"].split(": ")[-1]: c for c in v["window_checks"]}
    assert w["cap2-n320"]["status"] == "fail" and "50.67 s is shorter than 60 s" in w["cap2-n320"]["detail"]
    assert w["cap1-n640"]["status"] == "pass" and "published lower bound" in w["cap1-n640"]["detail"]
    assert v["window_rule"] == {"min_window_s": 60.0, "min_window_requests": None}


def test_caveats_marks_and_reported_counts(v):
    cav = " ".join(v["caveats"])
    assert "No per-request records: concurrency is not measured independently" in cav
    assert "Prefill batch counts are reported counts, no log lines" in cav
    assert "unreplicated" in cav and "cap2-n320's native window fails" in cav
    marks = {(m["run"], m["value"]): m["mark"] for m in v["marks"]}
    assert marks[("cap2-n640", "$.windows.whole.metrics.TTFT.Average")] == "approximate"
    assert marks[("cap2-n320", "reported.prefill_batches")] == "reported"
    bc = v["batch_composition"][0]
    assert (bc["reports"], bc["multi_request_batches"], bc["kind"]) == (458, 217, "reported counts (no log lines)")
    assert v["provenance"] == "transcribed" and v["exclusions"] == []


def test_page_is_self_contained_and_draws_in_chromium(pd_page, open_page):
    assert scan_html(pd_page.read_text(), str(pd_page)) == []
    rep = open_page(
        pd_page,
        table_ids=[
            "bb-pd-gains",
            "bb-pd-littles",
            "bb-pd-seam-table",
            "bb-pd-admission-table",
            "bb-pd-windows",
            "bb-pd-marks",
        ],
        screenshot="pd-prefill-cap.png",
    )
    assert rep.ok, rep.problems()
    assert rep.charts >= 4
