"""Per-request views: one page section for every run whose file carries per-request records.

Formats what :mod:`benchbook.analysis.per_request` decided (distributions with p50/p90/p99 and n,
the time course of TTFT and E2E, outcome shares, the saturation flag) as tables and Altair charts
rendered to inline SVG. Computes nothing itself.

``section(items)`` takes ``(run_id, config, BenchmarkRun)`` triples — the compare page passes its
runs — and returns one display Block (empty when no run has per-request records).
"""

from __future__ import annotations

from typing import Any

from benchbook.analysis.per_request import (
    DEFINITIONS,
    ECDF_POINTS,
    METRIC_NAMES,
    PERCENTILES,
    SATURATION_RULE,
    RequestViews,
)
from benchbook.pages import charts as ch
from benchbook.pages import display as bd
from benchbook.pages import sections

__all__ = ["section"]


def _ms(v: float | None) -> str:
    return "—" if v is None else bd.not_zero(v, f"{v:,.2f}")


def _pct(k: int, n: int) -> str:
    return f"{k} ({k / n:.1%})" if n else "—"


FOLD_ROWS = 24  # a per-run table longer than this shows the rows a reader must see and folds the rest


def _folded(rows: list[dict[str, Any]], keep: list[bool], *, id: str, caption: str, what: str) -> bd.Block:
    """A per-run table that stays short at 50 runs: up to :data:`FOLD_ROWS` rows it is one table;
    beyond, the rows marked ``keep`` (failures, flags) stay in view and the others are folded into a
    ``<details>`` below it, still in the page, never removed."""
    if len(rows) <= FOLD_ROWS:
        return bd.table(rows, id=id, caption=caption)
    shown = [r for r, k in zip(rows, keep) if k]
    rest = [r for r, k in zip(rows, keep) if not k]
    parts = []
    if shown:
        parts.append(
            str(
                bd.table(
                    shown,
                    id=id,
                    caption=f"{caption} Shown: {len(shown)} of {len(rows)} rows ({what}); the others are folded below.",
                )
            )
        )
    else:
        parts.append(
            str(
                bd.text(
                    "{caption} None of the {n} rows is {what}; all are folded below.",
                    caption=caption,
                    n=len(rows),
                    what=what,
                )
            )
        )
    if rest:
        body = bd.table(rest, id=f"{id}-rest" if shown else id, caption=caption)
        parts.append(str(bd.collapsed(f"{len(rest)} more rows", body)))
    return bd.Block("".join(parts))


def _outcomes(vs: list[RequestViews]) -> bd.Block:
    read_as = list(dict.fromkeys(v.tool_version or f"{v.format} (version not stated)" for v in vs))
    rows = []
    for v in vs:
        rows.append(
            {
                "Run": v.run_id,
                # said once: the layout every run was read as goes to the caption, not to every row
                **({"Read as": v.tool_version or f"{v.format} (version not stated)"} if len(read_as) > 1 else {}),
                "Records": v.total,
                "Successful": _pct(v.shares["successful"], v.total),
                "Incomplete": _pct(v.shares["incomplete"], v.total),
                "Errored": _pct(v.shares["errored"], v.total),
            }
        )
    return _folded(
        rows,
        [v.shares["successful"] < v.total for v in vs],
        id="request-outcomes",
        caption=(
            "Per-request records in each file and their outcomes (incomplete = cut off when the benchmark ended); "
            + (
                "'Read as' is the tool version or layout the reader detected."
                if len(read_as) > 1
                else f"every file read as {read_as[0]}."
            )
        ),
        what="runs with incomplete or errored requests",
    )


def _saturation(vs: list[RequestViews]) -> bd.Block:
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
    flags = [v.saturation.status == "saturated" for v in vs]
    sat = sections.fold_rows([r for r, f in zip(rows, flags) if f], "Run")  # said once: one row per reason
    rest = sections.fold_rows([r for r, f in zip(rows, flags) if not f], "Run")
    return _folded(
        [*sat, *rest],
        [True] * len(sat) + [False] * len(rest),
        id="request-saturation",
        caption="Saturation flag. Rule: " + SATURATION_RULE + ". In-flight counts and TTFT come from successful "
        "requests with a start time.",
        what="saturated runs",
    )


