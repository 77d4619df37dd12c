"""PD page sections on what the runs measured: the request lifecycle, throughput per card with the
comparisons, Little's law per window and the speculative-decoding acceptance length. Each returns a
display Block and records what it shows with ``bd.record``; figures come from the analysis through
:class:`benchbook.pages.pd_view.Page`."""

from __future__ import annotations

from benchbook.analysis.verdict import State
from benchbook.pages import display as bd
from benchbook.pages import pd_view as pv
from benchbook.pages.pd_view import Page


# ---- request lifecycle ---------------------------------------------------------------------------
def lifecycle(page: Page) -> bd.Block:
    if pv.empty(page):
        return bd.Block("")
    import altair as alt
    import polars as pl

    rows = []
    for r in pv.runs_by_purpose(page):
        for w in ("whole", "native"):
            ttft, e2e = pv.val(page, r.id, w, "mean_ttft_s"), pv.val(page, r.id, w, "mean_e2e_s")
            if ttft is None or e2e is None:
                continue
            rows.append(
                {
                    "run": r.id,
                    "arm": r.arm,
                    "window": w,
                    "load": pv.load_text(page, r),
                    "mean_ttft_s": ttft,
                    "generating_s": pv.val(page, r.id, w, "generating_s"),
                    "mean_e2e_s": e2e,
                    "ttft_share": pv.val(page, r.id, w, "ttft_share"),
                    "tpot_ms": pv.val(page, r.id, w, "mean_tpot_ms"),
                    "source": pv.src(page, r.id, w, "ttft_share"),
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
                    "generating_s": pv.val(page, c["run"], "records", "generating_s"),
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
            "Mean TTFT": pv.num(x["mean_ttft_s"], "{pd} s", x["source"]),
            "Time generating (E2E − TTFT)": pv.num(x["generating_s"], "{pd} s", x["source"]),
            "Mean E2E": pv.num(x["mean_e2e_s"], "{pd} s"),
            "TTFT share of E2E": pv.num(x["ttft_share"], "{:.2%}", x["source"]),
            "Mean TPOT": pv.num(x["tpot_ms"], "{:.1f} ms"),
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
                    f"Mean TTFT and mean time generating per run ({pv.ctx(page)}). One run per arm: these are single "
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
    if pv.empty(page):
        return bd.Block("")
    import altair as alt
    import polars as pl

    rows = []
    for r in pv.runs_by_purpose(page):
        for w in ("whole", "native"):
            v = pv.val(page, r.id, w, "output_tok_s_per_card")
            if v is None:
                continue
            rows.append(
                {
                    "run": r.id,
                    "arm": r.arm,
                    "window": w,
                    "load": pv.load_text(page, r),
                    "purpose": r.purpose,
                    "per_card": v,
                    "system": pv.val(page, r.id, w, "output_tok_s"),
                    "cards": page.camp.arms[r.arm].cards,
                    "source": pv.src(page, r.id, w, "output_tok_s_per_card"),
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
            "System output": pv.num(x["system"], "{:.2f} token/s", x["source"]),
            "Cards": x["cards"],
            "Per card": pv.num(x["per_card"], "{pd} token/s/card", x["source"]),
        }
        for x in rows
    ]
    gtable = [
        {
            "Candidate vs baseline": f"{c['candidate']} vs {c['baseline']}",
            "Window and load": c["context"],
            "Baseline": pv.pd_num(c["baseline_value"]),
            "Candidate": pv.pd_num(c["candidate_value"]),
            "Gain": f"{c['change_pct']:+.2f} %",
            "Verdict": bd.mark(pv.STATE_MARK[State(c["state"])], c["verdict"]),
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
                    f"Output throughput per card per arm, by window and load ({pv.ctx(page)}). One run per arm: each "
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
    if pv.empty(page):
        return bd.Block("")
    cs = [c for c in page.report.comparisons if c["key"] != "output_tok_s_per_card"]
    bd.record("comparisons", cs)  # the analysis's comparison entries, as the summary carries them
    if not cs:
        return bd.Block("")
    rows = [
        {
            "Figure": c["metric"],
            "Context": c["context"],
            "Baseline": pv.pd_num(c["baseline_value"]),
            "Candidate": pv.pd_num(c["candidate_value"]),
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
    if pv.empty(page):
        return bd.Block("")
    rows = []
    checks = {c["name"]: c for c in page.report.checks}
    for r in pv.runs_by_purpose(page):
        for w in ("whole", "native"):
            lw = pv.val(page, r.id, w, "littles_lambda_w")
            chk = checks.get(f"Little's law: {r.id} {w}")
            if lw is None or chk is None:
                continue
            rows.append(
                {
                    "run": r.id,
                    "window": w,
                    "completion_rate": pv.val(page, r.id, w, "request_rate"),
                    "mean_e2e_s": pv.val(page, r.id, w, "mean_e2e_s"),
                    "lambda_w": lw,
                    "mean_concurrency": pv.val(page, r.id, w, "mean_concurrency"),
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
            "λ (completion rate)": f"{pv.pd_num(x['completion_rate'])} req/s",
            "W (mean E2E)": f"{pv.pd_num(x['mean_e2e_s'])} s",
            "λ × W": f"{x['lambda_w']:.3f}",
            "L (mean concurrency)": "not recorded" if x["mean_concurrency"] is None else f"{x['mean_concurrency']:.3f}",
            "Status": pv.status_mark(x["status"]),
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
            "Status": pv.status_mark(c["status"]),
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
    if pv.empty(page):
        return bd.Block("")
    rows = []
    for r in pv.runs_by_purpose(page):
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
            "Acceptance length": "—" if x["acceptance_length"] is None else pv.pd_num(x["acceptance_length"]),
            "Check": pv.status_mark(x["status"]) if x["status"] else "—",
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
