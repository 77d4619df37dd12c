"""``benchbook validate PATH``: check a campaign folder or one input file, say what was found.

Prints one line per file it read. On bad input prints ``file: location: reason`` lines on stderr
and exits 2; never a traceback.
"""

from __future__ import annotations

import sys
from pathlib import Path

from benchbook.errors import EXIT_BAD_INPUT, EXIT_SOURCE, InputError, InputErrors, RenderError, SourceError


def add_arguments(p) -> None:
    p.add_argument("path", type=Path, help="a campaign folder (holding campaign.json) or one input file")
    p.add_argument("-q", "--quiet", action="store_true", help="print only problems")
    from benchbook.metrics.source_allow import add_allow_argument

    add_allow_argument(p)


def _collect(fn, errors: list[InputError]):
    try:
        return fn()
    except InputErrors as e:
        errors.extend(e.errors)
    except InputError as e:
        errors.append(e)
    except SourceError as e:  # an unreachable Prometheus server: listed like the rest, exit 4
        errors.append(e)
    return None


def validate_campaign(root: Path, out=print, progress=None) -> list[InputError]:
    """Load every file of a campaign; return the problems (empty list = valid). ``out`` gets what was
    found, ``progress`` (when given) a ``[i/n] run`` line per run; ``benchbook validate`` sends it to
    stderr unless ``--quiet``, ``init`` shows none."""
    from benchbook.ingest.campaign import Campaign, load_campaign
    from benchbook.ingest.manifest import counts_text

    errors: list[InputError] = []
    _collect(lambda: check_folder_files(root), errors)
    _check_render_params(root, errors, out)
    camp: Campaign | None = _collect(lambda: load_campaign(root), errors)
    if camp is None:
        return errors
    from benchbook.analysis.audit import check_text_files

    _collect(lambda: check_text_files(camp), errors)  # nvidia_smi_q.txt, *.log: as the audit reads them
    pd_runs = {}
    if camp.runs_of("pd"):
        from benchbook.ingest.pd_runs import load_pd_campaign

        pdc = _collect(lambda: load_pd_campaign(root), errors)
        if pdc is not None:
            pd_runs = {r.id: r for r in pdc.runs}
    engine = camp.manifest.get("engine")
    out(
        f"{root / 'campaign.json'}: campaign {camp.title!r}: {counts_text(camp.manifest)}, "
        + (f"engine profile {engine['profile']}" if engine else "no engine named (results runs detect it)")
        + f", provenance {camp.manifest['provenance']}"
    )
    for t in camp.manifest.get("todo", []):
        out(f"{root / 'campaign.json'}: todo: {t}")
    total = len(camp.runs)
    # (arm, harness) -> [usable samples, excluded samples, first file] over runs that loaded
    usable: dict[tuple[str, str], list] = {}
    unreachable: set = set()  # Prometheus servers that did not answer (or were not allowed): listed once
    read: dict[str, list] = {"results": [], "phases": [], "requests": []}  # for the copy check
    for i, r in enumerate(camp.runs, 1):
        if progress is not None:
            progress(f"[{i}/{total}] {r.id}")
        # Each run is checked on its own so one bad run does not hide problems in the others.
        single = _single_run_campaign(camp, r)
        if not _prometheus_ok(camp, r, i - 1, errors, out, unreachable):
            continue
        if r.harness == "requests":
            df = _collect(lambda: single.requests, errors)
            if df is not None:
                groups = df.select(["scenario", "n"]).unique().height
                excl = single.exclusions
                out(f"{r.file}: {df.height} requests in {groups} scenario groups, {len(excl)} excluded")
                for e in excl:
                    out(f"  excluded {e.sample}: {e.reason}")
                read["requests"].append(df)
                u = usable.setdefault((r.arm, "requests"), [0, 0, r.file])
                u[0] += df.filter(df["scenario"] != "warmup").height
                u[1] += len(excl)
        elif r.harness == "phases":
            df = _collect(lambda: single.phase_samples, errors)
            # The split reads a histogram's _sum and _count only; its buckets are checked here
            # (each snapshot's whole consumed families, every check), so a campaign with broken
            # buckets is still rejected with the file and line.
            named = {e.file for e in errors}
            if str(r.file) not in named:
                errors.extend(_collect(lambda: single.check_snapshots(r, named), errors) or [])
            if df is not None:
                excl = [e for e in single.exclusions if not e.reason.startswith("warm-up")]
                warm = df.filter(df["warmup"]).height
                out(f"{r.file}: {df.height} phase samples ({warm} warm-up), {len(excl)} excluded")
                for e in excl:
                    out(f"  excluded {e.sample}: {e.reason}")
                read["phases"].append(df)
                u = usable.setdefault((r.arm, "phase samples"), [0, 0, r.file])
                u[0] += df.height - warm
                u[1] += len(excl)
        elif r.harness == "memory":
            tabs = _collect(lambda: single.memory, errors)
            if tabs is not None:
                gpu, host, _ = tabs
                out(f"{r.file}: {host.height} memory samples, {gpu['rank'].n_unique()} ranks")
        elif r.harness == "gpu":  # its GPU (and host) samples and events, read as the memory page reads them
            tabs = _collect(lambda: single.memory, errors)
            if tabs is not None:
                gpu, host, _ = tabs
                out(
                    f"{r.file}: {gpu.height} GPU samples of {gpu['rank'].n_unique()} GPU(s), {host.height} host samples"
                )
        elif r.harness == "results":
            read["results"] += _validate_results_run(camp, r, errors, out)
        elif r.harness == "pd" and r.id in pd_runs:
            p = pd_runs[r.id]
            extra = (", per-request records" if p.requests_file else "") + (", prefill log" if p.prefill_log else "")
            out(f"{r.file}: PD run, windows {', '.join(sorted(p.windows))}{extra}, valid")
        if r.server_log.exists():
            from benchbook.analysis.clamps import parse_startup_line

            text = _collect(lambda: camp.server_log_text(r), errors)
            # the baseline page reads a non-PD arm's startup line (clamps): what it would reject is
            # rejected here first
            clamped = camp.arms[r.arm].get("mode") != "pd"
            line = (
                None
                if text is None or not clamped
                else _collect(lambda: parse_startup_line(text, r.server_log), errors)
            )
            if line is not None:
                out(f"{r.server_log}: startup line {line.line}: batch width {line.batch_width}")
    for c in _copies(camp, read):  # a copy is no repeat: the pages count it once and say so
        out(f"{root / 'campaign.json'}: todo: {c}")
    # An arm whose every sample was excluded would leave a hole in every table: that is bad input.
    for (arm, what), (n_ok, n_excl, file) in usable.items():
        if n_ok == 0:
            errors.append(
                InputError(
                    file,
                    "-",
                    f"arm {arm!r} has no usable {what}: {n_excl} excluded, the rest warm-up (reasons listed above)",
                )
            )
    return errors


