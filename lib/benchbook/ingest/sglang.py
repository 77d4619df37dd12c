"""SGLang ``bench_serving --output-file`` JSONL: one JSON object per line, one line per run.

Key names moved between SGLang versions; each figure is looked up under every name it has had.
``request_rate`` is written as a bare ``Infinity`` (Python's json), which strict JSON parsers
reject; the loader accepts it. ``server_info`` is the server's own ``/get_server_info`` answer; for
prefill/decode-disaggregated setups it holds ``prefill`` and ``decode`` lists (one entry per server
the router reported) and the run is marked ``disaggregated``.
"""

from __future__ import annotations

import math
from typing import Any

from benchbook.errors import InputError
from benchbook.ingest.formats import (
    SUMMARY_KEYS,
    BenchmarkRun,
    Loaded,
    check_record,
    make_config,
    make_summary,
    number,
    rate,
    summary_from_requests,
    to_int,
)
from benchbook.ingest.vllm import per_request_arrays

# summary key → names it has been written under, newest first
_ALIASES: dict[str, tuple[str, ...]] = {
    "duration_s": ("duration",),
    "completed": ("completed",),
    "failed": ("failed",),
    "total_input_tokens": ("total_input_tokens", "total_input"),
    "total_output_tokens": ("total_output_tokens", "total_output"),
    "request_throughput": ("request_throughput",),
    "output_throughput": ("output_throughput", "output_token_throughput"),
    "total_token_throughput": ("total_throughput", "total_token_throughput"),
    "mean_concurrency": ("concurrency",),
}
for _stat in ("mean", "median", "std", "p99"):
    _ALIASES[f"{_stat}_e2el_ms"] = (f"{_stat}_e2e_latency_ms", f"{_stat}_e2el_ms")
    for _m in ("ttft", "tpot", "itl"):
        _ALIASES[f"{_stat}_{_m}_ms"] = (f"{_stat}_{_m}_ms",)
_SEEN = {name for names in _ALIASES.values() for name in names}
_ARRAYS = {"input_lens", "output_lens", "ttfts", "itls", "generated_texts", "errors"}
_CONFIG = ("dataset_name", "random_input_len", "random_output_len", "random_range_ratio", "sharegpt_output_len")
_SERVER = ("chunked_prefill_size", "page_size", "tp_size", "dp_size", "max_running_requests",
           "max_prefill_tokens", "schedule_policy", "disaggregation_mode", "version")  # fmt: skip


# sglang.benchmark.steady_state_serving appends one line of SteadyStateMetrics after the run's line
STEADY_KEYS = {"concurrency_ratio", "window_start", "window_end", "concurrency_threshold", "peak_concurrency"}
# keys only the sglang.benchmark.serving layout writes (SGLang 0.5.2x; bench_serving is now its alias)
_NEW_LAYOUT = ("total_input_text_tokens", "total_input_vision_tokens", "p90_ttft_ms", "max_concurrent_requests")


def is_steady_state(rec: Any) -> bool:
    return isinstance(rec, dict) and STEADY_KEYS <= rec.keys()


def read_bench_serving(ld: Loaded) -> list[BenchmarkRun]:
    runs: list[BenchmarkRun] = []
    for where, rec in ld.records():
        rec = check_record(ld, where, rec)
        if is_steady_state(rec):
            if not runs:
                raise InputError(ld.file, where, "a steady-state line with no serving-run line before it")
            _steady(ld, where, rec, runs[-1])
        else:
            runs.append(_run(ld, where, rec))
    return runs


def _steady(ld: Loaded, where: str, r: dict[str, Any], run: BenchmarkRun) -> None:
    """The steady-state window of ``steady_state_serving`` (the longest interval with at least
    ratio x peak requests in flight) as ``steady_*`` figures of the run it follows."""
    if "steady_duration_s" in run.summary:
        raise InputError(ld.file, where, f"a second steady-state line for the run at {run.location}")
    f = ld.file
    names = {"concurrency_ratio": "steady_concurrency_ratio", "duration": "steady_duration_s",
             "completed": "steady_completed", "concurrency_threshold": "steady_concurrency_threshold",
             "input_throughput": "steady_input_throughput", "output_throughput": "steady_output_throughput",
             "output_throughput_retokenized": "steady_output_throughput_retokenized",
             "average_concurrency": "steady_mean_concurrency", "peak_concurrency": "steady_peak_concurrency",
             "peak_output_throughput": "steady_peak_output_throughput", "total_input": "steady_total_input_tokens",
             "total_output": "steady_total_output_tokens", "window_start": "steady_window_start",
             "window_end": "steady_window_end"}  # fmt: skip
    for k, out in names.items():
        v = run.summary[out] = number(r.get(k), f, f"{where}.{k}")
        if v is not None and not (math.isfinite(v) and v >= 0):
            raise InputError(f, f"{where}.{k}", f"{v} is impossible for a steady-state figure (negative or not finite)")
    _check_steady(f, where, run)
    ratio = run.summary["steady_concurrency_ratio"]
    run.notes.append(
        f"steady-state window ({where}): the longest interval with at least {ratio:g} x peak concurrency in flight, "
        f"{run.summary['steady_duration_s']:.3g} s, {run.summary['steady_completed']} requests; figures steady_*"
    )
    run.tool_version = (run.tool_version or "SGLang") + " + steady_state_serving"


