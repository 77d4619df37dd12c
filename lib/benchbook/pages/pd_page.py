"""Sections of the PD (prefill/decode disaggregated) page, each returned as a display Block.

``notebooks/pd.ipynb`` is a parameters cell and one call per section, like the baseline page. Every
figure comes from the campaign's one analysis (:func:`benchbook.analysis.campaign_analysis.analyse`, its ``pd``
part computed by :func:`benchbook.analysis.disaggregation.analyse`: cells, comparisons, checks, exclusions, admission,
batch composition) and the admission simulator :mod:`benchbook.analysis.admission`; every caveat sentence is
generated from what the inputs contain. Each section records what it shows with ``bd.record`` so
tests assert on ``pd.values.json``, not on HTML.

A campaign of llm-d Benchmark Reports (results runs whose reports state prefill and decode roles,
``benchbook init`` of the report files) gets this page too: :func:`deployment` shows what
:mod:`benchbook.analysis.pd_report` decided (GPUs per role, per-GPU throughput per role and per
cluster, KV transfer against the link ``link_gb_s``, PD path exercised). Sections that need the
benchmark tool's PD summaries (``pd.json``) are left out when the campaign has none.

This module holds the opening (header, findings, how to read, scope, deployment, configuration) and the
closing sections (window checks, checks, value marks, caveats, exclusions, provenance), and is the one
module the notebook imports: :class:`~benchbook.pages.pd_view.Page` and :func:`load` come from
:mod:`benchbook.pages.pd_view`, the measured figures' sections from :mod:`benchbook.pages.pd_measures`,
the simulator's from :mod:`benchbook.pages.pd_seam`.
"""

from __future__ import annotations

from typing import Any

from benchbook.analysis.pd_report import NO_LINK
from benchbook.pages import display as bd
from benchbook.pages import pd_view as pv
from benchbook.pages import sections
from benchbook.pages.pd_measures import acceptance, comparisons, lifecycle, littles_law, throughput
from benchbook.pages.pd_report_section import block as pd_report_section_block
from benchbook.pages.pd_seam import admission, batch_seam
from benchbook.pages.pd_view import SEAM_BATCHES, SOURCE_MARK, Page, load

__all__ = [  # the sections notebooks/pd.ipynb calls, in page order, and what it reads
    "Page",
    "load",
    "SEAM_BATCHES",
    "SOURCE_MARK",
    "header",
    "findings",
    "how_to_read",
    "scope",
    "deployment",
    "configuration",
    "lifecycle",
    "throughput",
    "comparisons",
    "littles_law",
    "acceptance",
    "batch_seam",
    "admission",
    "window_checks",
    "checks",
    "marks",
    "caveats",
    "exclusions",
    "provenance",
]


# ---- opening -------------------------------------------------------------------------------------
def header(page: Page) -> bd.Block:
    m = page.whole.manifest if page.camp is None else page.camp.manifest
    prov = m.get("provenance") if page.camp is None else page.camp.provenance
    banner = {
        "transcribed": "Figures TRANSCRIBED from a published page, not measured by this tool.",
        "reconstructed": "These raw files were RECONSTRUCTED from published tables, not measured.",
        "synthetic": "SYNTHETIC data — not a measurement.",
    }.get(prov)
    parts = [str(bd.heading(page.title, 1)), str(bd.text("{q}", q=m.get("question", "")))]
    if banner:
        parts.append(f'<p class="bb-banner"><strong>{bd.esc(banner)}</strong></p>')
    bd.record("title", page.title)
    bd.record("provenance", prov)
    bd.record("baseline_arm", page.baseline_arm)
    parts.append(str(findings(page)))
    return bd.Block("".join(parts))


def findings(page: Page) -> bd.Block:
    """The campaign's findings box (the same on every page of it): failed checks, results (worst
    first), and the gains it could not judge."""
    if page.analysis is None:  # a Page built by hand (tests): the PD summaries' own box
        return sections.findings_box(page.report.findings())
    return sections.findings_box(page.analysis.campaign_findings(), "pd")


