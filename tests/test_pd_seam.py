"""PD page sections from the admission simulator (pages/pd_seam.py), called on data/pd-prefill-cap:
the batch seam per cap and the simulated batch counts beside the reported ones."""

import json
from pathlib import Path

import pytest

from benchbook.pages import display, pd_seam, pd_view

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


def test_simulator_batch_counts_and_seam(page, recorded):
    assert str(pd_seam.batch_seam(page)) and str(pd_seam.admission(page))
    v = recorded
    counts = {r["max_requests"]: r["batches"] for r in v["admission"] if r["requests"] == 320}
    assert counts == {1: 960, 2: 645, 3: 645, 4: 645}
    seam = v["seam"]["sequences"]
    flat = lambda seq: [" + ".join(f"{p['request']} {p['new_tokens']}" for p in b) for b in seq]  # noqa: E731
    assert flat(seam["cap1"])[:4] == ["A 8192", "A 8192", "A 4", "B 8192"]
    assert flat(seam["cap2"]) == [
        "A 8192",
        "A 8192",
        "A 4 + B 8064",
        "B 8192",
        "B 132 + C 7936",
        "C 8192",
        "C 260 + D 7808",
    ]


def test_admission_shows_the_reported_counts_beside_the_simulation(page, recorded):
    html = str(pd_seam.admission(page))
    bc = recorded["batch_composition"][0]
    assert (bc["reports"], bc["multi_request_batches"], bc["kind"]) == (458, 217, "reported counts (no log lines)")
    assert "645" in html and "960" in html


def test_a_campaign_without_pd_summaries_has_no_seam(recorded):
    blank = pd_view.Page(None, None, "", 60.0, None, "t")
    assert str(pd_seam.batch_seam(blank)) == str(pd_seam.admission(blank)) == ""
    assert recorded == {}  # nothing recorded: the section is left out
