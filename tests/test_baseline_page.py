"""The baseline page: papermill runs notebooks/baseline.ipynb; tests assert on the values it records."""

import json
import shutil
from pathlib import Path

import pytest

from benchbook.analysis import baseline
from benchbook.ingest.campaign import load_campaign
from benchbook.pipeline.campaigns import render_campaign
from benchbook.pipeline.execute import render_page
from benchbook.pipeline.offline import scan_html

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "baseline.ipynb"
MINI = ROOT / "tests" / "fixtures" / "mini"
DSV = ROOT / "data" / "dsv4-163"


def _values(html: Path) -> dict:
    return json.loads(html.with_suffix(".values.json").read_text())


@pytest.fixture(scope="module")
def dsv_page(bundled_reports):
    """data/dsv4-163's baseline page from the run's `render --all data` (conftest: bundled_reports)."""
    return bundled_reports / "dsv4-163" / "baseline.html"


def test_mini_campaign_values_match_the_library(tmp_path):
    html = tmp_path / "baseline.html"
    render_page(NOTEBOOK, {"campaign": str(MINI)}, html, title="mini")
    v = _values(html)
    camp = load_campaign(MINI)
    rows = baseline.whole_request_rows(camp)
    assert [r["run"] for r in v["whole_request"]] == [r["run"] for r in rows]
    assert v["whole_request"][0]["single_tok_s"] == pytest.approx(rows[0]["single_tok_s"])
    cells = baseline.phase_cells(camp)
    got = {(c["arm"], c["prompt_class"], c["metric"]): c["median"] for c in v["phase_cells"]}
    for r in cells.iter_rows(named=True):
        assert got[(r["arm"], r["prompt_class"], r["metric"])] == pytest.approx(r["median"])
    assert any("warm-up" in e["Reason"] for e in v["exclusions"])
    assert v["provenance"] == "synthetic"


def test_dsv_page_records_the_seed_verdicts(dsv_page):
    v = _values(dsv_page)
    assert round(v["noise_spread"] * 100, 1) == 7.5
    cmp = {(c["baseline"], c["candidate"], c["metric"], c["context"]): c for c in v["comparisons"]}
    dec = [c for k, c in cmp.items() if k[:3] == ("default", "tuned", "decode_tok_s")]
    assert sorted(round(c["ratio"], 2) for c in dec) == [1.46, 1.48] and all(c["is_result"] for c in dec)
    clamps = {c["arm"]: c for c in v["clamps"]}
    assert clamps["batch"]["clamped"] and not clamps["tuned"]["clamped"]
    assert {(c["setting"], c["requested"], c["ran"]) for c in clamps["batch"]["clamps"]} == {
        ("max_batch_size", 8, 1),
        ("prefill_token_budget", 4096, 0),
    }
    sentences = " ".join(v["verdict_sentences"])
    assert any("7.5%" in r for r in v["findings_box"]["rules"])  # the yardstick: stated once, in the rules
    assert "flat across the ladder, requests served one at a time: default (serial, serial2)" in sentences
    assert "to check: batch (flat though batched: batch)" in sentences
    assert "batched-forward vs serial" in sentences and "1.62x" in sentences
    assert {r["run"] for r in v["memory"]} == {
        "memory-default",
        "memory-tuned",
        "memory-batch",
        "memory-serial",
        "memory-batched",
    }


def test_dsv_page_is_self_contained(dsv_page):
    assert scan_html(dsv_page.read_text(), str(dsv_page)) == []


def test_rendering_twice_is_identical_with_source_date_epoch(tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1790000000")
    monkeypatch.setenv("BENCHBOOK_GIT_SHA", "0" * 40)  # a teammate committing mid-test must not matter
    a, b = tmp_path / "a" / "baseline.html", tmp_path / "b" / "baseline.html"
    for out in (a, b):
        render_page(NOTEBOOK, {"campaign": str(MINI)}, out, title="mini")
    assert a.read_bytes() == b.read_bytes()


def test_bad_input_inside_the_notebook_is_exit_2_and_keeps_the_last_page(tmp_path):
    from benchbook.commands.cli import main

    camp = tmp_path / "c"
    shutil.copytree(MINI, camp)
    out = tmp_path / "out"
    assert main(["render", str(camp), "--out", str(out), "--page", "baseline"]) == 0
    good = (out / "baseline.html").read_bytes()
    snap = next((camp / "runs" / "phases-serial" / "metrics").glob("*.prom"))
    snap.write_text('pocket_tokens_total{type="prompt" 12\n')
    assert main(["render", str(camp), "--out", str(out), "--page", "baseline"]) == 2
    assert (out / "baseline.html").read_bytes() == good


def test_dsv_page_in_chromium(dsv_page, open_page):
    report = open_page(
        dsv_page,
        table_ids=[
            "bb-whole-request-s-1536681",
            "bb-phase-split-s-1536681",
            "bb-memory",
            "bb-clamps",
            "bb-comparisons",
        ],
        screenshot="baseline-dsv4-163.png",
    )
    assert report.ok, report.problems()
    assert report.charts >= 2


def test_campaign_params_file_is_used_and_command_line_wins(tmp_path):
    camp = tmp_path / "c"
    shutil.copytree(MINI, camp)
    (camp / "render.yml").write_text("baseline:\n  rule: strict\n  title: from the file\n")
    out = tmp_path / "out"
    render_campaign(camp, out, pages=["baseline"])
    assert _values(out / "baseline.html")["title"] == "from the file"
    render_campaign(camp, out, pages=["baseline"], overrides={"baseline": {"title": "from the command line"}})
    assert _values(out / "baseline.html")["title"] == "from the command line"


def test_a_parameter_of_the_wrong_type_is_bad_input_not_a_crash(tmp_path, capsys):
    from benchbook.commands.cli import main

    params = tmp_path / "p.yml"
    params.write_text("baseline:\n  warmup_rounds: x\n")
    assert main(["render", str(MINI), "--out", str(tmp_path / "o"), "--page", "baseline", "--params", str(params)]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "warmup_rounds: expected int" in err and "'x'" in err


def test_one_ratio_convention_in_verdict_findings_and_table(dsv_page):
    """Every "N.NNx (±P%)" on the page is candidate / baseline beside its change, so N = 1 + P/100: the
    verdict list printed "Total (engine) … 1.31x (-23.9%, improvement)" (the speedup) where the findings
    box and the table said 0.76x."""
    import re

    v = _values(dsv_page)
    texts = [*v["verdict_sentences"], *(line["text"] for line in v["findings_box"]["lines"])]
    found = [(r, p.replace("−", "-")) for t in texts for r, p in re.findall(r"(\d+\.\d+)x \(([+−-]?\d+\.\d)%", t)]
    pairs = [(float(r), float(p)) for r, p in found]
    assert len(pairs) >= 8  # each figure said once: a pair's results are one line
    for r, p in pairs:
        assert r == pytest.approx(1 + p / 100, abs=0.006), (r, p)
    assert any(r < 1 for r, _ in pairs)  # a latency that fell is shown below 1, beside its negative change
