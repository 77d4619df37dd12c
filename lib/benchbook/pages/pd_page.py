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
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from benchbook.analysis.disaggregation import SEAM_BATCHES as _SEAM_BATCHES
from benchbook.analysis.disaggregation import PDReport
from benchbook.analysis.pd_report import NO_LINK
from benchbook.analysis.pd_report import PDReport as PDDeployment
from benchbook.analysis.verdict import State
from benchbook.errors import InputError
from benchbook.ingest.pd_runs import PDCampaign
from benchbook.pages import display as bd
from benchbook.pages import sections
from benchbook.pages.pd_report_section import block as pd_report_section_block

SEAM_BATCHES = _SEAM_BATCHES
# a verdict's mark on this page, from its typed state (never from its words)
_STATE_MARK = {
    State.IMPROVEMENT: "result",
    State.REGRESSION: "result",
    State.WITHIN_NOISE: "noise",
    State.SAME_WITHIN_MARGIN: "noise",
    State.CANNOT_TELL: "noise",
    State.NOT_COMPARABLE: "fail",
}
SOURCE_MARK = {
    "recorded": ("pass", "recorded"),
    "derived": ("note", "derived"),
    "approximate": ("note", "approximate"),
    "reported": ("note", "reported"),
}


@dataclass
class Page:
    camp: PDCampaign | None  # None: no pd.json runs (a campaign of Benchmark Reports)
    report: PDReport | None
    baseline_arm: str
    min_window_s: float
    min_window_requests: float | None
    title: str
    notes: list[str] = field(default_factory=list)
    # PD deployments stated by Benchmark Reports (CampaignAnalysis.pd_deployment) and the link rate
    deployment: list[PDDeployment] = field(default_factory=list)
    link_gb_s: float | None = None
    analysis: Any = None  # the campaign's CampaignAnalysis
    whole: Any = None  # the loaded Campaign


def _empty(page: Page) -> bool:
    """No pd.json runs: the sections built on the benchmark tool's PD summaries are left out."""
    return page.report is None


def load(
    campaign: str,
    *,
    baseline_arm: str = "",
    min_window_s: float = 60.0,
    min_window_requests: float = -1,
    title: str = "",
    link_gb_s: float = 0.0,
) -> Page:
    """Load a PD campaign and compute everything the page shows. ``min_window_requests`` < 0 means
    "more than the run's concurrency"; an empty ``baseline_arm`` uses the manifest's baseline role;
    ``link_gb_s`` is the KV-transfer link rate in GB/s (0: not judged without a link rate)."""
    from benchbook.analysis.campaign_analysis import analyse
    from benchbook.ingest.campaign import load_campaign

    whole = load_campaign(campaign)  # loaded once: its PD part, the analysis and the page share it
    if min_window_s <= 0:
        raise InputError("parameters", "min_window_s", f"must be positive (got {min_window_s})")
    if not whole.is_pd:  # no pd.json runs: the PD deployments its Benchmark Reports state, if any
        an = analyse(whole, link_gb_s=link_gb_s)  # checks the link rate (pd_report.link_rate)
        if not an.pd_deployment:
            raise InputError(
                whole.root / "campaign.json",
                "$.arms",
                "not a PD campaign: no arm with mode 'pd' and no Benchmark Report stating prefill and decode roles",
            )
        return Page(
            None, None, "", float(min_window_s), None, title or whole.title,
            deployment=an.pd_deployment, link_gb_s=an.link_gb_s, analysis=an, whole=whole,
        )  # fmt: skip
    camp = whole.pd
    base = baseline_arm or camp.baseline_arm()
    if base not in camp.arms:
        raise InputError("parameters", "baseline_arm", f"unknown arm {base!r}; choose from {', '.join(camp.arms)}")
    mwr = None if min_window_requests is None or min_window_requests < 0 else float(min_window_requests)
    opts = {"min_window_s": float(min_window_s), "min_window_requests": mwr, "baseline_arm": base}
    an = analyse(whole, pd_options=opts, link_gb_s=link_gb_s)  # the campaign's one analysis
    return Page(
        camp, an.pd, base, float(min_window_s), mwr, title or camp.title,
        deployment=an.pd_deployment, link_gb_s=an.link_gb_s, analysis=an, whole=whole,
    )  # fmt: skip


