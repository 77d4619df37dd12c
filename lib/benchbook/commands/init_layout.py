"""``benchbook init`` for arms × runs × load points (``ingest.run_layout``): one server process per run
folder, copied whole into ``DIR/runs/<arm>/<run>/``; what benchbook derives from it (a results.json
per load point, a phases.json in benchbook's format, a gpu.json naming the sample files) goes to
``DIR/runs/<arm>/<run>/benchbook/<part>/`` and names the copied files relative to it, so every
copy stays byte-for-byte what the process wrote.

The arm's configuration is what its processes' engine stated (``ingest.server_config``): carried per
run as ``server_config``, per arm as ``server_args`` (the switches) and, with the other settings a
person sets (``server_config.knobs``), as the variables of the arm's
environment (so the ablation reads each switch as it reads an environment variable). Two arms that
do not differ in what ran, and two runs of one arm that do, go into ``todo``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchbook.errors import InputError
from benchbook.ingest import formats, run_layout, server_config, windows


@dataclass
class LayoutResult:
    entries: list[dict[str, Any]] = field(default_factory=list)
    docs: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (path in DIR, document)
    arms: dict[str, dict[str, Any]] = field(default_factory=dict)
    environments: dict[str, dict[str, Any]] = field(default_factory=dict)
    prompt_classes: dict[str, dict[str, int]] = field(default_factory=dict)
    generation_tokens: int | None = None
    todo: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    phase_folders: list[Path] = field(default_factory=list)  # benchbook-format phases folders (facts by init)
    comparisons: list[dict[str, str]] = field(default_factory=list)  # the manifest's arm pairs (baseline, candidate)
    models: list[str] = field(default_factory=list)  # the models the capture folders' capture.json name
    tools: list[str] = field(default_factory=list)  # "capture ladder" (the title's tools)
    engine: tuple[dict[str, str], str] | None = None  # the engine a server log states, and which file


def _slug(s: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9._-]+", "-", s).strip("-._").lower()[:60] or "x"


def config_of(rf: run_layout.RunFolder) -> server_config.ServerConfig:
    """What the process ran (its captures, logs and server_info files)."""
    from benchbook.analysis.clamps import parse_startup_line

    return server_config.read_server_config(
        rf.captures, rf.logs, rf.infos, startup_parser=parse_startup_line, versions=rf.versions
    )


def _stated_models(rf: run_layout.RunFolder, point_files: Callable) -> tuple[list[Path], list[tuple[Path, str]]]:
    """The run folder's result files and the models its capture folders' capture.json name."""
    results = [pt.result for pt in rf.points] + [f for pf in rf.point_folders for f in point_files(pf)[0]]
    named = []
    for folder in [*rf.point_folders, *rf.phases_folders, *rf.ladder_folders]:
        cap = folder / "capture.json"
        doc = run_layout.load_json(cap) if cap.is_file() else None
        server = doc.get("server") if isinstance(doc, dict) else None
        if isinstance(server, dict) and isinstance(server.get("model"), str):
            named.append((cap, server["model"]))
    return results, named


def plan_layout(rfs: list[run_layout.RunFolder], taken: set[str], point_files: Callable) -> LayoutResult:
    """Manifest entries, derived documents and arm facts for every run folder. ``point_files(folder)``
    (the caller's, ``init.point_files``) says what a load-point folder holds: result files, before/after
    captures and timed snapshots."""
    out = LayoutResult()
    configs: dict[str, list[tuple[run_layout.RunFolder, server_config.ServerConfig]]] = {}
    seen_processes: set[str] = set()
    for rf in rfs:
        if rf.process in seen_processes:
            raise InputError(rf.folder, "-", f"run {rf.process} is given twice")
        seen_processes.add(rf.process)
        arm = _slug(rf.arm)
        base = f"runs/{arm}/{_slug(rf.run)}"
        single = sum(1 for x in rfs if x.arm == rf.arm) == 1
        stem = arm if single else f"{arm}-{_slug(rf.run)}"
        cfg = config_of(rf)
        server_config.check_one_server(rf.captures, *_stated_models(rf, point_files))  # one process, not two
        configs.setdefault(arm, []).append((rf, cfg))
        if out.engine is None:
            out.engine = _engine_of(cfg)
        common = {"arm": arm, "process": f"{arm}/{_slug(rf.run)}", "server_config": cfg.as_dict()}

        def rel(p: Path, folder: Path = rf.folder) -> str:
            return p.relative_to(folder).as_posix()

        def unique(name: str) -> str:
            out_id, i = name, 2
            while out_id in taken:
                out_id, i = f"{name}-{i}", i + 1
            taken.add(out_id)
            return out_id

        events = windows.event_windows(rf.events) if rf.events is not None else {}
        for pt in rf.points:
            rid = unique(f"{stem}-{_slug(pt.name)}")
            where = f"{base}/benchbook/{_slug(pt.name)}"
            doc: dict[str, Any] = {"format": "benchbook.results/1", "run": rid, "files": [f"../../{rel(pt.result)}"]}
            _window(
                doc,
                windows.point_window(
                    (pt.name, pt.result.stem),
                    events=events,
                    series=[p for p in pt.extra if run_layout.is_scrape_series(p)],
                    results=lambda pt=pt: formats.read(pt.result),
                ),
            )
            if pt.before is not None and pt.after is not None:
                doc["metrics_before"], doc["metrics_after"] = f"../../{rel(pt.before)}", f"../../{rel(pt.after)}"
                series = [p for p in pt.extra if run_layout.is_scrape_series(p)]
                if series:
                    doc["scrape_series"] = [{"file": f"../../{rel(p)}"} for p in series]
            else:
                out.todo.append(f"run {rid}: no /metrics before and after {pt.result.name}; nothing is reconciled")
            out.docs.append((f"{where}/results.json", doc))
            out.entries.append({"id": rid, "harness": "results", "path": where, "point": pt.name, **common})
        _sweep_state(out, rf)
        for pf in rf.point_folders:
            files, before, after, snaps = point_files(pf)
            cap = _capture_doc(pf)
            if not files and cap.get("kind") == "run" and cap.get("complete") is False:
                # a capture killed before its command wrote a result file (a time limit, a SIGKILL): its
                # folder is copied with the process's, but it measured no load point
                out.todo.append(
                    f"run {rf.process}: load point {pf.name} was interrupted before its result file was written "
                    f"({pf.name}/capture.json: complete false, {cap.get('stopped') or 'no reason given'}); its "
                    "folder is copied as it is, not read as a load point"
                )
                continue
            if not files:
                raise InputError(pf, "-", "a load-point folder without a result file")
            if cap.get("complete") is False:
                out.todo.append(
                    f"run {rf.process}: load point {pf.name}: its capture did not complete "
                    f"({cap.get('stopped') or 'no reason given'}); are its results whole?"
                )
            rid = unique(f"{stem}-{_slug(pf.name)}")
            where = f"{base}/benchbook/{_slug(pf.name)}"
            doc = {"format": "benchbook.results/1", "run": rid, "files": [f"../../{rel(f)}" for f in files]}
            cap_file = pf / "capture.json"
            _window(
                doc,
                windows.point_window(
                    (pf.name, *(f.stem for f in files)),
                    events=events,
                    capture=run_layout.load_json(cap_file) if cap_file.is_file() else None,
                    capture_where=f"{pf.name}/capture.json",
                    results=lambda files=files: [b for f in files for b in formats.read(f)],
                ),
            )
            if before is not None and after is not None:
                doc["metrics_before"], doc["metrics_after"] = f"../../{rel(before)}", f"../../{rel(after)}"
            if snaps:
                doc["snapshots"] = [
                    {"file": f"../../{rel(p)}", **({"unix_s": t} if isinstance(t, (int, float)) else {})}
                    for p, t in snaps
                ]
            out.docs.append((f"{where}/results.json", doc))
            out.entries.append({"id": rid, "harness": "results", "path": where, "point": pf.name, **common})
        if rf.phases is not None:
            rid = unique(f"{stem}-phases")
            doc_in = run_layout.load_json(rf.phases)
            if isinstance(doc_in, dict) and doc_in.get("format") == "benchbook.phases/1":
                out.entries.append({"id": rid, "harness": "phases", "path": base, **common})
                out.phase_folders.append(rf.folder)
            else:
                doc, classes, gen = run_layout.harness_phases(rf.phases, "../../")
                out.docs.append((f"{base}/benchbook/phases/phases.json", doc))
                out.entries.append({"id": rid, "harness": "phases", "path": f"{base}/benchbook/phases", **common})
                for k, v in classes.items():
                    have = out.prompt_classes.setdefault(k, v)
                    if have["tokens"] != v["tokens"]:
                        out.todo.append(
                            f"prompt_classes.{k}: {have['tokens']} tokens in one run, {v['tokens']} in {rf.process}"
                        )
                if gen:
                    out.generation_tokens = max(out.generation_tokens or 0, gen)
        for pf in rf.phases_folders:
            rid = unique(f"{stem}-{_slug(pf.name)}")
            out.entries.append({"id": rid, "harness": "phases", "path": f"{base}/{rel(pf)}", **common})
            out.phase_folders.append(pf)
            _capture_facts(out, pf, None)  # init says "phase harness" for every phases run
        for lf in rf.ladder_folders:
            rid = unique(f"{stem}-{_slug(lf.name)}")
            out.entries.append({"id": rid, "harness": "requests", "path": f"{base}/{rel(lf)}", **common})
            cap = _capture_facts(out, lf, "capture ladder")
            if cap.get("complete") is False:
                out.todo.append(f"run {rid}: its capture did not complete ({cap.get('stopped') or 'no reason given'})")
        if rf.gpu is not None or rf.host is not None:  # host samples alone: the host's figures, GPU not measured
            rid = unique(f"{stem}-gpu")
            doc = {"gpu_samples": f"../../{rel(rf.gpu)}"} if rf.gpu is not None else {}
            if rf.host is not None:
                doc["host_samples"] = f"../../{rel(rf.host)}"
            if rf.events is not None:
                doc["events"] = f"../../{rel(rf.events)}"
            else:
                out.todo.append(
                    f"run {rf.process}: no events.jsonl, so memory's loaded window is the whole sample span"
                )
            out.docs.append((f"{base}/benchbook/gpu/gpu.json", doc))
            out.entries.append({"id": rid, "harness": "gpu", "path": f"{base}/benchbook/gpu", **common})
        if not any(e["process"] == common["process"] for e in out.entries):
            raise InputError(rf.folder, "-", "a run folder with no load point, phases, ladder or GPU samples")
        if cfg.empty:
            out.todo.append(
                f"run {rf.process}: no file states the server configuration (no vllm:cache_config_info, server "
                "log or server_info); the arm's switches are unknown"
            )
    _arms(out, configs)
    return out


def _window(doc: dict[str, Any], w: windows.Window | None) -> None:
    """A load point's window in Unix time into its results.json (``started_at``/``ended_at`` and where
    they came from: ``ingest.windows``), read by energy and the physical-limit rates."""
    if w is not None:
        doc["started_at"], doc["ended_at"], doc["window_source"] = w.started_at, w.ended_at, w.source


def _capture_doc(folder: Path) -> dict[str, Any]:
    """A capture folder's capture.json (``{}`` without one)."""
    path = folder / "capture.json"
    doc = run_layout.load_json(path) if path.is_file() else {}
    return doc if isinstance(doc, dict) else {}


