"""``benchbook init DIR FILE…``: scaffold a campaign from result files and captures.

Inputs, each one of:

* a benchmark-tool result file (any format ``benchbook.ingest.formats`` reads) -> one results run;
* a folder written by ``benchbook capture run`` (``capture.json`` with ``"kind": "run"``): its
  result files and its /metrics snapshots (before, during, after) -> one results run;
* a folder written by ``benchbook capture phases`` (``capture.json`` with ``"kind": "phases"``), or
  any folder holding a ``phases.json`` -> one phases run (copied as it is);
* a plain folder of result files and ``.prom`` captures -> one results run; the capture with the
  fewest finished requests is *before*, the one with the most *after*, the rest periodic snapshots;
* loose ``.prom`` captures given beside exactly one loose result file -> that run's engine window.
* an arm folder, a run folder (one server process) or a folder of arm folders
  (:mod:`benchbook.ingest.run_layout`): arms × runs × load points, each process's configuration read
  from what its engine stated (:mod:`benchbook.ingest.server_config`); written by
  :mod:`benchbook.commands.init_layout`.

Every file is copied into ``DIR/runs/<run>/`` byte for byte (hashes checked after the copy; the
originals are never touched). ``campaign.json`` gets every field the files state (title, date,
model, loads, engine and its /metrics profile, host); runs of the same configuration (model, rate,
concurrency, prompt count, engine and every deployment field the files carry: the compare page's
identity, :mod:`benchbook.analysis.identity`) share an arm; a second configuration with the same
short name gets a label that says what differs. What a person must still
decide goes into ``campaign.json``'s ``todo`` list and ``"TODO: …"`` values, which pages show.
``init`` ends by validating the campaign (exit 2 with every problem listed if it does not pass).
See docs/init.md.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from benchbook.errors import EXIT_BAD_INPUT, InputError
from benchbook.jsonfile import load_json, sha256_file

CAPTURE_SUFFIXES = (".prom", ".metrics", ".txt")


def add_arguments(p) -> None:
    p.add_argument("dir", type=Path, help="the campaign folder to create (must not exist, or be empty)")
    p.add_argument(
        "inputs",
        nargs="+",
        type=Path,
        metavar="FILE",
        help="result files, /metrics captures, folders written by `benchbook capture run|phases|ladder`, "
        "and arm folders / run folders (docs/init.md: arms, runs and load points)",
    )
    p.add_argument("--title", default=None, help="campaign title (default: made from the models and tools)")
    p.add_argument("--question", default=None, help="the question the campaign answers (default: a TODO)")
    p.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="also print what validate found in every file (one line per file and load point)",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="print only problems")


# ---------------------------------------------------------------------------------------- plan


@dataclass
class PlannedRun:
    id: str
    harness: str  # "results" | "phases"
    source: Path  # a folder (copied whole) or a file
    files: list[Path] = field(default_factory=list)  # results: result files (absolute, in source)
    before: Path | None = None
    after: Path | None = None
    snapshots: list[tuple[Path, float | None]] = field(default_factory=list)
    capture: dict[str, Any] | None = None  # the capture.json, when the folder came from `capture`
    bench: list[Any] = field(default_factory=list)  # formats.BenchmarkRun read from ``files``
    copies: list[tuple[Path, str]] = field(default_factory=list)  # (source file, path inside the run folder)
    phases_doc: dict[str, Any] | None = None  # phases: the copied phases.json
    layout: Any = None  # "layout": an ingest.run_layout.RunFolder (one server process of an arm)


def _slug(s: str) -> str:
    s = re.sub(r"[^A-Za-z0-9._-]+", "-", s).strip("-._").lower()
    return s[:60] or "run"


def _unique(base: str, taken: set[str]) -> str:
    out, i = base, 2
    while out in taken:
        out, i = f"{base}-{i}", i + 1
    taken.add(out)
    return out


def _is_capture(p: Path) -> bool:
    """A ``/metrics`` capture, plain or gzip-compressed (``before.prom.gz``: kept compressed in the copy)."""
    from benchbook.jsonfile import plain_suffix, read_head

    if plain_suffix(p) not in CAPTURE_SUFFIXES:
        return False
    head = read_head(p, 64, "/metrics capture").lstrip()  # a FIFO is refused, never opened to block
    return head[:1] not in (b"{", b"[")


def _kind_error(where: Path, at: str, v: Any, want: str) -> InputError:
    shown = repr(v) if len(repr(v)) <= 60 else repr(v)[:57] + "..."
    return InputError(where, at, f"is {shown}, expected {want} (is this a capture.json written by benchbook capture?)")


def load_capture(cap_file: Path) -> dict[str, Any] | None:
    """A folder's ``capture.json`` (None where there is none), checked in every part init reads: a
    JSON object; ``result_files`` a list of file names (or objects with ``file``); ``snapshots`` a
    list of objects with a ``file`` name, a ``phase`` and a numeric ``unix_s``; ``prompt_classes`` an
    object of objects; ``samples`` a list of objects. The file names are checked to stay inside the
    folder when they are used (:func:`_from_capture_run`): nothing outside it is read."""
    from benchbook.jsonfile import load_json

    if not cap_file.is_file():
        return None
    cap = load_json(cap_file)
    if not isinstance(cap, dict):
        raise InputError(cap_file, "$", "expected a JSON object (a capture.json written by benchbook capture)")
    kind = cap.get("kind")
    if kind is not None and not isinstance(kind, str):
        raise _kind_error(cap_file, "$.kind", kind, "text")
    lists = {"result_files": "a list", "snapshots": "a list", "samples": "a list"}
    for key, want in lists.items():
        if cap.get(key) is not None and not isinstance(cap[key], list):
            raise _kind_error(cap_file, f"$.{key}", cap[key], want)
    for i, f in enumerate(cap.get("result_files") or []):
        name = f.get("file") if isinstance(f, dict) else f
        if not isinstance(name, str):
            raise _kind_error(cap_file, f"$.result_files[{i}]", f, "a file name or an object with its 'file' name")
    for i, s in enumerate(cap.get("snapshots") or []):
        if not isinstance(s, dict) or not isinstance(s.get("file"), str):
            raise _kind_error(cap_file, f"$.snapshots[{i}]", s, "an object with the snapshot's 'file' name")
        if s.get("phase") is not None and not isinstance(s["phase"], str):
            raise _kind_error(cap_file, f"$.snapshots[{i}].phase", s["phase"], "'before', 'during' or 'after'")
        t = s.get("unix_s")
        if t is not None and (isinstance(t, bool) or not isinstance(t, (int, float))):
            raise _kind_error(cap_file, f"$.snapshots[{i}].unix_s", t, "the scrape's Unix time (a number)")
    for i, s in enumerate(cap.get("samples") or []):
        if not isinstance(s, dict):
            raise _kind_error(cap_file, f"$.samples[{i}]", s, "an object")
    pcs = cap.get("prompt_classes")
    if pcs is not None and not isinstance(pcs, dict):
        raise _kind_error(cap_file, "$.prompt_classes", pcs, "an object of prompt classes")
    return cap


def _files_under(folder: Path) -> list[Path]:
    from benchbook.jsonfile import walk

    out = []
    entries = sorted(Path(d, n) for d, dirs, files in walk(folder) for n in [*dirs, *files])
    for p in entries:
        if p.is_symlink():
            raise InputError(p, "-", "is a symlink; init copies regular files only (copy the file itself in)")
        if p.is_file():
            out.append(p)
        elif not p.is_dir():  # a FIFO, a device, a socket: refused, not silently left out
            from benchbook.jsonfile import open_regular

            open_regular(p).close()
    return out


def _finished(path: Path) -> float:
    """Finished requests (success + aborted + error) in one capture, for ordering captures in time."""
    from benchbook.analysis import enginemetrics
    from benchbook.metrics import prometheus
    from benchbook.metrics.profiles import detect_profile

    snap = prometheus.read(path)
    prof = detect_profile(snap)
    total = 0.0
    for q in ("requests_success", "requests_aborted", "requests_error", "generation_tokens"):
        if prof.has(q):
            total += sum(enginemetrics.values(snap, prof, q).values())
    return total


def _order_captures(caps: list[Path]) -> tuple[Path | None, Path | None, list[Path]]:
    if len(caps) < 2:
        return None, None, []
    ordered = sorted(caps, key=lambda p: (_finished(p), p.name))
    return ordered[0], ordered[-1], ordered[1:-1]


def plan(inputs: list[Path]) -> tuple[list[PlannedRun], list[str]]:
    """Classify the inputs into runs; the second value lists what a person must still decide."""
    from benchbook.ingest import formats

    runs: list[PlannedRun] = []
    todo: list[str] = []
    taken: set[str] = set()
    loose_results: list[Path] = []
    loose_caps: list[Path] = []
    for src in inputs:
        if src.is_symlink():
            raise InputError(src, "-", "is a symlink; give the file or folder itself")
        if not src.exists():
            raise InputError(src, "-", "no such file or folder")
        if src.is_dir() and _layout_runs(src, runs, taken):
            continue
        if src.is_dir():
            cap_file = src / "capture.json"
            cap = load_capture(cap_file)
            kind = (cap or {}).get("kind")
            if kind == "phases" or (kind is None and (src / "phases.json").is_file()):
                if not (src / "phases.json").is_file():
                    raise InputError(src, "-", "a phases capture folder without phases.json (was the capture stopped?)")
                r = PlannedRun(_unique(_slug(src.name), taken), "phases", src, capture=cap)
                r.copies = [(p, p.relative_to(src).as_posix()) for p in _files_under(src)]
                runs.append(r)
                continue
            r = PlannedRun(_unique(_slug(src.name), taken), "results", src, capture=cap)
            r.copies = [(p, p.relative_to(src).as_posix()) for p in _files_under(src)]
            if kind == "run":
                _from_capture_run(r, src, cap)
            elif kind is not None:
                raise InputError(cap_file, "$.kind", f"unknown capture kind {kind!r}; expected 'run' or 'phases'")
            else:
                caps = [p for p in _files_under(src) if _is_capture(p)]
                r.files = [p for p in _files_under(src) if p not in caps and _detect(p)]
                r.before, r.after, mid = _order_captures(caps)
                r.snapshots = [(p, None) for p in mid]
                if len(caps) == 1:
                    todo.append(
                        f"run {r.id}: one /metrics capture ({caps[0].name}); an engine window needs a before and an after"
                    )
            if not r.files:
                raise InputError(
                    src,
                    "-",
                    f"no result file in this folder (formats read: {', '.join(f.name for f in formats.FORMATS)})",
                )
            runs.append(r)
        elif _is_capture(src):
            loose_caps.append(src)
        else:
            if not _detect(src):
                formats.read(src)  # raises the reader's own error: what it saw, the known formats
            loose_results.append(src)
    for f in loose_results:
        r = PlannedRun(_unique(_slug(f.stem), taken), "results", f, files=[f], copies=[(f, f.name)])
        runs.append(r)
    if loose_caps:
        if len(loose_results) != 1:
            raise InputError(
                loose_caps[0],
                "-",
                f"{len(loose_caps)} loose /metrics capture(s) beside {len(loose_results)} loose result files: "
                "cannot tell which run they belong to; put each run's result file and captures in one folder",
            )
        r = runs[-1]
        r.before, r.after, mid = _order_captures(loose_caps)
        r.snapshots = [(p, None) for p in mid]
        names: set[str] = {r.files[0].name}
        for p in loose_caps:
            name = p.name if p.name not in names else f"metrics-{p.name}"
            names.add(name)
            r.copies.append((p, f"metrics/{name}"))
        if len(loose_caps) == 1:
            raise InputError(loose_caps[0], "-", "one /metrics capture: an engine window needs a before and an after")
    for r in runs:
        if r.harness == "results":
            r.bench = [b for f in r.files for b in formats.read(f)]
    if not runs:
        raise InputError(inputs[0] if inputs else "-", "-", "no result file, capture folder or phases run given")
    return runs, todo


def _layout_runs(src: Path, runs: list[PlannedRun], taken: set[str]) -> bool:
    """An arm folder, a run folder or a folder of arm folders (``ingest.run_layout``): one planned
    run per server process, its whole folder copied; False for init's other inputs."""
    from benchbook.ingest import formats, run_layout

    rfs = run_layout.run_folders(src)
    if not rfs:
        return False
    for rf in rfs:
        rel = f"{_slug(rf.arm)}/{_slug(rf.run)}"
        if any(r.harness == "layout" and r.id == rel for r in runs):
            raise InputError(rf.folder, "-", f"arm {rf.arm} run {rf.run} is given twice")
        r = PlannedRun(rel, "layout", rf.folder, layout=rf)
        r.copies = [(p, p.relative_to(rf.folder).as_posix()) for p in _files_under(rf.folder)]
        r.files = [pt.result for pt in rf.points]
        r.after = next((c for c in rf.captures), None)
        r.bench = [b for f in r.files for b in formats.read(f)]
        runs.append(r)
    return True