def how_to_read(page: Page) -> bd.Block:
    if pv.empty(page):
        bd.record("runs_per_arm_and_load", [])
        return bd.how_to_read(
            n_per_cell="one Benchmark Report per run: its figures are the report's aggregates, not medians over runs.",
            warmup="the report's aggregates span the run (stage) as the harness measured it; nothing is discarded.",
            noise_rule=(
                "no comparison is made on this page: per-GPU figures and checks per run only (compare runs on the "
                "compare page)."
            ),
            marks=("pass", "note", "fail"),
            extra=[
                "Per-GPU throughput per role = input tokens/s ÷ prefill GPUs and output tokens/s ÷ decode GPUs; per "
                "cluster = output (or total) tokens/s ÷ all GPUs.",
                "KV transfer: bytes and seconds per request as the report states them; the achieved rate "
                "(bytes ÷ seconds, GB/s) above the link rate (link_gb_s) fails; the default is "
                f"'{NO_LINK}'.",
            ],
        )
    ns = page.report.runs_per_arm_and_load  # counted by the analysis, per arm under one load
    req = (
        "more than the run's concurrency (e.g. C128 → more than 128 requests)"
        if page.min_window_requests is None
        else f"more than {page.min_window_requests:g} requests"
    )
    bd.record("runs_per_arm_and_load", ns)
    bd.record("window_rule", {"min_window_s": page.min_window_s, "min_window_requests": page.min_window_requests})
    return bd.how_to_read(
        n_per_cell=(
            f"n={'/'.join(map(str, ns))} run(s) per arm and load. "
            + (
                "With one run per arm every gain is unreplicated: the run-to-run spread was not measured, so "
                "no difference is called a result and no range can be drawn."
                if ns == [1]
                else "Cells are medians with [min–max] over runs."
            )
        ),
        warmup=(
            "whole = the benchmark's whole run, start to end; native = the steady window the benchmark tool "
            "(AISBench) selects itself. The two windows answer the same question with different time spans; "
            "figures are compared only within one window and one load."
        ),
        noise_rule=(
            f"a native window is usable only if it lasts at least {page.min_window_s:g} s and holds {req}; "
            "otherwise its figures are marked not a result. Gains are candidate / baseline − 1 between runs "
            "under the same load only (a 320-request screen is never compared with a 640-request run)."
        ),
        marks=("pass", "note", "fail", "noise", "excluded"),
        extra=[
            "Per-card throughput = system output token throughput / (prefill cards + decode cards).",
            "Value marks: 'recorded' is a figure as the tool printed it; 'derived' was computed from other "
            "published figures; 'approximate' was printed rounded; 'reported' is a count stated without its "
            "underlying lines. The marks table below gives the reason for each.",
            "Simulator batch counts replay the prefill admission rule on the CPU; they explain the mechanism and "
            "are not a performance result.",
        ],
    )


def scope(page: Page) -> bd.Block:
    m = page.whole.manifest if page.camp is None else page.camp.manifest
    return sections.scope(m.get("scope", {}))


def deployment(page: Page) -> bd.Block:
    """PD deployments stated by llm-d Benchmark Reports (analysis.pd_report, made once by the
    campaign's analysis): GPUs per role, per-GPU throughput per role and per cluster, KV transfer
    against the link, PD path exercised; with what each report's reader noted. Empty without one."""
    bd.record("pd_deployment", {"link_gb_s": page.link_gb_s, "runs": [r.as_dict() for r in page.deployment]})
    if not page.deployment:
        return bd.Block("")
    notes = [{"Run": r.run_id, "Note": n} for r in page.deployment for n in r.notes]
    extra = (
        str(bd.table(notes, id="pd-deployment-notes", caption="What the figures could not include.")) if notes else ""
    )
    return bd.Block(str(pd_report_section_block(page.deployment, page.link_gb_s)) + extra)


def configuration(page: Page) -> bd.Block:
    if pv.empty(page):
        return bd.Block("")
    rows = []
    for name, a in page.camp.arms.items():
        rows.append(
            {
                "Arm": name,
                "Label": a.label,
                "Role": a.role or "—",
                "Environment": a.environment,
                "Cards (P + D)": f"{a.prefill_cards} + {a.decode_cards} = {a.cards}",
                "Global chunk / DP": f"{a.global_chunked_prefill_size} / {a.dp}",
                "Per-DP chunk": a.chunk_size,
                "Page": a.page_size,
                "Prefill max requests": a.prefill_max_requests,
            }
        )
    runs = [
        {
            "Run": r.id,
            "Arm": r.arm,
            "Purpose": r.purpose or "—",
            "Load": pv.load_text(page, r),
            "Prompt": f"{r.load.get('prompt_class') or '?'} ({page.camp.prompt_tokens(r.load.get('prompt_class')) or '?'} tokens)",
            "Records": "yes" if r.requests_file else "no",
            "Prefill log": "yes" if r.prefill_log else "no",
        }
        for r in pv.runs_by_purpose(page)
    ]
    return bd.Block(
        "<h2>Configuration</h2>"
        + str(
            bd.table(
                rows,
                id="pd-arms",
                caption=(
                    "Arms and their prefill scheduler settings. Per-DP chunk = global chunked-prefill size / DP: the token "
                    "budget of one prefill batch."
                ),
            )
        )
        + str(bd.table(runs, id="pd-runs", caption="Runs: one row per benchmark run, with its load."))
    )


