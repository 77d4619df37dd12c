"""PD page sections on what the runs measured (pages/pd_measures.py), called on data/pd-prefill-cap:
the gains per card, Little's law, acceptance length and the request lifecycle they record."""

import json
from pathlib import Path

import pytest

from benchbook.pages import display, pd_measures, pd_view

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


@pytest.fixture(scope="module")
def v(page):
    """Every measures section, called once, as the notebook calls them."""
    mp = pytest.MonkeyPatch()
    out: dict = {}
    mp.setattr(display, "record", lambda name, value: out.__setitem__(name, json.loads(json.dumps(value, default=str))))
    try:
        blocks = [f(page) for f in (pd_measures.lifecycle, pd_measures.throughput, pd_measures.comparisons,
                                    pd_measures.littles_law, pd_measures.acceptance)]  # fmt: skip
    finally:
        mp.undo()
    assert all(str(b) for b in blocks)
    return out


def _gain(v, window, requests):
    return next(g for g in v["gains"] if g["window"] == window and f"{requests} requests" in g["context"])


def test_whole_and_native_gains(v):
    w = _gain(v, "whole", 640)
    assert w["baseline_value"] == pytest.approx(166.24) and w["candidate_value"] == pytest.approx(216.5483)
    assert round(w["change_pct"], 2) == 30.26
    assert round(_gain(v, "native", 640)["change_pct"], 2) == 32.27
    assert all(g["verdict"].startswith("unreplicated") for g in v["gains"])
    # the 320 screen is compared only with itself, never with the 640 confirmation
    assert round(_gain(v, "whole", 320)["change_pct"], 2) == 25.51
    assert not any("320" in g["context"] for g in v["gains"] if g["window"] == "native")


def test_littles_law_and_acceptance_length(v):
    ll = {x["run"]: x for x in v["littles"]}
    assert ll["cap1-n640"]["completion_rate"] == pytest.approx(2.5975)
    assert ll["cap1-n640"]["mean_e2e_s"] == pytest.approx(42.9285)
    assert round(ll["cap1-n640"]["lambda_w"], 3) == 111.507
    assert ll["cap2-n640"]["completion_rate"] == pytest.approx(3.3836)
    assert ll["cap2-n640"]["mean_e2e_s"] == pytest.approx(32.7640)
    assert ll["cap2-n640"]["lambda_w"] == pytest.approx(110.859, abs=2e-3)
    # the seeds' Concurrency is Σ E2EL / duration, λ × W by construction: agreement is not judged a pass
    assert all(x["status"] == "warn" for x in ll.values())
    al = {x["run"]: round(x["acceptance_length"], 4) for x in v["acceptance"]}
    assert al == {"cap1-n640": 5.7483, "cap2-n640": 5.7494}


def test_lifecycle_ttft_share(v):
    lc = {x["run"]: x for x in v["lifecycle"] if x["window"] == "whole"}
    assert lc["cap1-n640"]["ttft_share"] == pytest.approx(34.0264 / 42.9285)
    assert lc["cap1-n640"]["generating_s"] == pytest.approx(8.9021)
    assert lc["cap2-n640"]["ttft_share"] == pytest.approx(23.0 / 32.764)
    assert lc["cap2-n640"]["source"] == "approximate"  # TTFT printed only as 'about 23 s'


def test_sections_of_a_campaign_without_pd_summaries_are_empty():
    blank = pd_view.Page(None, None, "", 60.0, None, "t")
    assert [str(f(blank)) for f in (pd_measures.lifecycle, pd_measures.throughput, pd_measures.littles_law)] == [""] * 3
