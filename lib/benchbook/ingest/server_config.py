"""What a server ran, as the engine states it — not what was asked for.

Sources, each optional, read from one server process's files:

* vLLM's ``vllm:cache_config_info`` info series in any ``/metrics`` capture (``.prom``): its labels
  are the cache configuration the engine runs with (``enable_prefix_caching``, ``block_size``,
  ``num_gpu_blocks``, ``kv_cache_size_tokens`` …). Every capture of one process states the same
  labels; two different label sets in one run folder mean two servers' files were mixed, which is
  refused naming both files.
* vLLM's server log: the ``non-default args: {…}`` line (what was requested on the command line)
  and the engine's ``Initializing a V1 LLM engine (…) with config: …`` line (what the engine runs:
  ``enforce_eager``, ``enable_prefix_caching``, ``max_seq_len``, the CUDA-graph mode …), and the
  ``Running: N reqs`` stats lines (the most requests the engine ever ran at once).
  The same log's startup lines state what the engine sized: ``Model loading took 13.91 GiB`` (the
  weights one GPU holds), ``Available KV cache memory: 113.55 GiB``, ``GPU KV cache size: 930,192
  tokens``, ``Maximum concurrency for 8,192 tokens per request: 113.55x``, ``Using max model len
  8192`` and ``Chunked prefill is enabled with max_num_batched_tokens=8192``.
* The server's ``GET /version`` answer saved as ``version.json`` (``{"version": "0.26.0"}``).
* SGLang's ``server_info`` / ``server_args`` (the ``/get_server_info`` answer, a JSON file) and the
  seeds' ``pocket`` startup line (``batch width 1 (engine declares max_slots=8, …), prefill budget 0``).

:func:`read_server_config` gathers them into a :class:`ServerConfig`; :func:`switches` derives the
switches an ablation compares (``max_num_seqs``, ``enforce_eager``, ``cudagraph_mode``,
``enable_prefix_caching`` …) from what ran, the requested value only where nothing states what ran;
:func:`settings` every setting the files state, each in its own unit with the file that stated it
(:data:`SETTINGS`: the KV cache's size in tokens and blocks, ``gpu_memory_utilization``, the
weights' size, ``max_model_len``, ``max_num_batched_tokens``, block size, cache dtype, the parallel
sizes, quantization, speculative decoding, the engine's version); :func:`knobs` the ones a person
sets (compared exactly between arms; the sizes the engine derived from them are compared by
``analysis.what_ran`` with a tolerance).
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchbook.errors import InputError

INFO_FAMILY = "vllm:cache_config_info"
_NON_DEFAULT = re.compile(r"non-default args:\s*(\{.*\})\s*$")
_ENGINE = re.compile(r"Initializing a V\d+ LLM engine \((?P<version>[^)]*)\) with config:\s*(?P<body>.*)$")
_RUNNING = re.compile(r"Running:\s*(\d+)\s*reqs")
_CUDAGRAPH = re.compile(r"'cudagraph_mode':\s*<CUDAGraphMode\.(\w+)")
# vLLM's startup lines: what the engine sized (name -> pattern, value converter)
_LOG_FACTS = {
    "weights_gib": re.compile(r"Model loading took ([0-9.]+) ?GiB"),
    "kv_cache_gib": re.compile(r"Available KV cache memory: ([0-9.]+) ?GiB"),
    "kv_cache_tokens": re.compile(r"KV cache size: ([0-9,]+) tokens"),  # GPU …, CPU … (the CPU build)
    "max_model_len": re.compile(r"Using max model len (\d+)"),
    "max_num_batched_tokens": re.compile(r"max_num_batched_tokens=(\d+)"),
    "kv_cache_max_concurrency": re.compile(r"Maximum concurrency for [0-9,]+ tokens per request: ([0-9.]+)x"),
}
# engine-config keys worth carrying (the line holds ~60; these are the ones a reader compares)
ENGINE_KEYS = (
    "model",
    "dtype",
    "max_seq_len",
    "tensor_parallel_size",
    "pipeline_parallel_size",
    "data_parallel_size",
    "quantization",
    "enforce_eager",
    "kv_cache_dtype",
    "enable_prefix_caching",
    "enable_chunked_prefill",
    "seed",
    "speculative_config",
)
CACHE_KEYS = (
    "block_size",
    "cache_dtype",
    "enable_prefix_caching",
    "gpu_memory_utilization",
    "num_gpu_blocks",
    "kv_cache_size_tokens",
    "kv_cache_max_concurrency",
    "kv_cache_memory_bytes",
    "num_gpu_blocks_override",
)
# switches: name -> (where it ran, where it was requested), in display order
SWITCHES = ("max_num_seqs", "enforce_eager", "cudagraph_mode", "enable_prefix_caching", "enable_chunked_prefill")


@dataclass
class ServerConfig:
    """One server process's configuration as its files state it; ``sources`` says which file said what."""

    cache_info: dict[str, str] = field(default_factory=dict)  # labels of vllm:cache_config_info
    cache_info_file: str | None = None
    requested: dict[str, Any] = field(default_factory=dict)  # vLLM `non-default args`
    engine: dict[str, str] = field(default_factory=dict)  # the engine-config line, ENGINE_KEYS only
    engine_version: str | None = None
    engine_file: str | None = None  # the log whose engine-config line filled ``engine``
    requested_file: str | None = None  # the log whose ``non-default args`` filled ``requested``
    cudagraph_mode: str | None = None
    max_running: int | None = None  # most `Running: N reqs` in the log's stats lines
    startup: dict[str, Any] = field(default_factory=dict)  # the seeds' pocket line
    server_info: dict[str, Any] = field(default_factory=dict)  # SGLang /get_server_info
    log_facts: dict[str, int | float] = field(default_factory=dict)  # _LOG_FACTS: the startup lines' sizes
    log_file: str | None = None  # the log that stated log_facts
    version: str | None = None  # GET /version (version.json)
    version_file: str | None = None
    sources: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.cache_info or self.requested or self.engine or self.startup or self.server_info)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"switches": switches(self), "sources": list(self.sources)}
        if self.requested:
            out["requested"] = {k: _plain(v) for k, v in self.requested.items()}
        if self.engine:
            out["engine"] = dict(self.engine)
        if self.engine_version:
            out["engine_version"] = self.engine_version
        if self.cache_info:
            out["cache"] = {k: self.cache_info[k] for k in CACHE_KEYS if k in self.cache_info}
        if self.max_running is not None:
            out["max_running"] = self.max_running
        if self.startup:
            out["startup"] = dict(self.startup)
        if self.server_info:
            out["server_info"] = {k: _plain(v) for k, v in self.server_info.items() if _scalar(v)}
        if self.log_facts:
            out["log"] = dict(self.log_facts)
        if self.version:
            out["version"] = self.version
        stated = settings(self)
        if stated:
            out["settings"] = stated
        return out


