"""The ablation page rendered for data/dsv4-163: the seed's six arms, figures and conclusions,
asserted on recorded values; the baseline_arm parameter; one browser check."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from benchbook.analysis import baseline
from benchbook.analysis.stats import fmt_pct
from benchbook.analysis.verdict import compare
from benchbook.ingest.campaign import load_campaign
from benchbook.pipeline.campaigns import render_campaign
from seed_tables import ABLATION, ABLATION_KEYS

ROOT = Path(__file__).resolve().parents[1]
CAMPAIGN = ROOT / "data" / "dsv4-163"
SPARSE, PREFETCH, CACHED = (
    "POCKETLLM_CPP_DECODE_SPARSE_ARENA",
    "POCKETLLM_CPP_PREFILL_MOE_PREFETCH",
    "DEEPSEEK_GPU_PREFILL_MOE_MAX_CACHED_LAYERS",
)

# The seed's "Environment ablation" table: (median, min, max) for short/long prefill, short/long decode
SEED = ABLATION
KEYS = ABLATION_KEYS


@pytest.fixture(scope="module")
def pages(tmp_path_factory, bundled_reports):
    """Default page (from the run's `render --all data`: conftest's bundled_reports) and the
    baseline_arm="tuned" page, rendered through the campaign renderer."""
    out = tmp_path_factory.mktemp("ablation")
    html = bundled_reports / CAMPAIGN.name / "ablation.html"
    default = SimpleNamespace(
        html=html, values=json.loads(html.with_suffix(".values.json").read_text()), bytes=html.stat().st_size
    )
    tuned = render_campaign(
        CAMPAIGN, out / "tuned", pages=["ablation"], overrides={"ablation": {"baseline_arm": "tuned"}}
    ).rendered[0]
    return default, tuned


def _cells(values):
    return {(r["arm"], r["phase"], r["prompt_class"]): r for r in values["ablation_table"]}


def test_six_arms_with_the_seed_figures(pages):
    v = pages[0].values
    assert v["baseline_arm"] == "default"
    assert v["arms"] == ["default", "sparse", "prefetch", "cached", "sparse+cached", "tuned"]
    cells = _cells(v)
    for arm, triples in SEED.items():
        for key, (med, lo, hi) in zip(KEYS, triples):
            r = cells[(arm, *key)]
            d = 1 if key[0] == "prefill" else 3
            assert (round(r["median"], d), round(r["min"], d), round(r["max"], d)) == (med, lo, hi), (arm, key)
            assert r["prompt_tokens"] == {"short": 120, "long": 1446}[key[1]] and r["generated_tokens"] == 32
            assert r["environment"] == arm and r["n"] == 3


def test_seed_conclusions(pages):
    v = pages[0].values
    cells = _cells(v)
    # no single switch produces the decode gain
    for arm in ("sparse", "prefetch", "cached"):
        for pc in ("short", "long"):
            assert cells[(arm, "decode", pc)]["is_result"] is False, arm
    assert any(s.startswith("No single switch produces the decode gain") for s in v["single_switch_summary"])
    # the pair is a result on decode, and it is an interaction (minimal), each switch alone within noise
    for pc in ("short", "long"):
        assert cells[("sparse+cached", "decode", pc)]["is_result"] is True
        assert cells[("sparse+cached", "decode", pc)]["interaction"] is True
    pair = [f for f in v["interaction_findings"] if f["arm"] == "sparse+cached" and f["phase"] == "decode"]
    assert len(pair) == 1 and pair[0]["minimal"] and pair[0]["direction"] == "improvement"
    assert pair[0]["singles"] == ["cached", "sparse"] and "these switches interact" in pair[0]["text"]
    # tuned's decode gain is the pair's interaction again, not a new one
    tuned = [f for f in v["interaction_findings"] if f["arm"] == "tuned" and f["phase"] == "decode"]
    assert len(tuned) == 1 and not tuned[0]["minimal"] and "sparse+cached" in tuned[0]["text"]
    # prefetch buys long prefill: +7.7 %, a result
    pf = cells[("prefetch", "prefill", "long")]
    assert pf["is_result"] and pf["direction"] == "improvement" and fmt_pct(pf["change"], signed=True) == "+7.7%"
    assert f"{PREFETCH}=1 alone buys prefill (long +7.7%)" in v["findings"]
    # the pair's long prefill 212.2 is a regression; prefetch on top of the pair repairs it
    lp = cells[("sparse+cached", "prefill", "long")]
    assert lp["is_result"] and lp["direction"] == "regression" and round(lp["median"], 1) == 212.2
    repair = [s for s in v["steps"] if s["repairs"]]
    assert [(s["from"], s["to"], s["added"], s["prompt_class"]) for s in repair] == [
        ("sparse+cached", "tuned", f"{PREFETCH}=1", "long")
    ]
    # ATTN=1 is the built-in default, not a variable
    assert v["switches"]["tuned"] == [f"{CACHED}=43", f"{SPARSE}=12", f"{PREFETCH}=1"]
    assert any("BATCHED_ATTN=1 is the built-in default" in n for n in v["notes"])


def test_spread_calls_out_the_noisy_prefill_columns(pages):
    v = pages[0].values
    ranked = v["noisiest"]
    # the median of six widths is the mean of the middle two: long prefill (2.93 % and 3.50 % ->
    # 3.22 %) ranks above short prefill (2.25 % and 3.90 % -> 3.06 %); the upper middle would
    # have put short prefill first (3.90 % against 3.50 %)
    assert [(r["phase"], r["prompt_class"]) for r in ranked[:2]] == [("prefill", "long"), ("prefill", "short")]
    short_prefill = ranked[1]
    assert short_prefill["widest_arm"] == "sparse+cached"  # 38.2–43.3
    assert short_prefill["median_width"] == pytest.approx((1.0 / 44.5 + 1.7 / 43.6) / 2, rel=0.05)
    long_prefill = ranked[0]
    assert {"prefetch", "cached"} <= set(long_prefill["several_times_baseline"])
    assert {r["phase"] for r in ranked[-2:]} == {"decode"}


def test_baseline_arm_tuned_compares_everything_against_tuned(pages):
    v = pages[1].values
    assert v["baseline_arm"] == "tuned" and v["arms"][0] == "tuned"
    assert set(v["arms"]) == set(SEED)
    camp = load_campaign(CAMPAIGN)
    cells = baseline.phase_cells(camp, list(SEED))
    spread = baseline.noise(camp).spread
    assert v["noise_spread"] == pytest.approx(spread)
    metric = {"prefill": "prefill_tok_s", "decode": "decode_tok_s"}
    checked = 0
    for r in v["ablation_table"]:
        assert r["baseline_arm"] == "tuned"
        if r["arm"] == "tuned":
            assert r["verdict"] == "baseline" and r["change"] is None
            continue
        m = metric[r["phase"]]
        c = compare(
            baseline.cell_of(cells, "tuned", r["prompt_class"], m),
            baseline.cell_of(cells, r["arm"], r["prompt_class"], m),
            spread=spread,
        )
        assert r["change"] == pytest.approx(c.change) and r["is_result"] == c.is_result
        assert r["direction"] == c.direction and r["reason"] == c.reason
        checked += 1
    assert checked == 5 * 4
    # against tuned, the default arm's switches are the three variables turned back off
    assert v["switches"]["default"] == [f"{CACHED}=0", f"{SPARSE}=0", f"{PREFETCH}=0"]
    # the same figures whatever the baseline
    a, b = _cells(pages[0].values), _cells(v)
    assert all(a[k]["median"] == b[k]["median"] for k in a)


def test_page_in_browser(pages, open_page):
    res = pages[0]
    rep = open_page(
        res.html, table_ids=["bb-ablation", "bb-ablation-spread", "bb-ablation-phases"], screenshot="ablation.png"
    )
    assert rep.ok, rep.problems()
    assert rep.charts >= 4  # one range chart per cell
    assert res.bytes < 1_000_000  # size, not time: speed is measured by `make bench`
