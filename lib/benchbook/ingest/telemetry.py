"""GPU telemetry from the tools and exporters people run beside a benchmark, as one tidy frame.

Three sources, one shape: the columns of :func:`benchbook.ingest.gpu_samples.read_gpu_csv`
(``t, gpu, memory_used_mib, memory_total_mib, power_w, util_gpu_pct, util_mem_pct, clock_sm_mhz,
clock_mem_mhz, temp_c``) plus :data:`EXTRA_COLUMNS` (``energy_j``: the GPU's cumulative energy
counter in joules, null where the source has none; ``host``). So a memory or energy analysis reads
any of them the same way, and ``nvidia-smi`` CSV stays :mod:`benchbook.ingest.gpu_samples`' job.

- **AIPerf GPU telemetry export** (``gpu_telemetry_export.jsonl`` / ``*_gpu_telemetry.jsonl``, AIPerf
  0.13): one JSON line per GPU per collection cycle, ``timestamp_ns``, ``gpu_index``, ``gpu_uuid``,
  ``hostname``, ``gpu_model_name``, ``telemetry_source_url`` and ``telemetry_data`` holding
  ``nvidia_power_usage`` (W), ``nvidia_energy_consumption`` (MJ, cumulative),
  ``nvidia_memory_used`` (GB = 10^9 bytes: AIPerf scales DCGM's MiB by 1.048576e-3),
  ``nvidia_gpu_utilization`` / ``nvidia_memory_utilization`` (%), ``nvidia_temperature`` (°C).
  The older field names without the ``nvidia_`` prefix (``gpu_power_usage``, ``energy_consumption``,
  ``gpu_memory_used``, ``gpu_utilization``, ``mem_utilization``, ``gpu_temperature``), which AIPerf
  still accepts as aliases, are read too.
- **DCGM-exporter** series in Prometheus text (a ``/metrics`` scrape of dcgm-exporter, or of a
  Prometheus federating it): ``DCGM_FI_DEV_FB_USED`` (MiB), ``DCGM_FI_DEV_FB_FREE`` (MiB, total =
  used + free), ``DCGM_FI_DEV_POWER_USAGE`` (W), ``DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION`` (mJ since
  the driver loaded), ``DCGM_FI_DEV_GPU_UTIL`` / ``DCGM_FI_DEV_MEM_COPY_UTIL`` (%),
  ``DCGM_FI_DEV_SM_CLOCK`` / ``DCGM_FI_DEV_MEM_CLOCK`` (MHz), ``DCGM_FI_DEV_GPU_TEMP`` (°C); one
  row per ``gpu`` label per scrape. Parsed by prometheus_client (benchbook.metrics.prometheus). A
  scrape carries no time of its own: ``t`` is what the caller says (the capture's scrape time), or
  null.

- **DCGM scrape series**: a JSON Lines file of timed scrapes (``*_scrapes.jsonl``, what
  ``benchbook capture`` writes: one ``{"t_start", "t_end", "text"}`` per scrape, or ``{"t", "text"}``)
  whose text carries DCGM series: one sample per GPU per scrape at the scrape's middle
  (``(t_start + t_end) / 2``); lines without DCGM series (an engine's own scrapes in the same
  series) are not GPU samples and are counted in the reader's note, not read.
- **DCGM .prom scrapes** whose file name holds the scrape's Unix time
  (``dcgm_1767225600.5.prom``): one sample per GPU at that time. A DCGM ``.prom`` without a time in
  its name cannot be placed on the run's clock and is refused, saying so.

:func:`read_gpu_samples` reads any of them — or an ``nvidia-smi`` CSV, or a folder of telemetry files
(every one of them, concatenated) — as one frame: what a ``gpu`` run's ``gpu_samples`` names
(:mod:`benchbook.ingest.gpu_runs`), so memory and energy are computed the same way from each.
:func:`telemetry_files` says which files of a folder are GPU telemetry (``init``'s run-folder
recognition, :mod:`benchbook.ingest.run_layout`).

Bad input names the file, the line or label and what was wrong; a JSON Lines file that is not this
layout is reported with the keys it has.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from benchbook.errors import InputError
from benchbook.ingest.gpu_samples import GPU_COLUMNS, MAX_GPU_INDEX
from benchbook.jsonfile import MAX_METRICS_BYTES, plain_suffix, read_bytes, read_head

__all__ = [
    "DCGM_FIELDS",
    "EXTRA_COLUMNS",
    "TELEMETRY_COLUMNS",
    "is_aiperf_telemetry",
    "is_dcgm_text",
    "read_aiperf_telemetry",
    "read_dcgm",
    "read_dcgm_series",
    "read_dcgm_text",
    "read_gpu_samples",
    "telemetry_files",
]

EXTRA_COLUMNS = ["energy_j", "host"]
TELEMETRY_COLUMNS = [*GPU_COLUMNS, *EXTRA_COLUMNS]

# DCGM field -> (column, factor to the column's unit)
DCGM_FIELDS: dict[str, tuple[str, float]] = {
    "DCGM_FI_DEV_FB_USED": ("memory_used_mib", 1.0),
    "DCGM_FI_DEV_POWER_USAGE": ("power_w", 1.0),
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": ("energy_j", 1e-3),  # mJ -> J
    "DCGM_FI_DEV_GPU_UTIL": ("util_gpu_pct", 1.0),
    "DCGM_FI_DEV_MEM_COPY_UTIL": ("util_mem_pct", 1.0),
    "DCGM_FI_DEV_SM_CLOCK": ("clock_sm_mhz", 1.0),
    "DCGM_FI_DEV_MEM_CLOCK": ("clock_mem_mhz", 1.0),
    "DCGM_FI_DEV_GPU_TEMP": ("temp_c", 1.0),
}
_DCGM_FREE = "DCGM_FI_DEV_FB_FREE"

GB_TO_MIB = 1e9 / 2**20
# AIPerf telemetry_data key (current, then alias) -> (column, factor)
AIPERF_FIELDS: dict[str, tuple[str, float]] = {
    "nvidia_memory_used": ("memory_used_mib", GB_TO_MIB),
    "gpu_memory_used": ("memory_used_mib", GB_TO_MIB),
    "nvidia_power_usage": ("power_w", 1.0),
    "gpu_power_usage": ("power_w", 1.0),
    "nvidia_energy_consumption": ("energy_j", 1e6),  # MJ -> J
    "energy_consumption": ("energy_j", 1e6),
    "nvidia_gpu_utilization": ("util_gpu_pct", 1.0),
    "gpu_utilization": ("util_gpu_pct", 1.0),
    "nvidia_memory_utilization": ("util_mem_pct", 1.0),
    "mem_utilization": ("util_mem_pct", 1.0),
    "nvidia_temperature": ("temp_c", 1.0),
    "gpu_temperature": ("temp_c", 1.0),
}
_AIPERF_KEYS = {"timestamp_ns", "gpu_index", "telemetry_data"}


def _sample(v: float, path: Any, where: str) -> float:
    """A telemetry value as ``gpu_samples``' CSV reader takes one: finite and not negative (a power,
    an energy counter, memory, a rate, a clock or a temperature), else bad input naming it."""
    import math

    if not math.isfinite(v) or v < 0:
        raise InputError(path, where, f"{v!r} is not a possible sample value (negative or not finite)")
    return v


def _frame(cols: dict[str, list[Any]]):
    import polars as pl

    schema = {c: pl.Float64 for c in TELEMETRY_COLUMNS}
    schema["gpu"] = pl.Int64
    schema["host"] = pl.String
    return pl.DataFrame({c: cols[c] for c in TELEMETRY_COLUMNS}, schema=schema).sort(["t", "gpu"], nulls_last=True)


def _empty_cols() -> dict[str, list[Any]]:
    return {c: [] for c in TELEMETRY_COLUMNS}


# ------------------------------------------------------------------------------------- AIPerf


def is_aiperf_telemetry(record: Any) -> bool:
    """Whether a JSON Lines record is one line of AIPerf's GPU telemetry export."""
    return isinstance(record, dict) and _AIPERF_KEYS <= record.keys() and isinstance(record["telemetry_data"], dict)


