"""A user's own runs laid out as arms × runs × load points, read as they lie on disk.

* an **arm folder**: its name is the arm (a server configuration); each subfolder is one run = one
  server process. An arm folder that is itself a run folder (the H200 campaign's ``batch/``) is one
  arm with one run.
* a **run folder** (one server process) holds any of: one folder per load point (a ``capture run``
  folder, or any folder of result files and ``.prom`` captures), a ``capture phases`` folder or a
  ``phases.json`` (benchbook's or the seeds' phase harness's own layout, with ``metrics/``), a
  ``capture ladder`` folder, an ``nvidia-smi`` sample CSV, the host sampler's CSV, a server log,
  ``events.jsonl`` (the runner's markers), and a flat ``results/`` + ``metrics/`` layout where a
  capture pairs with the result file whose stem it starts with (``bench_conc8.json`` ↔
  ``conc8_before.prom``/``conc8_after.prom`` or ``bench_conc8_before.prom``).
* ``capture run|phases|ladder --arm A --run R --point P`` writes ``OUT/A/R/P`` folders: give ``OUT``
  (a folder of arm folders), an arm folder or a run folder.

:func:`classify` tells which a folder is; :func:`read_run_folder` lists a run folder's parts.
:func:`harness_phases` turns the seeds' phase-harness ``phases.json`` into benchbook's phases
format; :mod:`benchbook.ingest.gpu_runs` turns the runner's ``events.jsonl`` into memory markers
and reads a ``gpu`` run (``gpu.json``) into ``Campaign.memory``'s three tables.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchbook.errors import InputError
from benchbook.jsonfile import load_json, plain_suffix, read_head, read_text, walk_files

CAPTURE_SUFFIXES = (".prom", ".metrics", ".txt")
LOG_NAMES = ("server.log", "server_log.txt", "vllm.log", "sglang.log")
INFO_NAMES = ("server_info.json", "get_server_info.json")
VERSION_NAMES = ("version.json",)  # the server's GET /version answer
PROCESS_MARKERS = ("gpu_samples.csv", "host_samples.csv", "events.jsonl")
RUN_MARKERS = (*PROCESS_MARKERS, *LOG_NAMES)
_SKIP_DIRS = {"scripts", "__pycache__"}
HOST_MATCH_S = 1.0  # a host sample within this of a GPU sample is that sample's host reading


@dataclass
class Point:
    """One load point of a run: a result file and the captures around it."""

    name: str
    result: Path
    before: Path | None = None
    after: Path | None = None
    extra: list[Path] = field(default_factory=list)  # other files of the point (scrapes …)


@dataclass
class RunFolder:
    """One server process's files, classified."""

    arm: str
    run: str
    folder: Path
    points: list[Point] = field(default_factory=list)  # flat results/ + metrics/ layout
    point_folders: list[Path] = field(default_factory=list)  # capture run / plain point folders
    phases: Path | None = None  # a phases.json (benchbook's or the harness's)
    phases_folders: list[Path] = field(default_factory=list)  # capture phases folders
    ladder_folders: list[Path] = field(default_factory=list)  # capture ladder folders
    gpu: Path | None = None  # nvidia-smi CSV, else GPU telemetry (a file, or a folder of them)
    host: Path | None = None
    events: Path | None = None
    logs: list[Path] = field(default_factory=list)
    infos: list[Path] = field(default_factory=list)
    versions: list[Path] = field(default_factory=list)  # saved GET /version answers
    captures: list[Path] = field(default_factory=list)  # every .prom of the process (server config)

    @property
    def process(self) -> str:
        return f"{self.arm}/{self.run}"


def _is_capture(p: Path) -> bool:
    """A ``/metrics`` capture: ``.prom``/``.metrics``/``.txt``, or the same gzip-compressed (``.prom.gz``)."""
    if plain_suffix(p) not in CAPTURE_SUFFIXES or not p.is_file():
        return False
    head = read_head(p, 64).lstrip()
    if head[:1] in (b"{", b"["):
        return False
    from benchbook.ingest import telemetry

    return telemetry.kind_of(p) != "dcgm-prom"  # a dcgm-exporter scrape is GPU telemetry, not the engine's


