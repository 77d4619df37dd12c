"""The baseline page's memory section (pages/memory_section.py), called without a notebook on
data/dsv4-163: the deltas between the page's arms are the analysis's, each shown once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchbook.pages import baseline_page, display, memory_section

DSV4 = Path(__file__).resolve().parents[1] / "data" / "dsv4-163"


@pytest.fixture(scope="module")
def page():
    return baseline_page.load(str(DSV4))


@pytest.fixture
def recorded(monkeypatch):
    """What the sections record (``bd.record``), by name, as values.json would hold it."""
    out: dict = {}

    def record(name, value):
        assert name not in out, f"{name} recorded twice"
        rows = value.to_dicts() if hasattr(value, "to_dicts") else value  # a frame: its rows, as values.json
        out[name] = json.loads(json.dumps(rows, default=str))

    monkeypatch.setattr(display, "record", record)
    return out


def test_memory_shows_the_analysis_deltas_between_the_page_arms(page, recorded):
    html = str(memory_section.memory(page))
    deltas = memory_section.memory_deltas(page)
    assert deltas and all(d.baseline in page.arms and d.candidate in page.arms for d in deltas)
    assert [d["text"] for d in recorded["memory_deltas"]] == [d.describe() for d in deltas]
    peak = next(d for d in deltas if (d.baseline, d.candidate, d.quantity) == ("default", "tuned", "peak"))
    assert peak.is_result and round(peak.delta_gib, 2) == 7.38
    assert {m["run"] for m in recorded["memory"]} >= {"memory-default", "memory-tuned"}
    assert "memory-default" in html
