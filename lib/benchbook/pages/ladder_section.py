"""The baseline page's ladder from result files: one row per load point of a server process (benchbook
init's arm/run layout), the serialization and pure-queueing checks per process with the status each
carries, the output rate between arms with the campaign's one verdict per comparison, batching
amortization and what each server process ran — formatted from
:func:`benchbook.analysis.ladder.results_ladder_analysis` as the campaign's analysis holds it.
"""

from __future__ import annotations

from typing import Any

from benchbook.pages import display as bd
from benchbook.pages import sections


def _table_said_once(id: str, rows: list[dict[str, Any]], col: str) -> bd.Block:
    """A table whose reasons in ``col`` shared by several rows are said once, under it."""
    rows, note = sections.said_once(rows, col)
    return bd.table(rows, id=id, note=note or None)


def section(page: Any) -> bd.Block:
    """The seeds' ladder questions for a campaign whose ladder comes from benchmark-tool runs (one
    result file per load point of a server process): aggregate output rate per concurrency, the
    serialization and pure-queueing checks, rate verdicts between arms, amortization — as
    :func:`benchbook.analysis.ladder.results_ladder_analysis` decided them; and what each arm's
    server ran, as its engine stated it."""
    rl = page.analysis.results_ladder if page.analysis is not None else None
    bd.record("results_ladder", rl)
    if not rl or not rl["points"]:
        return bd.Block("")
    parts = [bd.heading("Concurrency ladder from result files", 2, id="results-ladder")]
    parts.append(
        bd.text(
            "Aggregate output rate = output tokens ÷ wall time of each run (the tool's duration); one row per "
            "load point of a server process ({n} load points).",
            n=len(rl["points"]),
        )
    )
    rows = [
        {
            "arm": p["arm"],
            "process": p["process"],
            "point": p["point"],
            "concurrency": p["concurrency"],
            "requests": p["requests"],
            "output tok/s": round(p["rate_tok_s"], 1),
            "mean latency s": None if p["mean_latency_s"] is None else round(p["mean_latency_s"], 3),
            "worst latency s": None if p["worst_latency_s"] is None else round(p["worst_latency_s"], 3),
            "median TTFT ms": None if p["median_ttft_ms"] is None else round(p["median_ttft_ms"], 1),
            "median TPOT ms": None if p["median_tpot_ms"] is None else round(p["median_tpot_ms"], 2),
        }
        for p in rl["points"]
        if p["arm"] in page.arms or not page.arms
    ]
    parts.append(bd.table(rows, id="results-ladder-points"))
    items = [
        f"<li>{bd.status_mark(s['status'], 'flat' if s['flat'] else 'not flat')} "
        f"{bd.esc(s['arm'])} ({bd.esc(s['process'])}): {bd.esc(s['reason'])} "
        f"(tolerance: {bd.esc(s['tolerance_from'])})</li>"
        for s in rl["serialization"]
    ]
    parts.append(bd.Block("<h3>Serialization: is the aggregate rate flat?</h3><ul>" + "".join(items) + "</ul>"))
    items = [
        f"<li>{bd.esc(q['arm'])} ({bd.esc(q['process'])}) n={q['concurrency']}: {bd.esc(q['reason'])}</li>"
        for q in rl["queueing"]
    ]
    if items:
        parts.append(
            bd.collapsed(
                "Pure queueing: completions at k × the single-request time?",
                bd.Block("<ul>" + "".join(items) + "</ul>"),
                open=True,
            )
        )
    if rl["comparisons"]:
        parts.append(bd.heading("Output rate between arms", 3))
        parts.append(
            _table_said_once(
                "results-ladder-verdicts",
                [
                    {
                        "candidate vs baseline": f"{c['candidate']} vs {c['baseline']}",
                        "concurrency": c["concurrency"],
                        "baseline tok/s": round(c["baseline_median"], 1),
                        "candidate tok/s": round(c["candidate_median"], 1),
                        "ratio": f"{c['ratio']:.2f}×",
                        "n (processes)": f"{c['baseline_n']} / {c['candidate_n']}",
                        "verdict": c["verdict"],
                        "why": c["reason"],
                    }
                    for c in rl["comparisons"]
                ],
                "why",
            )
        )
    if rl["amortization"]:
        items = [
            f"<li>{bd.esc(a['batched_arm'])} vs {bd.esc(a['serial_arm'])}: {bd.esc(a['explanation'])}"
            + (f" Speedup of the output rate: {a['speedup']:.2f}×." if a["speedup"] else "")
            + "</li>"
            for a in rl["amortization"]
        ]
        parts.append(
            bd.Block(
                "<h3>Batching amortization (mean request latency at n against one request alone)</h3><ul>"
                + "".join(items)
                + "</ul>"
            )
        )
    configs = {
        r["process"]: r["server_config"]
        for r in page.camp.manifest.get("runs", [])
        if r.get("process") and isinstance(r.get("server_config"), dict)
    }
    if configs:
        parts.append(
            bd.collapsed(
                "What each server process ran (as its engine stated it)",
                _table_said_once(
                    "results-ladder-configs",
                    [
                        {
                            "process": p,
                            **{k: str(v) for k, v in c.get("switches", {}).items()},
                            "from": "; ".join(c.get("sources", [])),
                        }
                        for p, c in configs.items()
                    ],
                    "from",
                ),
            )
        )
    return bd.Block("".join(str(p) for p in parts))
