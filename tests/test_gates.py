"""The validity gates of one analysis (benchbook.analysis.gates): where their values come from, which
gates a spread measured between server processes stands in for, and one line per failed gate."""

from __future__ import annotations

import pytest

from benchbook.analysis import gates
from benchbook.errors import InputError
from realdata import realdata

H200 = realdata("vllm_h200_llama8b")


def test_a_page_parameter_wins_over_the_campaign_which_wins_over_the_defaults():
    g = gates.resolve()
    assert (g.min_duration_s, g.min_completed, g.max_error_rate, g.source) == (60.0, 100, 0.01, "the defaults")
    g = gates.resolve({"min_duration_s": 60.0}, {"min_duration_s": 5, "min_completed": 10})
    assert (g.min_duration_s, g.min_completed, g.source) == (5.0, 10, "campaign.json gates")  # 60 = not set
    g = gates.resolve({"min_duration_s": 20.0}, {"min_duration_s": 5})
    assert (g.min_duration_s, g.source) == (20.0, "this page's parameters")
    g = gates.resolve({"min_duration_s": -1, "preset": "smoke"})
    assert (g.min_duration_s, g.min_completed, g.max_error_rate) == (1.0, 10, 0.05) and g.preset == "smoke"
    assert g.describe() == "duration ≥ 1 s, ≥ 10 completed requests, error rate ≤ 5% (smoke preset)"
    with pytest.raises(InputError, match="unknown preset 'quick'"):
        gates.resolve({"preset": "quick"})


def test_a_measured_spread_stands_in_for_duration_and_count_never_for_errors():
    assert gates.waived(["minimum duration", "minimum completed requests"], repeated=True)
    assert not gates.waived(["minimum duration"], repeated=False)  # nothing measured the spread
    assert not gates.waived(["minimum duration", "maximum error rate"], repeated=True)  # errors are not noise
    assert not gates.waived([], repeated=True)  # nothing to stand in for


def test_one_line_per_failed_gate_names_the_runs_and_their_range():
    from benchbook.analysis import resultset

    files = [str(H200 / a / "results" / "bench_conc8.json") for a in ("serial", "batch")]
    rs = resultset.build(files, labels={files[0]: "serial", files[1]: "batch"})
    lines = {name: (text, ids) for name, text, ids in gates.gate_lines(rs)}
    text, ids = lines["minimum duration"]
    assert text == "minimum duration 60 s: 2 of 2 runs shorter (3.1–20.6 s)"
    assert ids == ["serial/results/bench_conc8", "batch/results/bench_conc8"]
    assert (
        lines["minimum completed requests"][0] == "minimum completed requests 100: 2 of 2 runs completed fewer (32–32)"
    )
    assert rs.gates is not None and rs.gates.source == "the defaults"
