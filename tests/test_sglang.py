"""SGLang bench_serving JSONL: detected, read, figures checked against values computed by hand."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from benchbook.errors import InputError
from benchbook.ingest import formats as F
from realdata import realdata

HERE = Path(__file__).parent
FIX = HERE / "fixtures" / "realdata" / "sglang_bench_serving"
SHARED = realdata("sglang_bench_serving")
PD = ["pd_1p1d_n100_in2048_out512_c128.jsonl", "pd_1p2d_n100_in2048_out512_c128.jsonl",
      "pd_1p4d_n100_in2048_out512_c128.jsonl", "pd_1p8d_n100_in2048_out512_c128.jsonl", "pd_local.jsonl"]  # fmt: skip


def shared(name: str) -> Path:
    p = SHARED / name
    if not p.exists():
        pytest.skip(f"real capture {name} not present at {SHARED} (CI has ../shared beside the clone)")
    return p


def test_every_sglang_file_is_detected_and_read():
    files = sorted(FIX.glob("*.jsonl")) + (sorted(SHARED.glob("*.jsonl")) if SHARED.exists() else [])
    for p in files:
        assert F.detect(p) == "sglang-bench-serving", p
        runs = F.read(p)
        assert len(runs) == 1 and runs[0].location == "line 1"


def test_aggregated_run():
    (r,) = F.read(FIX / "agg_n100_in512_out128_c32.jsonl")
    c, s = r.config, r.summary
    assert c["model"] == "Qwen/Qwen2.5-3B-Instruct"  # from server_info.model_path
    assert c["request_rate"] == math.inf  # written as a bare `Infinity`
    assert c["max_concurrency"] == 32 and c["label"] == "agg_n100_in512_out128_c32"
    assert c["disaggregated"] is False and c["server"]["version"] == "0.5.5.post3"
    assert c["server"]["chunked_prefill_size"] == 8192
    assert s["completed"] == 100 and s["failed"] is None  # SGLang does not count failures
    assert s["total_output_tokens"] == 6180 and s["total_output_tokens_retokenized"] == 6179
    # e2e keys renamed: mean_e2e_latency_ms → mean_e2el_ms; total_throughput → total_token_throughput
    assert s["mean_e2el_ms"] == pytest.approx(557.9127527959645)
    assert s["total_token_throughput"] == pytest.approx(16663.363794435983)
    assert s["p95_itl_ms"] == pytest.approx(22.42972366511822)
    # 6180 tokens / 1.9610086176544428 s = 3151.44 tok/s = output_throughput
    assert 6180 / s["duration_s"] == pytest.approx(s["output_throughput"])
    assert r.requests is None


@pytest.mark.parametrize("name", PD)
def test_pd_lines(name):
    (r,) = F.read(shared(name))
    c, s = r.config, r.summary
    assert c["disaggregated"] is True
    # server_info reports one prefill and one decode entry in every file (the router's view),
    # whatever the tag says: benchbook reports what the file holds
    assert (c["prefill_servers"], c["decode_servers"]) == (1, 1)
    assert c["server"]["disaggregation_mode"] == "decode"
    # Little's law holds in SGLang's own figures: concurrency = request_throughput × mean E2E
    assert s["mean_concurrency"] == pytest.approx(s["request_throughput"] * s["mean_e2el_ms"] / 1000)


def test_pd_1p1d_figures():
    (r,) = F.read(shared(PD[0]))
    s = r.summary
    assert s["completed"] == 100 and s["total_input_tokens"] == 108929 and s["total_output_tokens"] == 25883
    assert r.config["decode_versions"] == ["0.5.6"] and r.config["prefill_versions"] == ["0.5.5.post3"]
    # 2.5570206050828728 req/s × 36.903764044 s = 94.3637 = "concurrency"
    assert s["mean_concurrency"] == pytest.approx(94.36368506629083)
    # TTFT share of E2E: 34613.758637951 / 36903.764044261 = 0.93795
    assert s["mean_ttft_ms"] / s["mean_e2el_ms"] == pytest.approx(0.9379465627527209)


def test_pd_local_has_no_tag_and_200_requests():
    (r,) = F.read(shared("pd_local.jsonl"))
    assert r.config["label"] is None and r.config["dataset_name"] == "sharegpt"
    assert r.config["max_concurrency"] == 200 and r.summary["completed"] == 200
    assert r.config["decode_versions"] == ["0.5.5.post3"]


def test_output_details_arrays_and_older_key_names(tmp_path):
    # a hand-made line in an older key style with --output-details arrays (2 requests, 1 failed)
    p = tmp_path / "old.jsonl"
    p.write_text(
        '{"backend": "sglang", "request_rate": 4.0, "server_args": {"model_path": "m"}, "duration": 2.0,'
        ' "completed": 1, "mean_e2e_latency_ms": 300.0, "output_throughput": 5.0,'
        ' "ttfts": [0.1, 0.0], "itls": [[0.1, 0.1], []], "input_lens": [10, 10], "output_lens": [3, 0],'
        ' "errors": ["", "boom"], "generated_texts": ["abc", ""]}\n'
    )
    assert F.detect(p) == "sglang-bench-serving"
    (r,) = F.read(p)
    assert r.config["model"] == "m" and r.config["request_rate"] == 4.0
    assert r.summary["failed"] == 1 and r.summary["mean_e2el_ms"] == 300.0
    df = r.requests
    assert df["success"].to_list() == [True, False]
    assert df["e2e_s"][0] == pytest.approx(0.3)  # 0.1 + 0.1 + 0.1
    assert df["ttft_s"][1] is None and df["error"][1] == "boom"
    # mean TTFT filled from the one successful request: 100 ms
    assert r.summary["mean_ttft_ms"] == pytest.approx(100.0)


STEADY = Path(__file__).parent / "fixtures" / "tools" / "sglang-benchmark-serving-0.5.23" / "steady_state.jsonl"


def test_benchmark_serving_with_steady_state_line():
    """sglang.benchmark.serving's run line, then steady_state_serving's SteadyStateMetrics line: one run,
    the steady window as steady_* figures (fixture written from SGLang 0.5.23's source, not by the tool)."""
    (run,) = F.read(STEADY)
    assert run.format == "sglang-bench-serving"
    assert run.tool_version == "SGLang benchmark.serving (0.5.2x layout) (server 0.5.23) + steady_state_serving"
    s = run.summary
    assert (s["completed"], s["output_throughput"], s["p90_ttft_ms"]) == (1000, 2500.0, 520.0)
    assert (s["steady_duration_s"], s["steady_completed"], s["steady_output_throughput"]) == (80.0, 820, 2562.5)
    assert s["steady_concurrency_threshold"] == 51 and s["steady_concurrency_ratio"] == 0.8
    # 205000 tokens in the 80-s window = the 2562.5 tok/s the tool printed
    assert s["steady_total_output_tokens"] / s["steady_duration_s"] == s["steady_output_throughput"]
    assert any("steady-state window" in n for n in run.notes)


def test_steady_state_line_alone_is_refused(tmp_path):
    p = tmp_path / "s.jsonl"
    lines = STEADY.read_text().splitlines()
    p.write_text(lines[1] + "\n")
    with pytest.raises(InputError):
        F.read(p)
    q = tmp_path / "two.jsonl"
    q.write_text("\n".join([lines[0], lines[1], lines[1]]) + "\n")
    with pytest.raises(InputError, match="second steady-state line"):
        F.read(q)