def check_folder_files(root: Path) -> None:
    """Every entry of a campaign folder is a regular file, a folder or a symlink: a FIFO, a device
    or a socket would hang or flood ``render`` (which hashes the whole folder), so it is bad input
    here too. Nothing is opened."""
    import os
    import stat as st

    from benchbook.jsonfile import special_kind, walk

    found: list[InputError] = []
    for dirpath, _dirnames, filenames in walk(root):  # depth-bounded: a folder 1,000 deep is bad input
        for name in filenames:
            p = os.path.join(dirpath, name)
            try:
                mode = os.lstat(p).st_mode
            except OSError:
                continue
            if not st.S_ISLNK(mode) and special_kind(mode) is not None:
                found.append(
                    InputError(
                        p,
                        "-",
                        f"is {special_kind(mode)}, not a regular file: a campaign folder holds regular files only",
                    )
                )
    if found:
        raise found[0] if len(found) == 1 else InputErrors(found)


def _check_render_params(root: Path, errors: list, out) -> None:
    """``render.yml`` (or .yaml/.json) read and checked as ``render`` reads it: the input limits (no
    YAML aliases …), page kinds, no input-choosing keys, and each parameter declared by its page's
    notebook — so that what ``render`` would reject, ``validate`` rejects first."""
    from benchbook.pipeline import params as render_params
    from benchbook.pipeline.plan import notebook_for

    f = render_params.params_file(root)
    if f is None:
        return
    own = _collect(lambda: render_params.campaign_params(root), errors)
    if own is None:
        return
    before = len(errors)
    _collect(lambda: render_params.check_overrides(own, str(f)), errors)
    for page, params in sorted(own.items()):
        nb = notebook_for(page)
        if not nb.is_file():
            continue
        try:
            declared = render_params.declared_parameters(nb)
        except RenderError:  # a broken notebook is render's failure, not this campaign's input
            continue
        for k in sorted(params):
            if k not in declared and k not in render_params.INPUT_PARAMETERS:
                errors.append(InputError(f, f"$.{page}.{k}", f"{nb.name} declares no parameter {k!r}"))
        known = {k: v for k, v in params.items() if k in declared}
        _collect(lambda known=known, d=declared: render_params.check_parameter_types(known, d, str(f)), errors)
    if len(errors) == before:
        out(f"{f}: page parameters for {', '.join(sorted(own)) or 'no page'}, valid")


