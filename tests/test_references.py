"""The phase cells against each other and against earlier measurements (analysis/references.py):
interpolation without extrapolation, the reference verdict by hand (symmetric, n=1 on the reference
side), and the interval rate of data/dsv4-163's arms."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchbook.analysis.campaign_analysis import analyse
from benchbook.analysis.references import interpolate, reference_decision
from benchbook.analysis.stats import Cell
from benchbook.analysis.verdict import State

DSV4 = Path(__file__).resolve().parents[1] / "data" / "dsv4-163"


def test_interpolation_between_the_bracketing_points_only():
    pts = [(120.0, 3.57), (936.0, 5.40), (2000.0, 6.0)]
    v, how = interpolate(pts, 780.0)
    assert v == pytest.approx(3.57 + 1.83 * 660 / 816) and how == "linear interpolation between 120 and 936 tokens"
    assert interpolate(pts, 936.0)[0] == pytest.approx(5.40)
    assert interpolate(list(reversed(pts)), 780.0) == (v, how)  # the order given does not matter
    none, why = interpolate(pts, 100.0)
    assert none is None and why == "100 tokens is outside the measured range 120–2000: not extrapolated"


def test_reference_verdict_by_hand():
    measured = Cell.from_range(5.0, 4.9, 5.1)
    near = reference_decision(5.2, measured, "prefill_tok_s", 0.075)  # 5.2 / 5.0 - 1 = 4 % < 7.5 %
    assert near.state is State.WITHIN_NOISE
    far = reference_decision(6.0, measured, "prefill_tok_s", 0.075)  # 20 % below the earlier figure
    assert far.state is State.REGRESSION  # a higher prefill rate is better: this campaign is slower
    assert reference_decision(6.0, measured, "prefill_tok_s", None).state is State.CANNOT_TELL


def test_the_campaign_analysis_holds_interval_rates_and_references():
    an = analyse(DSV4)
    rates = {r.arm: r for r in an.interval_rates}
    assert set(rates) == set(an.camp.arms) - {a for a in an.camp.arms if not an.camp.runs_of("phases", a)}
    d = rates["default"].as_dict()
    assert (d["from_class"], d["to_class"], d["tokens_from"], d["tokens_to"]) == ("short", "long", 120, 1446)
    assert "the interval contains the fixed per-request cost" in d["text"]
    (ref,) = an.references
    assert ref.as_dict()["text"].startswith(f"{ref.metric} at {ref.prompt_tokens:g} tokens: ")
