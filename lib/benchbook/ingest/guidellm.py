"""GuideLLM benchmark reports (``guidellm benchmark --output-path x.json|x.yaml``).

One run per entry of ``benchmarks``. Figures come from ``metrics.<name>.successful`` (distribution
summaries: mean, median, std_dev, percentiles.p99). ``requests`` holds only the request *samples*
GuideLLM kept (``--output-sampling``), so run figures are never computed from it.
"""

from __future__ import annotations

import math
from typing import Any

from benchbook.errors import InputError
from benchbook.ingest.formats import BenchmarkRun, Loaded, make_config, make_summary, number, requests_frame, to_int

# summary metric → (GuideLLM metric, factor to ms)
_LAT = {"ttft": ("time_to_first_token_ms", 1.0), "tpot": ("time_per_output_token_ms", 1.0),
        "itl": ("inter_token_latency_ms", 1.0), "e2el": ("request_latency", 1000.0)}  # fmt: skip


def read_report(ld: Loaded) -> list[BenchmarkRun]:
    return [_run(ld, f"$.benchmarks[{i}]", b) for i, b in enumerate(ld.doc["benchmarks"])]


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

    summary = make_summary(
        duration_s=number(b.get("duration"), f, f"{where}.duration"),
        completed=to_int(totals.get("successful"), f, f"{where}.request_totals.successful"),
        failed=to_int(totals.get("errored"), f, f"{where}.request_totals.errored"),
        incomplete=to_int(totals.get("incomplete"), f, f"{where}.request_totals.incomplete"),
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
        summary[f"p95_{name}_ms"] = stat(metric, "p95", factor)
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
            rows["error"].append(None if status == "successful" else (x.get("error") or status))
    notes.append(
        f"requests table holds GuideLLM's samples only ({', '.join(kept)} of "
        f"{summary['completed']} successful, {summary['failed']} errored, {summary['incomplete']} incomplete)"
    )
    return requests_frame(rows)
