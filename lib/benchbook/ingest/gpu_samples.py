"""GPU and host samples taken while a run was served: ``nvidia-smi --query-gpu=… --format=csv[,nounits]``
files and the host sampler's CSV (``/proc/meminfo`` plus Rss/Pss of the server's processes).

Both become tidy polars frames with fixed columns (null where a file does not carry a field):

- :func:`read_gpu_csv` -> ``t, gpu, memory_used_mib, memory_total_mib, power_w, util_gpu_pct,
  util_mem_pct, clock_sm_mhz, clock_mem_mhz, temp_c`` (``t`` in Unix seconds);
- :func:`read_host_csv` -> ``t, mem_total_kib, mem_available_kib, shmem_kib, cached_kib, pid, comm,
  rss_kib, pss_kib`` (one row per process per sample; host columns repeat);
- :func:`memory_frames` lays them out as the campaign loader's memory tables (``Campaign.memory``:
  gpu ``run, arm, t, rank, gpu_used_mib``; host ``run, arm, t, shmem_kib, mem_available_kib,
  pss_kib_sum``; markers ``run, arm, t, event, label``), so memory analyses read either source.

``nvidia-smi`` prints its timestamp in the host's local time without a zone; benchbook reads it as
UTC (what capture hosts and containers run in) unless ``tz_offset_s`` says otherwise.
"""

from __future__ import annotations

import csv
import datetime as _dt
import io
import math
from collections.abc import Sequence
from pathlib import Path

from benchbook.errors import InputError
from benchbook.jsonfile import read_text

MAX_SAMPLE_BYTES = 256 * 2**20  # a day of 0.5-s samples of 8 GPUs is ~150 MB

# nvidia-smi query field (as the header names it, units stripped) -> column
GPU_FIELDS = {
    "timestamp": "t",
    "index": "gpu",
    "memory.used": "memory_used_mib",
    "memory.total": "memory_total_mib",
    "power.draw": "power_w",
    "power.draw.instant": "power_w",
    "power.draw.average": "power_w",
    "utilization.gpu": "util_gpu_pct",
    "utilization.memory": "util_mem_pct",
    "clocks.sm": "clock_sm_mhz",
    "clocks.current.sm": "clock_sm_mhz",
    "clocks.mem": "clock_mem_mhz",
    "clocks.current.memory": "clock_mem_mhz",
    "temperature.gpu": "temp_c",
}
GPU_COLUMNS = [
    "t",
    "gpu",
    "memory_used_mib",
    "memory_total_mib",
    "power_w",
    "util_gpu_pct",
    "util_mem_pct",
    "clock_sm_mhz",
    "clock_mem_mhz",
    "temp_c",
]
GPU_REQUIRED = ("timestamp", "index", "memory.used")

HOST_FIELDS = {
    "t": "t",
    "MemTotal_kB": "mem_total_kib",
    "MemAvailable_kB": "mem_available_kib",
    "Shmem_kB": "shmem_kib",
    "Cached_kB": "cached_kib",
    "pid": "pid",
    "comm": "comm",
    "rss_kB": "rss_kib",
    "pss_kB": "pss_kib",
}
HOST_REQUIRED = ("t", "MemAvailable_kB")

_NOT_A_VALUE = {"", "[n/a]", "n/a", "[not supported]", "[unknown error]", "[insufficient permissions]"}
_UNITS = (" MiB", " W", " %", " MHz", " C")
# a memory column's unit (the header's ``[...]``, or a value's own suffix) -> factor to MiB
MEMORY_UNITS = {"": 1.0, "MiB": 1.0, "GiB": 1024.0, "KiB": 1 / 1024, "MB": 1e6 / 2**20, "GB": 1e9 / 2**20}
_MEMORY_COLUMNS = ("memory_used_mib", "memory_total_mib")
MAX_GPU_INDEX = 65535  # an index beyond is not a GPU of one host (1e20 would overflow the table's integers)


def _field(header: str) -> str:
    """``memory.used [MiB]`` -> ``memory.used``."""
    return header.split("[", 1)[0].strip()


def _unit(header: str) -> str:
    """``memory.used [GiB]`` -> ``GiB``; ``""`` without brackets (``--format=csv,nounits`` keeps them)."""
    return header.split("[", 1)[1].split("]", 1)[0].strip() if "[" in header else ""


def _memory_factor(header: str, path: Path) -> float:
    unit = _unit(header)
    if unit not in MEMORY_UNITS:
        raise InputError(
            path,
            f"line 1, column {_field(header)}",
            f"unit [{unit}] is not a memory unit ({', '.join(u for u in MEMORY_UNITS if u)})",
        )
    return MEMORY_UNITS[unit]


