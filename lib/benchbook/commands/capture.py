"""``benchbook capture``: make runs against your own server (see docs/capture.md).

    benchbook capture phases --url http://HOST:PORT --model M --out RUNDIR
    benchbook capture ladder --url http://HOST:PORT --model M --concurrency 1,2,4,8 --interleave --out RUNDIR
    benchbook capture run --metrics http://HOST:PORT/metrics --every 2 --out RUNDIR -- vllm bench serve ...
    benchbook capture sweep --url http://HOST:PORT --concurrency 1,4,16 --arm A --run R --out ROOT -- \
        vllm bench serve ... --max-concurrency {concurrency} --num-prompts {4*concurrency}

With ``--arm NAME --run NAME [--point NAME]`` the folder is ``RUNDIR/ARM/RUN/POINT`` (the layout
``benchbook init`` reads: an arm folder per server configuration, a run folder per server process).

Exit codes: 0 done; 2 bad arguments, a non-empty --out folder, or an endpoint that does not answer
Prometheus text; 4 the server cannot be reached (after bounded retries); 130 Ctrl-C (the run folder
is kept, valid, and marked incomplete in capture.json). ``capture run`` exits with the command's
own status when the command failed (128 + N when a signal N ended it, e.g. 143 after --time-limit);
``capture sweep`` with the failed point's.
"""

from __future__ import annotations

import argparse

from benchbook.errors import UsageError


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="capture_kind", metavar="KIND", required=True)

    ph = sub.add_parser(
        "phases",
        help="the phase harness: one streamed request at a time, /metrics around each (prefill and decode apart)",
        description="One streamed /v1/completions request at a time against an OpenAI-compatible "
        "server, /metrics scraped before and after each: writes a phases run.",
    )
    _requests(ph)
    ph.add_argument("--repeats", type=int, default=3, help="measured rounds per prompt class (default 3)")
    ph.add_argument(
        "--warmup", type=int, default=1, help="warm-up rounds before them, marked and discarded (default 1)"
    )
    _common(ph)

    ld = sub.add_parser(
        "ladder",
        help="the concurrency ladder: a single request, k at once for each k, the long/short interleave",
        description="The concurrency ladder against an OpenAI-compatible server: a single streamed "
        "request, then k streamed requests at once for each k of --concurrency (is the aggregate rate flat — "
        "one request at a time — or does it grow with k?), then (--interleave) a long and a short request "
        "together; /metrics before and after each step. Writes a requests run (the baseline page's ladder).",
    )
    _requests(ld)
    ld.add_argument(
        "--concurrency",
        default="1,2,4,8",
        help="the ladder's steps, comma-separated (default 1,2,4,8; 1 is the single request, always sent)",
    )
    ld.add_argument("--interleave", action="store_true", help="end with the long/short interleave")
    ld.add_argument(
        "--interleave-delay",
        type=float,
        default=0.5,
        metavar="S",
        help="the short request of the interleave starts S seconds after the long one (default 0.5)",
    )
    ld.add_argument(
        "--warmup", type=int, default=1, help="warm-up single requests first, marked and discarded (default 1)"
    )
    _common(ld)

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
        "--every",
        type=float,
        default=0.5,
        metavar="S",
        help="seconds between snapshots during the run (default 0.5: well inside a request's latency, so "
        "Little's law can be judged from them; more for a benchmark of many minutes)",
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
    rn.add_argument(
        "--expect-requests",
        type=int,
        metavar="N",
        help="the requests the command sends (e.g. its --num-prompts): the after scrape waits (--settle-timeout) "
        "until the engine has counted N more finished requests",
    )
    _common(rn)
    rn.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ARGS…: the benchmark command")

    sw = sub.add_parser(
        "sweep",
        help="a load sweep: one `capture run` per concurrency or rate, the value substituted into the command",
        description="Runs COMMAND (after --) once per point of --concurrency or --rate, each as `capture run` "
        "into OUT/ARM/RUN/conc<C> (or rate<R>), with {concurrency}, {rate}, {num_prompts}, {index}, {point}, "
        "{url} and arithmetic such as {4*concurrency} replaced in every argument; stops at a failed point; "
        "sweep.json in the run folder says what ran. docs/capture.md, capture sweep.",
    )
    sw.add_argument("--url", required=True, help="server base URL, e.g. http://127.0.0.1:8000 ({url} in the command)")
    sw.add_argument("--metrics", help="the /metrics URL when it is not URL/metrics")
    load = sw.add_mutually_exclusive_group(required=True)
    load.add_argument(
        "--concurrency", metavar="C,C,…", help="the points: concurrencies, e.g. 1,4,16,64 ({concurrency})"
    )
    load.add_argument("--rate", metavar="R,R,…", help="the points: request rates per second, e.g. 2,8,inf ({rate})")
    sw.add_argument(
        "--point-prefix",
        help="the point folders' name before the value (default conc for --concurrency, rate for --rate)",
    )
    sw.add_argument(
        "--num-prompts-per-point",
        "--num-prompts",
        dest="num_prompts",
        metavar="EXPR",
        help="requests per point, e.g. '4*concurrency' or 'max(32, 4*concurrency)': {num_prompts} in the command",
    )
    sw.add_argument(
        "--every",
        type=float,
        default=0.5,
        metavar="S",
        help="seconds between snapshots during each point (default 0.5, as capture run)",
    )
    sw.add_argument(
        "--results",
        action="append",
        default=[],
        metavar="PATH",
        help="where the command writes results (repeatable; placeholders allowed); default: its --result-dir etc.",
    )
    sw.add_argument(
        "--time-limit", type=float, metavar="S", help="stop a point's command after S seconds (a failed point)"
    )
    sw.add_argument("--quiet", action="store_true", help="do not echo the command's output (command.log keeps it)")
    _common(sw, point=False)
    sw.add_argument(
        "command", nargs=argparse.REMAINDER, help="-- COMMAND ARGS…: the benchmark command, with placeholders"
    )


