"""``gpu`` runs of a campaign (init's arm/run layout): nvidia-smi and host samples of one server
process and its events, read as ``Campaign.memory``'s tables (:mod:`benchbook.ingest.gpu_samples`
reads the files; :mod:`benchbook.ingest.run_layout` finds them in a user's folders)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchbook.errors import InputError
from benchbook.jsonfile import json_lines, load_json

HOST_MATCH_S = 1.0  # a host sample within this of a GPU sample is that sample's host reading


_EVENT_MAP = {"server_start": "load_start", "ready": "load_end", "server_stop": "stop", "server_stopped": "stop"}


def event_markers(path: Path) -> list[tuple[float, str, str | None]]:
    """``events.jsonl`` as memory markers: ``server_start`` → load_start, ``ready`` → load_end,
    ``server_stop`` → stop; a ``bench_<point>`` line (``t_start``/``t_end``) and ``phase_start``/
    ``phase_end`` → request_start/request_end labelled with the point."""
    out: list[tuple[float, str, str | None]] = []
    for n, ev in json_lines(path, "events file"):
        if not isinstance(ev, dict) or not isinstance(ev.get("event"), str):
            raise InputError(path, f"line {n}", "expected an object with an event name")
        name = ev["event"]
        if name in _EVENT_MAP and isinstance(ev.get("t"), (int, float)):
            if name == "server_stopped" and any(e == "stop" for _t, e, _l in out):
                continue
            out.append((float(ev["t"]), _EVENT_MAP[name], None))
        elif name in ("phase_start", "phase_end") and isinstance(ev.get("t"), (int, float)):
            out.append((float(ev["t"]), "request_start" if name == "phase_start" else "request_end", "phases"))
        elif name.startswith("bench_") and isinstance(ev.get("t_start"), (int, float)):
            label = name[len("bench_") :]
            out.append((float(ev["t_start"]), "request_start", label))
            if isinstance(ev.get("t_end"), (int, float)):
                out.append((float(ev["t_end"]), "request_end", label))
    return sorted(out, key=lambda m: m[0])


def gpu_doc(run: Any) -> Any:
    """A gpu run's ``gpu.json``, read once per analysis (:mod:`benchbook.reads`)."""
    from benchbook.reads import cached

    return cached("gpu run", run.file, lambda: load_json(run.file))


def gpu_memory(camp: Any, run: Any):
    """A ``gpu`` run (its ``gpu.json`` names ``gpu_samples``, optionally ``host_samples`` and
    ``events``, relative to the run folder) as ``Campaign.memory``'s (gpu, host, markers). Without
    events the loaded window is the whole sampled span (first sample to last)."""
    import polars as pl

    from benchbook.ingest import gpu_samples
    from benchbook.ingest.results_runs import in_run

    doc = gpu_doc(run)
    if not isinstance(doc, dict) or not (
        isinstance(doc.get("gpu_samples"), str) or isinstance(doc.get("host_samples"), str)
    ):
        raise InputError(
            run.file,
            "$.gpu_samples",
            "expected the name of an nvidia-smi sample file or GPU telemetry (or host_samples)",
        )
    host = None
    if isinstance(doc.get("host_samples"), str):
        host = gpu_samples.read_host_csv(
            in_run(camp.root, run.path, doc["host_samples"], run.file, "$.host_samples", "file")
        )
    if has_gpu_samples(doc):
        gpu = gpu_frame(camp, run, doc)
        if gpu.height == 0:
            raise InputError(run.file, "$.gpu_samples", "the sample file has no samples")
        span = gpu["t"]
    else:  # a host without nvidia-smi: the host sampler's figures on their own
        gpu = pl.DataFrame(schema={"t": pl.Float64, "gpu": pl.Int64, "memory_used_mib": pl.Float64})
        if host is None or host.height == 0:
            raise InputError(run.file, "$.host_samples", "the host sample file has no samples")
        span = host["t"]
    if isinstance(doc.get("events"), str):
        markers = event_markers(in_run(camp.root, run.path, doc["events"], run.file, "$.events", "file"))
    else:
        markers = []
    events = {e for _t, e, _l in markers}
    t0, t1 = float(span.min()), float(span.max())
    if "load_end" not in events:
        markers.append((t0, "load_end", "first sample (no events file)"))
    if "stop" not in events:
        markers.append((t1, "stop", "last sample (no events file)"))
    g, h, m = gpu_samples.memory_frames(gpu, host, sorted(markers, key=lambda m: m[0]), run=run.id, arm=run.arm)
    if (
        h.height and g.height
    ):  # the host sampler keeps its own clock (1 s): each GPU sample takes the nearest host sample
        times = g.select("t").unique().sort("t")
        h = (
            times.join_asof(h.drop("run", "arm").sort("t"), on="t", strategy="nearest", tolerance=HOST_MATCH_S)
            .select(pl.lit(run.id).alias("run"), pl.lit(run.arm).alias("arm"), pl.all())
            .select(h.columns)
        )
    return g, h, m


