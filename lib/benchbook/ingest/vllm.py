"""vLLM serving-benchmark results.

* ``benchmark_serving.py --save-result`` JSON (older), ``vllm bench serve --save-result`` JSON
  (newer: ``failed``, ``max_concurrent_requests``, ``rtfx``, E2E latency), ``--append-result``
  (one JSON object per line), and ``vllm bench sweep`` outputs (a ``run=N.json`` per run with the
  swept server/bench parameters added, and ``summary.json``: a list of those runs);
* with or without the per-request arrays (``ttfts``, ``itls``, ``start_times``, ``input_lens``,
  ``output_lens``, ``errors``; 0.30+ adds ``latencies`` and ``queue_times``) that ``--save-detailed``
  (or the older default) writes — every layout that carries them feeds the per-request views;
* the nightly-benchmark results table (a list of rows with human column names).
"""

from __future__ import annotations

import math
from typing import Any

from benchbook.errors import InputError
from benchbook.ingest.formats import (
    MAX_SECONDS,
    SUMMARY_KEYS,
    BenchmarkRun,
    Loaded,
    check_record,
    is_series,
    make_config,
    make_summary,
    number,
    rate,
    requests_frame,
    same_length,
    seconds,
    start_span_problem,
    summary_from_requests,
    to_int,
    tokens,
)

# keys of the result itself; anything else scalar at top level is a swept parameter (bench sweep)
_RESULT_KEYS = {
    "date", "endpoint_type", "backend", "label", "model_id", "tokenizer_id", "best_of", "num_prompts",
    "request_rate", "burstiness", "max_concurrency", "duration", "completed", "failed",
    "total_input_tokens", "total_output_tokens", "request_throughput", "request_goodput",
    "request_goodput:", "output_throughput", "total_token_throughput", "max_output_tokens_per_s",
    "max_concurrent_requests", "rtfx", "input_lens", "output_lens", "ttfts", "itls", "errors",
    "generated_texts", "start_times", "run_number", "percentiles_ttft_ms", "percentiles_tpot_ms",
    "percentiles_itl_ms", "percentiles_e2el_ms", "use_beam_search", "ignore_eos", "metadata",
    "latencies", "queue_times", "ramp_up_strategy", "ramp_up_start_rps", "ramp_up_end_rps",
    "total_input_sequences", "input_sequence_throughput",
}  # fmt: skip
_LATENCY = tuple(k for k in SUMMARY_KEYS if k.endswith("_ms"))


def _variant(r: dict[str, Any]) -> str:
    if "duration" not in r and "completed" not in r:
        return "reduced (no duration/completed/throughput)"
    if "run_number" in r:
        return "vllm bench sweep"
    if any(k in r for k in ("endpoint_type", "max_concurrent_requests", "rtfx", "failed")):
        return "vllm bench serve"
    return "benchmark_serving.py"


#: per-request arrays a vLLM result may carry (``--save-detailed``, or the older default), in file order
PER_REQUEST_ARRAYS = ("input_lens", "output_lens", "ttfts", "itls", "start_times", "latencies", "queue_times",
                      "errors")  # fmt: skip


def _tool_version(r: dict[str, Any], variant: str) -> str:
    """The layout, named by the keys found: which per-request arrays the file carries, and the vLLM
    releases known to write it."""
    if variant == "benchmark_serving.py":
        return "vLLM benchmarks/benchmark_serving.py (before `vllm bench serve`)"
    if variant.startswith("reduced"):
        return "vLLM benchmark_serving.py, reduced CI layout"
    arrays = [k for k in PER_REQUEST_ARRAYS if isinstance(r.get(k), list) or is_series(r.get(k))]  # streamed: a Series
    if "latencies" in r or "queue_times" in r:
        era = "vLLM 0.30+; seen in 0.32"
    else:
        era = "before vLLM 0.30, no latencies/queue_times; seen in 0.25.1 and 0.26.0"
    if arrays:
        return f"{variant}: layout with per-request {', '.join(arrays)} ({era})"
    return f"{variant}: summary-only layout, no per-request arrays ({era})"


def read_bench_serve(ld: Loaded) -> list[BenchmarkRun]:
    runs = [_run(ld, where, check_record(ld, where, rec)) for where, rec in ld.records()]
    for (_, rec), run in zip(ld.records(), runs):
        run.tool_version = _tool_version(rec, run.config["variant"])
    return runs