def _scalar(v: Any) -> bool:
    return v is None or isinstance(v, (str, int, float, bool))


def _plain(v: Any) -> Any:
    return v if _scalar(v) else str(v)


def cache_config_info(path: Path) -> dict[str, str] | None:
    """The labels of the ``vllm:cache_config_info`` series in one capture (None when it has none;
    the ``engine`` label, an engine index, is dropped)."""
    from benchbook.metrics import prometheus

    snap = prometheus.read(path, [INFO_FAMILY])
    series = snap.series(INFO_FAMILY)
    if not series:
        return None
    if len(series) > 1:
        engines = sorted({dict(k).get("engine", "?") for k in series})
        labels = [dict(k) for k in series]
        first = {k: v for k, v in labels[0].items() if k != "engine"}
        if any({k: v for k, v in x.items() if k != "engine"} != first for x in labels[1:]):
            raise InputError(
                path, INFO_FAMILY, f"{len(series)} series (engines {', '.join(engines)}) state different cache configs"
            )
    return {k: v for k, v in dict(next(iter(series))).items() if k != "engine"}


def parse_log(text: str, cfg: ServerConfig, file: str, startup_parser=None) -> None:
    """Fill ``cfg`` from a server log's text (vLLM's args and engine lines, the stats lines, and with
    ``startup_parser`` — ``analysis.clamps.parse_startup_line``, passed in by the caller since ingest
    does not import analysis — the seeds' pocket startup line)."""
    for line in text.splitlines():
        m = _NON_DEFAULT.search(line)
        if m and not cfg.requested:
            try:
                val = ast.literal_eval(m.group(1))
            except (ValueError, SyntaxError):
                val = None
            if isinstance(val, dict):
                cfg.requested = {str(k): v for k, v in val.items()}
                cfg.requested_file = file
                cfg.sources.append(f"{file}: non-default args")
            continue
        m = _ENGINE.search(line)
        if m and not cfg.engine:
            cfg.engine_version = m.group("version")
            cfg.engine_file = file
            body = m.group("body")
            for key in ENGINE_KEYS:
                km = re.search(rf"(?:^|,\s*){re.escape(key)}=('[^']*'|[^,]*)", body)
                if km:
                    cfg.engine[key] = _balanced(body, km.start(1)) if "(" in km.group(1) else km.group(1).strip("'")
            g = _CUDAGRAPH.search(body)
            if g:
                cfg.cudagraph_mode = g.group(1)
            cfg.sources.append(f"{file}: engine config")
            continue
        m = _RUNNING.search(line)
        if m:
            cfg.max_running = max(cfg.max_running or 0, int(m.group(1)))
            continue
        for name, pat in _LOG_FACTS.items():
            m = pat.search(line)
            if m and name not in cfg.log_facts:
                cfg.log_facts[name] = _value(m.group(1), name)
                cfg.log_file = file
    if startup_parser is not None and "batch width" in text.lower():
        try:
            s = startup_parser(text, file)
        except InputError:
            pass  # the clamps check reports a garbled startup line itself
        else:
            cfg.startup = {
                "batch_width": s.batch_width,
                "max_slots": s.max_slots,
                "continuous_batching": s.continuous_batching,
                "prefill_budget": s.prefill_budget,
            }
            cfg.sources.append(f"{file}: startup line {s.line}")
    if cfg.max_running is not None:
        cfg.sources.append(f"{file}: stats lines (most requests running at once)")
    if cfg.log_file == file:
        cfg.sources.append(f"{file}: startup sizes ({', '.join(sorted(cfg.log_facts))})")