def _percentile_table(vs: list[RequestViews]) -> bd.Block:
    sources = {
        m: {v.distributions[m].source for v in vs if v.distributions.get(m)} for m in ("ttft", "tpot", "itl", "e2e")
    }
    many_sources = any(len(x) > 1 for x in sources.values())  # else each metric's source is said once, below
    rows = []
    for v in vs:
        for m in ("ttft", "tpot", "itl", "e2e"):
            d = v.distributions.get(m)
            if d is None:
                continue
            rows.append(
                {
                    "Run": v.run_id,
                    "Metric": METRIC_NAMES[m],
                    "n": d.n,
                    "mean ms": _ms(d.mean_ms),
                    **{f"p{p} ms": _ms(d.percentiles_ms[p]) for p in PERCENTILES},
                    **({"Values": d.source} if many_sources else {}),
                }
            )
    return _folded(
        rows,
        [r["Metric"] in ("TTFT", "E2E") for r in rows],
        id="request-percentiles",
        caption=(
            "Computed by benchbook from the per-request records with one definition for every tool (see the definitions "
            "table); percentiles by linear interpolation; n = values behind each row. Requests inside one run are not "
            "replicates: these describe a run, they do not make a verdict."
            + (
                ""
                if many_sources
                else " Values: "
                + "; ".join(f"{METRIC_NAMES[m]} — {next(iter(x))}" for m, x in sources.items() if x)
                + "."
            )
        ),
        what="TTFT and E2E, the figures the time course shows",
    )


def _colour(vs: list[RequestViews]) -> tuple[str, str]:
    """Colour field and its legend title: the run while few runs share a chart, else the configuration
    (each run still its own line) so a 50-run chart has a legend a reader can use."""
    if len(vs) <= ch.MANY_SERIES:
        return "run", "run"
    return "config", "configuration"


def _ecdf_chart(vs: list[RequestViews]) -> bd.Block:
    import altair as alt
    import polars as pl

    curves = sum(len(v.distributions) for v in vs)
    marks_n = curves * len(PERCENTILES) if len(vs) <= ch.MANY_SERIES else 0
    k = ch.per_series(curves, budget=ch.ROW_BUDGET - marks_n, cap=ECDF_POINTS + 1)
    pts, marks = [], []
    thinned = False
    for v in vs:
        cfg = v.config or v.run_id
        for m, d in v.distributions.items():
            name = f"{METRIC_NAMES[m]} ms"
            drawn = ch.thin_sorted(d.ecdf, k)
            thinned |= len(drawn) < len(d.ecdf)
            pts += [{"run": v.run_id, "config": cfg, "metric": name, "value": x, "share": q} for x, q in drawn]
            if marks_n:
                marks += [
                    {"run": v.run_id, "config": cfg, "metric": name, "value": d.percentiles_ms[p], "p": f"p{p}"}
                    for p in PERCENTILES
                ]
    if not pts:
        return bd.Block("")
    order = [f"{METRIC_NAMES[m]} ms" for m in ("ttft", "tpot", "itl", "e2e")]
    df = pl.DataFrame(pts)
    mk = (
        pl.DataFrame(marks)
        if marks
        else pl.DataFrame(
            schema={"run": pl.String, "config": pl.String, "metric": pl.String, "value": pl.Float64, "p": pl.String}
        )
    )
    field, title = _colour(vs)
    color = alt.Color(f"{field}:N", title=title)
    line = (
        alt.Chart()
        .mark_line(interpolate="step-after")
        .encode(
            x=alt.X("value:Q", title=None),
            y=alt.Y("share:Q", title="share of requests ≤ x"),
            color=color,
            detail="run:N",
        )
    )
    rules = (
        alt.Chart()
        .transform_filter(alt.datum.kind == "mark")
        .mark_rule(strokeDash=[3, 3], opacity=0.7)
        .encode(x="value:Q", color=color, detail=alt.Detail(["run:N", "p:N"]))
    )
    data = pl.concat(
        [
            df.with_columns(pl.lit("ecdf").alias("kind"), pl.lit(None, pl.String).alias("p")),
            mk.with_columns(pl.lit("mark").alias("kind"), pl.lit(None, pl.Float64).alias("share")),
        ],
        how="diagonal",
    )
    chart = (
        alt.layer(line.transform_filter(alt.datum.kind == "ecdf"), rules, data=data)
        .properties(width=260, height=170)
        .facet(facet=alt.Facet("metric:N", title=None, sort=order), columns=2)
        .resolve_scale(x="independent")
    )
    drawn_at = (
        f"Curves are drawn at {k} evenly spaced points of each run's quantile grid ({curves} curves on one chart)."
        if thinned
        else f"Large runs are drawn at {ECDF_POINTS + 1} evenly spaced quantiles."
    )
    per = "" if field == "run" else " Colour is the configuration; each run is its own line."
    return bd.chart(
        chart,
        id="request-ecdf",
        caption=(
            "Empirical CDF per run and metric (milliseconds); "
            + (
                "dashed lines mark each run's p50, p90 and p99. "
                if marks_n
                else f"with {len(vs)} runs the percentile marks are left out (they are in the percentile table). "
            )
            + f"{drawn_at}{per} n per run and metric: see the percentile table."
        ),
    )


