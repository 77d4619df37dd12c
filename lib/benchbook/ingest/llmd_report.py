"""llm-d-benchmark's Benchmark Report (BR), versions 0.2 and 0.2.1, in YAML or JSON.

A BR is one document per run (stage): ``version``, ``run`` (``uid``, ``eid``, ``time``),
``scenario`` (``stack``: one component per deployed piece, ``load``: what the harness sent) and
``results`` (``request_performance.aggregate`` / ``.time_series``, ``observability``,
``component_health``). Field names follow the pydantic schema that inference-perf 0.7 ships as
``inference_perf/reportgen/br/v0_2`` (``schema_v0_2.py``, ``schema_v0_2_1.py``: 0.2.1 only adds
multi-modal payload statistics); inference-perf itself writes the ``version``/``run``/``results``
slice of one (``inference-perf.partial.stage_<i>.yaml``), llm-d-benchmark adds the ``scenario``.

What is read:

- **stack** (``scenario.stack[].standardized`` of ``kind: inference_engine``): ``role``
  (``replica`` | ``prefill`` | ``decode``), ``replicas``, ``model.name``, ``tool``/``tool_version``
  (the engine), ``accelerator.model``, ``accelerator.count`` and ``accelerator.parallelism``
  (``tp``, ``dp``, ``dp_local``, ``workers``, ``ep``, ``pp``). They become deployment fields of the
  run's configuration (``config["params"]``: ``prefill_gpus``, ``decode_gpus``, ``accelerator`` …;
  ``disaggregated``, ``prefill_servers``/``decode_servers``) and ``config["stack"]``, one dict per
  component, for :mod:`benchbook.analysis.pd_report`.
- **load** (``scenario.load.standardized``): ``tool``/``tool_version`` (the harness),
  ``input_seq_len.value``, ``output_seq_len.value``, ``rate_qps``, ``concurrency``, ``source``.
- **aggregates** (``results.request_performance.aggregate``): ``requests`` (``total``,
  ``failures``, ``incomplete``, ``input_length``/``output_length`` means), ``latency``
  (``time_to_first_token``, ``time_per_output_token``, ``inter_token_latency``,
  ``request_latency``: Statistics with ``units`` s or ms, ``mean``, ``p50``, ``p90``, ``p99``),
  ``throughput`` (``input_token_rate``, ``output_token_rate``, ``total_token_rate``,
  ``request_rate``: Statistics, ``mean`` read).
- **time series**: the number of series and points is noted (``results.request_performance.
  time_series``); they are not per-request records.
- **observability** (``results.observability.components[]``): per component label its
  ``aggregate`` Statistics (``mean`` of each: ``kv_cache_usage``, ``gpu_memory_usage``,
  ``power_consumption`` …) into ``config["observability"]``. KV transfers come from vLLM's NIXL
  connector series as llm-d-benchmark reports them beside the components
  (``results.observability.vllm_nixl_bytes_transferred_sum``/``_count``,
  ``vllm_nixl_xfer_time_seconds_sum``/``_count``: per pod, Statistics of each series; checked
  against llm-d-benchmark's ``br_v0_2_1_example.yaml``): bytes and seconds per transfer, as
  ``kv_transfer_bytes``/``kv_transfer_time`` of that pod (:func:`_nixl_transfers`).
- **health** (``results.component_health[]``): ``total_restarts``, ``failed_replicas`` per label.

A ``version`` newer than 0.2.1 is read where its keys match what 0.2.1 has; the run's notes and
``tool_version`` say which version it was and list every key that was not read.
"""

from __future__ import annotations

import math
from typing import Any

from benchbook.errors import InputError
from benchbook.ingest.formats import (
    BenchmarkRun,
    Loaded,
    make_config,
    make_summary,
    number,
    object_at,
)

KNOWN = ("0.2", "0.2.1")
# keys benchbook reads or knows to skip at each place (of 0.2.1); anything else is listed as not read
_KNOWN_KEYS: dict[str, set[str]] = {
    "$": {"version", "run", "scenario", "results"},
    "$.scenario": {"stack", "load"},
    "$.results": {"request_performance", "session_performance", "observability", "profiling", "component_health"},
    "$.results.request_performance": {"aggregate", "time_series"},
    "$.results.request_performance.aggregate": {"requests", "latency", "throughput"},
}
_LATENCY = {
    "ttft": "time_to_first_token",
    "tpot": "time_per_output_token",
    "itl": "inter_token_latency",
    "e2el": "request_latency",
}
_MS = {"s": 1000.0, "ms": 1.0, "s/token": 1000.0, "ms/token": 1.0}


