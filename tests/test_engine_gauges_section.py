"""The baseline page's engine-state section (pages/engine_gauges_section.py): nothing for a campaign of
capture files; the analysis's gauges charted, with its notes, where a Prometheus source gave them."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import polars as pl

from benchbook.analysis.engine_gauges import EngineGauges
from benchbook.pages import baseline_page, display, engine_gauges_section

DSV4 = Path(__file__).resolve().parents[1] / "data" / "dsv4-163"


def test_a_campaign_of_capture_files_gets_no_section():
    assert str(engine_gauges_section.engine_gauges(baseline_page.load(str(DSV4)))) == ""


def test_the_gauges_the_analysis_fetched_are_charted(monkeypatch):
    frame = pl.DataFrame(
        {"run": ["r1"] * 4, "quantity": ["running", "running", "kv_cache_usage", "kv_cache_usage"],
         "t": [0.0, 1.0, 0.0, 1.0], "s": [0.0, 1.0, 0.0, 1.0], "value": [1.0, 2.0, 0.1, 0.2]}
    )  # fmt: skip
    eg = EngineGauges(frame, [{"run": "r1", "t0": 0.0, "t1": 1.0}], ["r2: no gauge series"], ["http://127.0.0.1:9090"])
    page = SimpleNamespace(arms=["a"], analysis=SimpleNamespace(engine_gauges=lambda arms: eg))
    recorded = {}
    monkeypatch.setattr(display, "record", lambda name, value: recorded.__setitem__(name, value))
    html = str(engine_gauges_section.engine_gauges(page))
    assert recorded["engine_gauges"] == eg.as_dict()
    assert 'id="bb-engine-gauges"' in html and "<svg" in html and "http://127.0.0.1:9090" in html
    assert "r2: no gauge series" in html