def read_aiperf_telemetry(path: str | Path):
    """AIPerf's ``gpu_telemetry_export.jsonl`` as a telemetry frame (``t`` in Unix seconds)."""
    from benchbook.jsonfile import json_lines

    p = Path(path)
    cols = _empty_cols()
    n = 0
    for lineno, rec in json_lines(p, "GPU telemetry file"):
        if not is_aiperf_telemetry(rec):
            keys = sorted(rec) if isinstance(rec, dict) else type(rec).__name__
            raise InputError(
                p,
                f"line {lineno}",
                f"not an AIPerf GPU telemetry record (needs timestamp_ns, gpu_index, telemetry_data); found {keys}",
            )
        where = f"line {lineno}"
        ts = rec["timestamp_ns"]
        if isinstance(ts, bool) or not isinstance(ts, (int, float)):
            raise InputError(p, f"{where}.timestamp_ns", f"expected a number, found {ts!r}")
        gpu = rec["gpu_index"]
        if isinstance(gpu, bool) or not isinstance(gpu, int) or not 0 <= gpu <= MAX_GPU_INDEX:
            raise InputError(p, f"{where}.gpu_index", f"expected a GPU index (0 to {MAX_GPU_INDEX}), found {gpu!r}")
        row: dict[str, Any] = {c: None for c in TELEMETRY_COLUMNS}
        row.update(t=ts / 1e9, gpu=gpu, host=rec.get("hostname"))
        data = rec["telemetry_data"]
        for key, (col, factor) in AIPERF_FIELDS.items():
            v = data.get(key)
            if v is None or row[col] is not None:
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise InputError(p, f"{where}.telemetry_data.{key}", f"expected a number, found {v!r}")
            row[col] = _sample(float(v), p, f"{where}.telemetry_data.{key}") * factor
        for c in TELEMETRY_COLUMNS:
            cols[c].append(row[c])
        n += 1
    if n == 0:
        raise InputError(p, None, "no telemetry records in the file")
    return _frame(cols)


