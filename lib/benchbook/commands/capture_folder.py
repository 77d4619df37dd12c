"""The run folder ``benchbook capture`` writes, and its ``capture.json`` (schema benchbook.capture/1).

Every file is written atomically (temporary file, then rename), and ``capture.json`` is rewritten
after each step, so a capture stopped at any moment (Ctrl-C, a kill) leaves a folder whose files
are valid and whose ``capture.json`` says how far it got: ``"complete": false`` and ``"stopped"``
with the reason, until the last step sets ``"complete": true``. docs/capture.md describes the files.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchbook import __version__
from benchbook.errors import InputError
from benchbook.jsonfile import gzip_bytes

FORMAT = "benchbook.capture/1"
NOT_SAMPLED = "not sampled"


def utc(unix_s: float) -> str:
    """Unix seconds -> ISO 8601 UTC with milliseconds (``2026-11-30T13:33:30.123Z``)."""
    return (
        _dt.datetime.fromtimestamp(unix_s, _dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    )


DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


class DiskFull(InputError):
    """A write that found the disk (or quota) full: exit 2 naming the file, never "internal error";
    it stops the capture (not a scrape error to note and go on from)."""

    def __init__(self, path: Path | str):
        super().__init__(
            path,
            "-",
            "cannot write: no space left on device (the disk or quota is full); the capture stopped, the files "
            "written before are whole (free space and capture again)",
        )


def write_atomic(path: Path, data: bytes) -> None:
    """``data`` as ``path``: a temporary file beside it, then a rename. A full disk leaves no half
    temporary file behind and is :class:`DiskFull`."""
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if e.errno in DISK_FULL:
            raise DiskFull(path) from None
        raise


EVENTS_FILE = "events.jsonl"


def append_line(path: Path, line: str) -> None:
    """Append one line to ``path`` in a single write (O_APPEND): never rewriting what is there."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode() + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)


def _rel_to(target: Path, start: Path) -> str:
    return Path(os.path.relpath(target, start)).as_posix()


def dump_json(doc: Any) -> bytes:
    """Indented JSON (the standard library's: capture runs where only the engine's Python is)."""
    return json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False).encode() + b"\n"


_NAME_OK = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._+-=")


def _name(option: str, value: str) -> str:
    if not value or value in (".", "..") or not set(value) <= _NAME_OK:
        raise InputError(
            option, value, "a folder name: letters, digits and . _ + - = (no /, no spaces), not '.' or '..'"
        )
    return value


def layout(
    out: str | Path, kind: str, arm: str | None, run: str | None, point: str | None
) -> tuple[Path, Path, dict[str, Any] | None]:
    """Where a capture lands: ``(folder, run_dir, layout)``.

    Without ``--arm``/``--run`` the folder is ``--out`` itself (and the run folder too: memory samples
    go beside the capture). With them it is ``OUT/ARM/RUN/POINT``: the arm folder is one server
    configuration, the run folder one server process, the point folder one load point (``capture
    run``; ``phases`` and ``ladder`` by default for the other two kinds). docs/capture.md."""
    if (arm is None) != (run is None):
        raise InputError(
            "--arm/--run", arm or run, "give both --arm NAME and --run NAME (the layout OUT/ARM/RUN/POINT)"
        )
    if arm is None:
        if point is not None:
            raise InputError("--point", point, "--point needs --arm and --run (the layout OUT/ARM/RUN/POINT)")
        return Path(out), Path(out), None
    if point is None:
        if kind == "run":
            raise InputError(
                "--point", "-", "capture run with --arm/--run needs --point NAME (a load point, e.g. conc8)"
            )
        point = kind
    arm, run, point = _name("--arm", arm), _name("--run", run), _name("--point", point)
    run_dir = Path(out) / arm / run
    return (
        run_dir / point,
        run_dir,
        {
            "root": str(out),
            "arm": arm,
            "run": run,
            "point": point,
            "run_folder": f"{arm}/{run}",
            "folder": f"{arm}/{run}/{point}",
        },
    )


