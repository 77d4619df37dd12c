"""inference-perf (kubernetes-sigs/inference-perf) request-lifecycle reports.

inference-perf writes, into its report folder, ``summary_lifecycle_metrics.json`` (the whole run),
``stage_<i>_lifecycle_metrics.json`` (one per load stage) and, with ``per_request: true``,
``per_request_lifecycle_metrics.json``; ``config.yaml`` is the config it ran and
``inference-perf.partial.stage_<i>.yaml`` its slice of an llm-d Benchmark Report
(:mod:`benchbook.ingest.llmd_report` reads those).

- **summary / per-stage** (:func:`read_lifecycle`): ``benchmark_time_seconds``, ``load_summary``
  (``count``; a stage adds ``requested_rate``, ``achieved_rate``, ``send_duration`` and, for
  concurrent load, ``concurrency``), ``successes`` (``count``, ``latency`` with
  ``request_latency``, ``time_to_first_token``, ``time_per_output_token``,
  ``inter_token_latency``, ``normalized_time_per_output_token`` — each ``mean``, ``min``, ``max``,
  ``median`` and ``p<N>`` in seconds — and ``throughput`` with ``requests_per_sec``,
  ``input_tokens_per_sec``, ``output_tokens_per_sec``, ``total_tokens_per_sec``), ``failures``
  (``count``).
- **per-request** (:func:`read_per_request`): a list of ``{start_time, end_time, info,
  computed_metrics, error}``. ``start_time``/``end_time`` are the client's *monotonic* clock (an
  arbitrary origin, not Unix time): the per-request views use them relative to the first start.
  TTFT, the inter-token gaps and token counts come from ``computed_metrics`` when the report has
  them (``per_request_fields.computed_metrics: true``), else from ``info.response_metrics``
  (``output_token_times``, ``output_tokens``) and ``info.request_metrics.text.input_tokens``.

inference-perf's own definitions differ from vLLM's in one place: its TPOT is (last token time −
first token time) / (output tokens − 1) and ITL the mean of token-time gaps, both per request.
Server metrics (``vllm:request_prefill_time_seconds``, ``…decode_time…``, ``…queue_time…`` … queried
from a Prometheus server) come in ``summary_prometheus_metrics.json`` / ``stage_<i>_prometheus_
metrics.json``, in the lifecycle report's outer shape (``successes`` holds the histograms directly,
no ``latency``): :func:`read_server_metrics` reads them as engine-side figures, and the lifecycle
reader never takes one for a client report.
"""

from __future__ import annotations

from typing import Any

from benchbook.errors import InputError
from benchbook.ingest.formats import (  # the detectors live with the registry
    BenchmarkRun,
    Loaded,
    make_config,
    make_summary,
    number,
    object_at,
    requests_frame,
    seconds,
    stats_ms,
    summary_from_requests,
    tokens,
)

LAYOUT = "inference-perf lifecycle report (0.7 layout; tested 0.7.0)"


def config_beside(ld: Loaded, notes: list[str]) -> dict[str, Any]:
    """What inference-perf's ``config.yaml`` beside the report says (the reports name no model):
    ``model`` (``server.model_name``), ``server_type`` (``server.type``), the dataset and, for a fixed
    length (min = max), the input/output lengths, so the run's identity is the same as another
    tool's file of the same run."""
    from benchbook.jsonfile import load_yaml

    p = ld.path.with_name("config.yaml")
    if not p.is_file():
        notes.append("no config.yaml beside the report: model and dataset not stated")
        return {}
    cfg = load_yaml(p)
    if not isinstance(cfg, dict):
        raise InputError(p, "$", f"expected inference-perf's config (an object), found {type(cfg).__name__}")

    def obj(v: Any, where: str) -> dict[str, Any]:
        if v is not None and not isinstance(v, dict):
            raise InputError(p, where, f"expected an object, found {type(v).__name__}")
        return v or {}

    server, data = obj(cfg.get("server"), "server"), obj(cfg.get("data"), "data")
    # server.type is the engine kind ("vllm"), not a client backend: kept as server_type
    out: dict[str, Any] = {"model": server.get("model_name"), "server_type": server.get("type")}
    if data.get("type"):
        out["dataset_name"] = data["type"]
    for key, name in (("input_distribution", "random_input_len"), ("output_distribution", "random_output_len")):
        dist = obj(data.get(key), f"data.{key}")
        if dist.get("min") is not None and dist.get("min") == dist.get("max"):
            out[name] = dist["min"]
    notes.append(f"model and dataset from {p.name} beside the report")
    return {k: v for k, v in out.items() if v is not None}


