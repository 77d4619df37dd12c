"""The server-switch ablation page's sections (pages/switch_ablation_page.py), called without a
notebook on the real H200 campaign laid out as arm/run folders (`benchbook init` of
../shared/realdata/vllm_h200_llama8b): its findings box is the analysis's, the switches are what the
engines stated, and the sections of the environment ablation are left out."""

from __future__ import annotations

import json
from argparse import Namespace

import pytest

from benchbook.commands import init as init_cmd
from benchbook.pages import ablation_page, display, switch_ablation_page
from realdata import realdata

H200 = realdata("vllm_h200_llama8b")


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    dest = tmp_path_factory.mktemp("h200") / "campaign"
    inputs = [H200 / a for a in ("serial", "batch", "eager", "noprefix")]
    assert init_cmd.run(Namespace(dir=dest, inputs=inputs, title=None, question=None, quiet=True)) == 0
    p = ablation_page.load(str(dest))
    assert isinstance(p, switch_ablation_page.SwitchPage)  # arms that differ by server switches
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


def test_header_carries_the_switch_ablation_findings_box(page, recorded):
    html = str(switch_ablation_page.header(page))
    box = page.analysis.campaign_findings()  # the campaign's one findings list, the same on every page
    assert recorded["findings_box"]["lines"] == json.loads(json.dumps([f.as_dict() for f in box.lines]))
    assert not any(f.kind in ("regression", "improvement") for f in box.lines)  # one process per arm
    assert recorded["baseline_arm"] == "batch" and recorded["arms"] == ["batch", "eager", "noprefix"]
    assert "Server-switch ablation against batch" in html


def test_switches_are_what_the_engines_stated(page, recorded):
    html = str(switch_ablation_page.switches(page))
    assert "<td>cudagraph_mode=NONE + enforce_eager=True</td>" in html
    assert "enable_<wbr>prefix_<wbr>caching=<wbr>False" in html  # a long cell may break at its underscores
    switch_ablation_page.ablation_table(page)
    rows = recorded["ablation_rows"]
    assert {r["arm"] for r in rows} == {"eager", "noprefix"}
    # one process per arm: no figure is a result — the campaign's decision says "cannot tell" for the
    # ladder points, the ablation's own "no verdict" for the phase figures
    assert not any(r["is_result"] for r in rows)
    assert {r["verdict"] for r in rows} == {"no verdict", "cannot tell"}


def test_the_environment_ablation_sections_are_left_out(page, recorded):
    assert [str(f(page)) for f in (ablation_page.range_charts, ablation_page.phase_findings, ablation_page.spread)] == [
        ""
    ] * 3
    assert recorded == {}
    switch_ablation_page.interactions(page)
    assert [i["measured"] for i in recorded["interactions"]] == [False]