def _detect(p: Path) -> bool:
    from benchbook.ingest import formats

    try:
        formats.detect(p)
    except InputError:
        return False
    return True


def _from_capture_run(r: PlannedRun, src: Path, cap: dict[str, Any]) -> None:
    """A `benchbook capture run` folder: result files and snapshots as its capture.json lists them."""
    from benchbook.jsonfile import join_inside

    where = src / "capture.json"
    for i, f in enumerate(cap.get("result_files") or []):
        rel = f.get("file") if isinstance(f, dict) else f
        p = join_inside(src, src, rel, where, f"$.result_files[{i}]", "result file")  # nothing outside is read
        if not p.is_file():
            raise InputError(where, f"$.result_files[{i}]", f"{rel!r} is not in the folder")
        if _detect(p):
            r.files.append(p)
    snaps = cap.get("snapshots") or []
    for i, s in enumerate(snaps):
        p = join_inside(src, src, s["file"], where, f"$.snapshots[{i}].file", "snapshot")
        if not p.is_file():
            raise InputError(where, f"$.snapshots[{i}].file", f"{s.get('file')!r} is not in the folder")
        phase = s.get("phase")
        if phase == "before" and r.before is None:
            r.before = p
        elif phase == "after":
            r.after = p
        # every timed scrape, the window's ends included: Little's law averages over their span
        r.snapshots.append((p, s.get("unix_s")))
    if r.before is None or r.after is None:
        r.before = r.after = None  # no window without both ends; the snapshots still go in


