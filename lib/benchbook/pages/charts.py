"""Altair charts as inline SVG: the house theme and :func:`to_svg`.

Pages must open offline, years later, so a chart is never a ``<script>`` that needs vega from a CDN:
it is converted once, at render time, to static SVG by vl-convert (a bundled Rust/Deno renderer; no
network) and embedded in the page. Importing this module also switches Altair's notebook renderer
to the same SVG path, so a chart left as a cell's last expression is inline SVG too.

Ids inside an SVG (clip paths, gradients) are rewritten with a per-chart prefix derived from the
chart's spec, so two charts on one page never share an ``id`` and the output is identical from run
to run.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from typing import Any

import altair as alt

# the page's font stack (page.css), CJK families included, so chart text matches the page
FONT = (
    'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, "Noto Sans", "Noto Sans CJK SC", '
    '"Source Han Sans SC", "PingFang SC", "Microsoft YaHei", "WenQuanYi Micro Hei", sans-serif'
)
PALETTE = ["#2b6cb0", "#c05621", "#2f855a", "#6b46c1", "#b7791f", "#c53030", "#4a5568", "#0987a0"]
THEME = "benchbook"


def house_theme() -> dict[str, Any]:
    """The benchbook look: system fonts, quiet axes, a colour-blind-friendlier palette."""
    return {
        "config": {
            "font": FONT,
            "background": "white",
            # room at the right: the browser's fonts may be wider than the ones vl-convert measured with
            "padding": {"left": 5, "top": 5, "right": 40, "bottom": 5},
            "view": {"continuousWidth": 420, "continuousHeight": 260, "stroke": None},
            "axis": {
                "labelFont": FONT,
                "titleFont": FONT,
                "labelFontSize": 11,
                "titleFontSize": 12,
                "titleFontWeight": "normal",
                "gridColor": "#e2e8f0",
                "domainColor": "#718096",
                "tickColor": "#718096",
            },
            # labelLimit 0: legends show full names ("batched-ccb339d", never "batched-ccb339…")
            "legend": {"labelFont": FONT, "titleFont": FONT, "labelFontSize": 11, "titleFontSize": 12, "labelLimit": 0},
            "title": {"font": FONT, "fontSize": 13, "anchor": "start", "fontWeight": "bold"},
            "range": {"category": PALETTE},
            "mark": {"color": PALETTE[0]},
            "point": {"size": 40},
            "line": {"strokeWidth": 2},
        }
    }


@alt.theme.register(THEME, enable=True)
def _theme() -> alt.theme.ThemeConfig:
    return house_theme()  # type: ignore[return-value]


VEGALITE_MIME = f"application/vnd.vegalite.v{alt.SCHEMA_VERSION.lstrip('v').split('.')[0]}+json"


def _vl_version() -> str:
    major, minor = alt.SCHEMA_VERSION.lstrip("v").split(".")[:2]
    return f"{major}.{minor}"


_ID_RE = re.compile(r'\bid="([^"]+)"')


def _prefix_ids(svg: str, prefix: str) -> str:
    ids = sorted(set(_ID_RE.findall(svg)), key=len, reverse=True)
    for old in ids:
        new = f"{prefix}-{old}"
        svg = svg.replace(f'id="{old}"', f'id="{new}"')
        svg = svg.replace(f"url(#{old})", f"url(#{new})")
        svg = svg.replace(f'href="#{old}"', f'href="#{new}"')
    return svg


VALIDATE_ENV = "BENCHBOOK_VALIDATE_CHARTS"


def validating() -> bool:
    """Whether :func:`spec` has Altair validate against the Vega-Lite schema. Validation walks the
    whole spec, inline data included: most of a chart's build time on a long history (about 2 s of 6
    for the charts of 365 campaigns). Rendering skips it; the test suite sets ``BENCHBOOK_VALIDATE_CHARTS=1``
    (tests/conftest.py), so every chart a test builds is still checked by the library."""
    return os.environ.get(VALIDATE_ENV) == "1"


def spec(chart: alt.TopLevelMixin | dict) -> dict[str, Any]:
    """The chart's Vega-Lite spec as a plain dict (house theme applied; validated when :func:`validating`)."""
    if isinstance(chart, dict):
        return chart
    with alt.theme.enable(THEME):
        return chart.to_dict(validate=validating())