def _sweep_state(out: LayoutResult, rf: run_layout.RunFolder) -> None:
    """A ``capture sweep`` that did not end (its ``sweep.json`` says ``complete: false``): one todo line
    with each point's status, so a sweep cut short is said where the campaign's open questions are."""
    path = rf.folder / "sweep.json"
    doc = run_layout.load_json(path) if path.is_file() else None
    if not isinstance(doc, dict) or doc.get("kind") != "sweep" or doc.get("complete") is not False:
        return
    points = [p for p in doc.get("points") or [] if isinstance(p, dict)]
    states = ", ".join(f"{p.get('point')} {p.get('status')}" for p in points) or "no point recorded"
    out.todo.append(
        f"run {rf.process}: its sweep did not complete (sweep.json: {doc.get('stopped') or 'no reason given'}): "
        f"{states}"
    )


def _engine_of(cfg: server_config.ServerConfig) -> tuple[dict[str, str], str] | None:
    """The engine (name, /metrics profile) a process's own files name, for a campaign without a /metrics
    capture to detect it from (a seeds' ladder folder: requests.json and the server's log)."""
    src = "; ".join(cfg.sources)
    if cfg.startup:
        return {"name": "pocketllm", "profile": "pocket"}, src
    if cfg.cache_info or cfg.requested or cfg.engine:
        return {"name": "vllm", "profile": "vllm"}, src
    if cfg.server_info:
        return {"name": "sglang", "profile": "sglang"}, src
    return None


