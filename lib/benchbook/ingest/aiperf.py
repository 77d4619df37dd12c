"""AIPerf exports (``profile_export.jsonl``, ``profile_export_aiperf.json`` / ``.csv``) and the
GenAI-Perf ``analyze`` export CSV.

AIPerf's names differ from vLLM's: its per-request "Inter Token Latency" is
``(request_latency - ttft) / (output_sequence_length - 1)`` — what vLLM calls TPOT — and its
"Inter Chunk Latency" is the gap between streamed chunks — what vLLM calls ITL. They are mapped so.
Output tokens are the "output sequence length" (answer + reasoning tokens), which is what the engine
generated; the answer-only count is kept as ``output_token_count``.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from benchbook.errors import InputError
from benchbook.ingest.formats import (
    BenchmarkRun,
    Exclusion,
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

_SCALE_TO_S = {"ms": 1e-3, "ns": 1e-9, "us": 1e-6, "s": 1.0, "sec": 1.0}
# AIPerf metric tag → our metric name
_LAT = {"ttft": "ttft", "inter_token_latency": "tpot", "inter_chunk_latency": "itl", "request_latency": "e2el"}
_STATS = (("mean", "avg"), ("median", "p50"), ("std", "std"), ("p99", "p99"), ("p90", "p90"), ("p95", "p95"))


def _seconds(m: Any, file: str, where: str) -> float | list[float] | None:
    """A {value, unit} metric converted to seconds (lists element-wise)."""
    if m is None:
        return None
    if not isinstance(m, dict) or "value" not in m:
        raise InputError(file, where, "expected an object with 'value' and 'unit'")
    unit = m.get("unit", "ms")
    if unit not in _SCALE_TO_S:
        raise InputError(file, f"{where}.unit", f"unknown time unit {unit!r}")
    k = _SCALE_TO_S[unit]
    v = m["value"]
    if isinstance(v, list):
        return [float(number(x, file, f"{where}.value[{i}]")) * k for i, x in enumerate(v)]
    v = number(v, file, f"{where}.value")
    return None if v is None else float(v) * k


def _value(m: Any, file: str, where: str) -> Any:
    if m is None:
        return None
    if not isinstance(m, dict) or "value" not in m:
        raise InputError(file, where, "expected an object with 'value' and 'unit'")
    return to_int(m["value"], file, f"{where}.value")


# ---------------------------------------------------------------------------------------------
# profile_export.jsonl — one record per request


def records_version(file: str, where: str, first: dict[str, Any]) -> str:
    meta = first.get("metadata") or {}
    if "benchmark_phase" in meta or "request_start_ns" in meta:
        return "AIPerf 0.13+ record layout (benchmark_phase, request_start_ns/request_end_ns, session_num)"
    if "credit_phase" in meta or "timestamp_ns" in meta:
        return "AIPerf before 0.13 (record layout with credit_phase, timestamp_ns)"
    raise InputError(
        file,
        f"{where}.metadata",
        f"unknown AIPerf record layout: metadata keys {', '.join(sorted(meta)) or '(none)'}; known: "
        "benchmark_phase + request_start_ns (0.13+), credit_phase + timestamp_ns (before 0.13)",
    )


def read_records(ld: Loaded) -> list[BenchmarkRun]:
    f = ld.file
    recs = ld.records()
    first = recs[0][1] if recs and isinstance(recs[0][1], dict) else {}
    version = records_version(f, recs[0][0] if recs else "line 1", first)
    rows: dict[str, list[Any]] = {k: [] for k in ("index", "start_s", "ttft_s", "e2e_s", "itl", "itl_mean_s",
                                                  "prompt_tokens", "completion_tokens", "success", "error")}  # fmt: skip
    exclusions: list[Exclusion] = []
    first_start: list[int] = []
    last_end: list[int] = []
    for n, (where, rec) in enumerate(ld.records()):
        r = check_record(ld, where, rec)
        meta, metrics, err = r.get("metadata") or {}, r.get("metrics") or {}, r.get("error")
        if not isinstance(metrics, dict):
            raise InputError(f, f"{where}.metrics", f"expected an object, found {type(metrics).__name__}")
        phase_key = "benchmark_phase" if "benchmark_phase" in meta else "credit_phase"
        phase = meta.get(phase_key, "profiling")
        if str(phase).lower() != "profiling":
            exclusions.append(Exclusion(f, where, f"{phase_key}={phase!r}: not part of the profiling window"))
            continue
        ts_key = "request_start_ns" if "request_start_ns" in meta else "timestamp_ns"
        ts = meta.get(ts_key)
        rows["index"].append(n)
        rows["start_s"].append(None if ts is None else number(ts, f, f"{where}.metadata.{ts_key}") / 1e9)
        ttft_tag = "time_to_first_token" if "time_to_first_token" in metrics else "ttft"
        rows["ttft_s"].append(_seconds(metrics.get(ttft_tag), f, f"{where}.metrics.{ttft_tag}"))
        rows["e2e_s"].append(_seconds(metrics.get("request_latency"), f, f"{where}.metrics.request_latency"))
        rows["itl"].append(_seconds(metrics.get("inter_chunk_latency"), f, f"{where}.metrics.inter_chunk_latency"))
        rows["itl_mean_s"].append(
            _seconds(metrics.get("inter_token_latency"), f, f"{where}.metrics.inter_token_latency")
        )
        rows["prompt_tokens"].append(
            _value(metrics.get("input_sequence_length"), f, f"{where}.metrics.input_sequence_length")
        )
        rows["completion_tokens"].append(
            _value(metrics.get("output_sequence_length"), f, f"{where}.metrics.output_sequence_length")
        )
        rows["success"].append(not err)
        rows["error"].append(None if not err else _error_text(err))
        for tag, acc in (("min_request_timestamp", first_start), ("max_response_timestamp", last_end)):
            if tag in metrics:
                acc.append(_value(metrics[tag], f, f"{where}.metrics.{tag}"))
        if not err and "request_start_ns" in meta and "request_end_ns" in meta:  # 0.13+: in the metadata
            first_start.append(to_int(meta["request_start_ns"], f, f"{where}.metadata.request_start_ns"))
            last_end.append(to_int(meta["request_end_ns"], f, f"{where}.metadata.request_end_ns"))
    df = requests_frame(rows)
    summary = make_summary(**summary_from_requests(df))
    notes = ["summary computed by benchbook from the per-request records"]
    if first_start and last_end:
        # AIPerf's benchmark duration: last response − first request, over successful records
        summary["duration_s"] = (max(last_end) - min(first_start)) / 1e9
        summary["request_throughput"] = summary["completed"] / summary["duration_s"]
        if summary["total_output_tokens"] is not None:
            summary["output_throughput"] = summary["total_output_tokens"] / summary["duration_s"]
        notes.append(
            "duration = last response end - first request start over successful records (AIPerf's benchmark_duration; "
            "AIPerf's own request_throughput divides by its slightly longer observation window)"
        )
    return [BenchmarkRun(f, "aiperf-records", make_config(), summary, df, exclusions, "$", notes, version)]


def _error_text(err: Any) -> str:
    if isinstance(err, dict):
        return " ".join(str(err[k]) for k in ("code", "type") if err.get(k) is not None) + (
            f": {err['message']}" if err.get("message") else ""
        )
    return str(err)


def _sibling_records(ld: Loaded, notes: list[str]):
    """The per-request export written beside an aggregate (``X_aiperf.json`` ↔ ``X.jsonl``)."""
    stem = ld.path.stem
    if not stem.endswith("_aiperf"):
        return None, []
    p = ld.path.with_name(stem[: -len("_aiperf")] + ".jsonl")
    if not p.exists():
        return None, []
    (run,) = read_records(load(p))
    notes.append(f"requests read from {p.name} beside this file")
    return run.requests, run.exclusions


# ---------------------------------------------------------------------------------------------
# profile_export_aiperf.json — aggregate


def _config_from_input(cfg: Any) -> dict[str, Any]:
    cfg = cfg if isinstance(cfg, dict) else {}
    if "models" in cfg or "phases" in cfg:
        return _config_013(cfg)
    endpoint, loadgen = cfg.get("endpoint") or {}, cfg.get("loadgen") or {}
    names = endpoint.get("model_names") or [None]
    return make_config(
        model=names[0],
        request_rate=loadgen.get("request_rate"),
        max_concurrency=loadgen.get("concurrency"),
        num_prompts=loadgen.get("request_count"),
        endpoint_type=endpoint.get("type"),
        streaming=endpoint.get("streaming"),
        request_rate_mode=loadgen.get("request_rate_mode"),
        cli_command=cfg.get("cli_command"),
    )


def _config_013(cfg: dict[str, Any]) -> dict[str, Any]:
    """AIPerf 0.13's input_config: ``models.items[].name``, ``endpoint``, ``phases[]`` (the profiling
    phase has ``type`` concurrency/rate/..., ``requests``, ``concurrency``, ``rate``)."""
    models = cfg.get("models") or {}
    items = models.get("items") if isinstance(models, dict) else models
    name = items[0].get("name") if isinstance(items, list) and items and isinstance(items[0], dict) else None
    endpoint = cfg.get("endpoint") or {}
    phases = cfg.get("phases") or []
    if isinstance(phases, dict):
        phases = list(phases.values())
    prof = next((p for p in phases if isinstance(p, dict) and p.get("kind", p.get("name")) == "profiling"), {})
    rate = prof.get("rate")
    return make_config(
        model=name,
        request_rate=rate,
        max_concurrency=prof.get("concurrency"),
        num_prompts=prof.get("requests"),
        endpoint_type=endpoint.get("type"),
        streaming=endpoint.get("streaming"),
        request_rate_mode=prof.get("type"),
    )


def aggregate_version(d: dict[str, Any]) -> str:
    if isinstance(d.get("records"), dict):
        return "AIPerf before 0.13 (aggregate JSON with metrics under 'records')"
    v, sv = d.get("aiperf_version"), d.get("schema_version")
    return f"AIPerf {v or '0.13+'} (aggregate JSON, metrics at the top level, export schema {sv or '?'})"


def read_aggregate_json(ld: Loaded) -> list[BenchmarkRun]:
    f, d = ld.file, ld.doc
    nested = isinstance(d.get("records"), dict)
    recs = d["records"] if nested else d
    base = "$.records" if nested else "$"

    def rec(tag: str, stat: str = "avg", to_ms: bool = False) -> Any:
        if tag == "ttft" and not nested:
            tag = "time_to_first_token"  # AIPerf 0.13 renamed the tag
        r = recs.get(tag)
        if r is None:
            return None
        if not isinstance(r, dict):
            raise InputError(f, f"{base}.{tag}", f"expected an object, found {type(r).__name__}")
        v = number(r.get(stat), f, f"{base}.{tag}.{stat}")
        if v is None or not to_ms:
            return v
        unit = r.get("unit", "ms")
        if unit not in _SCALE_TO_S:
            raise InputError(f, f"{base}.{tag}.unit", f"unknown time unit {unit!r}")
        return v * _SCALE_TO_S[unit] * 1000

    errors = d.get("error_summary")
    failed = rec("error_request_count")
    if failed is None and isinstance(errors, list):
        failed = sum(to_int(e.get("count"), f, f"$.error_summary[{i}].count") or 0 for i, e in enumerate(errors))
    summary = make_summary(
        duration_s=rec("benchmark_duration"),
        completed=to_int(rec("request_count"), f, f"{base}.request_count.avg"),
        failed=to_int(failed, f, f"{base}.error_request_count.avg"),
        total_input_tokens=to_int(rec("total_isl"), f, f"{base}.total_isl.avg"),
        total_output_tokens=to_int(rec("total_osl"), f, f"{base}.total_osl.avg"),
        request_throughput=rec("request_throughput"),
        output_throughput=rec("output_token_throughput"),
        total_token_throughput=rec("total_token_throughput"),
        total_output_tokens_answer_only=to_int(rec("total_output_tokens"), f, f"{base}.total_output_tokens.avg"),
        total_reasoning_tokens=to_int(rec("total_reasoning_tokens"), f, f"{base}.total_reasoning_tokens.avg"),
        errors=errors,
    )
    for tag, name in _LAT.items():
        for ours, theirs in _STATS:
            summary[f"{ours}_{name}_ms"] = rec(tag, theirs, to_ms=True)
    config = _config_from_input(d.get("input_config"))
    config["date"] = d.get("start_time")
    notes = ["AIPerf 'inter_token_latency' read as TPOT and 'inter_chunk_latency' as ITL (vLLM's meanings)"]
    requests, exclusions = _sibling_records(ld, notes)
    version = aggregate_version(d)
    return [BenchmarkRun(f, "aiperf-aggregate", config, summary, requests, exclusions, "$", notes, version)]


# ---------------------------------------------------------------------------------------------
# CSV exports: AIPerf aggregate CSV and GenAI-Perf analyze CSV


def _sections(text: str) -> list[tuple[int, list[list[str]]]]:
    """Blank-line separated CSV tables, each with the 1-based line number of its header."""
    out: list[tuple[int, list[list[str]]]] = []
    cur: list[list[str]] = []
    start = 0
    for n, row in enumerate(csv.reader(io.StringIO(text)), 1):
        if not any(c.strip() for c in row):
            if cur:
                out.append((start, cur))
            cur = []
            continue
        if not cur:
            start = n
        cur.append([c.strip() for c in row])
    if cur:
        out.append((start, cur))
    return out


def _strip_unit(header: str) -> tuple[str, str | None]:
    if header.endswith(")") and " (" in header:
        name, unit = header[:-1].rsplit(" (", 1)
        return name, unit
    return header, None


def _csv_number(v: str, file: str, where: str) -> float | None:
    if v == "" or v.upper() in ("N/A", "NA"):
        return None
    try:
        return float(v.replace(",", ""))
    except ValueError:
        raise InputError(file, where, f"expected a number, found {v!r}") from None


_CSV_LAT = {"Time to First Token": "ttft", "Inter Token Latency": "tpot", "Inter Chunk Latency": "itl",
            "Request Latency": "e2el"}  # fmt: skip
_CSV_VALUE = {"Benchmark Duration": "duration_s", "Request Count": "completed", "Error Request Count": "failed",
              "Total Input Sequence Length": "total_input_tokens", "Total Output Sequence Length": "total_output_tokens",
              "Request Throughput": "request_throughput", "Output Token Throughput": "output_throughput",
              "Total Output Tokens": "total_output_tokens_answer_only",
              "Total Reasoning Tokens": "total_reasoning_tokens"}  # fmt: skip


def read_aggregate_csv(ld: Loaded) -> list[BenchmarkRun]:
    f = ld.file
    summary = make_summary()
    for start, rows in _sections(ld.doc):
        header = rows[0]
        for i, row in enumerate(rows[1:], 1):
            where = f"line {start + i}"
            name, unit = _strip_unit(row[0])
            if header[:2] == ["Metric", "Value"]:
                key = _CSV_VALUE.get(name)
                if key is not None:
                    v = _csv_number(row[1], f, where)
                    counted = key in ("completed", "failed") or key.startswith("total_")
                    summary[key] = int(v) if v is not None and counted else v
            elif header[:2] == ["Metric", "avg"] and name in _CSV_LAT:
                scale = _SCALE_TO_S.get(unit or "ms", 1e-3) * 1000
                cols = dict(zip(header, row))
                for ours, theirs in _STATS:
                    v = _csv_number(cols.get(theirs, ""), f, where)
                    summary[f"{ours}_{_CSV_LAT[name]}_ms"] = None if v is None else v * scale
    notes = ["AIPerf CSV figures are rounded to 2 decimals; the aggregate JSON has full precision",
             "AIPerf 'Inter Token Latency' read as TPOT and 'Inter Chunk Latency' as ITL (vLLM's meanings)"]  # fmt: skip
    requests, exclusions = _sibling_records(ld, notes)
    version = "AIPerf CSV export (the file does not state a version; same table layout before and after 0.13)"
    return [BenchmarkRun(f, "aiperf-csv", make_config(), summary, requests, exclusions, "$", notes, version)]


_ANALYZE = {"p99 Time To First Token": "p99_ttft_ms", "p99 Inter Token Latency": "p99_tpot_ms",
            "p99 Request Latency": "p99_e2el_ms", "p99 Output Sequence Length": "p99_output_tokens",
            "Avg. Output Token Throughput": "output_throughput", "Request Throughput": "request_throughput"}  # fmt: skip


def read_genai_perf_analyze(ld: Loaded) -> list[BenchmarkRun]:
    f = ld.file
    sections = _sections(ld.doc)
    start, rows = sections[0]
    header = rows[0]
    runs: dict[str, BenchmarkRun] = {}
    for i, row in enumerate(rows[1:], 1):
        where = f"line {start + i}"
        if len(row) != len(header):
            raise InputError(f, where, f"has {len(row)} fields but the header has {len(header)}")
        cols = dict(zip(header, row))
        summary = make_summary()
        for h, v in cols.items():
            name, _unit = _strip_unit(h)
            if name in _ANALYZE:
                summary[_ANALYZE[name]] = _csv_number(v, f, where)
        num = _csv_number(cols.get("Num Prompts", ""), f, where)
        conc = _csv_number(cols.get("Concurrency", ""), f, where)
        isl = _csv_number(cols.get("ISL", ""), f, where)
        config = make_config(
            label=cols["Config Name"],
            max_concurrency=None if conc is None else int(conc),
            num_prompts=None if num is None else int(num),
            input_tokens=None if isl is None else int(isl),
        )
        notes = ["GenAI-Perf analyze export: p99 figures and throughputs only; 'Inter Token Latency' read as TPOT"]
        runs[cols["Config Name"]] = BenchmarkRun(f, "genai-perf-analyze", config, summary, None, [], where, notes)
    for start, rows in sections[1:]:  # GPU telemetry tables, keyed by Config Name
        header = rows[0]
        if not header or header[0] != "Config Name":
            continue
        for i, row in enumerate(rows[1:], 1):
            cols = dict(zip(header, row))
            run = runs.get(cols.get("Config Name", ""))
            if run is None:
                raise InputError(
                    f, f"line {start + i}", f"config {cols.get('Config Name')!r} is not in the first table"
                )
            gpu = cols.get("GPU", "gpu")
            run.summary.setdefault("gpu", {})[gpu] = {
                h: _csv_number(v, f, f"line {start + i}") for h, v in cols.items() if h not in ("Config Name", "GPU")
            }
    return list(runs.values())