def to_svg(chart: alt.TopLevelMixin | dict, *, id_prefix: str | None = None) -> str:
    """Render ``chart`` to a standalone SVG string with vl-convert (no network, no scripts).

    ``id_prefix`` defaults to a short hash of the spec, so the same chart gives the same SVG.
    """
    import vl_convert as vlc

    s = spec(chart)
    svg = vlc.vegalite_to_svg(s, vl_version=_vl_version())
    if id_prefix is None:
        digest = hashlib.sha256(json.dumps(s, sort_keys=True, default=str).encode()).hexdigest()
        id_prefix = "c" + digest[:10]
    svg = _prefix_ids(svg, id_prefix)
    # an <?xml?> prologue is invalid inside HTML
    return re.sub(r"^<\?xml[^>]*\?>\s*", "", svg)


def _svg_renderer(spec_: dict, **_: Any) -> dict[str, str]:
    return {"image/svg+xml": to_svg(spec_)}


alt.renderers.register("benchbook-svg", _svg_renderer)
alt.renderers.enable("benchbook-svg")


# verdict word -> colour of the forest chart (improvement, regression, within noise, no verdict)
VERDICT_COLOURS = {
    "improvement": "#2f855a",
    "regression": "#c53030",
    "within noise": "#718096",
    "no verdict": "#b7791f",
}


def forest(rows: list[dict[str, Any]], *, axis_title: str = "candidate / baseline (log scale)") -> alt.FacetChart:
    """A forest chart: per comparison its ratio (dot) with its range (bar), the noise band the verdict
    used shaded around 1, one panel per group. Any page with comparisons can draw one.

    ``rows``: dicts with ``group`` (panel), ``label`` (one line), ``ratio``, ``lo``, ``hi`` (the
    ratio's range), ``band_lo``/``band_hi`` (the band; 1.0 and 1.0 for none) and ``verdict`` (a key
    of :data:`VERDICT_COLOURS`), all decided by the analysis; rows keep their order.
    """
    scale = alt.Scale(type="log", nice=False, padding=8)
    color = alt.Color(
        "verdict:N",
        title="verdict",
        scale=alt.Scale(domain=list(VERDICT_COLOURS), range=list(VERDICT_COLOURS.values())),
        legend=alt.Legend(orient="top"),
    )
    y = alt.Y("label:N", sort=list(dict.fromkeys(r["label"] for r in rows)), title=None, axis=alt.Axis(labelLimit=0))
    base = alt.Chart().encode(y=y)
    band = base.mark_bar(color="#cbd5e0", opacity=0.7, height=10).encode(
        x=alt.X("band_lo:Q", scale=scale), x2="band_hi:Q"
    )
    one = alt.Chart().mark_rule(color="#4a5568", strokeDash=[3, 3]).encode(x=alt.datum(1.0))
    rng = base.mark_rule(strokeWidth=2).encode(x=alt.X("lo:Q", scale=scale), x2="hi:Q", color=color)
    pts = base.mark_point(filled=True, size=40, opacity=1).encode(
        x=alt.X("ratio:Q", title=axis_title, scale=scale), color=color
    )
    return (
        alt.layer(band, one, rng, pts, data=alt.Data(values=rows))
        .properties(width=520, height=alt.Step(11))
        .facet(
            row=alt.Row(
                "group:N",
                sort=list(dict.fromkeys(r["group"] for r in rows)),
                title=None,
                header=alt.Header(labelAngle=0, labelAlign="left", labelFontWeight="bold"),
            )
        )
        .resolve_scale(y="independent")
    )


# --------------------------------------------------------------------------- sizes
# Altair refuses inline data above 5000 rows (MaxRowsError), and a page of 100k SVG points is
# megabytes nobody can read. Every chart that can receive per-request or per-sample rows reduces
# them here, in polars, before Altair sees them: a chart carries at most ROW_BUDGET rows in all.

ROW_BUDGET = 4000  # rows of inline data per chart (Altair's hard limit is 5000)
MANY_SERIES = 8  # above this many runs, one panel per metric with a line per run (no per-run panels)


