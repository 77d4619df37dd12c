"""The one manifest reader and the one "is this a PD campaign" rule; a campaign is loaded once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchbook.errors import InputError
from benchbook.ingest import manifest
from benchbook.ingest.campaign import load_campaign

ROOT = Path(__file__).resolve().parents[1]


def test_is_pd_by_kind_or_by_an_arm_mode():
    assert manifest.is_pd({"kind": "pd", "arms": {}})
    assert manifest.is_pd({"arms": {"a": {"mode": "serial"}, "b": {"mode": "pd"}}})
    assert not manifest.is_pd({"arms": {"a": {"mode": "batch"}}})
    assert not manifest.is_pd({"arms": "not an object"})  # a broken manifest is not PD (its loader says why)


def test_open_manifest_names_what_is_missing(tmp_path):
    with pytest.raises(InputError, match="no campaign.json"):
        manifest.open_manifest(tmp_path)
    (tmp_path / "campaign.json").write_text(json.dumps({"arms": [], "runs": []}))
    with pytest.raises(InputError) as e:
        manifest.open_manifest(tmp_path, schema=False)
    assert e.value.location == "$.arms"


def test_a_pd_campaign_is_loaded_once_and_its_pd_part_built_once(monkeypatch):
    """The PD part is built from the campaign's own manifest, once; the analysis and history use it
    (the PD page used to open the folder three times: PDCampaign, Campaign, PDCampaign)."""
    from benchbook.analysis import campaign_analysis, history
    from benchbook.ingest import pd_runs

    opened = []
    real_open = manifest.open_manifest
    monkeypatch.setattr(pd_runs, "open_manifest", lambda *a, **k: opened.append(a) or real_open(*a, **k))
    camp = load_campaign(ROOT / "data" / "pd-prefill-cap")
    assert camp.is_pd and camp.pd is camp.pd
    an = campaign_analysis.analyse(camp)
    head = history.headline(camp)
    assert an.pd is not None and head["figures"] and opened == []  # no second reading of campaign.json
    assert not load_campaign(ROOT / "data" / "dsv4-163").is_pd
