"""``benchbook synth``: a synthetic campaign from a small, documented timing model.

Everything written here is marked ``"provenance": "synthetic"`` in campaign.json (and said again in
the campaign's README.md and server.log), so no page can pass it off as a measurement. The same
arguments and seed give byte-identical files. The timing model (docs/bench.md has the full text):

* prefill of a ``p``-token prompt: ``prefill_s(p) = PREFILL_FIXED_S + p / PREFILL_TOK_S``;
* one decode step for one row at context ``p``: ``step_s(p) = DECODE_STEP_S + DECODE_CTX_S * p``;
  a step with ``w`` rows costs ``step_s(p̄) * (1 + BATCH_ALPHA * (w - 1))`` (``p̄`` the mean context);
* a request of ``g`` generated tokens: one prefill (it yields the first token), ``g - 1`` decode
  steps, then ``ASSEMBLY_S`` of response assembly during which the scheduler is busy;
* scheduling is prefill-first, FCFS, at most ``width`` rows decoding together; serial is width 1,
  so a group of ``n`` equal requests submitted together completes at ``k × single`` (k = 1..n);
* noise: each run's times are scaled by a run factor (lognormal, sigma ``RUN_SPREAD``), each
  request by ``1 + REQUEST_JITTER * N(0,1)``, each decode step by ``1 ± STEP_JITTER``; ``--noise``
  scales all three (``--noise 0``: the model's exact figures).

Large campaigns also get ``runs/<id>/requests.ndjson`` (every round of the harness protocol, one
request a line, with ``ttft`` and, with ``--itl``, the inter-token latencies); ``requests.json``
keeps round 0, which is exactly what the concurrency harness writes. The campaign loader reads
``requests.ndjson`` instead of ``requests.json`` when it exists (data/README.md);
:func:`read_requests_ndjson` is its reader, ``benchbook.ingest.requests_ndjson``.

Only the standard library is imported at module level (the CLI must stay fast); orjson is used for
writing NDJSON and polars for reading it, imported where used.
"""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from benchbook.commands.synth_engine import (
    GENERATION_TOKENS,
    PROMPT_CLASSES,
    ROUND0,
    Model,
    prefill_s,
    simulate_group,
    single_service_s,
    step_s,
)
from benchbook.commands.synth_writers import (
    request_records,
    server_log,
    write_memory,
    write_pd,
    write_phases,
    write_requests,
)
from benchbook.errors import UsageError

__all__ = [
    "GENERATION_TOKENS",
    "PROMPT_CLASSES",
    "ROUND0",
    "Model",
    "prefill_s",
    "step_s",
    "single_service_s",
    "simulate_group",
    "synthesize",
    "read_requests_ndjson",
    "add_arguments",
    "run",
]

DATE = "2026-01-01"  # fixed: the files must not depend on when they were generated

# ------------------------------------------------------------------------------------ campaign