def _number(raw: str, path: Path, where: str) -> float | None:
    s = raw.strip()
    if s.lower() in _NOT_A_VALUE:
        return None
    for unit in _UNITS:
        if s.endswith(unit):
            s = s[: -len(unit)].strip()
            break
    try:
        v = float(s)
    except ValueError:
        raise InputError(path, where, f"{raw.strip()!r} is not a number") from None
    if not math.isfinite(v) or v < 0:
        raise InputError(path, where, f"{raw.strip()!r} is not a possible sample value")
    return v


def _memory(raw: str, factor: float, path: Path, where: str) -> float | None:
    """A memory value in MiB: the header's unit, or the value's own (``79.5 GiB``)."""
    s = raw.strip()
    for unit in ("GiB", "KiB", "MiB"):
        if s.endswith(" " + unit):
            s, factor = s[: -len(unit)], MEMORY_UNITS[unit]
            break
    v = _number(s, path, where)
    return None if v is None else v * factor


def _timestamp(raw: str, path: Path, where: str, tz_offset_s: float) -> float:
    s = raw.strip()
    for fmt in ("%Y/%m/%d %H:%M:%S.%f", "%Y/%m/%d %H:%M:%S", "%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%dT%H:%M:%S.%f"):
        try:
            dt = _dt.datetime.strptime(s, fmt).replace(tzinfo=_dt.timezone.utc)
        except ValueError:
            continue
        return dt.timestamp() - tz_offset_s
    try:
        return float(s)  # a sampler that writes Unix seconds
    except ValueError:
        raise InputError(
            path, where, f"timestamp {s!r} is neither 'YYYY/MM/DD HH:MM:SS.fff' nor Unix seconds"
        ) from None


def sample_text(path: str | Path, what: str = "GPU sample file") -> str:
    """A sample CSV's text (within :data:`MAX_SAMPLE_BYTES`), read once per analysis
    (:mod:`benchbook.reads`): the frame readers and the GPU-name lookup share the one read."""
    from benchbook.reads import cached

    return cached("sample text", path, lambda: read_text(path, what, limit=MAX_SAMPLE_BYTES))


def _rows(path: Path, what: str) -> tuple[list[str], list[list[str]]]:
    text = sample_text(path, what)
    rows = [r for r in csv.reader(io.StringIO(text)) if r and any(c.strip() for c in r)]
    if not rows:
        raise InputError(path, "line 1", f"empty {what}")
    return [h.strip() for h in rows[0]], rows[1:]


def is_gpu_csv(header: Sequence[str]) -> bool:
    fields = {_field(h) for h in header}
    return all(f in fields for f in GPU_REQUIRED)


def read_gpu_csv(path: str | Path, tz_offset_s: float = 0.0):
    """An ``nvidia-smi --query-gpu=… --format=csv[,nounits]`` sample file as a frame (see module doc)."""
    import polars as pl

    path = Path(path)
    header, rows = _rows(path, "GPU sample file")
    fields = [_field(h) for h in header]
    if not is_gpu_csv(header):
        raise InputError(
            path,
            "line 1",
            "not an nvidia-smi --query-gpu CSV: it needs the columns "
            f"{', '.join(GPU_REQUIRED)}; the columns seen are {', '.join(header)}",
        )
    cols: dict[str, list] = {c: [] for c in GPU_COLUMNS}
    factors = {i: _memory_factor(h, path) for i, h in enumerate(header) if GPU_FIELDS.get(fields[i]) in _MEMORY_COLUMNS}
    last_t: tuple[float, int] | None = None
    for n, row in enumerate(rows, start=2):
        if len(row) != len(header):
            raise InputError(path, f"line {n}", f"{len(row)} fields, the header has {len(header)}")
        got: dict[str, float | None] = {}
        for i, (f, raw) in enumerate(zip(fields, row)):
            col = GPU_FIELDS.get(f)
            if col is None or col in got:
                continue
            where = f"line {n}, column {f}"
            if col == "t":
                got[col] = _timestamp(raw, path, where, tz_offset_s)
            elif col in _MEMORY_COLUMNS:
                got[col] = _memory(raw, factors[i], path, where)
            else:
                got[col] = _number(raw, path, where)
        g = got.get("gpu")
        if g is not None and (not g.is_integer() or g > MAX_GPU_INDEX):
            raise InputError(
                path, f"line {n}, column index", f"{g:g} is not a GPU index (a whole number, 0 to {MAX_GPU_INDEX})"
            )
        t = got.get("t")
        if last_t is not None and t < last_t[0]:
            raise InputError(
                path,
                f"line {n}, column timestamp",
                f"time steps back {last_t[0] - t:g} s from line {last_t[1]}: samples must go forward in time",
            )
        last_t = (t, n)
        for c in GPU_COLUMNS:
            cols[c].append(got.get(c))
    if not cols["t"]:
        raise InputError(path, "line 2", "no samples after the header")
    schema = {c: pl.Float64 for c in GPU_COLUMNS}
    schema["gpu"] = pl.Int64
    cols["gpu"] = [None if g is None else int(g) for g in cols["gpu"]]
    return pl.DataFrame(cols, schema=schema).sort(["t", "gpu"])


