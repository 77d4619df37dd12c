"""One campaign, one answer (issue 33): the arm/run-layout H200 campaign with two server processes
for serial and batch (tests/h200_two_process.py), brought in with ``benchbook init``."""

from __future__ import annotations

import json

import pytest

import h200_two_process as two


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    return two.build(tmp_path_factory.mktemp("two"))


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