def synthesize(
    out: str | Path,
    kind: str = "serial",
    runs: int = 2,
    requests: int = ROUND0,
    seed: int = 0,
    snapshots: int = 6,
    itl: bool = False,
    noise: float = 1.0,
    interference: float = 0.01,
    memory: bool = True,
    force: bool = False,
    *,
    model: Model | None = None,
    date: str = DATE,
    history: dict | None = None,
) -> Path:
    """Write a synthetic campaign folder; returns its path. See the module docstring.

    ``model`` replaces the default timing model (before ``noise`` scales it), ``date`` the manifest
    and run dates, ``history`` is written as campaign.json's ``history`` key (the series a history
    page groups it in)."""
    if kind not in ("serial", "batch", "pd"):
        raise UsageError(f"--kind must be serial, batch or pd (got {kind!r})")
    if runs < 1:
        raise UsageError(f"--runs must be at least 1 (got {runs})")
    if kind != "pd" and requests < ROUND0:
        raise UsageError(f"--requests must be at least {ROUND0} (one warm-up plus one protocol round) for {kind}")
    if kind == "pd" and requests < 1:
        raise UsageError("--requests must be at least 1")
    if snapshots < 0 or noise < 0 or not 0 <= interference <= 1:
        raise UsageError("--snapshots and --noise must be non-negative, --interference within [0, 1]")
    root = Path(out)
    if root.exists() and any(root.iterdir()):
        if not force:
            raise UsageError(f"{root} exists and is not empty (use --force to replace it)")
        if not (root / "campaign.json").exists():
            raise UsageError(f"{root} is not a campaign folder; refusing to replace it")
        shutil.rmtree(root)
    root.mkdir(parents=True, exist_ok=True)
    m = (model or Model()).scaled(noise)

    arms: dict[str, dict] = {}
    run_list: list[dict] = []
    notes: list[str] = []
    if kind == "pd":
        arms["pd"] = {
            "label": "PD (synthetic)",
            "mode": "pd",
            "environment": "default",
            "series": "synthetic",
            "role": "baseline",
            "prefill_cards": m.pd_cards // 2,
            "decode_cards": m.pd_cards - m.pd_cards // 2,
            "scheduler": {
                "global_chunked_prefill_size": m.pd_chunk * m.pd_dp,
                "dp": m.pd_dp,
                "page_size": m.pd_page,
                "prefill_max_requests": m.pd_max_requests,
            },
            "server_args": {
                "chunked_prefill_size": m.pd_chunk * m.pd_dp,
                "dp": m.pd_dp,
                "page_size": m.pd_page,
                "prefill_max_requests": m.pd_max_requests,
            },
        }
        for r in range(1, runs + 1):
            rid = f"pd-{r}"
            d = root / "runs" / rid
            d.mkdir(parents=True)
            if not write_pd(m, seed, d, rid, requests, itl):
                notes.append("benchbook.analysis.admission is not available: PD scheduler logs were not written")
            run_list.append(
                {
                    "id": rid,
                    "arm": "pd",
                    "harness": "pd",
                    "path": f"runs/{rid}",
                    "date": date,
                    "load": {"requests": requests, "concurrency": requests, "prompt_class": "pd"},
                }
            )
    else:
        widths = {"serial": 1} if kind == "serial" else {"serial": 1, "batch": 8}
        for arm, width in widths.items():
            arms[arm] = {
                "label": f"{arm}, mbs={width}" if arm == "batch" else "serial, mbs=1",
                "mode": arm,
                "environment": "default",
                "series": "synthetic",
                "role": "baseline" if arm == "serial" else "candidate",
                "server_args": {"max_batch_size": width, "prefill_token_budget": 0},
            }
            for r in range(1, runs + 1):
                rid = f"{arm}-{r}"
                d = root / "runs" / rid
                d.mkdir(parents=True)
                write_requests(d, rid, request_records(m, seed, rid, width, requests), requests, itl)
                (d / "server.log").write_text(server_log(width, 8), encoding="utf-8")
                run_list.append({"id": rid, "arm": arm, "harness": "requests", "path": f"runs/{rid}", "date": date})
            if snapshots:
                for r in range(1, runs + 1):
                    rid = f"phases-{arm}-{r}"
                    d = root / "runs" / rid
                    d.mkdir(parents=True)
                    write_phases(m, seed, d, rid, snapshots, interference)
                    (d / "server.log").write_text(server_log(width, 8), encoding="utf-8")
                    run_list.append({"id": rid, "arm": arm, "harness": "phases", "path": f"runs/{rid}", "date": date})
            if memory:
                rid = f"memory-{arm}"
                d = root / "runs" / rid
                d.mkdir(parents=True)
                write_memory(seed, d, rid, width)
                (d / "server.log").write_text(server_log(width, 8), encoding="utf-8")
                run_list.append({"id": rid, "arm": arm, "harness": "memory", "path": f"runs/{rid}", "date": date})

    manifest = {
        "format": "benchbook.campaign/1",
        **({"kind": "pd"} if kind == "pd" else {}),
        "title": f"Synthetic {kind} campaign (seed {seed})",
        "question": "None: synthetic data from benchbook's timing model, for tests, demos and benchmarks",
        "date": date,
        "provenance": "synthetic",
        **({"history": history} if history else {}),
        "scope": {
            "measured": [],
            "outside": ["everything: no server ran; figures come from the timing model in docs/bench.md"],
        },
        "host": {"GPU": "none (synthetic)", "CPU / host": "none (synthetic)"},
        "checkpoint": {"path": "none (synthetic)", "architecture": "synthetic"},
        "engine": {"name": "synthetic pocket engine", "profile": "pocket", "commit": "synthetic"},
        "environments": {"default": {"description": "nothing set", "variables": {}}},
        "prompt_classes": {"pd": {"tokens": m.pd_prompt_tokens}} if kind == "pd" else PROMPT_CLASSES,
        "generation_tokens": m.pd_generation_tokens if kind == "pd" else GENERATION_TOKENS,
        "arms": arms,
        "runs": run_list,
        "noise": {"reference_arm": next(iter(arms)), "rule": "seed"},
        "synthetic": {
            "generator": "benchbook synth",
            "kind": kind,
            "seed": seed,
            "runs": runs,
            "requests": requests,
            "snapshots": snapshots,
            "itl": itl,
            "noise": noise,
            "interference": interference,
            "model": asdict(m),
            "notes": sorted(set(notes)),
        },
    }
    (root / "campaign.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    cmd = f"benchbook synth --kind {kind} --runs {runs} --requests {requests} --seed {seed} --snapshots {snapshots}"
    cmd += " --itl" if itl else ""
    (root / "README.md").write_text(
        f"# Synthetic campaign — not a measurement\n\nGenerated by `{cmd}`. No server ran: every number in "
        "these files comes from the timing model described in benchbook's docs/bench.md. campaign.json says "
        '`"provenance": "synthetic"`, and pages built from it say so.\n'
        + "".join(f"\n- {n}" for n in sorted(set(notes)))
        + ("\n" if notes else ""),
        encoding="utf-8",
    )
    return root


# ------------------------------------------------------------------------------ a series (history)

# metric a --step may move -> what it does to the timing model (factor f = 1 + X%)
STEP_METRICS = {
    "decode_tok_s": "decode steps take 1/f as long (decode tok/s × f)",
    "prefill_tok_s": "prefill takes 1/f as long (prefill tok/s × f)",
    "single_latency_s": "every engine time × f (latencies × f, rates / f)",
    "ladder_tok_s": "every engine time / f (aggregate and single rates × f)",
}


@dataclass(frozen=True)
class Step:
    """A known step in a synthetic series: from ``date`` on, ``metric`` moves by ``change`` (0.09 = +9 %)."""

    date: str
    metric: str
    change: float


def parse_step(text: str) -> Step:
    """``2026-11-13:decode_tok_s:-9%`` -> Step('2026-11-13', 'decode_tok_s', -0.09)."""
    import datetime as dt

    parts = text.split(":")
    if len(parts) != 3:
        raise UsageError(f"--step {text!r}: expected DATE:METRIC:+X% (e.g. 2026-11-13:decode_tok_s:-9%)")
    date, metric, pct = parts
    try:
        dt.date.fromisoformat(date)
    except ValueError:
        raise UsageError(f"--step {text!r}: {date!r} is not a YYYY-MM-DD date") from None
    if metric not in STEP_METRICS:
        raise UsageError(f"--step {text!r}: metric must be one of {', '.join(STEP_METRICS)}")
    try:
        change = float(pct.rstrip("%")) / 100.0
    except ValueError:
        raise UsageError(f"--step {text!r}: {pct!r} is not a percentage such as +9% or -9%") from None
    if not change > -1.0:
        raise UsageError(f"--step {text!r}: a change must be above -100%")
    return Step(date, metric, change)


def stepped_model(steps: list[Step], date: str, base: Model | None = None) -> Model:
    """The timing model of a campaign measured on ``date``: every step dated on or before it applied."""
    d = asdict(base or Model())
    for st in steps:
        if st.date > date:
            continue
        f = 1.0 + st.change
        if st.metric == "decode_tok_s":
            d["decode_step_s"] /= f
            d["decode_ctx_s"] /= f
        elif st.metric == "prefill_tok_s":
            d["prefill_fixed_s"] /= f
            d["prefill_tok_s"] *= f
        else:
            g = f if st.metric == "single_latency_s" else 1.0 / f
            for k in ("prefill_fixed_s", "decode_step_s", "decode_ctx_s", "assembly_s"):
                d[k] *= g
            d["prefill_tok_s"] /= g
    return Model(**d)


def synthesize_series(
    out: str | Path,
    count: int,
    steps: list[Step] | None = None,
    *,
    start: str = "2026-11-01",
    name: str = "nightly",
    kind: str = "serial",
    runs: int = 2,
    requests: int = ROUND0,
    seed: int = 0,
    snapshots: int = 6,
    noise: float = 1.0,
    memory: bool = True,
    force: bool = False,
) -> list[Path]:
    """Write ``count`` nightly campaigns ``out/<name>-<date>`` (one a day from ``start``), all in
    history series ``name``, each with its own noise seed, with ``steps`` applied from their dates."""
    import datetime as dt

    if count < 1:
        raise UsageError(f"--series must be at least 1 (got {count})")
    if kind == "pd" and steps:
        raise UsageError("--step applies to serial and batch series only")
    try:
        day0 = dt.date.fromisoformat(start)
    except ValueError:
        raise UsageError(f"--start {start!r} is not a YYYY-MM-DD date") from None
    steps = list(steps or [])
    paths = []
    for i in range(count):
        date = (day0 + dt.timedelta(days=i)).isoformat()
        paths.append(
            synthesize(
                Path(out) / f"{name}-{date}",
                kind,
                runs,
                requests,
                seed * 100003 + i,
                snapshots,
                False,
                noise,
                0.0,
                memory,
                force,
                model=stepped_model(steps, date),
                date=date,
                history={"series": name, "steps": [asdict(s) for s in steps if s.date <= date]},
            )
        )
    return paths


# ------------------------------------------------------------------------- reading requests.ndjson


def read_requests_ndjson(path, generation_tokens=None, prompt_classes=None, itl=None):
    """``benchbook.ingest.requests_ndjson.read_requests_ndjson`` (the campaign loader's reader)."""
    from benchbook.ingest.requests_ndjson import read_requests_ndjson as read

    return read(path, generation_tokens, prompt_classes, itl)


# ----------------------------------------------------------------------------------------- CLI


def add_arguments(p) -> None:
    p.epilog = (
        'Writes a campaign marked "provenance": "synthetic". Same arguments and seed give '
        "byte-identical files. Timing model: docs/bench.md."
    )
    p.add_argument("--out", required=True, type=Path, help="campaign folder to create (must be empty or absent)")
    p.add_argument(
        "--kind",
        choices=("serial", "batch", "pd"),
        default="serial",
        help="serial: one width-1 arm; batch: serial and width-8 arms; pd: a disaggregated arm",
    )
    p.add_argument("--runs", type=int, default=2, help="runs per arm and harness (identical configurations; default 2)")
    p.add_argument(
        "--requests",
        type=int,
        default=ROUND0,
        help=f"request records per run (default {ROUND0}: warm-up + one protocol round); "
        "more than that also writes runs/<id>/requests.ndjson",
    )
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument(
        "--snapshots", type=int, default=6, help="/metrics snapshot pairs per phases run (0: no phases runs)"
    )
    p.add_argument("--itl", action="store_true", help="write per-request inter-token latency lists to requests.ndjson")
    p.add_argument("--noise", type=float, default=1.0, help="scale of every noise term (0: exact model figures)")
    p.add_argument(
        "--interference",
        type=float,
        default=0.01,
        help="share of phase samples a neighbour request lands in (they are excluded on load)",
    )
    p.add_argument("--no-memory", action="store_true", help="skip the memory runs")
    p.add_argument("--force", action="store_true", help="replace an existing campaign folder")
    p.add_argument(
        "--series",
        type=int,
        metavar="K",
        help="write K nightly campaigns OUT/<name>-<date> (one a day from --start) in one history series",
    )
    p.add_argument(
        "--step",
        action="append",
        default=[],
        metavar="DATE:METRIC:+X%",
        help=f"with --series: from DATE on, METRIC moves by X%% (METRIC: {', '.join(STEP_METRICS)}); repeatable",
    )
    p.add_argument("--start", default="2026-11-01", help="with --series: date of the first campaign (YYYY-MM-DD)")
    p.add_argument("--name", default="nightly", help="with --series: the series name (campaign.json history.series)")


def run(args) -> int:
    if args.step and args.series is None:
        raise UsageError("--step needs --series K")
    if args.series is not None:
        paths = synthesize_series(
            args.out,
            args.series,
            [parse_step(t) for t in args.step],
            start=args.start,
            name=args.name,
            kind=args.kind,
            runs=args.runs,
            requests=args.requests,
            seed=args.seed,
            snapshots=args.snapshots,
            noise=args.noise,
            memory=not args.no_memory,
            force=args.force,
        )
        print(f"{args.out}: {len(paths)} synthetic {args.kind} campaign(s) in series {args.name!r}, seed {args.seed}")
        for t in args.step:
            print(f"  step {t}")
        return 0
    root = synthesize(
        args.out,
        args.kind,
        args.runs,
        args.requests,
        args.seed,
        args.snapshots,
        args.itl,
        args.noise,
        args.interference,
        not args.no_memory,
        args.force,
    )
    man = json.loads((root / "campaign.json").read_text("utf-8"))
    print(
        f"{root}: synthetic {args.kind} campaign, {len(man['arms'])} arm(s), {len(man['runs'])} runs, seed {args.seed}"
    )
    for note in man["synthetic"]["notes"]:
        print(f"note: {note}", file=sys.stderr)
    return 0
