"""``benchbook capture run``: ``/metrics`` before, every S seconds during, and after any benchmark command.

The command (``vllm bench serve``, guidellm, aiperf, a script) runs as a child process with its
output shown and kept in ``command.log``; benchbook records its command line, start, end and exit
status, copies the result files it wrote into ``results/`` (raw, never modified, with their hashes),
and describes it all in ``capture.json``. A scrape that fails *during* the run is recorded as a gap
and the run goes on; the scrapes before and after must succeed (they bracket the window).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchbook.commands.capture_folder import DiskFull, RunFolder, layout, utc
from benchbook.commands.capture_memory import MemorySampling
from benchbook.commands.scrape import SETTLE_TIMEOUT_S, MetricsEndpoint, Scrape, settle_note, settled_after
from benchbook.errors import BenchbookError, InputError
from benchbook.jsonfile import sha256_file

# Options through which common benchmark tools name the folder they write results into.
RESULT_DIR_OPTIONS = ("--result-dir", "--output-dir", "--artifact-dir", "--output-path", "--results-dir")
GRACE_S = 10.0  # after Ctrl-C or the time limit: how long the command gets to exit before SIGKILL


def result_dirs_from_command(cmd: list[str]) -> list[str]:
    """Folders named by a ``--result-dir``-like option of the command (``--opt DIR`` or ``--opt=DIR``)."""
    out = []
    for i, a in enumerate(cmd):
        for opt in RESULT_DIR_OPTIONS:
            if a == opt and i + 1 < len(cmd):
                out.append(cmd[i + 1])
            elif a.startswith(opt + "="):
                out.append(a.split("=", 1)[1])
    return out


def check_places(places: list[str], folder: Path, given_by: str) -> None:
    """No result folder holds the capture folder, or lies inside it: the files the capture is still
    writing would be copied as the benchmark's results (or the results copied into themselves).
    Checked before anything runs (symlinks followed)."""
    mine = Path(folder).resolve()
    for place in places:
        p = Path(place).resolve()
        if p == mine or mine.is_relative_to(p) or p.is_relative_to(mine):
            where = "holds" if p != mine and mine.is_relative_to(p) else "is" if p == mine else "lies inside"
            raise InputError(
                "--results" if given_by == "--results" else "command",
                place,
                f"this result folder ({given_by}) {where} the capture folder {folder}: the capture would copy "
                "its own files as results; give a result folder outside the capture folder, and --out outside it",
            )


def _listing(places: list[str]) -> dict[Path, tuple[int, int]]:
    """``{file: (mtime_ns, size)}`` of every file under the result places, taken before the command starts."""
    out: dict[Path, tuple[int, int]] = {}
    for place in places:
        p = Path(place)
        for f in [p] if p.is_file() else sorted(p.rglob("*")) if p.is_dir() else []:
            if f.is_file():
                st = f.stat()
                out[f] = (st.st_mtime_ns, st.st_size)
    return out


def _new_files(place: Path, before: dict[Path, tuple[int, int]]) -> list[Path]:
    """The files under ``place`` created or changed since :func:`_listing` (a sweep writing every point's
    result into one folder: each point copies its own file, not the points' before it)."""

    def changed(f: Path) -> bool:
        st = f.stat()
        return before.get(f) != (st.st_mtime_ns, st.st_size)

    if place.is_file():
        return [place] if changed(place) else []
    if not place.is_dir():
        return []
    return sorted(p for p in place.rglob("*") if p.is_file() and changed(p))


class _Tee(threading.Thread):
    """Copies the child's output to our stdout and to command.log, line by line."""

    def __init__(self, stream, log_path: Path, echo: bool):
        super().__init__(daemon=True)
        self.stream, self.log_path, self.echo = stream, log_path, echo

    error: str | None = None  # why command.log stopped being written (a full disk): the output is still drained

    def run(self) -> None:
        with open(self.log_path, "ab") as log:
            for line in iter(self.stream.readline, b""):
                if self.error is None:
                    try:
                        log.write(line)
                        log.flush()
                    except OSError as e:  # keep reading: a child whose pipe fills would block forever
                        self.error = f"command.log not written on from here: {e.strerror or e}"
                if self.echo:
                    sys.stdout.buffer.write(line)
                    sys.stdout.flush()


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM it if benchbook dies without stopping it (kill -9, a crash).

    The command runs in its own session (so Ctrl-C reaches benchbook, which stops it in order); this
    keeps a killed capture from leaving the benchmark running unattended. Linux only (prctl)."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _stop(proc: subprocess.Popen, sig: int = signal.SIGINT) -> None:
    """Ask the command's process group to stop, then kill it after GRACE_S."""
    for s, wait in ((sig, GRACE_S), (signal.SIGKILL, 5.0)):
        if proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, s)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue


