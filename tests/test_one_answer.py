"""One campaign, one answer (issue 33): the arm/run-layout H200 campaign with two server processes
for serial and batch (tests/h200_two_process.py), brought in with ``benchbook init`` and rendered once
for the module with ``render --all -j 1``, and the bundled campaigns as the test run renders them
(conftest's ``bundled_reports``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import h200_two_process as two

REPO = Path(__file__).resolve().parents[1]
BUNDLED = ("dsv4-163", "er0080-opt125m", "pd-prefill-cap")
TWO = "h200-two"


@pytest.fixture(scope="module")
def campaign(two_process_campaign):
    return two_process_campaign  # conftest: built once per test run


@pytest.fixture(scope="module")
def reports(campaign, tmp_path_factory):
    """The two-process campaign rendered with ``render --all -j 1`` (its pages, findings.json and an index)."""
    from benchbook.commands.cli import main

    data = tmp_path_factory.mktemp("data")
    (data / TWO).symlink_to(campaign)
    out = tmp_path_factory.mktemp("reports")
    assert main(["render", "--all", str(data), "--out", str(out), "-j", "1", "--quiet"]) == 0
    return out


@pytest.fixture
def rendered(reports, bundled_reports):
    """The folder ``render --all`` wrote a campaign's pages under (its index.html beside them): the module's
    own render for the two-process campaign, the test run's render of data/ for a bundled one."""
    return lambda camp: reports if camp == TWO else bundled_reports


def _values(reports: Path, camp: str) -> dict[str, dict]:
    return {
        p.name.removesuffix(".values.json"): json.loads(p.read_text()) for p in (reports / camp).glob("*.values.json")
    }


_SUMMARIES: dict[str, dict] = {}


def _summary(folder: Path) -> dict:
    """``benchbook summary --json`` of a campaign folder (once per module)."""
    from benchbook.commands.summary import build

    if str(folder) not in _SUMMARIES:
        _SUMMARIES[str(folder)] = json.loads(json.dumps(build(folder)))
    return _SUMMARIES[str(folder)]


def test_the_second_process_is_a_rerun_not_a_copy(campaign):
    m = json.loads((campaign / "campaign.json").read_text())
    assert list(m["arms"]) == ["serial", "batch", "eager", "noprefix"]
    procs = {r["process"] for r in m["runs"]}
    assert procs == {"serial/p1", "serial/p2", "batch/p1", "batch/p2", "eager/1", "noprefix/1"}
    root = campaign / "runs"
    for arm in two.TWO:
        rr = two.RERUNS[arm]
        p1 = sorted(p.relative_to(root / arm / "p1") for p in (root / arm / "p1").rglob("*") if p.is_file())
        p2 = sorted(p.relative_to(root / arm / "p2") for p in (root / arm / "p2").rglob("*") if p.is_file())
        assert p1 == p2
        changed = [r for r in p1 if (root / arm / "p1" / r).read_bytes() != (root / arm / "p2" / r).read_bytes()]
        # every result file, capture, sample file and log differs; only what the server was told is the same
        assert {r.name for r in p1 if r not in changed} <= {
            "server_args.txt", "version.json", "v1_models.json", "ladder.log", "phase.log", "gpu.json",
        }  # fmt: skip
        a = json.loads((root / arm / "p1" / "results" / "bench_conc8.json").read_text())
        b = json.loads((root / arm / "p2" / "results" / "bench_conc8.json").read_text())
        assert b["duration"] == pytest.approx(a["duration"] * rr.factor)
        assert b["output_throughput"] == pytest.approx(a["output_throughput"] / rr.factor)
        assert b["output_lens"] == a["output_lens"] and b["arm"] == f"{arm}2"
        start = [json.loads(x) for x in (root / arm / "p2" / "events.jsonl").read_text().splitlines()][0]
        first = [json.loads(x) for x in (two.H200 / arm / "events.jsonl").read_text().splitlines()][0]
        assert start["t"] == pytest.approx(first["t"] + rr.shift_s)
        starts = [
            float(line.split()[1])
            for p in ("p1", "p2")
            for line in (root / arm / p / "metrics" / "conc8_after.prom").read_text().splitlines()
            if line.startswith("process_start_time_seconds ")
        ]
        assert starts[1] - starts[0] == pytest.approx(rr.shift_s, abs=0.1)  # the server started later


# ---- pages agree -----------------------------------------------------------------------------------
def _c8(rows, b="serial", c="batch"):
    (row,) = [r for r in rows if (r["baseline"], r["candidate"], r["concurrency"]) == (b, c, 8)]
    return row


