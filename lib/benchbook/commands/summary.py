"""``benchbook summary CAMPAIGN --json``: every figure, comparison, check and exclusion of a campaign.

The JSON is read by schedulers and other tools; its shape is documented in docs/summary.md and
kept stable: top-level keys ``format`` ("benchbook.summary/1"), ``campaign``, ``title``,
``provenance``, ``noise``, ``cells``, ``comparisons``, ``checks``, ``exclusions``.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

SUMMARY_FORMAT = "benchbook.summary/1"


def _clean(v: Any) -> Any:
    if isinstance(v, float):
        return None if math.isnan(v) or math.isinf(v) else round(v, 6)
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    return v


def build(campaign: str | Path, *, rule: str = "seed", warmup_rounds: int | None = None) -> dict[str, Any]:

    from benchbook.analysis import baseline
    from benchbook.findings import Exclusion
    from benchbook.ingest.campaign import load_campaign

    camp = load_campaign(campaign)
    cells: list[dict[str, Any]] = []
    if camp.runs_of("phases"):
        cells += baseline.phase_cells(camp, warmup_rounds=warmup_rounds).drop("discarded").to_dicts()
    if camp.runs_of("requests"):
        wc = baseline.whole_request_cells(camp)
        cells += wc.drop("discarded").to_dicts()
    comps = baseline.comparisons(camp, rule=rule, warmup_rounds=warmup_rounds)
    chk = baseline.checks(camp)
    if camp.runs_of("pd"):
        from benchbook.analysis import disaggregation

        rep = disaggregation.analyse(camp.root).as_dict()
        cells += rep["cells"]
        comps += rep["comparisons"]
        chk += rep["checks"]
        camp.exclusions.extend(Exclusion(e["file"], e["sample"], e["reason"]) for e in rep["exclusions"])
    if camp.runs_of("results"):  # each results run's engine window reconciled with its client
        from benchbook.analysis import results

        for run_id, checks in results.campaign_inputs(camp.root).engine_checks():
            chk += [{**c.as_dict(), "name": f"{run_id}: {c.name}"} for c in checks]
    nz = baseline.noise(camp)
    # Each exclusion once, in the order found.
    seen, excl = set(), []
    for e in camp.exclusions:
        key = (e.file, e.sample, e.reason)
        if key not in seen:
            seen.add(key)
            excl.append(e.as_dict())
    return _clean(
        {
            "format": SUMMARY_FORMAT,
            "campaign": camp.name,
            "title": camp.title,
            "provenance": camp.manifest["provenance"],
            "rule": rule,
            "noise": None
            if nz is None
            else {
                "arm": nz.arm,
                "metric": nz.metric,
                "runs": list(nz.runs),
                "values": list(nz.values),
                "spread": nz.spread,
            },
            "cells": cells,
            "comparisons": comps,
            "checks": chk,
            "exclusions": excl,
            "todo": list(camp.manifest.get("todo", [])),
        }
    )


def add_arguments(p) -> None:
    p.add_argument("campaign", type=Path, help="campaign folder")
    p.add_argument("--json", action="store_true", help="print one JSON object (the stable, documented shape)")
    p.add_argument("--rule", choices=["seed", "strict"], default="seed", help="noise rule for verdicts")
    p.add_argument(
        "--warmup-rounds",
        type=int,
        default=None,
        help="discard this many leading repeats per cell instead of using the warm-up flags",
    )


def run(args) -> int:
    s = build(args.campaign, rule=args.rule, warmup_rounds=args.warmup_rounds)
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
    for c in s["checks"]:
        print(f"  [{c['status']}] {c['name']}: {c['detail']}")
    for e in s["exclusions"]:
        print(f"  excluded {e['file']} {e['sample']}: {e['reason']}")
    return 0
