"""Sections of the compare page: benchmark result files compared like with like.

``notebooks/compare.ipynb`` is a parameters cell and one call per section. :func:`load` hands the
files and options to :func:`benchbook.analysis.resultset.build`, which decides everything the page
shows (identity, duplicates, comparability, verdicts, sweeps, SLOs, findings); each section here
formats one part of it as a display Block and records its values (``display.record``) for tests.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from benchbook.analysis.resultset import CompareFinding, Entry, ResultSet
from benchbook.analysis.stats import MIN_N_FOR_TEST
from benchbook.analysis.verdict import RULE_TEXT, STATE_TEXT
from benchbook.errors import InputError
from benchbook.numfmt import fmt_pct
from benchbook.pages import display as bd
from benchbook.pages import sections

THROUGHPUT = (
    ("output_throughput", "output tok/s"),
    ("request_throughput", "req/s"),
    ("total_token_throughput", "total tok/s"),
)
LATENCY = ("ttft", "tpot", "itl", "e2el")
LAT_NAME = {"ttft": "TTFT", "tpot": "TPOT", "itl": "ITL", "e2el": "E2E"}
STATE_MARK = {"result": "result", "noise": "noise", "cannot": "cannot"}
METRIC_NAME = {
    "output_throughput": "output tok/s",
    "request_throughput": "req/s",
    **{
        f"{st}_{m}_ms": f"{'p50' if st == 'median' else st} {LAT_NAME[m]} ms"
        for m in LATENCY
        for st in ("median", "p99")
    },
}


@dataclass
class Page:
    rs: ResultSet
    title: str
    window: Any = None
    engine_run: str | None = None
    engine_checks: list[tuple[str, list[Any]]] = field(default_factory=list)  # (run id, checks), from analysis
    inputs: list[str] = field(default_factory=list)  # every file read, for provenance
    todo: list[str] = field(default_factory=list)  # the campaign's open decisions (campaign.json "todo")
    audit: Any = None  # benchbook.analysis.audit.CampaignAudit of a campaign's results runs
    analysis: Any = None  # the campaign's analysis (CampaignAnalysis), for a campaign's compare page

    @property
    def runs(self) -> list[Entry]:
        return self.rs.entries

    @property
    def findings_box(self) -> Any:
        """The findings box (benchbook.findings.Findings): a campaign's one list, the same on every page
        of it; else the result set's own."""
        if self.analysis is not None:
            return self.analysis.campaign_findings()
        return self.rs.findings_box(self.audit)


def load(
    files: list[str],
    *,
    baseline: str = "",
    rule: str = "seed",
    title: str = "",
    labels: Mapping[str, str] | Iterable[str] = (),
    slo: Mapping[str, Any] | None = None,
    min_duration_s: float = 60.0,
    min_completed: int = 100,
    max_error_rate: float = 0.01,
    engine_before: str = "",
    engine_after: str = "",
    engine_run: str = "",
    campaign: str = "",
    preset: str = "",
) -> Page:
    """Read the files and decide the page (:func:`resultset.build`). ``labels``: ``{file: label}``
    or ``["FILE=LABEL"]``; ``slo``: ``{ttft_ms, tpot_ms, itl_ms, e2el_ms, percentile | attainment}``.
    ``engine_before``/``engine_after``: a ``/metrics`` pair for the window of ``engine_run`` (empty:
    the only run, else the first run of the baseline configuration). ``campaign``: a campaign folder of
    results runs, read instead of ``files`` (``analysis.results``): its result files, each run's arm,
    engine window and reconciliation. ``preset``: ``"smoke"`` (gates for a smoke run; every finding
    labelled smoke)."""
    inputs = None
    gates = {"min_duration_s": min_duration_s, "min_completed": min_completed, "max_error_rate": max_error_rate}
    engine_checks: list[tuple[str, list[Any]]] = []
    if campaign:  # the campaign's one analysis holds its result set (benchbook.analysis.campaign_analysis)
        from benchbook.analysis.campaign_analysis import analyse

        if files or engine_before or engine_after:
            raise InputError("parameters", "campaign", "give a campaign or files/engine_before/engine_after, not both")
        labels = dict(labels) if isinstance(labels, Mapping) else list(labels)
        opts = {"baseline": baseline, "labels": labels, "slo": slo, "preset": preset, **gates}
        an = analyse(campaign, rule=rule, results_options=opts)
        if an.results is None:
            raise InputError(f"{campaign}/campaign.json", "$.runs", 'no results run (harness "results") to compare')
        rs, inputs, engine_checks = an.results, an.results_inputs, an.results_engine_checks
        audit_, the_analysis = an.audit, an
        title = title or inputs.title
    else:
        from benchbook.analysis.resultset import build

        rs = build(files, baseline=baseline, rule=rule, labels=labels, slo=slo, preset=preset, **gates)
    page = Page(rs, title or f"Comparison of {len(rs.entries)} runs")
    page.inputs = (
        list(inputs.inputs)
        if inputs is not None
        else list(files) + [o for o in rs.overrides if not o.startswith("--label")]
    )
    if inputs is not None:
        page.engine_checks = engine_checks
        page.audit = audit_
        page.analysis = the_analysis
        page.todo = inputs.open_items()
    if engine_before or engine_after:
        if not (engine_before and engine_after):
            raise InputError("parameters", "engine_before", "give both engine_before and engine_after, or neither")
        ids = [e.id for e in rs.entries]
        if engine_run and engine_run not in ids:
            raise InputError("parameters", "engine_run", f"unknown run {engine_run!r}; runs: {', '.join(ids)}")
        page.engine_run = engine_run or (ids[0] if len(ids) == 1 else rs.config(rs.baseline).entries[0].id)
        page.window, checks = rs.engine_window(page.engine_run, engine_before, engine_after)
        page.engine_checks = [(page.engine_run, checks)]
        page.inputs += [engine_before, engine_after]
    return page