def test_batch_vs_serial_at_8_has_one_verdict_on_every_page_and_in_the_summary(reports, campaign):
    v = _values(reports, TWO)
    s = _summary(campaign)
    ladder = _c8(v["baseline"]["results_ladder"]["comparisons"])
    (cmp_,) = [
        r for r in v["compare"]["verdicts"]
        if (r["baseline"], r["candidate"], r["load"], r["metric"]) == ("serial", "batch", "concurrency 8", "output_throughput")
    ]  # fmt: skip
    (sw,) = [r for r in s["results"]["verdicts"] if (r["baseline"], r["candidate"], r["load"], r["metric"]) ==
             ("serial", "batch", "concurrency 8", "output_throughput")]  # fmt: skip
    states = {
        ladder["state"],
        cmp_["verdict_state"],
        sw["verdict_state"],
        _c8(s["results_ladder"]["comparisons"])["state"],
    }
    assert states == {"improvement"}
    assert ladder["ratio"] == pytest.approx(cmp_["ratio"]) and 6.5 < ladder["ratio"] < 7
    assert (ladder["baseline_n"], ladder["candidate_n"]) == (2, 2)  # two server processes each


def test_the_compare_page_has_one_configuration_per_arm_and_the_campaigns_orientation(reports):
    v = _values(reports, TWO)["compare"]
    assert sorted(v["configurations"]) == ["batch", "eager", "noprefix", "serial"]  # not "batch #2"
    assert v["repeats"] == {"batch": 18, "eager": 3, "noprefix": 3, "serial": 8}
    assert v["loads"]["serial"] == {f"concurrency {n}": 2 for n in (1, 2, 4, 8)}  # processes are repeats
    pairs = {(p["reference"], p["other"]) for p in v["pairings"]}
    assert pairs == {("serial", "batch"), ("batch", "eager"), ("batch", "noprefix")}  # as campaign.json says


def test_the_smoke_preset_keeps_the_orientation(campaign):
    from benchbook.analysis.campaign_analysis import analyse

    an = analyse(campaign, results_options={"preset": "smoke"})
    (h,) = [h for h in an.results.headlines if {h["faster"], h["slower"]} == {"serial", "batch"}]
    (v,) = [
        v for v in an.results.verdicts
        if (v.baseline, v.candidate, v.load, v.metric) == ("serial", "batch", "concurrency 8", "output_throughput")
    ]  # fmt: skip
    assert v.judgement.ratio > 6 and v.judgement.direction == "improvement"
    texts = [f.text for f in an.campaign_findings().lines]
    assert not any(t.startswith("serial vs batch") for t in texts), texts
    assert any(t.startswith("batch vs serial") and "6.7" in t for t in texts), texts
    assert h["faster"] == "batch"


# ---- the first screen: what could make it wrong, one list everywhere --------------------------------
def test_the_first_screen_says_what_could_make_it_wrong(reports, campaign):
    s = _summary(campaign)
    box = s["findings"]["baseline"]
    kinds = [line["kind"] for line in box["lines"]]
    assert kinds == sorted(kinds, key=["fail", "warn", "regression", "improvement", "result", "unjudged"].index)
    causes = {line.get("cause") for line in box["lines"] if line["kind"] == "warn"}
    assert {"prefix cache", "queueing", "validity gates"} <= causes
    (cache,) = [line for line in box["lines"] if line.get("cause") == "prefix cache"]
    assert "98.7" in json.dumps(cache["links"]) and "serial-p1-phases (6 windows)" in json.dumps(cache["links"])
    assert any("rules" in k for k in box) and any("Validity gates" in r for r in box["rules"])
    html = (reports / TWO / "baseline.html").read_text()
    for link in cache["links"]:  # each window it names is a row the page links to
        assert f'id="{link["anchor"]}"' in html and f'href="#{link["anchor"]}"' in html
    ablation = (reports / TWO / "ablation.html").read_text()
    assert f'href="baseline.html#{cache["links"][0]["anchor"]}"' in ablation  # the rows live on another page


@pytest.mark.parametrize("camp", [*BUNDLED, TWO])
def test_every_page_the_summary_and_the_index_hold_one_findings_list(rendered, campaign, camp):
    from benchbook.analysis.campaign_analysis import analyse

    reports = rendered(camp)
    values = _values(reports, camp)
    folder = campaign if camp == TWO else REPO / "data" / camp
    s = _summary(folder)
    boxes = [s["findings"][k] for k in values]
    assert len({json.dumps(b, sort_keys=True) for b in boxes}) == 1, f"{camp}: the summary's boxes differ"
    box = boxes[0]
    for kind, v in values.items():
        assert v["headline"] == box["headline"] and v["findings_box"] == {
            k: x for k, x in box.items() if k != "headline"
        }, kind
    fresh = json.loads(json.dumps(analyse(folder).campaign_findings().as_dict()))
    assert fresh == box  # summary --json is the analysis' list
    written = json.loads((reports / camp / "findings.json").read_text())  # what the index reads
    assert written["findings"] == box
    index = (reports / "index.html").read_text().replace("&#39;", "'")
    assert f"{camp}: {box['headline']}" in index or not (
        box["regressions"] or box["failed_checks"] or box["warnings"] or box["unjudged"]
    )
    assert box["headline"] in index