def capture_run(
    *,
    metrics: str,
    out: str,
    command: list[str],
    arguments: dict[str, Any],
    every_s: float = 0.5,
    results: list[str] | None = None,
    time_limit_s: float | None = None,
    scrape_timeout_s: float = 10.0,
    retries: int = 3,
    echo: bool = True,
    arm: str | None = None,
    run: str | None = None,
    point: str | None = None,
    server_pid: int | None = None,
    compress: bool = False,
    expect_requests: int | None = None,
    settle_s: float = SETTLE_TIMEOUT_S,
    log: Callable[[str], None] = print,
) -> RunFolder:
    if not command:
        raise InputError(
            "command", "-", "no benchmark command: put it after `--` (capture run ... -- vllm bench serve ...)"
        )
    if every_s <= 0:
        raise InputError("--every", str(every_s), "must be a positive number of seconds")
    exe = shutil.which(command[0])
    if exe is None:
        raise InputError("command", command[0], "not found on PATH")
    places = list(results) if results else result_dirs_from_command(command)
    given_by = "--results" if results else "the command's result-folder option"
    check_places(places, layout(out, "run", arm, run, point)[0], given_by)
    endpoint = MetricsEndpoint(metrics, timeout_s=scrape_timeout_s, retries=retries)
    first, first_snap, profile, why = endpoint.first()  # unreachable / not Prometheus: fail before the folder
    folder = RunFolder(out, "run", arguments, arm=arm, run=run, point=point, compress=compress)
    folder.server_facts(endpoint.url)  # GET /version (and SGLang's server info) beside the run
    doc = folder.doc
    doc.update(
        {
            "started_at": utc(first.unix_s),
            "metrics_url": endpoint.url,
            "engine_profile": profile.name if profile else None,
            "engine_profile_note": why,
            "every_s": every_s,
            "command": {
                "argv": list(command),
                "cwd": os.getcwd(),
                "exit_status": None,
                "started_at": None,
                "ended_at": None,
                "duration_s": None,
                "log": "command.log",
            },
            "snapshots": [],
            "scrape_errors": [],
            "result_places": places,
            "result_files": [],
            "files": {
                "snapshots": f"metrics/before{folder.prom}, metrics/during-NNNN{folder.prom}, metrics/after{folder.prom}",
                "command_log": "command.log",
                "results": "results/ (copies of the files the command wrote)",
            },
        }
    )

    def keep(s: Scrape, name: str, phase: str) -> None:
        rel = folder.write_metrics(f"metrics/{name}", s.text)
        doc["snapshots"].append({"file": rel, "phase": phase, "at": utc(s.unix_s), "unix_s": round(s.unix_s, 6)})

    keep(first, "before", "before")
    sampling = MemorySampling(folder.run_dir, server_pid).start()
    folder.save()
    log(
        f"capture run: {endpoint.url} ({profile.name if profile else 'no known engine profile: ' + str(why)}), "
        f"every {every_s:g} s -> {folder.path}; "
        # no ETA of its own: the command's output (shown) has its progress, --time-limit the bound
        + (f"stops the command after at most {time_limit_s:g} s" if time_limit_s else "runs until the command ends")
    )
    stopped: str | None = None
    interrupted = False
    proc = None
    start = time.time()
    existing = _listing(places)
    try:
        doc["command"]["started_at"] = utc(start)
        proc = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        tee = _Tee(proc.stdout, folder.path / "command.log", echo)
        tee.start()
        folder.save()
        t0 = time.monotonic()
        n = 0
        while True:
            try:
                proc.wait(timeout=max(0.0, t0 + (n + 1) * every_s - time.monotonic()))
                break
            except subprocess.TimeoutExpired:
                pass
            if time_limit_s is not None and time.monotonic() - t0 > time_limit_s:
                stopped = f"the command exceeded the time limit of {time_limit_s:g} s and was stopped"
                _stop(proc, signal.SIGTERM)
                break
            n += 1
            try:
                s = endpoint.fetch()
                endpoint.check_light(s)  # cheap: a huge /metrics is not parsed at every interval
                keep(s, f"during-{n:04d}", "during")
            except DiskFull as e:  # not a scrape to note and go on from: the capture stops, exit 2
                stopped = str(e)
                raise
            except BenchbookError as e:
                doc["scrape_errors"].append({"at": utc(time.time()), "error": str(e)})
            n = _skip_missed(doc, n, t0, every_s, log)
            folder.save()
        tee.join(timeout=5)
        stopped = stopped or tee.error
    except KeyboardInterrupt:
        stopped = "interrupted (Ctrl-C): the command was stopped before it finished"
        interrupted = True
        if proc is not None:
            _stop(proc)
    finally:
        end = time.time()
        cmd = doc["command"]
        cmd["ended_at"] = utc(end)
        cmd["duration_s"] = round(end - start, 3)
        if proc is not None:
            rc = proc.poll()
            cmd["exit_status"] = rc
            if rc is not None and rc < 0:
                cmd["signal"] = signal.Signals(-rc).name
            if rc and stopped is None:
                stopped = f"the command failed (exit status {rc}); see command.log"
        if proc is not None:
            folder.mark(folder.point_name, start, end, kind="run", exit_status=cmd["exit_status"])
        _collect(folder, places, existing)
        try:
            # a command that ran to the end: wait (bounded) until the engine counted its requests
            wait = expect_requests if cmd.get("exit_status") == 0 and not interrupted else None
            after, _a, settle = settled_after(endpoint, first_snap, profile, wait, settle_s)
            doc["settle"] = settle
            if settle_note("the command", settle):
                log(settle_note("the command", settle))
            keep(after, "after", "after")
        except BenchbookError as e:
            doc["scrape_errors"].append({"at": utc(time.time()), "error": f"after scrape: {e}"})
            stopped = stopped or f"the scrape after the command failed: {e}"
        endpoint.close()
        doc["memory_samples"] = sampling.stop()
        folder.finish(stopped, time.time())
    if interrupted:
        raise KeyboardInterrupt
    rc = doc["command"]["exit_status"]
    log(
        f"capture run: command exit status {rc}, {len(doc['snapshots'])} snapshots, "
        f"{len(doc['result_files'])} result files{'; ' + stopped if stopped else ''}"
    )
    return folder


