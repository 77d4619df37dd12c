"""The explore notebook's tables and charts: a campaign as tidy polars frames, ready for queries.

``notebooks/explore.ipynb`` calls :func:`load` once and then the chart functions; everything a user
would otherwise write by hand to start poking at a campaign (per-request latency over time, the
ladder, the phase split per arm, memory over time) is here, so the notebook stays thin.

Frames (all polars; ``t.pandas.<frame>`` is the same table in pandas, pyarrow-backed):

``requests``       one row per request: whole-request runs (warm-up rows included, scenario warmup) and the per-request records of results runs (harness results, scenario results)
``ladder``         one row per (run, scenario, n) group: wall, aggregate rate, queue shape
``phase_samples``  one row per phase sample with its prefill/decode split
``phase_cells``    median [min–max] per (arm, prompt class, metric) after the warm-up discard
``metric_deltas``  one row per (phase sample, counter series): before, after, delta, reset
``memory_gpu`` / ``memory_host`` / ``memory_markers``  the memory samplers' series
``pd_cells``       PD runs: one row per (run, statistics window, figure) with its value and where it came from
``pd_comparisons`` PD runs: each figure of one arm against the baseline arm, with its verdict

Everything computed (cells, the PD figures) comes from the campaign's one analysis object
(:func:`benchbook.analysis.campaign_analysis.analyse`); ``t.analysis`` is that object.

polars or pandas: the frames are polars (fast, strict types, the library's own); ``t.pandas.requests``
(or ``t.to_pandas("requests")``) converts one with pyarrow-backed columns, no copy where Arrow
allows, for the pandas API, seaborn or scikit-learn. pandas comes with the ``lab`` extra.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from benchbook.pages import display as bd


@dataclass
class Tables:
    camp: Any
    requests: Any
    ladder: Any
    phase_samples: Any
    phase_cells: Any
    metric_deltas: Any
    memory_gpu: Any
    memory_host: Any
    memory_markers: Any
    pd_cells: Any = None
    pd_comparisons: Any = None
    analysis: Any = None

    FRAMES = (
        "requests",
        "ladder",
        "phase_samples",
        "phase_cells",
        "metric_deltas",
        "memory_gpu",
        "memory_host",
        "memory_markers",
        "pd_cells",
        "pd_comparisons",
    )

    def counts(self) -> dict[str, int]:
        return {name: getattr(self, name).height for name in self.FRAMES}

    def to_pandas(self, name: str) -> Any:
        """Frame ``name`` as a pandas DataFrame with pyarrow-backed columns (``ArrowDtype``)."""
        if name not in self.FRAMES:
            raise KeyError(f"no frame {name!r}; the frames are {', '.join(self.FRAMES)}")
        try:
            import pandas  # noqa: F401 - a clear message when the lab extra is missing
            import pyarrow  # noqa: F401
        except ModuleNotFoundError as e:
            raise ModuleNotFoundError(
                f"t.pandas needs {e.name}, which the lab extra installs: pip install -e '.[lab]' (make lab does)"
            ) from None
        return getattr(self, name).to_pandas(use_pyarrow_extension_array=True)

    @property
    def pandas(self) -> PandasFrames:
        """Every frame as pandas, converted on first use: ``t.pandas.requests``."""
        return PandasFrames(self)


class PandasFrames:
    """``t.pandas.<frame>``: a frame of :class:`Tables` as pandas (pyarrow-backed), converted once."""

    def __init__(self, tables: Tables):
        self._tables = tables
        self._done: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        if name not in self._done:
            try:
                self._done[name] = self._tables.to_pandas(name)
            except KeyError as e:
                raise AttributeError(e.args[0]) from None
        return self._done[name]

    def __dir__(self) -> list[str]:
        return list(Tables.FRAMES)


def metric_deltas(camp: Any) -> Any:
    """Every counter series the phase split reads, before and after each sample (warm-ups included).

    ``delta`` is null where the series is missing on one side or went down (``reset`` true): the
    same rule the phase split applies, shown per series rather than per sample. Histogram
    ``_bucket`` series are left out (``_sum`` and ``_count`` are kept). Samples are read by the
    campaign's one phase-sample reader (``Campaign.sample_snapshots``): capture files or the
    run's Prometheus server for a sample's window.
    """
    import polars as pl

    from benchbook.metrics import phases

    runs = camp.runs_of("phases")
    names = phases.needed_names(camp.profile) if runs else ()  # no phases runs: maybe no engine named
    rows = []
    for r in runs:
        for i, s in enumerate(camp.phases_doc(r)["samples"]):
            try:
                before, after, _win, _restart = camp.sample_snapshots(r, i)  # capture files or a Prometheus window
            except phases.Excluded:  # a window not queried (its server not allowed): listed by the split
                continue
            samples = sorted(
                n
                for n in set(before.values) | set(after.values)
                if any(n == f or (n.startswith(f + "_") and not n.endswith("_bucket")) for f in names)
            )
            for name in samples:
                keys = sorted(set(before.series(name)) | set(after.series(name)))
                for key in keys:
                    b, a = before.series(name).get(key), after.series(name).get(key)
                    reset = a is not None and b is not None and a < b
                    rows.append(
                        {
                            "run": r.id,
                            "arm": r.arm,
                            "prompt_class": s["prompt_class"],
                            "repeat": s["repeat"],
                            "warmup": s["warmup"],
                            "series": name,
                            "labels": ",".join(f"{k}={v}" for k, v in key),
                            "before": b,
                            "after": a,
                            "delta": None if a is None or b is None or reset else a - b,
                            "reset": reset,
                        }
                    )
    schema = {
        "run": pl.String,
        "arm": pl.String,
        "prompt_class": pl.String,
        "repeat": pl.Int64,
        "warmup": pl.Boolean,
        "series": pl.String,
        "labels": pl.String,
        "before": pl.Float64,
        "after": pl.Float64,
        "delta": pl.Float64,
        "reset": pl.Boolean,
    }
    return pl.DataFrame(rows, schema=schema)


def load(campaign: str) -> Tables:
    """Load ``campaign`` and build every frame (records their row counts as ``rows``)."""
    import polars as pl

    from benchbook.analysis.campaign_analysis import analyse
    from benchbook.ingest.campaign import load_campaign

    camp = load_campaign(campaign)
    an = analyse(camp)
    req = camp.requests
    ladder = an.ladder_table()
    requests = pl.concat(
        [
            req.with_columns(
                pl.lit("requests").alias("harness"),
                pl.lit(None, pl.Float64).alias("ttft"),
                pl.lit(True).alias("success"),
            ),
            result_requests(camp, an),
        ],
        how="vertical",
    )
    # a campaign without phases runs may name no engine (results runs detect it): nothing to split,
    # and the frames keep the columns a query names
    ps = camp.phase_samples if camp.runs_of("phases") or camp.manifest.get("engine") else _NO_PHASE_SAMPLES()
    cells = an.phase_cells if an.phase_cells is not None else _frame([])
    gpu, host, markers = camp.memory
    pd_cells = _frame(an.pd.cells if an.pd else [])
    pd_cmp = _frame(an.pd.comparisons if an.pd else [])
    return Tables(camp, requests, ladder, ps, cells, metric_deltas(camp), gpu, host, markers, pd_cells, pd_cmp, an)


def _NO_PHASE_SAMPLES() -> Any:
    """``phase_samples`` of a campaign that has no phases runs and names no engine: no rows, the
    key columns."""
    import polars as pl

    return pl.DataFrame(
        schema={"run": pl.String, "arm": pl.String, "prompt_class": pl.String, "repeat": pl.Int64, "warmup": pl.Boolean}
    )


def result_requests(camp: Any, an: Any) -> Any:
    """The per-request records of the campaign's results runs (tools' result files that keep them:
    ``vllm bench serve --save-detailed``, SGLang's JSONL, GuideLLM …) in ``Campaign.requests``'
    columns plus ``harness`` ("results"), ``ttft`` and ``success``.

    ``start`` is seconds since the benchmark run's first request (the files' clocks are not
    comparable across runs), ``latency`` the end-to-end time, ``n`` the run's max concurrency,
    ``finish_reason`` the tool's error for a failed request. Runs whose files keep no per-request
    records add no rows.
    """
    import polars as pl

    from benchbook.ingest.campaign import REQUEST_SCHEMA

    schema = {**REQUEST_SCHEMA(), "harness": pl.String, "ttft": pl.Float64, "success": pl.Boolean}
    frames = []
    arms = {r.id: r.arm for r in camp.runs}
    for pid, rid, run in an.results_inputs.runs if an.results_inputs is not None else []:
        d = run.requests
        if d is None or d.height == 0:
            continue
        arm = arms.get(rid, rid)
        t0 = d["start_s"].min()
        start = pl.col("start_s") - t0 if t0 is not None else pl.lit(None, pl.Float64)
        conc = run.config.get("max_concurrency")
        frames.append(
            d.select(
                pl.lit(pid).alias("run"),
                pl.lit(arm).alias("arm"),
                pl.lit(camp.arm_environment(arm)).alias("environment"),
                pl.lit(0).alias("round"),
                pl.lit("results").alias("scenario"),
                pl.lit(int(conc) if isinstance(conc, (int, float)) and conc == conc and conc != float("inf") else None)
                .cast(pl.Int64)
                .alias("n"),
                pl.col("index"),
                pl.lit(None, pl.String).alias("prompt_class"),
                start.alias("start"),
                (start + pl.col("e2e_s")).alias("end"),
                pl.col("e2e_s").alias("latency"),
                pl.col("prompt_tokens"),
                pl.col("completion_tokens"),
                pl.col("error").alias("finish_reason"),
                pl.lit(None, pl.Boolean).alias("stream"),
                pl.lit("results").alias("harness"),
                pl.col("ttft_s").alias("ttft"),
                pl.col("success"),
            ).cast(schema)
        )
    return pl.concat(frames, how="vertical") if frames else pl.DataFrame(schema=schema)


def _frame(rows: list[dict[str, Any]]) -> Any:
    """A list of records as a polars frame (values of mixed kinds in a column become strings)."""
    import polars as pl

    if not rows:
        return pl.DataFrame()
    cols = list(dict.fromkeys(k for r in rows for k in r))
    data = {}
    for c in cols:
        vals = [r.get(c) for r in rows]
        kinds = {type(v) for v in vals if v is not None}
        if kinds <= {int, float} and kinds:
            data[c] = pl.Series(c, [None if v is None else float(v) for v in vals], dtype=pl.Float64)
        elif kinds <= {bool}:
            data[c] = pl.Series(c, vals, dtype=pl.Boolean)
        else:
            data[c] = pl.Series(c, [None if v is None else (v if isinstance(v, str) else str(v)) for v in vals])
    return pl.DataFrame(data)


def overview(t: Tables) -> bd.Block:
    """Heading, the frames with their row counts and columns, and what each holds."""
    counts = t.counts()
    bd.record("rows", counts)
    bd.record("campaign", t.camp.name)
    doc = {
        name: m.group(2)
        for line in (__doc__ or "").splitlines()
        if (m := re.match(r"^((?:``\w+``(?: / )?)+)\s+(.*)$", line))
        for name in re.findall(r"``(\w+)``", m.group(1))
    }
    rows = [
        {
            "Frame": f"t.{name}",
            "Rows": counts[name],
            "Columns": ", ".join(getattr(t, name).columns),
            "Holds": doc.get(name, ""),
        }
        for name in Tables.FRAMES
    ]
    return bd.Block(
        str(bd.heading(f"Explore: {t.camp.title}", 1))
        + str(
            bd.text(
                "Campaign {c} ({p}). Every frame below is a polars DataFrame on t; import polars as pl and query it "
                'directly, e.g. t.phase_samples.filter(pl.col("arm") == "tuned"). For pandas, t.pandas.<frame> is '
                "the same table with pyarrow-backed columns (e.g. t.pandas.requests.describe()).",
                c=t.camp.name,
                p=t.camp.manifest.get("provenance", ""),
            )
        )
        + str(
            bd.table(
                rows, id="explore-frames", caption="Tidy tables of this campaign; warm-up rows are kept and flagged."
            )
        )
    )


def _empty(what: str) -> bd.Block:
    return bd.Block(f"<p>No {bd.esc(what)} in this campaign.</p>")


def latency_chart(t: Tables) -> bd.Block:
    """Per-request latency against its start time, one panel per run (warm-up shown, greyed). Past
    :data:`benchbook.pages.charts.ROW_BUDGET` requests the dots become binned lines (median per time
    bin with its min-max band, per scenario), so a 100k-request campaign draws, not a MaxRowsError."""
    import altair as alt
    import polars as pl

    from benchbook.pages import charts

    if t.requests.height == 0:
        return _empty("per-request records (whole-request runs, or result files that keep each request)")
    d = t.requests.select("run", "scenario", "n", "prompt_class", "start", "latency").with_columns(
        pl.col("prompt_class").fill_null("(not stated)")
    )
    if d.height > charts.ROW_BUDGET:
        series = d.select("run", "scenario").unique().height
        bins = charts.per_series(series, cap=60)
        b = charts.bin_series(d, x="start", y="latency", by=["run", "scenario"], bins=bins)
        base = alt.Chart(b).encode(
            x=alt.X("x:Q", title="request start (s, client clock)"), color=alt.Color("scenario:N", title="scenario")
        )
        ch = (
            alt.layer(
                base.mark_area(opacity=0.2).encode(y=alt.Y("lo:Q", title="latency (s)"), y2="hi:Q"),
                base.mark_line(point=True).encode(
                    y="mid:Q", tooltip=["run", "scenario", "n", alt.Tooltip("mid:Q", format=".3f")]
                ),
            )
            .properties(width=260, height=150)
            .facet(facet=alt.Facet("run:N", title=None), columns=3)
        )
        return bd.chart(
            ch,
            interactive=True,
            id="explore-latency",
            caption=(
                f"{d.height:,} requests, binned: per run and scenario {bins} equal time bins, the line the median latency "
                f"of each bin and the band its min–max; {t.camp.generation_tokens} generated tokens each. "
                "t.requests has every request."
            ),
        )
    ch = (
        alt.Chart(d)
        .mark_point(filled=True, size=25)
        .encode(
            x=alt.X("start:Q", title="request start (s, client clock)"),
            y=alt.Y("latency:Q", title="latency (s)"),
            color=alt.Color("scenario:N", title="scenario"),
            shape=alt.Shape("prompt_class:N", title="prompt"),
            tooltip=["run", "scenario", "n", "prompt_class", "start", "latency"],
        )
        .properties(width=260, height=150)
        .interactive()
        .facet(facet=alt.Facet("run:N", title=None), columns=3)
    )
    return bd.chart(
        ch,
        interactive=True,
        id="explore-latency",
        caption=(
            f"Each dot is one request ({_tokens(t)}). A staircase inside a ladder group means requests were served "
            "one after another; results runs start at their first request."
        ),
    )


def _tokens(t: Tables) -> str:
    """What the requests generated: the campaign's budget, or the results runs' own token counts."""
    import polars as pl

    parts = []
    if t.requests.filter(pl.col("harness") == "requests").height:
        parts.append(f"whole-request runs: {t.camp.generation_tokens} generated tokens each")
    res = t.requests.filter(pl.col("harness") == "results")["completion_tokens"].drop_nulls()
    if res.len():
        lo, hi = res.min(), res.max()
        parts.append(
            f"results runs: {lo} generated tokens each" if lo == hi else f"results runs: {lo}–{hi} generated tokens"
        )
    return "; ".join(parts)


def ladder_chart(t: Tables) -> bd.Block:
    """Aggregate output rate against concurrency n, one line per run."""
    import altair as alt
    import polars as pl

    if t.ladder.height == 0:
        return _empty("whole-request runs")
    d = t.ladder.filter(pl.col("scenario").is_in(["single", "ladder"])).select("run", "n", "rate_tok_s")
    ch = (
        alt.Chart(d)
        .mark_line(point=True)
        .encode(
            x=alt.X(
                "n:Q",
                title="concurrent requests n",
                scale=alt.Scale(type="log", base=2),
                axis=alt.Axis(values=[1, 2, 4, 8]),
            ),
            y=alt.Y("rate_tok_s:Q", title="aggregate output tok/s"),
            color=alt.Color("run:N", title="run"),
            tooltip=["run", "n", alt.Tooltip("rate_tok_s:Q", format=".3f")],
        )
        .properties(width=480, height=240)
    )
    return bd.chart(
        ch,
        interactive=True,
        id="explore-ladder",
        caption="n × tokens / wall per group; a flat line is a serial server.",
    )


def phase_split_chart(t: Tables) -> bd.Block:
    """Median prefill and decode seconds per arm and prompt class, stacked."""
    import altair as alt
    import polars as pl

    if t.phase_cells.height == 0:
        return _empty("phase-split runs")
    d = (
        t.phase_cells.filter(pl.col("metric") == "prefill_s")
        .select("arm", "prompt_class", pl.col("median").alias("prefill"))
        .join(
            t.phase_cells.filter(pl.col("metric") == "engine_total_s").select(
                "arm", "prompt_class", pl.col("median").alias("total")
            ),
            on=["arm", "prompt_class"],
        )
        .with_columns((pl.col("total") - pl.col("prefill")).alias("decode"))
        .unpivot(index=["arm", "prompt_class"], on=["prefill", "decode"], variable_name="phase", value_name="seconds")
    )
    arms = list(dict.fromkeys(t.phase_cells["arm"].to_list()))
    ch = (
        alt.Chart(d)
        .mark_bar()
        .encode(
            y=alt.Y("arm:N", sort=arms, title=None, axis=alt.Axis(labelLimit=240)),
            x=alt.X("seconds:Q", title="median seconds (engine clock)", stack="zero"),
            color=alt.Color("phase:N", title="phase", sort=["prefill", "decode"]),
            order=alt.Order("phase:N", sort="descending"),
            tooltip=["arm", "prompt_class", "phase", alt.Tooltip("seconds:Q", format=".3f")],
        )
        .properties(width=420, height=18 * max(1, len(arms)))
        .facet(row=alt.Row("prompt_class:N", title=None))
    )
    ctx = ", ".join(f"{k} {v.get('tokens')} tokens" for k, v in t.camp.prompt_classes.items())
    return bd.chart(
        ch,
        interactive=True,
        id="explore-phases",
        caption=(
            f"Median prefill and decode time per arm ({ctx}; {t.camp.generation_tokens} generated tokens). Medians only: "
            "see t.phase_cells for the [min–max]."
        ),
    )


def memory_chart(t: Tables) -> bd.Block:
    """GPU memory of the largest rank over time, one line per memory run; where no GPU was sampled,
    the host's summed Pss of the server's processes (``host_samples.csv``)."""
    import altair as alt
    import polars as pl

    host_only = t.memory_gpu.height == 0
    pss = t.memory_host.filter(pl.col("pss_kib_sum").is_not_null()) if host_only else None
    if host_only and (pss is None or pss.height == 0):
        return _empty("memory samples (GPU or host)")
    from benchbook.pages import charts

    if host_only:
        d = pss.select("run", "t", (pl.col("pss_kib_sum") / 2**20).alias("gib")).sort(["run", "t"])
        y_title = "host: summed Pss of the server's processes (GiB)"
        what = (
            "No GPU was sampled (no nvidia-smi on the host): the host sampler's summed Pss of the server's "
            "processes per sample (not a footprint: shared pages count once per process)"
        )
    else:
        d = (
            t.memory_gpu.group_by(["run", "t"])
            .agg((pl.col("gpu_used_mib").max() / 1024).alias("gib"))
            .sort(["run", "t"])
        )
        y_title = "GPU used, largest rank (GiB)"
        what = "nvidia-smi memory.used of the largest rank per sample"
    binned = ""
    if d.height > charts.ROW_BUDGET:  # long sampling: per run at most its share of the budget, peak kept
        bins = charts.per_series(d["run"].n_unique(), cap=400)
        d = (
            charts.bin_series(d, x="t", y="gib", by=["run"], bins=bins)
            .select("run", pl.col("x").alias("t"), pl.col("hi").alias("gib"))
            .sort(["run", "t"])
        )
        binned = f" Long series binned: {bins} equal time bins per run, each drawn at its highest sample (peaks kept)."
    ch = (
        alt.Chart(d)
        .mark_line()
        .encode(
            x=alt.X("t:Q", title="seconds since the sampler started"),
            y=alt.Y("gib:Q", title=y_title),
            color=alt.Color("run:N", title="run"),
            tooltip=["run", "t", alt.Tooltip("gib:Q", format=".2f")],
        )
        .properties(width=480, height=240)
        .interactive()  # pan and zoom along the time axis in JupyterLab
    )
    return bd.chart(
        ch,
        interactive=True,
        id="explore-memory",
        caption=(what + "; markers (load, requests, stop) are in t.memory_markers." + binned),
    )
