"""The campaign's one findings list (benchbook.analysis.campaign_findings): failed checks, warnings one
line per cause naming and linking their windows, results one line per compared pair and direction
(counted per decision), what was not judged, and the rules stated once."""

from __future__ import annotations

import pytest

import h200_campaign
from benchbook.analysis.campaign_analysis import analyse
from benchbook.findings import FINDING_KINDS, anchor


@pytest.fixture(scope="module")
def an(two_process_analysis):
    return two_process_analysis  # conftest: built and analysed once per test run


def test_warnings_are_one_line_per_cause_with_the_windows_linked(an):
    box = an.campaign_findings()
    kinds = [f.kind for f in box.lines]
    assert kinds == sorted(kinds, key=FINDING_KINDS.index)
    warn = {f.cause: f for f in box.lines if f.kind == "warn"}
    assert set(warn) == {"prefix cache", "queueing", "validity gates"} and box.warnings == 3
    cache = warn["prefix cache"]
    audited = [a for a in an.audit.windows if a.cached_share is not None and a.cached_share >= 0.5]
    assert f"{len(audited)} window(s)" in cache.text
    labels = [label for label, _ in cache.links]
    assert "serial-p2-phases (6 windows) 96.2%–99.3%" in labels and "batch-p1-conc2 98.7%" in labels
    assert ("batch-p1-conc2 98.7%", anchor("win", "batch-p1-conc2")) in cache.links
    assert cache.where == (("baseline", "audit"), ("compare", "audit"))
    q = warn["queueing"]
    assert [label for label, _ in q.links] == [f"serial-p{p}-conc{n} {s}" for p in (1, 2)
                                                for n, s in ((2, "45.4%"), (4, "69.5%"), (8, "84.9%"))]  # fmt: skip
    assert "judged anyway" in warn["validity gates"].text


def test_results_are_one_line_per_pair_and_counted_per_decision(an):
    box = an.campaign_findings()
    res = [f for f in box.lines if f.kind in ("regression", "improvement", "result")]
    assert len({f.text.split(":")[0] + f.kind for f in res}) == len(res)  # one line per pair and direction
    (imp,) = [f for f in res if f.kind == "improvement" and f.text.startswith("batch vs serial:")]
    assert imp.text.startswith("batch vs serial: 22 improvements — output tok/s at concurrency 8: 6.77x")
    assert ("baseline", "results-ladder") in imp.where and ("compare", "compare-verdicts") in imp.where
    decided = [v for v in an.results.verdicts if v.judgement.is_result]
    ladder_only = [c for c in an.comparisons if c["is_result"]]
    assert box.results >= len(decided) and box.regressions + box.improvements <= box.results
    assert not ladder_only or box.results > len(decided)


def test_the_rules_are_the_campaigns_stated_once(an):
    rules = an.campaign_findings().rules
    assert len(rules) == 3
    assert rules[0].startswith("Phase figures") and "2.4%" in rules[0]
    assert rules[1].startswith("Result files at matched load") and ", 6 server processes)" in rules[1]
    assert rules[2].startswith("Validity gates (the defaults): duration ≥ 60 s") and "32 of 32 runs" in rules[2]


def test_a_preemption_is_a_failed_check_naming_its_window(tmp_path):
    camp = h200_campaign.build(tmp_path, phases=("noprefix",), results=(("batch", "conc1"),))
    path = camp / "runs" / "batch-conc1" / "conc1_after.prom"
    path.write_text(
        "\n".join(
            (k + " " + str(float(v) + 5)) if line.startswith("vllm:num_preemptions_total{") else line
            for line in path.read_text().splitlines()
            for k, v in [line.rsplit(" ", 1) if " " in line else (line, "0")]
        )
        + "\n"
    )
    box = analyse(camp).campaign_findings()
    first = box.lines[0]
    assert first.kind == "fail" and first.cause == "preemption" and first.text.startswith("preemption: 5 preemption(s)")
    assert first.links == (("batch-conc1: 5", anchor("win", "batch-conc1")),)
    allowed = analyse(camp, allow_preemption=True).campaign_findings()
    assert any(f.kind == "warn" and f.cause == "preemption" for f in allowed.lines)