def has_gpu_samples(doc: Any) -> bool:
    """Whether a ``gpu.json`` names GPU samples (a host-only one names ``host_samples`` alone)."""
    return isinstance(doc, dict) and isinstance(doc.get("gpu_samples"), str)


def _gpu_path(camp: Any, run: Any, doc: dict[str, Any]) -> Path:
    """What ``gpu_samples`` names, inside the campaign: a file, or a folder of GPU telemetry files."""
    from benchbook.jsonfile import join_inside

    p = join_inside(camp.root, run.path, doc["gpu_samples"], run.file, "$.gpu_samples", "file")
    if not p.is_file() and not p.is_dir():
        raise InputError(
            run.file, "$.gpu_samples", f"references {doc['gpu_samples']!r}, which does not exist in the run folder"
        )
    return p


def gpu_frame(camp: Any, run: Any, doc: dict[str, Any] | None = None):
    """The GPU samples a ``gpu`` run names (``gpu_samples``: an nvidia-smi CSV, GPU telemetry — AIPerf
    export, DCGM scrape series or scrapes — or a folder of telemetry files), as
    :func:`benchbook.ingest.telemetry.read_gpu_samples`' frame (``energy_j`` where a counter is read)."""
    from benchbook.ingest import telemetry

    doc = gpu_doc(run) if doc is None else doc
    return telemetry.read_gpu_samples(_gpu_path(camp, run, doc))


def input_files(camp: Any, run: Any) -> list[Path]:
    """The files a ``gpu`` run reads (provenance)."""
    from benchbook.ingest import telemetry
    from benchbook.ingest.results_runs import in_run

    doc = gpu_doc(run)
    out = [run.file]
    if isinstance(doc, dict) and isinstance(doc.get("gpu_samples"), str):
        p = _gpu_path(camp, run, doc)
        out += telemetry.telemetry_files(p) if p.is_dir() else [p]
    for key in ("host_samples", "events"):
        if isinstance(doc, dict) and isinstance(doc.get(key), str):  # checked to lie inside the campaign
            out.append(in_run(camp.root, run.path, doc[key], run.file, f"$.{key}", "file"))
    return out


def host_processes(camp: Any, run: Any):
    """The host sampler's rows of a ``gpu`` run (one per process per sample: ``t, pid, comm,
    rss_kib, pss_kib`` …), or None when its gpu.json names no host samples."""
    from benchbook.ingest import gpu_samples
    from benchbook.ingest.results_runs import in_run

    doc = gpu_doc(run)
    if not isinstance(doc, dict) or not isinstance(doc.get("host_samples"), str):
        return None
    return gpu_samples.read_host_csv(
        in_run(camp.root, run.path, doc["host_samples"], run.file, "$.host_samples", "file")
    )
