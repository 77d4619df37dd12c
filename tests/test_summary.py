"""``benchbook summary --json`` serializes the campaign's one analysis object: every verdict a page
shows is in the summary with the same value, and every verdict in the summary is on a page.

The pages of the bundled campaigns (seed, PD, results runs) are rendered through the campaign renderer; their recorded
``values.json`` and the summary are walked as JSON trees. A *verdict* is any object with a
``verdict`` key (comparisons, memory deltas, clamps, ablation cells and steps, PD comparisons), a results
set's verdict (``state`` + ``metric``) or a
check (``name`` + ``status``); it is identified by the keys that say what it judges.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from benchbook.commands.cli import main
from benchbook.commands.summary import build
from benchbook.pipeline.campaigns import CampaignOutcome
from benchbook.pipeline.plan import read_manifest

ROOT = Path(__file__).resolve().parents[1]
CAMPAIGNS = sorted(p.name for p in (ROOT / "data").iterdir() if (p / "campaign.json").is_file())  # every bundled one
# keys that say what a verdict judges (whichever of them the object has)
IDENTITY = (
    "baseline",
    "candidate",
    "metric",
    "context",
    "arm",
    "phase",
    "prompt_class",
    "run",
    "window",
    "key",
    "quantity",
    "concurrency",
    "from",
    "to",
    "added",
    "name",
)


def _objects(tree):
    """Every JSON object in a tree, depth first."""
    if isinstance(tree, dict):
        yield tree
        for v in tree.values():
            yield from _objects(v)
    elif isinstance(tree, list):
        for v in tree:
            yield from _objects(v)


def _verdicts(tree) -> list[dict]:
    out = []
    for o in _objects(tree):
        if isinstance(o.get("verdict"), str) and o["verdict"] != "baseline":
            out.append({"verdict": o["verdict"], **{k: o[k] for k in IDENTITY if k in o}})
        elif o.get("state") in ("result", "noise", "cannot") and "metric" in o:  # a results set's verdict
            out.append({"state": o["state"], "ratio": o.get("ratio"), **{k: o[k] for k in IDENTITY if k in o}})
        elif isinstance(o.get("name"), str) and o.get("status") in ("pass", "warn", "fail"):
            out.append({"status": o["status"], "name": o["name"]})
    return out


def _found(v: dict, pool: list[dict]) -> bool:
    """``v`` is in ``pool``: an entry with the same verdict (or status) and the same value for every
    identity key the two share — at least the keys ``v`` has, apart from display-only context."""
    for p in pool:
        if all(k in p and p[k] == x for k, x in v.items() if k != "context") and v.get("context") in (
            None,
            p.get("context"),
        ):
            return True
    return False


@pytest.fixture(scope="module")
def reports(tmp_path_factory, bundled_reports):
    """A copy of the run's bundled reports (conftest: `render --all data` once): a test writes into it."""
    out = tmp_path_factory.mktemp("reports") / "reports"
    shutil.copytree(bundled_reports, out)
    return out


@pytest.fixture(scope="module", params=CAMPAIGNS)
def rendered_outcome(request, reports):
    """A bundled campaign's pages as the run's `render --all data` wrote them (conftest: bundled_reports),
    its summary, and its outcome as the index reads it."""
    camp = ROOT / "data" / request.param
    htmls = sorted((reports / request.param).glob("*.html"))
    pages = {h.stem: json.loads(h.with_suffix(".values.json").read_text()) for h in htmls}
    outcome = CampaignOutcome(request.param, read_manifest(camp), rendered_pages=sorted(pages))
    return request.param, pages, build(camp), outcome


@pytest.fixture(scope="module")
def rendered(rendered_outcome):
    return rendered_outcome[:3]