# ---------------------------------------------------------------------------------------- write


def _copy(src: Path, dst: Path) -> str:
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)
    a, b = sha256_file(src), sha256_file(dst)
    if a != b:  # pragma: no cover - a disk that corrupts copies
        raise InputError(dst, "-", f"copy of {src} differs from its source (sha256 {b} vs {a})")
    return a


def _date(runs: list[PlannedRun]) -> tuple[str, str]:
    """The campaign date (YYYY-MM-DD) and where it came from."""
    for r in runs:
        for b in r.bench:
            d = b.config.get("date")
            m = re.match(r"^(\d{4})-?(\d{2})-?(\d{2})", str(d or ""))
            if m:
                return f"{m[1]}-{m[2]}-{m[3]}", f"the date in {Path(b.source).name}"
        for key in ("started_at",):
            d = (r.capture or {}).get(key)
            if isinstance(d, str) and re.match(r"^\d{4}-\d{2}-\d{2}", d):
                return d[:10], f"{key} in {r.source.name}/capture.json"
        rf = r.layout  # a server process's folder: the capture folders in it state when they ran
        for folder in [*rf.point_folders, *rf.phases_folders, *rf.ladder_folders] if rf is not None else []:
            cap = load_json(folder / "capture.json") if (folder / "capture.json").is_file() else None
            d = cap.get("started_at") if isinstance(cap, dict) else None
            if isinstance(d, str) and re.match(r"^\d{4}-\d{2}-\d{2}", d):
                return d[:10], f"started_at in {rf.process}/{folder.name}/capture.json"
    src = runs[0].files[0] if runs[0].files else runs[0].source
    when = datetime.fromtimestamp(src.stat().st_mtime, timezone.utc).strftime("%Y-%m-%d")
    return when, f"the modification time of {src.name} (no file states a date)"


