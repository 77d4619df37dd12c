"""``benchbook render``: one campaign, every campaign under a folder (``--all``), or result files
(``--compare``), into an output folder; progress on stderr, an exit code a scheduler can act on.

The work is the pipeline's: planning (:mod:`benchbook.pipeline.plan`), parameters
(:mod:`benchbook.pipeline.params`), execution (:mod:`benchbook.pipeline.execute`), one campaign
(:mod:`benchbook.pipeline.campaigns`), many on workers (:mod:`benchbook.pipeline.schedule`) and the
index (:mod:`benchbook.pipeline.index`).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from benchbook.errors import EXIT_BAD_INPUT, EXIT_RENDER, EXIT_SOURCE, InputError
from benchbook.pipeline import plan, writes
from benchbook.pipeline.campaigns import CampaignOutcome, render_campaign, stderr_log
from benchbook.pipeline.params import check_overrides, load_params


def _quiet(msg: str) -> None:
    """--quiet: progress lines off; errors (:func:`stderr_log`) still printed."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("campaign", nargs="?", type=Path, help="campaign folder (holds campaign.json)")
    from benchbook.metrics.source_allow import add_allow_argument

    add_allow_argument(p)
    p.add_argument(
        "--all",
        dest="data_dir",
        type=Path,
        metavar="DATA_DIR",
        help="render every campaign folder under DATA_DIR into OUT/<campaign>/ and write OUT/index.html",
    )
    p.add_argument(
        "--out",
        type=Path,
        required=True,
        help="output folder: the page folder for one campaign, the reports root with --all",
    )
    p.add_argument(
        "--page",
        action="append",
        choices=[*plan.PAGES, "history"],
        help="render only this page kind (repeatable); default: the pages the campaign calls for. "
        "With --all, only campaigns that call for it get it; every other page keeps its link in the index "
        "(--page history: only the history page)",
    )
    p.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=None,
        metavar="N",
        help="with --all: render on N worker processes, each reusing one kernel (default: the number of cores)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="with --all: render every page even when its inputs, parameters, notebook and benchbook are unchanged",
    )
    p.add_argument("--quiet", action="store_true", help="print errors only (for cron); exit codes are unchanged")
    p.add_argument(
        "--notebooks",
        type=Path,
        metavar="DIR",
        default=None,
        help="folder holding the page notebooks (default: the checkout's notebooks/)",
    )
    p.add_argument(
        "--params",
        type=Path,
        metavar="FILE",
        help='JSON or YAML parameter overrides per page kind: {"baseline": {"warmup": 1}}',
    )
    p.add_argument(
        "--wait",
        action="store_true",
        help="if another benchbook render is writing into OUT, wait for it instead of exiting with code 5",
    )
    p.add_argument(
        "--compare",
        nargs="+",
        type=Path,
        metavar="FILE",
        help="render the compare page of these benchmark result files into OUT/compare.html",
    )
    p.add_argument(
        "--label",
        action="append",
        default=[],
        metavar="FILE=LABEL",
        help="with --compare: name the configuration of FILE (a file name, path or pattern); runs with "
        "different labels are never repeats of each other (repeatable)",
    )


