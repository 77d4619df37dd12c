"""The baseline page's engine-state section (``notebooks/baseline.ipynb`` calls it through
:mod:`benchbook.pages.baseline_page`): running and waiting requests, KV-cache usage and token rates
over each run's window, as the campaign's analysis fetched them from its Prometheus source
(:mod:`benchbook.analysis.engine_gauges`); ``page`` is a :class:`benchbook.pages.baseline_page.Page`.
"""

from __future__ import annotations

from typing import Any

from benchbook.pages import display as bd

GAUGE_TITLES = {
    "running": "running requests",
    "waiting": "waiting requests",
    "kv_cache_usage": "KV-cache usage (fraction)",
    "prompt_tokens_rate": "prompt tok/s (rate)",
    "generation_tokens_rate": "generated tok/s (rate)",
}


def engine_gauges(page: Any) -> bd.Block:
    """Running/waiting requests, KV-cache usage and token rates over each run's window, from the
    campaign's Prometheus source (fetched by the analysis: ``analysis.engine_gauges``).
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
                    ),
                )
            )
        )
    out += [f'<p class="bb-note">{bd.esc(n)}</p>' for n in notes]
    return bd.Block("".join(out))