def _requests(p: argparse.ArgumentParser) -> None:
    """The options of the commands that send the requests themselves (phases, ladder)."""
    p.add_argument("--url", required=True, help="server base URL, e.g. http://127.0.0.1:8000")
    p.add_argument("--model", required=True, help="model name the server serves (the request's `model`)")
    p.add_argument(
        "--prompt",
        action="append",
        default=[],
        metavar="NAME=TEXT",
        help="a prompt class (repeatable; NAME=@FILE reads the text from a file); default: short (128 "
        "words) and long (1024 words, cut to fit the served model's context)",
    )
    p.add_argument("--max-tokens", type=int, default=32, help="generation budget of every request (default 32)")
    p.add_argument(
        "--ignore-eos",
        action="store_true",
        help="send ignore_eos=true (vLLM, SGLang) so every request generates exactly --max-tokens",
    )
    p.add_argument(
        "--same-prompt",
        action="store_true",
        help="send each class's text unchanged every time (on a prefix-caching server the later requests are "
        "then served mostly from its cache); default: every request's prompt starts with a prefix of its own, "
        "so none is served from the engine's prefix cache",
    )
    p.add_argument("--metrics", help="the /metrics URL when it is not URL/metrics")
    p.add_argument("--request-timeout", type=float, default=300.0, help="time limit per request, seconds (default 300)")


def _common(p: argparse.ArgumentParser, point: bool = True) -> None:
    p.add_argument(
        "--out",
        required=True,
        help="the folder to create (must not exist or be empty); with --arm/--run: the root of OUT/ARM/RUN/POINT",
    )
    p.add_argument("--arm", help="arm folder: the server configuration (OUT/ARM/RUN/POINT; docs/capture.md)")
    p.add_argument("--run", help="run folder: one server process of that arm (a second process is a repeat)")
    if point:
        p.add_argument(
            "--point",
            help="point folder: one load point (capture run: required with --run, e.g. conc8; "
            "default 'phases' / 'ladder' for those kinds)",
        )
    p.add_argument(
        "--server-pid",
        type=int,
        help="the server's PID on this host: Rss/Pss of its process tree go into host_samples.csv",
    )
    p.add_argument(
        "--scrape-timeout", type=float, default=10.0, help="time limit per /metrics scrape, seconds (default 10)"
    )
    p.add_argument("--retries", type=int, default=3, help="attempts per scrape before giving up (default 3)")
    p.add_argument(
        "--settle-timeout",
        type=float,
        default=5.0,
        metavar="S",
        help="before a step's after scrape, wait at most S seconds (polling /metrics every 0.1 s) until the "
        "engine's finished-request counter has counted the step's requests (default 5; recorded as settle)",
    )
    p.add_argument(
        "--compress",
        action="store_true",
        help="write each /metrics scrape gzip-compressed (NAME.prom.gz, about a tenth of the size); "
        "every benchbook reader reads them as they are",
    )


