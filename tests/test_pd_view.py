"""The PD page's view of the analysis (pages/pd_view.py): load's parameter checks, and the look-ups and
formatters the PD sections share, on data/pd-prefill-cap."""

import json
from pathlib import Path

import pytest

from benchbook.errors import InputError
from benchbook.pages import display, pd_view

ROOT = Path(__file__).resolve().parents[1]
PD = ROOT / "data" / "pd-prefill-cap"


@pytest.fixture(scope="module")
def page():
    return pd_view.load(str(PD))


@pytest.fixture
def recorded(monkeypatch):
    """What the sections record (``bd.record``), by name, as values.json would hold it."""
    out: dict = {}

    def record(name, value):
        assert name not in out, f"{name} recorded twice"
        out[name] = json.loads(json.dumps(value, default=str))

    monkeypatch.setattr(display, "record", record)
    return out


def test_load_reads_the_analysis_once_and_keeps_the_window_rule(page):
    assert page.analysis is not None and page.report is page.analysis.pd
    assert page.baseline_arm == "cap1" and page.min_window_s == 60.0 and page.min_window_requests is None
    assert page.report.caveats  # decided by the analysis, formatted by pd_page.caveats


@pytest.mark.parametrize(
    ("kw", "where"), [({"min_window_s": 0}, "min_window_s"), ({"baseline_arm": "nope"}, "baseline_arm")]
)
def test_bad_parameters_name_the_parameter(kw, where):
    with pytest.raises(InputError) as e:
        pd_view.load(str(PD), **kw)
    assert e.value.location == where


def test_cell_lookups_and_source_marks(page):
    assert pd_view.val(page, "cap1-n640", "whole", "output_tok_s_per_card") == pytest.approx(166.24)
    assert pd_view.src(page, "cap2-n640", "whole", "mean_ttft_s") == "approximate"
    assert pd_view.val(page, "cap1-n640", "whole", "no such figure") is None
    assert pd_view.num(None, "{:.1f}") is None
    assert pd_view.num(2.345, "{:.1f}", "recorded") == "2.3"
    assert "approximate" in str(pd_view.num(2.345, "{:.1f}", "approximate"))


def test_runs_in_display_order_with_their_load_and_context(page):
    order = [r.id for r in pd_view.runs_by_purpose(page)]
    assert order[:2] == ["cap1-n640", "cap2-n640"] and set(order[2:]) == {"cap1-n320", "cap2-n320"}
    assert pd_view.load_text(page, pd_view.runs_by_purpose(page)[0]).startswith("640 requests")
    ctx = pd_view.ctx(page)
    assert ctx.startswith("prompt ") and "16 cards (P + D)" in ctx