def _version_tuple(v: str) -> tuple[int, ...] | None:
    try:
        return tuple(int(x) for x in v.split("."))
    except ValueError:
        return None


def _list(ld: Loaded, v: Any, where: str) -> list[Any]:
    if v is None:
        return []
    if not isinstance(v, list):
        raise InputError(ld.file, where, f"expected a list, found {type(v).__name__}")
    return v


def _stat(ld: Loaded, st: Any, where: str, key: str = "mean") -> float | None:
    st = object_at(ld, st, where)
    return number(st.get(key), ld.file, f"{where}.{key}")


def _latency_ms(ld: Loaded, st: Any, where: str, key: str) -> float | None:
    st = object_at(ld, st, where)
    v = number(st.get(key), ld.file, f"{where}.{key}")
    if v is None:
        return None
    units = st.get("units")
    if units not in _MS:
        raise InputError(ld.file, f"{where}.units", f"latency units {units!r}: expected one of {sorted(_MS)}")
    return v * _MS[units]


def _engine(ld: Loaded, comp: Any, where: str) -> dict[str, Any] | None:
    comp = object_at(ld, comp, where)
    std = object_at(ld, comp.get("standardized"), f"{where}.standardized")
    if std.get("kind") != "inference_engine":
        return None
    acc = object_at(ld, std.get("accelerator"), f"{where}.standardized.accelerator")
    par = object_at(ld, acc.get("parallelism"), f"{where}.standardized.accelerator.parallelism")
    role = std.get("role")
    if role not in ("replica", "prefill", "decode"):
        raise InputError(ld.file, f"{where}.standardized.role", f"role {role!r}: expected replica, prefill or decode")
    replicas = number(std.get("replicas", 1), ld.file, f"{where}.standardized.replicas")
    count = number(acc.get("count"), ld.file, f"{where}.standardized.accelerator.count")
    # per-GPU figures divide by these: a zero or negative count would put them over the wrong GPUs
    for v, key in ((replicas, "replicas"), (count, "accelerator.count")):
        if v is not None and not (math.isfinite(v) and v >= 1 and float(v).is_integer()):
            raise InputError(
                ld.file, f"{where}.standardized.{key}", f"{v!r}: a component runs on a whole number of at least 1"
            )
    return {
        "label": object_at(ld, comp.get("metadata"), f"{where}.metadata").get("label"),
        "role": role,
        "replicas": replicas,
        "engine": std.get("tool"),
        "engine_version": std.get("tool_version"),
        "model": object_at(ld, std.get("model"), f"{where}.standardized.model").get("name"),
        "accelerator": acc.get("model"),
        # accelerator.count is "total utilized accelerator count" of the component (all its replicas)
        "gpus": count,
        "parallelism": {k: par[k] for k in ("tp", "dp", "dp_local", "workers", "ep", "pp") if k in par},
    }


def _rates_window(values: dict[str, Any]) -> float | None:
    """The window the report's rates are over: completed requests ÷ request rate (None without both)."""
    done, rate = values.get("completed"), values.get("request_throughput")
    return None if not done or not rate else done / rate


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-6 * max(abs(a), abs(b)) + 1e-3  # a millisecond: the duration's printed precision