# ---- helpers -------------------------------------------------------------------------------------
def _cell(page: Page, run: str, window: str, key: str) -> dict | None:
    for c in page.report.cells:
        if c["run"] == run and c["window"] == window and c["key"] == key:
            return c
    return None


def _val(page: Page, run: str, window: str, key: str) -> float | None:
    c = _cell(page, run, window, key)
    return None if c is None else c["median"]


def _src(page: Page, run: str, window: str, key: str) -> str | None:
    c = _cell(page, run, window, key)
    return None if c is None else c["source"]


def _num(v: float | None, fmt: str, src: str | None = None) -> Any:
    """A number with its source mark when it is not a recorded value."""
    if v is None:
        return None
    s = fmt.format(v)
    if src and src != "recorded":
        kind, label = SOURCE_MARK[src]
        return bd.Block(f"{bd.esc(s)} {bd.mark(kind, label)}")
    return s


def _status_mark(status: str) -> bd.Block:
    return bd.mark({"pass": "pass", "warn": "note", "fail": "fail"}[status], status)


def _runs_by_purpose(page: Page):
    return sorted(page.camp.runs, key=lambda r: (-(r.load.get("requests") or 0), r.arm))


def _load_text(page: Page, r) -> str:
    ld = r.load
    parts = [
        f"{ld['requests']} requests" if ld.get("requests") is not None else None,
        f"C{ld['concurrency']}" if ld.get("concurrency") is not None else None,
        f"{ld['request_rate']:g} req/s" if ld.get("request_rate") is not None else None,
    ]
    return ", ".join(p for p in parts if p) or "load not recorded"


def _ctx(page: Page) -> str:
    pcs = sorted({r.load.get("prompt_class") for r in page.camp.runs if r.load.get("prompt_class")})
    toks = ", ".join(f"{page.camp.prompt_tokens(p)}" for p in pcs) or "?"
    cards = sorted({a.cards for a in page.camp.arms.values()})
    return (
        f"prompt {toks} tokens, {page.camp.generation_tokens or '?'} generated tokens, "
        f"{'/'.join(map(str, cards))} cards (P + D), environment "
        f"{', '.join(sorted({a.environment for a in page.camp.arms.values()}))}"
    )


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
    if _empty(page):
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
    if _empty(page):
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
            "Load": _load_text(page, r),
            "Prompt": f"{r.load.get('prompt_class') or '?'} ({page.camp.prompt_tokens(r.load.get('prompt_class')) or '?'} tokens)",
            "Records": "yes" if r.requests_file else "no",
            "Prefill log": "yes" if r.prefill_log else "no",
        }
        for r in _runs_by_purpose(page)
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