def _rate(v: Any) -> str:
    if v is None:
        return "—"
    return "inf" if isinstance(v, float) and math.isinf(v) else f"{v:g}"


def _json_rate(v: Any) -> Any:
    return "inf" if isinstance(v, float) and math.isinf(v) else v


def _n(x: Any, d: int = 1) -> str:
    return "—" if x is None else f"{x:,.{d}f}"


def _status(status: str) -> bd.Block:
    """A check's status as every check row prints it: ``✓ pass``, ``† warn``, ``✗ fail``."""
    return bd.status_mark(status)


def _section(anchor: str, title: str, body: str) -> bd.Block:
    return bd.Block(f'<section id="{anchor}"><h2>{bd.esc(title)}</h2>{body}</section>')


def _table_section(anchor: str, title: str, rows: list[dict[str, Any]], caption: str, after: Any = "") -> bd.Block:
    """A section holding one table (and ``after`` it, the lists its rows link to); the table's id is the
    section's anchor."""
    return _section(anchor, title, str(bd.table(rows, id=anchor, caption=caption)) + str(after))


# ---- sections ----------------------------------------------------------------------------------
def header(page: Page) -> bd.Block:
    rs = page.rs
    bd.record("title", page.title)
    bd.record("configurations", [c.label for c in rs.configs])
    bd.record("baseline", rs.baseline)
    bd.record("repeats", {c.label: len(c.entries) for c in rs.configs})
    bd.record("loads", {c.label: {p.shown: len(p.entries) for p in c.points} for c in rs.configs})
    bd.record("headlines", rs.headlines)
    bd.record("preset", rs.preset)
    bd.record("todo", page.todo)
    todo = ""
    if len(page.todo) == 1:
        todo = str(bd.text("Still to decide (campaign.json todo): {item}.", item=page.todo[0]))
    elif page.todo:  # one line above the findings; the items one click away, one per line
        items = bd.Block("<ul>" + "".join(f"<li>{bd.esc(t)}</li>" for t in page.todo) + "</ul>")
        todo = str(bd.collapsed(f"Still to decide (campaign.json todo): {len(page.todo)} items", items, id="todo"))
    if rs.preset == "smoke":
        g = rs.gate_params
        todo += str(
            bd.text(
                "Smoke preset: validity gates lowered to duration ≥ {d} s, completed ≥ {c}, error rate ≤ {e}. These runs "
                "check the set-up; every result on this page is smoke, not a measurement to publish.",
                d=f"{g['min_duration_s']:g}",
                c=g["min_completed"],
                e=f"{g['max_error_rate']:.0%}",
            )
        )
    n_read = sum(len(e.carried_by) for e in rs.entries)
    return bd.Block(
        str(bd.heading(page.title, 1))
        + todo
        + str(
            bd.text(
                "{n} run(s) ({r} read from {f} file(s); duplicates counted once) in {c} configuration(s) at {l} "
                "load(s); reference configuration: {b}.",
                n=len(rs.entries),
                r=n_read,
                f=len(rs.files),
                c=len(rs.configs),
                l=len({p.shown for c in rs.configs for p in c.points}),
                b=rs.baseline,
            )
        )
    )


_FINDING_MARK = {
    "headline": ("note", "at matched load"),
    "fail": ("fail", "failed gate"),
    "result": ("result", None),
    "cannot": ("cannot", None),
    "not comparable": ("note", "not comparable"),
    "saturation": ("note", "saturation"),
    "slo": ("note", "SLO"),
    "duplicate": ("note", "duplicate"),
}


def findings(page: Page) -> bd.Block:
    """What a reader needs first — failed checks, warnings by cause, results (regressions first), what
    could not be judged — and the rules the verdicts were made by: the analysis' one box (a campaign's
    is the same on every page of it). Records the result set's own list as ``findings`` for tests."""
    fs = [*_audit_failures(page), *page.rs.findings]
    bd.record("findings", [{"kind": f.kind, "text": f.text} for f in fs])
    return sections.findings_box(page.findings_box, "compare")


