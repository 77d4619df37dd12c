"""Sections of the compare page: benchmark result files side by side.

``notebooks/compare.ipynb`` is a parameters cell and one call per section. :func:`load` reads every
file with :func:`benchbook.ingest.formats.read`, groups runs by configuration (model, request rate,
max concurrency, prompt count) and computes what the page shows; each section returns a display
Block and records its values (``display.record``) for tests.

* throughput and TTFT/TPOT/ITL/E2E statistics per run, as the files report them;
* per configuration, the median over its repeats and its ratio to a chosen baseline configuration;
* verdicts (``verdict.compare``) only when some configuration was run at least twice: the spread of
  each metric is measured between those repeats (the largest spread over the repeated
  configurations); with no repeats nothing is called a result;
* validity gates per run and, when a before/after ``/metrics`` pair is given, reconciliation of one
  run against the engine's window deltas (``enginemetrics``);
* rate-sweep charts: metric vs offered request rate (or max concurrency) on an ordinal axis.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchbook.analysis import stats
from benchbook.errors import InputError
from benchbook.pages import display as bd
from benchbook.pages import sections

THROUGHPUT = (
    ("output_throughput", "output tok/s", True),
    ("request_throughput", "req/s", True),
    ("total_token_throughput", "total tok/s", True),
)
LATENCY = ("ttft", "tpot", "itl", "e2el")
LAT_NAME = {"ttft": "TTFT", "tpot": "TPOT", "itl": "ITL", "e2el": "E2E"}
VERDICT_METRICS = (
    ("output_throughput", True),
    ("request_throughput", True),
    *((f"median_{m}_ms", False) for m in LATENCY),
    *((f"p99_{m}_ms", False) for m in LATENCY),
)
RULES = ("seed", "strict")


def _rate(v: Any) -> str:
    if v is None:
        return "—"
    return "inf" if math.isinf(v) else f"{v:g}"


@dataclass
class Run:
    id: str
    run: Any  # formats.BenchmarkRun
    config: str

    def get(self, key: str) -> Any:
        return self.run.summary.get(key)


@dataclass
class Page:
    files: list[str]
    runs: list[Run]
    configs: list[str]  # in first-seen order
    baseline: str
    rule: str
    title: str
    gate_params: dict[str, Any]
    spreads: dict[str, float] = field(default_factory=dict)
    window: Any = None
    engine_run: str | None = None
    engine_checks: list[tuple[str, list[Any]]] = field(default_factory=list)  # (run id, checks), from analysis
    inputs: list[str] = field(default_factory=list)  # every file read, for provenance
    todo: list[str] = field(default_factory=list)  # the campaign's open decisions (campaign.json "todo")

    def runs_of(self, config: str) -> list[Run]:
        return [r for r in self.runs if r.config == config]


def config_label(cfg: dict[str, Any]) -> str:
    model = str(cfg.get("model") or cfg.get("label") or "unknown model").rstrip("/").split("/")[-1]
    parts = [model, f"rate {_rate(cfg.get('request_rate'))}"]
    if cfg.get("max_concurrency") is not None:
        parts.append(f"concurrency {cfg['max_concurrency']}")
    if cfg.get("num_prompts") is not None:
        parts.append(f"{cfg['num_prompts']} prompts")
    return ", ".join(parts)


def load(
    files: list[str],
    *,
    baseline: str = "",
    rule: str = "seed",
    title: str = "",
    min_duration_s: float = 60.0,
    min_completed: int = 100,
    max_error_rate: float = 0.01,
    engine_before: str = "",
    engine_after: str = "",
    engine_run: str = "",
    campaign: str = "",
) -> Page:
    """Read the files and compute the page. ``baseline``: a run id or configuration label (empty: the
    first configuration). ``engine_before``/``engine_after``: a `/metrics` pair for the window of
    ``engine_run`` (empty: the only run, else the first run of the baseline configuration).
    ``campaign``: a campaign folder of results runs, read instead of ``files`` (``analysis.results``):
    its result files, each run's engine window and reconciliation."""
    from benchbook.ingest import formats

    inputs = None
    if campaign:
        from benchbook.analysis import results

        if files or engine_before or engine_after:
            raise InputError("parameters", "campaign", "give a campaign or files/engine_before/engine_after, not both")
        inputs = results.campaign_inputs(campaign)
        files = inputs.files
        title = title or inputs.title
    if not files:
        raise InputError("parameters", "files", "no result files to compare")
    if rule not in RULES:
        raise InputError("parameters", "rule", f"unknown noise rule {rule!r}; choose seed or strict")
    runs: list[Run] = []
    seen: set[str] = set()
    read = (
        [(pid, r) for pid, _, r in inputs.runs]
        if inputs is not None
        else [(Path(f).stem + ("" if r.location == "$" else r.location), r) for f in files for r in formats.read(f)]
    )
    arm_of = inputs.configs if inputs is not None else {}  # a campaign's arms are its configurations
    for rid, r in read:
        label = arm_of.get(rid) or config_label(r.config)
        while rid in seen:
            rid += "'"
        seen.add(rid)
        runs.append(Run(rid, r, label))
    configs = list(dict.fromkeys(r.config for r in runs))
    base = configs[0]
    if baseline:
        by_id = {r.id: r.config for r in runs}
        if baseline in by_id:
            base = by_id[baseline]
        elif baseline in configs:
            base = baseline
        else:
            raise InputError(
                "parameters",
                "baseline",
                f"{baseline!r} is neither a run id nor a configuration; runs: {', '.join(by_id)}",
            )
    page = Page(
        list(files),
        runs,
        configs,
        base,
        rule,
        title or f"Comparison of {len(runs)} runs",
        {"min_duration_s": min_duration_s, "min_completed": min_completed, "max_error_rate": max_error_rate},
    )
    page.spreads = _spreads(page)
    page.inputs = inputs.inputs if inputs is not None else list(files)
    if inputs is not None:
        page.engine_checks = inputs.engine_checks()
        page.todo = inputs.open_items()
    if engine_before or engine_after:
        if not (engine_before and engine_after):
            raise InputError("parameters", "engine_before", "give both engine_before and engine_after, or neither")
        from benchbook.analysis import enginemetrics
        from benchbook.metrics import prometheus

        page.window = enginemetrics.window(prometheus.read(engine_before), prometheus.read(engine_after))
        ids = [r.id for r in runs]
        if engine_run and engine_run not in ids:
            raise InputError("parameters", "engine_run", f"unknown run {engine_run!r}; runs: {', '.join(ids)}")
        page.engine_run = engine_run or (ids[0] if len(ids) == 1 else page.runs_of(base)[0].id)
        from benchbook.analysis.results import EngineWindow, reconcile_run

        ew = EngineWindow(page.engine_run, page.window, {}, "metrics_labels", [engine_before, engine_after])
        run = next(r for r in runs if r.id == page.engine_run)
        page.engine_checks = [(run.id, [*page.window.checks, *reconcile_run(run.run, ew)])]
        page.inputs += [engine_before, engine_after]
    return page


