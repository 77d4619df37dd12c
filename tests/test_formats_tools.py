"""GuideLLM, AIPerf / GenAI-Perf and llmperf files: detected, read, figures checked by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchbook.errors import InputError
from benchbook.ingest import formats as F
from realdata import realdata

HERE = Path(__file__).parent
FIX = HERE / "fixtures" / "realdata"
SHARED = realdata()


def shared(rel: str) -> Path:
    p = SHARED / rel
    if not p.exists():
        pytest.skip(f"real capture {rel} not present at {SHARED} (CI has ../shared beside the clone)")
    return p


EXPECTED = {
    "guidellm": {"benchmarks_stripped.json": "guidellm-report", "benchmarks_stripped.yaml": "guidellm-report"},
    "aiperf_genai_perf": {
        "aiperf_run1_profile_export.jsonl": "aiperf-records",
        "aiperf_run1_profile_export_aiperf.json": "aiperf-aggregate",
        "aiperf_run1_profile_export_aiperf.csv": "aiperf-csv",
        "genai_perf_analyze_export_genai_perf.csv": "genai-perf-analyze",
    },
    "llmperf": {
        f"{n}_70b_{kind}.json": f"llmperf-{'summary' if kind == 'summary' else 'individual'}"
        for n in ("bedrock", "groq", "perplexity")
        for kind in ("summary", "individual_responses")
    },
}


@pytest.mark.parametrize("folder", sorted(EXPECTED))
def test_every_file_is_detected_and_read(folder):
    base = SHARED / folder if (SHARED / folder).exists() else FIX / folder
    files = sorted(p for p in base.iterdir() if p.is_file())
    assert files
    for p in files:
        assert F.detect(p) == EXPECTED[folder][p.name], p
        runs = F.read(p)
        assert runs and len(F.describe(runs)) == len(runs)


@pytest.mark.parametrize("name", ["benchmarks_stripped.json", "benchmarks_stripped.yaml"])
def test_guidellm_report(name):
    (r,) = F.read(FIX / "guidellm" / name)
    c, s = r.config, r.summary
    assert c["model"] == "example_model" and c["strategy"] == "synchronous" and c["max_concurrency"] == 1
    assert (s["completed"], s["failed"], s["incomplete"]) == (46, 0, 1)
    assert s["duration_s"] == pytest.approx(29.997201442718506)
    # TTFT total_sum 772.4566459655762 ms over 46 successful = 16.7925 ms (the file's mean)
    assert s["mean_ttft_ms"] == pytest.approx(772.4566459655762 / 46)
    assert s["p99_ttft_ms"] == pytest.approx(21.281957626342773)
    # request_latency is in seconds in GuideLLM: mean 0.6444743664368339 s → 644.474 ms
    assert s["mean_e2el_ms"] == pytest.approx(644.4743664368339)
    assert s["total_output_tokens"] == 5888  # output_token_count.successful.total_sum = 46 × 128
    # only one request sample is kept in the file; the note says so
    assert r.requests.height == 1 and r.requests["completion_tokens"][0] == 128
    assert any("samples only" in n for n in r.notes)


def test_aiperf_records_89_ok_11_errors():
    (r,) = F.read(shared("aiperf_genai_perf/aiperf_run1_profile_export.jsonl"))
    s, df = r.summary, r.requests
    assert df.height == 100 and (s["completed"], s["failed"]) == (89, 11)
    assert set(df.filter(~df["success"])["error"].to_list()) == {
        "499 RequestCancellationError: Request was cancelled after 0.000 seconds"
    }
    # Σ output_sequence_length over the 89 = 21624; mean ttft 2343.2194369887648 ms
    assert s["total_output_tokens"] == 21624
    assert s["mean_ttft_ms"] == pytest.approx(2343.2194369887648)
    # max(max_response_timestamp) − min(min_request_timestamp) = 9317788951 ns
    assert s["duration_s"] == pytest.approx(9.317788951)
    assert r.exclusions == []  # every record is in the profiling phase


def test_aiperf_aggregate_json_and_csv_agree():
    (j,) = F.read(FIX / "aiperf_genai_perf" / "aiperf_run1_profile_export_aiperf.json")
    (c,) = F.read(FIX / "aiperf_genai_perf" / "aiperf_run1_profile_export_aiperf.csv")
    for s in (j.summary, c.summary):
        assert (s["completed"], s["failed"]) == (89, 11)
        assert s["total_output_tokens"] == 21624  # total_osl = 1832 answer + 19792 reasoning
        assert s["total_output_tokens_answer_only"] + s["total_reasoning_tokens"] == 21624
    assert j.config["model"] == "openai/gpt-oss-20b" and j.config["max_concurrency"] == 100
    assert j.summary["mean_ttft_ms"] == pytest.approx(2343.219436988764)
    assert c.summary["mean_ttft_ms"] == 2343.22  # the CSV's 2-decimal rounding
    # AIPerf's inter_token_latency is TPOT; inter_chunk_latency is ITL
    assert j.summary["mean_tpot_ms"] == pytest.approx(27.763065454471807)
    assert j.summary["mean_itl_ms"] == pytest.approx(27.755153106189347)
    # 89 requests / 9.317788951 s = 9.5516 req/s
    assert j.summary["request_throughput"] == pytest.approx(89 / 9.317788951)


def test_aiperf_aggregate_reads_the_records_beside_it():
    (r,) = F.read(shared("aiperf_genai_perf/aiperf_run1_profile_export_aiperf.json"))
    assert r.requests is not None and r.requests.height == 100
    # the per-request records reproduce AIPerf's own aggregate
    derived = F.summary_from_requests(r.requests)
    assert derived["p99_ttft_ms"] == pytest.approx(r.summary["p99_ttft_ms"])
    assert derived["std_e2el_ms"] == pytest.approx(r.summary["std_e2el_ms"])


def test_genai_perf_analyze_runs_and_gpu_table():
    runs = F.read(FIX / "aiperf_genai_perf" / "genai_perf_analyze_export_genai_perf.csv")
    assert [r.config["label"] for r in runs] == [f"gpt2_run_config_{i}" for i in (3, 0, 4, 1, 2)]
    assert [r.config["num_prompts"] for r in runs] == [175, 100, 200, 125, 150]
    assert runs[0].summary["p99_ttft_ms"] == 184.43 and runs[0].summary["request_throughput"] == 10.12
    assert runs[1].summary["gpu"]["gpu0"]["p99 GPU Power Usage (W)"] == 83.15


@pytest.mark.parametrize(
    "name,completed,failed",
    [("bedrock", 101, 49), ("groq", 150, 0), ("perplexity", 148, 2)],
)
def test_llmperf_error_counts(name, completed, failed):
    (s,) = F.read(FIX / "llmperf" / f"{name}_70b_summary.json")
    assert (s.summary["completed"], s.summary["failed"]) == (completed, failed)
    assert s.summary["started"] == 150 and s.config["max_concurrency"] == 5
    (i,) = F.read(shared(f"llmperf/{name}_70b_individual_responses.json"))
    # counted from error_code per response: bedrock 49 × -100 (too few tokens), perplexity 2 × 429
    assert (i.summary["completed"], i.summary["failed"]) == (completed, failed)
    assert i.summary["mean_ttft_ms"] == pytest.approx(s.summary["mean_ttft_ms"])


def test_llmperf_perplexity_values():
    (r,) = F.read(shared("llmperf/perplexity_70b_individual_responses.json"))
    errs = r.requests.filter(~r.requests["success"])["error"].to_list()
    assert len(errs) == 2 and all(e.startswith("429: ") for e in errs)
    # mean ttft_s over the 148 successes = 0.4190719783040514 s
    assert r.summary["mean_ttft_ms"] == pytest.approx(419.0719783040514)


def test_unknown_format_says_what_was_seen(tmp_path):
    p = tmp_path / "x.json"
    p.write_text('{"hello": 1, "world": 2}')
    with pytest.raises(InputError) as e:
        F.detect(p)
    assert "unknown benchmark format" in e.value.reason and "hello, world" in e.value.reason


def test_not_json_at_all(tmp_path):
    p = tmp_path / "x.json"
    p.write_text("this is not json\nnor this\n")
    with pytest.raises(InputError) as e:
        F.read(p)
    assert "not JSON" in e.value.reason


def test_bad_jsonl_line_is_named(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_text('{"metadata": {}, "metrics": {}}\n{oops\n')
    with pytest.raises(InputError) as e:
        F.read(p)
    assert e.value.location == "line 2"
