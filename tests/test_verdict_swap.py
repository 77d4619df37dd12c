"""The swap test: every comparison in every bundled campaign, judged with its arms swapped, mirrors.

Improvement <-> regression, every other state unchanged, the direction flipped. Two ways:

* from ``summary --json``: every serialized verdict carries its complete evidence
  (``verdict_evidence``); it is judged again by :func:`verdict.decide` (must give the state the
  summary shows — the summary is what the analysis decided) and with the sides swapped (must mirror);
* through the analyses themselves, arms swapped at the source: the baseline comparisons with every
  pair reversed, the memory and reference decisions with their figures exchanged, the PD comparisons
  with the other arm as baseline.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchbook.analysis import baseline, campaign_analysis, disaggregation, history, memory
from benchbook.analysis.verdict import Evidence, State, decide
from benchbook.commands.summary import build
from benchbook.ingest.campaign import load_campaign
from test_summary import _objects  # every JSON object in a tree

ROOT = Path(__file__).resolve().parents[1]
CAMPAIGNS = sorted(p.name for p in (ROOT / "data").iterdir() if (p / "campaign.json").is_file())


def _typed(tree) -> list[tuple[State, Evidence]]:
    out = []
    for o in _objects(tree):
        if isinstance(o.get("verdict_evidence"), dict):
            state = State(o.get("verdict_state") or o["state"])
            out.append((state, Evidence.from_dict(o["verdict_evidence"])))
    return out


def _assert_mirrors(typed, where):
    assert typed, f"{where}: no typed verdict found"
    for state, ev in typed:
        v = decide(ev)
        assert v.state == state, f"{where}: the summary says {state}, its evidence gives {v.state}"
        w = decide(ev.swapped())
        assert v.mirrors(w), f"{where}: {v.state}/{v.direction} swapped gives {w.state}/{w.direction}"


@pytest.mark.parametrize("name", CAMPAIGNS)
def test_every_summary_verdict_mirrors_when_swapped(name):
    s = build(ROOT / "data" / name)
    _assert_mirrors(_typed(s), name)


@pytest.mark.parametrize("rule", ["seed", "strict", "small-n"])
def test_baseline_comparisons_mirror_with_the_pairs_reversed(rule):
    camp = load_campaign(ROOT / "data" / "dsv4-163")
    pairs = baseline.comparison_pairs(camp)
    fwd = baseline.comparisons(camp, rule=rule, pairs=pairs)
    back = baseline.comparisons(camp, rule=rule, pairs=[(c, b) for b, c in pairs])
    key = ("metric", "context")
    rev = {(r["baseline"], r["candidate"], *(r[k] for k in key)): r for r in back}
    assert len(fwd) == len(back) > 20
    for r in fwd:
        s = rev[(r["candidate"], r["baseline"], *(r[k] for k in key))]
        assert State(s["state"]) == State(r["state"]).mirrored(), (r["metric"], r["context"])
        assert s["is_result"] == r["is_result"]


def test_memory_and_reference_verdicts_mirror():
    # the old memory rule tested |Δ| against spread × the baseline: 10 → 10.6 GiB at 5.9 % was a result
    # one way (0.6 > 0.59) and not the other (0.6 < 0.625); the symmetric rule decides both the same
    a, b = memory.memory_decision(10.0, 10.6, 0.059), memory.memory_decision(10.6, 10.0, 0.059)
    assert a.mirrors(b) and a.state is State.REGRESSION  # more memory is worse
    an = campaign_analysis.analyse(ROOT / "data" / "dsv4-163")
    assert an.memory_deltas
    for d in an.memory_deltas:
        assert d.typed.mirrors(memory.memory_decision(d.candidate_gib, d.baseline_gib, an.spread))
    (ref,) = an.references
    assert ref.typed.mirrors(decide(ref.typed.evidence.swapped()))


@pytest.mark.parametrize("noise_pct", [None, 5.0])
def test_pd_comparisons_mirror_with_the_other_baseline_arm(noise_pct):
    root = ROOT / "data" / "pd-prefill-cap"
    fwd = disaggregation.analyse(root, noise_pct=noise_pct)
    ((b, c),) = {(x["baseline"], x["candidate"]) for x in fwd.comparisons}
    back = disaggregation.analyse(root, baseline_arm=c, noise_pct=noise_pct)
    rev = {(x["metric"], x["context"].split(",")[0], x["context"].split(", ")[1]): x for x in back.comparisons}
    states = set()
    for x in fwd.comparisons:
        y = rev[(x["metric"], x["context"].split(",")[0], x["context"].split(", ")[1])]
        assert (y["baseline"], y["candidate"]) == (c, b)
        assert State(y["state"]) == State(x["state"]).mirrored(), x["metric"]
        states.add(State(x["state"]))
    assert len(fwd.comparisons) == len(back.comparisons) > 5
    # with a supplied threshold there are results both ways; without, nothing is replicated
    assert states & {State.IMPROVEMENT, State.REGRESSION} if noise_pct else State.CANNOT_TELL in states


def test_history_changes_and_steps_mirror():
    heads = [history.headline(ROOT / "data" / n) for n in CAMPAIGNS]
    h = history.analyse(history.history_table(heads))
    rows = [r for f in h.figures for r in (*f.changes, *f.steps) if "verdict_evidence" in r]
    for r in rows:
        ev = Evidence.from_dict(r["verdict_evidence"])
        assert decide(ev).mirrors(decide(ev.swapped()))
