"""GuideLLM benchmark reports (``guidellm benchmark --output-path x.json|x.yaml``).

One run per entry of ``benchmarks``. Figures come from ``metrics.<name>.successful`` (distribution
summaries: mean, median, std_dev, percentiles.p99). ``requests`` holds only the request *samples*
GuideLLM kept (``--output-sampling``), so run figures are never computed from it.

Two layouts (:data:`LAYOUTS`):

* **0.2–0.3** ("legacy"): ``request_totals``, ``args.strategy``, ``worker`` and ``duration`` on each
  benchmark; request samples with flat ``start_time``/``time_to_first_token_ms``/``request_latency``;
* **0.4 and later**: each benchmark has ``config`` (``strategy``, ``backend``…), ``scheduler_state``,
  ``scheduler_metrics`` and ``metrics`` (``metrics.request_totals``); the report has a ``metadata``
  block from 0.5 on (``version`` 1 in 0.5–0.6, 2 from 0.7, with ``guidellm_version``) and the
  scenario in ``config``; samples are ``GenerativeRequestStats`` (``request_start_time``,
  ``time_to_first_token_ms``, ``request_latency``, ``prompt_tokens``, ``output_tokens``).
"""

from __future__ import annotations

import math
from typing import Any

from benchbook.errors import InputError
from benchbook.ingest.formats import BenchmarkRun, Loaded, make_config, make_summary, number, requests_frame, to_int

# summary metric → (GuideLLM metric, factor to ms)
_LAT = {"ttft": ("time_to_first_token_ms", 1.0), "tpot": ("time_per_output_token_ms", 1.0),
        "itl": ("inter_token_latency_ms", 1.0), "e2el": ("request_latency", 1000.0)}  # fmt: skip


KNOWN_SCHEMA_VERSIONS = (1, 2)
LAYOUTS = (
    "0.2-0.3 legacy layout (benchmarks[].request_totals, args, worker)",
    "0.4+ layout (benchmarks[].config, scheduler_state, metrics.request_totals; "
    "metadata.version 1 in 0.5-0.6, 2 from 0.7)",
)


def _version(ld: Loaded, b0: dict[str, Any]) -> tuple[str, str]:
    """(layout, tool version text) of a report; InputError for a layout benchbook does not know."""
    meta = ld.doc.get("metadata")
    if "request_totals" in b0 and "args" in b0:
        return "legacy", "GuideLLM 0.2-0.3 (legacy report layout, no metadata)"
    if _is_new(b0):
        if isinstance(meta, dict):
            sv = meta.get("version")
            if sv not in KNOWN_SCHEMA_VERSIONS:
                raise InputError(
                    ld.file,
                    "$.metadata.version",
                    f"GuideLLM report schema version {sv!r} (guidellm {meta.get('guidellm_version', '?')}) is not "
                    f"known; known schema versions: {', '.join(map(str, KNOWN_SCHEMA_VERSIONS))} "
                    "(GuideLLM 0.5-0.6 and 0.7+)",
                )
            return "new", f"GuideLLM {meta.get('guidellm_version', '?')} (report schema {sv})"
        return "new", "GuideLLM 0.4 (report without metadata)"
    found = ", ".join(sorted(map(str, b0))[:20])
    raise InputError(
        ld.file,
        "$.benchmarks[0]",
        f"unknown GuideLLM report layout: found keys {found}; known layouts: {'; '.join(LAYOUTS)}",
    )


def _is_new(b: dict[str, Any]) -> bool:
    m = b.get("metrics")
    return isinstance(m, dict) and "request_totals" in m and "config" in b


def read_report(ld: Loaded) -> list[BenchmarkRun]:
    benchmarks = ld.doc["benchmarks"]
    layout, version = _version(ld, benchmarks[0])
    read = _run if layout == "legacy" else _run_new
    runs = [read(ld, f"$.benchmarks[{i}]", b) for i, b in enumerate(benchmarks)]
    for r in runs:
        r.tool_version = version
    return runs


def _get(obj: Any, path: list[str], file: str, where: str) -> Any:
    for key in path:
        if not isinstance(obj, dict):
            raise InputError(file, where, f"expected an object, found {type(obj).__name__}")
        if key not in obj:
            raise InputError(file, where, f"missing key {key!r}")
        where = f"{where}.{key}"
        obj = obj[key]
    return obj


def _strategy(strategy: dict[str, Any]) -> tuple[float | None, int | None]:
    """(request_rate, max_concurrency) of a GuideLLM scheduling strategy."""
    kind = strategy.get("type_")
    if kind == "synchronous":
        return None, 1
    if kind == "concurrent":
        return None, strategy.get("streams")
    if kind == "throughput":
        return math.inf, strategy.get("max_concurrency")
    return strategy.get("rate"), strategy.get("max_concurrency")  # constant, poisson