PER_REQUEST_LAYOUT = "inference-perf per-request lifecycle report (0.7 layout; tested 0.7.0)"

_LATENCY = {
    "ttft": "time_to_first_token",
    "tpot": "time_per_output_token",
    "itl": "inter_token_latency",
    "e2el": "request_latency",
}


def read_lifecycle(ld: Loaded) -> list[BenchmarkRun]:
    f, d = ld.file, ld.doc
    load = object_at(ld, d.get("load_summary"), "$.load_summary")
    ok = object_at(ld, d.get("successes"), "$.successes")
    bad = object_at(ld, d.get("failures"), "$.failures")
    if "count" not in ok:
        raise InputError(f, "$.successes", f"no 'count': found keys {sorted(ok)}")
    lat = object_at(ld, ok.get("latency"), "$.successes.latency")
    tput = object_at(ld, ok.get("throughput"), "$.successes.throughput")
    values: dict[str, Any] = {
        "duration_s": number(d.get("benchmark_time_seconds"), f, "$.benchmark_time_seconds"),
        "completed": number(ok.get("count"), f, "$.successes.count"),
        "failed": number(bad.get("count"), f, "$.failures.count"),
        "request_throughput": number(tput.get("requests_per_sec"), f, "$.successes.throughput.requests_per_sec"),
        "output_throughput": number(
            tput.get("output_tokens_per_sec"), f, "$.successes.throughput.output_tokens_per_sec"
        ),
        "total_token_throughput": number(
            tput.get("total_tokens_per_sec"), f, "$.successes.throughput.total_tokens_per_sec"
        ),
        "input_throughput": number(tput.get("input_tokens_per_sec"), f, "$.successes.throughput.input_tokens_per_sec"),
    }
    notes: list[str] = []
    for m, key in _LATENCY.items():
        st = object_at(ld, lat.get(key), f"$.successes.latency.{key}")
        for stat, src in (("mean", "mean"), ("median", "median"), ("p99", "p99")):
            v = number(st.get(src), f, f"$.successes.latency.{key}.{src}")
            values[f"{stat}_{m}_ms"] = None if v is None else v * 1000.0
        p90 = number(st.get("p90"), f, f"$.successes.latency.{key}.p90")
        if p90 is not None:
            values[f"p90_{m}_ms"] = p90 * 1000.0
    if "median" not in object_at(ld, lat.get("request_latency"), "$").keys() and lat:
        notes.append("the report's percentiles do not include 50: medians not stated")
    ntpot = object_at(ld, lat.get("normalized_time_per_output_token"), "$")
    if ntpot.get("mean") is not None:
        values["mean_ntpot_ms"] = (
            number(ntpot["mean"], f, "$.successes.latency.normalized_time_per_output_token.mean") * 1000
        )
    duration = values["duration_s"]
    if duration and tput.get("input_tokens_per_sec") is not None and tput.get("output_tokens_per_sec") is not None:
        values["total_input_tokens"] = round(values["input_throughput"] * duration)
        values["total_output_tokens"] = round(values["output_throughput"] * duration)
        notes.append("token totals = the report's token rates x benchmark_time_seconds (the report keeps no totals)")
    stage = "requested_rate" in load or "achieved_rate" in load
    rate = number(load.get("requested_rate"), f, "$.load_summary.requested_rate")
    conc = number(load.get("concurrency"), f, "$.load_summary.concurrency")
    if conc is not None:
        notes.append(
            "concurrent load: no rate limit (request rate inf, as vLLM writes it); the stage's requested_rate is "
            "set by inference-perf itself"
        )
        rate = float("inf")
    config = make_config(
        request_rate=None if rate is None else float(rate),
        max_concurrency=conc,
        num_prompts=number(load.get("count"), f, "$.load_summary.count"),
        achieved_rate=number(load.get("achieved_rate"), f, "$.load_summary.achieved_rate"),
        window="stage" if stage else "whole run",
        **config_beside(ld, notes),
    )
    if d.get("retries"):
        notes.append("the run retried requests (see the report's 'retries'): they count on both sides")
    return [BenchmarkRun(f, "inference-perf-lifecycle", config, make_summary(**values), None, [], "$", notes, LAYOUT)]