def _copies(camp, read: dict[str, list]) -> list[str]:
    """The copy check (``analysis.copies``) over what validating the runs read: one line per copy."""
    import polars as pl

    from benchbook.analysis import copies

    procs = {r["id"]: r["process"] for r in camp.manifest.get("runs", []) if r.get("process")}
    files = {r.id: str(r.file) for r in camp.runs}
    frames = {k: pl.concat(v, how="vertical") if v else None for k, v in read.items() if k != "results"}
    found = copies.find_copies(read["results"], frames["phases"], frames["requests"], procs, files)
    return copies.lines(found)


def _validate_results_run(camp, r, errors: list, out) -> list:
    """A results run: its results.json, every result file it names, its engine window (captures parsed
    in full, or the Prometheus window fetched) and the model check against it. Returns ``(run id,
    file, BenchmarkRun)`` for each benchmark run read."""
    from benchbook.analysis import results
    from benchbook.ingest import formats
    from benchbook.metrics import prometheus

    rr = _collect(lambda: camp.results_run(r), errors)
    if rr is None:
        return []
    bench, read = [], []
    for f in rr.files:
        got = _collect(lambda f=f: formats.read(f), errors)
        if got is not None:
            bench += got
            read += [(r.id, f, b) for b in got]
            for line in formats.describe(got):
                out(f"{f}: {line}")
    _check_compare_yml(rr.files, errors)
    if rr.metrics_before is not None:
        for p in (rr.metrics_before, rr.metrics_after):
            _collect(lambda p=p: prometheus.read(p), errors)
    ew = _collect(lambda: results.engine_window(camp, rr), errors)
    if ew is None:
        if not rr.has_engine:
            out(f"{r.file}: {len(bench)} benchmark run(s), no engine window (nothing to reconcile)")
        return read
    out(f"{r.file}: {len(bench)} benchmark run(s), engine window over {len(ew.window.series)} series")
    if len(bench) == 1:
        model, _ = results.pick_series(bench[0], ew)
        out(f"  {model.name}: {model.status}: {model.detail}")
    return read


