"""``benchbook capture``: make runs against your own server (see docs/capture.md).

    benchbook capture phases --url http://HOST:PORT --model M --out RUNDIR
    benchbook capture run --metrics http://HOST:PORT/metrics --every 2 --out RUNDIR -- vllm bench serve ...

Exit codes: 0 done; 2 bad arguments, a non-empty --out folder, or an endpoint that does not answer
Prometheus text; 4 the server cannot be reached (after bounded retries); 130 Ctrl-C (the run folder
is kept, valid, and marked incomplete in capture.json). ``capture run`` exits with the command's
own status when the command failed (128 + N when a signal N ended it, e.g. 143 after --time-limit).
"""

from __future__ import annotations

import argparse

from benchbook.errors import UsageError


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="capture_kind", metavar="KIND", required=True)

    ph = sub.add_parser(
        "phases",
        help="the phase harness: one streamed request at a time, /metrics around each",
        description="One streamed /v1/completions request at a time against an OpenAI-compatible "
        "server, /metrics scraped before and after each: writes a phases run.",
    )
    ph.add_argument("--url", required=True, help="server base URL, e.g. http://127.0.0.1:8000")
    ph.add_argument("--model", required=True, help="model name the server serves (the request's `model`)")
    ph.add_argument(
        "--prompt",
        action="append",
        default=[],
        metavar="NAME=TEXT",
        help="a prompt class (repeatable; NAME=@FILE reads the text from a file); default: short (128 "
        "words) and long (1024 words)",
    )
    ph.add_argument("--repeats", type=int, default=3, help="measured rounds per prompt class (default 3)")
    ph.add_argument(
        "--warmup", type=int, default=1, help="warm-up rounds before them, marked and discarded (default 1)"
    )
    ph.add_argument("--max-tokens", type=int, default=32, help="generation budget of every request (default 32)")
    ph.add_argument(
        "--ignore-eos",
        action="store_true",
        help="send ignore_eos=true (vLLM, SGLang) so every request generates exactly --max-tokens",
    )
    ph.add_argument("--metrics", help="the /metrics URL when it is not URL/metrics")
    ph.add_argument(
        "--request-timeout", type=float, default=300.0, help="time limit per request, seconds (default 300)"
    )
    _common(ph)

    rn = sub.add_parser(
        "run",
        help="/metrics before, every S seconds during, and after a benchmark command",
        description="Runs COMMAND (after --) and snapshots the engine's /metrics around it; copies "
        "the result files it wrote.",
    )
    rn.add_argument(
        "--metrics", required=True, help="the engine's /metrics URL (http://HOST:PORT is completed with /metrics)"
    )
    rn.add_argument(
        "--every", type=float, default=5.0, metavar="S", help="seconds between snapshots during the run (default 5)"
    )
    rn.add_argument(
        "--results",
        action="append",
        default=[],
        metavar="PATH",
        help="a folder or file the command writes results to (repeatable); default: the command's "
        "--result-dir / --output-dir / --artifact-dir / --output-path",
    )
    rn.add_argument(
        "--time-limit", type=float, metavar="S", help="stop the command after S seconds (marked incomplete)"
    )
    rn.add_argument("--quiet", action="store_true", help="do not echo the command's output (command.log keeps it)")
    _common(rn)
    rn.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ARGS…: the benchmark command")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", required=True, help="the run folder to create (must not exist or be empty)")
    p.add_argument(
        "--scrape-timeout", type=float, default=10.0, help="time limit per /metrics scrape, seconds (default 10)"
    )
    p.add_argument("--retries", type=int, default=3, help="attempts per scrape before giving up (default 3)")


def run(args: argparse.Namespace) -> int:
    # the options as parsed, recorded in capture.json (argv is not reliable when called as a library)
    argv = {k: v for k, v in vars(args).items() if isinstance(v, (str, int, float, bool, list, type(None)))}
    if args.retries < 1:
        raise UsageError("--retries must be at least 1")
    if args.capture_kind == "phases":
        from benchbook.commands.capture_phases import capture_phases, default_prompts, parse_prompt

        prompts = dict(parse_prompt(s) for s in args.prompt) if args.prompt else default_prompts()
        folder = capture_phases(
            url=args.url,
            model=args.model,
            out=args.out,
            arguments=argv,
            prompts=prompts,
            repeats=args.repeats,
            warmup=args.warmup,
            max_tokens=args.max_tokens,
            metrics=args.metrics,
            ignore_eos=args.ignore_eos,
            request_timeout_s=args.request_timeout,
            scrape_timeout_s=args.scrape_timeout,
            retries=args.retries,
        )
        print(
            f"capture phases: wrote {folder.path}/phases.json ({len(folder.doc['samples'])} samples) and capture.json"
        )
        return 0
    from benchbook.commands.capture_run import capture_run

    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    folder = capture_run(
        metrics=args.metrics,
        out=args.out,
        command=command,
        arguments=argv,
        every_s=args.every,
        results=args.results,
        time_limit_s=args.time_limit,
        scrape_timeout_s=args.scrape_timeout,
        retries=args.retries,
        echo=not args.quiet,
    )
    rc = folder.doc["command"]["exit_status"]
    if not isinstance(rc, int) or rc == 0:
        return 0
    return rc if rc > 0 else 128 - rc  # killed by a signal: as a shell reports it (SIGTERM: 143)
