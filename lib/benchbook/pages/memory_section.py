"""The baseline page's memory sections (per-process host memory, the load ramp, the deltas between
arms) and the engine gauges from a Prometheus server: charts of per-sample series, each kept inside
one row budget (:data:`benchbook.pages.charts.ROW_BUDGET`) however many GPUs and runs there are.
Formats what the analysis computed; ``baseline_page`` calls these."""

from __future__ import annotations

from typing import Any

from benchbook.pages import charts
from benchbook.pages import display as bd

Page = Any  # benchbook.pages.baseline_page.Page (which imports this module)


GAUGE_TITLES = {
    "running": "running requests",
    "waiting": "waiting requests",
    "kv_cache_usage": "KV-cache usage (fraction)",
    "prompt_tokens_rate": "prompt tok/s (rate)",
    "generation_tokens_rate": "generated tok/s (rate)",
}


def engine_gauges(page: Page) -> bd.Block:
    """Running/waiting requests, KV-cache usage and token rates over each run's window, from the
    campaign's Prometheus source (fetched by the analysis: ``campaign_analysis.engine_gauges``).
    Empty for capture-file campaigns."""
    import altair as alt
    import polars as pl

    eg = page.analysis.engine_gauges(page.arms)
    d, notes = eg.frame, eg.notes
    if d is None and not notes:
        return bd.Block("")
    bd.record("engine_gauges", eg.as_dict())
    out = ["<h2>Engine state over each run</h2>"]
    if d is not None:
        d = d.with_columns(pl.col("quantity").replace_strict(GAUGE_TITLES, default=pl.col("quantity")).alias("gauge"))
        binned = d.height > charts.ROW_BUDGET  # many runs or long windows: one budget for every line
        if binned:
            lines = d.select("run", "gauge").unique().height
            k = max(2, charts.ROW_BUDGET // max(1, lines))
            d = charts.bin_series(d, x="s", y="value", by=["run", "gauge"], bins=k).select(
                "run", "gauge", pl.col("x").alias("s"), pl.col("hi").alias("value")
            )
        bd.record("engine_gauges_rows", d.height)
        ch = (
            alt.Chart(d.select("run", "gauge", "s", "value"))
            .mark_line(interpolate="step-after")
            .encode(
                x=alt.X("s:Q", title="seconds since the run's first window"),
                y=alt.Y("value:Q", title=None),
                color=alt.Color("run:N", title="run"),
            )
            .properties(width=520, height=110)
            .facet(row=alt.Row("gauge:N", title=None))
            .resolve_scale(y="independent")
        )
        src_names = eg.sources
        out.append(
            str(
                bd.chart(
                    ch,
                    id="engine-gauges",
                    caption=(
                        f"Gauges and token rates from the Prometheus server ({', '.join(src_names)}) over each run's span, first "
                        "sample window to last. Rates are rate() over several scrape intervals: interval rates, not throughput."
                        + (" Binned to fit the chart: each point is the largest value of its bin." if binned else "")
                    ),
                )
            )
        )
    out += [f'<p class="bb-note">{bd.esc(n)}</p>' for n in notes]
    return bd.Block("".join(out))


def memory_processes(page: Page) -> bd.Block:
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


def memory_ramp(page: Page) -> bd.Block:
    """GPU memory over time of each sampled server process (``gpu`` runs: nvidia-smi samples), with the
    run's events as markers: the load ramp (weights, KV cache, graphs) and each load point."""
    import altair as alt

    runs = [r for r in page.camp.runs_of("gpu") if r.arm in page.arms]
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


def memory_deltas(page: Page) -> list:
    return [d for d in page.analysis.memory_deltas if d.baseline in page.arms and d.candidate in page.arms]


def memory_delta_table(page: Page) -> str:
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
