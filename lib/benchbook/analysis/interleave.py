"""The interleave measured only when its two requests overlapped (docs/statistics.md, "Interleave").

The interleave asks what a short request costs while a long one is being served: the short one must
start during the long one's prefill or decode — after the long request started and before it ended,
by the requests' own times (``start``/``end`` of each, in ``requests.json`` / ``requests.ndjson``). A
round whose long request had finished before its short one started measured a short request alone:
its latency is not an interleave figure. :func:`overlapping` keeps the short requests that overlapped
a long request of their run and round; :func:`not_measured` says, per run whose rounds never
overlapped, why — "not measured", never a finding and never a verdict.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import polars as pl

    from benchbook.ingest.campaign import Campaign


def _split(req: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    import polars as pl

    inter = req.filter(pl.col("scenario") == "interleave")
    if "round" not in inter.columns:
        inter = inter.with_columns(pl.lit(0, pl.Int64).alias("round"))
    return inter.filter(pl.col("prompt_class") != "short"), inter.filter(pl.col("prompt_class") == "short")


def overlapping(req: pl.DataFrame) -> pl.DataFrame:
    """The interleave's short requests that started while a long request of the same run and round was
    in flight (``long.start ≤ short.start < long.end``)."""
    import polars as pl

    longs, shorts = _split(req)
    if shorts.height == 0 or longs.height == 0:
        return shorts.head(0)
    spans = longs.select("run", "round", pl.col("start").alias("_ls"), pl.col("end").alias("_le"))
    hit = (
        shorts.with_row_index("_i")
        .join(spans, on=["run", "round"], how="inner")
        .filter((pl.col("start") >= pl.col("_ls")) & (pl.col("start") < pl.col("_le")))
        .select("_i")
        .unique()
    )
    keep = set(hit["_i"].to_list())
    return shorts.with_row_index("_i").filter(pl.col("_i").is_in(list(keep))).drop("_i")


def not_measured(camp: Campaign, arms: list[str] | None = None) -> list[str]:
    """One sentence per run (of ``arms``) that ran the interleave but none of whose short requests
    overlapped a long one: what its requests' times show."""
    import polars as pl

    req = camp.requests
    if req.height == 0:
        return []
    longs, shorts = _split(req)
    ok = set(overlapping(req)["run"].to_list())
    out = []
    for run in sorted(set(shorts["run"].to_list())):
        if run in ok or (arms is not None and camp.run(run).arm not in arms):
            continue
        lg = longs.filter(pl.col("run") == run)
        sh = shorts.filter(pl.col("run") == run)
        if lg.height == 0:
            out.append(f"{run}: interleave not measured — no long request in its interleave step")
            continue
        after, before = [], 0
        for s in sh.iter_rows(named=True):
            lr = lg.filter(pl.col("round") == s["round"])
            if lr.height and s["start"] >= float(lr["end"].max()):
                after.append(s["start"] - float(lr["end"].max()))
            elif lr.height:
                before += 1
        parts = []
        if after:
            span = (
                f"{min(after):.3g}"
                if f"{min(after):.3g}" == f"{max(after):.3g}"
                else f"{min(after):.3g}–{max(after):.3g}"
            )
            parts.append(f"{len(after)} short request(s) started {span} s after the long one had ended")
        if before:
            parts.append(f"{before} started before the long one")
        out.append(
            f"{run}: interleave not measured — in its {sh.height} round(s) "
            + ("; ".join(parts) or "no short request had a long one in its round")
            + " (by their own start/end times), so no short request ran during the long one's prefill or decode"
        )
    return out