def run(args: argparse.Namespace) -> int:
    from benchbook.errors import UsageError

    log = _quiet if getattr(args, "quiet", False) else stderr_log
    if getattr(args, "jobs", None) is not None and args.jobs < 1:
        raise UsageError("-j/--jobs must be at least 1")

    if args.notebooks is not None and not args.notebooks.is_dir():
        raise InputError(args.notebooks, None, "notebooks folder does not exist")
    if getattr(args, "label", None) and not getattr(args, "compare", None):
        raise UsageError("--label names result files of --compare; give --compare FILE... with it")
    compare = getattr(args, "compare", None)
    if compare:
        if args.campaign is not None or args.data_dir is not None:
            raise UsageError("--compare takes result files; give no CAMPAIGN or --all with it")
    elif (args.campaign is None) == (args.data_dir is None):
        raise UsageError("give either CAMPAIGN or --all DATA_DIR")
    # --all reads its --params file only when something must render (a no-op hashes its bytes)
    overrides = load_params(args.params) if args.data_dir is None else {}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with writes.render_lock(out, wait=getattr(args, "wait", False)):
        removed = writes.clean_kernel_dirs() + writes.clean_folder(out)
        if removed:
            log(f"removed {len(removed)} leftover(s) of an interrupted render: {', '.join(removed[:5])}")
        if args.data_dir is not None:
            return _run_all(args, log)
        if compare:
            return _run_compare(args, overrides, log)
        if args.campaign is not None:
            t0 = time.perf_counter()
            outcome = render_campaign(
                args.campaign, out, pages=args.page, overrides=overrides, notebooks=args.notebooks, log=log
            )
            log(f"done: {len(outcome.rendered)} page(s) in {time.perf_counter() - t0:.1f} s")
            return 0


def _run_compare(
    args: argparse.Namespace, overrides: Mapping[str, Mapping[str, Any]], log: Callable[[str], None]
) -> int:
    """The compare page reads exactly the files it is given (and says which)."""
    from benchbook.pipeline.execute import render_page

    check_overrides(overrides, str(args.params), allowed=frozenset({"engine_before", "engine_after"}))
    for f in args.compare:
        if not f.is_file():
            raise InputError(f, None, "result file does not exist")
    params = dict(overrides.get("compare", {}))
    engine = [k for k in ("engine_before", "engine_after") if params.get(k)]
    given = [f.resolve() for f in args.compare] + [Path(params[k]).resolve() for k in engine]
    cwd = Path(os.path.commonpath([str(f.parent) for f in given]))
    staged = None
    if cwd.parent == cwd:
        # the inputs share no folder but the filesystem root: paths from there name this machine's
        # folders (home, user, project) on the page; the kernel reads copies named by the fewest
        # trailing components that tell them apart instead
        import shutil
        import tempfile

        from benchbook.analysis.identity import short_names

        staged = Path(tempfile.mkdtemp(prefix="benchbook-compare-"))
        copies = []
        for f, name in zip(given, short_names([str(f) for f in given]), strict=True):
            dst = staged / name
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f, dst)
            copies.append(dst)
        given, cwd = copies, staged
    try:
        if args.label:  # FILE=LABEL: the path as given (the kernel gets it as it reads that file), never its name
            labels = _compare_labels(args.label, args.compare, given[: len(args.compare)], cwd)
            params["labels"] = [*params.get("labels", []), *labels]
        named = [str(f) for f in args.compare] + [str(params[k]) for k in engine]
        log(f"compare: reading {len(named)} file(s): {', '.join(named)}")
        # the kernel runs in the files' common folder and gets them relative to it: no absolute path of
        # this machine in the page or its notebook
        params["campaign"] = ""  # the files, not the notebook's default campaign
        params["files"] = [os.path.relpath(f, cwd) for f in given[: len(args.compare)]]
        params.update({k: os.path.relpath(f, cwd) for k, f in zip(engine, given[len(args.compare) :], strict=True)})
        res = render_page(
            plan.notebook_for("compare", args.notebooks),
            params,
            Path(args.out) / "compare.html",
            title=params.get("title") or f"Comparison of {len(args.compare)} result file(s)",
            page="compare",
            cwd=cwd,
        )
    finally:
        if staged is not None:
            import shutil

            shutil.rmtree(staged, ignore_errors=True)
    log(f"compare: wrote {res.html} ({res.bytes / 1024:.0f} KiB, {res.seconds:.1f} s)")
    return 0