def how_to_read(page: Page) -> bd.Block:
    rs = page.rs
    reps = sorted({len(p.entries) for c in rs.configs for p in c.points})
    rule = RULE_TEXT["small-n"] + (
        "; under the strict rule the spread is replaced by its band, max(2 %, 2 × spread)"
        if rs.rule == "strict"
        else ""
    )
    # what the design allows, stated instead of a p-value it cannot reach (the result set's design notes)
    if page.analysis is not None:  # a campaign's page: generated from what the campaign holds
        guide = page.analysis.reading_guide("compare")
        return bd.how_to_read(
            n_per_cell=guide["n_per_cell"],
            warmup="as recorded by the benchmark tool; benchbook discards nothing on this page",
            noise_rule=guide["noise_rule"] + ". " + " ".join(rs.design_notes()),
            marks=("result", "noise", "cannot", "pass", "fail", "note"),
            extra=[
                *guide["extra"],
                "Ratios are candidate / reference configuration; for latencies a ratio below 1 is faster.",
            ],
        )
    return bd.how_to_read(
        n_per_cell=(
            "each run is one benchmark run, counted once however many files carried it; figures per run are the tool's own "
            "statistics over its requests. A configuration's cell at one load is the median over its repeats at that "
            "load, with their [min–max] (n = "
            + ", ".join(map(str, reps))
            + "). Runs, not requests, are the unit of replication."
        ),
        warmup="as recorded by the benchmark tool; benchbook discards nothing on this page",
        noise_rule=rule
        + f". With ≥ {MIN_N_FOR_TEST} runs per side a Mann–Whitney test and a bootstrap interval of the ratio of "
        "medians decide instead; with no repeats at all the verdict is 'cannot tell'. " + " ".join(rs.design_notes()),
        marks=("result", "noise", "cannot", "pass", "fail", "note"),
        extra=[
            "A configuration is everything the files say about the model, the dataset and the deployment (backend and "
            "version, tag/label/metadata such as --metadata arm=…, your --label, parallelism, hardware); the load "
            "(request rate, concurrency) is not part of it: each configuration is one curve over its loads, and runs of "
            "it at one load are repeats; see 'Configurations'.",
            "Configurations are judged against each other at matched load, only when model and dataset agree; the rest "
            "are shown side by side, 'not comparable'. Runs that failed a validity gate are shown, never judged.",
            "Ratios are candidate / reference configuration; for latencies a ratio below 1 is faster.",
        ],
    )


def configurations(page: Page) -> bd.Block:
    """Each configuration's identity (what the files say) and why its runs were grouped."""
    rs = page.rs
    rows = []
    below = sections.Below("compare-configurations")  # a long list of runs follows the table: a row stays short

    def runs(c: Any) -> Any:
        ids = [e.id for e in c.entries]
        if len(ids) <= 3:
            return ", ".join(ids)
        return bd.Block(
            f"{len(ids)} runs: "
            + below.link("listed below", f"{c.label}: its {len(ids)} runs", f"<p>{bd.esc(', '.join(ids))}</p>")
        )

    for c in rs.configs:
        rows.append(
            {
                "Configuration": c.label + (" (reference)" if c.label == rs.baseline else ""),
                "Runs": runs(c),
                "Loads (n)": _loads_text(c.points),
                "Why grouped": c.why,
                "Spread between repeats": ", ".join(f"{k} {fmt_pct(v)}" for k, v in c.spreads.items()) or "—",
                "Identity": "; ".join(
                    f"{f['field']}: {f['value']}" + (" [user]" if f["source"] == "user" else "")
                    for f in c.identity.as_rows()
                    if f["group"] != "load"
                ),
            }
        )
    bd.record("identities", rs.identity_rows())
    cap = (
        "Identity fields as read from the files (measured means are tokens per request from the run's totals; [user] marks "
        "a value from a benchbook-compare.yml or --label)."
    )
    if rs.overrides:
        cap += " User overrides read from: " + ", ".join(rs.overrides) + "."
    return _section(
        "compare-configurations",
        "Configurations",
        str(bd.table(rows, id="compare-configurations", caption=cap)) + str(below),
    )


def _loads_text(points) -> str:
    """``concurrency 1, 2, 4, 8 (n=2 each)``: a configuration's loads in a few words (one load kind named
    once, one n said once), ``concurrency 1 (2), 8 (1)`` where the n differ, ``concurrency 1 (2), rate 4 (1)``
    where the kinds do."""
    if not points:
        return "—"
    kinds = {p.shown.rsplit(" ", 1)[0] for p in points if " " in p.shown}
    ns = {len(p.entries) for p in points}
    if len(kinds) == 1 and all(" " in p.shown for p in points):
        values = ", ".join(p.shown.rsplit(" ", 1)[1] for p in points)
        text = f"{next(iter(kinds))} {values}"
    else:
        text = ", ".join(p.shown for p in points)
    if len(ns) == 1:
        n = next(iter(ns))
        return f"{text} (n={n}{' each' if len(points) > 1 else ''})"
    if len(kinds) == 1 and all(" " in p.shown for p in points):  # one load kind named once: concurrency 1 (2), 8 (1)
        return f"{next(iter(kinds))} " + ", ".join(f"{p.shown.rsplit(' ', 1)[1]} ({len(p.entries)})" for p in points)
    return ", ".join(f"{p.shown} ({len(p.entries)})" for p in points)


