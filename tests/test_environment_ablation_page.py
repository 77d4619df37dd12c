"""The environment ablation page's sections (pages/environment_ablation_page.py), called on
data/dsv4-163 without a notebook: what each records, the charts per cell, and that the interaction
sentences are the analysis's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchbook.pages import ablation_page, display, environment_ablation_page

CAMPAIGN = Path(__file__).resolve().parents[1] / "data" / "dsv4-163"


@pytest.fixture(scope="module")
def page():
    p = ablation_page.load(str(CAMPAIGN))
    assert isinstance(p, environment_ablation_page.Page)  # arms that differ by environment variables
    return p


@pytest.fixture
def recorded(monkeypatch):
    """What the sections record (``bd.record``), by name, as values.json would hold it."""
    out: dict = {}

    def record(name, value):
        assert name not in out, f"{name} recorded twice"
        out[name] = json.loads(json.dumps(value, default=str))

    monkeypatch.setattr(display, "record", record)
    return out


def test_interactions_format_what_the_analysis_decided(page, recorded):
    html = str(environment_ablation_page.interactions(page))
    assert recorded["interaction_findings"] == page.analysis.interaction_findings()
    assert recorded["single_switch_summary"] == page.analysis.single_switch_summary()
    for line in recorded["single_switch_summary"] + [f["text"] for f in recorded["interaction_findings"]]:
        assert display.esc(line) in html
    assert "n=3 samples each" in html


def test_the_table_and_one_range_chart_per_cell(page, recorded):
    environment_ablation_page.ablation_table(page)
    assert {r["arm"] for r in recorded["ablation_table"]} == set(page.all_arms)
    charts = str(environment_ablation_page.range_charts(page))
    assert sum(f'id="bb-range-{k[0]}-{k[1]}"' in charts for k in page.keys) == len(page.keys) == 4


def test_header_carries_the_analysis_findings_box(page, recorded):
    environment_ablation_page.header(page)
    box = page.campaign.campaign_findings()  # the campaign's one findings list, the same on every page
    assert recorded["findings_box"]["lines"] == json.loads(json.dumps([f.as_dict() for f in box.lines]))
    assert recorded["baseline_arm"] == "default"


def test_the_spread_names_the_noisiest_and_the_tightest_column(page, recorded):
    environment_ablation_page.spread(page)
    lines = recorded["spread_sentences"]
    assert lines[0].startswith("The noisiest column is long prefill")
    assert lines[-1].startswith("The tightest column is") and "decode" in lines[-1]