def run(args: argparse.Namespace) -> int:
    # the options as parsed, recorded in capture.json (argv is not reliable when called as a library)
    argv = {k: v for k, v in vars(args).items() if isinstance(v, (str, int, float, bool, list, type(None)))}
    if args.retries < 1:
        raise UsageError("--retries must be at least 1")
    if args.settle_timeout < 0:
        raise UsageError("--settle-timeout must be 0 or more seconds")
    if args.capture_kind == "sweep":
        return _sweep(args, argv)
    from benchbook.commands.capture_folder import layout

    layout(args.out, args.capture_kind, args.arm, args.run, args.point)  # a bad name: refused before any request
    place = {"arm": args.arm, "run": args.run, "point": args.point, "server_pid": args.server_pid}
    if args.capture_kind in ("phases", "ladder"):
        from benchbook.commands.capture_prompts import default_prompts, parse_prompt

        prompts = dict(parse_prompt(s) for s in args.prompt) if args.prompt else {}
        defaults = {k: v for k, v in default_prompts().items() if k not in prompts}
        req = {
            "url": args.url,
            "model": args.model,
            "out": args.out,
            "arguments": argv,
            "max_tokens": args.max_tokens,
            "metrics": args.metrics,
            "ignore_eos": args.ignore_eos,
            "request_timeout_s": args.request_timeout,
            "scrape_timeout_s": args.scrape_timeout,
            "retries": args.retries,
            "same_prompt": args.same_prompt,
            "compress": args.compress,
            "settle_s": args.settle_timeout,
            **place,
        }
    if args.capture_kind == "phases":
        from benchbook.commands.capture_phases import capture_phases

        folder = capture_phases(
            **req,
            prompts=prompts or defaults,
            default_classes=() if prompts else sorted(defaults),
            repeats=args.repeats,
            warmup=args.warmup,
        )
        print(
            f"capture phases: wrote {folder.path}/phases.json ({len(folder.doc['samples'])} samples) and capture.json"
        )
        return 0
    if args.capture_kind == "ladder":
        from benchbook.commands.capture_ladder import capture_ladder, parse_concurrency

        # the ladder needs short (and long for the interleave): a class not given is the default's
        folder = capture_ladder(
            **req,
            prompts={**defaults, **prompts},
            default_classes=sorted(defaults),
            concurrency=parse_concurrency(args.concurrency),
            interleave=args.interleave,
            interleave_delay_s=args.interleave_delay,
            warmup=args.warmup,
        )
        print(f"capture ladder: wrote {folder.path}/requests.json ({len(folder.doc['steps'])} steps) and capture.json")
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
        compress=args.compress,
        expect_requests=args.expect_requests,
        settle_s=args.settle_timeout,
        **place,
    )
    rc = folder.doc["command"]["exit_status"]
    if not isinstance(rc, int) or rc == 0:
        return 0
    return rc if rc > 0 else 128 - rc  # killed by a signal: as a shell reports it (SIGTERM: 143)


def _sweep(args: argparse.Namespace, argv: dict) -> int:
    from benchbook.commands.capture_sweep import capture_sweep, parse_values

    variable = "concurrency" if args.concurrency is not None else "rate"
    values = parse_values(f"--{variable}", args.concurrency if args.concurrency is not None else args.rate)
    _doc, rc = capture_sweep(
        url=args.url,
        metrics=args.metrics,
        out=args.out,
        arm=args.arm,
        run=args.run,
        variable=variable,
        values=values,
        point_prefix=args.point_prefix,
        num_prompts_expr=args.num_prompts,
        command=args.command[1:] if args.command[:1] == ["--"] else args.command,
        arguments=argv,
        every_s=args.every,
        results=args.results,
        time_limit_s=args.time_limit,
        scrape_timeout_s=args.scrape_timeout,
        retries=args.retries,
        echo=not args.quiet,
        server_pid=args.server_pid,
        compress=args.compress,
        settle_s=args.settle_timeout,
    )
    return rc