def per_series(series: int, *, budget: int = ROW_BUDGET, floor: int = 10, cap: int | None = None) -> int:
    """Points each of ``series`` lines may carry so the chart stays within ``budget`` rows."""
    k = max(floor, budget // max(1, series))
    return k if cap is None else min(cap, k)


def thin_sorted(points: list[Any], k: int) -> list[Any]:
    """At most ``k`` of ``points`` (already in order) at evenly spaced positions, first and last kept:
    an ECDF drawn from its quantile grid stays an ECDF."""
    n = len(points)
    if n <= k or k < 2:
        return list(points)
    idx = sorted({round(i * (n - 1) / (k - 1)) for i in range(k)})
    return [points[i] for i in idx]


def bin_series(frame: Any, *, x: str, y: str, by: list[str], bins: int) -> Any:
    """A time series reduced to ``bins`` equal-width bins of ``x`` per group ``by``: per bin its
    centre ``x``, ``n`` values, ``lo`` (min), ``mid`` (median) and ``hi`` (max) of ``y``, nulls
    skipped. Extremes stay visible (the band is min-max), so a single slow request is not averaged
    away; empty bins are absent (the line breaks rather than interpolates)."""
    import polars as pl

    f = frame.filter(pl.col(y).is_not_null() & pl.col(x).is_not_null())
    if f.height == 0:
        return f.select([*by, pl.lit(None, pl.Float64).alias("x")]).head(0)
    span = f.group_by(by).agg(pl.col(x).min().alias("_x0"), pl.col(x).max().alias("_x1"))
    f = f.join(span, on=by).with_columns(
        ((pl.col("_x1") - pl.col("_x0")) / bins).alias("_w"),
    )
    f = f.with_columns(
        pl.when(pl.col("_w") > 0)
        .then(((pl.col(x) - pl.col("_x0")) / pl.col("_w")).floor().clip(0, bins - 1))
        .otherwise(0)
        .cast(pl.Int64)
        .alias("_bin")
    )
    return (
        f.group_by([*by, "_bin"])
        .agg(
            (pl.col("_x0").first() + (pl.col("_bin").first() + 0.5) * pl.col("_w").first()).alias("x"),
            pl.len().alias("n"),
            pl.col(y).min().alias("lo"),
            pl.col(y).median().alias("mid"),
            pl.col(y).max().alias("hi"),
        )
        .sort([*by, "_bin"])
        .drop("_bin")
    )


def histogram(frame: Any, *, value: str, by: list[str], bins: int = 40) -> Any:
    """Counts of ``value`` in ``bins`` equal-width bins per group, computed in polars: columns ``by``,
    ``lo``, ``hi`` (bin edges) and ``count``. One row per non-empty bin, never one per sample."""
    import polars as pl

    f = frame.filter(pl.col(value).is_not_null() & pl.col(value).is_finite())
    lo_, hi_ = f[value].min(), f[value].max()
    if f.height == 0 or lo_ is None:
        return pl.DataFrame(
            schema={**{b: frame.schema[b] for b in by}, "lo": pl.Float64, "hi": pl.Float64, "count": pl.UInt32}
        )
    w = (hi_ - lo_) / bins or 1.0
    return (
        f.with_columns(((pl.col(value) - lo_) / w).floor().clip(0, bins - 1).cast(pl.Int64).alias("_bin"))
        .group_by([*by, "_bin"])
        .agg(pl.len().alias("count"))
        .with_columns((lo_ + pl.col("_bin") * w).alias("lo"), (lo_ + (pl.col("_bin") + 1) * w).alias("hi"))
        .sort([*by, "_bin"])
        .select([*by, "lo", "hi", "count"])
    )


def data_rows(chart: alt.TopLevelMixin | dict) -> int:
    """Rows of inline data a chart carries (every dataset and inline ``values``): what Altair's row
    limit and the page's size depend on."""
    s = spec(chart)
    n = sum(len(v) for v in s.get("datasets", {}).values())

    def walk(node: Any) -> int:
        if isinstance(node, dict):
            vals = node.get("data", {}).get("values") if isinstance(node.get("data"), dict) else None
            return (len(vals) if isinstance(vals, list) else 0) + sum(
                walk(v) for k, v in node.items() if k != "datasets"
            )
        if isinstance(node, list):
            return sum(walk(v) for v in node)
        return 0

    return n + walk(s)