def duplicates(page: Page) -> bd.Block:
    rs = page.rs
    bd.record("duplicates", rs.duplicates)
    if not rs.duplicates:
        return _section(
            "compare-duplicates", "Duplicates", "<p>No run was read twice: every file entry is a distinct run.</p>"
        )
    rows = [
        {"Run (kept)": d["kept"], "Carried by": ", ".join(d["files"]), "Counted": "once", "Why the same run": d["why"]}
        for d in rs.duplicates
    ]
    return _table_section(
        "compare-duplicates",
        "Duplicates",
        rows,
        "The same run's figures in several files or formats, counted once (the copy with most detail is kept).",
    )


def pairings(page: Page) -> bd.Block:
    rs = page.rs
    rows = [
        {
            "Reference": p.reference,
            "Configuration": p.other,
            "Comparison": bd.mark("note", p.kind) if p.kind in ("not comparable", "no verdict") else p.kind,
            "Why": p.reason,
        }
        for p in rs.pairings
    ]
    bd.record("pairings", rs.pairing_rows())
    if not rows:
        return _section(
            "compare-pairings", "What is compared with what", "<p>Only one configuration: nothing to compare.</p>"
        )
    return _table_section(
        "compare-pairings",
        "What is compared with what",
        rows,
        (
            "verdicts: same model and dataset, the deployment differs — judged at every load both were run at; no "
            "verdict: no load in common; not comparable: model or dataset differ — figures side by side, no ratio."
        ),
    )


def runs_table(page: Page) -> bd.Block:
    rows = []
    for e in page.runs:
        c, s = e.run.config, e.run.summary
        rows.append(
            {
                "Run": e.id,
                "Format": e.run.format,
                "Configuration": e.config,
                "Rate": _rate(c.get("request_rate")),
                "Concurrency": c.get("max_concurrency") if c.get("max_concurrency") is not None else "—",
                "Completed": s.get("completed") if s.get("completed") is not None else "—",
                "Failed": s.get("failed") if s.get("failed") is not None else "—",
                "Duration s": _n(s.get("duration_s"), 2),
                "In tokens": s.get("total_input_tokens") or "—",
                "Out tokens": s.get("total_output_tokens") or "—",
                **{lab: _n(s.get(k)) for k, lab in THROUGHPUT},
                **_energy_cells(page, e.id),
            }
        )
    bd.record(
        "runs",
        [
            {
                "id": e.id,
                "config": e.config,
                "files": e.carried_by,
                "request_rate": _json_rate(e.run.config.get("request_rate")),
                **{
                    k: e.get(k)
                    for k in ("completed", "failed", "duration_s", "output_throughput", "request_throughput")
                },
            }
            for e in page.runs
        ],
    )
    return _table_section(
        "compare-runs",
        "Runs and throughput",
        rows,
        (
            "One row per run (duplicates counted once), as the file reports it; — where the file does not say. "
            "In/Out tokens are the run's totals (prompt and generation lengths come from its dataset). Formats: "
            + "; ".join(
                dict.fromkeys(f"{e.run.format} — {e.run.tool_version}" for e in page.runs if e.run.tool_version)
            )
            + "."
            if any(e.run.tool_version for e in page.runs)
            else "One row per run (duplicates counted once), as the file reports it; — where the file does not say. "
            "In/Out tokens are the run's totals (prompt and generation lengths come from its dataset)."
        ),
    )


def _energy_cells(page: Page, run: str) -> dict[str, str]:
    """J per output token and per request of a run where the campaign's audit measured any energy."""
    if page.audit is None or not any(x.joules is not None for x in page.audit.energy):
        return {}
    e = page.audit.energy_of(run)
    if e is None or e.joules is None:
        return {"J / output token": "not measured", "J / request": "not measured"}
    return {
        "J / output token": _n(e.j_per_token, 3),
        "J / request": _n(e.j_per_request, 1),
    }


def latency_table(page: Page) -> bd.Block:
    rows, rec = [], []
    for e in page.runs:
        row: dict[str, Any] = {"Run": e.id}
        for m in LATENCY:
            for st in ("mean", "median", "p99"):
                row[f"{LAT_NAME[m]} {st}"] = _n(e.get(f"{st}_{m}_ms"), 2)
        rows.append(row)
        rec.append(
            {"id": e.id, **{f"{st}_{m}_ms": e.get(f"{st}_{m}_ms") for m in LATENCY for st in ("mean", "median", "p99")}}
        )
    bd.record("latency", rec)
    return _table_section(
        "compare-latency",
        "Latency percentiles (ms)",
        rows,
        (
            "Milliseconds, per run, as computed by the benchmark tool over its successful requests (TPOT excludes the "
            "first token; ITL pools every inter-chunk gap)."
        ),
    )