def _capture_kind(d: Path) -> str | None:
    cap = d / "capture.json"
    if not cap.is_file():
        return None
    doc = load_json(cap)
    if not isinstance(doc, dict):
        raise InputError(cap, "$", "expected a JSON object (a capture.json written by benchbook capture)")
    kind = doc.get("kind")
    return str(kind) if kind is not None else "unknown"


def _is_result(p: Path) -> bool:
    from benchbook.ingest import formats

    if p.suffix.lower() not in (".json", ".jsonl") or p.name in ("capture.json", "phases.json", "requests.json"):
        return False
    try:
        formats.detect(p)
    except InputError:
        return False
    return True


def is_scrape_series(p: Path) -> bool:
    """A JSON Lines series of the engine's timed /metrics scrapes (``{"t_start", "t_end", "text"}`` per
    line, the runner's ``<point>_scrapes.jsonl``), told by its first line."""
    if p.suffix.lower() != ".jsonl" or not p.is_file():
        return False
    with open(p, "rb") as f:
        head = f.read(4096)
    return head.lstrip()[:1] == b"{" and b'"text"' in head and (b'"t_start"' in head or b'"t"' in head)


def _subdirs(d: Path) -> list[Path]:
    """The folders in ``d`` (hidden ones left out). A symlink to a folder is refused, as a file
    symlink is: leaving it out would drop a run folder without a word."""
    out = []
    for p in sorted(d.iterdir()):
        if p.name.startswith(".") or not p.is_dir():
            continue
        if p.is_symlink():
            raise InputError(
                p,
                "-",
                "is a symlink to a folder; init copies regular files and folders only "
                "(copy the folder itself in, or give its real path)",
            )
        out.append(p)
    return out


def point_kind(d: Path) -> str | None:
    """``run`` / ``phases`` / ``ladder`` for a capture folder of that kind, ``point`` for a plain
    folder holding a result file, None for anything else."""
    kind = _capture_kind(d)
    if kind is not None:
        return kind if kind in ("run", "phases", "ladder") else "point"
    if (d / "phases.json").is_file():
        return "phases"
    if (d / "requests.json").is_file():
        return "ladder"
    if d.name in ("results", "metrics"):
        return None
    if any(_is_result(p) for p in d.iterdir() if p.is_file()):
        return "point"
    return None


def is_run_folder(d: Path) -> bool:
    """A folder of one server process: a run marker (sample CSVs, log, events, a harness phases.json,
    a ``results/`` folder) or subfolders that are load points / capture folders."""
    if _capture_kind(d) is not None:
        return False  # a capture folder itself: a point, handled by the caller
    strong = ("gpu_samples.csv", "host_samples.csv", "events.jsonl")
    if (
        (d / "phases.json").is_file()
        and _benchbook_phases(d / "phases.json")
        and not any((d / m).is_file() for m in strong)
        and not (d / "results").is_dir()
    ):
        return False  # benchbook's own phases folder (its server log beside it): init's phases run
    if any((d / m).is_file() for m in RUN_MARKERS) or (d / "results").is_dir():
        return True
    if (d / "phases.json").is_file() and not _benchbook_phases(d / "phases.json"):
        return True
    subs = [s for s in _subdirs(d) if s.name not in _SKIP_DIRS and s.name != "metrics"]
    # a subfolder that is a server process itself (samples, log, results/) is a run, not a load point
    return bool(subs) and all(point_kind(s) is not None and not _process_markers(s) for s in subs)


def _process_markers(d: Path) -> bool:
    """Files only a whole server process's folder holds (a capture folder may hold a server log)."""
    return any((d / m).is_file() for m in PROCESS_MARKERS) or (d / "results").is_dir()


def classify(d: Path) -> str | None:
    """``run`` (one server process), ``arm`` (a folder of run folders), ``arms`` (a folder of arm
    folders, as ``capture --arm/--run`` lays them out), or None (init's other inputs)."""
    if not d.is_dir():
        return None
    if is_run_folder(d):
        return "run"
    subs = [s for s in _subdirs(d) if s.name not in _SKIP_DIRS]
    if subs and all(is_run_folder(s) for s in subs):
        return "arm"
    if subs and all(classify(s) in ("arm", "run") for s in subs) and any(classify(s) == "arm" for s in subs):
        return "arms"
    return None


