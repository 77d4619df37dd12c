"""PD page sections from the prefill admission simulator: the batch seam picture (the first batches
per cap, side by side) and the admission table (simulated batch counts per cap and load, beside the
counts the logs or the reports give). Each returns a display Block and records what it shows."""

from __future__ import annotations

from benchbook.pages import display as bd
from benchbook.pages import pd_view as pv
from benchbook.pages.pd_view import SEAM_BATCHES, Page


# ---- batch seam (simulator) ----------------------------------------------------------------------
def batch_seam(page: Page) -> bd.Block:
    if pv.empty(page):
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
    if pv.empty(page):
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