def _compare_labels(items: list[str], files: list[Path], read: list[Path], cwd: Path) -> list[str]:
    """``--label FILE=LABEL`` items as the kernel must read them: FILE is one of the compared files'
    paths as given (or a name or pattern matching some), each match becomes ``path-from-cwd=LABEL``;
    one that matches no compared file is bad input (exit 2), never silently ignored. ``read``: where
    the kernel reads each of ``files``."""
    from benchbook.analysis.identity import matches

    out = []
    for item in items:
        pattern, eq, label = item.partition("=")
        if not eq or not pattern or not label:
            raise InputError("--label", item, "expected FILE=LABEL")
        hits = [k for k, f in enumerate(files) if Path(pattern).resolve() == f.resolve() or matches(pattern, f)]
        if not hits:
            raise InputError(
                "--label",
                item,
                f"{pattern!r} matches none of the {len(files)} compared files (e.g. {files[0]}); give a file's path "
                "as given, its name or a pattern",
            )
        out += [f"{os.path.relpath(read[k], cwd)}={label}" for k in hits]
    return out


def batch_exit_code(outcomes: list[CampaignOutcome]) -> int:
    """0 when every page rendered; else 2 if any input was bad, 4 if a source failed, 3 otherwise."""
    codes = [c for o in outcomes for c, _ in [*o.failed.values(), *([o.error] if o.error else [])]]
    if not codes:
        return 0
    for code in (EXIT_BAD_INPUT, EXIT_SOURCE):
        if code in codes:
            return code
    return EXIT_RENDER


def _params_bytes(path: Path | None) -> bytes | None:
    """The ``--params`` file's bytes for the no-op check (unreadable: the full render reports it)."""
    if path is None:
        return None
    try:
        return Path(path).read_bytes()
    except OSError:
        return b"unreadable"


def _run_all(args: argparse.Namespace, log: Callable[[str], None]) -> int:
    """Every campaign under DATA_DIR: planned, rendered where something changed (on ``-j`` workers),
    then the history page, then the index, written when it changed (:mod:`benchbook.pipeline.schedule`).

    A no-op (nothing read has changed since the last clean ``render --all`` into OUT, and all it
    wrote is there) stops after hashing the inputs: no manifest read, no worker, no file touched."""
    from benchbook.pipeline import schedule

    t0 = time.perf_counter()
    out = Path(args.out)
    force = getattr(args, "force", False)
    campaigns = plan.find_campaigns(args.data_dir)
    log(f"{len(campaigns)} campaign(s) under {args.data_dir}")
    inputs = schedule.tree_inputs(campaigns, args.notebooks, args.page, _params_bytes(args.params))
    last = None if force else schedule.unchanged_tree(out, inputs)
    if last is not None:
        for page in last["pages"]:
            log(f"{page}: unchanged")
        summary = schedule.Summary(unchanged=len(last["pages"]), history=last["history"])
        summary.seconds = time.perf_counter() - t0
        log(f"done: {summary.line()}; index {out / 'index.html'} (unchanged); nothing read has changed")
        return 0
    from benchbook.pipeline.index import write_index

    overrides = load_params(args.params)
    schedule.forget_tree(out)
    outcomes, summary = schedule.render_all(
        plan.in_render_order(campaigns),  # an ``order`` in campaign.json first (data/README.md)
        out,
        only=args.page,
        overrides=overrides,
        notebooks=args.notebooks,
        force=force,
        workers=getattr(args, "jobs", None),
        log=log,
        error=stderr_log,
        digests=inputs.digests,
    )
    index, written = write_index(outcomes, out)
    summary.seconds = time.perf_counter() - t0
    log(f"done: {summary.line()}; index {index}{'' if written else ' (unchanged)'}")
    lines = [line for o in outcomes for _, line in [*([o.error] if o.error else []), *o.failed.values()]]
    lines += summary.other_failures
    if lines:
        stderr_log(f"{len(lines)} failure(s); first: {lines[0]}")
    code = batch_exit_code(outcomes)
    if code == 0 and summary.other_failures:
        code = EXIT_RENDER
    if code == 0:  # a clean render: the next one with the same inputs is a no-op
        pages = [f"{o.name}/{p}" for o in outcomes for p in [*o.unchanged, *o.rendered_pages]]
        history = "unchanged" if summary.history == "rendered" else summary.history
        schedule.record_tree(out, inputs, pages, history)
    return code