def _capture_facts(out: LayoutResult, folder: Path, tool: str | None) -> dict[str, Any]:
    """The model, prompt classes (the server's token counts) and generation budget a ``capture ladder``
    or ``capture phases`` folder's capture.json states; the first folder to state a class sets it (the
    phases runs' own facts, read by init, take precedence). Returns the capture.json (``{}`` without one)."""
    path = folder / "capture.json"
    cap = run_layout.load_json(path) if path.is_file() else {}
    if not isinstance(cap, dict):
        return {}
    if tool:
        out.tools.append(tool)
    server = cap.get("server") if isinstance(cap.get("server"), dict) else {}
    if isinstance(server.get("model"), str) and server["model"]:
        out.models.append(server["model"])
    for name, c in (cap.get("prompt_classes") or {}).items():
        tokens = c.get("tokens") if isinstance(c, dict) else None
        if isinstance(tokens, int) and tokens >= 1 and name not in out.prompt_classes:
            words = c.get("words")
            out.prompt_classes[name] = {"tokens": tokens, **({"words": words} if isinstance(words, int) else {})}
    gen = cap.get("generation_tokens")
    if isinstance(gen, int) and gen >= 1:
        out.generation_tokens = max(out.generation_tokens or 0, gen)
    return cap


def _stated(cfg: server_config.ServerConfig) -> dict[str, Any]:
    """The switches and the other settings a person sets, as the process's files state them."""
    return {**server_config.switches(cfg), **server_config.knobs(cfg)}