def _spreads(page: Page) -> dict[str, float]:
    """Per metric: the largest run-to-run spread over configurations run at least twice."""
    out: dict[str, float] = {}
    for metric, _ in VERDICT_METRICS:
        for c in page.configs:
            vals = [r.get(metric) for r in page.runs_of(c)]
            vals = [v for v in vals if v is not None and v > 0]
            if len(vals) >= 2:
                out[metric] = max(out.get(metric, 0.0), stats.run_spread(vals, metric))
    return out


def _cell(page: Page, config: str, metric: str) -> stats.Cell | None:
    vals = [r.get(metric) for r in page.runs_of(config)]
    vals = [v for v in vals if v is not None]
    return stats.cell(vals, what=metric) if vals else None


def _n(x: Any, d: int = 1) -> str:
    return "—" if x is None else f"{x:,.{d}f}"


# ---- sections ----------------------------------------------------------------------------------
def header(page: Page) -> bd.Block:
    bd.record("title", page.title)
    bd.record("configurations", page.configs)
    bd.record("baseline", page.baseline)
    bd.record("todo", page.todo)
    todo = (
        str(bd.text("Still to decide (campaign.json todo): {items}.", items="; ".join(page.todo))) if page.todo else ""
    )
    return bd.Block(
        str(bd.heading(page.title, 1))
        + todo
        + str(
            bd.text(
                "{n} run(s) from {f} file(s) in {c} configuration(s); baseline configuration: {b}.",
                n=len(page.runs),
                f=len(page.files),
                c=len(page.configs),
                b=page.baseline,
            )
        )
        + str(findings(page))
    )