# ---- request lifecycle ---------------------------------------------------------------------------
def lifecycle(page: Page) -> bd.Block:
    if _empty(page):
        return bd.Block("")
    import altair as alt
    import polars as pl

    rows = []
    for r in _runs_by_purpose(page):
        for w in ("whole", "native"):
            ttft, e2e = _val(page, r.id, w, "mean_ttft_s"), _val(page, r.id, w, "mean_e2e_s")
            if ttft is None or e2e is None:
                continue
            rows.append(
                {
                    "run": r.id,
                    "arm": r.arm,
                    "window": w,
                    "load": _load_text(page, r),
                    "mean_ttft_s": ttft,
                    "generating_s": _val(page, r.id, w, "generating_s"),
                    "mean_e2e_s": e2e,
                    "ttft_share": _val(page, r.id, w, "ttft_share"),
                    "tpot_ms": _val(page, r.id, w, "mean_tpot_ms"),
                    "source": _src(page, r.id, w, "ttft_share"),
                }
            )
    for c in page.report.cells:
        if c["window"] == "records" and c["key"] == "ttft_share":
            rows.append(
                {
                    "run": c["run"],
                    "arm": c["arm"],
                    "window": "records",
                    "load": c["load"],
                    "mean_ttft_s": None,
                    "generating_s": _val(page, c["run"], "records", "generating_s"),
                    "mean_e2e_s": None,
                    "ttft_share": c["median"],
                    "tpot_ms": None,
                    "source": "recorded",
                }
            )
    bd.record("lifecycle", rows)
    if not rows:
        return bd.Block("<h2>Request lifecycle</h2><p>No run has both mean TTFT and mean E2E.</p>")
    table = [
        {
            "Run": x["run"],
            "Window": x["window"],
            "Load": x["load"],
            "Mean TTFT": _num(x["mean_ttft_s"], "{:.4f} s", x["source"]),
            "Time generating (E2E − TTFT)": _num(x["generating_s"], "{:.4f} s", x["source"]),
            "Mean E2E": _num(x["mean_e2e_s"], "{:.4f} s"),
            "TTFT share of E2E": _num(x["ttft_share"], "{:.2%}", x["source"]),
            "Mean TPOT": _num(x["tpot_ms"], "{:.1f} ms"),
        }
        for x in rows
    ]
    plot = [x for x in rows if x["mean_ttft_s"] is not None]
    d = pl.DataFrame(
        [
            {
                "run": f"{x['run']} ({x['window']})",
                "phase": ph,
                "order": i,
                "seconds": s,
                "label": f"{s:.1f} s" + (f" ({x['ttft_share']:.0%})" if i == 0 else ""),
            }
            for x in plot
            for i, (ph, s) in enumerate(
                (("before first token (TTFT)", x["mean_ttft_s"]), ("generating (E2E − TTFT)", x["generating_s"]))
            )
        ]
    )
    order = [f"{x['run']} ({x['window']})" for x in plot]
    base = alt.Chart(d).encode(y=alt.Y("run:N", sort=order, title=None))
    bars = base.mark_bar().encode(
        x=alt.X("seconds:Q", stack="zero", title="mean seconds per request (TTFT + time generating = E2E)"),
        color=alt.Color(
            "phase:N",
            title=None,
            sort=["before first token (TTFT)", "generating (E2E − TTFT)"],
            legend=alt.Legend(orient="bottom", direction="vertical"),
        ),
        order=alt.Order("order:Q"),
    )
    labels = (
        base.mark_text(align="left", dx=3, color="white", fontSize=11)
        .encode(x=alt.X("start:Q"), text="label:N")
        .transform_filter("datum.order == 0")
        .transform_calculate(start="0")
    )
    ch = (bars + labels).properties(
        width=520, height=36 * max(1, len(plot)), padding={"left": 10, "top": 5, "right": 5, "bottom": 5}
    )
    return bd.Block(
        "<h2>Request lifecycle: waiting for the first token vs generating</h2>"
        + str(
            bd.chart(
                ch,
                id="pd-lifecycle",
                caption=(
                    f"Mean TTFT and mean time generating per run ({_ctx(page)}). One run per arm: these are single "
                    "means, no spread was measured, so no range can be drawn. A low TPOT shortens only the second "
                    "segment; the first holds queueing, prefill and the P→D hand-off together."
                ),
            )
        )
        + str(
            bd.table(
                table,
                id="pd-lifecycle-table",
                caption=("TTFT share of E2E = mean TTFT / mean E2E; time generating = mean E2E − mean TTFT."),
            )
        )
    )


