"""``benchbook summary CAMPAIGN --json``: every figure, comparison, verdict, check and exclusion of a campaign.

It serializes the campaign's one analysis object (:mod:`benchbook.analysis.campaign_analysis`) — the
same object the pages read — with the one JSON serializer pages' values use
(:func:`benchbook.jsonfile.plain`). The shape is documented in docs/summary.md and versioned by
``format`` (``benchbook.summary/3``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from benchbook.analysis.campaign_analysis import SUMMARY_FORMAT  # noqa: F401  (re-exported)


def build(
    campaign: str | Path,
    *,
    rule: str = "seed",
    warmup_rounds: int | None = None,
    cached_prefill: str = "exclude",
    allow_preemption: bool = False,
) -> dict[str, Any]:
    """The summary of ``campaign`` with the audit's options as the pages take them (``cached_prefill``:
    "exclude" | "keep"; ``allow_preemption``: a preemption warns instead of failing; docs/checks.md)."""
    from benchbook.analysis.campaign_analysis import analyse
    from benchbook.jsonfile import plain

    an = analyse(
        campaign,
        rule=rule,
        warmup_rounds=warmup_rounds,
        cached_prefill=cached_prefill,
        allow_preemption=allow_preemption,
    )
    return plain(an.as_dict())


def add_arguments(p) -> None:
    p.add_argument("campaign", type=Path, help="campaign folder")
    from benchbook.metrics.source_allow import add_allow_argument

    add_allow_argument(p)
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print one JSON object (the stable, documented shape)")
    out.add_argument(
        "--csv",
        action="store_true",
        help="print the per-point table as CSV for a spreadsheet: one row per benchmark run (configuration, "
        "load, counts, throughputs, latency mean/median/p99, validity), or per figure for a campaign without "
        "result files (docs/summary.md)",
    )
    from benchbook.analysis.verdict import RULE_HELP, RULES

    p.add_argument("--rule", choices=list(RULES), default="seed", help=RULE_HELP)
    p.add_argument(
        "--warmup-rounds",
        type=int,
        default=None,
        help="discard this many leading repeats per cell instead of using the warm-up flags",
    )
    from benchbook.analysis.checks import CACHED_PREFILL_MODES

    p.add_argument(
        "--cached-prefill",
        choices=list(CACHED_PREFILL_MODES),
        default="exclude",
        help="a phase sample whose prompt came mostly from the prefix cache: leave it out of the prefill "
        "figures (exclude, default) or keep it, labelled cached prefill",
    )
    p.add_argument(
        "--allow-preemption",
        action="store_true",
        help="a preemption is a warning instead of a failed check",
    )


def run(args) -> int:
    if getattr(args, "csv", False):
        from benchbook.analysis.campaign_analysis import analyse
        from benchbook.analysis.point_table import write_csv

        an = analyse(
            args.campaign,
            rule=args.rule,
            warmup_rounds=args.warmup_rounds,
            cached_prefill=args.cached_prefill,
            allow_preemption=args.allow_preemption,
        )
        write_csv(an, sys.stdout)
        return 0
    s = build(
        args.campaign,
        rule=args.rule,
        warmup_rounds=args.warmup_rounds,
        cached_prefill=args.cached_prefill,
        allow_preemption=args.allow_preemption,
    )
    if args.json:
        json.dump(s, sys.stdout, ensure_ascii=False, indent=1, sort_keys=False)
        sys.stdout.write("\n")
        return 0
    print(f"{s['title']} ({s['campaign']}, {s['provenance']})")
    if s["noise"]:
        print(f"noise: spread {s['noise']['spread'] * 100:.1f}% between runs {', '.join(s['noise']['runs'])}")
    print(
        f"{len(s['cells'])} cells, {len(s['comparisons'])} comparisons, {len(s['checks'])} checks, "
        f"{len(s['exclusions'])} exclusions"
    )
    for c in s["comparisons"]:
        print(
            f"  {c['candidate']} vs {c['baseline']} {c['metric']} [{c['context']}]: "
            f"{c['ratio']:.3f}x ({c['change_pct']:+.1f}%) {c.get('mark', '')} {c['verdict']}"
        )
    for d in s["memory_deltas"]:
        print(f"  memory: {d['text']}")
    for r in s["interval_rates"]:
        print(f"  interval rate: {r['text']}")
    for r in s["references"]:
        print(f"  reference: {r['text']}")
    if s["ablation"]:
        for f in s["ablation"]["findings"]:
            print(f"  ablation: {f}")
        for i in s["ablation"]["interactions"]:
            print(f"  ablation: {i['text']}")
    for c in s["checks"]:
        print(f"  [{c['status']}] {c['name']}: {c['detail']}")
    for e in s["exclusions"]:
        print(f"  excluded {e['file']} {e['sample']}: {e['reason']}")
    return 0
