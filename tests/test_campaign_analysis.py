"""The one analysis object per campaign (benchbook.analysis.campaign_analysis) on data/dsv4-163 and
on hand-checkable inputs: memory deltas with verdicts, interval rates, reference points, clamps."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchbook.analysis.campaign_analysis import analyse
from benchbook.analysis.memory import memory_verdict
from benchbook.analysis.references import interpolate
from benchbook.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
CAMPAIGN = ROOT / "data" / "dsv4-163"


@pytest.fixture(scope="module")
def an():
    return analyse(CAMPAIGN)


def test_computed_once_per_campaign_object(an):
    assert analyse(an.camp) is an
    assert analyse(an.camp, rule="strict") is not an


def test_memory_deltas_per_compared_pair(an):
    d = {(x.baseline, x.candidate, x.quantity): x for x in an.memory_deltas}
    assert set(d) == {
        (b, c, q)
        for b, c in [("default", "tuned"), ("tuned", "batch"), ("serial", "batched-forward")]
        for q in ("peak", "steady")
    }
    assert round(d[("default", "tuned", "peak")].delta_gib, 1) == 7.4
    assert round(d[("default", "tuned", "steady")].delta_gib, 2) == 1.86
    assert round(d[("serial", "batched-forward", "peak")].delta_gib, 1) == 1.6
    # 16.42 vs 15.57 GiB peak: 0.85 GiB is inside 7.5 % of 15.57 (1.16 GiB)
    assert not d[("tuned", "batch", "peak")].is_result
    assert d[("tuned", "batch", "peak")].verdict == "within noise — not a result"
    assert "n=1 memory run per arm" in d[("tuned", "batch", "peak")].reason


def test_memory_verdict_by_hand():
    assert memory_verdict(10.0, 11.0, 0.05)[1:3] == ("result (more memory)", True)
    assert memory_verdict(10.0, 9.0, 0.05)[1:3] == ("result (less memory)", True)
    assert memory_verdict(10.0, 10.4, 0.05)[1:3] == ("within noise — not a result", False)
    assert memory_verdict(10.0, 20.0, None)[1:3] == ("no verdict", False)


def test_interval_rate_of_the_seed(an):
    r = {x.arm: x for x in an.interval_rates}["tuned"]
    assert round(r.rate.value) == 543  # 1326 tokens / (5.139 − 2.699) s
    assert r.rate.label == "interval rate, not a throughput"
    assert "n=3" in r.describe() and "not a throughput" in r.describe()


def test_reference_is_the_interpolation_the_points_give(an):
    (r,) = an.references
    assert (r.arm, r.prompt_class, r.metric, r.prompt_tokens) == ("tuned", "long", "prefill_s", 1446)
    assert round(r.reference, 2) == 5.05  # 3.57 + 1.83 × 660 / 816, not the prose's ~5.2
    assert r.verdict.startswith("agrees within")


def test_interpolate_never_extrapolates():
    assert interpolate([(0, 0.0), (10, 1.0)], 5) == (0.5, "linear interpolation between 0 and 10 tokens")
    v, why = interpolate([(0, 0.0), (10, 1.0)], 11)
    assert v is None and "not extrapolated" in why


def test_clamps_and_ablation_present(an):
    c = {x.arm: x for x in an.clamps}
    assert c["batch"].clamped and not c["tuned"].clamped
    assert an.ablation is not None and an.ablation.baseline_arm == "default"


def test_small_n_sentences_follow_n(an):
    notes = an.small_n_notes()
    assert any("n=3" in x for x in notes) and any("0.10" in x for x in notes)


def test_unknown_rule_is_bad_input():
    with pytest.raises(InputError):
        analyse(CAMPAIGN, rule="loose")


def test_page_views_are_the_analysis_figures_computed_once_on_the_analysis_object(an):
    """What a page shows is a view of the analysis (issue 26): the same figures the analysis
    functions give, computed once per analysis object."""
    from benchbook.analysis import baseline
    from benchbook.analysis.memory import memory_table

    arms = an.main_arms()
    assert arms == baseline.main_arms(an.camp)
    cells = an.phase_cells_of(arms)
    assert an.phase_cells_of(arms) is cells
    assert cells.equals(baseline.phase_cells(an.camp, arms, an.warmup_rounds))
    assert an.whole_request_rows() == baseline.whole_request_rows(an.camp)
    assert an.memory_table().equals(memory_table(an.memory))
    gpu_runs = [r.id for r in an.camp.runs_of("gpu")]
    if gpu_runs:
        samples, _marks = an.load_ramp(gpu_runs[0])
        assert an.load_ramp(gpu_runs[0])[0] is samples