# ---- throughput ----------------------------------------------------------------------------------
def throughput(page: Page) -> bd.Block:
    if _empty(page):
        return bd.Block("")
    import altair as alt
    import polars as pl

    rows = []
    for r in _runs_by_purpose(page):
        for w in ("whole", "native"):
            v = _val(page, r.id, w, "output_tok_s_per_card")
            if v is None:
                continue
            rows.append(
                {
                    "run": r.id,
                    "arm": r.arm,
                    "window": w,
                    "load": _load_text(page, r),
                    "purpose": r.purpose,
                    "per_card": v,
                    "system": _val(page, r.id, w, "output_tok_s"),
                    "cards": page.camp.arms[r.arm].cards,
                    "source": _src(page, r.id, w, "output_tok_s_per_card"),
                }
            )
    gains = [c for c in page.report.comparisons if c["key"] == "output_tok_s_per_card"]
    bd.record("throughput", rows)
    bd.record("gains", gains)  # the analysis's comparison entries, as the summary carries them
    table = [
        {
            "Run": x["run"],
            "Arm": x["arm"],
            "Load": x["load"],
            "Window": x["window"],
            "System output": _num(x["system"], "{:.2f} token/s", x["source"]),
            "Cards": x["cards"],
            "Per card": _num(x["per_card"], "{:.4f} token/s/card", x["source"]),
        }
        for x in rows
    ]
    gtable = [
        {
            "Candidate vs baseline": f"{c['candidate']} vs {c['baseline']}",
            "Window and load": c["context"],
            "Baseline": f"{c['baseline_value']:.4f}",
            "Candidate": f"{c['candidate_value']:.4f}",
            "Gain": f"{c['change_pct']:+.2f} %",
            "Verdict": bd.mark(_STATE_MARK[State(c["state"])], c["verdict"]),
            "Why": c["reason"],
        }
        for c in gains
    ]
    bad = {c["run"] for c in page.report.checks if c.get("kind") == "window validity" and c["status"] != "pass"}
    d = pl.DataFrame(
        [
            {
                "run": x["run"],
                "arm": x["arm"],
                "window": x["window"],
                "load": x["load"],
                "per_card": x["per_card"],
                "window rule": "fails the window rule" if x["window"] == "native" and x["run"] in bad else "usable",
            }
            for x in rows
        ]
    )
    arms = list(page.camp.arms)
    pts = (
        alt.Chart(d)
        .mark_point(filled=True, size=90)
        .encode(
            x=alt.X("per_card:Q", title="output token/s per card", scale=alt.Scale(zero=False, padding=12)),
            y=alt.Y("window:N", sort=["whole", "native"], title=None),
            color=alt.Color("arm:N", sort=arms, title="arm"),
            shape=alt.Shape("arm:N", sort=arms, legend=None),
            opacity=alt.Opacity(
                "window rule:N", sort=["usable", "fails the window rule"], scale=alt.Scale(range=[1.0, 0.3])
            ),
            tooltip=["run:N", "per_card:Q"],
        )
    )
    rule = (
        alt.Chart(d)
        .mark_rule(color="#a0aec0")
        .encode(x="min(per_card):Q", x2="max(per_card):Q", y=alt.Y("window:N", sort=["whole", "native"]))
    )
    ch = (
        alt.layer(rule, pts)
        .properties(width=420, height=70)
        .facet(
            row=alt.Row(
                "load:N",
                title=None,
                sort=sorted(set(d["load"].to_list()), reverse=True),
                header=alt.Header(labelAngle=0, labelOrient="top", labelAnchor="start", labelFontWeight="bold"),
            )
        )
    )
    return bd.Block(
        str(bd.heading("Throughput per card: whole vs native window", id="throughput"))
        + str(
            bd.chart(
                ch,
                id="pd-throughput",
                caption=(
                    f"Output throughput per card per arm, by window and load ({_ctx(page)}). One run per arm: each "
                    "point is a single value, not a median; the grey line joins the arms and is the gain, not a "
                    "noise range — no spread was measured. Faded points come from a native window that fails the "
                    "window rule."
                ),
            )
        )
        + str(
            bd.table(
                table,
                id="pd-throughput-table",
                caption=("Per card = system output token throughput / (prefill + decode cards)."),
            )
        )
        + "<h3>Gains</h3>"
        + str(
            bd.table(
                gtable,
                id="pd-gains",
                caption=(
                    "Candidate / baseline − 1, only between runs under identical load. With n=1 per arm the verdict "
                    "is unreplicated; a native window that fails its validity rule makes the gain not a result."
                ),
            )
        )
    )


