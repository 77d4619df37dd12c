"""The baseline page's phase comparisons in init's arm/run layout: an arm that ran two server processes
gives the phase cells their run-to-run spread (analysis.baseline.phase_noise), the processes being the
repeats; built at test time from the shared H200 campaign (its batch/ folder copied twice as two
processes of one arm, one of them with every client time a few percent longer)."""

from __future__ import annotations

import json
import shutil
from argparse import Namespace

import pytest

from benchbook.analysis.baseline import PHASE_METRICS
from benchbook.analysis.campaign_analysis import analyse
from benchbook.commands import init as init_cmd
from h200_campaign import H200

SLOWER = 1.03  # the second process's client times
# what the phase split needs (phases.json, its captures, the log, a results point); the big
# sweep files (rate points, per-second scrapes, samples) stay out of the copies
SKIP = shutil.ignore_patterns("*_scrapes.jsonl", "*rate*", "gpu_samples.csv", "host_samples.csv")


def _campaign(tmp, processes: int):
    src = tmp / "runs"
    for i in range(1, processes + 1):
        shutil.copytree(H200 / "batch", src / "batch" / f"p{i}", ignore=SKIP)
    shutil.copytree(H200 / "serial", src / "serial", ignore=SKIP)
    if processes > 1:
        p2 = src / "batch" / "p2" / "phases.json"
        doc = json.loads(p2.read_text())
        for s in doc["samples"]:
            s["client_total_s"] *= SLOWER
        p2.write_text(json.dumps(doc))
    dest = tmp / "camp"
    rc = init_cmd.run(
        Namespace(dir=dest, inputs=[src / "serial", src / "batch"], title=None, question=None, quiet=True)
    )
    assert rc == 0
    return analyse(dest)


def _phase(an):
    return [c for c in an.comparisons if c["metric"] in PHASE_METRICS]


def test_one_process_per_arm_gives_no_verdict(tmp_path):
    an = _campaign(tmp_path, 1)
    assert an.phase_noise is None
    rows = _phase(an)
    assert rows and {(c["baseline"], c["candidate"]) for c in rows} == {("serial", "batch")}
    assert all(c["verdict"] == "no verdict" and "run twice" in c["reason"] for c in rows)


def test_two_processes_of_an_arm_give_the_phase_comparisons_their_spread(tmp_path):
    an = _campaign(tmp_path, 2)
    pn = an.phase_noise
    assert (pn.arm, pn.metric, pn.runs) == ("batch", "client_total_s", ("batch/p1", "batch/p2"))
    assert pn.spread == pytest.approx(SLOWER - 1)  # each process's median over rounds, 3 % apart
    assert an.noise is None  # no requests runs: the whole-request yardstick is still unmeasured
    rows = _phase(an)
    assert {c["metric"] for c in rows} >= {"decode_tok_s", "engine_total_s"}
    for c in rows:
        assert c["verdict"] != "no verdict", c
        ev = c["verdict_evidence"]
        assert ev["spread"] == pytest.approx(SLOWER - 1) and "server processes of arm batch" in ev["spread_from"]
        assert (c["baseline_n"], c["candidate_n"]) == (1, 2)  # the processes are the repeats, not the rounds
        assert ev["candidate"]["samples"] == sorted(ev["candidate"]["samples"]) and len(ev["candidate"]["samples"]) == 2
    # serial and batch decode one request at a time alike: within the 3 % spread, not a result
    dec = [c for c in rows if c["metric"] == "decode_tok_s"]
    assert dec and all(not c["is_result"] for c in dec)
    summary = an.as_dict()
    assert summary["phase_noise"]["spread"] == pytest.approx(SLOWER - 1)
    assert "3.0%" in summary["phase_noise"]["text"]
