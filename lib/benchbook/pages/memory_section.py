"""The baseline page's memory section: peak and steady GPU memory per run, the host footprint, the
deltas between compared arms, the load ramp over time and each server process's host memory — as
the analysis computed them (``CampaignAnalysis.memory``, ``memory_deltas``, ``memory_processes``,
``load_ramp``). ``notebooks/baseline.ipynb`` calls :func:`memory` through ``baseline_page``.
"""

from __future__ import annotations

from typing import Any

from benchbook.pages import charts, sections
from benchbook.pages import display as bd


def memory(page: Any) -> bd.Block:
    runs = [r for r in page.camp.runs_of("memory") + page.camp.runs_of("gpu") if r.arm in page.arms]
    if not runs:
        return bd.Block("")
    summ = page.analysis.memory
    t = page.analysis.memory_table()
    bd.record("memory", t)
    rows = []
    for r in runs:
        if r.id in page.analysis.host_memory:  # host samples only: the GPU not measured
            rows.append(_host_only_row(page, r, page.analysis.host_memory[r.id]))
            continue
        s = summ[r.id]
        rows.append(
            {
                "Run": r.id,
                "Env": page.camp.arm_environment(r.arm),
                "Mode": sections.arm_mode(page.camp.arms[r.arm]),
                "Peak GPU per rank": f"{s.peak_max_gib:.2f} GiB",
                "Steady GPU per rank": f"{s.steady_max_gib:.2f} GiB",
                "Host (Shmem)": "—" if s.shmem_loaded_gib is None else f"{s.shmem_loaded_gib:.1f} GiB",
                "MemAvailable fall": "—" if s.mem_available_fall_gib is None else f"{s.mem_available_fall_gib:.1f} GiB",
                "Summed Pss (not a footprint)": "—" if s.pss_sum_gib is None else f"{s.pss_sum_gib:.0f} GiB",
            }
        )
    notes = sorted({n for s in [*summ.values(), *page.analysis.host_memory.values()] for n in s.notes})
    return bd.Block(
        "<h2>Memory</h2>"
        + str(
            bd.table(
                rows,
                id="memory",
                caption=(
                    "GPU columns are per rank (the largest rank); steady is the median over the second half of the loaded samples. "
                    "Host footprint is Shmem while loaded and the fall of MemAvailable from idle; summed Pss counts shared "
                    "page cache once per process and is not a footprint."
                ),
            )
        )
        + "".join(f'<p class="bb-note">{bd.esc(n)}</p>' for n in notes)
        + _memory_delta_table(page)
        + str(memory_ramp(page))
        + str(memory_processes(page))
    )


def _host_only_row(page: Any, r: Any, h: Any) -> dict[str, str]:
    """A memory-table row of a process sampled on the host only (no nvidia-smi on that host)."""

    def gib(v: float | None, d: int = 1) -> str:
        return "—" if v is None else f"{v:.{d}f} GiB"

    return {
        "Run": r.id,
        "Env": page.camp.arm_environment(r.arm),
        "Mode": sections.arm_mode(page.camp.arms[r.arm]),
        "Peak GPU per rank": "not measured (no GPU samples)",
        "Steady GPU per rank": "not measured",
        "Host (Shmem)": gib(h.shmem_loaded_gib),
        "MemAvailable fall": gib(h.mem_available_fall_gib),
        "Summed Pss (not a footprint)": "—"
        if h.pss_sum_gib is None
        else f"{h.pss_sum_gib:.2f} GiB (peak {h.pss_sum_peak_gib:.2f})",
    }


