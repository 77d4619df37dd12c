"""Benchmark-tool outputs people already have: detection, a registry of readers, one tidy shape.

``detect(path)`` names the format of a file, ``read(path)`` turns it into a list of
:class:`BenchmarkRun` (a file may hold several runs: a sweep, one JSONL line per run) and
``describe(runs)`` gives one human line per run for ``benchbook validate FILE``.

Every reader produces the same shape, whatever tool wrote the file:

* ``config``  — model, backend, request_rate (float, ``inf`` or None), max_concurrency, num_prompts,
  date, label, plus tool-specific extras (``variant``, ``dataset_name``, ...);
* ``summary`` — the run-level figures in :data:`SUMMARY_KEYS` (None where the file does not say),
  plus tool-specific extras (``p95_itl_ms``, ``incomplete``, ...);
* ``requests`` — a polars DataFrame with :data:`REQUEST_SCHEMA` columns, or None when the file has
  no per-request records;
* ``exclusions`` — records found in the file but left out of ``requests``, each with its reason;
* ``notes`` — what the reader had to interpret (a derived figure, a sampled table, a quirk).

See docs/formats.md for the field mapping of each format.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchbook.errors import InputError
from benchbook.ingest.campaign import Exclusion

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl

__all__ = [
    "BenchmarkRun",
    "Exclusion",
    "FORMATS",
    "REQUEST_SCHEMA",
    "SUMMARY_KEYS",
    "describe",
    "detect",
    "read",
]

METRICS = ("ttft", "tpot", "itl", "e2el")
SUMMARY_KEYS: tuple[str, ...] = (
    "duration_s",
    "completed",
    "failed",
    "total_input_tokens",
    "total_output_tokens",
    "request_throughput",
    "output_throughput",
    "total_token_throughput",
    "request_goodput",
    "mean_concurrency",
    *(f"{stat}_{m}_ms" for m in METRICS for stat in ("mean", "median", "std", "p99")),
)
CONFIG_KEYS: tuple[str, ...] = (
    "model",
    "backend",
    "request_rate",
    "max_concurrency",
    "num_prompts",
    "date",
    "label",
)


def _request_schema() -> dict[str, Any]:
    import polars as pl

    return {
        "index": pl.Int64,
        "start_s": pl.Float64,  # request start, seconds since the Unix epoch (None: not recorded)
        "ttft_s": pl.Float64,
        "e2e_s": pl.Float64,
        "itl": pl.List(pl.Float64),  # gaps between streamed chunks, seconds
        "itl_mean_s": pl.Float64,  # the tool's own per-request mean inter-token latency
        "prompt_tokens": pl.Int64,
        "completion_tokens": pl.Int64,
        "success": pl.Boolean,
        "error": pl.String,
    }


REQUEST_SCHEMA = ("index", "start_s", "ttft_s", "e2e_s", "itl", "itl_mean_s", "prompt_tokens",
                  "completion_tokens", "success", "error")  # fmt: skip


@dataclass
class BenchmarkRun:
    """One benchmark run read from a tool's output file."""

    source: str
    format: str
    config: dict[str, Any]
    summary: dict[str, Any]
    requests: pl.DataFrame | None = None
    exclusions: list[Exclusion] = field(default_factory=list)
    location: str = "$"  # where in ``source`` the run sits (``$[1]``, ``line 3``)
    notes: list[str] = field(default_factory=list)
    # the tool and version (or version range) the file's layout says wrote it, e.g.
    # "GuideLLM 0.8.1 (report schema 2)", "vllm bench serve 0.30+ layout"; pages print it
    tool_version: str | None = None


# ---------------------------------------------------------------------------------------------
# helpers shared by the readers


def make_config(**values: Any) -> dict[str, Any]:
    out: dict[str, Any] = {k: None for k in CONFIG_KEYS}
    out.update(values)
    return out


def make_summary(**values: Any) -> dict[str, Any]:
    out: dict[str, Any] = {k: None for k in SUMMARY_KEYS}
    out.update(values)
    return out