def verdicts(page: Page) -> bd.Block:
    """Verdicts between comparable configurations, in three states, with the spread they used."""
    rs = page.rs
    bd.record("spreads", rs.spreads)
    bd.record("verdicts", rs.verdict_rows())
    if not rs.verdicts:
        return _section(
            "compare-verdicts",
            "Verdicts",
            str(
                bd.text(
                    "No two configurations here differ only in their deployment at the same model, dataset and load, so "
                    "there is nothing to judge; see 'What is compared with what'."
                )
            ),
        )
    out = []
    spread_rows = [
        {"Reference": ref, "Metric": k, "Spread between repeats": fmt_pct(v)}
        for ref, sp in rs.spreads.items()
        for k, v in sp.items()
    ]
    if spread_rows:
        out.append(
            str(
                bd.table(
                    spread_rows,
                    id="compare-spreads",
                    caption=(
                        "Run-to-run spread (max − min) / min between repeats of one configuration; per comparison, the "
                        "largest over its repeated configurations is used."
                    ),
                )
            )
        )
    else:
        out.append(str(bd.text("{note}", note=rs.spread_note())))
    pairs: dict[tuple[str, str, str], list[Any]] = {}
    for v in rs.verdicts:
        pairs.setdefault((v.baseline, v.candidate, v.load), []).append(v)
    cannot = {k: vs for k, vs in pairs.items() if all(v.judgement.state == "cannot" for v in vs)}
    if cannot:
        # one row per pair: the ratios; every row's verdict is "cannot tell", and its reason is said once
        # below for the rows it applies to (a verdict and a prose column per row pushed the table past
        # its frame)
        rows = [
            {
                "Reference": b,
                "Configuration": c,
                "At": ld,
                **{
                    METRIC_NAME.get(v.metric, v.metric): f"{v.candidate_cell.fmt(2)} ({v.judgement.ratio:.3f}x)"
                    for v in vs
                },
            }
            for (b, c, ld), vs in cannot.items()
        ]
        why: dict[str, list[str]] = {}
        for (b, c, ld), vs in cannot.items():
            reason = "; ".join(dict.fromkeys(rs.short_why(v.judgement) for v in vs))
            why.setdefault(reason, []).append(f"{c} vs {b} at {ld}")
        out.append(
            str(
                bd.table(
                    rows,
                    id="compare-cannot-tell",
                    caption="Cannot tell — no verdict for these rows, for the reasons listed below the table. Each "
                    "cell is the configuration's median with its ratio to the reference.",
                )
            )
            + "<ul>"
            + "".join(
                f"<li>{bd.mark('cannot')} {bd.esc('; '.join(where))}: {bd.esc(reason)}</li>"
                for reason, where in why.items()
            )
            + "</ul>"
            # the engine's figures beside each row (analysis.evidence), listed: a column would not fit
            + "".join(
                f"<li>{bd.esc(f'{c} vs {b} at {ld}')} — engine: {bd.esc(vs[0].evidence)}</li>"
                for (b, c, ld), vs in cannot.items()
                if vs[0].evidence
            ).join(("<ul>", "</ul>") if any(vs[0].evidence for vs in cannot.values()) else ("", ""))
        )
    rows = [
        {
            "Reference": v.baseline,
            "Configuration": v.candidate,
            "At": v.load,
            "Metric": METRIC_NAME.get(v.metric, v.metric),
            "Reference value": v.baseline_cell.fmt(2),
            "Value": v.candidate_cell.fmt(2),
            "Ratio": f"{v.judgement.ratio:.3f}x",
            "Verdict": bd.mark(STATE_MARK[v.judgement.state], STATE_TEXT[v.judgement.state]),
            "Why": v.judgement.why,
            "Evidence (engine)": v.evidence or "—",
        }
        for k, vs in pairs.items()
        if k not in cannot
        for v in vs
    ]
    if rows:
        rows, note = sections.said_once(rows, "Why")  # a reason every row shares is said once, under the table
        last: dict[tuple, Any] = {}  # the engine's figures of one pair at one load: on its first row only
        for row in rows:
            key, ev = (row["Reference"], row["Configuration"], row["At"]), row.get("Evidence (engine)")
            if key in last and last[key] == ev:
                row["Evidence (engine)"] = "〃 (as above)"
            else:
                last[key] = ev
        out.append(
            str(
                bd.table(
                    rows,
                    id="compare-verdicts",
                    caption="Configuration vs its reference at matched load, median (min–max) over the repeats at that "
                    "load; ratio = configuration / reference.",
                    note=note or None,
                )
            )
        )
    return _section("compare-verdicts", "Verdicts", "".join(out))


