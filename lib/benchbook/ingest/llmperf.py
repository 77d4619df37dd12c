"""llmperf (``token_benchmark_ray.py``) outputs: ``<name>_summary.json`` and
``<name>_individual_responses.json``.

The summary names its figures ``results_<metric>_<stat>`` in seconds; some counts are written as
strings (``"results_number_output_tokens_min": "120"``) and are accepted. Reading a summary also reads
the individual responses written beside it (same ``<name>``), when present. llmperf counts a request
that returned fewer tokens than asked as an error (code -100), so "failed" includes short answers.
"""

from __future__ import annotations

from typing import Any

from benchbook.errors import InputError
from benchbook.ingest.formats import (
    BenchmarkRun,
    Loaded,
    check_record,
    load,
    make_config,
    make_summary,
    number,
    requests_frame,
    summary_from_requests,
    to_int,
)

_LAT = {"ttft": "ttft_s", "itl": "inter_token_latency_s", "e2el": "end_to_end_latency_s"}
_STATS = (("mean", "mean"), ("median", "quantiles_p50"), ("std", "stddev"), ("p99", "quantiles_p99"),
          ("p90", "quantiles_p90"), ("p95", "quantiles_p95"))  # fmt: skip

LLMPERF = "llmperf token_benchmark_ray (the file does not state a version)"


def read_summary(ld: Loaded) -> list[BenchmarkRun]:
    f, d = ld.file, ld.doc

    def res(key: str) -> Any:
        return number(d.get(f"results_{key}"), f, f"$.results_{key}", allow_str=True)

    completed = to_int(d.get("results_num_completed_requests"), f, "$.results_num_completed_requests")
    summary = make_summary(
        completed=completed,
        failed=to_int(d.get("results_number_errors"), f, "$.results_number_errors"),
        started=to_int(d.get("results_num_requests_started"), f, "$.results_num_requests_started"),
        error_rate=res("error_rate"),
        error_code_frequency=d.get("results_error_code_frequency"),
        output_throughput=res("mean_output_throughput_token_per_s"),
        completed_per_min=res("num_completed_requests_per_min"),
        mean_output_tokens=res("number_output_tokens_mean"),
    )
    if summary["completed_per_min"] is not None:
        summary["request_throughput"] = summary["completed_per_min"] / 60
    for name, metric in _LAT.items():
        for ours, theirs in _STATS:
            v = res(f"{metric}_{theirs}")
            summary[f"{ours}_{name}_ms"] = None if v is None else v * 1000
    config = make_config(
        model=d.get("model"),
        backend=d.get("framework"),
        max_concurrency=to_int(d.get("num_concurrent_requests"), f, "$.num_concurrent_requests"),
        num_prompts=summary["started"],
        date=d.get("timestamp"),
        label=d.get("name"),
        mean_input_tokens=d.get("mean_input_tokens"),
        mean_output_tokens=d.get("mean_output_tokens"),
    )
    notes = [
        "llmperf ITL is each request's mean inter-token latency, averaged over requests",
        "request_throughput = results_num_completed_requests_per_min / 60; llmperf records no duration",
    ]
    requests = None
    stem = ld.path.stem
    if stem.endswith("_summary"):
        sib = ld.path.with_name(stem[: -len("_summary")] + "_individual_responses.json")
        if sib.exists():
            (ind,) = read_individual(load(sib))
            requests = ind.requests
            notes.append(f"requests read from {sib.name} beside this file")
    return [BenchmarkRun(f, "llmperf-summary", config, summary, requests, [], "$", notes, LLMPERF)]


def read_individual(ld: Loaded) -> list[BenchmarkRun]:
    f = ld.file
    rows: dict[str, list[Any]] = {k: [] for k in ("index", "ttft_s", "e2e_s", "itl_mean_s", "prompt_tokens",
                                                  "completion_tokens", "success", "error")}  # fmt: skip
    for i, (where, rec) in enumerate(ld.records()):
        r = check_record(ld, where, rec)
        code = r.get("error_code")
        if code is not None and not isinstance(code, (int, float)):
            raise InputError(f, f"{where}.error_code", f"expected a number or null, found {code!r}")
        ok = code is None
        rows["index"].append(i)
        rows["ttft_s"].append(number(r.get("ttft_s"), f, f"{where}.ttft_s"))
        rows["e2e_s"].append(number(r.get("end_to_end_latency_s"), f, f"{where}.end_to_end_latency_s"))
        rows["itl_mean_s"].append(number(r.get("inter_token_latency_s"), f, f"{where}.inter_token_latency_s"))
        rows["prompt_tokens"].append(to_int(r.get("number_input_tokens"), f, f"{where}.number_input_tokens"))
        rows["completion_tokens"].append(to_int(r.get("number_output_tokens"), f, f"{where}.number_output_tokens"))
        rows["success"].append(ok)
        rows["error"].append(None if ok else f"{int(code)}: {r.get('error_msg') or ''}".rstrip(": "))
    df = requests_frame(rows)
    summary = make_summary(**summary_from_requests(df))
    ok = df.filter(df["success"])
    if ok.height:
        m = ok["itl_mean_s"].drop_nulls()
        summary["mean_itl_ms"] = None if m.is_empty() else float(m.mean()) * 1000
    notes = ["summary computed by benchbook from the per-request records (llmperf records no duration)",
             "mean_itl_ms = mean over successful requests of llmperf's per-request mean ITL"]  # fmt: skip
    return [BenchmarkRun(f, "llmperf-individual", make_config(), summary, df, [], "$", notes, LLMPERF)]