def _summary(b: dict, totals: dict, stat, f, where: str, totals_where: str, extra_percentiles: tuple[str, ...]) -> dict:
    """The run summary both layouts share: totals, token sums, GuideLLM's time-averaged rates and the
    latency statistics (``stat`` reads one layout's ``metrics.<metric>.successful``)."""
    summary = make_summary(
        duration_s=number(b.get("duration"), f, f"{where}.duration"),
        completed=to_int(totals.get("successful"), f, f"{totals_where}.successful"),
        failed=to_int(totals.get("errored"), f, f"{totals_where}.errored"),
        incomplete=to_int(totals.get("incomplete"), f, f"{totals_where}.incomplete"),
        total_input_tokens=to_int(stat("prompt_token_count", "total_sum"), f, f"{where}.metrics.prompt_token_count"),
        total_output_tokens=to_int(stat("output_token_count", "total_sum"), f, f"{where}.metrics.output_token_count"),
        request_throughput=stat("requests_per_second", "mean"),
        output_throughput=stat("output_tokens_per_second", "mean"),
        total_token_throughput=stat("tokens_per_second", "mean"),
        mean_concurrency=stat("request_concurrency", "mean"),
    )
    for name, (metric, factor) in _LAT.items():
        for ours, theirs in (("mean", "mean"), ("median", "median"), ("std", "std_dev"), ("p99", "p99")):
            summary[f"{ours}_{name}_ms"] = stat(metric, theirs, factor)
        for p in extra_percentiles:
            summary[f"{p}_{name}_ms"] = stat(metric, p, factor)
    return summary


def _run(ld: Loaded, where: str, b: Any) -> BenchmarkRun:
    f = ld.file
    if not isinstance(b, dict):
        raise InputError(f, where, f"expected an object, found {type(b).__name__}")
    metrics = _get(b, ["metrics"], f, where)
    totals = _get(b, ["request_totals"], f, where)
    strategy = b.get("args", {}).get("strategy") or {}
    rate, conc = _strategy(strategy)
    worker = b.get("worker") or {}

    def stat(metric: str, key: str, factor: float = 1.0) -> float | None:
        m = _get(metrics, [metric, "successful"], f, f"{where}.metrics")
        v = m.get("percentiles", {}).get(key) if key.startswith("p") else m.get(key)
        v = number(v, f, f"{where}.metrics.{metric}.successful.{key}")
        return None if v is None else v * factor

    summary = _summary(b, totals, stat, f, where, f"{where}.request_totals", ("p95",))
    config = make_config(
        model=worker.get("backend_model"),
        backend=worker.get("backend_type"),
        request_rate=rate,
        max_concurrency=conc,
        strategy=strategy.get("type_"),
        data=(b.get("request_loader") or {}).get("data"),
        run_id=b.get("run_id"),
        id=b.get("id_"),
        max_duration_s=b.get("args", {}).get("max_duration"),
    )
    notes = [
        "throughputs are GuideLLM's time-averaged rates (metrics.*.successful.mean), not count/duration",
        f"incomplete requests (cut off when the benchmark ended): {summary['incomplete']}",
    ]
    requests = _samples(ld, where, b.get("requests"), summary, notes)
    return BenchmarkRun(f, "guidellm-report", config, summary, requests, [], where, notes)


def _samples(ld: Loaded, where: str, reqs: Any, summary: dict[str, Any], notes: list[str]):
    if not isinstance(reqs, dict):
        return None
    f = ld.file
    rows: dict[str, list[Any]] = {k: [] for k in ("index", "start_s", "ttft_s", "e2e_s", "prompt_tokens",
                                                  "completion_tokens", "success", "error")}  # fmt: skip
    kept = []
    for status in ("successful", "errored", "incomplete"):
        items = reqs.get(status) or []
        kept.append(f"{len(items)} {status}")
        for i, x in enumerate(items):
            w = f"{where}.requests.{status}[{i}]"
            if not isinstance(x, dict):
                raise InputError(f, w, f"expected an object, found {type(x).__name__}")
            ttft = number(x.get("time_to_first_token_ms"), f, f"{w}.time_to_first_token_ms")
            rows["index"].append(len(rows["index"]))
            rows["start_s"].append(number(x.get("start_time"), f, f"{w}.start_time"))
            rows["ttft_s"].append(None if ttft is None else ttft / 1000)
            rows["e2e_s"].append(number(x.get("request_latency"), f, f"{w}.request_latency"))
            rows["prompt_tokens"].append(to_int(x.get("prompt_tokens"), f, f"{w}.prompt_tokens"))
            rows["completion_tokens"].append(to_int(x.get("output_tokens"), f, f"{w}.output_tokens"))
            rows["success"].append(status == "successful")
            rows["error"].append(_error(status, x.get("error")))
    notes.append(
        f"requests table holds GuideLLM's samples only ({', '.join(kept)} of "
        f"{summary['completed']} successful, {summary['failed']} errored, {summary['incomplete']} incomplete)"
    )
    return requests_frame(rows)


def _error(status: str, err: Any) -> str | None:
    """None for a successful request; ``incomplete[: why]`` or the error text otherwise."""
    if status == "successful":
        return None
    if status == "incomplete":
        return "incomplete" + (f": {err}" if err else "")
    return str(err) if err else status