def not_comparable(page: Page) -> bd.Block:
    """Configurations that may not be compared, side by side with their reference: figures, no ratio."""
    rs = page.rs
    pairs = [p for p in rs.pairings if p.kind == "not comparable"]
    bd.record("not_comparable", [{"reference": p.reference, "other": p.other, "reason": p.reason} for p in pairs])
    if not pairs:
        return bd.Block("")
    rows = []
    for p in pairs:
        for lab in (p.reference, p.other):
            c = rs.config(lab)
            row: dict[str, Any] = {"Configuration": lab, "n": len(c.entries)}
            for k, name in (*THROUGHPUT[:2], ("median_ttft_ms", "median TTFT ms"), ("median_tpot_ms", "median TPOT ms"),
                            ("median_e2el_ms", "median E2E ms")):  # fmt: skip
                cell = rs.config_cell(lab, k)
                row[name] = cell.fmt(2) if cell is not None else "—"
            row["Why no verdict"] = p.reason if lab == p.other else "reference"
            rows.append(row)
    return _table_section(
        "compare-not-comparable",
        "Side by side, not comparable",
        rows,
        "Figures of configurations whose model or dataset differ, next to each other; no ratio, no verdict.",
    )


def sweeps(page: Page) -> bd.Block:
    """Per sweep: the points table, latency vs achieved throughput, offered vs achieved with the
    saturation point, and the per-GPU frontier where the GPU count is known."""
    rs = page.rs
    bd.record("sweeps", rs.sweep_rows())
    if not rs.sweeps:
        return bd.Block("")
    out = []
    for i, sw in enumerate(rs.sweeps):
        out.append(f"<h3>{bd.esc(sw.series)}: {bd.esc(sw.axis)} curve</h3>")
        sat = (
            f"{sw.axis} {sw.saturation}"
            if sw.saturation
            else "; ".join(sw.notes)
            if sw.notes
            else "none found at the loads tested"
        )
        out.append(str(bd.text("Saturation point: {s}.", s=sat)))
        rows = [
            {
                f"Offered {sw.axis}": p.load_shown,
                "Runs": ", ".join(p.runs) or p.run_id,
                "n": p.n,
                "Achieved req/s": _band(p, "request_throughput", p.achieved_req_s, 3),
                "Send-window req/s": _n(p.send_rate, 3),
                "Output tok/s": _band(p, "output_throughput", p.output_tok_s, 1),
                **{
                    f"{LAT_NAME[m]} p50 / p99 ms": f"{_n(p.latency.get(f'median_{m}_ms'), 1)} / {_n(p.latency.get(f'p99_{m}_ms'), 1)}"
                    for m in LATENCY
                },
                "Saturated": bd.mark("note", "saturated") if p.saturated else "no",
                "Valid": bd.mark("pass", "valid") if p.valid else bd.mark("fail", "invalid"),
            }
            for p in sw.points
        ]
        why = [
            f"<li>{bd.esc(sw.axis)} {bd.esc(p.load_shown)}: "
            + bd.esc(
                "; ".join(
                    x
                    for x in (
                        f"saturated — {p.saturation_why}" if p.saturated else "",
                        f"invalid — {p.invalid_why}" if not p.valid else "",
                    )
                    if x
                )
            )  # fmt: skip
            + "</li>"
            for p in sw.points
            if p.saturated or not p.valid
        ]
        out.append(
            str(
                bd.table(
                    rows,
                    id=f"compare-sweep-{i}",
                    caption=(
                        "One row per load, in increasing order: the median over its repeats with [min–max] when n > 1. "
                        "Send-window rate = completed / (duration − mean E2E): the achieved rate without the drain of the "
                        "last requests. Invalid points failed a validity gate (see the checks) and are never used for "
                        "saturation."
                    ),
                )
            )
        )
        if why:
            out.append(f'<ul class="bb-sweep-why">{"".join(why)}</ul>')
        out.extend(str(b) for b in _sweep_charts(sw, i))
    if len(rs.sweeps) > 1:
        both = _latency_chart(
            [(sw.series, sw.points) for sw in rs.sweeps],
            "compare-sweeps-latency",
            "Every curve on one set of axes: latency against achieved request rate, one line per configuration (dashed: p99).",
        )
        if both is not None:
            out.append("<h3>All configurations</h3>" + str(both))
    return _section("compare-sweeps", "Curves", "".join(out))


def _band(p: Any, key: str, median: float | None, d: int) -> str:
    b = p.band(key)
    if median is None:
        return "—"
    if b is None or p.n < 2 or b[0] == b[1]:
        return _n(median, d)
    return f"{_n(median, d)} [{_n(b[0], d)}–{_n(b[1], d)}]"


_VALIDITY_DOMAIN = ["valid", "invalid"]


def _validity() -> Any:
    import altair as alt

    return alt.Shape("validity:N", title="point", scale=alt.Scale(domain=_VALIDITY_DOMAIN, range=["circle", "cross"]))