def test_summary_findings_are_what_the_pages_and_the_index_show(rendered_outcome, tmp_path):
    """The analysis decides each page's findings box once: ``summary --json`` carries it, each page's
    box records the same counts, lines and headline, and the index counts and quotes the same."""
    from benchbook.pipeline.index import index_html
    from benchbook.pipeline.plan import PAGES

    name, pages, summary, outcome = rendered_outcome
    found = summary["findings"]
    assert set(found) == set(pages), f"{name}: summary findings for {sorted(found)}, pages {sorted(pages)}"
    for kind, values in pages.items():
        box = found[kind]
        assert values["headline"] == box["headline"], (name, kind)
        assert values["findings_box"] == {k: v for k, v in box.items() if k != "headline"}, (name, kind)
    from benchbook.findings import FINDING_KINDS

    rank = {k: i for i, k in enumerate(FINDING_KINDS)}
    for kind, box in found.items():  # every box leads with its failed checks, then results, then the unjudged
        kinds = [line["kind"] for line in box["lines"]]
        assert FINDING_KINDS[0] == "fail" and kinds == sorted(kinds, key=rank.get), (name, kind, kinds)
        assert kinds[: box["failed_checks"]] == ["fail"] * box["failed_checks"], (name, kind, kinds)
    # the index reads the campaign's findings.json (render --all writes it beside the pages), not the pages
    reports = tmp_path / "reports"  # not the session's reports folder: other tests compare its bytes
    (reports / name).mkdir(parents=True)
    box0 = next(iter(found.values()))
    (reports / name / "findings.json").write_text(json.dumps({"campaign": name, "findings": box0}))
    index = index_html([outcome], reports)
    marks = re.findall(r'class="bb-finding bb-finding-([a-z]+)"', index)
    assert marks == sorted(marks, key=rank.get), f"{name}: the index's lines are not in the box's order: {marks}"
    assert len({json.dumps(b, sort_keys=True) for b in found.values()}) == 1  # one list on every page
    box = next(iter(found.values()))
    from benchbook.findings import headline

    head = "1 campaign: " + headline(
        box["results"], box["regressions"], box["failed_checks"], box["unjudged"], box["warnings"]
    )
    assert head in index, f"{name}: the index does not count what the summary holds ({head})"
    if box["regressions"] or box["failed_checks"] or box["unjudged"] or box["warnings"]:
        assert f"{name}: {box['headline']}" in index.replace("&#39;", "'"), name
    assert PAGES  # every page of it links from the index row


def test_every_page_verdict_is_in_the_summary(rendered):
    name, pages, summary = rendered
    pool = _verdicts(summary)
    missing = []
    for page, values in pages.items():
        for v in _verdicts(values):
            if not _found(v, pool):
                missing.append((page, v))
    assert pages and pool
    assert missing == [], f"{name}: page verdicts absent from the summary: {missing[:5]}"


def test_every_summary_verdict_is_on_a_page(rendered):
    name, pages, summary = rendered
    pool = [v for values in pages.values() for v in _verdicts(values)]
    missing = [v for v in _verdicts(summary) if not _found(v, pool)]
    assert missing == [], f"{name}: summary verdicts no page shows: {missing[:5]}"


def test_dsv4_summary_carries_the_seed_figures(capsys):
    assert main(["summary", str(ROOT / "data" / "dsv4-163"), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["format"] == "benchbook.summary/3"
    mem = {(d["baseline"], d["candidate"], d["quantity"]): d for d in s["memory_deltas"]}
    # seed: "7.4 GiB per rank over the default at peak"; steady is 8.15 − 6.29 = 1.86 (its prose says 3)
    assert round(mem[("default", "tuned", "peak")]["delta_gib"], 1) == 7.4
    assert round(mem[("default", "tuned", "steady")]["delta_gib"], 2) == 1.86
    # seed: "Widening the scheduler from 1 to 8 costs about 1.6 GiB per rank"
    assert round(mem[("serial", "batched-forward", "peak")]["delta_gib"], 1) == 1.6
    assert mem[("default", "tuned", "peak")]["verdict"] == "result (more memory)"
    assert all(d["verdict"] for d in mem.values())
    rate = next(r for r in s["interval_rates"] if r["arm"] == "tuned")
    assert round(rate["rate_tok_s"]) == 543 and rate["label"] == "interval rate, not a throughput"
    assert (rate["tokens_from"], rate["tokens_to"], rate["n"]) == (120, 1446, 3)
    (ref,) = s["references"]
    assert round(ref["reference"], 2) == 5.05 and round(ref["measured"], 3) == 5.139
    assert ref["method"] == "linear interpolation between 786 and 1602 tokens"
    ab = s["ablation"]
    assert ab["baseline_arm"] == "default"
    (inter,) = [
        i for i in ab["interactions"] if i["minimal"] and i["phase"] == "decode" and i["prompt_class"] == "short"
    ]
    assert inter["arm"] == "sparse+cached"
    assert any(st["added"].startswith("POCKETLLM_CPP_PREFILL_MOE_PREFETCH") and st["repairs"] for st in ab["steps"])
    assert any("n=3" in x for x in s["small_n"]) and any("0.10" in x for x in s["small_n"])


def test_summary_writes_no_infinity_as_a_string():
    from benchbook.jsonfile import plain

    assert plain({"a": float("inf"), "b": [float("-inf"), float("nan"), 1 / 3]}) == {
        "a": None,
        "b": [None, None, 1 / 3],
    }