class RunFolder:
    """A fresh run folder and the ``capture.json`` describing it (``arm``/``run``/``point``: the layout
    ``OUT/ARM/RUN/POINT`` of :func:`layout`)."""

    def __init__(
        self,
        out: str | Path,
        kind: str,
        arguments: dict[str, Any],
        *,
        arm: str | None = None,
        run: str | None = None,
        point: str | None = None,
        compress: bool = False,
    ):
        self.path, self.run_dir, where = layout(out, kind, arm, run, point)
        self.compress = compress
        if self.path.exists() and (not self.path.is_dir() or any(self.path.iterdir())):
            raise InputError(self.path, "-", "the run folder exists and is not empty; give a new --out folder")
        self.path.mkdir(parents=True, exist_ok=True)
        self.doc: dict[str, Any] = {
            "format": FORMAT,
            "kind": kind,
            "complete": False,
            "stopped": "capture in progress (or killed before it could say why)",
            "benchbook": __version__,
            "arguments": arguments,
            "started_at": None,
            "ended_at": None,
            "host": host_facts(),
            "compressed": compress,
            "files": {},
        }
        if where is not None:
            self.doc["layout"] = where

    def write(self, rel: str, data: bytes | str) -> str:
        write_atomic(self.path / rel, data.encode() if isinstance(data, str) else data)
        return rel

    def write_metrics(self, stem: str, text: str) -> str:
        """A ``/metrics`` scrape as ``STEM.prom``, or with ``--compress`` ``STEM.prom.gz`` (gzip, the same
        bytes for the same text: no time or name in the header); returns the name written."""
        if self.compress:
            return self.write(f"{stem}.prom.gz", gzip_bytes(text.encode()))
        return self.write(f"{stem}.prom", text)

    @property
    def prom(self) -> str:
        """The scrapes' file ending: ``.prom`` or ``.prom.gz`` (capture.json's ``files`` says which)."""
        return ".prom.gz" if self.compress else ".prom"

    @property
    def point_name(self) -> str:
        """The point folder's name (``conc8``, ``ladder``): the label of this capture's markers."""
        where = self.doc.get("layout")
        return where["point"] if where else self.path.name

    def mark(self, label: str, t_start: float, t_end: float, **extra: Any) -> None:
        """Append one marker ``{"event": "bench_<label>", "t_start", "t_end", …}`` (Unix seconds) to the
        run folder's ``events.jsonl`` — the runner's format, read by init as memory and energy windows —
        and count it in capture.json's ``markers``."""
        line = {"event": f"bench_{label}", "t_start": round(t_start, 6), "t_end": round(t_end, 6), **extra}
        append_line(self.run_dir / EVENTS_FILE, json.dumps(line, allow_nan=False))
        m = self.doc.setdefault("markers", {"file": _rel_to(self.run_dir / EVENTS_FILE, self.path), "lines": 0})
        m["lines"] += 1

    def server_facts(self, metrics_url: str) -> None:
        """The server's own word on what it is, saved once per run folder where init reads it: ``GET
        /version`` as ``version.json`` (vLLM: ``{"version": "0.26.0"}``) and SGLang's ``GET
        /get_server_info`` as ``server_info.json``. An endpoint the server lacks (404) or an answer that
        is not a JSON object is noted in capture.json's ``server_facts``, never an error: the load does
        not depend on it. A file already in the run folder (an earlier capture of the same process) is
        kept; an answer that differs from it is noted (two servers behind one run folder)."""
        from benchbook import httpread
        from benchbook.commands.scrape import server_root

        u = server_root(metrics_url)
        facts: dict[str, str] = {}
        for path, name in (("/version", "version.json"), ("/get_server_info", "server_info.json")):
            try:
                r = httpread.request("GET", u + path, timeout_s=5.0, max_bytes=1 << 20)
            except httpread.HTTPReadError as e:
                facts[name] = f"GET {path}: {e.reason}"
                continue
            if r.status != 200:
                facts[name] = f"GET {path}: HTTP {r.status} (not served)"
                continue
            try:
                doc = json.loads(r.body)
            except ValueError:
                doc = None
            if not isinstance(doc, dict):
                facts[name] = f"GET {path}: the answer is not a JSON object; not saved"
                continue
            target = self.run_dir / name
            data = dump_json(doc)
            if target.is_file():
                same = target.read_bytes() == data
                facts[name] = f"GET {path}: {'the same as' if same else 'DIFFERS from'} the run folder's {name}"
                continue
            write_atomic(target, data)
            facts[name] = f"GET {path}: saved as {_rel_to(target, self.path)}"
        self.doc["server_facts"] = facts

    def save(self) -> None:
        self.write("capture.json", dump_json(self.doc))

    def finish(self, stopped: str | None, ended_unix: float) -> None:
        self.doc["complete"] = stopped is None
        self.doc["stopped"] = stopped
        self.doc["ended_at"] = utc(ended_unix)
        self.save()


def nvidia_smi_query(exe: str, fields: str) -> tuple[str | None, str | None]:
    """(CSV rows of ``nvidia-smi --query-gpu=FIELDS --format=csv,noheader,nounits``, None), or
    (None, why it did not answer)."""
    try:
        r = subprocess.run(
            [exe, f"--query-gpu={fields}", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=15,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"nvidia-smi failed: {type(e).__name__}"
    if r.returncode != 0:
        return None, f"nvidia-smi exit {r.returncode}: {(r.stderr or r.stdout).strip()[:200]}"
    return r.stdout, None


def gpu_memory() -> dict[str, Any] | str:
    """Per-GPU memory from ``nvidia-smi`` when it is on PATH and answers; else ``"not sampled (why)"``."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return f"{NOT_SAMPLED} (nvidia-smi not found)"
    out, why = nvidia_smi_query(exe, "index,name,memory.used,memory.total")
    if out is None:
        return f"{NOT_SAMPLED} ({why})"
    gpus = []
    for line in out.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 4:
            gpus.append(
                {
                    "index": parts[0],
                    "name": parts[1],
                    "memory_used_mib": _num(parts[2]),
                    "memory_total_mib": _num(parts[3]),
                }
            )
    return {"source": "nvidia-smi", "gpus": gpus} if gpus else f"{NOT_SAMPLED} (nvidia-smi listed no GPU)"


def _num(s: str) -> float | str:
    try:
        return float(s)
    except ValueError:
        return s


def _meminfo_kib(key: str) -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def host_facts() -> dict[str, Any]:
    """What this client host can say about itself (the server may be elsewhere: see docs/capture.md)."""
    return {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "cpu_count": os.cpu_count(),
        "mem_total_kib": _meminfo_kib("MemTotal"),
        "gpu_memory": gpu_memory(),
    }
