"""Files written by today's tools against the real vLLM engine (tests/fixtures/tools, made by
`make fixtures`; PROVENANCE.md there): `vllm bench serve` 0.30+, GuideLLM 0.8+, AIPerf 0.13+.

Each file is read, its tool version detected, and its summary checked against the tool's own
per-request records in the same file (mean and p99 TTFT, completed, throughput); `validate` accepts
it and says which version it found; the compare page renders its per-request views (Chromium)."""

import json
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from benchbook.commands.cli import main
from benchbook.errors import InputError
from benchbook.ingest import formats
from benchbook.pipeline.offline import scan

TOOLS = Path(__file__).resolve().parent / "fixtures" / "tools"


def _one(pattern: str) -> Path:
    found = sorted(TOOLS.glob(pattern))
    assert len(found) == 1, f"expected one {pattern} under {TOOLS}, found {found}"
    return found[0]


def _version_of(folder: Path) -> tuple[int, ...]:
    return tuple(int(x) for x in folder.name.split("-", 1)[1].split(".")[:2])


VLLM = _one("vllm-*/bench_serve.json")
GUIDELLM = _one("guidellm-*/benchmarks.json")
AIPERF_JSON = _one("aiperf-*/profile_export_aiperf.json")
AIPERF_CSV = _one("aiperf-*/profile_export_aiperf.csv")
AIPERF_RECORDS = _one("aiperf-*/profile_export.jsonl")


def test_fixtures_come_from_the_versions_the_issue_names():
    assert _version_of(VLLM.parent) >= (0, 30)
    assert _version_of(GUIDELLM.parent) >= (0, 8)
    assert _version_of(AIPERF_JSON.parent) >= (0, 13)
    prov = (TOOLS / "PROVENANCE.md").read_text()
    for f in (VLLM, GUIDELLM, AIPERF_JSON):
        assert f.parent.name.split("-", 1)[1] in prov
        assert (f.parent / "metrics_before.prom").is_file() and (f.parent / "metrics_after.prom").is_file()


def _ok(run) -> pl.DataFrame:
    return run.requests.filter(pl.col("success"))


def test_vllm_bench_serve_summary_matches_its_own_records():
    (r,) = formats.read(VLLM)
    assert r.format == "vllm-bench-serve" and "0.30+" in r.tool_version
    s, ok = r.summary, _ok(r)
    assert s["completed"] == ok.height == r.config["num_prompts"] and s["failed"] == 0
    ttft = ok["ttft_s"].to_numpy() * 1000
    assert s["mean_ttft_ms"] == pytest.approx(ttft.mean(), rel=1e-9)
    assert s["p99_ttft_ms"] == pytest.approx(np.percentile(ttft, 99), rel=1e-9)
    assert s["request_throughput"] == pytest.approx(s["completed"] / s["duration_s"], rel=1e-9)
    assert s["output_throughput"] == pytest.approx(s["total_output_tokens"] / s["duration_s"], rel=1e-9)
    # E2E from the file's per-request latencies: vLLM's own mean E2E
    assert s["mean_e2el_ms"] == pytest.approx(float(ok["e2e_s"].mean()) * 1000, rel=1e-9)
    assert ok["start_s"].null_count() == 0


def test_guidellm_report_summary_matches_its_own_samples():
    runs = formats.read(GUIDELLM)
    assert len(runs) == 1
    (r,) = runs
    assert r.format == "guidellm-report" and r.tool_version.startswith("GuideLLM 0.8")
    s, ok = r.summary, _ok(r)
    assert s["completed"] == ok.height  # every request kept as a sample (30 < the sample size)
    assert s["failed"] == 0 and s["incomplete"] == 0
    ttft = ok["ttft_s"].to_numpy() * 1000
    assert s["mean_ttft_ms"] == pytest.approx(ttft.mean(), rel=1e-6)
    # GuideLLM's own percentile method; p99 of 30 values lies between the 2nd largest and the largest
    top = np.sort(ttft)[-2:]
    assert top[0] - 1e-6 <= s["p99_ttft_ms"] <= top[1] + 1e-6
    assert r.config["max_concurrency"] == 4 and r.config["model"] == "tiny-llama"
    assert s["request_throughput"] > 0 and s["output_throughput"] > 0
    # GuideLLM's TPOT includes the first token, so it exceeds vLLM-style TPOT from the same samples
    e2e, toks = ok["e2e_s"].to_numpy(), ok["completion_tokens"].to_numpy()
    vllm_tpot = ((e2e - ok["ttft_s"].to_numpy()) / (toks - 1)).mean() * 1000
    assert s["mean_tpot_ms"] > vllm_tpot