def _engine(runs: list[PlannedRun]) -> tuple[dict[str, str] | None, str | None]:
    from benchbook.metrics import prometheus
    from benchbook.metrics.profiles import detect_profile

    for r in runs:
        cap = r.capture or {}
        snap_path = r.after or next((p for p, _ in r.snapshots), None)
        if r.harness == "phases":
            prom = (
                sorted(p for p in (r.source / "metrics").iterdir() if _is_capture(p))
                if (r.source / "metrics").is_dir()
                else []
            )
            snap_path = prom[-1] if prom else None
        if snap_path is None:
            continue
        prof = detect_profile(prometheus.read(snap_path))
        backend = next((b.config.get("backend") for b in r.bench if b.config.get("backend")), None)
        name = cap.get("engine") if isinstance(cap.get("engine"), str) else backend or prof.name.split("-")[0]
        return {"name": str(name), "profile": prof.name}, f"/metrics names in {snap_path.name}"
    return None, None


def _host(runs: list[PlannedRun]) -> dict[str, str]:
    for r in runs:
        h = (r.capture or {}).get("host")
        if isinstance(h, dict):
            out = {}
            for k, v in h.items():
                if isinstance(v, (str, int, float)) and not isinstance(v, bool):
                    out[k] = v
                elif isinstance(v, dict) and isinstance(v.get("gpus"), list):
                    out[k] = "; ".join(str(g.get("name", g)) for g in v["gpus"] if isinstance(g, dict))
            return {k: v for k, v in out.items() if v not in ("", None)}
    return {}