# ------------------------------------------------------------------------------------- DCGM


def is_dcgm_text(text: str) -> bool:
    """Whether Prometheus text carries DCGM-exporter GPU series."""
    return any(name in text for name in ("DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_POWER_USAGE"))


def read_dcgm_text(text: str, source: str | Path = "<metrics>", t: float | None = None):
    """One DCGM-exporter scrape as telemetry rows, one per ``gpu`` label (``t`` as given)."""
    from benchbook.metrics import prometheus

    snap = prometheus.parse(text, source, names=[*DCGM_FIELDS, _DCGM_FREE])
    rows: dict[int, dict[str, Any]] = {}
    found = False
    for name, (col, factor) in [*DCGM_FIELDS.items(), (_DCGM_FREE, ("_free", 1.0))]:
        # prometheus_client names a counter's sample <family>_total (DCGM's energy counter)
        for key, value in {**snap.series(name), **snap.series(name + "_total")}.items():
            labels = dict(key)
            if "gpu" not in labels:
                raise InputError(source, name, f"a DCGM series without a 'gpu' label: {labels}")
            try:
                gpu = int(labels["gpu"])
            except ValueError:
                raise InputError(source, name, f"gpu label {labels['gpu']!r} is not a GPU index") from None
            row = rows.setdefault(gpu, {"gpu": gpu, "host": labels.get("Hostname") or labels.get("hostname")})
            if col in row:
                raise InputError(
                    source, name, f"two series for GPU {gpu} (labels {labels}): one scrape per file, one host per file"
                )
            row[col] = _sample(value, source, f"{name}{{gpu={gpu}}}") * factor
            found = True
    if not found:
        raise InputError(
            source,
            None,
            f"no DCGM GPU series (looked for {', '.join(sorted(DCGM_FIELDS))}); is this a dcgm-exporter scrape?",
        )
    cols = _empty_cols()
    for gpu in sorted(rows):
        r = rows[gpu]
        free = r.pop("_free", None)
        if free is not None and r.get("memory_used_mib") is not None:
            r["memory_total_mib"] = r["memory_used_mib"] + free
        r["t"] = t
        for c in TELEMETRY_COLUMNS:
            cols[c].append(r.get(c))
    return cols