def test_aiperf_013_aggregate_csv_and_records_agree():
    (j,) = formats.read(AIPERF_JSON)
    (c,) = formats.read(AIPERF_CSV)
    (rec,) = formats.read(AIPERF_RECORDS)
    assert j.format == "aiperf-aggregate" and j.tool_version.startswith("AIPerf 0.13")
    assert rec.format == "aiperf-records" and "0.13+" in rec.tool_version
    assert j.requests is not None and j.requests.height == rec.requests.height  # sibling records read
    ok = _ok(rec)
    s = j.summary
    assert s["completed"] == ok.height == rec.summary["completed"]
    ttft = ok["ttft_s"].to_numpy() * 1000
    assert s["mean_ttft_ms"] == pytest.approx(ttft.mean(), rel=1e-6)
    assert s["p99_ttft_ms"] == pytest.approx(np.percentile(ttft, 99), rel=1e-6)
    assert s["duration_s"] == pytest.approx(rec.summary["duration_s"], rel=1e-9)  # last end − first start
    assert s["completed"] / s["duration_s"] == pytest.approx(rec.summary["request_throughput"], rel=1e-9)
    # AIPerf's own request_throughput divides by its observation window, a little longer than the above
    assert s["request_throughput"] == pytest.approx(rec.summary["request_throughput"], rel=2e-3)
    assert s["request_throughput"] <= rec.summary["request_throughput"]
    for k in ("mean_ttft_ms", "p99_ttft_ms", "request_throughput", "completed"):
        assert c.summary[k] == pytest.approx(s[k], abs=0.006), k  # the CSV rounds to 2 decimals
    assert j.config["model"] == "tiny-llama" and j.config["max_concurrency"] == 4


def test_validate_says_which_version_it_found(capsys):
    for f in (VLLM, GUIDELLM, AIPERF_JSON, AIPERF_RECORDS):
        assert main(["validate", str(f)]) == 0
    out = capsys.readouterr().out
    assert "GuideLLM 0.8" in out and "AIPerf 0.13" in out and "0.30+" in out


def test_an_unknown_guidellm_schema_version_is_named(tmp_path):
    doc = json.loads(GUIDELLM.read_text())
    doc["metadata"]["version"] = 9
    p = tmp_path / "future.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(InputError) as e:
        formats.read(p)
    assert e.value.location == "$.metadata.version"
    assert "schema version 9" in e.value.reason and "known schema versions: 1, 2" in e.value.reason


def test_an_unknown_guidellm_layout_lists_what_it_found(tmp_path):
    doc = json.loads(GUIDELLM.read_text())
    del doc["benchmarks"][0]["config"]
    p = tmp_path / "odd.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(InputError) as e:
        formats.read(p)
    assert e.value.location == "$.benchmarks[0]"
    assert "unknown GuideLLM report layout: found keys" in e.value.reason and "0.4+ layout" in e.value.reason


def test_an_unknown_aiperf_record_layout_lists_what_it_found(tmp_path):
    lines = AIPERF_RECORDS.read_text().splitlines()
    rec = json.loads(lines[0])
    rec["metadata"] = {"phase": "profiling"}
    p = tmp_path / "odd.jsonl"
    p.write_text(json.dumps(rec) + "\n")
    with pytest.raises(InputError) as e:
        formats.read(p)
    assert e.value.location == "line 1.metadata" and "benchmark_phase" in e.value.reason


def test_compare_page_shows_per_request_views_for_every_tool(tmp_path, open_page):
    out = tmp_path / "cmp"
    assert main(["render", "--compare", str(VLLM), str(GUIDELLM), str(AIPERF_JSON), "--out", str(out)]) == 0
    html = out / "compare.html"
    assert scan([html]) == []
    v = json.loads((out / "compare.values.json").read_text())
    views = {r["format"]: r for r in v["request_views"]}
    assert set(views) == {"vllm-bench-serve", "guidellm-report", "aiperf-aggregate"}
    for r in views.values():
        assert r["shares"]["successful"] == 30 and r["timeline_axis"] == "start"
        assert r["distributions"]["ttft"]["n"] == 30 and not math.isnan(r["distributions"]["ttft"]["p99_ms"])
        assert r["saturation"]["status"] in ("saturated", "not saturated")
    report = open_page(
        html,
        table_ids=["bb-request-outcomes", "bb-request-saturation", "bb-request-percentiles", "bb-request-definitions"],
        screenshot="request-views-tools.png",
    )
    assert report.ok, report.problems()
    assert report.charts >= 2