def _run(ld: Loaded, where: str, r: dict[str, Any]) -> BenchmarkRun:
    f = ld.file
    notes: list[str] = []

    def num(key: str) -> Any:
        return number(r.get(key), f, f"{where}.{key}")

    params = {
        k: v
        for k, v in r.items()
        if k not in _RESULT_KEYS and not k.endswith("_ms") and not isinstance(v, list) and not is_series(v)
    }
    config = make_config(
        model=r.get("model_id"),
        backend=r.get("backend"),
        request_rate=rate(r.get("request_rate"), f, f"{where}.request_rate"),
        max_concurrency=to_int(r.get("max_concurrency"), f, f"{where}.max_concurrency"),
        num_prompts=to_int(r.get("num_prompts"), f, f"{where}.num_prompts"),
        date=r.get("date"),
        label=r.get("label"),
        variant=_variant(r),
        tokenizer=r.get("tokenizer_id"),
        endpoint_type=r.get("endpoint_type"),
        burstiness=num("burstiness"),
        run_number=to_int(r.get("run_number"), f, f"{where}.run_number"),
        ignore_eos=r.get("ignore_eos"),  # where the file states it (the audit's short-count check)
        params=params,
    )
    goodput_key = "request_goodput" if "request_goodput" in r else "request_goodput:"
    if goodput_key == "request_goodput:" and goodput_key in r:
        notes.append(
            'key "request_goodput:" (with a trailing colon, as some vLLM versions wrote it) read as request_goodput'
        )
    summary = make_summary(
        duration_s=num("duration"),
        completed=to_int(r.get("completed"), f, f"{where}.completed"),
        failed=to_int(r.get("failed"), f, f"{where}.failed"),
        total_input_tokens=to_int(r.get("total_input_tokens"), f, f"{where}.total_input_tokens"),
        total_output_tokens=to_int(r.get("total_output_tokens"), f, f"{where}.total_output_tokens"),
        request_throughput=num("request_throughput"),
        output_throughput=num("output_throughput"),
        total_token_throughput=num("total_token_throughput"),
        request_goodput=number(r.get(goodput_key), f, f"{where}.{goodput_key}"),
        max_output_tokens_per_s=num("max_output_tokens_per_s"),
        max_concurrent_requests=num("max_concurrent_requests"),
        **{k: num(k) for k in _LATENCY},
    )
    for k, v in r.items():  # extra percentiles (--metric-percentiles 50,90,99 → p90_ttft_ms ...)
        if k.endswith("_ms") and k not in summary and not isinstance(v, list):
            summary[k] = number(v, f, f"{where}.{k}")

    requests = per_request_arrays(ld, where, r, notes)
    if summary["failed"] is None:
        if requests is not None and requests["success"].null_count() == 0:
            summary["failed"] = int((~requests["success"]).sum())
            notes.append("failed counted from the per-request errors (the file has no 'failed' key)")
        elif summary["completed"] is not None and config["num_prompts"] is not None:
            summary["failed"] = config["num_prompts"] - summary["completed"]
            notes.append("failed = num_prompts - completed (the file has no 'failed' key)")
    if summary["completed"] == 0:
        zeroed = [k for k in _LATENCY if summary.get(k) == 0.0]
        for k in zeroed:
            summary[k] = None
        if zeroed:
            notes.append("no request completed: the file's 0.0 latency figures are placeholders, read as None")
    if requests is not None:
        derived = summary_from_requests(requests)
        filled = [k for k, v in derived.items() if summary.get(k) is None and v is not None]
        for k in filled:
            summary[k] = derived[k]
        if filled:
            notes.append(f"computed by benchbook from the per-request records: {', '.join(filled)}")
    if config["variant"].startswith("reduced"):
        notes.append("reduced result: no duration, completed or throughput figures in the file")
    return BenchmarkRun(f, "vllm-bench-serve", config, summary, requests, [], where, notes)


def per_request_arrays(ld: Loaded, where: str, r: dict[str, Any], notes: list[str], e2e_note: str | None = None):
    """The requests table from the parallel per-request arrays vLLM and SGLang write (or None)."""
    f = ld.file
    arrays = {k: r.get(k) for k in ("ttfts", "itls", "input_lens", "output_lens", "errors", "start_times", "latencies")}
    for k, v in arrays.items():
        if v is not None and not isinstance(v, list) and not (k == "itls" and is_series(v)):
            raise InputError(f, f"{where}.{k}", f"expected a list, found {type(v).__name__}")
    if arrays["ttfts"] is None:
        return None
    n = same_length(f, where, arrays)
    ttfts = [seconds(v, f, f"{where}.ttfts[{i}]") for i, v in enumerate(arrays["ttfts"])]
    itls: Any = []
    if is_series(arrays["itls"]):  # a streamed big file: already numbers, checked here as a column
        itls = _checked_itls(arrays["itls"], f, where)
        sums = _row_fsums(itls)
    else:
        for i, lst in enumerate(arrays["itls"] or [None] * n):
            if lst is None:
                itls.append(None)
                continue
            if not isinstance(lst, list):
                raise InputError(f, f"{where}.itls[{i}]", f"expected a list, found {type(lst).__name__}")
            itls.append([_itl(x, f, where, i, j) for j, x in enumerate(lst)])
        sums = [None if x is None else math.fsum(x) for x in itls]
    errors = arrays["errors"]
    if errors is not None:
        success = [not e for e in errors]
        err = [e or None for e in errors]
    else:
        completed = r.get("completed")
        success = [True] * n if completed == n else [None] * n
        err = [None] * n
        notes.append(
            "no per-request 'errors' array: success "
            + ("inferred from completed == num records" if completed == n else "unknown")
        )
    e2e: list[float | None] = []
    ttft_out: list[float | None] = []
    lat = arrays["latencies"]
    for i in range(n):
        t = ttfts[i]
        if success[i] is False:  # vLLM writes ttft 0.0 / empty itl for failed requests: not measurements
            ttft_out.append(None)
            e2e.append(None)
            continue
        ttft_out.append(None if t is None else float(t))
        if lat is not None:
            e2e.append(seconds(lat[i], f, f"{where}.latencies[{i}]"))
        else:
            e2e.append(None if t is None or sums[i] is None else float(t) + sums[i])
    if lat is not None:
        notes.append("e2e_s from the file's per-request 'latencies'")
    else:
        notes.append(e2e_note or "e2e_s = ttft + sum(itl) per request (how vLLM's client computes latency)")
    if arrays["start_times"] is not None:
        notes.append("start_s from 'start_times' (the client's monotonic clock: only differences are meaningful)")
    start = arrays["start_times"]
    if start is not None:
        start = [None if v is None else float(number(v, f, f"{where}.start_times[{i}]")) for i, v in enumerate(start)]
        span = start_span_problem(start, number(r.get("duration"), f, f"{where}.duration"))
        if span is not None:
            raise InputError(f, f"{where}.start_times[{span[0]}]", span[1])
    return requests_frame(
        {
            "index": list(range(n)),
            "start_s": start if start is not None else [None] * n,
            "ttft_s": ttft_out,
            "e2e_s": e2e,
            "itl": itls,
            "prompt_tokens": [
                tokens(v, f, f"{where}.input_lens[{i}]") for i, v in enumerate(arrays["input_lens"] or [None] * n)
            ],
            "completion_tokens": [
                tokens(v, f, f"{where}.output_lens[{i}]") for i, v in enumerate(arrays["output_lens"] or [None] * n)
            ],
            "success": success,
            "error": err,
        }
    )