def _balanced(text: str, start: int) -> str:
    """The value starting at ``start`` up to the comma that closes it at bracket depth 0
    (``SpeculativeConfig(method='ngram', num_spec_tokens=3)``)."""
    depth = 0
    for i in range(start, len(text)):
        c = text[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth <= 0:
            return text[start:i].strip()
    return text[start:].strip()


START_FAMILY = "process_start_time_seconds"
_MODEL_LABEL = re.compile(r'\bmodel_name="((?:[^"\\]|\\.)*)"')
START_TOLERANCE_S = 1.0  # one process states one start time (a collector recomputes it per scrape)


def _capture_facts(p: Path) -> tuple[dict[str, str] | None, float | None, frozenset[str]]:
    """(cache config labels, process start time, served model names) one capture states."""
    from benchbook.metrics import prometheus

    text = prometheus.read_capture(p)
    start = prometheus.parse(text, p, [START_FAMILY]).series(START_FAMILY)
    models = frozenset(m.group(1) for m in _MODEL_LABEL.finditer(text))
    return cache_config_info(p), (next(iter(start.values())) if len(start) == 1 else None), models


def _two_servers(p: Path, other: str, what: str) -> InputError:
    return InputError(
        p,
        "-",
        f"{what} than {other}: these files come from two server processes; put each process's files in "
        "its own run folder",
    )


def check_one_server(captures: list[Path], results: list[Path] = (), named: list[tuple[Path, str]] = ()) -> None:
    """The files of one run folder come from one server process: every capture states the same process
    start time (``process_start_time_seconds``) and serves the same model (``model_name`` labels), and
    the result files (``results``: a tool's output) and capture folders (``named``: ``(capture.json,
    model)``) name one model. Otherwise InputError naming both files: the ladder would mix two servers
    whose cache configuration may well agree."""
    first_start: tuple[float, Path] | None = None
    first_models: tuple[frozenset[str], Path] | None = None
    for p in sorted(captures):
        try:
            _info, start, models = _capture_facts(p)
        except InputError:
            continue  # a capture that does not parse is the run reader's to report
        if start is not None:
            if first_start is None:
                first_start = (start, p)
            elif abs(start - first_start[0]) > START_TOLERANCE_S:
                raise _two_servers(
                    p,
                    str(first_start[1]),
                    f"states {START_FAMILY} {start:.3f}, another process start ({first_start[0]:.3f})",
                )
        if models:
            if first_models is None:
                first_models = (models, p)
            elif models != first_models[0]:
                raise _two_servers(
                    p,
                    str(first_models[1]),
                    f"serves model {', '.join(sorted(models))!r}, another model "
                    f"({', '.join(sorted(first_models[0]))!r})",
                )
    from benchbook.ingest import formats

    seen: tuple[str, str, Path] | None = None
    pairs = list(named)
    for f in results:
        try:
            pairs += [(f, str(b.config.get("model"))) for b in formats.read(f) if b.config.get("model")]
        except InputError:
            continue  # the results run's reader reports it
    for f, model in pairs:
        key = model.rstrip("/").rsplit("/", 1)[-1].lower()  # a served name and a path to it agree
        if seen is None:
            seen = (key, model, f)
        elif key != seen[0]:
            raise _two_servers(f, str(seen[2]), f"names model {model!r}, another model ({seen[1]!r})")


def read_server_config(
    captures: list[Path], logs: list[Path], infos: list[Path] = (), startup_parser=None, versions: list[Path] = ()
) -> ServerConfig:
    """What one server process ran, from its captures, logs, SGLang server_info files and saved
    ``/version`` answers.

    Raises InputError naming both files when two captures state different cache configs (two
    servers' files in one run folder; :func:`check_one_server` checks start times and models)."""
    from benchbook.jsonfile import load_json, read_text

    cfg = ServerConfig()
    for p in sorted(captures):
        try:
            info = cache_config_info(p)
        except InputError:
            continue  # a capture that does not parse is the run reader's to report
        if info is None:
            continue
        if not cfg.cache_info:
            cfg.cache_info, cfg.cache_info_file = info, str(p)
            continue
        if info != cfg.cache_info:
            diff = sorted(k for k in set(info) | set(cfg.cache_info) if info.get(k) != cfg.cache_info.get(k))
            shown = ", ".join(f"{k} {cfg.cache_info.get(k)} vs {info.get(k)}" for k in diff[:4])
            raise InputError(
                p,
                INFO_FAMILY,
                f"states a different server configuration than {cfg.cache_info_file} ({shown}): these files "
                "come from two server processes; put each process's files in its own run folder",
            )
    if cfg.cache_info_file:
        cfg.sources.append(f"{Path(cfg.cache_info_file).name}: {INFO_FAMILY}")
    for p in logs:
        parse_log(read_text(p), cfg, p.name, startup_parser)
    for p in infos:
        doc = load_json(p)
        info = doc.get("server_info", doc.get("server_args", doc)) if isinstance(doc, dict) else None
        if isinstance(info, dict):
            cfg.server_info = info
            cfg.sources.append(f"{p.name}: server_info")
    for p in versions:
        doc = load_json(p)
        if isinstance(doc, dict) and isinstance(doc.get("version"), str) and not cfg.version:
            cfg.version, cfg.version_file = doc["version"], p.name
            cfg.sources.append(f"{p.name}: GET /version")
    return cfg


def _bool(v: Any) -> bool | None:
    if isinstance(v, bool):
        return v
    s = str(v).strip().lower()
    return True if s in ("true", "1", "yes", "on") else False if s in ("false", "0", "no", "off") else None


def switches(cfg: ServerConfig) -> dict[str, Any]:
    """The switches an ablation compares, from what ran (engine line, info series, startup line,
    server_info), else from what was requested; a switch nothing states is left out."""
    out: dict[str, Any] = {}
    req, eng, si = cfg.requested, cfg.engine, cfg.server_info
    if cfg.startup:
        out["max_num_seqs"] = cfg.startup["batch_width"]
    elif "max_running_requests" in si:
        out["max_num_seqs"] = si["max_running_requests"]
    elif "max_num_seqs" in req:
        out["max_num_seqs"] = req["max_num_seqs"]
    elif req or eng:
        out["max_num_seqs"] = "default"
    for key in ("enforce_eager", "enable_prefix_caching", "enable_chunked_prefill"):
        val = cfg.cache_info.get(key) if key == "enable_prefix_caching" else None
        val = val if val is not None else eng.get(key)
        if val is None and key in req:
            val = req[key]
        if val is None and key == "enable_prefix_caching" and "disable_radix_cache" in si:
            val = not _bool(si["disable_radix_cache"])
        if val is None and key == "enforce_eager" and "disable_cuda_graph" in si:
            val = si["disable_cuda_graph"]
        if val is not None:
            b = _bool(val)
            out[key] = b if b is not None else str(val)
    if cfg.cudagraph_mode:
        out["cudagraph_mode"] = cfg.cudagraph_mode
    return {k: out[k] for k in SWITCHES if k in out}


# every setting :func:`settings` reads: name -> (unit, kind). "knob": a value a person sets (arms that
# state two values differ in what ran); "size": what the engine derived from the knobs and the
# hardware (the KV cache's capacity, the weights' size), compared with a tolerance
SETTINGS: dict[str, tuple[str, str]] = {
    "engine_version": ("", "knob"),
    "gpu_memory_utilization": ("of GPU memory", "knob"),
    "mem_fraction_static": ("of GPU memory", "knob"),
    "kv_cache_memory_bytes": ("bytes", "knob"),
    "num_gpu_blocks_override": ("blocks", "knob"),
    "kv_cache_tokens": ("tokens", "size"),
    "num_gpu_blocks": ("blocks", "size"),
    "kv_cache_gib": ("GiB", "size"),
    "kv_cache_max_concurrency": ("requests of max_model_len", "size"),
    "weights_gib": ("GiB", "size"),
    "block_size": ("tokens", "knob"),
    "kv_cache_dtype": ("", "knob"),
    "dtype": ("", "knob"),
    "max_model_len": ("tokens", "knob"),
    "max_num_batched_tokens": ("tokens", "knob"),
    "max_num_seqs": ("requests", "knob"),
    "tensor_parallel_size": ("GPUs", "knob"),
    "pipeline_parallel_size": ("stages", "knob"),
    "data_parallel_size": ("replicas", "knob"),
    "quantization": ("", "knob"),
    "speculative": ("", "knob"),
}
_OFF_MEANS_NONE = ("quantization", "speculative")  # "None" stated: the engine runs without it


def _value(v: Any, name: str) -> Any:
    """A stated value in its plain type (``"0.92"`` → 0.92, ``"True"`` → True, ``torch.bfloat16`` →
    ``bfloat16``); None where the file states nothing (``None``, empty) — except quantization and
    speculative decoding, whose ``None`` states that the engine runs without them (``"none"``)."""
    if isinstance(v, bool) or isinstance(v, (int, float)):
        return v
    if v is None or str(v).strip() in ("", "None", "none", "null"):
        return "none" if name in _OFF_MEANS_NONE and v is not None else None
    t = str(v).strip().strip("'\"")
    if t in ("True", "False", "true", "false"):
        return t in ("True", "true")
    try:
        f = float(t.replace(",", ""))
    except ValueError:
        return t.removeprefix("torch.")
    return int(f) if f.is_integer() and "." not in t else f


def settings(cfg: ServerConfig) -> dict[str, dict[str, Any]]:
    """Every setting of :data:`SETTINGS` the process's files state: name -> ``{"value", "unit",
    "kind", "source"}``, what ran before what was asked (the info series, the engine-config line and
    the startup sizes, then SGLang's server_info, then the command line's ``non-default args``)."""
    ci, req, eng, si, lf = cfg.cache_info, cfg.requested, cfg.engine, cfg.server_info, cfg.log_facts
    info = f"{Path(cfg.cache_info_file).name}: {INFO_FAMILY}" if cfg.cache_info_file else ""
    engine = f"{cfg.engine_file}: engine config" if cfg.engine_file else ""
    log = f"{cfg.log_file}: startup line" if cfg.log_file else ""
    asked = f"{cfg.requested_file}: non-default args (requested)" if cfg.requested_file else ""
    sinfo = "server_info"
    ev = cfg.engine_version.removeprefix("v") if cfg.engine_version else None
    cands: dict[str, list[tuple[Any, str]]] = {
        "engine_version": [
            (cfg.version, f"{cfg.version_file}: GET /version"),
            (ev, engine),
            (si.get("version"), sinfo),
        ],
        "gpu_memory_utilization": [
            (ci.get("gpu_memory_utilization"), info),
            (req.get("gpu_memory_utilization"), asked),
        ],
        "mem_fraction_static": [(si.get("mem_fraction_static"), sinfo)],
        "kv_cache_memory_bytes": [(ci.get("kv_cache_memory_bytes"), info), (req.get("kv_cache_memory_bytes"), asked)],
        "num_gpu_blocks_override": [
            (ci.get("num_gpu_blocks_override"), info),
            (req.get("num_gpu_blocks_override"), asked),
        ],
        "kv_cache_tokens": [
            (ci.get("kv_cache_size_tokens"), info),
            (lf.get("kv_cache_tokens"), log),
            (si.get("max_total_num_tokens"), sinfo),
        ],
        "num_gpu_blocks": [(ci.get("num_gpu_blocks"), info)],
        "kv_cache_gib": [(lf.get("kv_cache_gib"), log)],
        "kv_cache_max_concurrency": [
            (ci.get("kv_cache_max_concurrency"), info),
            (lf.get("kv_cache_max_concurrency"), log),
        ],
        "weights_gib": [(lf.get("weights_gib"), log)],
        "block_size": [(ci.get("block_size"), info), (si.get("page_size"), sinfo), (req.get("block_size"), asked)],
        "kv_cache_dtype": [
            (ci.get("cache_dtype"), info),
            (eng.get("kv_cache_dtype"), engine),
            (si.get("kv_cache_dtype"), sinfo),
            (req.get("kv_cache_dtype"), asked),
        ],
        "dtype": [(eng.get("dtype"), engine), (si.get("dtype"), sinfo), (req.get("dtype"), asked)],
        "max_model_len": [
            (eng.get("max_seq_len"), engine),
            (lf.get("max_model_len"), log),
            (si.get("context_length"), sinfo),
            (req.get("max_model_len"), asked),
        ],
        "max_num_batched_tokens": [
            (lf.get("max_num_batched_tokens"), log),
            (si.get("chunked_prefill_size"), sinfo),
            (req.get("max_num_batched_tokens"), asked),
        ],
        "max_num_seqs": [
            (cfg.startup.get("batch_width"), "startup line"),
            (si.get("max_running_requests"), sinfo),
            (req.get("max_num_seqs"), asked),
        ],
        "tensor_parallel_size": [
            (eng.get("tensor_parallel_size"), engine),
            (si.get("tp_size"), sinfo),
            (req.get("tensor_parallel_size"), asked),
        ],
        "pipeline_parallel_size": [
            (eng.get("pipeline_parallel_size"), engine),
            (si.get("pp_size"), sinfo),
            (req.get("pipeline_parallel_size"), asked),
        ],
        "data_parallel_size": [
            (eng.get("data_parallel_size"), engine),
            (si.get("dp_size"), sinfo),
            (req.get("data_parallel_size"), asked),
        ],
        "quantization": [
            (eng.get("quantization"), engine),
            (si.get("quantization"), sinfo),
            (req.get("quantization"), asked),
        ],
        "speculative": [
            (eng.get("speculative_config"), engine),
            (si.get("speculative_algorithm"), sinfo),
            (req.get("speculative_config"), asked),
        ],
    }
    out: dict[str, dict[str, Any]] = {}
    for name, options in cands.items():
        for raw, src in options:
            if not src or raw is None:
                continue
            v = _value(raw, name)
            if v is None:
                continue
            unit, kind = SETTINGS[name]
            out[name] = {"value": v, "unit": unit, "kind": kind, "source": src}
            break
    return out


def knobs(cfg: ServerConfig) -> dict[str, Any]:
    """The settings a person sets (:data:`SETTINGS` kind "knob", besides :data:`SWITCHES`), as
    their values: what an arm's environment carries next to its switches."""
    return {k: v["value"] for k, v in settings(cfg).items() if v["kind"] == "knob" and k not in SWITCHES}


def requested_switches(cfg: ServerConfig) -> dict[str, Any]:
    """What the command line asked for, in the switches' names (``non-default args``)."""
    return {k: cfg.requested[k] for k in SWITCHES if k in cfg.requested}


def clamps(cfg: ServerConfig, max_concurrency: int | None) -> list[str]:
    """Where what ran is less than what was asked: a requested ``max_num_seqs`` above the most
    requests the engine ever ran although the load offered that many (``max_num_seqs 8 requested,
    1 ran``), or a startup line whose batch width is below the engine's declared slots."""
    out = []
    asked = cfg.requested.get("max_num_seqs")
    if (
        isinstance(asked, int)
        and cfg.max_running is not None
        and max_concurrency is not None
        and max_concurrency >= asked > cfg.max_running
    ):
        out.append(
            f"max_num_seqs {asked} requested, {cfg.max_running} ran (the most requests running at once in the "
            f"log's stats lines, under a load of {max_concurrency} concurrent requests)"
        )
    if cfg.startup and cfg.startup["batch_width"] < cfg.startup["max_slots"]:
        out.append(
            f"batch width {cfg.startup['batch_width']} ran, the engine declares max_slots={cfg.startup['max_slots']}"
        )
    return out


def dumps(cfg: ServerConfig) -> str:  # pragma: no cover - debugging aid
    return json.dumps(cfg.as_dict(), indent=2, default=str)