def comparisons(page: Page) -> bd.Block:
    if _empty(page):
        return bd.Block("")
    cs = [c for c in page.report.comparisons if c["key"] != "output_tok_s_per_card"]
    bd.record("comparisons", cs)  # the analysis's comparison entries, as the summary carries them
    if not cs:
        return bd.Block("")
    rows = [
        {
            "Figure": c["metric"],
            "Context": c["context"],
            "Baseline": f"{c['baseline_value']:.4f}",
            "Candidate": f"{c['candidate_value']:.4f}",
            "Change": f"{c['change_pct']:+.2f} %",
            "Source": c["source"],
            "Verdict": c["verdict"],
        }
        for c in cs
    ]
    return bd.Block(
        str(bd.heading("Other figures, same loads", 3, id="other-figures"))
        + str(
            bd.table(
                rows,
                id="pd-comparisons",
                caption=(
                    "Every other figure both arms report under the same load; a lower TTFT or E2E is an improvement."
                ),
            )
        )
    )


# ---- Little's law --------------------------------------------------------------------------------
def littles_law(page: Page) -> bd.Block:
    if _empty(page):
        return bd.Block("")
    rows = []
    checks = {c["name"]: c for c in page.report.checks}
    for r in _runs_by_purpose(page):
        for w in ("whole", "native"):
            lw = _val(page, r.id, w, "littles_lambda_w")
            chk = checks.get(f"Little's law: {r.id} {w}")
            if lw is None or chk is None:
                continue
            rows.append(
                {
                    "run": r.id,
                    "window": w,
                    "completion_rate": _val(page, r.id, w, "request_rate"),
                    "mean_e2e_s": _val(page, r.id, w, "mean_e2e_s"),
                    "lambda_w": lw,
                    "mean_concurrency": _val(page, r.id, w, "mean_concurrency"),
                    "status": chk["status"],
                    "detail": chk["detail"],
                }
            )
    measured = [c for c in page.report.checks if c.get("kind") == "littles measured"]
    bd.record("littles", rows)
    bd.record("littles_measured", measured)
    if not rows:
        return bd.Block("")
    table = [
        {
            "Run": x["run"],
            "Window": x["window"],
            "λ (completion rate)": f"{x['completion_rate']:.4f} req/s",
            "W (mean E2E)": f"{x['mean_e2e_s']:.4f} s",
            "λ × W": f"{x['lambda_w']:.3f}",
            "L (mean concurrency)": "not recorded" if x["mean_concurrency"] is None else f"{x['mean_concurrency']:.3f}",
            "Status": _status_mark(x["status"]),
            "Detail": x["detail"],
        }
        for x in rows
    ]
    table += [
        {
            "Run": f"{c['run']} {c['window']}",
            "Window": "records",
            "λ (completion rate)": "",
            "W (mean E2E)": "",
            "λ × W": "",
            "L (mean concurrency)": "measured from records",
            "Status": _status_mark(c["status"]),
            "Detail": c["detail"],
        }
        for c in measured
    ]
    return bd.Block(
        "<h2>Little's law: in-flight requests = completion rate × mean E2E</h2>"
        + str(
            bd.table(
                table,
                id="pd-littles",
                caption=(
                    "L ≈ λ × W. Similar λ × W with a shorter W means the same client slots finish requests faster. Computed "
                    "from the window's own figures this links figures of one window; it is not an independent measurement of "
                    "concurrency."
                ),
            )
        )
    )


# ---- acceptance length ---------------------------------------------------------------------------
def acceptance(page: Page) -> bd.Block:
    if _empty(page):
        return bd.Block("")
    rows = []
    for r in _runs_by_purpose(page):
        spec = r.speculative
        if spec is None:
            continue
        chk = next((c for c in page.report.checks if c["name"] == f"acceptance length: {r.id}"), None)
        rows.append(
            {
                "run": r.id,
                "arm": r.arm,
                "window": spec.get("window", "whole"),
                "output_tokens": spec["output_tokens"],
                "verify_calls": spec["verify_calls"],
                "verify_width": spec.get("verify_width"),
                "acceptance_length": chk["acceptance_length"] if chk else None,  # computed by the analysis
                "status": chk["status"] if chk else None,
            }
        )
    bd.record("acceptance", rows)
    if not rows:
        return bd.Block("")
    table = [
        {
            "Run": x["run"],
            "Window": x["window"],
            "Output tokens": x["output_tokens"],
            "Verify calls": x["verify_calls"],
            "Verify width": x["verify_width"],
            "Acceptance length": "—" if x["acceptance_length"] is None else f"{x['acceptance_length']:.4f}",
            "Check": _status_mark(x["status"]) if x["status"] else "—",
        }
        for x in rows
    ]
    return bd.Block(
        "<h2>Acceptance length</h2>"
        + str(
            bd.table(
                table,
                id="pd-acceptance",
                caption=(
                    "Acceptance length = output tokens / verify calls over the run. It fails if below 1, above the verify width, "
                    "or if the counters disagree with the window's generated tokens. The strict acceptance rate needs the "
                    "proposal count, which is not in the inputs."
                ),
            )
        )
    )