def _benchbook_phases(p: Path) -> bool:
    doc = load_json(p)
    return isinstance(doc, dict) and doc.get("format") == "benchbook.phases/1"


def _pair(results: list[Path], captures: list[Path]) -> list[Point]:
    """Each result file with the captures whose name starts with its stem (``bench_conc8`` ↔
    ``bench_conc8_before.prom``) or with its stem less a leading ``bench_``/``result_`` word
    (``conc8_before.prom``); ``before``/``after`` by the name's last word."""
    points = []
    taken: set[Path] = set()
    for r in sorted(results):
        stems = [r.stem]
        m = re.match(r"^(?:bench|benchmark|result|results)[_-](.+)$", r.stem)
        if m:
            stems.append(m.group(1))
        pt = Point(stems[-1], r)
        for c in captures:
            if c in taken:
                continue
            base = c.name
            for s in stems:
                rest = base[len(s) :] if base.startswith(s) else None
                if rest is None or (rest and rest[0] not in "_-."):
                    continue
                word = re.sub(r"\.(prom|metrics|txt|jsonl)(\.gz)?$", "", rest).strip("_-.")
                if word == "before":
                    pt.before = c
                elif word == "after":
                    pt.after = c
                else:
                    pt.extra.append(c)
                taken.add(c)
                break
        points.append(pt)
    return points


def read_run_folder(d: Path, arm: str, run: str) -> RunFolder:
    """A run folder's parts (see the module docstring); a GPU CSV in a layout benchbook does not
    read is refused naming the columns it has."""
    from benchbook.ingest import gpu_samples

    rf = RunFolder(arm, run, d)
    for p in sorted(d.iterdir()):
        if p.is_symlink():
            raise InputError(p, "-", "is a symlink; init copies regular files only (copy the file itself in)")
        if p.is_dir():
            if p.name in _SKIP_DIRS or p.name in ("results", "metrics"):
                continue
            kind = point_kind(p)
            if kind == "phases":
                rf.phases_folders.append(p)
            elif kind == "ladder":
                rf.ladder_folders.append(p)
            elif kind in ("run", "point"):
                rf.point_folders.append(p)
            continue
        name = p.name.lower()
        if name == "phases.json":
            rf.phases = p
        elif name == "events.jsonl":
            rf.events = p
        elif p.name in LOG_NAMES or name.endswith(".log") and "server" in name:
            rf.logs.append(p)
        elif p.name in INFO_NAMES:
            rf.infos.append(p)
        elif p.name in VERSION_NAMES:
            rf.versions.append(p)
        elif p.suffix.lower() == ".csv":
            header = read_text(p).split("\n", 1)[0]
            cols = [c.strip() for c in header.split(",")]
            if gpu_samples.is_gpu_csv(cols):
                rf.gpu = p
            elif "MemAvailable_kB" in cols:
                rf.host = p
            elif "gpu" in name or "smi" in name:
                gpu_samples.read_gpu_csv(p)  # raises: names the columns it saw
    if rf.gpu is None:
        rf.gpu = gpu_telemetry(d)
    results = (
        sorted(p for p in (d / "results").glob("*") if p.is_file() and _is_result(p))
        if (d / "results").is_dir()
        else []
    )
    results += [p for p in sorted(d.iterdir()) if p.is_file() and _is_result(p)]
    metrics = d / "metrics"
    caps = sorted(p for p in metrics.iterdir() if p.is_file()) if metrics.is_dir() else []
    caps += [p for p in sorted(d.iterdir()) if _is_capture(p)]
    rf.points = _pair(results, [c for c in caps if _is_capture(c) or plain_suffix(c) == ".jsonl"])
    rf.captures = [c for c in caps if _is_capture(c)]
    for pf in rf.point_folders + rf.phases_folders + rf.ladder_folders:
        rf.captures += [c for c in walk_files(pf) if _is_capture(c)]
        rf.logs += [pf / n for n in LOG_NAMES if (pf / n).is_file()]
        rf.infos += [pf / n for n in INFO_NAMES if (pf / n).is_file()]
        rf.versions += [pf / n for n in VERSION_NAMES if (pf / n).is_file()]
    return rf