def read_host_csv(path: str | Path):
    """The host sampler's CSV (``t, MemTotal_kB, MemAvailable_kB, Shmem_kB, Cached_kB, pid, comm,
    rss_kB, pss_kB``) as a frame; columns it lacks are null. Read once per analysis (:mod:`benchbook.reads`)."""
    from benchbook.reads import cached

    return cached("host samples", path, lambda: _read_host_csv(path))


def _read_host_csv(path: str | Path):
    import polars as pl

    path = Path(path)
    header, rows = _rows(path, "host sample file")
    if not all(h in header for h in HOST_REQUIRED):
        raise InputError(
            path,
            "line 1",
            f"not a host sample CSV: it needs the columns {', '.join(HOST_REQUIRED)}; "
            f"the columns seen are {', '.join(header)}",
        )
    out_cols = list(dict.fromkeys(HOST_FIELDS.values()))
    cols: dict[str, list] = {c: [] for c in out_cols}
    for n, row in enumerate(rows, start=2):
        if len(row) != len(header):
            raise InputError(path, f"line {n}", f"{len(row)} fields, the header has {len(header)}")
        got: dict[str, object] = {}
        for h, raw in zip(header, row):
            col = HOST_FIELDS.get(h)
            if col is None:
                continue
            if col == "comm":
                got[col] = raw
            else:
                got[col] = _number(raw, path, f"line {n}, column {h}")
        if got.get("t") is None:
            raise InputError(path, f"line {n}, column t", "no time")
        for c in out_cols:
            cols[c].append(got.get(c))
    schema = {c: pl.Float64 for c in out_cols}
    schema["comm"] = pl.String
    schema["pid"] = pl.Int64
    cols["pid"] = [None if p is None else int(p) for p in cols["pid"]]
    return pl.DataFrame(cols, schema=schema).sort("t")


def host_by_time(host):
    """One row per sample time: host figures and the Pss/Rss sums over the sampled processes."""
    import polars as pl

    return (
        host.group_by("t")
        .agg(
            pl.col("mem_total_kib").first(),
            pl.col("mem_available_kib").first(),
            pl.col("shmem_kib").first(),
            pl.col("cached_kib").first(),
            pl.col("pss_kib").sum().alias("pss_kib_sum"),
            pl.col("rss_kib").sum().alias("rss_kib_sum"),
            pl.col("pid").drop_nulls().n_unique().alias("processes"),
        )
        .sort("t")
    )


def memory_frames(
    gpu,
    host=None,
    markers: Sequence[tuple[float, str, str | None]] = (),
    run: str = "run",
    arm: str = "arm",
):
    """GPU (and host) samples as ``Campaign.memory``'s three tables for one run; ``markers`` are
    ``(t, event, label)`` with the memory format's events (``load_start``, ``load_end``, ``stop`` …)."""
    import polars as pl

    g = gpu.select(
        pl.lit(run).alias("run"),
        pl.lit(arm).alias("arm"),
        pl.col("t"),
        pl.col("gpu").alias("rank"),
        pl.col("memory_used_mib").alias("gpu_used_mib"),
    ).filter(pl.col("gpu_used_mib").is_not_null())
    if host is not None and host.height:
        h = host_by_time(host).select(
            pl.lit(run).alias("run"),
            pl.lit(arm).alias("arm"),
            pl.col("t"),
            pl.col("shmem_kib"),
            pl.col("mem_available_kib"),
            pl.col("pss_kib_sum"),
        )
    else:
        h = pl.DataFrame(
            schema={
                "run": pl.String,
                "arm": pl.String,
                "t": pl.Float64,
                "shmem_kib": pl.Float64,
                "mem_available_kib": pl.Float64,
                "pss_kib_sum": pl.Float64,
            }
        )
    m = pl.DataFrame(
        [{"run": run, "arm": arm, "t": float(t), "event": e, "label": lab} for t, e, lab in markers],
        schema={"run": pl.String, "arm": pl.String, "t": pl.Float64, "event": pl.String, "label": pl.String},
    )
    return g, h, m