def build(dir_: Path, runs: list[PlannedRun], todo: list[str], title: str | None, question: str | None) -> dict:
    """Copy every file and write campaign.json, each results.json and README.md."""
    from benchbook.analysis import identity as ident
    from benchbook.ingest import formats
    from benchbook.jsonfile import load_json

    dir_.mkdir(parents=True, exist_ok=True)
    hashes: list[tuple[str, str, str]] = []  # (copy, sha256, original)
    arms: dict[str, dict[str, Any]] = {}
    arm_idents: list[tuple[str, Any]] = []  # (arm, identity of its runs), in order
    entries: list[dict[str, Any]] = []
    models: list[str] = []
    tools: list[str] = []
    layout_runs = [r for r in runs if r.harness == "layout"]
    for r in layout_runs:  # one server process: its folder copied whole, byte for byte
        folder = dir_ / "runs" / r.id
        for src, rel in r.copies:
            hashes.append((f"runs/{r.id}/{rel}", _copy(src, folder / rel), str(src.resolve())))
        models += [str(b.config.get("model")) for b in r.bench if b.config.get("model")]
        tools += [b.format for b in r.bench]
    for r in runs:
        if r.harness == "layout":
            continue
        folder = dir_ / "runs" / r.id
        if r.harness == "results":  # results.json is ours: a tool's file of that name is copied beside it
            r.copies = [(src, "tool-results.json" if rel == "results.json" else rel) for src, rel in r.copies]
        for src, rel in r.copies:
            hashes.append((f"runs/{r.id}/{rel}", _copy(src, folder / rel), str(src.resolve())))
        relmap = {src: rel for src, rel in r.copies}
        entry: dict[str, Any] = {"id": r.id, "harness": r.harness, "path": f"runs/{r.id}"}
        if r.harness == "results":
            # runs are one configuration when the compare page's identity says so (model, engine, dataset,
            # load and every deployment field the files carry), not when their short names agree
            ids = [ident.read_identity(b) for b in r.bench]
            configs = [i for k, i in enumerate(ids) if not any(ident.same_configuration(j, i) for j in ids[:k])]
            models += [str(b.config.get("model")) for b in r.bench if b.config.get("model")]
            tools += [b.format for b in r.bench]
            if len(configs) == 1:
                arm = next((a for a, i in arm_idents if ident.same_configuration(i, ids[0])), None)
                if arm is None:
                    label = ident.config_label(r.bench[0].config)
                    clash = [i for a, i in arm_idents if arms[a]["label"] == label]
                    if clash:  # same short name, another configuration: say what differs
                        diffs = ident.differences(clash[0], ids[0])
                        own = [f"{d.label} {d.b}" for d in diffs if d.b != "not recorded"]
                        label += " (" + (", ".join(own) or "; ".join(d.text() for d in diffs)) + ")"
                    arm = _unique(_slug(label), set(arms))
                    arm_idents.append((arm, ids[0]))
                    arms[arm] = {"label": label, "mode": "results", "description": _arm_description(r)}
                entry["arm"] = arm
            else:
                todo.append(
                    f"run {r.id}: its files hold {len(r.bench)} benchmark runs in {len(configs)} configurations "
                    "(a sweep); the page shows each, but one engine window cannot be reconciled with each of them"
                )
            doc: dict[str, Any] = {"format": "benchbook.results/1", "run": r.id, "files": [relmap[f] for f in r.files]}
            cap = r.capture or {}
            argv = (cap.get("command") or {}).get("argv") if isinstance(cap.get("command"), dict) else None
            if isinstance(argv, list):
                doc["command"] = [str(a) for a in argv]
            doc["tool"] = ", ".join(dict.fromkeys(b.format for b in r.bench))
            for k in ("started_at", "ended_at"):
                if isinstance(cap.get(k), str):
                    doc[k] = cap[k]
            status = (cap.get("command") or {}).get("exit_status") if isinstance(cap.get("command"), dict) else None
            if isinstance(status, int) and status != 0:
                todo.append(f"run {r.id}: the benchmark command exited with status {status}; are its results whole?")
            if cap.get("complete") is False:
                doc["complete"] = False
                todo.append(f"run {r.id}: its capture did not complete ({cap.get('stopped') or 'no reason given'})")
            if r.before is not None and r.after is not None:
                doc["metrics_before"], doc["metrics_after"] = relmap[r.before], relmap[r.after]
            elif r.harness == "results":
                todo.append(
                    f"run {r.id}: no engine /metrics before and after, so nothing is reconciled with the engine"
                )
            if r.snapshots:
                doc["snapshots"] = [
                    {"file": relmap[p], **({"unix_s": t} if isinstance(t, (int, float)) else {})}
                    for p, t in r.snapshots
                ]
            (folder / "results.json").write_bytes(_dump(doc))
        else:
            ph = load_json(folder / "phases.json")
            cap = r.capture or {}
            arm = _unique(_slug(r.id), set(arms))
            arms[arm] = {
                "label": r.id,
                "mode": "serial",
                "environment": "default",
                "description": "phase harness: one streamed request at a time, /metrics before and after each",
            }
            entry["arm"] = arm
            server = cap.get("server") if isinstance(cap.get("server"), dict) else {}
            if server.get("model"):
                models.append(str(server["model"]))
            tools.append("phase harness")
            r.phases_doc = ph
        entries.append(entry)

    lay = None
    if layout_runs:
        from benchbook.commands.init_layout import plan_layout

        lay = plan_layout([r.layout for r in layout_runs], {e["id"] for e in entries}, point_files)
        for rel, doc in lay.docs:
            (dir_ / rel).parent.mkdir(parents=True, exist_ok=True)
            (dir_ / rel).write_bytes(_dump(doc))
        entries += lay.entries
        only_layout = not arms  # explicit pairs would hide the default pairing of init's other arms
        arms.update(lay.arms)
        todo += lay.todo
        models += lay.models
        tools += lay.tools
        if any(e["harness"] == "phases" for e in lay.entries):
            tools.append("phase harness")
    date, date_from = _date(runs)
    engine, engine_from = _engine(runs)
    if engine is None and lay is not None and lay.engine is not None:  # no /metrics: the server log says it
        engine, engine_from = lay.engine[0], f"the server's own files ({lay.engine[1]})"
    model_names = list(dict.fromkeys(models))
    manifest: dict[str, Any] = {
        "format": "benchbook.campaign/1",
        "title": title or _title(model_names, list(dict.fromkeys(tools))),
        "question": question
        or "TODO: the one question this campaign answers (e.g. which concurrency meets the latency SLO?)",
        "date": date,
        "provenance": "measured",
        "scope": {
            "measured": [],  # filled below, counted in the one vocabulary (manifest.counts_text)
            "outside": ["TODO: what these runs do not cover (hardware, other loads, other models)"],
        },
    }
    host = _host(runs)
    if host:
        manifest["host"] = host
    if model_names:
        manifest["checkpoint"] = (
            {"path": model_names[0]} if len(model_names) == 1 else {"models": ", ".join(model_names)}
        )
    if engine:
        manifest["engine"] = engine
    phases = [r for r in runs if r.harness == "phases"]
    for pf in lay.phase_folders if lay is not None else []:  # the layout's benchbook phases folders
        cap = load_capture(pf / "capture.json")
        phases.append(PlannedRun(pf.name, "phases", pf, capture=cap, phases_doc=load_json(pf / "phases.json")))
    if phases:
        manifest["environments"] = {
            "default": {"description": "as captured: TODO name the server's settings", "variables": {}}
        }
        if engine is None:
            raise InputError(
                phases[0].source, "-", "no /metrics capture in the phases run: cannot name the engine profile"
            )
        pcs, gen = _phase_facts(phases, todo, engine["profile"])
        manifest["prompt_classes"] = pcs
        if gen:
            manifest["generation_tokens"] = gen
    if lay is not None:
        envs = manifest.setdefault("environments", {})
        envs.update(lay.environments)
        if lay.prompt_classes:
            manifest["prompt_classes"] = {**lay.prompt_classes, **manifest.get("prompt_classes", {})}
        if lay.generation_tokens and "generation_tokens" not in manifest:
            manifest["generation_tokens"] = lay.generation_tokens
        elif lay.generation_tokens and lay.generation_tokens != manifest["generation_tokens"]:
            todo.append(
                f"generation_tokens: the captures asked for different --max-tokens (up to {lay.generation_tokens}; "
                f"{manifest['generation_tokens']} written): the pages state one generation length for every table"
            )
    if arms:  # none when every results run holds several configurations: the page makes them from identity
        manifest["arms"] = arms
    manifest["runs"] = entries
    from benchbook.ingest.manifest import counts_text

    manifest["scope"]["measured"] = [
        f"{counts_text(manifest)}, brought in by benchbook init from {', '.join(dict.fromkeys(tools))}"
    ]
    if lay is not None and lay.comparisons and only_layout:
        manifest["comparisons"] = lay.comparisons
    notes = [f"date: {date_from}"]
    if engine_from:
        notes.append(f"engine profile {engine['profile']}: {engine_from}")
    same = [
        a
        for a in arms
        if sum(1 for e in entries if e.get("arm") == a) > 1
        and not any("process" in e for e in entries if e.get("arm") == a)
    ]
    for a in arms:  # the arm/run layout: server processes of one arm are the repeats
        procs = list(dict.fromkeys(e["process"] for e in entries if e.get("arm") == a and "process" in e))
        if len(procs) > 1:
            notes.append(f"arm {a}: {len(procs)} server processes ({', '.join(procs)}) are its repeats")
    for a in same:
        ids = [e["id"] for e in entries if e.get("arm") == a]
        todo.append(
            f"arm {a}: runs {', '.join(ids)} have the same configuration ({arms[a]['label']}); they are treated as "
            "repeats — split them into separate arms if they are not"
        )
    if question is None:
        todo.insert(0, "question: say what this campaign answers (campaign.json question)")
    todo.append("scope.outside: say what these runs do not cover")
    manifest["todo"] = todo
    (dir_ / "campaign.json").write_bytes(_dump(manifest))
    (dir_ / "README.md").write_text(_readme(manifest, hashes, notes, formats), encoding="utf-8")
    return manifest