def read_dcgm(paths: Sequence[str | Path] | str | Path, times: Iterable[float | None] | None = None):
    """DCGM-exporter scrapes (one file each) as one telemetry frame; ``times[i]`` is when file ``i``
    was scraped (Unix seconds), null where not given."""
    from benchbook.metrics.prometheus import read_capture

    if isinstance(paths, (str, Path)):
        paths = [paths]
    times = list(times) if times is not None else [None] * len(paths)
    if len(times) != len(paths):
        raise InputError(str(paths[0]) if paths else "<none>", None, f"{len(paths)} files but {len(times)} times")
    cols = _empty_cols()
    for p, t in zip(paths, times):
        part = read_dcgm_text(read_capture(p), p, t)
        for c in TELEMETRY_COLUMNS:
            cols[c] += part[c]
    return _frame(cols)


AIPERF_LAYOUT = "AIPerf GPU telemetry export (0.13 layout: nvidia_* fields; older gpu_* names read too)"
DCGM_LAYOUT = "DCGM-exporter scrape (DCGM_FI_DEV_* series)"
DCGM_SERIES_LAYOUT = "DCGM-exporter scrape series (timed scrapes in JSON Lines, DCGM_FI_DEV_* series)"
NVIDIA_SMI_LAYOUT = "nvidia-smi --query-gpu CSV (timestamp, index, memory.used …)"


def key_by_host(df, source: str | Path = "<telemetry>"):
    """GPUs keyed by host and index: telemetry from several hosts (GPU 0 on each) would otherwise
    be one GPU sampled twice at once. With more than one ``host``, the ``gpu`` key is renumbered
    host by host (hosts sorted by name, then index: ``node-a`` GPU 0, 1 -> 0, 1; ``node-b`` GPU 0 ->
    2), the host kept in ``host``. Two samples of one host's GPU at one instant are bad input."""
    import polars as pl

    if df["host"].drop_nulls().n_unique() + (1 if df["host"].null_count() else 0) > 1:
        pairs = (
            df.select(pl.col("host").fill_null(""), "gpu")
            .unique()
            .sort(["host", "gpu"], nulls_last=True)
            .with_row_index("_key")
        )
        df = (
            df.with_columns(pl.col("host").fill_null("").alias("_host"))
            .join(pairs.rename({"host": "_host"}), on=["_host", "gpu"], how="left", nulls_equal=True)
            .with_columns(pl.col("_key").cast(pl.Int64).alias("gpu"))
            .drop("_host", "_key")
            .select(TELEMETRY_COLUMNS)
            .sort(["t", "gpu"], nulls_last=True)
        )
    twice = df.filter(pl.col("t").is_not_null()).group_by(["t", "gpu"]).len().filter(pl.col("len") > 1)
    if twice.height:
        t, gpu = twice.sort(["t", "gpu"]).row(0)[:2]
        host = df.filter((pl.col("t") == t) & (pl.col("gpu") == gpu))["host"][0]
        raise InputError(
            source,
            "-",
            f"two samples of GPU {gpu}{f' on host {host!r}' if host else ''} at t={t}: one sample per GPU per "
            "instant (the same file given twice, or two hosts without their hostname?)",
        )
    return df


def describe(df, layout: str) -> str:
    """One line for ``benchbook validate``: layout, samples, GPUs (and hosts), span and the fields present."""
    present = [c for c in TELEMETRY_COLUMNS[2:] if c != "host" and df[c].null_count() < df.height]
    t = df["t"].drop_nulls()
    span = f", {t.max() - t.min():.1f} s" if t.len() > 1 else ""
    hosts = df["host"].drop_nulls().n_unique()
    on = f" on {hosts} hosts (keyed by host and index)" if hosts > 1 else ""
    gpus = df.select("host", "gpu").unique().height
    return f"{layout}: {df.height} samples, {gpus} GPU(s){on}{span}; fields {', '.join(present) or 'none'}"


