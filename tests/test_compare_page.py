"""Compare page: the Llama-3.3-70B 4-rate sweep and the two repeated nv-action runs, rendered
offline via `benchbook render --compare`, values asserted from `compare.values.json`."""

import json
from pathlib import Path

import pytest

from benchbook.commands.cli import main
from benchbook.pipeline.offline import scan

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / ".." / "shared" / "realdata" / "vllm_bench_serving"
FIX = ROOT / "tests" / "fixtures" / "realdata" / "vllm_bench_serving"
SWEEP = [
    REAL / f"serving_meta-llama-Llama-3.3-70B-Instruct_tp8_pp1_sharegpt_qps_{q}.json" for q in ("01", "04", "16", "inf")
]
NV = [FIX / "nv-action_serving_llama8B_tp1_1.json", FIX / "nv-action_serving_llama8B_tp1_2.json"]


def _render(tmp_path, files):
    out = tmp_path / "compare"
    assert main(["render", "--compare", *map(str, files), "--out", str(out)]) == 0
    assert scan([out / "compare.html"]) == []
    return out, json.loads((out / "compare.values.json").read_text())


@pytest.mark.slow
def test_llama70b_rate_sweep(tmp_path, open_page):
    if not all(f.is_file() for f in SWEEP):
        pytest.skip(f"real sweep files absent under {REAL}")
    out, v = _render(tmp_path, SWEEP)
    assert len(v["configurations"]) == 4 and v["baseline"].endswith("rate 1, 200 prompts")
    assert v["sweep"]["axis"] == "request rate" and v["sweep"]["x"] == ["1", "4", "16", "inf"]
    thr = [r["output_throughput"] for r in v["runs"]]
    assert thr == pytest.approx([208.17717816867716, 673.9184869835061, 1354.3654962178466, 1780.3566341089636])
    inf = v["ratios"][3]
    assert inf["output_throughput"]["ratio"] == pytest.approx(1780.3566341089636 / 208.17717816867716)
    assert v["spreads"] == {} and v["verdicts"] == []  # no repeats: nothing is called a result
    dur = {c["run"][-3:]: c["status"] for c in v["checks"] if c["name"] == "minimum duration"}
    assert dur == {"_01": "pass", "_04": "pass", "_16": "fail", "inf": "fail"}  # 205.2, 63.0, 31.6, 23.8 s vs 60 s
    report = open_page(
        out / "compare.html",
        table_ids=[
            "bb-compare-runs",
            "bb-compare-latency",
            "bb-compare-ratios",
            "bb-compare-checks",
            "bb-provenance-summary",
        ],
        screenshot="compare-sweep.png",
    )
    assert report.ok, report.problems()
    assert report.requests == [] and report.charts == 1


@pytest.mark.slow
def test_nv_action_repeats_measure_spread(tmp_path, open_page):
    out, v = _render(tmp_path, NV)
    assert v["repeats"] == {"Meta-Llama-3-8B-Instruct, rate 1, 200 prompts": 2}
    # median TTFT 103.90021465718746 and 105.73590826243162 ms: spread = 105.7359/103.9002 − 1
    assert v["spreads"]["median_ttft_ms"] == pytest.approx(105.73590826243162 / 103.90021465718746 - 1)
    assert "output_throughput" not in v["spreads"]  # reduced schema: no throughput recorded
    assert v["verdicts"] == [] and v["sweep"] is None
    assert {c["status"] for c in v["checks"] if c["name"] == "minimum duration"} == {"warn"}  # not checked
    report = open_page(out / "compare.html", table_ids=["bb-compare-spreads", "bb-compare-latency"])
    assert report.ok, report.problems()


def test_reconciliation_with_an_engine_window(tmp_path):
    # The er0080 bench file (8 completed) against the same repository's idle/loaded vLLM scrapes (600
    # finished): not the same window, so reconciliation must say so rather than pass.
    bench = FIX / "er0080_bench_serve_v0.25.1.json"
    idle = ROOT / "tests" / "fixtures" / "vllm_captures" / "idle.prom"  # copies of the real scrapes
    loaded = ROOT / "tests" / "fixtures" / "vllm_captures" / "loaded.prom"
    params = tmp_path / "p.json"
    params.write_text(
        json.dumps({"compare": {"engine_before": str(idle.resolve()), "engine_after": str(loaded.resolve())}})
    )
    out = tmp_path / "c"
    assert main(["render", "--compare", str(bench), "--params", str(params), "--out", str(out)]) == 0
    v = json.loads((out / "compare.values.json").read_text())
    st = {c["name"]: c["status"] for c in v["checks"] if c.get("kind") == "engine"}
    # The window's only series serves opt-125m-tp2, the bench ran facebook/opt-125m: not comparable.
    # Before the model check, mean TTFT "passed" (engine 133 ms ≤ client 216 ms) on another model's counters.
    assert st["model: engine series vs client model"] == "fail"
    for name in (
        "successes: engine Δ vs client completed",
        "generation tokens: engine Δ vs client Σ output tokens",
        "mean TTFT: engine vs client",
        "mean E2E: engine vs client",
    ):
        assert st[name] == "warn", name  # not checked: listed as not comparable, never passed
    assert st["TTFT count vs E2E count"] == "warn"  # 664 first tokens, 600 finished: requests in flight
