"""The baseline page's memory and clamp sections (``notebooks/baseline.ipynb`` calls them through
:mod:`benchbook.pages.baseline_page`): GPU and host memory per run with the deltas between compared
arms, each sampled process's footprint while loaded, the load ramp, and whether each server ran what
was requested. What they show was decided by the campaign's analysis (``memory``, ``memory_deltas``,
``memory_processes``, ``clamps``); ``page`` is a :class:`benchbook.pages.baseline_page.Page`.
"""

from __future__ import annotations

from typing import Any

from benchbook.pages import display as bd
from benchbook.pages import sections


def memory(page: Any) -> bd.Block:
    runs = [r for r in page.camp.runs_of("memory") + page.camp.runs_of("gpu") if r.arm in page.arms]
    if not runs:
        return bd.Block("")
    summ = page.analysis.memory
    t = page.analysis.memory_table()
    bd.record("memory", t)
    rows = []
    for r in runs:
        s = summ[r.id]
        rows.append(
            {
                "Run": r.id,
                "Env": page.camp.arm_environment(r.arm),
                "Mode": page.server_mode(r.arm),
                "Peak GPU per rank": f"{s.peak_max_gib:.2f} GiB",
                "Steady GPU per rank": f"{s.steady_max_gib:.2f} GiB",
                "Host (Shmem)": "—" if s.shmem_loaded_gib is None else f"{s.shmem_loaded_gib:.1f} GiB",
                "MemAvailable fall": "—" if s.mem_available_fall_gib is None else f"{s.mem_available_fall_gib:.1f} GiB",
                "Summed Pss (not a footprint)": "—" if s.pss_sum_gib is None else f"{s.pss_sum_gib:.0f} GiB",
            }
        )
    notes = sorted({n for s in summ.values() for n in s.notes})
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
    ]
    return bd.collapsed(
        "Host memory per process (Pss, Rss)",
        bd.table(
            rows,
            id="memory-processes",
            caption="Each process the server started, from the host sampler; a process with no loaded samples ran "
            "only during start-up. Pss shares shared pages between processes: their sum is not a footprint.",
        ),
    )


def memory_ramp(page: Any) -> bd.Block:
    """GPU memory over time of each sampled server process (``gpu`` runs: nvidia-smi samples), with the
    run's events as markers: the load ramp (weights, KV cache, graphs) and each load point."""
    import altair as alt

    runs = [r for r in page.camp.runs_of("gpu") if r.arm in page.arms]
    if not runs:
        return bd.Block("")
    charts, recorded = [], {}
    for r in runs:
        samples, marks = page.analysis.load_ramp(r.id)
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
        charts.append(alt.layer(line, rules).resolve_scale(color="independent").properties(width=520, height=180))
    bd.record("memory_ramp", recorded)
    return bd.Block(
        str(bd.heading("Memory over time (the load ramp)", 3, id="memory-ramp"))
        + str(
            bd.chart(
                alt.vconcat(*charts),
                caption="nvidia-smi memory.used per GPU; dashed lines: the run's events (load start, ready = load "
                "end, each load point's start, stop). Bins keep the largest sample, so no peak is averaged away.",
            )
        )
    )


def _memory_delta_table(page: Any) -> str:
    deltas = page.memory_deltas()
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


def _clamp_findings(page: Any) -> list[dict[str, Any]]:
    """The analysis's clamp results for this page's arms (requested vs what the startup line says ran)."""
    return [c.as_dict() for c in page.analysis.clamps if c.arm in page.arms]


def clamps(page: Any) -> bd.Block:
    found = _clamp_findings(page)
    rows = [
        {
            "Arm": f["arm"],
            "Requested": page.server_mode(f["arm"]),
            "Startup line (what ran)": f["line"],
            "Verdict": bd.mark("fail" if f["clamped"] else "pass", f["verdict"]),
            "Detail": f["detail"],
        }
        for f in found
    ]
    bd.record("clamps", found)
    if not rows:
        return bd.Block("")
    return bd.Block(
        str(bd.heading("Clamps: what was asked vs what ran", id="clamps"))
        + str(bd.text("The server's startup line states the batch width and prefill budget it actually used."))
        + str(
            sections.checks_table(
                rows, [not f["clamped"] for f in found], id="clamps", passed_label="{n} arm(s) ran as requested"
            )
        )
    )