def _prometheus_ok(camp, run, index: int, errors: list, out, unreachable: set) -> bool:
    """When the run names a Prometheus source: ``promsource.check_source`` over its windows.

    An unreachable server is a SourceError (exit 4); series the phase split needs but the server
    lacks are InputErrors (exit 2). False when the run's samples cannot be read from the source.
    A server found unreachable for one run (``unreachable``) is not probed again for the next.
    """
    from benchbook.metrics import phases, promsource, source_allow

    named = camp.manifest.get("prometheus") or any(
        r.get("prometheus") for r in camp.manifest["runs"] if r["id"] == run.id
    )
    if not named:
        return True
    src = _collect(lambda: camp.prometheus_source(run), errors)
    windows = _collect(lambda: camp.prometheus_windows(run), errors)
    if src is None or windows is None:  # listed by _collect
        return False
    if src["url"] in unreachable:
        return False
    where = f"$.runs[{index}].prometheus"
    mpath = camp.root / "campaign.json"
    refused = source_allow.refusal(src["url"])
    if refused:  # the person running validate did not allow this server: nothing is sent to it
        if ("refused", src["url"]) not in unreachable:  # said once per server
            unreachable.add(("refused", src["url"]))
            out(f"{mpath}: {where}: {refused}")
        if windows:
            out(f"{run.file}: {len(windows)} sample window(s) not queried (their server is not allowed in this run)")
        return not windows  # a run without windows is read from its files; windows are not read at all
    try:
        client = promsource.PromClient(src["url"], src.get("timeout_s", promsource.DEFAULT_TIMEOUT_S))
    except InputError as e:
        errors.append(InputError(mpath, where, e.reason))
        return False
    with client:
        try:
            client.buildinfo()
        except SourceError as e:
            errors.append(e)
            unreachable.add(src["url"])
            return False
        start = min((t0 for t0, _ in windows), default=None)
        end = max((t1 for _, t1 in windows), default=None)
        quantities = phases.NEEDED if windows else []
        problems = promsource.check_source(
            src["url"], src["matchers"], camp.profile, quantities, start=start, end=end, client=client
        )
    errors.extend(InputError(mpath, where, p) for p in problems)
    span = f", {len(windows)} sample windows in [{start:.0f}, {end:.0f}]" if windows else ""
    out(
        f"{mpath}: {where}: Prometheus {client.name} {src['matchers']}: "
        + ("reachable, every needed series present" if not problems else f"{len(problems)} problem(s)")
        + span
    )
    return not problems


def _single_run_campaign(camp, run):
    from benchbook.ingest.campaign import Campaign

    return Campaign(root=camp.root, manifest=camp.manifest, runs=[run])


def validate_file(path: Path, out=print) -> list[InputError]:
    """One input file: our own formats by their ``format`` key, /metrics text, or a known tool's output."""
    errors: list[InputError] = []
    if path.is_dir():
        return [InputError(path, "-", "is a folder without campaign.json")]
    if not path.exists():
        return [InputError(path, "-", "no such file")]
    from benchbook.jsonfile import open_regular

    if _collect(lambda: open_regular(path, limit=2**62).close(), errors) is None and errors:
        return errors  # a FIFO, a device, a socket: refused before anything is read
    from benchbook.jsonfile import plain_suffix

    suffix = plain_suffix(path)  # before.prom.gz is read as the /metrics text it holds
    from benchbook.ingest import telemetry  # GPU telemetry: AIPerf export, DCGM-exporter scrape

    line = _collect(lambda: telemetry.validate_line(path), errors)
    if line is not None or errors:
        if line is not None:
            out(f"{path}: {line}")
        return errors
    if suffix in (".prom", ".txt", ".metrics") and not _looks_json(path):
        from benchbook.metrics import prometheus

        snap = _collect(lambda: prometheus.read(path), errors)
        if snap is not None:
            n = sum(len(v) for v in snap.values.values())
            out(f"{path}: Prometheus text exposition: {len(snap.types)} families, {n} samples; {_engine_line(snap)}")
        return errors
    from benchbook import jsonfile
    from benchbook.jsonfile import load_json, validate

    if suffix == ".json" and path.stat().st_size > jsonfile.STREAM_BYTES:  # a big result file: streamed
        from benchbook.ingest import formats

        big = _collect(lambda: formats.load(path), errors)
        if big is None:
            return errors
        bfmt = big.doc.get("format") if isinstance(big.doc, dict) else None
        if not (isinstance(bfmt, str) and bfmt.startswith("benchbook.")):
            runs = _collect(lambda: formats.read_loaded(big), errors)
            for line in formats.describe(runs or []):
                out(f"{path}: {line}")
            return errors
        del big  # benchbook's own formats are read whole, strictly, below
    if suffix == ".json":
        doc = _collect(lambda: load_json(path), errors)
        if doc is None:
            return errors
        fmt = doc.get("format") if isinstance(doc, dict) else None
        if isinstance(fmt, str) and fmt.startswith("benchbook."):
            kind = fmt.split("/")[0].split(".", 1)[1]
            if kind not in ("campaign", "requests", "phases", "memory", "results"):
                try:
                    from benchbook.ingest import pd_runs as pd_ingest  # PD formats are read by the PD reader

                    _collect(lambda: pd_ingest.validate_file(path), errors)
                    if not errors:
                        out(f"{path}: benchbook {kind} file, valid")
                    return errors
                except ImportError:
                    return [InputError(path, "$.format", f"unknown benchbook format {fmt!r}")]
            _collect(lambda: validate(doc, kind, path), errors)
            if not errors:
                what = {
                    "campaign": "runs",
                    "requests": "requests",
                    "phases": "samples",
                    "memory": "samples",
                    "results": "files",
                }[kind]
                out(f"{path}: benchbook {kind} file, {len(doc.get(what, []))} {what}, valid")
            return errors
    # Formats people already have (vLLM, SGLang, GuideLLM, AIPerf, llmperf …).
    try:
        from benchbook.ingest import formats
    except ImportError:
        return [InputError(path, "-", "not a benchbook file and no reader for other formats is installed")]
    if suffix == ".json":  # parsed once above, with the strict checks: read from that document
        loaded, doc = formats.Loaded(path, "json", doc), None
        runs = _collect(lambda: formats.read_loaded(loaded), errors)
    else:
        runs = _collect(lambda: formats.read(path), errors)
    if runs is not None:
        for line in formats.describe(runs):
            out(f"{path}: {line}")
        _check_compare_yml([path], errors)
    return errors