# ---- one status per check ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def uneven(tmp_path_factory):
    """The two-process campaign with serial/p2's rate 8 % lower at concurrency 4 and 8 % higher at 8:
    that process goes up and down beyond the spread its own runs leave (10.9 %, at concurrency 4)."""
    tmp = tmp_path_factory.mktemp("uneven")
    arms = two.layout(tmp / "runs")
    for point, rate in (("conc4", 0.92), ("conc8", 1.08)):
        f = arms / "serial" / "p2" / "results" / f"bench_{point}.json"
        doc = json.loads(f.read_text())
        doc["duration"] /= rate
        doc["output_throughput"] *= rate
        f.write_text(json.dumps(doc))
    from argparse import Namespace

    from benchbook.commands import init as init_cmd

    assert init_cmd.run(Namespace(dir=tmp / "c", inputs=[arms], title=None, question=None, quiet=True)) == 0
    return tmp / "c"


def test_a_serial_process_that_is_not_flat_warns_everywhere_its_words_say_so(uneven, tmp_path):
    from benchbook.analysis.campaign_analysis import analyse
    from benchbook.pipeline.execute import render_page

    an = analyse(uneven)
    rows = {s["process"]: s for s in an.results_ladder["serialization"]}
    assert rows["serial/p2"]["flat"] is False and rows["serial/p2"]["status"] == "warn"
    assert "goes up and down" in rows["serial/p2"]["reason"]  # 195 → 179 → 211: not "grows"
    assert rows["serial/p1"]["status"] == "pass" and rows["batch/p1"]["status"] == "pass"  # batching rises
    (check,) = [c for c in an.checks if c["name"] == "serialization: serial/p2"]
    assert check["status"] == "warn" and check["detail"].startswith("not flat")
    (line,) = [f for f in an.campaign_findings().lines if f.cause == "serialization"]
    assert line.kind == "warn" and "serial/p2" in line.text and "passed: serial/p1" in line.text
    (ser,) = [x for x in an.verdict_sentences(["serial", "batch"]) if x.startswith("Serialization")]
    assert (
        "requests served one at a time: serial (serial/p1)" in ser
        and "serial (serial/p2) not flat though serial" in ser
    )
    html = tmp_path / "baseline.html"
    render_page(REPO / "notebooks" / "baseline.ipynb", {"campaign": str(uneven)}, html, title="uneven")
    text = html.read_text()
    section = text[text.index('id="sec-results-ladder"') : text.index("Pure queueing")]
    (item,) = [li for li in section.split("<li>") if "(serial/p2)" in li]
    assert "bb-mark-note" in item and "not flat" in item and "bb-mark-pass" not in item  # † warn, never ✓


# ---- every process in every table; text true to the design; said once --------------------------------
def test_every_process_of_an_arm_is_in_the_phase_table_and_chart(reports):
    html = (reports / TWO / "baseline.html").read_text()
    table = html[html.index('id="bb-phase-split-all"') :]
    table = table[: table.index("</table>")]
    for p in ("serial/p1", "serial/p2", "batch/p1", "batch/p2"):
        assert table.count(f">{p}<") == 2, p  # one row per prompt class
    chart = html[html.index('id="bb-phase-chart"') :][:200_000]
    assert "serial/p2" in chart and "batch/p2" in chart


def test_the_host_memory_table_folds_the_engines_start_up_processes(reports):
    html = (reports / TWO / "baseline.html").read_text()
    table = html[html.index('id="bb-memory-processes"') :]
    table = table[: table.index("</table>")]
    assert "gcc-real (pid" not in table and "cc1 (pid" not in table and "VLLM::EngineCor (pid" in table
    early = html[html.index("Processes that ran only during start-up") :]
    early = early[: early.index("</ul>")]
    assert early.count("<li>") == 4 and "gcc-real ×" in early  # one line per sampled server process


def test_the_pages_say_what_the_campaign_holds(reports):
    v = _values(reports, TWO)
    compare = (reports / TWO / "compare.html").read_text()
    assert "was run more than once" not in compare  # each arm ran twice: the table says n = 2
    baseline = (reports / TWO / "baseline.html").read_text()
    assert "No arm was run twice" not in baseline
    assert "serial: 2 server processes (serial/p1, serial/p2)" in baseline  # the reading guide, generated
    lines = v["baseline"]["verdict_sentences"]
    (pair,) = [x for x in lines if x.startswith("batch vs serial:")]
    assert "output tok/s at concurrency 8 6.77x" in pair and "Total (engine)" in pair  # ladder AND phase cells


@pytest.mark.parametrize("camp", [*BUNDLED, TWO])
def test_no_explanation_is_said_more_than_five_times_on_a_page(rendered, camp):
    from one_answer_text import repeated_sentences

    reports = rendered(camp)
    for page in sorted((reports / camp).glob("*.html")):
        assert repeated_sentences(page.read_text(), 5) == [], f"{camp}/{page.name}"