def _checked_itls(s: Any, f: str, where: str) -> Any:
    """A List(Float64) Series of ITLs with every value in [0, MAX_SECONDS] (else the first bad one
    named, as :func:`_itl` names it)."""
    import polars as pl

    e = pl.element()
    bad_rows = s.list.eval(e.is_nan() | (e < 0) | (e > MAX_SECONDS)).list.any()
    if bad_rows.any():
        i = int(bad_rows.arg_max())
        row = s[i].to_list()
        j = next(j for j, x in enumerate(row) if not 0 <= x <= MAX_SECONDS)
        seconds(row[j], f, f"{where}.itls[{i}][{j}]")  # raises, naming it
    return s


def _row_fsums(s: Any, chunk: int = 10_000) -> list[float | None]:
    """``math.fsum`` of each row (the same rounding as the list path), a chunk of rows at a time."""
    out: list[float | None] = []
    for a in range(0, len(s), chunk):
        out += [None if x is None else math.fsum(x) for x in s.slice(a, chunk).to_list()]
    return out


def _itl(x: Any, f: str, where: str, i: int, j: int) -> float:
    if type(x) is float and 0.0 <= x <= MAX_SECONDS:  # the common case, without building the path
        return x
    v = seconds(x, f, f"{where}.itls[{i}][{j}]")
    if v is None:
        raise InputError(f, f"{where}.itls[{i}][{j}]", "expected a number, found None")
    return v


# nightly table: human column name → summary key (ms columns keep their unit)
_TABLE = {
    "Tput (req/s)": "request_throughput",
    "Output Tput (tok/s)": "output_throughput",
    "Total Tput (tok/s)": "total_token_throughput",
    "Mean TTFT (ms)": "mean_ttft_ms",
    "Median TTFT (ms)": "median_ttft_ms",
    "P99 TTFT (ms)": "p99_ttft_ms",
    "Mean TPOT (ms)": "mean_tpot_ms",
    "Median TPOT (ms)": "median_tpot_ms",
    "P99 TPOT (ms)": "p99_tpot_ms",
    "Mean ITL (ms)": "mean_itl_ms",
    "Median ITL (ms)": "median_itl_ms",
    "P99 ITL (ms)": "p99_itl_ms",
    "Mean E2EL (ms)": "mean_e2el_ms",
    "Median E2EL (ms)": "median_e2el_ms",
    "P99 E2EL (ms)": "p99_e2el_ms",
}


def read_nightly_table(ld: Loaded) -> list[BenchmarkRun]:
    f = ld.file
    runs = []
    for where, rec in ld.records():
        r = check_record(ld, where, rec)
        summary = make_summary(**{v: number(r.get(k), f, f"{where}.{k}") for k, v in _TABLE.items()})
        config = make_config(
            num_prompts=to_int(r.get("# of req."), f, f"{where}.# of req."),
            label=r.get("Test name"),
            gpu=r.get("GPU"),
            params={k: v for k, v in r.items() if k not in _TABLE and k not in ("Test name", "GPU", "# of req.")},
        )
        notes = [
            "nightly-benchmark table row: no model, rate, duration or completed count; "
            "'# of req.' is the number of prompts sent"
        ]
        runs.append(BenchmarkRun(f, "vllm-nightly-table", config, summary, None, [], where, notes))
    return runs