def validate_line(path: str | Path) -> str | None:
    """The validate line of a GPU telemetry file, or None when ``path`` is not one (InputError when it
    is one with bad content)."""
    p = Path(path)
    head = _head(p, 4096)
    if head.lstrip()[:1] == b"{" and b'"telemetry_data"' in head and b'"timestamp_ns"' in head:
        return describe(key_by_host(read_aiperf_telemetry(p), p), AIPERF_LAYOUT)
    if kind_of(p) == "dcgm-series":
        return describe(key_by_host(read_dcgm_series(p), p), DCGM_SERIES_LAYOUT)
    if b"DCGM_FI_DEV_" in head or (
        plain_suffix(p) in (".prom", ".txt", ".metrics") and b"DCGM_FI_DEV_" in read_bytes(p, limit=MAX_METRICS_BYTES)
    ):
        return describe(read_dcgm(p), DCGM_LAYOUT)
    if kind_of(p) == "nvidia-smi" or (p.suffix.lower() == ".csv" and re.search(r"gpu|smi", p.name.lower())):
        return describe(read_gpu_samples(p), NVIDIA_SMI_LAYOUT)  # a CSV named so but not one: its columns said
    return None


# ------------------------------------------------------------------------------------- series and files

_SCRAPE_TIME = re.compile(r"(?<![0-9])(1[0-9]{9}(?:\.[0-9]+)?)(?![0-9])")  # Unix seconds 2001..2286


def _head(p: Path, n: int = 65536) -> bytes:
    return read_head(p, n)  # decompressed for a .gz name (benchbook capture --compress)


def kind_of(path: str | Path) -> str | None:
    """``aiperf`` (AIPerf GPU telemetry export), ``dcgm-series`` (timed scrapes in JSON Lines holding
    DCGM series), ``dcgm-prom`` (one DCGM scrape, a .prom file), ``nvidia-smi`` (a sample CSV), or
    None when the file is none of them (read by content, not by name)."""
    p = Path(path)
    if not p.is_file() or p.is_symlink():
        return None
    head = _head(p)
    suffix = plain_suffix(p)  # conc8_scrapes.jsonl.gz is a .jsonl
    if suffix == ".jsonl" or head.lstrip()[:1] == b"{":
        if b'"telemetry_data"' in head and b'"timestamp_ns"' in head:
            return "aiperf"
        if b'"text"' in head and (b'"t_start"' in head or b'"t"' in head) and b"DCGM_FI_DEV_" in _head(p, 1 << 22):
            return "dcgm-series"
        return None
    if suffix in (".prom", ".metrics", ".txt") and _dcgm_only(_head(p, 1 << 22)):
        return "dcgm-prom"
    if suffix == ".csv":
        from benchbook.ingest import gpu_samples

        cols = [c.strip() for c in head.split(b"\n", 1)[0].decode("utf-8", "replace").split(",")]
        return "nvidia-smi" if gpu_samples.is_gpu_csv(cols) else None
    return None


def _dcgm_only(text: bytes) -> bool:
    """Prometheus text whose samples are all DCGM series (a dcgm-exporter scrape): GPU telemetry, not
    an engine's /metrics capture (a scrape mixing both is the engine's capture)."""
    if b"DCGM_FI_DEV_" not in text:
        return False
    names = [ln.split(b"{", 1)[0].split(b" ", 1)[0] for ln in text.splitlines() if ln.strip() and ln[:1] != b"#"]
    return bool(names) and all(n.startswith(b"DCGM_") for n in names)


def scrape_time(path: str | Path) -> float:
    """The Unix time in a DCGM .prom file's name (``dcgm_1767225600.5.prom``); InputError without one."""
    p = Path(path)
    m = _SCRAPE_TIME.findall(p.stem)
    if len(m) != 1:
        raise InputError(
            p,
            "-",
            "a DCGM scrape without its time: name each .prom scrape with its Unix time (dcgm_<unix seconds>.prom) "
            "or keep the scrapes as a timed series (*_scrapes.jsonl: one {t_start, t_end, text} per line)",
        )
    return float(m[0])