def how_to_read(page: Page) -> bd.Block:
    reps = {c: len(page.runs_of(c)) for c in page.configs}
    rule = (
        "a difference is a result only when the repeats' [min–max] ranges do not overlap AND it exceeds the run-to-run "
        "spread measured between repeats of the same configuration"
        if page.rule == "seed"
        else "strict: a noise band of max(2 %, 2 × the measured spread); a result needs disjoint ranges and a difference beyond it"
    )
    if not page.spreads:
        rule += ". No configuration was run twice: no spread was measured, so nothing on this page is called a result"
    bd.record("repeats", reps)
    return bd.how_to_read(
        n_per_cell=(
            "each run is one benchmark file entry; figures per run are the tool's own statistics over its requests. "
            "Per-configuration cells are the median over repeats (n = "
            + ", ".join(sorted({str(v) for v in reps.values()}))
            + "). Runs, not requests, are the unit of replication."
        ),
        warmup="as recorded by the benchmark tool; benchbook discards nothing on this page",
        noise_rule=rule,
        marks=("result", "noise", "pass", "fail"),
        extra=[
            "Ratios are candidate / baseline configuration; for latencies a ratio below 1 is faster.",
            "Prompt and generation lengths come from each run's dataset (see the runs table); compare only like with like.",
        ],
    )


def runs_table(page: Page) -> bd.Block:
    rows = []
    for r in page.runs:
        c, s = r.run.config, r.run.summary
        rows.append(
            {
                "Run": r.id,
                "Format": r.run.format + (f" — {r.run.tool_version}" if r.run.tool_version else ""),
                "Configuration": r.config,
                "Rate": _rate(c.get("request_rate")),
                "Concurrency": c.get("max_concurrency") if c.get("max_concurrency") is not None else "—",
                "Completed": s.get("completed") if s.get("completed") is not None else "—",
                "Failed": s.get("failed") if s.get("failed") is not None else "—",
                "Duration s": _n(s.get("duration_s"), 2),
                "In tokens": s.get("total_input_tokens") or "—",
                "Out tokens": s.get("total_output_tokens") or "—",
                **{lab: _n(s.get(k)) for k, lab, _ in THROUGHPUT},
            }
        )
    bd.record(
        "runs",
        [
            {
                "id": r.id,
                "config": r.config,
                "request_rate": _json_rate(r.run.config.get("request_rate")),
                **{
                    k: r.get(k)
                    for k in ("completed", "failed", "duration_s", "output_throughput", "request_throughput")
                },
            }
            for r in page.runs
        ],
    )
    return bd.Block(
        "<h2>Runs and throughput</h2>"
        + str(
            bd.table(
                rows,
                id="compare-runs",
                caption=(
                    "One row per run, as the file reports it; — where the file does not say. In/Out tokens are the run's totals "
                    "(prompt and generation lengths come from its dataset)."
                ),
            )
        )
    )


def _json_rate(v: Any) -> Any:
    return "inf" if isinstance(v, float) and math.isinf(v) else v


def latency_table(page: Page) -> bd.Block:
    rows, rec = [], []
    for r in page.runs:
        row: dict[str, Any] = {"Run": r.id}
        for m in LATENCY:
            for st in ("mean", "median", "p99"):
                row[f"{LAT_NAME[m]} {st}"] = _n(r.get(f"{st}_{m}_ms"), 2)
        rows.append(row)
        rec.append(
            {"id": r.id, **{f"{st}_{m}_ms": r.get(f"{st}_{m}_ms") for m in LATENCY for st in ("mean", "median", "p99")}}
        )
    bd.record("latency", rec)
    return bd.Block(
        "<h2>Latency percentiles (ms)</h2>"
        + str(
            bd.table(
                rows,
                id="compare-latency",
                caption=(
                    "Milliseconds, per run, as computed by the benchmark tool over its successful requests (TPOT excludes the first "
                    "token; ITL pools every inter-chunk gap)."
                ),
            )
        )
    )


def ratios(page: Page) -> bd.Block:
    rows, rec = [], []
    metrics = [(k, lab) for k, lab, _ in THROUGHPUT] + [
        (f"{st}_{m}_ms", f"{LAT_NAME[m]} {st}") for m in LATENCY for st in ("median", "p99")
    ]
    for c in page.configs:
        row: dict[str, Any] = {
            "Configuration": c + (" (baseline)" if c == page.baseline else ""),
            "n": len(page.runs_of(c)),
        }
        r_rec: dict[str, Any] = {"config": c}
        for k, lab in metrics:
            cc, bc = _cell(page, c, k), _cell(page, page.baseline, k)
            ratio = cc.median / bc.median if cc and bc and bc.median else None
            row[lab] = (
                "—"
                if cc is None
                else f"{cc.median:,.2f}" + ("" if ratio is None or c == page.baseline else f" ({ratio:.2f}x)")
            )
            r_rec[k] = {"median": None if cc is None else cc.median, "ratio": ratio}
        rows.append(row)
        rec.append(r_rec)
    bd.record("ratios", rec)
    return bd.Block(
        "<h2>Configurations vs the baseline</h2>"
        + str(
            bd.table(
                rows,
                id="compare-ratios",
                caption=(
                    "Median over each configuration's repeats (n); in brackets the ratio to the baseline configuration's median. "
                    "A ratio alone is not a verdict: see the next section."
                ),
            )
        )
    )


