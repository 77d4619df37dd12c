"""vLLM result files (tests/fixtures/realdata and ../shared/realdata): detected, read, figures checked.

Expected values were worked out from the files by hand (stdlib json + arithmetic), not by benchbook.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from benchbook.errors import InputError
from benchbook.ingest import formats as F
from realdata import realdata

HERE = Path(__file__).parent
FIX = HERE / "fixtures" / "realdata" / "vllm_bench_serving"
SHARED = realdata("vllm_bench_serving")
LLAMA = "serving_meta-llama-Llama-3.3-70B-Instruct_tp8_pp1_sharegpt_qps_{}.json"


def shared(name: str) -> Path:
    p = SHARED / name
    if not p.exists():
        pytest.skip(f"large real capture {name} not present at {SHARED} (CI has ../shared beside the clone)")
    return p


def one(path: Path) -> F.BenchmarkRun:
    runs = F.read(path)
    assert len(runs) == 1
    return runs[0]


def test_every_vllm_file_is_detected_and_read():
    files = sorted(FIX.glob("*.json")) + (sorted(SHARED.glob("*.json")) if SHARED.exists() else [])
    assert len(files) >= 8
    for p in files:
        fmt = F.detect(p)
        assert fmt in ("vllm-bench-serve", "vllm-nightly-table"), p
        runs = F.read(p)
        assert runs and all(r.format == fmt for r in runs)
        assert len(F.describe(runs)) == len(runs)


def test_llama_qps01_completed_and_mean_ttft_from_per_request_arrays():
    r = one(shared(LLAMA.format("01")))
    assert r.format == "vllm-bench-serve"
    assert r.config["variant"] == "benchmark_serving.py"
    assert r.config["model"] == "meta-llama/Llama-3.3-70B-Instruct"
    assert r.config["request_rate"] == 1.0  # a float in this file
    assert r.summary["completed"] == 200
    # no "failed" key: 200 entries in "errors", all "" → 0 failed
    assert r.summary["failed"] == 0
    assert r.summary["duration_s"] == pytest.approx(205.21942114800004)
    # sum(ttfts) = 13.051555268999437 s over 200 requests → 65.25777634499718 ms (= the file's mean_ttft_ms)
    df = r.requests
    assert df.height == 200 and df["success"].all()
    assert df["ttft_s"].sum() == pytest.approx(13.051555268999437)
    assert df["ttft_s"].mean() * 1000 == pytest.approx(65.25777634499718)
    assert r.summary["mean_ttft_ms"] == pytest.approx(65.25777634499718)
    # sum(output_lens) = 42722 = total_output_tokens; sum(input_lens) = 42659
    assert df["completion_tokens"].sum() == 42722 == r.summary["total_output_tokens"]
    assert df["prompt_tokens"].sum() == 42659
    # request 0: ttft 0.03155051600015213 + sum of its 119 itls 2.503826229000424 = 2.535376745000576 s
    assert df["e2e_s"][0] == pytest.approx(2.535376745000576)
    assert len(df["itl"][0]) == 119 and df["completion_tokens"][0] == 120
    # E2E is not in this older file: mean of the 200 derived latencies = 5269.5643849 ms
    assert r.summary["mean_e2el_ms"] == pytest.approx(5269.5643849000135)
    assert any("mean_e2el_ms" in n for n in r.notes)
    # the key "request_goodput:" (trailing colon) is read, its value is null
    assert r.summary["request_goodput"] is None
    assert any("request_goodput:" in n for n in r.notes)


def test_llama_derived_tpot_agrees_with_the_files_tpot():
    # Σitl/(out-1) per request, averaged: 24.564418 ms vs the file's 24.564414 ms (vLLM measured latency
    # separately, so the two differ in the 7th digit) — evidence that e2e = ttft + Σitl is vLLM's rule.
    r = one(shared(LLAMA.format("01")))
    derived = F.summary_from_requests(r.requests)
    assert derived["mean_tpot_ms"] == pytest.approx(r.summary["mean_tpot_ms"], rel=1e-6)
    assert derived["mean_itl_ms"] == pytest.approx(r.summary["mean_itl_ms"], rel=1e-6)


def test_request_rate_string_inf_becomes_float_inf():
    r = one(shared(LLAMA.format("inf")))
    assert r.config["request_rate"] == math.inf
    assert r.summary["completed"] == 200
    assert r.summary["duration_s"] == pytest.approx(23.81432977400027)


def test_deepseek_file():
    r = one(shared("serving_deepseek-ai-DeepSeek-V2.5_tp8_pp2_ib_sharegpt_qps_inf.json"))
    assert r.config["model"] == "deepseek-ai/DeepSeek-V2.5"
    assert r.summary["completed"] == 200
    assert r.summary["total_output_tokens"] == 42584 == r.requests["completion_tokens"].sum()
    assert r.summary["mean_ttft_ms"] == pytest.approx(1838.0622782349883)


def test_all_requests_failed():
    r = one(FIX / "er0080_bench_serve_all_requests_failed_v0.25.1.json")
    assert r.config["variant"] == "vllm bench serve"
    assert r.summary["completed"] == 0 and r.summary["failed"] == 8
    assert r.summary["request_throughput"] == 0.0  # a real figure: 0 completed / 0.00503 s
    # the file's latency figures are 0.0 placeholders, not measurements
    assert r.summary["mean_ttft_ms"] is None and r.summary["p99_itl_ms"] is None
    assert any("placeholders" in n for n in r.notes)
    assert F.describe([r])[0].count("failed=8") == 1


def test_bench_serve_newer_schema():
    r = one(FIX / "er0080_bench_serve_v0.25.1.json")
    assert r.config["variant"] == "vllm bench serve"
    assert r.config["max_concurrency"] == 2
    assert r.summary["max_concurrent_requests"] == 6
    # 8 completed in 1.5441598830002476 s → 5.180810671 req/s (the file's request_throughput)
    assert 8 / r.summary["duration_s"] == pytest.approx(r.summary["request_throughput"])
    assert r.summary["mean_ttft_ms"] == pytest.approx(215.53594200008774)
    assert r.summary["mean_e2el_ms"] is None  # this file has no E2E
    assert r.requests is None


def test_sweep_runs_and_summary_list():
    run0 = one(FIX / "er0080_sweep_maxnumseqs4_conc2_run0.json")
    run1 = one(FIX / "er0080_sweep_maxnumseqs4_conc2_run1.json")
    both = F.read(FIX / "er0080_sweep_maxnumseqs4_conc2_summary.json")
    assert [r.location for r in both] == ["$[0]", "$[1]"]
    assert [r.config["run_number"] for r in both] == [0, 1]
    assert run0.config["variant"] == "vllm bench sweep"
    assert run0.config["params"] == {"max_num_seqs": 4}  # the swept server parameter
    assert both[0].summary == run0.summary and both[1].summary == run1.summary
    # 128 output tokens / 1.3653671270003542 s = 93.7477 tok/s ; / 0.6420253609976498 s = 199.369 tok/s
    assert 128 / run0.summary["duration_s"] == pytest.approx(93.74767963046673)
    assert 128 / run1.summary["duration_s"] == pytest.approx(199.36907134182283)
    assert run0.summary["mean_e2el_ms"] == pytest.approx(340.3411977451469)
    assert run1.summary["mean_e2el_ms"] == pytest.approx(159.49398987686436)


def test_two_repeated_nv_action_runs():
    a = one(FIX / "nv-action_serving_llama8B_tp1_1.json")
    b = one(FIX / "nv-action_serving_llama8B_tp1_2.json")
    assert a.config["variant"].startswith("reduced") and b.config["variant"].startswith("reduced")
    assert a.config["request_rate"] == b.config["request_rate"] == 1.0
    assert a.config["num_prompts"] == b.config["num_prompts"] == 200
    assert a.config["params"] == {}  # best_of is a known benchmark key, not a swept parameter
    assert a.summary["completed"] is None and a.summary["duration_s"] is None
    assert a.summary["mean_ttft_ms"] == pytest.approx(111.23647520318627)
    assert b.summary["mean_ttft_ms"] == pytest.approx(105.95179930329323)
    # run-to-run spread of mean TTFT: (111.236 - 105.952) / 105.952 = 4.99 %
    spread = (a.summary["mean_ttft_ms"] - b.summary["mean_ttft_ms"]) / b.summary["mean_ttft_ms"]
    assert spread == pytest.approx(0.049875, abs=5e-6)


def test_nightly_table_rows():
    runs = F.read(FIX / "tp8_pp1_benchmark_results_summary.json")
    assert [r.config["label"] for r in runs] == [
        "tp8_pp1_qps_01", "tp8_pp1_qps_04", "tp8_pp1_qps_16", "tp8_pp1_qps_inf"
    ]  # fmt: skip
    assert runs[0].config["num_prompts"] == 200
    # the qps_01 row repeats the qps_01 result file's figures
    assert runs[0].summary["request_throughput"] == pytest.approx(0.9745666315653629)
    assert runs[3].summary["mean_ttft_ms"] == pytest.approx(360.36056903502185)


def test_mismatched_per_request_arrays_are_rejected(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text('{"model_id": "m", "completed": 2, "ttfts": [0.1, 0.2], "itls": [[0.01]], "errors": ["", ""]}')
    with pytest.raises(InputError) as e:
        F.read(p)
    assert e.value.location == "$.itls" and "1 entries" in e.value.reason


def test_non_number_is_rejected_with_its_path(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text('{"model_id": "m", "completed": 1, "ttfts": [0.1, "x"], "errors": ["", ""]}')
    with pytest.raises(InputError) as e:
        F.read(p)
    assert e.value.location == "$.ttfts[1]"