def number(value: Any, file: str, where: str, *, allow_str: bool = False) -> float | int | None:
    """A JSON number (or None). ``"inf"``-like strings are accepted when ``allow_str``."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise InputError(file, where, f"expected a number, found {value!r}")
    if isinstance(value, (int, float)):
        return value
    if allow_str and isinstance(value, str):
        try:
            f = float(value.strip())
        except ValueError:
            pass
        else:
            return int(f) if f.is_integer() and "." not in value and "e" not in value.lower() else f
    raise InputError(file, where, f"expected a number, found {value!r}")


# No request of a serving benchmark takes longer than this (11.6 days); a larger time is a unit or
# encoding error, and a sum of such values overflows (1e308 ITLs ended in an OverflowError).
MAX_SECONDS = 1e6


def seconds(value: Any, file: str, where: str) -> float | None:
    """A per-request time in seconds (TTFT, ITL, latency): a finite number in [0, MAX_SECONDS], or
    None. A negative, non-finite or absurd time is bad input naming the field (it would otherwise
    be averaged in: one negative TTFT moved a mean from 139 to 37 ms)."""
    v = number(value, file, where)
    if v is None:
        return None
    if not 0 <= v <= MAX_SECONDS:  # NaN fails too
        raise InputError(file, where, f"{_impossible(v)} is not a time a request can take")
    return float(v)


# No request reads or writes this many tokens (the largest contexts are ~10⁷): a larger count is a
# unit or encoding error, and a negative one is no count at all.
MAX_REQUEST_TOKENS = 10**8


def tokens(value: Any, file: str, where: str) -> int | None:
    """A per-request token count: a whole number in [0, MAX_REQUEST_TOKENS], or None."""
    v = to_int(value, file, where)
    if v is None:
        return None
    if v < 0:
        raise InputError(file, where, f"{v} (negative) is not a token count")
    if v > MAX_REQUEST_TOKENS:
        raise InputError(file, where, f"{v} tokens is more than {MAX_REQUEST_TOKENS:.0e}: no request holds that many")
    return v


def start_span_problem(starts: Sequence[float | None], duration: Any) -> tuple[int, str] | None:
    """``(index, reason)`` of a request start that cannot belong to a run of ``duration`` seconds:
    every start lies within the run, so the starts span at most the duration (allowed: twice it, and
    a minute more — a tool's clock and its duration are taken a little apart). None when fine or not
    checkable. (A start years before the others made every queueing offset a lie.)"""
    vals = [(i, v) for i, v in enumerate(starts) if v is not None]
    if len(vals) < 2 or not isinstance(duration, (int, float)) or not duration > 0:
        return None
    allowed = max(2 * duration, duration + 60.0)
    lo, hi = min(vals, key=lambda x: x[1]), max(vals, key=lambda x: x[1])
    if hi[1] - lo[1] <= allowed:
        return None
    others = sorted(v for _, v in vals)
    mid = others[len(others) // 2]
    i, v = lo if mid - lo[1] > hi[1] - mid else hi
    return i, (
        f"start {v!r} is {abs(v - mid):.6g} s from the run's median start, but the run lasted {duration:.6g} s: "
        "not a start time of this run"
    )


def _impossible(v: float) -> str:
    if math.isnan(v) or math.isinf(v):
        return f"{v} (not finite)"
    return f"{v!r} (negative)" if v < 0 else f"{v!r} s (more than {MAX_SECONDS:g} s)"


# formats whose per-request arrays hold every request sent (so the counts must agree with them)
_EVERY_REQUEST = frozenset({"vllm-bench-serve", "sglang-bench-serving"})


def check_run_values(run: BenchmarkRun) -> None:
    """Run-level values a result file cannot truthfully hold: a duration <= 0 or not finite;
    negative or non-finite latency, throughput and count figures; a completed/failed count that
    contradicts the per-request records; per-request times out of range (:func:`seconds`, for
    readers that did not check them field by field)."""
    f, where, s = run.source, run.location, run.summary
    d = s.get("duration_s")
    if d is not None and not (isinstance(d, (int, float)) and math.isfinite(d) and d > 0):
        raise InputError(f, f"{where} duration", f"duration {d!r} s is impossible: a run lasts more than 0 s")
    for k, v in s.items():
        if not isinstance(v, (int, float)) or isinstance(v, bool) or k == "duration_s":
            continue
        if k.endswith("_ms") or k in SUMMARY_KEYS:
            if math.isnan(v) or math.isinf(v) or v < 0:
                raise InputError(f, f"{where} {k}", f"{_impossible(v).split(' (')[0]} is impossible for {k}")
    df = run.requests
    if df is None:
        return
    _check_request_times(run)
    for col in ("prompt_tokens", "completion_tokens"):  # readers that did not check them field by field
        bad = df.filter((df[col] < 0) | (df[col] > MAX_REQUEST_TOKENS)) if df[col].null_count() < df.height else None
        if bad is not None and bad.height:
            tokens(int(bad[col][0]), f, f"{where} request {bad['index'][0]} {col}")  # raises, naming it
    span = start_span_problem(df["start_s"].to_list(), s.get("duration_s"))
    if span is not None:
        raise InputError(f, f"{where} request {df['index'][span[0]]} start", span[1])
    if run.format not in _EVERY_REQUEST:  # GuideLLM keeps a sample of the requests: counts may differ
        return
    n = df.height
    ok = int(df["success"].sum()) if df["success"].null_count() < n else None
    for k in ("completed", "failed"):
        v = s.get(k)
        if isinstance(v, int) and v > n:
            raise InputError(
                f, f"{where} {k}", f"{k} = {v}, but the file holds {n} per-request records: which one is true?"
            )
    if ok is not None and isinstance(s.get("completed"), int) and s["completed"] != ok:
        raise InputError(
            f,
            f"{where} completed",
            f"completed = {s['completed']}, but {ok} of the {n} per-request records succeeded: which one is true?",
        )


def _check_request_times(run: BenchmarkRun) -> None:
    import polars as pl

    df = run.requests
    e = pl.element()
    rows = df["itl"].list.eval(e.is_not_null() & ~((e >= 0) & (e <= MAX_SECONDS))).list.any()  # no explode
    if rows.any():
        i = int(rows.arg_max())
        v = next(x for x in df["itl"][i].to_list() if x is not None and not 0 <= x <= MAX_SECONDS)
        raise InputError(
            run.source,
            f"{run.location} request {df['index'][i]} itl",
            f"{_impossible(v)} is not a time a request can take",
        )
    for col in ("ttft_s", "e2e_s", "itl_mean_s"):
        bad = df.select(pl.col("index"), pl.col(col).alias("v"))
        bad = bad.filter(pl.col("v").is_not_null() & ~((pl.col("v") >= 0) & (pl.col("v") <= MAX_SECONDS)))
        if bad.height:
            i, v = bad.row(0)
            raise InputError(
                run.source,
                f"{run.location} request {i} {col}",
                f"{_impossible(v)} is not a time a request can take ({bad.height} such value(s) in {col})",
            )


def rate(value: Any, file: str, where: str) -> float | None:
    """A request rate: a number, ``inf`` (JSON ``Infinity`` or the string ``"inf"``), or None."""
    v = number(value, file, where, allow_str=True)
    return None if v is None else float(v)


def to_int(value: Any, file: str, where: str) -> int | None:
    v = number(value, file, where, allow_str=True)
    if v is None:
        return None
    if isinstance(v, float):
        if not v.is_integer():
            raise InputError(file, where, f"expected a whole number, found {value!r}")
        v = int(v)
    return v


def requests_frame(rows: dict[str, list[Any]]) -> pl.DataFrame:
    """Build the requests table; missing columns are filled with nulls."""
    import polars as pl

    schema = _request_schema()
    n = max((len(v) for v in rows.values()), default=0)
    cols = {k: rows.get(k, [None] * n) for k in schema}
    return pl.DataFrame(cols, schema=schema)


def summary_from_requests(df: pl.DataFrame) -> dict[str, Any]:
    """Run-level figures computed from per-request records (successful requests only).

    Percentiles use linear interpolation, like numpy's default (what vLLM's benchmark uses). TPOT per
    request is ``(e2e - ttft) / (completion_tokens - 1)`` for requests with more than one token.
    ITL is pooled over all chunk gaps when the lists exist, otherwise left out.
    """
    import polars as pl

    ok = df.filter(pl.col("success"))
    out: dict[str, Any] = {
        "completed": ok.height,
        "failed": df.height - ok.height,
        "total_input_tokens": _int_sum(ok["prompt_tokens"]),
        "total_output_tokens": _int_sum(ok["completion_tokens"]),
    }
    tpot = ok.filter(pl.col("completion_tokens") > 1).select(
        ((pl.col("e2e_s") - pl.col("ttft_s")) / (pl.col("completion_tokens") - 1)).alias("x")
    )["x"]
    itl = ok["itl"].explode().drop_nulls() if ok["itl"].null_count() < ok.height else None
    for name, s in (("ttft", ok["ttft_s"]), ("tpot", tpot), ("itl", itl), ("e2el", ok["e2e_s"])):
        out.update(_stats_ms(name, s))
    return out


def _int_sum(s: pl.Series) -> int | None:
    return None if s.null_count() == len(s) else int(s.sum())


def stats_ms(name: str, s: pl.Series | None) -> dict[str, float | None]:
    """Mean, median, std (ddof 0) and p99 (linear) of ``s`` (seconds) in ms, keyed ``<stat>_<name>_ms``."""
    return _stats_ms(name, s)


def _stats_ms(name: str, s: pl.Series | None) -> dict[str, float | None]:
    if s is None or s.is_empty() or s.null_count() == len(s):
        return {f"{k}_{name}_ms": None for k in ("mean", "median", "std", "p99")}
    s = s.drop_nulls().cast(float)
    return {
        f"mean_{name}_ms": float(s.mean()) * 1000,
        f"median_{name}_ms": float(s.median()) * 1000,
        f"std_{name}_ms": float(s.std(ddof=0)) * 1000,  # numpy's default, as vLLM prints
        f"p99_{name}_ms": float(s.quantile(0.99, interpolation="linear")) * 1000,
    }


# ---------------------------------------------------------------------------------------------
# loading: one parse per file, shared by detection and reading


@dataclass
class Loaded:
    path: Path
    kind: str  # "json" (one document), "jsonl" (records), "yaml", "csv"
    doc: Any  # json/yaml: the document; jsonl: list of dicts; csv: the text

    @property
    def file(self) -> str:
        return str(self.path)

    def records(self) -> list[tuple[str, Any]]:
        """The document as located records: a list → ``$[i]``, JSONL → ``line n``, else ``$``."""
        if self.kind == "jsonl":
            return list(self.doc)
        if isinstance(self.doc, list):
            return [(f"$[{i}]", x) for i, x in enumerate(self.doc)]
        return [("$", self.doc)]


def _json_loads(data: bytes) -> Any:
    import orjson

    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        # Python's json writers emit Infinity/NaN (SGLang's request_rate); orjson rejects them.
        import json

        return json.loads(data)


def is_series(v: Any) -> bool:
    return type(v).__name__ == "Series" and type(v).__module__.startswith("polars")


def _compact(key: str, elements: list[Any]) -> Any:
    """A batch of a streamed array member: lists of plain numbers (vLLM's ``itls``) become one polars
    List(Float64) Series (8 bytes a number instead of a Python float's 32); anything else stays."""
    if not elements or not all(type(e) is list for e in elements):
        return elements
    if not all(type(x) is float or type(x) is int for e in elements for x in e):
        return elements  # a bool, a string, a null: the reader names it, field by field
    import polars as pl

    try:
        return pl.Series(elements, dtype=pl.List(pl.Float64), strict=True)
    except (TypeError, OverflowError, ValueError, pl.exceptions.PolarsError):
        return elements


def _join(key: str, parts: list[Any]) -> Any:
    if parts and all(is_series(x) for x in parts):
        import polars as pl

        return pl.concat(parts, rechunk=True)
    return [x for part in parts for x in (part.to_list() if is_series(part) else part)]


def load(path: str | Path) -> Loaded:
    """A result file parsed once. A JSON object above ``jsonfile.STREAM_BYTES`` (a ``vllm bench serve``
    result with per-request arrays) is parsed member by member, without holding the file
    (``jsonfile.stream_object``); its arrays of number lists are kept as polars Series."""
    from benchbook import jsonfile
    from benchbook.jsonfile import MAX_LLMD_YAML_BYTES, check_duplicate_keys, check_json_limits, load_yaml, read_bytes

    p = Path(path)
    suffix = p.suffix.lower()
    if suffix in (".yaml", ".yml"):  # no aliases, no duplicate keys, nesting limited; YAML's own size limit
        return Loaded(p, "yaml", load_yaml(p, MAX_LLMD_YAML_BYTES))
    if suffix not in (".yaml", ".yml", ".csv", ".jsonl"):
        import os

        try:
            size = os.stat(p).st_size  # a FIFO or a device has none: read_bytes below refuses it, naming it
        except OSError:
            size = 0  # read_bytes says why
        big = size > jsonfile.STREAM_BYTES and not jsonfile.is_gzip_name(p)  # a .gz is read whole, decompressed
        head = jsonfile.read_head(p, 4096, "result file").lstrip() if big else b""
        if head[:1] == b"{":
            try:
                doc = jsonfile.stream_object(p, loads=_json_loads, batch_hook=_compact, join=_join)
            except jsonfile.NotOneObject:
                pass  # JSON Lines (an object per line), read below
            else:
                return Loaded(p, "json", doc)
    data = read_bytes(p, "result file")  # the size limit holds
    text_head = data[:4096].lstrip()
    if suffix == ".csv" or (text_head[:1] not in (b"{", b"[") and b"," in text_head.split(b"\n", 1)[0]):
        try:
            return Loaded(p, "csv", data.decode("utf-8-sig"))
        except UnicodeDecodeError as e:
            raise InputError(p, None, f"not UTF-8 text: {e.reason} at byte {e.start}") from None
    if not text_head:
        raise InputError(p, None, "file is empty")
    keys = check_json_limits(data, p)  # nesting, before parsing (JSON and JSON Lines alike)
    if suffix != ".jsonl":
        try:
            doc = _json_loads(data)
        except ValueError as whole_err:
            first_err = whole_err
        else:
            check_duplicate_keys(data, doc, keys, p)
            return Loaded(p, "json", doc)
    else:
        first_err = None
    records: list[tuple[str, Any]] = []
    for n, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append((f"line {n}", _json_loads(line)))
        except ValueError as e:
            if first_err is not None and not records:
                raise InputError(p, None, f"not JSON, JSON Lines, YAML or CSV: {first_err}") from None
            raise InputError(p, f"line {n}", f"not valid JSON: {e}") from None
    return Loaded(p, "jsonl", records)


# ---------------------------------------------------------------------------------------------
# the registry


@dataclass(frozen=True)
class Format:
    name: str
    module: str  # benchbook.ingest.<module> has read_<something>(loaded) named by ``reader``
    reader: str
    matches: Callable[[Loaded], bool]
    what: str  # one line for docs and error messages


def _first_record(ld: Loaded) -> Any:
    recs = ld.records()
    return recs[0][1] if recs else None


def _is_dict(x: Any) -> bool:
    return isinstance(x, dict)


def _vllm(ld: Loaded) -> bool:
    r = _first_record(ld)
    return (
        ld.kind in ("json", "jsonl") and _is_dict(r) and "model_id" in r and ("mean_ttft_ms" in r or "completed" in r)
    )


def _vllm_table(ld: Loaded) -> bool:
    r = _first_record(ld)
    return ld.kind == "json" and isinstance(ld.doc, list) and _is_dict(r) and "Test name" in r and "Tput (req/s)" in r


def _sglang(ld: Loaded) -> bool:
    r = _first_record(ld)
    return (
        ld.kind in ("json", "jsonl")
        and _is_dict(r)
        and "model_id" not in r
        and ("server_info" in r or "server_args" in r or "mean_e2e_latency_ms" in r)
        and ("completed" in r or "mean_ttft_ms" in r)
    )


def _guidellm(ld: Loaded) -> bool:
    d = ld.doc
    return (
        ld.kind in ("json", "yaml")
        and _is_dict(d)
        and isinstance(d.get("benchmarks"), list)
        and bool(d["benchmarks"])
        and _is_dict(d["benchmarks"][0])
        and "metrics" in d["benchmarks"][0]
    )


def _aiperf_records(ld: Loaded) -> bool:
    r = _first_record(ld)
    return ld.kind == "jsonl" and _is_dict(r) and "metadata" in r and "metrics" in r


def _aiperf_json(ld: Loaded) -> bool:
    d = ld.doc
    if ld.kind != "json" or not _is_dict(d):
        return False
    if _is_dict(d.get("records")) and ("input_config" in d or "error_summary" in d):
        return True  # before 0.13: metrics under "records"
    # 0.13+: metrics at the top level, each {unit, avg, p50, ...}, beside aiperf_version/schema_version
    return ("aiperf_version" in d or "schema_version" in d or "input_config" in d) and any(
        _is_dict(d.get(k)) and "unit" in d[k] for k in ("request_count", "request_latency", "time_to_first_token")
    )


def _csv_header(ld: Loaded) -> str:
    return ld.doc.lstrip().split("\n", 1)[0].strip() if ld.kind == "csv" else ""


def _aiperf_csv(ld: Loaded) -> bool:
    return _csv_header(ld).startswith("Metric,avg,")


def _genai_perf_analyze(ld: Loaded) -> bool:
    return _csv_header(ld).startswith("Config Name,")


def _llmperf_summary(ld: Loaded) -> bool:
    d = ld.doc
    return ld.kind == "json" and _is_dict(d) and ("results_num_completed_requests" in d or "results_ttft_s_mean" in d)


def _llmperf_individual(ld: Loaded) -> bool:
    r = _first_record(ld)
    return (
        ld.kind == "json" and isinstance(ld.doc, list) and _is_dict(r) and "ttft_s" in r and "end_to_end_latency_s" in r
    )


# inference-perf (kubernetes-sigs/inference-perf) and llm-d Benchmark Report detectors: here with the
# registry, so the readers (ingest.inference_perf, ingest.llmd_report) import the registry, not the reverse
def is_lifecycle(doc: Any) -> bool:
    return (
        isinstance(doc, dict) and {"load_summary", "successes", "failures"} <= doc.keys() and not is_server_metrics(doc)
    )


# keys of summarize_prometheus_metrics's "successes" (the same top-level shape as a lifecycle report)
_SERVER_KEYS = ("request_prefill_time", "request_decode_time", "request_queue_time", "kv_cache_usage_percentage")


def is_server_metrics(doc: Any) -> bool:
    """``summary_prometheus_metrics.json`` / ``stage_<i>_prometheus_metrics.json``: the engine's
    figures from a Prometheus server, in the lifecycle report's outer shape."""
    ok = doc.get("successes") if isinstance(doc, dict) else None
    return (
        isinstance(ok, dict)
        and {"load_summary", "failures"} <= doc.keys()
        and "latency" not in ok
        and any(k in ok for k in _SERVER_KEYS)
    )


def is_per_request(doc: Any) -> bool:
    if not isinstance(doc, list) or not doc or not isinstance(doc[0], dict):
        return False
    r = doc[0]
    return {"start_time", "end_time", "error"} <= r.keys() and ("info" in r or "computed_metrics" in r)


def is_benchmark_report(doc: Any) -> bool:
    return (
        isinstance(doc, dict)
        and "version" in doc
        and isinstance(doc.get("results"), dict)
        and ("run" in doc or "scenario" in doc)
    )


def _inference_perf_lifecycle(ld: Loaded) -> bool:
    return ld.kind == "json" and is_lifecycle(ld.doc)


def _inference_perf_server(ld: Loaded) -> bool:
    return ld.kind == "json" and is_server_metrics(ld.doc)


def _inference_perf_per_request(ld: Loaded) -> bool:
    return ld.kind == "json" and is_per_request(ld.doc)


def _llmd_report(ld: Loaded) -> bool:
    return ld.kind in ("json", "yaml") and is_benchmark_report(ld.doc)


FORMATS: tuple[Format, ...] = (
    Format("vllm-bench-serve", "vllm", "read_bench_serve", _vllm,
           "vLLM benchmark_serving.py / `vllm bench serve` / `vllm bench sweep` result JSON"),
    Format("vllm-nightly-table", "vllm", "read_nightly_table", _vllm_table,
           "vLLM nightly-benchmark results table (list of rows with 'Test name', 'Tput (req/s)')"),
    Format("sglang-bench-serving", "sglang", "read_bench_serving", _sglang,
           "SGLang bench_serving --output-file JSONL (one line per run)"),
    Format("guidellm-report", "guidellm", "read_report", _guidellm,
           "GuideLLM benchmarks report (JSON or YAML)"),
    Format("aiperf-records", "aiperf", "read_records", _aiperf_records,
           "AIPerf profile_export.jsonl (one line per request)"),
    Format("aiperf-aggregate", "aiperf", "read_aggregate_json", _aiperf_json,
           "AIPerf profile_export_aiperf.json (aggregate)"),
    Format("aiperf-csv", "aiperf", "read_aggregate_csv", _aiperf_csv,
           "AIPerf profile_export_aiperf.csv (aggregate)"),
    Format("genai-perf-analyze", "aiperf", "read_genai_perf_analyze", _genai_perf_analyze,
           "GenAI-Perf analyze export CSV (one row per run config)"),
    Format("llmperf-summary", "llmperf", "read_summary", _llmperf_summary,
           "llmperf *_summary.json"),
    Format("llmperf-individual", "llmperf", "read_individual", _llmperf_individual,
           "llmperf *_individual_responses.json"),
    Format("inference-perf-lifecycle", "inference_perf", "read_lifecycle", _inference_perf_lifecycle,
           "inference-perf summary_lifecycle_metrics.json / stage_<i>_lifecycle_metrics.json"),
    Format("inference-perf-server-metrics", "inference_perf", "read_server_metrics", _inference_perf_server,
           "inference-perf summary_prometheus_metrics.json / stage_<i>_prometheus_metrics.json"),
    Format("inference-perf-per-request", "inference_perf", "read_per_request", _inference_perf_per_request,
           "inference-perf per_request_lifecycle_metrics.json"),
    Format("llmd-benchmark-report", "llmd_report", "read_report", _llmd_report,
           "llm-d-benchmark Benchmark Report (YAML or JSON; also inference-perf's *.partial.stage_<i>.yaml)"),
)  # fmt: skip


# Which releases of each tool write the layouts the readers know (docs/formats.md has the detail).
KNOWN_VERSIONS: dict[str, str] = {
    "vllm-bench-serve": "benchmark_serving.py (vLLM <= 0.9), `vllm bench serve` 0.10+ (tested 0.25.1 and 0.32), "
    "`vllm bench sweep`",
    "vllm-nightly-table": "vLLM nightly-benchmark tables",
    "sglang-bench-serving": "SGLang bench_serving 0.4+ and sglang.benchmark.serving (0.5.2x; with "
    "steady_state_serving's steady-state lines)",
    "guidellm-report": "GuideLLM 0.2-0.3 legacy layout; 0.4+ layout (report schema 1 in 0.5-0.6, 2 from 0.7; "
    "tested 0.8.1)",
    "aiperf-records": "AIPerf 0.1-0.12 (metadata.credit_phase, timestamp_ns) and 0.13+ "
    "(metadata.benchmark_phase, request_start_ns/request_end_ns)",
    "aiperf-aggregate": "AIPerf 0.1-0.12 (metrics under 'records') and 0.13+ (metrics at the top level)",
    "aiperf-csv": "AIPerf CSV export (all releases so far)",
    "genai-perf-analyze": "GenAI-Perf analyze export",
    "llmperf-summary": "llmperf token_benchmark_ray summary",
    "llmperf-individual": "llmperf token_benchmark_ray individual responses",
    "inference-perf-lifecycle": "inference-perf 0.7 (tested 0.7.0)",
    "inference-perf-per-request": "inference-perf 0.7 (tested 0.7.0)",
    "inference-perf-server-metrics": "inference-perf 0.7 (layout from its source; no file from a Prometheus server here)",
    "llmd-benchmark-report": "Benchmark Report 0.2 and 0.2.1 (newer versions read where their keys match)",
}


def _what_was_seen(ld: Loaded) -> str:
    if ld.kind == "csv":
        return f"CSV with header {_csv_header(ld)[:80]!r}"
    r = _first_record(ld)
    shape = {"json": "JSON", "jsonl": "JSON Lines", "yaml": "YAML"}[ld.kind]
    if isinstance(ld.doc, list) and ld.kind != "jsonl":
        shape += f" list of {len(ld.doc)}"
    if _is_dict(r):
        keys = sorted(map(str, r))
        more = f" (+{len(keys) - 12} more)" if len(keys) > 12 else ""
        return f"{shape} with keys {', '.join(keys[:12])}{more}"
    return f"{shape} holding {type(r).__name__}"


def _identify(ld: Loaded) -> Format:
    for f in FORMATS:
        if f.matches(ld):
            return f
    known = "; ".join(f"{f.name} ({KNOWN_VERSIONS.get(f.name, '?')})" for f in FORMATS)
    raise InputError(ld.file, None, f"unknown benchmark format: found {_what_was_seen(ld)}; known formats: {known}")


def detect(path: str | Path) -> str:
    """The name of the format of ``path`` (see :data:`FORMATS`); InputError if unknown."""
    return _identify(load(path)).name


def read(path: str | Path) -> list[BenchmarkRun]:
    """Read every run in ``path``; InputError (file, location, reason) on bad input. Read once per
    analysis (:mod:`benchbook.reads`): the runs are shared, never changed after reading."""
    from benchbook.reads import cached

    return cached("result file", path, lambda: read_loaded(load(path)))


def read_loaded(ld: Loaded) -> list[BenchmarkRun]:
    """:func:`read` of a file already parsed (``benchbook validate`` parses a ``.json`` once)."""
    import importlib

    fmt = _identify(ld)
    module = importlib.import_module(f"benchbook.ingest.{fmt.module}")
    runs: list[BenchmarkRun] = getattr(module, fmt.reader)(ld)
    for r in runs:
        r.format = fmt.name
        check_run_values(r)
    return runs


# ---------------------------------------------------------------------------------------------
# one line per run


def _fmt_num(v: Any, unit: str = "") -> str:
    if v is None:
        return "?"
    if isinstance(v, float):
        if math.isinf(v):
            return "inf"
        return f"{v:.3g}{unit}" if abs(v) < 100 else f"{v:.0f}{unit}"
    return f"{v}{unit}"


def describe(runs: Iterable[BenchmarkRun]) -> list[str]:
    """One line per run: format, where, model, rate/concurrency, completed/failed, duration."""
    lines = []
    for r in runs:
        c, s = r.config, r.summary
        parts = [
            # where in the file, when the file holds several runs ("$" alone is the whole file)
            r.format if r.location in ("", "$") else f"{r.format} {r.location}",
            f"[{r.tool_version or 'version not stated'}]",
            f"model={c.get('model') or '?'}",
            f"rate={_fmt_num(c.get('request_rate'))}",
            f"concurrency={_fmt_num(c.get('max_concurrency'))}",
            f"completed={_fmt_num(s.get('completed'))}",
            f"failed={_fmt_num(s.get('failed'))}",
        ]
        if s.get("incomplete"):
            parts.append(f"incomplete={s['incomplete']}")
        parts.append(f"duration={_fmt_num(s.get('duration_s'), ' s')}")
        if r.requests is not None:
            parts.append(f"requests={r.requests.height}")
        if r.exclusions:
            parts.append(f"excluded={len(r.exclusions)}")
        lines.append("  ".join(parts))
    return lines


def object_at(ld: Loaded, value: Any, where: str) -> dict[str, Any]:
    """The JSON object at ``where`` (absent or null: an empty one); InputError naming the place if it
    is something else."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InputError(ld.file, where, f"expected an object, found {type(value).__name__}")
    return value


def check_record(ld: Loaded, where: str, rec: Any) -> dict[str, Any]:
    if not isinstance(rec, dict):
        raise InputError(ld.file, where, f"expected an object, found {type(rec).__name__}")
    return rec


def same_length(file: str, where: str, arrays: dict[str, Sequence[Any] | None]) -> int | None:
    """Length shared by the present per-request arrays; InputError naming the odd one out."""
    lens = {k: len(v) for k, v in arrays.items() if v is not None}
    if not lens:
        return None
    first_key, n = next(iter(lens.items()))
    for k, m in lens.items():
        if m != n:
            raise InputError(file, f"{where}.{k}", f"has {m} entries but {first_key} has {n}")
    return n