def _error_text(e: Any) -> str | None:
    if e is None:
        return None
    if isinstance(e, dict):
        return ": ".join(str(e[k]) for k in ("error_type", "error_msg") if e.get(k)) or "error"
    return str(e)


def _gaps(gaps: list[Any] | None, f: str, where: str) -> list[float] | None:
    """The gaps between a request's tokens, each a time in seconds (``formats.seconds``): a null, a
    string or a negative gap is bad input naming it (it crashed the reader: exit 1)."""
    if gaps is None:
        return None
    out = []
    for j, g in enumerate(gaps):
        v = seconds(g, f, f"{where}[{j}]") if not isinstance(g, str) else None
        if v is None:
            raise InputError(
                f,
                f"{where}[{j}]",
                f"{'null' if g is None else repr(g)} is not a gap between tokens (expected a number of seconds)",
            )
        out.append(v)
    return out


def read_per_request(ld: Loaded) -> list[BenchmarkRun]:
    f = ld.file
    tool_tpot: list[float | None] = []  # inference-perf's own per-request TPOT (computed_metrics)
    cols: dict[str, list[Any]] = {k: [] for k in ("index", "start_s", "ttft_s", "e2e_s", "itl", "itl_mean_s",
                                                  "prompt_tokens", "completion_tokens", "success", "error")}  # fmt: skip
    from_info = 0
    for i, (where, r) in enumerate(ld.records()):
        if not isinstance(r, dict):
            raise InputError(f, where, f"expected an object, found {type(r).__name__}")
        missing = {"start_time", "end_time"} - r.keys()
        if missing:
            raise InputError(f, where, f"no {', '.join(sorted(missing))}: found keys {sorted(r)}")
        start = number(r["start_time"], f, f"{where}.start_time")
        end = number(r["end_time"], f, f"{where}.end_time")
        cm = object_at(ld, r.get("computed_metrics"), f"{where}.computed_metrics")
        info = object_at(ld, r.get("info"), f"{where}.info")
        resp = object_at(ld, info.get("response_metrics"), f"{where}.info.response_metrics")
        req = object_at(
            ld, object_at(ld, info.get("request_metrics"), f"{where}.info.request_metrics").get("text"), where
        )
        ttft = number(cm.get("time_to_first_token"), f, f"{where}.computed_metrics.time_to_first_token")
        gaps = cm.get("inter_token_latencies")
        times = resp.get("output_token_times")
        if not cm and isinstance(times, list) and len(times) > 1:
            from_info += 1
            ttft = number(times[0], f, f"{where}.info.response_metrics.output_token_times[0]") - start
            gaps = [b - a for a, b in zip(times, times[1:])]
        if gaps is not None and not isinstance(gaps, list):
            raise InputError(f, f"{where}.computed_metrics.inter_token_latencies", "expected a list")
        gaps = _gaps(gaps, f, f"{where}.computed_metrics.inter_token_latencies" if cm else f"{where}.info")
        out_tokens = cm.get("output_tokens", resp.get("output_tokens"))
        in_tokens = cm.get("input_tokens", req.get("input_tokens"))
        err = _error_text(r.get("error"))
        cols["index"].append(i)
        cols["start_s"].append(start)
        cols["ttft_s"].append(ttft)
        cols["e2e_s"].append(None if start is None or end is None else end - start)
        cols["itl"].append(gaps or None)
        cols["itl_mean_s"].append(
            number(cm.get("inter_token_latency"), f, f"{where}.computed_metrics.inter_token_latency")
        )
        side = "computed_metrics" if "input_tokens" in cm else "info.request_metrics.text"
        cols["prompt_tokens"].append(tokens(in_tokens, f, f"{where}.{side}.input_tokens"))
        side = "computed_metrics" if "output_tokens" in cm else "info.response_metrics"
        cols["completion_tokens"].append(tokens(out_tokens, f, f"{where}.{side}.output_tokens"))
        cols["success"].append(err is None)
        cols["error"].append(err)
        if err is None:
            tool_tpot.append(
                number(cm.get("time_per_output_token"), f, f"{where}.computed_metrics.time_per_output_token")
            )
    df = requests_frame(cols)
    notes = [
        "start times are inference-perf's monotonic clock (arbitrary origin): used relative to the first request",
    ]
    if from_info:
        notes.append(f"{from_info} request(s) without computed_metrics: TTFT and gaps from info.output_token_times")
    figures = summary_from_requests(df)
    if tool_tpot and None not in tool_tpot:
        # the tool's TPOT per request ((last token - first token) / (output tokens - 1)), so the summary
        # is the one its own summary and stage reports print for the same run
        import polars as pl

        figures.update(stats_ms("tpot", pl.Series(tool_tpot, dtype=pl.Float64)))
        notes.append("TPOT per request as inference-perf computed it (computed_metrics.time_per_output_token)")
    summary = make_summary(**figures)
    starts = [s for s in cols["start_s"] if s is not None]
    ends = [s + e for s, e in zip(cols["start_s"], cols["e2e_s"]) if s is not None and e is not None]
    if starts and ends:
        summary["duration_s"] = max(ends) - min(starts)
        if summary["duration_s"] > 0:
            summary["request_throughput"] = summary["completed"] / summary["duration_s"]
            if summary["total_output_tokens"] is not None:
                summary["output_throughput"] = summary["total_output_tokens"] / summary["duration_s"]
    notes.append("summary computed by benchbook from the per-request records (first start to last end)")
    config = make_config(num_prompts=df.height, **config_beside(ld, notes))
    return [BenchmarkRun(f, "inference-perf-per-request", config, summary, df, [], "$", notes, PER_REQUEST_LAYOUT)]


