"""The baseline page's concurrency ladder from result files (benchbook init's arm/run layout: one
result file per load point of a server process) — what
:func:`benchbook.analysis.ladder.results_ladder_analysis` decided, formatted: the points, the
serialization and pure-queueing checks, rate verdicts between arms, amortization, and what each
process ran. ``notebooks/baseline.ipynb`` calls :func:`results_ladder` through ``baseline_page``.
"""

from __future__ import annotations

from typing import Any

from benchbook.analysis.ladder import BURST_TPOT_MS
from benchbook.numfmt import fmt_num
from benchbook.pages import display as bd
from benchbook.pages import sections


def results_ladder(page: Any) -> bd.Block:
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
    # the figures as measured: the table's number format gives each its significant digits (numfmt.fmt_num)
    rows = [
        {
            "arm": p["arm"],
            "process": p["process"],
            "point": p["point"],
            "concurrency": p["concurrency"],
            "requests": p["requests"],
            "output tok/s": p["rate_tok_s"],
            "mean latency s": p["mean_latency_s"],
            "worst latency s": p["worst_latency_s"],
            "median TTFT ms": p["median_ttft_ms"],
            "median TPOT ms": p["median_tpot_ms"],
            "J / output token": "not measured" if p.get("j_per_token") is None else f"{p['j_per_token']:.3f}",
            "J / request": "not measured" if p.get("j_per_request") is None else f"{p['j_per_request']:.1f}",
        }
        for p in rl["points"]
        if p["arm"] in page.arms or not page.arms
    ]
    hows = dict.fromkeys(p["energy_method"] for p in rl["points"] if p.get("energy_method"))
    parts.append(
        bd.table(
            rows,
            id="results-ladder-points",
            note=("Energy: " + "; ".join(hows) + " (per point's window: the audit section's energy table).")
            if hows
            else None,
        )
    )
    bursts = rl.get("bursts") or []
    if bursts:  # one line for every point it applies to
        where = ", ".join(f"{b['process']} {b['point']} ({fmt_num(b['median_tpot_ms'])} ms)" for b in bursts)
        parts.append(
            bd.Block(
                f"<p>{bd.mark('note', 'TPOT not a decode step')} median TPOT below "
                f"{bd.esc(fmt_num(BURST_TPOT_MS))} ms at {bd.esc(where)}: no engine decodes a token that fast. "
                "The server streamed its tokens in bursts, several per chunk (the vLLM CPU engine does), so "
                "TPOT there is the gap between chunks as the client read them, not the time of a decode "
                "step; the output rate and the latencies are unaffected.</p>"
            )
        )
    items = [
        f"<li>{bd.status_mark(s['status'], 'flat' if s['flat'] else 'not flat')} "  # the status its words describe
        f"{bd.esc(s['arm'])} ({bd.esc(s['process'])}): {bd.esc(s['reason'])} "
        f"(tolerance: {bd.esc(s['tolerance_from'])})</li>"
        for s in rl["serialization"]
    ]
    # a process whose points cannot show flatness says so: never a heading with nothing under it
    items += [
        f"<li>{bd.mark('cannot', 'not judged')} {bd.esc(s['arm'])} ({bd.esc(s['process'])}): {bd.esc(s['reason'])}</li>"
        for s in rl.get("serialization_not_judged") or []
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
        rows, note = sections.said_once(
            [
                {
                    "candidate vs baseline": f"{c['candidate']} vs {c['baseline']}",
                    "concurrency": c["concurrency"],
                    # baseline → candidate in one column, n beside the ratio: nine columns did not fit the page
                    # (the H200 campaign's table was 25 px too wide)
                    "tok/s (baseline → candidate)": f"{c['baseline_median']:,.2f} → {c['candidate_median']:,.2f}",
                    "ratio (n processes)": f"{c['ratio']:.2f}× ({c['baseline_n']} / {c['candidate_n']})",
                    "verdict": c["verdict"],
                    "why": c["reason"],
                    "evidence (engine)": c.get("evidence") or "—",
                }
                for c in rl["comparisons"]
            ],
            "why",
        )  # a reason several rows share is said once, under the table
        parts.append(bd.table(rows, id="results-ladder-verdicts", note=note or None))
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
        # where each process's settings were read, said once for the processes it applies to (a column
        # of the same long sentence per row pushed the table past its frame)
        sources: dict[str, list[str]] = {}
        for p, c in configs.items():
            sources.setdefault("; ".join(c.get("sources", [])) or "nothing stated", []).append(p)
        said = "".join(
            f"<li>{bd.esc(', '.join(ps) if len(sources) > 1 else 'every process')}: {bd.esc(src)}</li>"
            for src, ps in sources.items()
        )
        parts.append(
            bd.collapsed(
                "What each server process ran (as its engine stated it)",
                bd.Block(
                    str(
                        bd.table(
                            [
                                {"process": p, **{k: str(v) for k, v in c.get("switches", {}).items()}}
                                for p, c in configs.items()
                            ],
                            id="results-ladder-configs",
                        )
                    )
                    + f"<p>Read from:</p><ul>{said}</ul>"
                ),
            )
        )
    return bd.Block("".join(str(p) for p in parts))