def _latency_chart(series: list[tuple[str, list[Any]]], id: str, caption: str) -> bd.Block | None:
    """p50 and p99 of TTFT, TPOT, ITL and E2E against achieved req/s, one panel per metric; one line
    per statistic for one series, one line per series (dashed p99) for several."""
    import altair as alt
    import polars as pl

    rows = [
        {
            "series": name,
            "metric": f"{LAT_NAME[m]} ms",
            "stat": label,
            "x": p.achieved_req_s,
            "y": p.latency.get(f"{st}_{m}_ms"),
            "validity": "valid" if p.valid else "invalid",
        }
        for name, points in series
        for p in points
        for m in LATENCY
        for st, label in (("median", "p50"), ("p99", "p99"))
        if p.latency.get(f"{st}_{m}_ms") is not None and p.achieved_req_s is not None
    ]
    if not rows:
        return None
    df = pl.DataFrame(rows)
    if len(series) == 1:
        enc: dict[str, Any] = {"color": alt.Color("stat:N", title="statistic")}
    else:
        enc = {
            "color": alt.Color("series:N", title="series"),
            "strokeDash": alt.StrokeDash("stat:N", title="statistic"),
        }
    ch = (
        (
            alt.Chart(df).mark_line().encode(x=alt.X("x:Q", title="achieved req/s"), y=alt.Y("y:Q", title=None), **enc)
            + alt.Chart(df)
            .mark_point(filled=True, size=60)
            .encode(x="x:Q", y="y:Q", color=enc["color"], shape=_validity())
        )
        .properties(width=220, height=150)
        .facet(facet=alt.Facet("metric:N", title=None, sort=[f"{LAT_NAME[m]} ms" for m in LATENCY]), columns=4)
        .resolve_scale(y="independent")
    )
    return bd.chart(ch, id=id, caption=caption)


def _sweep_charts(sw: Any, i: int) -> list[bd.Block]:
    import altair as alt
    import polars as pl

    validity = _validity()
    blocks = []
    lat = _latency_chart(
        [(sw.series, sw.points)],
        f"compare-sweep-latency-{i}",
        "Latency (p50 and p99) against achieved request rate, one point per run; crosses failed a validity gate.",
    )
    if lat is not None:
        blocks.append(lat)
    if sw.kind == "load":
        pts = [
            {
                "x": p.load if p.load is not None and math.isfinite(p.load) else None,
                "load": p.load_shown,
                "y": p.achieved_req_s,
                "state": "saturated" if p.saturated else "keeps up",
                "validity": "valid" if p.valid else "invalid",
            }
            for p in sw.points
            if p.achieved_req_s is not None
        ]
        if pts:
            df = pl.DataFrame(pts)
            order = [p.load_shown for p in sw.points]
            base = alt.Chart(df).encode(x=alt.X("load:O", title=f"offered {sw.axis}", sort=order))
            offered = df.filter(pl.col("x").is_not_null()) if sw.axis == "request rate" else df.clear()
            ch = (
                alt.Chart(offered)
                .mark_tick(color="#a0aec0", thickness=2, size=18)
                .encode(x=alt.X("load:O", sort=order), y=alt.Y("x:Q"))
                + base.mark_line(color="#718096").encode(y=alt.Y("y:Q", title="achieved req/s (grey ticks: offered)"))
                + base.mark_point(filled=True, size=90).encode(
                    y="y:Q",
                    color=alt.Color(
                        "state:N",
                        title="load",
                        scale=alt.Scale(domain=["keeps up", "saturated"], range=["#2f855a", "#c53030"]),
                    ),
                    shape=validity,
                )
            ).properties(width=360, height=200)
            blocks.append(
                bd.chart(
                    ch,
                    id=f"compare-sweep-offered-{i}",
                    caption=(
                        f"Achieved request rate per offered {sw.axis} (ordinal axis: evenly spaced, inf = every request at once); "
                        "red points are saturated (achieved behind offered, or latency rising without throughput)."
                    ),
                )
            )
    front = [
        {"x": p.per_user_tok_s, "y": p.per_gpu_tok_s, "load": p.load_shown}
        for p in sw.points
        if p.per_user_tok_s is not None and p.per_gpu_tok_s is not None
    ]
    if front:
        df = pl.DataFrame(front)
        ch = (
            alt.Chart(df)
            .mark_line(point=True)
            .encode(
                x=alt.X("x:Q", title="tokens/s per user (1000 / median TPOT)"),
                y=alt.Y("y:Q", title="output tokens/s per GPU"),
                order="x:Q",
            )
            + alt.Chart(df).mark_text(dy=-8, fontSize=10).encode(x="x:Q", y="y:Q", text="load:N")
        ).properties(width=360, height=220)
        blocks.append(
            bd.chart(
                ch,
                id=f"compare-sweep-frontier-{i}",
                caption="Throughput per GPU against per-user token rate, labelled with the offered load: the frontier.",
            )
        )
    return blocks