def scrape_lines(path: str | Path, keep=None):
    """(line number, Unix time, text) of each scrape of a JSON Lines scrape series (``{t_start, t_end,
    text}`` or ``{t, text}`` per line; the time is the scrape's middle), for the lines whose text
    ``keep`` accepts (all by default). A line of another shape, or without a numeric time, is refused
    naming the file and the line."""
    from benchbook.jsonfile import json_lines

    p = Path(path)
    for lineno, rec in json_lines(p, "scrape series"):
        if not isinstance(rec, dict) or not isinstance(rec.get("text"), str):
            keys = sorted(rec) if isinstance(rec, dict) else type(rec).__name__
            raise InputError(p, f"line {lineno}", f"expected a scrape {{t_start, t_end, text}}; found {keys}")
        if keep is not None and not keep(rec["text"]):
            continue
        t0, t1 = rec.get("t_start", rec.get("t")), rec.get("t_end", rec.get("t_start", rec.get("t")))
        for key, v in (("t_start", t0), ("t_end", t1)):
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise InputError(p, f"line {lineno}.{key}", f"expected the scrape's Unix time, found {v!r}")
        yield lineno, (float(t0) + float(t1)) / 2, rec["text"]


def read_dcgm_series(path: str | Path):
    """A JSON Lines series of timed scrapes (``{t_start, t_end, text}`` or ``{t, text}`` per line): the
    DCGM series of each scrape as telemetry rows at the scrape's middle. Lines whose text has no DCGM
    series are skipped (an engine's scrapes in the same file); none at all is an error."""
    p = Path(path)
    cols = _empty_cols()
    scrapes = 0
    for lineno, t, text in scrape_lines(p, keep=lambda text: "DCGM_FI_DEV_" in text):
        part = read_dcgm_text(text, f"{p}: line {lineno}", t)
        for c in TELEMETRY_COLUMNS:
            cols[c] += part[c]
        scrapes += 1
    if not scrapes:
        raise InputError(p, None, "no scrape in the series carries DCGM GPU series (DCGM_FI_DEV_*)")
    return _frame(cols)


def telemetry_files(folder: str | Path) -> list[Path]:
    """The GPU telemetry files directly in ``folder`` (AIPerf exports, DCGM scrape series, DCGM .prom
    scrapes), sorted by name; nvidia-smi CSVs are ``gpu_samples``' and not listed."""
    d = Path(folder)
    if not d.is_dir():
        return []
    return [p for p in sorted(d.iterdir()) if kind_of(p) in ("aiperf", "dcgm-series", "dcgm-prom")]


def _telemetry_file(p: Path):
    """One file :func:`kind_of` calls ``aiperf``, ``dcgm-series`` or ``dcgm-prom``."""
    kind = kind_of(p)
    if kind == "aiperf":
        return read_aiperf_telemetry(p)
    if kind == "dcgm-series":
        return read_dcgm_series(p)
    return read_dcgm([p], [scrape_time(p)])


def read_gpu_samples(path: str | Path):
    """GPU samples from whatever a ``gpu`` run names: an nvidia-smi CSV, an AIPerf export, a DCGM scrape
    series or .prom scrape, or a folder of telemetry files (all of them, as one frame sorted by time).
    The frame has :data:`TELEMETRY_COLUMNS` (``energy_j`` null where the source has no counter). Read
    once per analysis (:mod:`benchbook.reads`)."""
    from benchbook.reads import cached

    return cached("gpu samples", path, lambda: _read_gpu_samples(path))


def _read_gpu_samples(path: str | Path):
    import polars as pl

    p = Path(path)
    if p.is_dir():
        files = telemetry_files(p)
        if not files:
            raise InputError(
                p, "-", "no GPU telemetry in this folder (AIPerf export, DCGM *_scrapes.jsonl or DCGM .prom scrapes)"
            )
        frames = [_telemetry_file(f) for f in files]
        return key_by_host(pl.concat(frames, how="vertical").sort(["t", "gpu"], nulls_last=True), p)
    if kind_of(p) in ("aiperf", "dcgm-series", "dcgm-prom"):
        return key_by_host(_telemetry_file(p), p)
    from benchbook.ingest import gpu_samples

    df = gpu_samples.read_gpu_csv(p)  # an nvidia-smi CSV (or its error, naming the columns it saw)
    return df.with_columns(pl.lit(None, pl.Float64).alias("energy_j"), pl.lit(None, pl.String).alias("host")).select(
        TELEMETRY_COLUMNS
    )
