"""Memory sampled while ``benchbook capture`` runs: GPUs through ``nvidia-smi``, the host through ``/proc``.

Both write into the *run* folder (one server process; docs/capture.md, "The folder layout"), where
every capture of that process appends, so the files cover the server's life as far as captures saw it:

* ``gpu_samples.csv``: ``nvidia-smi --query-gpu=timestamp,index,memory.used,memory.total,power.draw,
  utilization.gpu,utilization.memory,clocks.sm,clocks.mem,temperature.gpu --format=csv,nounits -lms
  500``, exactly as nvidia-smi writes it (its own header line first; an append leaves the header out);
* ``host_samples.csv``: once a second ``t,MemTotal_kB,MemAvailable_kB,Shmem_kB,Cached_kB,pid,comm,
  rss_kB,pss_kB`` — one line per process of the server's process tree (``--server-pid``: the PID and
  its descendants, ``Rss``/``Pss`` from ``/proc/PID/smaps_rollup``), or one line with the process
  columns empty when no PID was given.

Neither sampler may stop a capture: when ``nvidia-smi`` is missing or fails, or ``/proc/meminfo``
cannot be read, ``capture.json`` says ``"not sampled (why)"``. Both are stopped in ``finally`` (also on
Ctrl-C): the ``nvidia-smi`` child by its process group (SIGTERM, SIGKILL after 5 s), the host thread
by an event.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

NOT_SAMPLED = "not sampled"
GPU_QUERY = (
    "timestamp,index,memory.used,memory.total,power.draw,utilization.gpu,utilization.memory,"
    "clocks.sm,clocks.mem,temperature.gpu"
)
GPU_FILE = "gpu_samples.csv"
HOST_FILE = "host_samples.csv"
HOST_HEADER = "t,MemTotal_kB,MemAvailable_kB,Shmem_kB,Cached_kB,pid,comm,rss_kB,pss_kB\n"
GPU_EVERY_MS = 500
HOST_EVERY_S = 1.0
MEMINFO_KEYS = ("MemTotal", "MemAvailable", "Shmem", "Cached")


def meminfo(path: str = "/proc/meminfo") -> dict[str, str]:
    """``/proc/meminfo`` as ``{key: kB}`` (strings, as the kernel wrote them)."""
    out = {}
    with open(path) as f:
        for line in f:
            k, _, v = line.partition(":")
            out[k] = v.split()[0] if v.split() else ""
    return out


def process_tree(pid: int) -> list[int]:
    """``pid`` and every descendant (from ``/proc/*/stat``'s parent field), parents first."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after the last ')'
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(name))
    out, todo = [], [pid]
    while todo:
        p = todo.pop(0)
        out.append(p)
        todo.extend(sorted(children.get(p, [])))
    return out


def rss_pss_kib(pid: int) -> tuple[str, str, str] | None:
    """(comm, Rss kB, Pss kB) of a process, or None when it is gone or unreadable."""
    try:
        with open(f"/proc/{pid}/comm") as f:
            comm = f.read().strip().replace(",", " ")
        rss = pss = ""
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Rss:"):
                    rss = line.split()[1]
                elif line.startswith("Pss:"):
                    pss = line.split()[1]
    except OSError:
        return None
    return comm, rss, pss


class HostSampler(threading.Thread):
    """One line per process (or one line without a process) every ``every_s`` seconds, appended."""

    def __init__(self, path: Path, server_pid: int | None, every_s: float = HOST_EVERY_S):
        super().__init__(name="benchbook-host-sampler", daemon=True)
        self.path, self.server_pid, self.every_s = path, server_pid, every_s
        self.stop_event = threading.Event()
        self.rows = 0
        self.first: float | None = None
        self.last: float | None = None
        self.error: str | None = None
        self.server_gone_at: float | None = None

    def tick(self, f) -> None:
        t = time.time()
        mi = meminfo()
        host = ",".join(mi.get(k, "") for k in MEMINFO_KEYS)
        lines = []
        if self.server_pid is None:
            lines.append(f"{t:.3f},{host},,,,\n")
        else:
            for p in process_tree(self.server_pid):
                got = rss_pss_kib(p)
                if got is not None:
                    lines.append(f"{t:.3f},{host},{p},{got[0]},{got[1]},{got[2]}\n")
            if not lines:  # the server is gone: the host figures are still worth a line
                self.server_gone_at = self.server_gone_at or t
                lines.append(f"{t:.3f},{host},,,,\n")
        f.write("".join(lines))
        f.flush()
        self.rows += len(lines)
        self.first = self.first or t
        self.last = t

    def run(self) -> None:
        try:
            new = not self.path.exists() or self.path.stat().st_size == 0
            with open(self.path, "a") as f:
                if new:
                    f.write(HOST_HEADER)
                while True:
                    self.tick(f)
                    if self.stop_event.wait(self.every_s):
                        break
        except (OSError, ValueError, IndexError) as e:  # /proc unreadable: say so, never stop the capture
            self.error = f"{type(e).__name__}: {e}"

    def stop(self) -> None:
        self.stop_event.set()
        self.join(timeout=10)


def _gpu_check(exe: str) -> str | None:
    """Why nvidia-smi cannot sample (it does not answer one query), or None."""
    from benchbook.commands.capture_folder import nvidia_smi_query

    out, why = nvidia_smi_query(exe, GPU_QUERY)
    if out is None:
        return why
    if not out.strip():
        return "nvidia-smi listed no GPU"
    return None


class MemorySampling:
    """Start both samplers into ``run_dir``; :meth:`stop` ends them and returns what capture.json records."""

    def __init__(self, run_dir: Path, server_pid: int | None = None, gpu_every_ms: int = GPU_EVERY_MS):
        self.run_dir = run_dir
        self.server_pid = server_pid
        self.gpu_every_ms = gpu_every_ms
        self.gpu_proc: subprocess.Popen | None = None
        self.gpu_note: str | None = None
        self.gpu_rows_before = 0
        self.host: HostSampler | None = None
        self.host_note: str | None = None
        self.started_unix: float | None = None

    def start(self) -> MemorySampling:
        self.started_unix = time.time()
        self._start_gpu()
        self._start_host()
        return self

    def _start_gpu(self) -> None:
        exe = shutil.which("nvidia-smi")
        if exe is None:
            self.gpu_note = f"{NOT_SAMPLED} (nvidia-smi not found on PATH)"
            return
        why = _gpu_check(exe)
        if why:
            self.gpu_note = f"{NOT_SAMPLED} ({why})"
            return
        path = self.run_dir / GPU_FILE
        append = path.exists() and path.stat().st_size > 0
        self.gpu_rows_before = _lines(path) if append else 1  # nvidia-smi's header line is not a sample
        fmt = "csv,noheader,nounits" if append else "csv,nounits"
        out = open(path, "ab")  # noqa: SIM115 - handed to the child, closed in stop()
        try:
            self.gpu_proc = subprocess.Popen(
                [exe, f"--query-gpu={GPU_QUERY}", f"--format={fmt}", "-lms", str(self.gpu_every_ms)],
                stdout=out,
                stderr=subprocess.PIPE,
                start_new_session=True,  # Ctrl-C reaches benchbook, which stops it in order
            )
        except OSError as e:
            self.gpu_note = f"{NOT_SAMPLED} (nvidia-smi failed to start: {e})"
        finally:
            out.close()

    def _start_host(self) -> None:
        if not Path("/proc/meminfo").is_file():
            self.host_note = f"{NOT_SAMPLED} (no /proc/meminfo: not Linux)"
            return
        if self.server_pid is not None and not Path(f"/proc/{self.server_pid}").is_dir():
            self.host_note = f"--server-pid {self.server_pid}: no such process on this host"
        self.host = HostSampler(self.run_dir / HOST_FILE, self.server_pid)
        self.host.start()

    def stop(self) -> dict[str, Any]:
        """Stop both (idempotent) and describe them for capture.json's ``memory_samples``."""
        gpu: dict[str, Any] | str
        if self.gpu_proc is not None:
            proc, self.gpu_proc = self.gpu_proc, None
            for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
                if proc.poll() is not None:
                    break
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, sig)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=wait)
            err = proc.stderr.read().decode(errors="replace").strip() if proc.stderr else ""
            if proc.stderr:
                proc.stderr.close()
            rows = max(0, _lines(self.run_dir / GPU_FILE) - self.gpu_rows_before)
            gpu = {
                "file": GPU_FILE,
                "command": f"nvidia-smi --query-gpu={GPU_QUERY} --format=csv,nounits -lms {self.gpu_every_ms}",
                "every_ms": self.gpu_every_ms,
                "lines_appended": rows,
            }
            if err:
                gpu["stderr"] = err[:500]
            self._gpu_result = gpu
        gpu = getattr(self, "_gpu_result", None) or self.gpu_note or f"{NOT_SAMPLED} (sampler not started)"
        host: dict[str, Any] | str
        if self.host is not None:
            h, self.host = self.host, None
            h.stop()
            if h.error and not h.rows:
                self.host_note = f"{NOT_SAMPLED} ({h.error})"
            else:
                self._host_result = {
                    "file": HOST_FILE,
                    "every_s": h.every_s,
                    "server_pid": h.server_pid,
                    "lines_appended": h.rows,
                    "first_unix_s": h.first,
                    "last_unix_s": h.last,
                    **({"note": self.host_note} if self.host_note else {}),
                    **({"error": h.error} if h.error else {}),
                    **({"server_gone_at_unix_s": h.server_gone_at} if h.server_gone_at else {}),
                }
                if h.server_pid is None:
                    self._host_result["note"] = "host memory only: no --server-pid, so no per-process Rss/Pss"
        host = getattr(self, "_host_result", None) or self.host_note or f"{NOT_SAMPLED} (sampler not started)"
        return {"gpu": gpu, "host": host}


def _lines(path: Path) -> int:
    try:
        with open(path, "rb") as f:
            return sum(1 for _ in f)
    except OSError:
        return 0