def _check_compare_yml(files, errors: list) -> None:
    """``benchbook-compare.yml`` beside result files, read as the compare page and a campaign's
    results read it (``identity.load_overrides``): what render would refuse, validate refuses. Each
    problem is listed once, however many runs share the folder."""
    from benchbook.analysis.identity import load_overrides

    found: list = []
    _collect(lambda: load_overrides(list(files)), found)
    errors.extend(e for e in found if str(e) not in {str(x) for x in errors})


def _engine_line(snap) -> str:
    """Which engine profile the names match, and what the common quantities read (per series)."""
    from benchbook.errors import InputError as _IE
    from benchbook.metrics.profiles import detect_profile

    try:
        prof = detect_profile(snap)
    except _IE:
        return "no LLM-engine profile matches its metric names"
    parts = []
    for q in ("requests_success", "generation_tokens", "running", "waiting"):
        if not prof.has(q):
            continue
        ref = prof.ref(q)
        series = snap.match(ref.name, ref.label_dict)
        if series:
            vals = sorted({f"{v:g}" for v in series.values()})
            parts.append(f"{q}={'/'.join(vals[:4])}" + (f" ({len(series)} series)" if len(series) > 1 else ""))
    ttft = snap.series(prof.ref("ttft").name + "_count") if prof.has("ttft") else {}
    if ttft:
        parts.append(f"ttft_count={'/'.join(sorted({f'{v:g}' for v in ttft.values()}))}")
    return f"engine profile {prof.name}" + (": " + ", ".join(parts) if parts else "")


def _looks_json(path: Path) -> bool:
    from benchbook.jsonfile import read_head

    return read_head(path, 64).lstrip()[:1] in (b"{", b"[")


def _collect_error(fn) -> InputError:
    try:
        fn()
    except InputError as e:
        return e
    raise AssertionError("open_manifest accepted a folder without campaign.json")  # pragma: no cover


def _progress(line: str) -> None:
    print(line, file=sys.stderr, end="\r" if sys.stderr.isatty() else "\n")


def run(args) -> int:
    out = (lambda *_a, **_k: None) if args.quiet else print
    path: Path = args.path
    if path.is_dir() and (path / "campaign.json").exists():
        errors = validate_campaign(path, out, progress=None if args.quiet else _progress)
    elif path.is_dir():
        from benchbook.ingest.manifest import open_manifest

        errors = [_collect_error(lambda: open_manifest(path))]  # its message: run `benchbook init` first
    else:
        errors = validate_file(path, out)
    for e in errors:
        print(str(e), file=sys.stderr)
    if errors:
        print(f"benchbook validate: {len(errors)} problem(s) found", file=sys.stderr)
        # bad input first; only a source that could not be reached (and nothing else) is exit 4
        return EXIT_SOURCE if all(isinstance(e, SourceError) for e in errors) else EXIT_BAD_INPUT
    return 0
