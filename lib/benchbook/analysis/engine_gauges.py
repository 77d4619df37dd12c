"""The engine's gauges (running/waiting requests, KV-cache usage, token rates) over each run's window,
fetched from a campaign's Prometheus source: what the baseline page charts beside its figures."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from benchbook.analysis.tables import tables_for
from benchbook.errors import InputError

if TYPE_CHECKING:
    import polars as pl

    from benchbook.ingest.campaign import Campaign


@dataclass
class EngineGauges:
    """Running/waiting requests, KV-cache usage and token rates over each run's window, fetched from the
    campaign's Prometheus source (``promsource.fetch_gauges``); empty for capture-file campaigns."""

    frame: pl.DataFrame | None  # run, quantity, t, s (seconds since the run's first window), value
    spans: list[dict[str, Any]]  # run, t0, t1
    notes: list[str]  # runs the server holds no gauge series for, with the reason
    sources: list[str]  # the servers' public URLs

    def series(self) -> list[dict[str, Any]]:
        """Per run and quantity: points, min, max, mean."""
        if self.frame is None:
            return []
        return [
            {
                "run": k[0],
                "quantity": k[1],
                "points": g.height,
                "min": g["value"].min(),
                "max": g["value"].max(),
                "mean": g["value"].mean(),
            }
            for k, g in sorted(self.frame.group_by(["run", "quantity"]), key=lambda kg: kg[0])
        ]

    def as_dict(self) -> dict[str, Any]:
        return {"spans": self.spans, "series": self.series(), "notes": self.notes}


def engine_gauges(camp: Campaign, arms: list[str] | None = None) -> EngineGauges:
    """The engine's gauges over the windows of the runs of ``arms`` (default: every arm), fetched once
    per campaign object and arm set."""
    wanted = tuple(sorted(camp.arms if arms is None else arms))
    return tables_for(camp).derived(("engine_gauges", wanted), lambda: _engine_gauges(camp, wanted))


def _engine_gauges(camp: Campaign, arms: tuple[str, ...]) -> EngineGauges:
    import polars as pl

    from benchbook.metrics import promsource, source_allow

    frames, notes, spans, sources = [], [], [], set()
    for r in camp.runs:
        windows = camp.prometheus_windows(r) if r.arm in arms else []
        if not windows:
            continue
        src = camp.prometheus_source(r)
        refused = source_allow.refusal(src["url"])
        if refused:  # not allowed in this run: no chart, and the section says why
            notes.append(f"{r.id}: {refused}")
            continue
        t0, t1 = min(w[0] for w in windows), max(w[1] for w in windows)
        try:
            g = promsource.fetch_gauges(
                src["url"],
                t0,
                t1,
                src["matchers"],
                camp.profile,
                step=src.get("step_s"),
                timeout=src.get("timeout_s", promsource.DEFAULT_TIMEOUT_S),
            )
        except InputError as e:  # the server has none of these gauges for the run: say so, chart nothing
            notes.append(f"{r.id}: no gauge series on the server for this run ({e.reason})")
            continue
        spans.append({"run": r.id, "t0": t0, "t1": t1})
        sources.add(source_allow.public_url(src["url"]))
        frames.append(g.with_columns(pl.lit(r.id).alias("run"), (pl.col("t") - t0).alias("s")))
    return EngineGauges(pl.concat(frames) if frames else None, spans, notes, sorted(sources))
