"""The per-request section of the compare page, rendered offline and opened in headless Chromium,
for the realdata files that carry per-request records (AIPerf records, llmperf individual responses,
vLLM benchmark_serving arrays, GuideLLM samples)."""

import json
from pathlib import Path

from benchbook.commands.cli import main
from benchbook.pipeline.offline import scan
from realdata import realdata

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures" / "realdata"
REAL = realdata()
TABLES = ["bb-request-outcomes", "bb-request-saturation", "bb-request-percentiles", "bb-request-definitions"]


def _render(tmp_path, files, name="compare"):
    out = tmp_path / name
    assert main(["render", "--compare", *map(str, files), "--out", str(out)]) == 0
    html = out / "compare.html"
    assert scan([html]) == []
    return html, json.loads((out / "compare.values.json").read_text())


def test_realdata_per_request_views_in_chromium(tmp_path, open_page):
    files = [
        FIX / "aiperf_genai_perf" / "aiperf_run1_profile_export.jsonl",
        FIX / "llmperf" / "groq_70b_individual_responses.json",
        REAL / "vllm_bench_serving" / "serving_meta-llama-Llama-3.3-70B-Instruct_tp8_pp1_sharegpt_qps_inf.json",
        FIX / "guidellm" / "benchmarks_stripped.json",
    ]
    html, v = _render(tmp_path, files)
    views = {r["format"]: r for r in v["request_views"]}
    assert set(views) == {"aiperf-records", "llmperf-individual", "vllm-bench-serve", "guidellm-report"}
    ai = views["aiperf-records"]
    assert ai["shares"] == {"successful": 89, "incomplete": 0, "errored": 11}
    assert ai["saturation"]["status"] == "saturated"  # TTFT and in-flight climb together through the burst
    assert ai["distributions"]["ttft"]["n"] == 89 and ai["distributions"]["itl"]["sampled"]
    assert views["llmperf-individual"]["timeline_axis"] == "order"  # llmperf keeps no start times
    assert views["guidellm-report"]["tool_version"].startswith("GuideLLM 0.2-0.3")
    text = html.read_text()
    assert "first token excluded" in text and "first token&#x27;s latency is included" in text.replace("'", "&#x27;")
    report = open_page(html, table_ids=TABLES, screenshot="request-views.png")
    assert report.ok, report.problems()
    assert report.charts >= 2  # the ECDF and the time course