def memory_processes(page: Any) -> bd.Block:
    """Each sampled process of a gpu run while loaded (median Pss and Rss, peak Rss), from the analysis."""
    procs = {r: v for r, v in page.analysis.memory_processes.items() if page.camp.run(r).arm in page.arms}
    bd.record("memory_processes", procs)
    if not procs:
        return bd.Block("")

    def gib(v):
        return "—" if v is None else f"{v:.2f} GiB"

    rows = [
        {
            "Run": run,
            "Process": f"{p['comm']} (pid {p['pid']})",
            "Pss while loaded (median)": gib(p["pss_gib"]),
            "Rss while loaded (median)": gib(p["rss_gib"]),
            "Peak Rss": gib(p["peak_rss_gib"]),
            "Loaded samples": p["loaded_samples"],
        }
        for run, ps in procs.items()
        for p in ps
        if p["loaded_samples"]
    ]
    # processes seen only before the load (the compilers an engine runs at start-up: gcc, cc1, ptxas …):
    # one line per run naming them, not a row each
    early = []
    for run, ps in procs.items():
        gone = [p for p in ps if not p["loaded_samples"]]
        if gone:
            names: dict[str, int] = {}
            for p in gone:
                names[p["comm"]] = names.get(p["comm"], 0) + 1
            peak = max((p["peak_rss_gib"] or 0.0) for p in gone)
            early.append(
                f"<li>{bd.esc(run)}: {len(gone)} ("
                + bd.esc(", ".join(f"{c} ×{k}" if k > 1 else c for c, k in names.items()))
                + f"), the largest peak Rss {bd.esc(gib(peak))}</li>"
            )
    note = (
        "<p>Processes that ran only during start-up, before the load (not in the table: no loaded samples):</p>"
        f"<ul>{''.join(early)}</ul>"
        if early
        else ""
    )
    table = (
        str(
            bd.table(
                rows,
                id="memory-processes",
                caption="Each process the server ran while loaded, from the host sampler. Pss shares shared pages "
                "between processes: their sum is not a footprint.",
            )
        )
        if rows
        else "<p>No process of the server was sampled while loaded.</p>"
    )
    return bd.collapsed("Host memory per process (Pss, Rss)", bd.Block(table + note))


def memory_ramp(page: Any) -> bd.Block:
    """GPU memory over time of each sampled server process (``gpu`` runs: nvidia-smi samples), with the
    run's events as markers: the load ramp (weights, KV cache, graphs) and each load point."""
    import altair as alt

    runs = [r for r in page.camp.runs_of("gpu") if r.arm in page.arms and r.id not in page.analysis.host_memory]
    if not runs:
        return bd.Block("")
    panels, recorded = [], {}
    ramps = page.analysis.load_ramps([r.id for r in runs], charts.ROW_BUDGET)  # one budget, every run and rank
    for r in runs:
        samples, marks = ramps[r.id]
        recorded[r.id] = {"points": samples.height, "markers": marks.height, "peak_gib": float(samples["gib"].max())}
        line = (
            alt.Chart(samples, title=f"{r.id} ({r.arm})")
            .mark_line()
            .encode(
                x=alt.X("t_s:Q", title="seconds from the first sample"),
                y=alt.Y("gib:Q", title="GPU memory used (GiB)"),
                color=alt.Color("rank:N", title="GPU"),
            )
        )
        rules = (
            alt.Chart(marks)
            .mark_rule(strokeDash=[3, 3], opacity=0.6)
            .encode(x="t_s:Q", stroke=alt.Stroke("event:N", title="event"))
        )
        panels.append(alt.layer(line, rules).resolve_scale(color="independent").properties(width=520, height=180))
    bd.record("memory_ramp", recorded)
    return bd.Block(
        str(bd.heading("Memory over time (the load ramp)", 3, id="memory-ramp"))
        + str(
            bd.chart(
                alt.vconcat(*panels),
                caption="nvidia-smi memory.used per GPU; dashed lines: the run's events (load start, ready = load "
                "end, each load point's start, stop). Bins keep the largest sample, so no peak is averaged away.",
            )
        )
    )


def memory_deltas(page: Any) -> list:
    """The analysis's memory deltas between this page's arms."""
    return [d for d in page.analysis.memory_deltas if d.baseline in page.arms and d.candidate in page.arms]


def _memory_delta_table(page: Any) -> str:
    deltas = memory_deltas(page)
    bd.record("memory_deltas", [d.as_dict() for d in deltas])
    if not deltas:
        return ""
    pairs: dict[tuple[str, str], dict[str, Any]] = {}
    for d in deltas:  # one row per compared pair: peak and steady side by side
        row = pairs.setdefault((d.candidate, d.baseline), {"Candidate vs baseline": f"{d.candidate} vs {d.baseline}"})
        row[f"{d.quantity.capitalize()} GPU per rank (baseline → candidate, delta)"] = bd.Block(
            f"{d.baseline_gib:.2f} → {d.candidate_gib:.2f} GiB, <b>{d.delta_gib:+.2f} GiB</b><br>"
            f"{bd.mark('result' if d.is_result else 'noise', d.verdict)}"
            f"<details><summary>why</summary>{bd.esc(d.reason)}</details>"
        )
    rows = list(pairs.values())
    return "<h3>Memory deltas between compared arms</h3>" + str(
        bd.table(
            rows,
            id="memory-deltas",
            caption=(
                "Candidate − baseline per rank (the largest rank), one memory run per arm. No memory spread is "
                "measured, so the campaign's run-to-run spread, applied to the baseline's figure, is the threshold."
            ),
        )
    )