def _judgements(page: Page) -> list[tuple]:
    """(configuration, metric, baseline cell, candidate cell, spread, Comparison) per judged pair."""
    from benchbook.analysis.verdict import compare

    out = []
    for c in page.configs:
        if c == page.baseline:
            continue
        for k, hib in VERDICT_METRICS:
            bc, cc, sp = _cell(page, page.baseline, k), _cell(page, c, k), page.spreads.get(k)
            if bc is None or cc is None or sp is None or bc.min <= 0 or cc.min <= 0:
                continue
            out.append((c, k, bc, cc, sp, compare(bc, cc, spread=sp, higher_is_better=hib, rule=page.rule)))
    return out


def findings(page: Page) -> bd.Block:
    """The findings box: verdicts called results (worst first), failed gates, and what could not be
    judged (no repeats: no spread)."""
    from benchbook.analysis.reconcile import gates

    results = [
        (
            v.direction,
            v.speedup,
            f"{c} vs the baseline, {k}: {v.ratio:.2f}x ({stats.fmt_pct(v.change, signed=True)})",
            "verdicts",
        )
        for c, k, _b, _c, _s, v in _judgements(page)
        if v.is_result
    ]
    failed = [
        (f"{r.id}: {g.name} — {g.detail}", "checks")
        for r in page.runs
        for g in gates(r.run, **page.gate_params)
        if g.status == "fail"
    ]
    unjudged = []
    if not page.spreads:
        unjudged.append(("No configuration was run twice: no spread, so no difference is called a result", "verdicts"))
    elif len(page.configs) < 2:
        unjudged.append(("Only one configuration: nothing to compare against", "verdicts"))
    return sections.findings(results=results, failed=failed, unjudged=unjudged, results_section="verdicts")


def verdicts(page: Page) -> bd.Block:
    out = [str(bd.heading("Verdicts", id="verdicts"))]
    spread_rows = [{"Metric": k, "Spread between repeats": stats.fmt_pct(v)} for k, v in page.spreads.items()]
    bd.record("spreads", page.spreads)
    if not page.spreads:
        bd.record("verdicts", [])
        out.append(
            str(
                bd.text(
                    "No configuration was run more than once, so the run-to-run noise is unknown and no "
                    "difference on this page is called a result."
                )
            )
        )
        return bd.Block("".join(out))
    out.append(
        str(
            bd.table(
                spread_rows,
                id="compare-spreads",
                caption=(
                    "Run-to-run spread (max − min) / min between repeats of the same configuration; the largest over repeated "
                    "configurations is used for every verdict."
                ),
            )
        )
    )
    rows, rec = [], []
    for c, k, bc, cc, sp, v in _judgements(page):
        rows.append(
            {
                "Configuration": c,
                "Metric": k,
                "Baseline": bc.fmt(2),
                "Candidate": cc.fmt(2),
                "Verdict": bd.mark("result" if v.is_result else "noise"),
                "Why": v.describe(),
            }
        )
        rec.append(
            {
                "config": c,
                "metric": k,
                "is_result": v.is_result,
                "direction": v.direction,
                "ratio": v.ratio,
                "spread": sp,
            }
        )
    bd.record("verdicts", rec)
    if rows:
        out.append(
            str(
                bd.table(
                    rows,
                    id="compare-verdicts",
                    caption="Candidate configuration vs baseline, median (min–max) over repeats.",
                )
            )
        )
    else:
        out.append(
            str(
                bd.text(
                    "Only one configuration: the spread above is the noise between its repeats; there is no "
                    "other configuration to compare against."
                )
            )
        )
    return bd.Block("".join(out))