def gpu_telemetry(d: Path) -> Path | None:
    """A run folder's GPU telemetry when it has no nvidia-smi CSV (:func:`benchbook.ingest.telemetry.
    telemetry_files`: AIPerf GPU telemetry exports, DCGM scrape series ``*_scrapes.jsonl``, DCGM
    ``.prom`` scrapes named with their time), recognised by content at the folder's top, else in its
    ``metrics/``: the one file, or the folder when several (a series per load point), read together."""
    from benchbook.ingest import telemetry

    for folder in (d, d / "metrics"):
        files = telemetry.telemetry_files(folder)
        if files:
            return files[0] if len(files) == 1 else folder
    return None


def run_folders(d: Path) -> list[RunFolder]:
    """Every run folder under an input folder, with its arm and run names (``arms`` → each arm →
    each run; an arm that is itself a run folder is one run named after the arm)."""
    kind = classify(d)
    if kind == "run":
        return [read_run_folder(d, d.name, "1")]
    if kind == "arm":
        return [read_run_folder(s, d.name, s.name) for s in _subdirs(d) if s.name not in _SKIP_DIRS]
    if kind == "arms":
        out = []
        for a in _subdirs(d):
            if a.name in _SKIP_DIRS:
                continue
            out += run_folders(a)
        return out
    return []


# ---- the seeds' phase harness layout -------------------------------------------------------------


def harness_phases(path: Path, prefix: str) -> tuple[dict[str, Any], dict[str, dict[str, int]], int | None]:
    """The phase harness's own ``phases.json`` (``harness: "phase"``: per sample ``round``,
    ``warmup``, ``client_total_s``, ``usage``, ``metrics_before/after``; its ``first_event_s`` is a
    first token, not benchbook's role chunk, so it is left out) as
    benchbook's phases format, with capture paths prefixed by ``prefix`` (where the derived file
    sits relative to the copied run folder); also the prompt classes (tokens from ``usage``, words
    from ``prompt_words``) and the generation budget (``max_tokens``)."""
    doc = load_json(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("samples"), list):
        raise InputError(path, "$.samples", "expected an object with a samples array (the phase harness's file)")
    samples, classes, gen = [], {}, None
    for i, s in enumerate(doc["samples"]):
        where = f"$.samples[{i}]"
        if not isinstance(s, dict):
            raise InputError(path, where, "expected an object")
        for key in ("prompt_class", "client_total_s", "metrics_before", "metrics_after"):
            if key not in s:
                raise InputError(path, f"{where}.{key}", "missing")
        rnd = s.get("repeat", s.get("round"))
        if not isinstance(rnd, int):
            raise InputError(path, f"{where}.round", f"expected an integer round, found {rnd!r}")
        out = {
            "prompt_class": str(s["prompt_class"]),
            "repeat": rnd,
            "warmup": bool(s.get("warmup", rnd == 0)),
            "client_total_s": s["client_total_s"],
            "metrics_before": f"{prefix}{s['metrics_before']}",
            "metrics_after": f"{prefix}{s['metrics_after']}",
        }
        # the harness's first_event_s is its first *content* event (a token), not the role chunk
        # benchbook's first_event_s means (data/README.md): left out, as capture phases does
        usage = s.get("usage") if isinstance(s.get("usage"), dict) else {}
        # the client's counts (the server's usage), reconciled with the engine's Δ tokens by the audit
        for key in ("prompt_tokens", "completion_tokens"):
            if isinstance(usage.get(key), int):
                out[key] = usage[key]
        for key in ("max_tokens", "finish_reason"):
            if s.get(key) is not None:
                out[key] = s[key]
        samples.append(out)
        tok = usage.get("prompt_tokens")
        if isinstance(tok, int) and tok >= 1:
            c = classes.setdefault(out["prompt_class"], {"tokens": tok})
            if isinstance(s.get("prompt_words"), int) and s["prompt_words"] >= 1:
                c["words"] = s["prompt_words"]
        if isinstance(s.get("max_tokens"), int) and s["max_tokens"] >= 1:
            gen = max(gen or 0, s["max_tokens"])
    return {"format": "benchbook.phases/1", "samples": samples}, classes, gen


# ---- the runner's events -> memory markers -------------------------------------------------------