def read_report(ld: Loaded) -> list[BenchmarkRun]:
    f, d = ld.file, ld.doc
    version = str(d.get("version"))
    notes: list[str] = []
    not_read: list[str] = []
    vt, newest = _version_tuple(version), _version_tuple(KNOWN[-1])
    newer = vt is not None and newest is not None and vt > newest
    if vt is None or (vt not in [_version_tuple(k) for k in KNOWN] and not newer):
        raise InputError(f, "$.version", f"Benchmark Report version {version!r}: known versions are {', '.join(KNOWN)}")
    for place, known in _KNOWN_KEYS.items():
        node: Any = d
        for part in place.split(".")[1:]:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict):
            not_read += [f"{place}.{k}" for k in sorted(node) if k not in known]
    run = object_at(ld, d.get("run"), "$.run")
    scen = object_at(ld, d.get("scenario"), "$.scenario")
    res = object_at(ld, d.get("results"), "$.results")

    stack, at = [], []  # the engine components and their places in scenario.stack
    for i, comp in enumerate(_list(ld, scen.get("stack"), "$.scenario.stack")):
        e = _engine(ld, comp, f"$.scenario.stack[{i}]")
        if e is not None:
            stack.append(e)
            at.append(f"$.scenario.stack[{i}]")
    load = object_at(
        ld, object_at(ld, scen.get("load"), "$.scenario.load").get("standardized"), "$.scenario.load.standardized"
    )
    isl = object_at(ld, load.get("input_seq_len"), "$.scenario.load.standardized.input_seq_len")
    osl = object_at(ld, load.get("output_seq_len"), "$.scenario.load.standardized.output_seq_len")

    roles = {e["role"] for e in stack}
    pd = {"prefill", "decode"} <= roles
    models = [(i, e["model"]) for i, e in enumerate(stack) if e["model"] is not None]
    other = next(((i, m) for i, m in models if m != models[0][1]), None)
    if other is not None:  # one deployment serves one model: prefill and decode of two are two servers
        (j, m), (k, m0) = other, models[0]
        raise InputError(
            f,
            f"{at[j]}.standardized.model.name",
            f"the {stack[j]['role']} component serves {m!r}, the {stack[k]['role']} component ({at[k]}) {m0!r}: "
            "one deployment serves one model",
        )
    params: dict[str, Any] = {}
    for role in ("prefill", "decode", "replica"):
        comps = [e for e in stack if e["role"] == role]
        if not comps:
            continue
        gpus = [e["gpus"] for e in comps]
        params[f"{role}_gpus"] = None if None in gpus else sum(gpus)
        params[f"{role}_replicas"] = sum(e["replicas"] or 0 for e in comps)
        pars = sorted(
            {" ".join(f"{k}={v}" for k, v in e["parallelism"].items() if k in ("tp", "dp", "ep", "pp")) for e in comps}
        )
        params[f"{role}_parallelism"] = "; ".join(p for p in pars if p) or None
    accs = sorted({str(e["accelerator"]) for e in stack if e["accelerator"]})
    first = stack[0] if stack else {}
    par0 = first.get("parallelism") or {}
    engines = sorted({f"{e['engine']} {e['engine_version']}".strip() for e in stack if e["engine"]})
    config = make_config(
        model=first.get("model"),
        backend=first.get("engine"),
        request_rate=number(load.get("rate_qps"), f, "$.scenario.load.standardized.rate_qps"),
        max_concurrency=number(load.get("concurrency"), f, "$.scenario.load.standardized.concurrency"),
        date=object_at(ld, run.get("time"), "$.run.time").get("start"),
        # run.uid names the run, not its configuration: two repeats (or the stages of a sweep) have
        # two uids, so it is kept as run_uid, never as the label that tells configurations apart
        run_uid=run.get("uid"),
        dataset_name=load.get("source"),
        input_tokens=number(isl.get("value"), f, "$.scenario.load.standardized.input_seq_len.value"),
        output_tokens=number(osl.get("value"), f, "$.scenario.load.standardized.output_seq_len.value"),
        harness=" ".join(str(x) for x in (load.get("tool"), load.get("tool_version")) if x) or None,
        server={
            **({"version": first["engine_version"]} if first.get("engine_version") else {}),
            **{f"{k}_size": par0[k] for k in ("tp", "pp", "dp") if k in par0 and not pd},
        },
        disaggregated=pd,
        prefill_servers=params.get("prefill_replicas") if pd else None,
        decode_servers=params.get("decode_replicas") if pd else None,
        prefill_versions=[e["engine_version"] for e in stack if e["role"] == "prefill"] if pd else None,
        decode_versions=[e["engine_version"] for e in stack if e["role"] == "decode"] if pd else None,
        gpu=", ".join(accs) or None,
        params={
            **params,
            **({"accelerator": ", ".join(accs)} if accs else {}),
            **({"engines": ", ".join(engines)} if engines else {}),
        },
        stack=stack,
        run_eid=run.get("eid"),
    )
    if not stack:
        notes.append("no inference_engine component in scenario.stack: the deployment (roles, GPUs) is not stated")
    if not scen:  # inference-perf's own slice of a report: what it ran is in its config.yaml beside it
        from benchbook.ingest.inference_perf import config_beside

        for k, v in config_beside(ld, notes).items():
            if config.get(k) is None:
                config[k] = v

    # results
    rp = object_at(ld, res.get("request_performance"), "$.results.request_performance")
    agg = object_at(ld, rp.get("aggregate"), "$.results.request_performance.aggregate")
    reqs = object_at(ld, agg.get("requests"), "$.results.request_performance.aggregate.requests")
    lat = object_at(ld, agg.get("latency"), "$.results.request_performance.aggregate.latency")
    tput = object_at(ld, agg.get("throughput"), "$.results.request_performance.aggregate.throughput")
    w = "$.results.request_performance.aggregate"
    total = number(reqs.get("total"), f, f"{w}.requests.total")
    failures = number(reqs.get("failures"), f, f"{w}.requests.failures")
    incomplete = number(reqs.get("incomplete"), f, f"{w}.requests.incomplete")
    values: dict[str, Any] = {
        "failed": failures,
        "incomplete": incomplete,
        "request_throughput": _stat(ld, tput.get("request_rate"), f"{w}.throughput.request_rate"),
        "output_throughput": _stat(ld, tput.get("output_token_rate"), f"{w}.throughput.output_token_rate"),
        "total_token_throughput": _stat(ld, tput.get("total_token_rate"), f"{w}.throughput.total_token_rate"),
        "input_throughput": _stat(ld, tput.get("input_token_rate"), f"{w}.throughput.input_token_rate"),
        "mean_input_length": _stat(ld, reqs.get("input_length"), f"{w}.requests.input_length"),
        "mean_output_length": _stat(ld, reqs.get("output_length"), f"{w}.requests.output_length"),
    }
    for v, key in ((total, "total"), (failures, "failures"), (incomplete, "incomplete")):
        if v is not None and not (math.isfinite(v) and v >= 0):
            raise InputError(f, f"{w}.requests.{key}", f"{v!r} is not a count of requests")
    if total is not None and (failures or 0) + (incomplete or 0) > total:
        raise InputError(
            f,
            f"{w}.requests.failures",
            f"{failures or 0} failures + {incomplete or 0} incomplete of {total} requests in total: more than were sent",
        )
    if total is not None:
        values["completed"] = total - (failures or 0) - (incomplete or 0)
    for m, key in _LATENCY.items():
        for stat, src in (("mean", "mean"), ("median", "p50"), ("p90", "p90"), ("p99", "p99")):
            v = _latency_ms(ld, lat.get(key), f"{w}.latency.{key}", src) if lat.get(key) is not None else None
            if v is not None or stat != "p90":
                values[f"{stat}_{m}_ms"] = v
    t = object_at(ld, run.get("time"), "$.run.time")
    dur = t.get("duration")
    if isinstance(dur, str) and dur.startswith("PT") and dur.endswith("S"):
        try:
            values["duration_s"] = float(dur[2:-1])
        except ValueError:
            notes.append(f"run.time.duration {dur!r} not read (only PT<seconds>S is)")
    window = _rates_window(values)
    if window is not None and values.get("duration_s") is not None and not _close(window, values["duration_s"]):
        notes.append(
            f"run.time.duration ({values['duration_s']:g} s) spans the run's start to end; the report's rates are over "
            f"{window:.6g} s (completed requests ÷ request rate), the duration used"
        )
        values["duration_s"] = window
    if values.get("completed") is not None and values.get("mean_input_length") is not None:
        values["total_input_tokens"] = round(values["completed"] * values["mean_input_length"])
    if values.get("completed") is not None and values.get("mean_output_length") is not None:
        values["total_output_tokens"] = round(values["completed"] * values["mean_output_length"])
    if "total_input_tokens" in values:
        notes.append("token totals = completed requests x mean input/output length (the report keeps no totals)")
    ts = object_at(ld, rp.get("time_series"), "$.results.request_performance.time_series")
    n_series = sum(1 for sec in ts.values() if isinstance(sec, dict) for s in sec.values() if isinstance(s, dict))
    if n_series:
        notes.append(f"{n_series} time series in results.request_performance.time_series (not per-request records)")

    obs: dict[str, dict[str, Any]] = {}
    obs_root = object_at(ld, res.get("observability"), "$.results.observability")
    for i, c in enumerate(_list(ld, obs_root.get("components"), "$.results.observability.components")):
        where = f"$.results.observability.components[{i}]"
        c = object_at(ld, c, where)
        label = str(c.get("component_label"))
        a = object_at(ld, c.get("aggregate"), f"{where}.aggregate")
        entry = obs.setdefault(label, {})
        for k, st in a.items():
            if isinstance(st, dict) and "mean" in st:
                entry[k] = {"mean": _stat(ld, st, f"{where}.aggregate.{k}"), "units": st.get("units"),
                            "total": number(st.get("total"), f, f"{where}.aggregate.{k}.total") if "total" in st else None}  # fmt: skip
    _nixl_transfers(ld, obs_root, obs, notes)
    health = {}
    for i, h in enumerate(_list(ld, res.get("component_health"), "$.results.component_health")):
        h = object_at(ld, h, f"$.results.component_health[{i}]")
        health[str(h.get("component_label"))] = {
            "total_restarts": number(h.get("total_restarts"), f, f"$.results.component_health[{i}].total_restarts"),
            "failed_replicas": number(h.get("failed_replicas"), f, f"$.results.component_health[{i}].failed_replicas"),
        }
    config["observability"] = obs
    config["health"] = health
    config["not_read"] = not_read
    restarts = {k: v["total_restarts"] for k, v in health.items() if v["total_restarts"]}
    if restarts:
        notes.append(
            "components restarted during the run: " + ", ".join(f"{k} x{v}" for k, v in sorted(restarts.items()))
        )

    name = f"llm-d Benchmark Report {version}"
    if newer:
        name += f" (newer than known {KNOWN[-1]}: read where its keys match)"
        notes.append(
            f"Benchmark Report version {version} is newer than the versions benchbook knows ({', '.join(KNOWN)}); "
            "read where its keys match 0.2.1. Not read: " + (", ".join(not_read) or "nothing (every key matched)")
        )
    elif not_read:
        notes.append("keys not read: " + ", ".join(not_read))
    summary = make_summary(**values)
    return [BenchmarkRun(f, "llmd-benchmark-report", config, summary, None, [], "$", notes, name)]