def _arms(out: LayoutResult, configs: dict[str, list]) -> None:
    """Arms from what their processes ran; a role baseline arm (nothing requested beyond what every
    batched arm requested) and ablation arms (same batch mode, other settings); todo lines where arms
    do not differ, where runs of one arm do, and what each ablation arm changes against the baseline
    (``analysis.what_ran``: the settings in their own units, the KV cache's capacity included)."""
    from benchbook.analysis import what_ran

    sw_of: dict[str, dict[str, Any]] = {}
    set_of: dict[str, dict[str, Any]] = {}
    for arm, procs in configs.items():
        first_rf, first = procs[0]
        sw = _stated(first)
        for rf, cfg in procs[1:]:
            other = _stated(cfg)
            diff = [
                f"{k} {sw.get(k, 'not stated')} vs {other.get(k, 'not stated')}"
                for k in sorted(set(sw) | set(other))
                if sw.get(k) != other.get(k)
            ]
            diff += [
                d.text()
                for d in what_ran.differences(server_config.settings(first), server_config.settings(cfg))
                if d.kind == "size"
            ]
            if diff:
                out.todo.append(
                    f"arm {arm}: runs {first_rf.process} and {rf.process} differ in what ran ("
                    + "; ".join(diff)
                    + "): they are not repeats — split them into two arms (give each run folder to init as its own "
                    "arm folder)"
                )
        for rf, cfg in procs:
            conc = [
                e.get("point")
                for e in out.entries
                if e["process"].startswith(f"{arm}/") and e["harness"] == "results" and e.get("point")
            ]
            for c in server_config.clamps(cfg, _max_concurrency(conc)):
                out.todo.append(f"arm {arm}, run {rf.process}: clamped — {c}")
        sw_of[arm] = sw
        set_of[arm] = server_config.settings(first)
        serial = sw.get("max_num_seqs") == 1
        asked = {k: v for _rf, c in procs for k, v in _asked(c).items()}
        requested = set(asked)
        out.arms[arm] = {
            "label": arm,
            "mode": "serial" if serial else "batch",
            "environment": arm,
            "server_args": server_config.switches(first),  # the switches; the knobs are the environment's
            # what the command line asked for (the log's non-default args), apart from what ran
            "requested": {k: asked[k] for k in server_config.SWITCHES if k in asked},
            "description": f"{len(procs)} server process(es); "
            + (", ".join(f"{k} {v}" for k, v in server_config.switches(first).items()) or "no configuration stated")
            + (f"; {what_ran.summary(set_of[arm])}" if what_ran.summary(set_of[arm]) else "")
            + (f" (requested on the command line: {', '.join(sorted(requested))})" if requested else ""),
        }
        out.environments[arm] = {
            "description": "the server settings as the engine stated them (benchbook init)",
            "variables": {k: str(v) for k, v in sw.items()},
        }
    names = list(out.arms)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            sizes = [d for d in what_ran.differences(set_of[a], set_of[b]) if d.kind == "size"]
            if sw_of[a] == sw_of[b] and sw_of[a] and not sizes:
                out.todo.append(
                    f"arms {a} and {b} do not differ in what ran ({', '.join(f'{k} {v}' for k, v in sw_of[a].items())}):"
                    " a comparison between them measures run-to-run noise, not a switch"
                )
            elif sw_of[a] == sw_of[b] and sw_of[a]:
                out.todo.append(
                    f"arms {a} and {b} state the same settings but the engine sized them differently ("
                    + what_ran.text(sizes)
                    + "): no stated setting explains it (another GPU, or memory held by another process?)"
                )
    # the ablation: the batched arm that requested nothing beyond what every batched arm requested is
    # the baseline; the other batched arms are ablation arms (a serial arm is the baseline page's)
    batched = [a for a in names if out.arms[a]["mode"] == "batch"]
    asked = {a: {k: str(v) for _rf, c in configs[a] for k, v in _asked(c).items()} for a in batched}
    common = set.intersection(*(set(v.items()) for v in asked.values())) if asked else set()
    plain = [a for a in batched if not set(asked[a].items()) - common]
    if plain:
        base = plain[0]
        others = [a for a in batched if a != base]
        if others:
            out.arms[base]["role"] = "baseline"
            for a in others:
                out.arms[a]["role"] = "ablation"
                diffs = what_ran.differences(set_of[a], set_of[base])
                sw_diff = [
                    f"{k} {sw_of[a].get(k, 'not stated')} vs {sw_of[base].get(k, 'not stated')}"
                    for k in server_config.SWITCHES
                    if sw_of[a].get(k) != sw_of[base].get(k)
                ]
                shown = "; ".join(
                    [*(d.text() for d in what_ran.shown(diffs) if d.name not in server_config.SWITCHES), *sw_diff]
                )
                if shown:
                    out.todo.append(
                        f"arm {a} vs the baseline {base}: {shown} — the ablation judges this difference; check it is "
                        "the one you meant to vary"
                    )
    # serial arms first (the seeds' order: batching is judged against serving one at a time)
    out.arms = dict(sorted(out.arms.items(), key=lambda kv: kv[1]["mode"] != "serial"))
    out.comparisons = _pairs(out.arms, set_of)


