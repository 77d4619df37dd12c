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
CELL_KEYS = ("arm", "run", "environment", "prompt_class", "prompt_tokens", "generated_tokens", "metric", "unit",
             "median", "min", "max", "n")
COMPARISON_KEYS = ("baseline", "candidate", "metric", "context", "ratio", "change_pct", "verdict", "reason")


def _clean(v: Any) -> Any:
    if isinstance(v, float):
        return None if math.isnan(v) or math.isinf(v) else round(v, 6)
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    return v


def checks(camp, rule: str = "seed") -> list[dict[str, Any]]:
    """Serialization, queueing, amortization, clamps and memory checks (status pass|warn|fail)."""
    import polars as pl

    from . import baseline, ladder

    out: list[dict[str, Any]] = []
    nz = baseline.noise(camp)
    # Without repeated runs there is no measured spread; fall back to the strict rule's 2 % floor.
    spread = nz.spread if nz else 0.02
    wc = baseline.whole_request_cells(camp)
    req = camp.requests
    for run in camp.runs_of("requests"):
        c = wc.filter(pl.col("run") == run.id)
        single = c.filter(pl.col("metric") == "single_tok_s")
        lad = c.filter(pl.col("metric") == "ladder_tok_s")
        if single.height and lad.height:
            rates = {1: single["median"][0], **dict(zip(lad["concurrency"].to_list(), lad["median"].to_list()))}
            f = ladder.flatness(rates, spread)
            batch = camp.arms[run.arm]["mode"] == "batch"
            out.append({"name": f"serialization: {run.id}", "status": "warn" if (f.flat and batch) else "pass",
                        "detail": f.reason + (" — a batch arm that serializes: see the clamp check" if f.flat and batch else ""),
                        "run": run.id, "flat": f.flat})
        wall1 = c.filter(pl.col("metric") == "single_latency_s")
        g = req.filter((pl.col("run") == run.id) & (pl.col("scenario") == "ladder"))
        if g.height and "round" in g.columns:  # requests.ndjson: the queue of the first round
            g = g.filter(pl.col("round") == g["round"].min())
        if wall1.height and g.height:
            nmax = g["n"].max()
            grp = g.filter(pl.col("n") == nmax)
            offs = (grp["end"] - grp["start"].min()).to_list()
            q = ladder.queueing(wall1["median"][0], offs)
            batch = camp.arms[run.arm]["mode"] == "batch"
            out.append({"name": f"pure queueing at n={nmax}: {run.id}", "status": "warn" if (q.pure and batch) else "pass",
                        "detail": q.reason, "run": run.id, "pure": q.pure})
    for base, cand in baseline.comparison_pairs(camp):
        A, B = camp.arms[base], camp.arms[cand]
        if A["mode"] != "serial" or B["mode"] != "batch":
            continue
        def val(arm, metric, n):
            f = wc.filter((pl.col("arm") == arm) & (pl.col("metric") == metric) & (pl.col("concurrency") == n))
            return f["median"].median() if f.height else None
        single, bw, sw = val(base, "single_latency_s", 1), val(cand, "ladder_wall_s", 8), val(base, "ladder_wall_s", 8)
        if single and bw:
            a = ladder.amortization(single, bw, 8, sw, decode_steps=camp.generation_tokens or 32)
            out.append({"name": f"batching amortization: {cand} vs {base}",
                        "status": "pass" if a.agree in (True, None) else "warn", "detail": a.explanation,
                        "effective_width": a.effective_width, "speedup": a.speedup,
                        "single_row_steps": a.single_row_steps, "step_cost_n_s": a.step_cost_n, "step_cost_1_s": a.step_cost_1})
    return out


def _Excl(**kw):
    from .ingest.campaign import Exclusion

    return Exclusion(**kw)


def build(campaign: str | Path, *, rule: str = "seed", warmup_rounds: int | None = None) -> dict[str, Any]:

    from . import baseline
    from .ingest.campaign import load_campaign

    camp = load_campaign(campaign)
    cells: list[dict[str, Any]] = []
    if camp.runs_of("phases"):
        cells += baseline.phase_cells(camp, warmup_rounds=warmup_rounds).drop("discarded").to_dicts()
    if camp.runs_of("requests"):
        wc = baseline.whole_request_cells(camp)
        cells += wc.drop("discarded").to_dicts()
    comps = baseline.comparisons(camp, rule=rule, warmup_rounds=warmup_rounds)
    chk = checks(camp, rule)
    if camp.runs_of("pd"):
        from . import pd

        rep = pd.analyse(camp.root).as_dict()
        cells += rep["cells"]
        comps += rep["comparisons"]
        chk += rep["checks"]
        camp.exclusions.extend(_Excl(**{k: e[k] for k in ("file", "sample", "reason")}) for e in rep["exclusions"])
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
            "noise": None if nz is None else {"arm": nz.arm, "metric": nz.metric, "runs": list(nz.runs),
                                              "values": list(nz.values), "spread": nz.spread},
            "cells": cells,
            "comparisons": comps,
            "checks": chk,
            "exclusions": excl,
        }
    )


def add_arguments(p) -> None:
    p.add_argument("campaign", type=Path, help="campaign folder")
    p.add_argument("--json", action="store_true", help="print one JSON object (the stable, documented shape)")
    p.add_argument("--rule", choices=["seed", "strict"], default="seed", help="noise rule for verdicts")
    p.add_argument("--warmup-rounds", type=int, default=None,
                   help="discard this many leading repeats per cell instead of using the warm-up flags")


def run(args) -> int:
    s = build(args.campaign, rule=args.rule, warmup_rounds=args.warmup_rounds)
    if args.json:
        json.dump(s, sys.stdout, ensure_ascii=False, indent=1, sort_keys=False)
        sys.stdout.write("\n")
        return 0
    print(f"{s['title']} ({s['campaign']}, {s['provenance']})")
    if s["noise"]:
        print(f"noise: spread {s['noise']['spread'] * 100:.1f}% between runs {', '.join(s['noise']['runs'])}")
    print(f"{len(s['cells'])} cells, {len(s['comparisons'])} comparisons, {len(s['checks'])} checks, "
          f"{len(s['exclusions'])} exclusions")
    for c in s["comparisons"]:
        print(f"  {c['candidate']} vs {c['baseline']} {c['metric']} [{c['context']}]: "
              f"{c['ratio']:.3f}x ({c['change_pct']:+.1f}%) {c.get('mark', '')} {c['verdict']}")
    for c in s["checks"]:
        print(f"  [{c['status']}] {c['name']}: {c['detail']}")
    for e in s["exclusions"]:
        print(f"  excluded {e['file']} {e['sample']}: {e['reason']}")
    return 0