def checks(page: Page) -> bd.Block:
    from benchbook.analysis.reconcile import gates

    rows, rec = [], []
    for r in page.runs:
        for c in gates(r.run, **page.gate_params):
            rows.append(
                {
                    "Run": r.id,
                    "Check": c.name,
                    "Status": bd.mark("pass" if c.status == "pass" else "fail", c.status)
                    if c.status != "warn"
                    else "warn",
                    "Detail": c.detail,
                }
            )
            rec.append({"run": r.id, "kind": "gate", "name": c.name, "status": c.status})
    for run_id, engine_checks in page.engine_checks:
        for c in engine_checks:
            rows.append({"Run": run_id, "Check": c.name, "Status": c.status, "Detail": c.detail})
            rec.append({"run": run_id, "kind": "engine", "name": c.name, "status": c.status})
    bd.record("checks", rec)
    p = page.gate_params
    return bd.Block(
        str(bd.heading("Validity gates and reconciliation", id="checks"))
        + str(
            bd.table(
                rows,
                id="compare-checks",
                caption=(
                    f"Gates (parameters): duration ≥ {p['min_duration_s']:g} s, completed ≥ {p['min_completed']}, error rate ≤ "
                    f"{p['max_error_rate']:.2%}; warn means the check could not be made. Engine checks need a before/after /metrics pair; "
                    "the client's model must name the engine series compared with it."
                ),
            )
        )
    )


def sweep_chart(page: Page) -> bd.Block:
    """Metric vs offered request rate (or max concurrency when the rate does not vary), one line per
    model; an ordinal axis so ``inf`` has a place."""
    import altair as alt
    import polars as pl

    rates = {r.run.config.get("request_rate") for r in page.runs}
    concs = {r.run.config.get("max_concurrency") for r in page.runs}
    axis = "request rate" if len(rates) > 1 else "max concurrency" if len(concs) > 1 else None
    if axis is None:
        bd.record("sweep", None)
        return bd.Block("")
    key = "request_rate" if axis == "request rate" else "max_concurrency"
    pts = []
    for r in page.runs:
        x = r.run.config.get(key)
        for metric, lab in (
            ("output_throughput", "output tok/s"),
            ("median_ttft_ms", "median TTFT ms"),
            ("p99_ttft_ms", "p99 TTFT ms"),
            ("median_tpot_ms", "median TPOT ms"),
            ("median_itl_ms", "median ITL ms"),
            ("median_e2el_ms", "median E2E ms"),
        ):
            v = r.get(metric)
            if v is not None and x is not None:
                pts.append(
                    {
                        "x": _rate(x),
                        "order": math.inf if math.isinf(float(x)) else float(x),
                        "metric": lab,
                        "model": r.config.split(",")[0],
                        "run": r.id,
                        "value": float(v),
                    }
                )
    if not pts:
        bd.record("sweep", None)
        return bd.Block("")
    df = pl.DataFrame(pts).sort(["metric", "order", "run"])
    xs = [x for x in dict.fromkeys(df.sort("order")["x"].to_list())]
    bd.record("sweep", {"axis": axis, "x": xs, "points": df.drop("order").to_dicts()})
    ch = (
        alt.Chart(df.drop("order"))
        .mark_line(point=True)
        .encode(
            x=alt.X("x:O", title=f"offered {axis}", sort=xs),
            y=alt.Y("value:Q", title=None),
            color=alt.Color("model:N", title="model"),
            detail="run:N",
        )
        .properties(width=240, height=160)
        .facet(facet=alt.Facet("metric:N", title=None), columns=3)
        .resolve_scale(y="independent")
    )
    return bd.chart(
        ch,
        id="compare-sweep",
        caption=(
            f"Each panel one metric vs the offered {axis} (ordinal axis: points evenly spaced, not to scale; inf = all "
            "requests sent at once). One point per run."
        ),
    )


def request_views(page: Page) -> bd.Block:
    """Per-request distributions, time course and outcome shares (benchbook.pages.request_views)."""
    from benchbook.pages import request_views as rv

    return rv.section((r.id, r.config, r.run) for r in page.runs)


def notes(page: Page) -> bd.Block:
    rows = [{"Run": r.id, "Note": n} for r in page.runs for n in r.run.notes]
    rows += [{"Run": r.id, "Note": f"excluded: {e}"} for r in page.runs for e in r.run.exclusions]
    bd.record("notes", len(rows))
    if not rows:
        return bd.Block("")
    return bd.Block("<h2>What the readers interpreted</h2>" + str(bd.table(rows, id="compare-notes")))


def provenance(page: Page, parameters: dict[str, Any]) -> bd.Block:
    return bd.provenance(inputs=list(page.inputs), parameters=parameters)
