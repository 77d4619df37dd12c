"""The engine's gauges over each run's window (analysis/engine_gauges.py): what a capture-file
campaign gets (nothing: no server to ask), fetched once per campaign and arm set, and the per-run
summary of a gauge frame. The fetch from a real Prometheus server is tested in
tests/test_promsource_campaign.py."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from benchbook.analysis.engine_gauges import EngineGauges, engine_gauges
from benchbook.analysis.tables import holding
from benchbook.ingest.campaign import load_campaign

DSV4 = Path(__file__).resolve().parents[1] / "data" / "dsv4-163"


def test_a_campaign_of_capture_files_has_no_gauges():
    camp = load_campaign(DSV4)
    with holding(camp):  # an analysis's tables (benchbook.analysis.tables): fetched once per arm set
        g = engine_gauges(camp)
        assert (g.frame, g.spans, g.notes, g.sources) == (None, [], [], [])
        assert g.as_dict() == {"spans": [], "series": [], "notes": []}
        assert engine_gauges(camp) is g and engine_gauges(camp, list(camp.arms)) is g
        assert engine_gauges(camp, ["default"]) is not g
    assert engine_gauges(camp) is not g  # outside an analysis nothing is kept


def test_series_per_run_and_quantity():
    frame = pl.DataFrame(
        {
            "run": ["b", "a", "a", "a"],
            "quantity": ["running", "running", "running", "waiting"],
            "t": [0.0, 0.0, 1.0, 0.0],
            "s": [0.0, 0.0, 1.0, 0.0],
            "value": [3.0, 1.0, 5.0, 0.0],
        }
    )
    g = EngineGauges(frame, [{"run": "a", "t0": 0.0, "t1": 1.0}], [], ["http://127.0.0.1:9090"])
    assert g.series() == [
        {"run": "a", "quantity": "running", "points": 2, "min": 1.0, "max": 5.0, "mean": 3.0},
        {"run": "a", "quantity": "waiting", "points": 1, "min": 0.0, "max": 0.0, "mean": 0.0},
        {"run": "b", "quantity": "running", "points": 1, "min": 3.0, "max": 3.0, "mean": 3.0},
    ]
