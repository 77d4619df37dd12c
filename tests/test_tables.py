"""An analysis owns its tables and its exclusions (benchbook.analysis.tables); render workers share
one analysis of a campaign folder across its pages (campaign_analysis.share_analyses)."""

from __future__ import annotations

import os
import shutil

import pytest

from benchbook.analysis import baseline
from benchbook.analysis import campaign_analysis as ca
from benchbook.analysis.campaign_analysis import analyse
from benchbook.analysis.tables import AnalysisTables, holding, tables_for
from benchbook.findings import Exclusion
from benchbook.ingest.campaign import load_campaign
from realdata import ROOT

CAMPAIGN = ROOT / "data" / "dsv4-163"  # the serial baseline seed: 18 phase series, 12 samples left out on loading
NO_SAMPLES_LEFT = "arm has no usable samples after the warm-up discard"


def _rows(an):
    return [e.as_dict() for e in an.excluded()]


def test_two_analyses_of_one_loaded_campaign_never_share_exclusions_whatever_ran_first():
    camp = load_campaign(CAMPAIGN)
    assert camp.phase_samples.height  # read on first use: loading lists its warm-up samples then
    loaded = [e.as_dict() for e in camp.exclusions]
    everything = analyse(camp, warmup_rounds=99)  # every sample is a warm-up: each series left out, with why
    default = analyse(camp)
    fresh = analyse(load_campaign(CAMPAIGN))  # the same analysis of the campaign loaded anew, nothing run before
    assert len([e for e in everything.excluded() if e.reason == NO_SAMPLES_LEFT]) == 18
    assert not [e for e in default.excluded() if e.reason == NO_SAMPLES_LEFT]
    assert _rows(default) == _rows(fresh)
    assert [e.as_dict() for e in camp.exclusions] == loaded  # loading's own list: nothing an analysis added
    assert not hasattr(camp, "derived") and not hasattr(camp, "_derived")  # no analysis table on the ingest object
    assert analyse(camp) is default and analyse(camp, warmup_rounds=99) is everything  # once per argument set


def test_each_table_of_an_analysis_is_computed_once_and_the_views_too():
    an = analyse(load_campaign(CAMPAIGN))
    assert an.tables.camp is an.camp and an.tables.asked > an.tables.computed > 0
    before = an.tables.computed
    cells = an.phase_cells_of()  # a view the page reads: computed in the analysis's tables
    assert an.phase_cells_of() is cells and an.tables.computed == before + 1
    with an.tables.active():  # the phase cells of all arms were computed by the analysis itself
        assert baseline.phase_cells(an.camp) is an.phase_cells


def test_outside_an_analysis_a_table_is_computed_and_nothing_is_kept():
    camp = load_campaign(CAMPAIGN)
    assert tables_for(camp) is not tables_for(camp)
    first = baseline.phase_cells(camp, warmup_rounds=99)
    assert baseline.phase_cells(camp, warmup_rounds=99) is not first and first.height == 0
    assert NO_SAMPLES_LEFT not in {e.reason for e in camp.exclusions}
    with holding(camp) as t:  # a caller holding tables: computed once, the exclusions kept on them
        assert baseline.phase_cells(camp, warmup_rounds=99) is baseline.phase_cells(camp, warmup_rounds=99)
        assert tables_for(camp) is t and len([e for e in t.excluded if e.reason == NO_SAMPLES_LEFT]) == 18
        other = load_campaign(CAMPAIGN)
        assert tables_for(other) is not t  # another loaded campaign never gets these
    t2 = AnalysisTables(camp)
    e = Exclusion("f", "s", "r")
    t2.exclude(e), t2.exclude(Exclusion("f", "s", "r"))
    assert t2.excluded == [e]  # one sample, one reason: listed once


@pytest.fixture
def sharing():
    old = ca._SHARED
    store = ca.share_analyses(capacity=2)
    yield store
    ca._SHARED = old


def test_a_render_worker_analyses_a_campaign_folder_once_until_a_file_of_it_changes(sharing, tmp_path):
    camp = shutil.copytree(CAMPAIGN, tmp_path / "c")
    (tmp_path / "x").mkdir()
    a = analyse(camp)
    assert analyse(str(camp)) is a and analyse(tmp_path / "x" / ".." / "c") is a  # the folder, however spelled
    assert analyse(camp, rule="strict") is not a  # other arguments: another analysis
    assert (sharing.made, sharing.reused) == (2, 2)
    (camp / "README.md").write_text("changed\n")  # a file written: analysed again
    b = analyse(camp)
    assert b is not a and sharing.made == 3
    os.remove(camp / "README.md")
    assert analyse(camp) is not b  # a file removed: again
    assert len(sharing.entries) == 2  # only the last two kept


def test_without_sharing_every_analysis_of_a_folder_loads_it_anew(tmp_path):
    assert ca._SHARED is None  # the default everywhere but in render workers
    camp = shutil.copytree(CAMPAIGN, tmp_path / "c")
    assert analyse(camp) is not analyse(camp)


def test_a_campaign_that_reads_a_prometheus_server_is_analysed_anew_each_time(sharing, tmp_path):
    import json

    camp = shutil.copytree(CAMPAIGN, tmp_path / "c")
    m = json.loads((camp / "campaign.json").read_text())
    m["prometheus"] = {"url": "http://127.0.0.1:9", "matchers": {"job": "vllm"}}  # its samples are capture files
    (camp / "campaign.json").write_text(json.dumps(m))
    assert analyse(camp) is not analyse(camp) and sharing.entries == {}  # the server's answer is not on disk


def test_an_analysis_nobody_holds_is_freed_with_its_campaign():
    import gc
    import weakref

    camp = load_campaign(CAMPAIGN)
    an = weakref.ref(analyse(camp))
    seen = weakref.ref(camp)
    del camp
    gc.collect()
    assert an() is None and seen() is None  # nothing in benchbook keeps them (a render worker renders many)
