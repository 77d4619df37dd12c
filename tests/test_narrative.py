"""Sentences true to the design (benchbook.analysis.narrative): generated from the processes each arm
ran, every comparison the page shows, and why a result set measured no spread."""

from __future__ import annotations

import pytest

import h200_two_process as two

H200 = two.H200


@pytest.fixture(scope="module")
def an(two_process_analysis):
    return two_process_analysis  # conftest: built and analysed once per test run


def test_the_processes_each_arm_ran(an):
    assert an.processes_sentence(["serial", "batch", "eager"]) == (
        "serial: 2 server processes (serial/p1, serial/p2); batch: 2 server processes (batch/p1, batch/p2); "
        "eager: 1 server process"
    )


def test_the_verdict_covers_the_phase_cells_and_the_ladder_and_names_the_processes(an):
    lines = an.verdict_sentences(["serial", "batch"])
    (ser,) = [x for x in lines if x.startswith("Serialization — ")]
    assert "flat across the ladder, requests served one at a time: serial (serial/p1, serial/p2)" in ser
    assert "the rate rises with n: batch (batch/p1, batch/p2)" in ser
    (pair,) = [x for x in lines if x.startswith("batch vs serial:")]
    phase = [c for c in an.comparisons if (c["baseline"], c["candidate"]) == ("serial", "batch")]
    ladder = [c for c in an.results_ladder["comparisons"] if (c["baseline"], c["candidate"]) == ("serial", "batch")]
    results = sum(c["is_result"] for c in phase + ladder)
    assert pair.startswith(f"batch vs serial: {results} of {len(phase) + len(ladder)} figures are results")
    assert "output tok/s at concurrency 8 6.77x" in pair
    assert any(x.startswith("eager vs batch:") for x in lines)  # the ladder's other pairs are on the page too


def test_no_spread_is_said_as_it_is(tmp_path):
    import json

    from benchbook.analysis import resultset

    f = H200 / "serial" / "results" / "bench_conc1.json"
    one = resultset.build([str(f)])
    assert one.spread_note().startswith("No configuration in these comparisons was run more than once")
    doc = json.loads(f.read_text())  # a repeat: the same configuration and load, other timings
    doc.update(ttfts=[t * 1.02 for t in doc["ttfts"]], duration=doc["duration"] * 1.02)
    (tmp_path / "again.json").write_text(json.dumps(doc))
    both = resultset.build([str(f), str(tmp_path / "again.json")])
    assert [len(p.entries) for c in both.configs for p in c.points] == [2]  # repeats, both below the gates
    assert both.spread_note().startswith("Repeated configurations (")
    assert "every repeat failed a validity gate" in both.spread_note()