SERVER_LAYOUT = "inference-perf server metrics from Prometheus (0.7 layout)"
# report key -> benchbook figure; histograms are {mean, median, p90, p99} in seconds
_SERVER_HIST = {
    "time_to_first_token": "ttft",
    "time_per_output_token": "tpot",
    "inter_token_latency": "itl",
    "request_latency": "e2el",
    "request_queue_time": "queue",
    "request_prefill_time": "prefill",
    "request_decode_time": "decode",
    "request_inference_time": "inference",
}


def read_server_metrics(ld: Loaded) -> list[BenchmarkRun]:
    """The engine's own figures as inference-perf queried them from Prometheus (vLLM's
    ``vllm:request_prefill_time_seconds``, ``…decode_time…``, ``…queue_time…``, TTFT, TPOT …):
    per histogram mean, median, p90 and p99 in ms (``mean_prefill_ms`` …), the request count and
    rate, KV-cache usage, prefix-cache hit share and preemptions. Engine clock, not the client's."""
    f, d = ld.file, ld.doc
    ok = object_at(ld, d.get("successes"), "$.successes")
    values: dict[str, Any] = {
        "completed": number(ok.get("count"), f, "$.successes.count"),
        "request_throughput": number(ok.get("rate"), f, "$.successes.rate"),
    }
    for key, name in _SERVER_HIST.items():
        st = object_at(ld, ok.get(key), f"$.successes.{key}")
        for stat in ("mean", "median", "p90", "p99"):
            v = number(st.get(stat), f, f"$.successes.{key}.{stat}")
            values[f"{stat}_{name}_ms"] = None if v is None else v * 1000.0
    for key, out in (
        ("kv_cache_usage_percentage", "mean_kv_cache_usage"),
        ("prefix_cache_hit_percent", "prefix_cache_hit_share"),
        ("num_preemptions_total", "preemptions"),
        ("queue_len", "mean_queue_len"),
        ("num_requests_running", "mean_running"),
    ):
        values[out] = number(object_at(ld, ok.get(key), f"$.successes.{key}").get("mean"), f, f"$.successes.{key}.mean")
    for key, out in (("prompt_len", "mean_input_len"), ("output_len", "mean_output_len")):
        values[out] = number(object_at(ld, ok.get(key), f"$.successes.{key}").get("mean"), f, f"$.successes.{key}.mean")
    notes = [
        "engine-side figures from a Prometheus server over the run's window (engine clock), not the client's; "
        "benchmark_time_seconds is 0 in this report: no duration",
    ]
    config = make_config(window="server metrics")
    return [BenchmarkRun(f, "inference-perf-server-metrics", config, make_summary(**values), None, [], "$", notes,
                         SERVER_LAYOUT)]  # fmt: skip