def _arm_description(r: PlannedRun) -> str:
    b = r.bench[0]
    c = b.config
    bits = [f"{b.format}"]
    for k in ("backend", "dataset_name"):
        if c.get(k):
            bits.append(f"{k} {c[k]}")
    return ", ".join(bits)


def _counted(r: PlannedRun, profile_name: str) -> tuple[dict[str, int], int | None]:
    """Prompt tokens per class and the most generated tokens, as the engine counted them: the phase
    split of each sample that can be attributed to one request (the others say nothing here)."""
    from benchbook.ingest.campaign import capture_sample_snapshots
    from benchbook.metrics import phases
    from benchbook.metrics.profiles import get_profile

    prof = get_profile(profile_name)
    prompt: dict[str, int] = {}
    gen: int | None = None
    # the campaign's one reader of capture-file samples: each capture inside the folder (else bad
    # input, named), a restart between the two captures leaves the sample out
    for i, s in enumerate((r.phases_doc or {}).get("samples", [])):
        if "metrics_before" not in s or "metrics_after" not in s:
            continue
        before, after, restarted = capture_sample_snapshots(r.source, r.source, r.source / "phases.json", s, i, prof)
        try:
            if restarted:
                raise phases.Excluded(restarted)
            sp = phases.split(before, after, prof)
        except phases.Excluded:
            continue
        prompt.setdefault(s["prompt_class"], int(sp.prompt_tokens))
        gen = max(gen or 0, int(sp.generated_tokens))
    return prompt, gen


