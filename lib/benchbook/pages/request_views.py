"""Per-request views: one page section for every run whose file carries per-request records.

Formats what :mod:`benchbook.analysis.per_request` decided (distributions with p50/p90/p99 and n,
the time course of TTFT and E2E, outcome shares, the saturation flag) as tables and Altair charts
rendered to inline SVG. Computes nothing itself.

``section(items)`` takes ``(run_id, config, BenchmarkRun)`` triples — the compare page passes its
runs — and returns one display Block (empty when no run has per-request records).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from benchbook.analysis import per_request as pr
from benchbook.pages import display as bd

__all__ = ["section", "views"]


def views(items: Iterable[tuple[str, str, Any]]) -> list[pr.RequestViews]:
    out = []
    for run_id, config, run in items:
        v = pr.analyse(run, run_id=run_id, config=config)
        if v is not None:
            out.append(v)
    return out


def _ms(v: float | None) -> str:
    return "—" if v is None else bd.not_zero(v, f"{v:,.2f}")


def _pct(k: int, n: int) -> str:
    return f"{k} ({k / n:.1%})" if n else "—"


def _outcomes(vs: list[pr.RequestViews]) -> bd.Block:
    rows = []
    for v in vs:
        rows.append(
            {
                "Run": v.run_id,
                "Read as": v.tool_version or f"{v.format} (version not stated)",
                "Records": v.total,
                "Successful": _pct(v.shares["successful"], v.total),
                "Incomplete": _pct(v.shares["incomplete"], v.total),
                "Errored": _pct(v.shares["errored"], v.total),
            }
        )
    return bd.table(
        rows,
        id="request-outcomes",
        caption=(
            "Per-request records in each file and their outcomes (incomplete = cut off when the benchmark ended); "
            "'Read as' is the tool version or layout the reader detected."
        ),
    )


def _saturation(vs: list[pr.RequestViews]) -> bd.Block:
    rows = []
    for v in vs:
        s = v.saturation
        rows.append(
            {
                "Run": v.run_id,
                "Saturation": bd.mark("note", "saturated") if s.status == "saturated" else s.status,
                "Median in flight per bin": " → ".join(f"{b['in_flight']:g}" for b in s.bins) or "—",
                "Median TTFT ms per bin": " → ".join(f"{b['ttft_ms']:,.1f}" for b in s.bins) or "—",
                "Why": s.reason,
            }
        )
    return bd.table(
        rows,
        id="request-saturation",
        caption="Saturation flag. Rule: " + pr.SATURATION_RULE + ". In-flight counts and TTFT come from successful "
        "requests with a start time.",
    )


def _percentile_table(vs: list[pr.RequestViews]) -> bd.Block:
    rows = []
    for v in vs:
        for m in ("ttft", "tpot", "itl", "e2e"):
            d = v.distributions.get(m)
            if d is None:
                continue
            rows.append(
                {
                    "Run": v.run_id,
                    "Metric": pr.METRIC_NAMES[m],
                    "n": d.n,
                    "mean ms": _ms(d.mean_ms),
                    **{f"p{p} ms": _ms(d.percentiles_ms[p]) for p in pr.PERCENTILES},
                    "Values": d.source,
                }
            )
    return bd.table(
        rows,
        id="request-percentiles",
        caption=(
            "Computed by benchbook from the per-request records with one definition for every tool (see the definitions "
            "table); percentiles by linear interpolation; n = values behind each row. Requests inside one run are not "
            "replicates: these describe a run, they do not make a verdict."
        ),
    )


def _ecdf_chart(vs: list[pr.RequestViews]) -> bd.Block:
    import altair as alt
    import polars as pl

    pts, marks = [], []
    for v in vs:
        for m, d in v.distributions.items():
            name = f"{pr.METRIC_NAMES[m]} ms"
            pts += [{"run": v.run_id, "metric": name, "value": x, "share": q} for x, q in d.ecdf]
            marks += [
                {"run": v.run_id, "metric": name, "value": d.percentiles_ms[p], "p": f"p{p}"} for p in pr.PERCENTILES
            ]
    if not pts:
        return bd.Block("")
    order = [f"{pr.METRIC_NAMES[m]} ms" for m in ("ttft", "tpot", "itl", "e2e")]
    df, mk = pl.DataFrame(pts), pl.DataFrame(marks)
    color = alt.Color("run:N", title="run")
    line = (
        alt.Chart()
        .mark_line(interpolate="step-after")
        .encode(x=alt.X("value:Q", title=None), y=alt.Y("share:Q", title="share of requests ≤ x"), color=color)
    )
    rules = (
        alt.Chart()
        .transform_filter(alt.datum.kind == "mark")
        .mark_rule(strokeDash=[3, 3], opacity=0.7)
        .encode(x="value:Q", color=color, detail="p:N")
    )
    data = pl.concat(
        [
            df.with_columns(pl.lit("ecdf").alias("kind"), pl.lit(None, pl.String).alias("p")),
            mk.with_columns(pl.lit("mark").alias("kind"), pl.lit(None, pl.Float64).alias("share")),
        ],
        how="diagonal",
    )
    ch = (
        alt.layer(line.transform_filter(alt.datum.kind == "ecdf"), rules, data=data)
        .properties(width=260, height=170)
        .facet(facet=alt.Facet("metric:N", title=None, sort=order), columns=2)
        .resolve_scale(x="independent")
    )
    return bd.chart(
        ch,
        id="request-ecdf",
        caption=(
            "Empirical CDF per run and metric (milliseconds); dashed lines mark each run's p50, p90 and p99. Large runs "
            f"are drawn at {pr.ECDF_POINTS + 1} evenly spaced quantiles. n per run and metric: see the percentile table."
        ),
    )


def _timeline_chart(vs: list[pr.RequestViews]) -> bd.Block:
    import altair as alt
    import polars as pl

    frames = []
    for v in vs:
        axis = "start s" if v.timeline_axis == "start" else "request order"
        t = v.timeline.with_columns(pl.lit(v.run_id).alias("run"))
        frames.append(
            t.unpivot(index=["x", "status", "run"], on=["ttft_ms", "e2e_ms"], variable_name="metric")
            .drop_nulls("value")
            .with_columns(
                (
                    pl.col("run")
                    + " — "
                    + pl.col("metric").replace({"ttft_ms": "TTFT ms", "e2e_ms": "E2E ms"})
                    + f" vs {axis}"
                ).alias("panel")
            )
        )
    if not frames:
        return bd.Block("")
    df = pl.concat(frames)
    panels = list(dict.fromkeys(df["panel"].to_list()))
    ch = (
        alt.Chart(df)
        .mark_circle(size=14, opacity=0.7)
        .encode(
            x=alt.X("x:Q", title=None),
            y=alt.Y("value:Q", title=None),
            color=alt.Color(
                "status:N", title="outcome", scale=alt.Scale(domain=["successful", "incomplete", "errored"])
            ),
        )
        .properties(width=260, height=150)
        .facet(facet=alt.Facet("panel:N", title=None, sort=panels, header=alt.Header(labelLimit=330)), columns=2)
        .resolve_scale(x="independent", y="independent")
    )
    steps = [f"{v.run_id}: every {v.timeline_step}th request" for v in vs if v.timeline_step > 1]
    return bd.chart(
        ch,
        id="request-timeline",
        caption=(
            "TTFT and E2E of each request against when it started (seconds since the run's first request start), or "
            "against request order where the file keeps no start times: a rising band is queue build-up, early "
            "outliers are warm-up. " + ("Sampled: " + "; ".join(steps) + "." if steps else "Every request drawn.")
        ),
    )


def _definitions(vs: list[pr.RequestViews]) -> bd.Block:
    fmts = sorted({v.format for v in vs})
    rows = []
    for name, defs in [("benchbook (this section)", pr.DEFINITIONS["benchbook (this section)"])] + [
        (f, pr.definitions_for(f)) for f in fmts
    ]:
        if defs is None:
            continue
        rows.append({"Who": name, **defs})
    return bd.table(
        rows,
        id="request-definitions",
        caption=(
            "What each tool means by TPOT, ITL and E2E in its own summary, next to the definition used in this section; "
            "the same run read by two tools reconciles only after these are matched."
        ),
    )


def section(items: Iterable[tuple[str, str, Any]]) -> bd.Block:
    """The per-request section for every run that carries per-request records (empty otherwise)."""
    vs = views(items)
    bd.record("request_views", [v.as_dict() for v in vs])
    if not vs:
        return bd.Block("")
    notes = [f"{v.run_id}: {n}" for v in vs for n in v.notes]
    parts = [
        "<h2>Per-request views</h2>",
        str(
            bd.text(
                "{n} run(s) carry per-request records. Distributions, time course and outcome shares below are "
                "computed from those records, not from the tool's summary.",
                n=len(vs),
            )
        ),
        str(_outcomes(vs)),
        str(_saturation(vs)),
        str(_percentile_table(vs)),
        str(_ecdf_chart(vs)),
        str(_timeline_chart(vs)),
        str(_definitions(vs)),
    ]
    if notes:
        parts.append("<details><summary>Sampling and reading notes</summary><ul>")
        parts += [f"<li>{bd.esc(n)}</li>" for n in notes]
        parts.append("</ul></details>")
    return bd.Block("".join(parts))