def _skip_missed(doc: dict[str, Any], n: int, t0: float, every_s: float, log: Callable[[str], None]) -> int:
    """After scrape ``n``: the intervals that passed while it ran (a slow server, a huge /metrics) are
    skipped, not scraped back to back, and said in capture.json's ``scrape_errors``."""
    due = int((time.monotonic() - t0) / every_s)
    if due <= n:
        return n
    missed = due - n
    msg = f"missed {missed} interval(s) of {every_s:g} s after scrape {n}: the scrape took longer than --every"
    doc["scrape_errors"].append({"at": utc(time.time()), "error": msg})
    log(f"capture run: {msg}")
    return due


def _collect(folder: RunFolder, places: list[str], existing: dict[Path, tuple[int, int]]) -> None:
    doc = folder.doc
    for place in places:
        p = Path(place)
        for f in _new_files(p, existing):
            rel = Path("results") / (f.relative_to(p) if p.is_dir() else f.name)
            if any(r["file"] == str(rel) for r in doc["result_files"]):
                continue
            (folder.path / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, folder.path / rel)
            doc["result_files"].append(
                {
                    "file": str(rel),
                    "source": str(f.resolve()),
                    "bytes": f.stat().st_size,
                    "sha256": sha256_file(folder.path / rel),
                }
            )