# ---- batch seam (simulator) ----------------------------------------------------------------------
def batch_seam(page: Page) -> bd.Block:
    if _empty(page):
        return bd.Block("")
    import altair as alt
    import polars as pl

    seam = page.report.seam  # replayed by the analysis (disaggregation.batch_seam); the summary carries it
    if not seam:
        bd.record("seam", {})
        return bd.Block("<h2>The batch seam</h2><p>No prompt length recorded: nothing to replay.</p>")
    pt, chunk, psize, seqs = seam["prompt_tokens"], seam["chunk_size"], seam["page_size"], seam["sequences"]
    bd.record("seam", {"prompt_tokens": pt, "chunk_size": chunk, "page_size": psize, "sequences": seqs})
    fmt = lambda b: " + ".join(f"{p['request']} {p['new_tokens']}" for p in b)  # noqa: E731
    table = [
        {"Batch": i + 1, **{f"cap {k[3:]}": fmt(v[i]) if i < len(v) else "" for k, v in seqs.items()}}
        for i in range(SEAM_BATCHES)
    ]
    segs, labels = [], []
    for k, v in seqs.items():
        for i, b in enumerate(v):
            x0 = 0
            for p in b:
                segs.append(
                    {
                        "cap": f"prefill max requests {k[3:]}",
                        "batch": i + 1,
                        "request": p["request"],
                        "x0": x0,
                        "x1": x0 + p["new_tokens"],
                    }
                )
                x0 += p["new_tokens"]
            labels.append({"cap": f"prefill max requests {k[3:]}", "batch": i + 1, "end": x0, "label": fmt(b)})
    sd, ld = pl.DataFrame(segs), pl.DataFrame(labels)
    xs = alt.Scale(domain=[0, int(chunk * 1.6)])
    bars = (
        alt.Chart(sd)
        .mark_bar(stroke="white", strokeWidth=1)
        .encode(
            y=alt.Y("batch:O", title="prefill batch"),
            x=alt.X(
                "x0:Q",
                scale=xs,
                title=f"new input tokens in the batch (budget {chunk})",
                axis=alt.Axis(values=[0, chunk // 2, chunk]),
            ),
            x2="x1:Q",
            color=alt.Color("request:N", title="request", legend=alt.Legend(orient="bottom", direction="horizontal")),
        )
    )
    txt = (
        alt.Chart(ld)
        .mark_text(align="left", dx=4, fontSize=11)
        .encode(y=alt.Y("batch:O"), x=alt.X("end:Q", scale=xs), text="label:N")
    )
    ch = alt.hconcat(
        *[
            alt.layer(bars.transform_filter(alt.datum.cap == c), txt.transform_filter(alt.datum.cap == c)).properties(
                width=300, height=22 * SEAM_BATCHES, title=c
            )
            for c in dict.fromkeys(x["cap"] for x in labels)
        ]
    )
    return bd.Block(
        "<h2>The batch seam: cap 1 vs cap 2, first batches</h2>"
        + str(
            bd.text(
                "Replayed by the admission simulator: {n} identical prompts of {pt} tokens, per-batch "
                "budget {chunk} tokens, {psize}-token pages. Request A is cut as {cut}. At cap 1 the "
                "4-token tail runs as a batch of its own; with a second request slot the tail shares "
                "a batch with the next request, whose first piece is the budget left after the tail's "
                "page-rounded charge.",
                n=seam["requests"],
                pt=pt,
                chunk=chunk,
                psize=psize,
                cut=seam["cut"],
            )
        )
        + str(
            bd.chart(
                ch,
                id="pd-seam",
                caption=(
                    "Each bar is one prefill batch; segments are requests (letters A, B, C… in arrival order), "
                    "labels give each request's new input tokens in that batch. Replayed on the CPU from the scheduler settings: "
                    "a mechanism, not a measurement."
                ),
            )
        )
        + str(
            bd.table(
                table,
                id="pd-seam-table",
                caption=(
                    "Per batch: request letter and new input tokens it contributes. Tails are charged whole "
                    "pages, so B gets 8192 − 128 = 8064 after A's 4-token tail."
                ),
            )
        )
    )


def admission(page: Page) -> bd.Block:
    if _empty(page):
        return bd.Block("")
    import altair as alt
    import polars as pl

    rows = page.report.admission
    bd.record("admission", rows)
    if not rows:
        return bd.Block("")
    table = [
        {
            "Requests": r["requests"],
            "Prompt tokens": r["prompt_tokens"],
            "Chunk": r["chunk_size"],
            "Page": r["page_size"],
            "Max requests (cap)": r["max_requests"],
            "Batches": r["batches"],
            "Tail-only batches": r["tail_only_batches"],
            "Multi-request batches": r["multi_request_batches"],
            "New tokens": r["new_tokens"],
            "Arms with this cap": r["arms"] or "—",
        }
        for r in rows
    ]
    d = pl.DataFrame(
        [
            {
                "load": f"{r['requests']} × {r['prompt_tokens']} tokens",
                "cap": r["max_requests"],
                "batches": r["batches"],
            }
            for r in rows
        ]
    )
    base = alt.Chart(d).encode(x=alt.X("cap:O", title="prefill max requests"))
    ch = (
        alt.layer(
            base.mark_bar().encode(y=alt.Y("batches:Q", title="prefill batches (simulated)")),
            base.mark_text(dy=-6).encode(y="batches:Q", text="batches:Q"),
        )
        .properties(width=220, height=200)
        .facet(column=alt.Column("load:N", title=None))
    )
    comp = page.report.batch_composition
    bd.record("batch_composition", comp)
    ctable = [
        {
            "Run": c["run"],
            "Kind": c["kind"],
            "Reports": c.get("reports"),
            "Multi-request batches": c.get("multi_request_batches"),
            "Single-request tail batches": c.get("single_request_tail_batches"),
            "Scope / source": c.get("scope") or c.get("source"),
        }
        for c in comp
    ]
    return bd.Block(
        "<h2>Simulated batch counts across caps</h2>"
        + str(
            bd.chart(
                ch,
                id="pd-admission",
                caption=(
                    "Prefill batches needed to admit each load's prompts, FCFS, at caps 1 to 4 (deterministic "
                    "replay: no noise). Total new tokens are identical at every cap; only how many batches carry "
                    "them changes. Caps above 2 change nothing: a new request is always cut at the end of a batch."
                ),
            )
        )
        + str(bd.table(table, id="pd-admission-table", caption="Simulator output per load and cap."))
        + (
            "<h3>Prefill batch composition from the runs</h3>"
            + str(
                bd.table(
                    ctable,
                    id="pd-batch-composition",
                    caption="Counts from a prefill log, or counts a source reported without the lines (labelled).",
                )
            )
        )
        if comp
        else ""
    )


# ---- checks, marks, caveats ----------------------------------------------------------------------
def window_checks(page: Page) -> bd.Block:
    if _empty(page):
        return bd.Block("")
    win = [c for c in page.report.checks if c.get("kind") == "window validity"]
    bd.record("window_checks", win)
    rows = [{"Run": c["run"], "Status": _status_mark(c["status"]), "Detail": c["detail"]} for c in win]
    rows += [
        {"Run": r.id, "Status": bd.mark("note", "no native window"), "Detail": "the native window was not recorded"}
        for r in _runs_by_purpose(page)
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
    if _empty(page):  # the Benchmark Reports' deployment checks are the page's checks
        rows = [
            {"Check": f"{r.run_id}: {c.name}", "Status": _status_mark(c.status), "Detail": c.detail}
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
        {"Check": c["name"], "Status": _status_mark(c["status"]), "Detail": c["detail"]} for c in page.report.checks
    ]
    return bd.Block(
        str(bd.heading("All checks", id="checks"))
        + str(sections.checks_table(rows, [c["status"] == "pass" for c in page.report.checks], id="pd-checks"))
    )


def marks(page: Page) -> bd.Block:
    if _empty(page):
        return bd.Block("")
    rows = []
    for r in _runs_by_purpose(page):
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


def _caveats(page: Page) -> list[str]:
    c, rep = page.camp, page.report
    out: list[str] = []
    if c.provenance != "measured":
        out.append(f"Provenance is '{c.provenance}': the figures were not measured by this tool.")
    if not any(r.requests_file for r in c.runs):
        out.append(
            "No per-request records: concurrency is not measured independently; Little's law from the "
            "summary only shows the figures belong to one window."
        )
    elif not all(r.requests_file for r in c.runs):
        out.append(
            "Per-request records exist for only some runs: " + ", ".join(r.id for r in c.runs if r.requests_file) + "."
        )
    reported = [b for b in rep.batch_composition if b["kind"].startswith("reported")]
    if reported and not any(r.prefill_log for r in c.runs):
        out.append(
            "Prefill batch counts are reported counts, no log lines: "
            + "; ".join(
                f"{b['run']}: {b.get('reports')} reports, {b.get('multi_request_batches')} multi-request"
                for b in reported
            )
            + "."
        )
    elif not any(r.prefill_log for r in c.runs):
        out.append("No prefill log: the batch seam is known only from the simulator.")
    if not rep.replicated:
        out.append("One run per arm and load: every gain is unreplicated and the run-to-run spread is unmeasured.")
    if rep.loads > 1:
        out.append(f"{rep.loads} different loads: gains are computed within a load only, never across loads.")
    for chk in rep.checks:
        if chk.get("kind") == "window validity":
            run = chk["run"]
            if chk["status"] == "fail":
                out.append(
                    f"{run}'s native window fails the window rule ({chk['finding']}): its native figures are not a result."
                )
            elif chk["lower_bound"]:
                out.append(
                    f"{run}'s native window passes only on a published lower bound; its length and request "
                    "count were not printed."
                )
            elif chk["status"] == "warn":
                out.append(f"{run}'s native window cannot be checked: {chk['finding']}.")
    for r in c.runs:
        w = r.windows.get("whole")
        if w is not None and w.get("Concurrency") is None and w.get("Request Throughput") is not None:
            out.append(f"{r.id}: no whole-window mean concurrency recorded, so λ × W is an implied concurrency.")
    n_der = sum(len(r.derived) for r in c.runs)
    n_apx = sum(len(r.approximate) for r in c.runs)
    if n_der or n_apx:
        out.append(
            f"{n_der} figure(s) are derived and {n_apx} approximate (see Value marks); gains built on them "
            "inherit the mark."
        )
    if any(r.speculative for r in c.runs):
        out.append(
            "Acceptance length is output tokens / verify calls; a strict acceptance rate needs the proposal "
            "count, which is not recorded."
        )
    if rep.admission:
        out.append(
            "Simulator batch counts replay admission on the CPU with ample memory; arrival times, KV "
            "resources and DP distribution are not modelled, so they explain the mechanism, not the speed-up."
        )
    if not any(
        r.windows.get("whole") and r.windows["whole"].stat("TTFT") is not None and r.requests_file for r in c.runs
    ):
        out.append("TTFT is not split into queueing, prefill and hand-off: no stage timings in the inputs.")
    return out


def caveats(page: Page) -> bd.Block:
    if _empty(page):
        return bd.Block("")
    lines = _caveats(page)
    bd.record("caveats", lines)
    return bd.Block("<h2>Caveats from the inputs</h2><ol>" + "".join(f"<li>{bd.esc(x)}</li>" for x in lines) + "</ol>")


def exclusions(page: Page) -> bd.Block:
    if _empty(page):
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
