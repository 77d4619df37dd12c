"""The ``benchbook`` command line.

Each subcommand is a module of this package (the work it calls lives in the layers below) exposing
``add_arguments(parser)`` and ``run(args) -> int``. Modules are imported only when their command runs, so ``benchbook --help``
stays fast (no polars/pandas/scipy import).
"""

from __future__ import annotations

import argparse
import importlib
import sys

from benchbook import __version__
from benchbook.errors import EXIT_BAD_INPUT, EXIT_INTERNAL, BenchbookError

# name -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "validate": ("benchbook.commands.validate", "check a campaign folder or an input file; exit 2 on bad input"),
    "summary": ("benchbook.commands.summary", "print a campaign's cells, comparisons, checks and exclusions"),
    "render": ("benchbook.commands.render", "render a campaign's pages to HTML"),
    "prefill-sim": ("benchbook.commands.prefill_sim", "simulate chunked-prefill admission batches"),
    "synth": ("benchbook.commands.synth", "generate a synthetic campaign (marked synthetic)"),
    "capture": (
        "benchbook.commands.capture",
        "measure your own server: the phase harness, the concurrency ladder, /metrics around any benchmark",
    ),
    "init": ("benchbook.commands.init", "scaffold a campaign from result files and capture folders"),
}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="benchbook",
        description="Honest, reproducible reports from raw LLM-serving benchmark captures.",
        epilog="Exit codes: 0 ok, 2 bad input, 3 render failed, 4 source unreachable, "
        "5 output folder locked by another render, 1 internal error.",
    )
    p.add_argument("--version", action="version", version=f"benchbook {__version__}")
    p.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = _parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    name = argv[0] if argv and not argv[0].startswith("-") else None
    module = None
    for cmd, (modname, help_) in COMMANDS.items():
        sp = sub.add_parser(cmd, help=help_, description=help_)
        if cmd == name:
            module = importlib.import_module(modname)
            module.add_arguments(sp)
    if name is not None and module is None:
        parser.error(f"unknown command {name!r}; choose from {', '.join(COMMANDS)}")
    args = parser.parse_args(argv)
    if module is None:
        parser.print_help()
        return 0
    try:
        if getattr(args, "allow_source", None):  # the servers this run may query where a campaign names one
            from benchbook.metrics.source_allow import allowing

            with allowing(args.allow_source):
                return int(module.run(args) or 0)
        return int(module.run(args) or 0)
    except BenchbookError as e:
        print(f"benchbook {name}: {e.one_line()}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print(f"benchbook {name}: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # noqa: BLE001 - last resort: one line, not a traceback
        import errno

        if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT):  # the machine's, not a bug
            where = e.filename if e.filename is not None else "-"
            print(
                f"benchbook {name}: {where}: -: cannot write: no space left on device (the disk or quota is full)",
                file=sys.stderr,
            )
            return EXIT_BAD_INPUT
        print(
            f"benchbook {name}: internal error: {type(e).__name__}: {e} "
            "(a bug in benchbook; rerun with BENCHBOOK_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        import os

        if os.environ.get("BENCHBOOK_DEBUG"):
            raise
        return EXIT_INTERNAL


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