def _phase_facts(phases: list[PlannedRun], todo: list[str], profile: str) -> tuple[dict[str, Any], int | None]:
    """prompt_classes and generation_tokens from the phases runs' capture.json, else as the engine
    counted them (``_counted``: the prompt tokens of a class, the most tokens generated)."""
    pcs: dict[str, Any] = {}
    gen = None
    for r in phases:
        cap = r.capture or {}
        for name, c in (cap.get("prompt_classes") or {}).items():
            tokens = c.get("tokens") if isinstance(c, dict) else None
            words = c.get("words") if isinstance(c, dict) else None
            if not isinstance(tokens, int) or tokens < 1:
                tokens = next(
                    (
                        s.get("prompt_tokens")
                        for s in cap.get("samples") or []
                        if s.get("prompt_class") == name and isinstance(s.get("prompt_tokens"), int)
                    ),
                    None,
                )
            if isinstance(tokens, int) and tokens >= 1:
                pcs[name] = {"tokens": tokens, **({"words": words} if isinstance(words, int) and words >= 1 else {})}
        if isinstance(cap.get("generation_tokens"), int) and cap["generation_tokens"] >= 1:
            gen = cap["generation_tokens"]
        counted, most = _counted(r, profile)
        for name, tokens in counted.items():
            pcs.setdefault(name, {"tokens": tokens})
        gen = gen or most
    classes = {s["prompt_class"] for r in phases for s in (r.phases_doc or {}).get("samples", [])}
    missing = sorted(classes - set(pcs))
    if missing:
        todo.append(
            f"prompt_classes: token counts of {', '.join(missing)} unknown (no capture.json or attributable "
            "sample says them); "
            "pages show these classes without a prompt length"
        )
    if gen is None:
        todo.append("generation_tokens: the --max-tokens of the phase requests is not recorded; add it")
    elif not any(isinstance((r.capture or {}).get("generation_tokens"), int) for r in phases):
        todo.append(
            f"generation_tokens: {gen} is the most tokens the engine counted for one request, "
            "not a recorded --max-tokens; correct it if the budget was larger"
        )
    return pcs, gen


def _title(models: list[str], tools: list[str]) -> str:
    m = ", ".join(x.rstrip("/").split("/")[-1] for x in models[:3]) or "unknown model"
    if len(models) > 3:
        m += f" and {len(models) - 3} more"
    return f"{m}: {', '.join(tools)}"


def _dump(doc: Any) -> bytes:
    import json

    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _readme(manifest: dict, hashes: list[tuple[str, str, str]], notes: list[str], formats) -> str:
    lines = [
        f"# {manifest['title']}",
        "",
        "Made by `benchbook init` from measured files; every file below is a byte-for-byte copy (sha256).",
        "",
        "What init inferred: " + "; ".join(notes) + ".",
        "",
        "Still to decide (also `todo` in campaign.json):",
        "",
        *[f"- {t}" for t in manifest.get("todo", [])],
        "",
        "| file | sha256 | copied from |",
        "|---|---|---|",
        *[f"| `{c}` | `{h}` | `{o}` |" for (c, h, _), o in zip(hashes, _from_names([o for *_, o in hashes]))],
        "",
    ]
    return "\n".join(lines)


def _from_names(originals: list[str]) -> list[str]:
    """Where each file was copied from, relative to the folder above all of them (``in/arm/p1/x.json``
    → ``arm/p1/x.json``): the README names no folder of the machine init ran on."""
    if not originals:
        return []
    top = os.path.dirname(os.path.commonpath([os.path.dirname(o) for o in originals]))
    return [os.path.relpath(o, top) for o in originals]


# ---------------------------------------------------------------------------------------- CLI


def _shown(p: Path) -> str:
    """A path for a message: bytes that are not UTF-8 shown as ``\\xff``."""
    return os.fsencode(p).decode("utf-8", "backslashreplace")