# vLLM's NIXL connector counters as llm-d-benchmark's metrics collection reports them under
# results.observability (br_v0_2_1_example.yaml): per component (pod) the statistics of each series
NIXL_SERIES = (
    "vllm_nixl_bytes_transferred_sum",
    "vllm_nixl_bytes_transferred_count",
    "vllm_nixl_xfer_time_seconds_sum",
    "vllm_nixl_xfer_time_seconds_count",
)


def _nixl_transfers(ld: Loaded, obs_root: dict[str, Any], obs: dict[str, dict[str, Any]], notes: list[str]) -> None:
    """KV transfers from the NIXL series of ``results.observability`` (``vllm_nixl_bytes_transferred_
    sum``/``_count``, ``vllm_nixl_xfer_time_seconds_sum``/``_count``, each with ``components[]
    .statistics.mean``): per component, bytes and seconds per transfer (sum ÷ count of each series'
    mean) as ``kv_transfer_bytes``/``kv_transfer_time`` — what :mod:`benchbook.analysis.pd_report` holds
    against the link. One transfer per request is what a 1P1D path does; the note says it is per transfer."""
    per: dict[str, dict[str, float]] = {}
    for name in NIXL_SERIES:
        series = obs_root.get(name)
        if not isinstance(series, dict):
            continue
        for i, comp in enumerate(_list(ld, series.get("components"), f"$.results.observability.{name}.components")):
            where = f"$.results.observability.{name}.components[{i}]"
            comp = object_at(ld, comp, where)
            st = object_at(ld, comp.get("statistics"), f"{where}.statistics")
            mean = number(st.get("mean"), ld.file, f"{where}.statistics.mean")
            label = str(comp.get("pod") or comp.get("component_id"))
            if mean is not None:
                per.setdefault(label, {})[name] = mean
    for label, v in sorted(per.items()):
        if len(v) < len(NIXL_SERIES):
            notes.append(f"{label}: NIXL series {sorted(set(NIXL_SERIES) - set(v))} missing: no KV-transfer figure")
            continue
        n_b, n_t = v["vllm_nixl_bytes_transferred_count"], v["vllm_nixl_xfer_time_seconds_count"]
        if n_b <= 0 or n_t <= 0:
            continue
        entry = obs.setdefault(label, {})
        entry["kv_transfer_bytes"] = {
            "mean": v["vllm_nixl_bytes_transferred_sum"] / n_b,
            "units": "bytes",
            "total": None,
        }
        entry["kv_transfer_time"] = {"mean": v["vllm_nixl_xfer_time_seconds_sum"] / n_t, "units": "s", "total": None}
        notes.append(
            f"{label}: KV transfers from vLLM's NIXL counters (the means of their _sum and _count series): "
            f"{entry['kv_transfer_bytes']['mean']:.4g} bytes in {entry['kv_transfer_time']['mean'] * 1e3:.4g} ms "
            "per transfer"
        )