def _run_new(ld: Loaded, where: str, b: Any) -> BenchmarkRun:
    """A benchmark in the 0.4+ layout (``config``, ``scheduler_state``, ``metrics.request_totals``)."""
    f = ld.file
    if not isinstance(b, dict):
        raise InputError(f, where, f"expected an object, found {type(b).__name__}")
    if not _is_new(b):
        raise InputError(f, where, "missing key 'metrics.request_totals' or 'config' (0.4+ layout, as benchmarks[0])")
    metrics = b["metrics"]
    totals = metrics["request_totals"]
    cfg = b.get("config") or {}
    strategy = cfg.get("strategy") or {}
    rate, conc = _strategy(strategy)
    backend = cfg.get("backend") or {}
    scenario = ld.doc.get("config") or {}

    def stat(metric: str, key: str, factor: float = 1.0) -> float | None:
        m = _get(metrics, [metric, "successful"], f, f"{where}.metrics")
        if m is None:
            return None
        v = m.get("percentiles", {}).get(key) if key.startswith("p") else m.get(key)
        v = number(v, f, f"{where}.metrics.{metric}.successful.{key}")
        return None if v is None else v * factor

    summary = _summary(b, totals, stat, f, where, f"{where}.metrics.request_totals", ("p90", "p95"))
    model = backend.get("model") or _scenario_model(scenario)
    mr = (cfg.get("constraints") or {}).get("max_requests") or {}
    max_requests = mr.get("count", (mr.get("args") or {}).get("count"))
    config = make_config(
        model=model,
        backend=backend.get("type_") or backend.get("kind") or backend.get("type"),
        request_rate=rate,
        max_concurrency=conc,
        num_prompts=max_requests if isinstance(max_requests, int) else None,
        strategy=strategy.get("type_"),
        run_id=cfg.get("run_id"),
        id=cfg.get("id_"),
        run_index=cfg.get("run_index"),
    )
    notes = [
        "throughputs are GuideLLM's time-averaged rates (metrics.*.successful.mean), not count/duration",
        f"incomplete requests (cut off when the benchmark ended): {summary['incomplete']}",
        "GuideLLM's TPOT (time_per_output_token) includes the first token; its ITL (inter_token_latency) is "
        "(last token − first token) / (output tokens − 1), close to vLLM's TPOT",
    ]
    requests = _samples_new(ld, where, b.get("requests"), summary, notes)
    return BenchmarkRun(f, "guidellm-report", config, summary, requests, [], where, notes)


def _scenario_model(scenario: Any) -> Any:
    """The model named in the report's scenario (``config.spec.backend.model`` or ``config.model``)."""
    if not isinstance(scenario, dict):
        return None
    spec = scenario.get("spec") or {}
    be = spec.get("backend") if isinstance(spec, dict) else None
    if isinstance(be, dict) and be.get("model"):
        return be["model"]
    return scenario.get("model")


def _samples_new(ld: Loaded, where: str, reqs: Any, summary: dict[str, Any], notes: list[str]):
    if not isinstance(reqs, dict):
        return None
    f = ld.file
    rows: dict[str, list[Any]] = {k: [] for k in ("index", "start_s", "ttft_s", "e2e_s", "itl_mean_s",
                                                  "prompt_tokens", "completion_tokens", "success", "error")}  # fmt: skip
    kept = []
    for status in ("successful", "errored", "incomplete"):
        items = reqs.get(status) or []
        if not isinstance(items, list):
            raise InputError(f, f"{where}.requests.{status}", f"expected a list, found {type(items).__name__}")
        kept.append(f"{len(items)} {status}")
        for i, x in enumerate(items):
            w = f"{where}.requests.{status}[{i}]"
            if not isinstance(x, dict):
                raise InputError(f, w, f"expected an object, found {type(x).__name__}")
            ttft = number(x.get("time_to_first_token_ms"), f, f"{w}.time_to_first_token_ms")
            itl = number(x.get("inter_token_latency_ms"), f, f"{w}.inter_token_latency_ms")
            start = x.get("request_start_time")
            if start is None:
                start = ((x.get("info") or {}).get("timings") or {}).get("request_start")
            rows["index"].append(len(rows["index"]))
            rows["start_s"].append(number(start, f, f"{w}.request_start_time"))
            rows["ttft_s"].append(None if ttft is None else ttft / 1000)
            rows["e2e_s"].append(number(x.get("request_latency"), f, f"{w}.request_latency"))
            rows["itl_mean_s"].append(None if itl is None else itl / 1000)
            rows["prompt_tokens"].append(to_int(x.get("prompt_tokens"), f, f"{w}.prompt_tokens"))
            rows["completion_tokens"].append(to_int(x.get("output_tokens"), f, f"{w}.output_tokens"))
            rows["success"].append(status == "successful")
            err = (x.get("info") or {}).get("error") if isinstance(x.get("info"), dict) else None
            rows["error"].append(_error(status, err or x.get("error")))
    notes.append(
        f"requests table holds GuideLLM's samples only ({', '.join(kept)} of "
        f"{summary['completed']} successful, {summary['failed']} errored, {summary['incomplete']} incomplete)"
    )
    return requests_frame(rows)