def _check_names(runs: list[PlannedRun]) -> None:
    """Every file init would copy has a UTF-8 name (campaign.json and README.md name them)."""
    for r in runs:
        for src, rel in r.copies:
            for name in (str(src), rel):
                try:
                    name.encode("utf-8")
                except UnicodeEncodeError:
                    raise InputError(
                        _shown(src), "-", "file name is not UTF-8: rename it (campaign.json names every file it holds)"
                    ) from None


def _remove_stale_temps(d: Path) -> list[str]:
    """The temporary folders a killed ``init`` of ``d`` left beside it (``.d.init-<pid>@<host>.*``:
    87-145 MB each in the issue), removed when their process is gone on this host; a live init's,
    another host's (a shared disk) and an older init's without its PID are left alone."""
    from benchbook.pipeline.plan import INIT_TEMP

    host = socket.gethostname()
    removed = []
    try:
        entries = list(d.parent.iterdir())
    except OSError:
        return removed
    for p in entries:
        m = INIT_TEMP.match(p.name)
        if m is None or m["dir"] != d.name or m["pid"] is None or m["host"] != host or p.is_symlink():
            continue
        try:
            os.kill(int(m["pid"]), 0)
            continue  # still running (or another user's process: not ours to judge)
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        shutil.rmtree(p, ignore_errors=True)
        removed.append(p.name)
        print(f"benchbook init: removed {p.name}, left by a killed init (process {m['pid']})", file=sys.stderr)
    return removed


def _build_whole(d: Path, runs: list[PlannedRun], todo: list[str], title, question) -> dict:
    """:func:`build` into a temporary sibling folder, renamed to ``d`` once complete: a failure
    leaves no half-written DIR behind (a rerun would find it not empty)."""
    import tempfile

    d.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temps(d)
    tmp = Path(tempfile.mkdtemp(prefix=f".{d.name}.init-{os.getpid()}@{socket.gethostname()}.", dir=d.parent))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)  # a folder as mkdir makes it, not mkdtemp's 0700
    try:
        manifest = build(tmp, runs, todo, title, question)
        if d.is_dir():
            d.rmdir()  # an empty DIR given on purpose (checked above)
        os.rename(tmp, d)
    except BaseException as e:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(e, OSError) and not isinstance(e, BlockingIOError):
            raise InputError(d, "-", f"cannot write the campaign folder: {e.strerror or e}") from None
        raise
    return manifest


def run(args) -> int:
    from benchbook.commands.validate import validate_campaign

    out = (lambda *_a, **_k: None) if args.quiet else print
    # what validate found in each file: a line per file and load point (120 for 8 processes), behind -v
    detail = print if getattr(args, "verbose", False) and not args.quiet else (lambda *_a, **_k: None)
    d: Path = args.dir
    if d.is_symlink():  # a dangling one too (exists() is False for it; mkdir failed, exit 1)
        raise InputError(d, "-", "is a symlink; init writes a new campaign folder (give a new DIR, not a link)")
    if d.exists() and (not d.is_dir() or any(d.iterdir())):
        raise InputError(d, "-", "exists and is not empty; init writes a new campaign folder (give a new DIR)")
    try:
        if d.resolve() in [p.resolve() for p in args.inputs] or any(
            d.resolve().is_relative_to(p.resolve()) for p in args.inputs if p.is_dir()
        ):
            raise InputError(d, "-", "is inside one of the inputs; give a campaign folder elsewhere")
    except OSError:
        pass
    runs, todo = plan(list(args.inputs))
    _check_names(runs)
    manifest = _build_whole(d, runs, todo, args.title, args.question)
    from benchbook.ingest.manifest import counts_text

    out(f"benchbook init: wrote {d / 'campaign.json'}: {counts_text(manifest)}")
    for t in manifest["todo"]:
        out(f"  todo: {t}")
    errors = validate_campaign(d, detail)
    for e in errors:
        print(str(e), file=sys.stderr)
    if errors:
        print(
            f"benchbook init: the new campaign does not validate ({len(errors)} problem(s)); {d} is left for inspection",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    out(
        f"benchbook init: {d} is valid"
        + ("" if getattr(args, "verbose", False) else " (-v lists what was read from each file)")
        + f"; render it with: benchbook render {d} --out reports/{d.name}"
    )
    return 0


def point_files(folder: Path) -> tuple[list[Path], Path | None, Path | None, list[tuple[Path, float | None]]]:
    """A load-point folder's result files, before/after captures and timed snapshots."""

    cap = load_capture(folder / "capture.json")
    if cap is not None and cap.get("kind") == "run":
        r = PlannedRun("p", "results", folder, capture=cap)
        _from_capture_run(r, folder, r.capture)
        return r.files, r.before, r.after, r.snapshots
    files = _files_under(folder)
    caps = [p for p in files if _is_capture(p)]
    results = [p for p in files if p not in caps and _detect(p)]
    before, after, mid = _order_captures(caps)
    return results, before, after, [(p, None) for p in mid]