# ---- checks, marks, caveats ----------------------------------------------------------------------
def window_checks(page: Page) -> bd.Block:
    if pv.empty(page):
        return bd.Block("")
    win = [c for c in page.report.checks if c.get("kind") == "window validity"]
    bd.record("window_checks", win)
    rows = [{"Run": c["run"], "Status": pv.status_mark(c["status"]), "Detail": c["detail"]} for c in win]
    rows += [
        {"Run": r.id, "Status": bd.mark("note", "no native window"), "Detail": "the native window was not recorded"}
        for r in pv.runs_by_purpose(page)
        if "native" not in r.windows
    ]
    return bd.Block(
        str(bd.heading("Window validity", id="windows"))
        + str(
            bd.table(
                rows,
                id="pd-windows",
                caption=(
                    f"A native window must last ≥ {page.min_window_s:g} s and hold more requests than the concurrency. A figure "
                    "from a failing window is shown but not used as a result."
                ),
            )
        )
    )


def checks(page: Page) -> bd.Block:
    if pv.empty(page):  # the Benchmark Reports' deployment checks are the page's checks
        rows = [
            {"Check": f"{r.run_id}: {c.name}", "Status": pv.status_mark(c.status), "Detail": c.detail}
            for r in page.deployment
            for c in r.checks
        ]
        bd.record("checks", [{"run": r.run_id, **c.as_dict()} for r in page.deployment for c in r.checks])
        passed = [c.status == "pass" for r in page.deployment for c in r.checks]
        return bd.Block(
            str(bd.heading("All checks", id="checks")) + str(sections.checks_table(rows, passed, id="pd-checks"))
        )
    bd.record("checks", page.report.checks)
    rows = [
        {"Check": c["name"], "Status": pv.status_mark(c["status"]), "Detail": c["detail"]} for c in page.report.checks
    ]
    return bd.Block(
        str(bd.heading("All checks", id="checks"))
        + str(sections.checks_table(rows, [c["status"] == "pass" for c in page.report.checks], id="pd-checks"))
    )


def marks(page: Page) -> bd.Block:
    if pv.empty(page):
        return bd.Block("")
    rows = []
    for r in pv.runs_by_purpose(page):
        for kind, d in (("derived", r.derived), ("approximate", r.approximate)):
            for path, why in sorted(d.items()):
                rows.append({"run": r.id, "value": path, "mark": kind, "how": why})
        for name, rep in sorted(r.reported.items()):
            rows.append(
                {
                    "run": r.id,
                    "value": f"reported.{name}",
                    "mark": "reported",
                    "how": rep.get("source", "") if isinstance(rep, dict) else str(rep),
                }
            )
    bd.record("marks", rows)
    if not rows:
        return bd.Block("<h2>Value marks</h2><p>Every figure is recorded as the tool printed it.</p>")
    table = [
        {"Run": x["run"], "Value": x["value"], "Mark": bd.mark("note", x["mark"]), "How it was obtained": x["how"]}
        for x in rows
    ]
    return bd.Block(
        "<h2>Value marks: reported vs derived</h2>"
        + str(
            bd.collapsed(
                f"{len(rows)} figures are not values as printed by the tool: show how each was obtained",
                bd.table(
                    table,
                    id="pd-marks",
                    caption=(
                        "Every figure that is not a value as printed by the tool, with how it was obtained. Cells computed "
                        "from these carry the same mark."
                    ),
                ),
            )
        )
    )


def caveats(page: Page) -> bd.Block:
    if pv.empty(page):
        return bd.Block("")
    lines = page.report.caveats  # decided by the analysis (disaggregation.caveats)
    bd.record("caveats", lines)
    return bd.Block("<h2>Caveats from the inputs</h2><ol>" + "".join(f"<li>{bd.esc(x)}</li>" for x in lines) + "</ol>")


def exclusions(page: Page) -> bd.Block:
    if pv.empty(page):
        return bd.Block("")
    return sections.exclusions(
        page.camp.root,
        ((e["file"], e["sample"], e["reason"]) for e in page.report.exclusions),
        id="pd-exclusions",
        where="Where",
        none="No record or log line was excluded.",
        caption="Every record or log line left out, with the reason. Nothing is dropped silently.",
    )


def provenance(page: Page, parameters: dict[str, Any]) -> bd.Block:
    if page.camp is None:
        w = page.whole
        return sections.provenance(w.input_files(), parameters, readme=w.root / "README.md", root=w.root)
    return sections.provenance(
        page.camp.input_files(), parameters, readme=page.camp.root / "README.md", root=page.camp.root
    )
