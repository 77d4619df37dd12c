"""The PD page of a campaign of llm-d Benchmark Reports (`benchbook init` of report files): the
analysis says it gets the PD page (CampaignAnalysis.page_kinds), the page shows what
analysis.pd_report decided, and the link rate comes from a page parameter or render.yml."""

import json
from pathlib import Path

import pytest
import yaml

from benchbook.analysis import pd_report
from benchbook.analysis.campaign_analysis import analyse
from benchbook.commands.cli import main
from benchbook.errors import InputError
from benchbook.pages import pd_page
from benchbook.pipeline.campaigns import render_campaign

BR = Path(__file__).parent / "fixtures" / "tools" / "llmd-benchmark-report-0.2.1" / "pd_report.yaml"
SGL = Path(__file__).parent / "fixtures" / "tools" / "sglang-benchmark-serving-0.5.23" / "steady_state.jsonl"


def _campaign(tmp_path: Path, *files: Path) -> Path:
    camp = tmp_path / "camp"
    assert main(["init", "-q", str(camp), *map(str, files)]) == 0
    return camp


@pytest.fixture(scope="module")
def br_campaign(tmp_path_factory):
    return _campaign(tmp_path_factory.mktemp("br"), BR)


def test_the_analysis_gives_a_report_campaign_the_pd_page(br_campaign, tmp_path):
    an = analyse(br_campaign)
    assert an.page_kinds() == ["pd", "compare"]
    (dep,) = an.pd_deployment
    assert (dep.prefill_gpus, dep.decode_gpus, dep.input_tok_s_per_prefill_gpu) == (4, 4, 5000.0)
    box = an.findings["pd"]  # the link check is not judged without a link rate: said once, in the box
    assert (box.failed_checks, box.unjudged) == (0, 1) and pd_report.NO_LINK in box.lines[0].text
    summary = an.as_dict()["pd_deployment"]
    assert summary["link_gb_s"] is None and summary["runs"][0]["kv_gb_s"] == pytest.approx(32.768)
    over = analyse(br_campaign, link_gb_s=25.0)  # 32.8 GB/s over a 25 GB/s link: a failed check
    assert over.findings["pd"].failed_checks == 1 and over.pd_deployment[0].link_gb_s == 25.0
    # a campaign without a PD report has no PD page, and the page says why it refuses one
    plain = _campaign(tmp_path, SGL)
    assert "pd" not in analyse(plain).page_kinds()
    with pytest.raises(InputError, match="no Benchmark Report stating prefill and decode roles"):
        pd_page.load(str(plain))


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf")])
def test_a_bad_link_rate_is_bad_input(br_campaign, bad):
    with pytest.raises(InputError, match="link_gb_s"):
        pd_page.load(str(br_campaign), link_gb_s=bad)


def test_the_pd_page_renders_the_deployment_with_the_link_from_render_yml(br_campaign, tmp_path):
    (br_campaign / "render.yml").write_text(yaml.safe_dump({"pd": {"link_gb_s": 25}}))
    try:
        res = render_campaign(br_campaign, tmp_path / "out", pages=["pd"])
    finally:
        (br_campaign / "render.yml").unlink()
    assert res.rendered and not res.failed
    v = json.loads((tmp_path / "out" / "pd.values.json").read_text())
    dep = v["pd_deployment"]
    assert dep["link_gb_s"] == 25.0
    (r,) = dep["runs"]
    assert (r["output_tok_s_per_decode_gpu"], r["output_tok_s_per_gpu"], r["total_tok_s_per_gpu"]) == (
        1250.0,
        625.0,
        3125.0,
    )
    assert {c["name"]: c["status"] for c in r["checks"]} == {
        "PD path exercised": "pass",
        "KV transfer rate within the link": "fail",
    }
    assert v["findings_box"]["failed_checks"] == 1
    html = (tmp_path / "out" / "pd.html").read_text()
    assert 'id="bb-pd-deployment"' in html and "Link rate: 25 GB/s" in html


def test_findings_append_after_the_pd_summaries_own(br_campaign):
    an = analyse(br_campaign, link_gb_s=25.0)
    base = pd_report.findings([])  # nothing: an empty box
    assert base.lines == () and base.failed_checks == 0
    box = pd_report.findings(an.pd_deployment, base)
    kinds = [x.kind for x in box.lines]
    assert kinds == sorted(kinds, key=["fail", "unjudged"].index)  # failed checks before what was not judged
    assert all(x.section == pd_report.SECTION for x in box.lines)


def test_init_of_a_folder_with_two_configurations_writes_no_empty_arms(tmp_path):
    """A folder holding runs of two configurations gets no arm (the page makes configurations from
    identity); before, init wrote ``"arms": {}`` and refused its own campaign (arms must be non-empty)."""
    import shutil

    folder = tmp_path / "mix"
    folder.mkdir()
    for f in (BR, SGL):
        shutil.copy(f, folder / f.name)
    camp = _campaign(tmp_path, folder)
    manifest = json.loads((camp / "campaign.json").read_text())
    assert "arms" not in manifest and len(manifest["runs"]) == 1
    assert any("2 configurations" in t for t in manifest["todo"])
    assert analyse(camp).page_kinds() == ["pd", "compare"]


def test_render_all_gives_a_benchmark_report_campaign_its_pd_page(tmp_path):
    """The renderer's page choice (pipeline.plan.pages_for) agrees with the analysis' page_kinds: a
    campaign of Benchmark Reports stating prefill and decode roles gets the PD page under render --all."""
    from benchbook.pipeline.plan import pages_for, read_manifest

    camp = _campaign(tmp_path, BR)
    assert pages_for(read_manifest(camp), camp) == ["pd", "compare"]
    assert pages_for(read_manifest(camp)) == ["compare"]  # the manifest alone cannot tell