def _pairs(arms: dict[str, dict[str, Any]], settings: dict[str, dict[str, Any]] | None = None) -> list[dict[str, str]]:
    """The arm pairs the baseline page judges, written into the manifest's ``comparisons`` (each arm has
    an environment of its own holding its switches, so the page's default pairing — arms that differ in
    environment *or* configuration, not both — would find none): every serial arm against the batched
    baseline (the role-baseline arm, else the first batched arm), and that baseline against each
    ablation arm — the pairs the results ladder judges (``analysis.ladder.results_ladder_analysis``)."""
    batch = [a for a, v in arms.items() if v["mode"] == "batch"]
    base = next((a for a in batch if arms[a].get("role") == "baseline"), batch[0] if batch else None)
    if base is None:
        return []
    out = [
        {"baseline": a, "candidate": base, "why": f"{base} batches requests; {a} serves them one at a time"}
        for a, v in arms.items()
        if v["mode"] == "serial"
    ]
    from benchbook.analysis import what_ran

    for a, v in arms.items():
        if v.get("role") == "ablation":
            sb, sa = arms[base]["server_args"], v["server_args"]
            diff = ", ".join(
                f"{k} {sa.get(k, 'not stated')}" for k in sorted(set(sb) | set(sa)) if sb.get(k) != sa.get(k)
            )
            rest = [
                d
                for d in what_ran.differences((settings or {}).get(a), (settings or {}).get(base))
                if d.name not in server_config.SWITCHES
            ]
            diff = "; ".join(x for x in (diff, what_ran.text(rest)) if x)
            out.append({"baseline": base, "candidate": a, "why": f"{base} with {diff or 'the switches it requested'}"})
    return out


def _asked(cfg: server_config.ServerConfig) -> dict[str, Any]:
    """What the command line asked for among the switches and the settings a person sets."""
    names = set(server_config.SWITCHES) | {k for k, (_u, kind) in server_config.SETTINGS.items() if kind == "knob"}
    return {k: v for k, v in cfg.requested.items() if k in names}


def _max_concurrency(points: list[str]) -> int | None:
    import re

    vals = [int(m.group(1)) for p in points if (m := re.match(r"^conc(?:urrency)?[_-]?(\d+)$", str(p)))]
    return max(vals) if vals else None