TIMELINE_BINS = 40  # time bins per run and metric on the time-course chart (fewer when many runs share it)


def _timeline_chart(vs: list[RequestViews]) -> bd.Block:
    """TTFT and E2E over the run, binned: per time bin the median (line) and min-max (band), never one
    mark per request; requests that did not succeed stay visible as points (thinned to the budget)."""
    import altair as alt
    import polars as pl

    frames = []
    for v in vs:
        axis = "start s" if v.timeline_axis == "start" else "request order"
        t = v.timeline.with_columns(pl.lit(v.run_id).alias("run"), pl.lit(v.config or v.run_id).alias("config"))
        frames.append(
            t.unpivot(index=["x", "status", "run", "config"], on=["ttft_ms", "e2e_ms"], variable_name="metric")
            .drop_nulls("value")
            .with_columns(
                pl.col("metric").replace({"ttft_ms": "TTFT ms", "e2e_ms": "E2E ms"}),
                pl.lit(axis).alias("axis"),
            )
        )
    if not frames:
        return bd.Block("")
    df = pl.concat(frames)
    many = len(vs) > ch.MANY_SERIES
    series = len(vs) * 2
    bins = min(TIMELINE_BINS, ch.per_series(series, budget=ch.ROW_BUDGET * 3 // 4))
    binned = ch.bin_series(df, x="x", y="value", by=["run", "config", "metric", "axis"], bins=bins)
    odd = df.filter(pl.col("status") != "successful")
    odd_total = odd.height
    odd = (
        pl.DataFrame(ch.thin_sorted(odd.sort(["run", "metric", "x"]).rows(named=True), ch.ROW_BUDGET // 4))
        if odd_total
        else odd
    )
    if many:
        binned = binned.with_columns(pl.col("metric").alias("panel"))
        odd = odd.with_columns(pl.col("metric").alias("panel")) if odd.height else odd
        panels = ["TTFT ms", "E2E ms"]
    else:
        binned = binned.with_columns(
            (pl.col("run") + " — " + pl.col("metric") + " vs " + pl.col("axis")).alias("panel")
        )
        if odd.height:
            odd = odd.with_columns((pl.col("run") + " — " + pl.col("metric") + " vs " + pl.col("axis")).alias("panel"))
        present = set(binned["panel"].to_list())
        axes = {v.run_id: "start s" if v.timeline_axis == "start" else "request order" for v in vs}
        panels = [  # run by run as the runs came, TTFT before E2E
            p for v in vs for m in ("TTFT ms", "E2E ms") if (p := f"{v.run_id} — {m} vs {axes[v.run_id]}") in present
        ]
    data = pl.concat(
        [
            binned.select("panel", "run", "config", "x", "lo", "mid", "hi", pl.lit("bin").alias("kind")),
            odd.select(
                "panel", "run", "config", "x", pl.col("value").alias("mid"), "status", pl.lit("odd").alias("kind")
            )
            if odd.height
            else pl.DataFrame(),
        ],
        how="diagonal",
    )
    field, title = _colour(vs)
    x = alt.X("x:Q", title=None)
    layers = []
    if not many:
        layers.append(
            alt.Chart()
            .transform_filter(alt.datum.kind == "bin")
            .mark_area(opacity=0.2, interpolate="step")
            .encode(x=x, y=alt.Y("lo:Q", title=None), y2="hi:Q")
        )
        line_color = alt.value(ch.PALETTE[0])
    else:
        line_color = alt.Color(f"{field}:N", title=title)
    layers.append(
        alt.Chart()
        .transform_filter(alt.datum.kind == "bin")
        .mark_line(interpolate="step")
        .encode(x=x, y=alt.Y("mid:Q", title=None), color=line_color, detail="run:N")
    )
    if odd_total:
        layers.append(
            alt.Chart()
            .transform_filter(alt.datum.kind == "odd")
            .mark_point(shape="cross", size=30, filled=True)
            .encode(
                x=x,
                y="mid:Q",
                fill=alt.Fill(
                    "status:N",
                    title="not successful",
                    scale=alt.Scale(domain=["incomplete", "errored"], range=[ch.PALETTE[4], ch.PALETTE[5]]),
                ),
                stroke=alt.value(None),
            )
        )
    chart = (
        alt.layer(*layers, data=data)
        .properties(width=260 if not many else 540, height=150 if not many else 200)
        .facet(
            facet=alt.Facet("panel:N", title=None, sort=panels, header=alt.Header(labelLimit=330)),
            columns=2 if not many else 1,
        )
        .resolve_scale(x="independent", y="independent")
    )
    steps = [f"{v.run_id}: every {v.timeline_step}th request" for v in vs if v.timeline_step > 1]
    how = (
        f"Binned: {bins} equal time bins per run, the line the median of each bin and the shaded band its min–max, "
        "so a single slow request still shows."
        if not many
        else f"{len(vs)} runs: one line per run (the median of each of {bins} equal time bins), coloured by "
        "configuration; with this many runs the min–max bands are left out so the lines stay readable."
    )
    odd_note = (
        f" Requests that did not succeed are crosses ({odd_total}"
        + (f", {data.filter(pl.col('kind') == 'odd').height} drawn" if odd.height < odd_total else "")
        + ")."
        if odd_total
        else ""
    )
    return bd.chart(
        chart,
        id="request-timeline",
        caption=(
            "TTFT and E2E against when each request started (seconds since the run's first request start), or "
            "against request order where the file keeps no start times: a rising line is queue build-up, an early "
            f"spike is warm-up. {how}{odd_note} "
            + ("Input sampled before binning: " + "; ".join(steps) + "." if steps else "Every request binned.")
        ),
    )


def _definitions(vs: list[RequestViews]) -> bd.Block:
    by_format = {v.format: v.definitions for v in vs}
    rows = []
    for name, defs in [("benchbook (this section)", DEFINITIONS["benchbook (this section)"])] + [
        (f, by_format[f]) for f in sorted(by_format)
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


def section(vs: list[RequestViews]) -> bd.Block:
    """The per-request section of the runs' per-request views (``ResultSet.request_views``: every run
    that carries per-request records; empty otherwise)."""
    bd.record("request_views", [v.as_dict() for v in vs])
    if not vs:
        return bd.Block("")
    runs_of: dict[str, list[str]] = {}  # said once: a note shared by runs is one line naming them
    for v in vs:
        for n in v.notes:
            runs_of.setdefault(n, []).append(v.run_id)
    notes = [f"{rs[0]}: {n}" if len(rs) == 1 else f"{n} ({len(rs)} runs: {', '.join(rs)})" for n, rs in runs_of.items()]
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