def slo_section(page: Page) -> bd.Block:
    rs = page.rs
    if rs.slo is None:
        bd.record("slo", None)
        return bd.Block("")
    rec_runs = {
        k: {
            "records": v.records,
            "attainment": v.attainment,
            "good": v.good,
            "sent": v.sent,
            "request_goodput": v.request_goodput,
            "token_goodput": v.token_goodput,
            "percentiles": v.percentiles,
            "percentile_source": v.percentile_source,
            "meets": v.meets,
            "why": v.why,
        }
        for k, v in rs.slo_runs.items()
    }
    highest = [
        {"series": s, "status": h.status, "achieved_req_s": h.achieved_req_s, "offered": h.offered, "text": h.text}
        for s, h in rs.slo_highest
    ]
    bd.record("slo", {"slo": rs.slo.describe(), "runs": rec_runs, "highest": highest})
    rows = []
    for e in rs.entries:
        v = rs.slo_runs[e.id]
        rows.append(
            {
                "Run": e.id,
                "Attainment": "unknown" if v.attainment is None else f"{v.attainment:.1%} ({v.good}/{v.sent})",
                "Request goodput req/s": _n(v.request_goodput, 3),
                "Token goodput tok/s": _n(v.token_goodput, 1),
                **{f"P{rs.slo.target_pct:g} {k[:-3].upper()} ms": _n(x, 1) for k, x in v.percentiles.items()},
                "Meets the SLO": bd.mark("pass", "met")
                if v.meets
                else bd.mark("fail", "missed")
                if v.meets is False
                else bd.mark("cannot"),
                "Why": v.why,
            }
        )
    out = [
        str(bd.text("SLO: {s} (all limits must hold together for a request to count).", s=rs.slo.describe())),
        str(
            bd.table(
                rows,
                id="compare-slo",
                caption=(
                    "Attainment = requests meeting every limit / requests sent; goodput = those requests (or their output "
                    "tokens) per second of the run. 'unknown' where the file has no complete per-request records: then "
                    "only the file's percentiles are held against the limits."
                ),
            )
        ),
    ]
    if highest:
        out.append(
            str(
                bd.table(
                    [
                        {"Configuration (curve)": h["series"], "Highest load meeting the SLO": h["text"]}
                        for h in highest
                    ],
                    id="compare-slo-highest",
                    caption="Interpolated values are marked so; they are linear between the two bracketing runs.",
                )
            )
        )
    return _section("compare-slo", "SLO attainment and goodput", "".join(out))


def checks(page: Page) -> bd.Block:
    rec = page.rs.check_rows(page.engine_checks, page.runs)
    rows = [{"Run": r["run"], "Check": r["name"], "Status": _status(r["status"]), "Detail": r["detail"]} for r in rec]
    below = sections.Below("compare-checks")  # each run's own words after the table: a row stays short
    rows = sections.fold_rows(rows, "Run", "Detail", merge=True, below=below)  # said once: one row per check
    bd.record("checks", rec)
    p = page.rs.gate_params
    return _table_section(
        "compare-checks",
        "Validity gates and reconciliation",
        rows,
        (
            f"Gates (parameters): duration ≥ {p['min_duration_s']:g} s, completed ≥ {p['min_completed']}, error rate ≤ "
            f"{p['max_error_rate']:.2%}; warn means the check could not be made. Engine checks need a before/after "
            "/metrics pair; the client's model must name the engine series compared with it."
        ),
        below,
    )


def _audit_failures(page: Page) -> list[CompareFinding]:
    """The audit's failed checks (preemption, token accounting, a figure beyond its limit) as findings."""
    from benchbook.pages import audit_section

    if page.audit is None:
        return []
    return [CompareFinding("fail", t, "sec-" + s) for t, s in audit_section.failed_lines(page.audit)]


def audit(page: Page) -> bd.Block:
    """What could make the figures lie — prefix cache, preemption, queueing, tokens — the physical limit
    beside the figures and the energy per run (:mod:`benchbook.pages.audit_section`)."""
    from benchbook.pages import audit_section

    return audit_section.section(page.audit, with_checks=True)


def request_views(page: Page) -> bd.Block:
    """Per-request distributions, time course and outcome shares (benchbook.pages.request_views)."""
    from benchbook.pages import request_views as rv

    return rv.section(page.rs.request_views())


def notes(page: Page) -> bd.Block:
    rows = [{"Run": e.id, "Note": n} for e in page.runs for n in e.run.notes]
    rows += [{"Run": e.id, "Note": f"excluded: {x}"} for e in page.runs for x in e.run.exclusions]
    bd.record("notes", len(rows))
    if not rows:
        return bd.Block("")
    rows = sections.fold_rows(rows, "Run")  # said once: a note every run shares is one row naming them
    return _section("compare-notes", "What the readers interpreted", str(bd.table(rows, id="compare-notes")))


def provenance(page: Page, parameters: dict[str, Any]) -> bd.Block:
    return bd.provenance(inputs=list(page.inputs), parameters=parameters)


def pd_deployment(page: Page, link_gb_s: float | None = None) -> bd.Block:
    """PD deployment figures and checks of runs read from llm-d Benchmark Reports
    (benchbook.pages.pd_report_section); empty when no run states prefill and decode roles."""
    from benchbook.pages import pd_report_section

    return pd_report_section.section(page.rs.pd_deployment(link_gb_s), link_gb_s=link_gb_s)