def _check_steady(f: str, where: str, run: BenchmarkRun) -> None:
    """A steady-state window is a part of the run it follows: a positive duration no longer than the
    run's, an end after its start, no more requests completed than the run completed."""
    s = run.summary
    d, a, b = s.get("steady_duration_s"), s.get("steady_window_start"), s.get("steady_window_end")
    if d is not None and not d > 0:
        raise InputError(f, f"{where}.duration", f"duration {d!r} s: a steady-state window lasts more than 0 s")
    if a is not None and b is not None and not b > a:
        raise InputError(f, f"{where}.window_end", f"window_end {b!r} is not after window_start {a!r}")
    run_d = s.get("duration_s")
    if d is not None and run_d is not None and d > run_d * (1 + 1e-6) + 1e-3:
        raise InputError(
            f, f"{where}.duration", f"a {d:g} s steady-state window inside a {run_d:g} s run ({run.location})"
        )
    done, run_done = s.get("steady_completed"), s.get("completed")
    if done is not None and run_done is not None and done > run_done:
        raise InputError(
            f,
            f"{where}.completed",
            f"{done} requests completed in the window, {run_done} in the whole run ({run.location})",
        )


def _first_server(info: Any) -> dict[str, Any]:
    """The first server's own settings, whatever nesting this SGLang version used."""
    if not isinstance(info, dict):
        return {}
    for key in ("internal_states", "decode", "prefill"):
        v = info.get(key)
        if isinstance(v, list) and v and isinstance(v[0], dict) and "model_path" in v[0]:
            return v[0]
    return info


def _run(ld: Loaded, where: str, r: dict[str, Any]) -> BenchmarkRun:
    f = ld.file
    notes: list[str] = []
    info = r.get("server_info", r.get("server_args"))
    if info is not None and not isinstance(info, dict):
        raise InputError(f, f"{where}.server_info", f"expected an object, found {type(info).__name__}")
    server = _first_server(info)
    pd = isinstance(info, dict) and isinstance(info.get("prefill"), list) and isinstance(info.get("decode"), list)
    config = make_config(
        model=server.get("model_path") or r.get("model") or r.get("model_id"),
        backend=r.get("backend"),
        request_rate=rate(r.get("request_rate"), f, f"{where}.request_rate"),
        max_concurrency=to_int(r.get("max_concurrency"), f, f"{where}.max_concurrency"),
        num_prompts=to_int(r.get("num_prompts"), f, f"{where}.num_prompts"),
        date=r.get("date"),
        label=r.get("tag"),
        **{k: r.get(k) for k in _CONFIG},
        server={k: server[k] if k in server else info[k] for k in _SERVER if k in server or k in (info or {})},
        disaggregated=pd,
        prefill_servers=len(info["prefill"]) if pd else None,
        decode_servers=len(info["decode"]) if pd else None,
        prefill_versions=[s.get("version") for s in info["prefill"] if isinstance(s, dict)] if pd else None,
        decode_versions=[s.get("version") for s in info["decode"] if isinstance(s, dict)] if pd else None,
        server_info=info,
    )
    values: dict[str, Any] = {}
    for key, names in _ALIASES.items():
        for name in names:
            if name in r:
                conv = to_int if key in ("completed", "failed", "total_input_tokens", "total_output_tokens") else number
                values[key] = conv(r[name], f, f"{where}.{name}")
                break
    summary = make_summary(**values)
    for k, v in r.items():  # extra figures: p95_itl_ms, input_throughput, accept_length, retokenized count ...
        if k in _SEEN or k in _ARRAYS or k in _CONFIG or k in summary or k in config:
            continue
        if k in ("server_info", "server_args", "tag", "model", "model_id", "request_rate"):
            continue
        if v is None or isinstance(v, (int, float)) and not isinstance(v, bool):
            summary[k.replace("e2e_latency", "e2el")] = v
    requests = per_request_arrays(
        ld, where, r, notes,
        e2e_note="e2e_s = ttft + sum(itl) per request: SGLang stops its own latency clock a moment "
        "after the last chunk, so its E2E figures can be slightly larger",
    )  # fmt: skip
    if summary["failed"] is None:
        if requests is not None and requests["success"].null_count() == 0:
            summary["failed"] = int((~requests["success"]).sum())
            notes.append("failed counted from the per-request errors")
        else:
            notes.append("SGLang's summary does not count failed requests: failed unknown")
    if requests is not None:
        derived = summary_from_requests(requests)
        filled = [k for k in SUMMARY_KEYS if summary.get(k) is None and derived.get(k) is not None]
        for k in filled:
            summary[k] = derived[k]
        if filled:
            notes.append(f"computed by benchbook from the per-request records: {', '.join(filled)}")
    server_version = (config.get("server") or {}).get("version")
    tool = "SGLang benchmark.serving (0.5.2x layout)" if any(k in r for k in _NEW_LAYOUT) else "SGLang bench_serving"
    version = tool + (f" (server {server_version})" if server_version else " (version not in file)")
    return BenchmarkRun(f, "sglang-bench-serving", config, summary, requests, [], where, notes, version)
