"""History across campaigns: each headline figure over a series of campaigns, its noise band, the
changes between consecutive campaigns, and the steps over the whole history.

Three steps, each testable on its own (``docs/history.md`` is the reader's version):

1. :func:`headline` reads one campaign and returns its *headline figures*, one value per run
   (runs are the unit of replication): per arm, decode and prefill tok/s per prompt class (phase
   samples), single-request latency and the ladder's aggregate rate at each concurrency (whole
   requests), peak and steady GPU memory (memory runs), and for PD campaigns the "whole" window's
   output throughput per card, mean TTFT, mean TPOT and mean E2E. The renderer stores this beside
   the campaign's pages as ``headline.json``, so a history over hundreds of campaigns reads small
   files instead of re-analysing every campaign.
2. :func:`history_table` turns those into one tidy polars frame, one row per (series, figure,
   campaign). A figure is matched across campaigns on its whole context (:data:`CONTEXT_FIELDS`:
   prompt and generation length, concurrency, load, environment, model, hardware, besides metric,
   arm and prompt class): a 128-token and a 512-token campaign, or a campaign's two loads, are
   separate figures, never one series, and :func:`analyse` lists them as not comparable. Per row:
   the campaign's median over its runs, [min–max] of the run values, n runs and the run-to-run
   spread ``(max − min) / min`` (None with one run). Written as ``history.parquet``.
3. :func:`analyse` judges it. Campaigns of a series are ordered by ``date``, then ``order`` (from
   ``campaign.json``'s ``history``), then name.

   * **Consecutive campaigns** are compared with :func:`benchbook.analysis.verdict.compare`, the
     pages' own noise rule, with the larger of the two campaigns' measured spreads — or, once the
     series has :data:`MIN_STEP_CAMPAIGNS` campaigns, the history's own noise when that is larger
     (Conbench's idea: judge a change against the history's spread): ``exp(3.5 × √2 × σ) − 1``,
     σ the robust campaign-to-campaign scatter below. Nightly campaigns vary more from day to day
     than two runs of one campaign do, so the campaigns' own spreads alone would flag noise. A
     campaign with one run has no measured spread: "cannot tell", never a verdict.
   * **Steps over the whole history** (asv-style): the log of the campaign medians is fitted with a
     piecewise-constant function by exact optimal partitioning (dynamic programming), minimising
     ``Σ ((y_i − level)/σ_i)² + β × segments`` with ``β = 3 ln n``. ``σ_i`` is the history's own
     campaign-to-campaign scatter (a robust estimate from consecutive differences,
     ``1.4826 × median|Δy| / √2``), widened for a point whose own [min–max] range is wider than
     the series' typical range (the point's interval weights it, as in asv). A fitted step is kept
     as a *result* only when the levels on its two sides differ by more than the history's noise
     band — the median of the campaigns' measured run-to-run spreads — the pages' rule applied to
     the history. Fewer than :data:`MIN_STEP_CAMPAIGNS` campaigns, or no measured spread at all:
     "cannot tell".

Nothing here reads a rendered page; the pages format what :class:`History` holds.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchbook.analysis import stats
from benchbook.analysis.verdict import NOT_A_RESULT, Evidence, compare, decide, point, typed_fields

if TYPE_CHECKING:
    import polars as pl

    from benchbook.ingest.campaign import Campaign

HEADLINE_FORMAT = "benchbook.headline/1"
CANNOT_TELL = "cannot tell"
MIN_STEP_CAMPAIGNS = 4  # fewer campaigns than this: no step detection
STEP_PENALTY_PER_LOG_N = 3.0  # β = 3 ln n per extra segment
HISTORY_NOISE_SIGMAS = 3.5  # a consecutive change must also exceed this many σ of a campaign-to-campaign difference

# metric -> (label, unit, higher_is_better, page kind); the documented headline figures
HEADLINE_FIGURES: dict[str, tuple[str, str, bool, str]] = {
    "decode_tok_s": ("Decode tok/s", "tok/s", True, "baseline"),
    "prefill_tok_s": ("Prefill tok/s", "tok/s", True, "baseline"),
    "single_latency_s": ("Single-request latency", "s", False, "baseline"),
    "ladder_tok_s": ("Ladder aggregate rate", "tok/s", True, "baseline"),
    "peak_gib": ("Peak GPU memory (max over ranks)", "GiB", False, "baseline"),
    "steady_gib": ("Steady GPU memory (max over ranks)", "GiB", False, "baseline"),
    "output_tok_s_per_card": ("Output throughput per card (whole window)", "tok/s/card", True, "pd"),
    "mean_ttft_s": ("Mean TTFT (whole window)", "s", False, "pd"),
    "mean_tpot_ms": ("Mean TPOT (whole window)", "ms", False, "pd"),
    "mean_e2e_s": ("Mean E2E (whole window)", "s", False, "pd"),
}


# ----------------------------------------------------------------------------- one campaign


def series_of(manifest: Mapping[str, Any]) -> str:
    """The series a campaign belongs to: ``history.series`` in campaign.json, else the engine name."""
    hist = manifest.get("history") or {}
    if isinstance(hist, Mapping) and hist.get("series"):
        return str(hist["series"])
    engine = manifest.get("engine") or {}
    return str(engine.get("name") or "unnamed engine") if isinstance(engine, Mapping) else "unnamed engine"


def model_of(manifest: Mapping[str, Any]) -> str | None:
    """The model a campaign served, for matching figures across campaigns: ``checkpoint.model`` (or
    ``name``, ``path``, ``models``), its last path component (the same checkpoint in another folder
    is the same model)."""
    ck = manifest.get("checkpoint")
    if not isinstance(ck, Mapping):
        return None
    for k in ("model", "name", "path", "models"):
        v = ck.get(k)
        if isinstance(v, str) and v.strip():
            return v.strip().rstrip("/").rsplit("/", 1)[-1] or v.strip()
    return None


def hardware_of(manifest: Mapping[str, Any]) -> str | None:
    """The hardware a campaign ran on, for matching figures: ``host.accelerator`` (with ``host.cards``'
    count), else ``host.GPU``/``gpu``/``gpus``/``gpu_memory`` up to its first comma ("4 x RTX 2080 Ti";
    the memory and driver after it are not the hardware's identity)."""
    host = manifest.get("host")
    if not isinstance(host, Mapping):
        return None
    acc = host.get("accelerator")
    if isinstance(acc, str) and acc.strip():
        cards = host.get("cards")
        count = str(cards).split()[0] if cards is not None and str(cards).split() else ""
        return f"{count} x {acc.strip()}" if count.isdigit() else acc.strip()
    for k in ("GPU", "gpu", "gpus", "gpu_memory"):
        v = host.get(k)
        if isinstance(v, str) and v.strip():
            return v.split(",")[0].split(";")[0].strip()
    return None


def _figure(
    metric, arm, environment, prompt_class, prompt_tokens, generation_tokens, concurrency, runs, values, load=None
):
    label, unit, hib, page = HEADLINE_FIGURES[metric]
    return {
        "metric": metric,
        "label": label,
        "unit": unit,
        "higher_is_better": hib,
        "page": page,
        "arm": arm,
        "environment": environment,
        "prompt_class": prompt_class,
        "prompt_tokens": None if prompt_tokens is None else int(round(prompt_tokens)),
        "generation_tokens": None if generation_tokens is None else int(round(generation_tokens)),
        "concurrency": concurrency,
        "load": load or None,
        "runs": list(runs),
        "values": [float(v) for v in values],
    }


def headline(campaign: str | Path | Campaign) -> dict[str, Any]:
    """The campaign's headline figures, one value per run (see the module docstring), from a folder or
    a loaded :class:`Campaign` (not loaded again)."""

    from benchbook.ingest.campaign import Campaign, load_campaign

    camp = campaign if isinstance(campaign, Campaign) else load_campaign(campaign)  # the one manifest reader
    from benchbook.analysis.tables import holding

    with holding(camp):  # the analysis's tables where one of camp is computing; else this call's own, kept for it
        return _headline(camp)


def _headline(camp: Campaign) -> dict[str, Any]:
    import polars as pl

    root, man = camp.root, camp.manifest
    figures: list[dict[str, Any]] = []
    if camp.is_pd:
        figures += _pd_figures(camp)
    else:
        from benchbook.analysis import baseline

        gen = camp.generation_tokens
        if camp.runs_of("phases"):
            pc = baseline.phase_cells(camp).filter(pl.col("metric").is_in(["decode_tok_s", "prefill_tok_s"]))
            for (arm, pclass, metric), g in pc.group_by(["arm", "prompt_class", "metric"], maintain_order=True):
                figures.append(
                    _figure(
                        metric,
                        arm,
                        g["environment"][0],
                        pclass,
                        g["prompt_tokens"].median(),
                        g["generated_tokens"].median(),
                        None,
                        g["run"].to_list(),
                        g["median"].to_list(),
                    )
                )
        if camp.runs_of("requests"):
            wc = baseline.whole_request_cells(camp).filter(pl.col("metric").is_in(["single_latency_s", "ladder_tok_s"]))
            for (arm, metric, n), g in wc.group_by(["arm", "metric", "concurrency"], maintain_order=True):
                figures.append(
                    _figure(
                        metric,
                        arm,
                        g["environment"][0],
                        g["prompt_class"][0],
                        g["prompt_tokens"][0],
                        gen,
                        int(n),
                        g["run"].to_list(),
                        g["median"].to_list(),
                    )
                )
        if camp.runs_of("memory"):
            from benchbook.analysis.memory import memory_summaries

            summ = memory_summaries(*camp.memory)
            arm_of = {r.id: r.arm for r in camp.runs_of("memory")}
            for metric in ("peak_gib", "steady_gib"):
                for arm in camp.arms:
                    runs = [r for r in sorted(summ) if arm_of.get(r) == arm]
                    if not runs:
                        continue
                    vals = [summ[r].peak_max_gib if metric == "peak_gib" else summ[r].steady_max_gib for r in runs]
                    figures.append(_figure(metric, arm, camp.arm_environment(arm), None, None, gen, None, runs, vals))
    hist = man.get("history") if isinstance(man.get("history"), Mapping) else {}
    engine = man.get("engine") if isinstance(man.get("engine"), Mapping) else {}
    return {
        "format": HEADLINE_FORMAT,
        "campaign": root.name,
        "title": str(man.get("title") or root.name),
        "date": str(man.get("date") or ""),
        "order": int(hist.get("order", 0)) if isinstance(hist.get("order", 0), int) else 0,
        "series": series_of(man),
        "commit": str(engine.get("commit") or ""),
        "provenance": str(man.get("provenance") or ""),
        "model": model_of(man),
        "hardware": hardware_of(man),
        "figures": figures,
    }


def _pd_figures(camp: Campaign) -> list[dict[str, Any]]:
    from benchbook.analysis import disaggregation

    rep = disaggregation.analyse(camp)
    groups: dict[tuple, dict[str, Any]] = {}
    for c in rep.cells:
        if c.get("window") != "whole" or c.get("key") not in HEADLINE_FIGURES:
            continue
        key = (c["key"], c["arm"], c.get("load") or "")
        g = groups.setdefault(
            key,
            {
                # the load without its "… in / … out" tail: prompt and generation lengths are their own fields
                "load": _load_only(c.get("load")),
                "environment": c.get("environment"),
                "prompt_class": c.get("prompt_class"),
                "prompt_tokens": c.get("prompt_tokens"),
                "generation_tokens": c.get("generated_tokens"),
                "runs": [],
                "values": [],
            },
        )
        if c["run"] not in g["runs"] and c["median"] is not None and c["median"] > 0:
            g["runs"].append(c["run"])
            g["values"].append(c["median"])
    return [
        _figure(
            k[0],
            k[1],
            g["environment"],
            g["prompt_class"],
            g["prompt_tokens"],
            g["generation_tokens"],
            None,
            g["runs"],
            g["values"],
            load=g["load"],
        )
        for k, g in groups.items()
        if g["values"]
    ]


def _load_only(text: Any) -> str | None:
    if not isinstance(text, str) or not text:
        return None
    head, _, tail = text.rpartition(", ")
    return head if head and tail.endswith(" out") else text


# ----------------------------------------------------------------------------- the tidy table

TABLE_SCHEMA: dict[str, str] = {
    "series": "str",
    "figure": "str",
    "metric": "str",
    "label": "str",
    "context": "str",
    "unit": "str",
    "higher_is_better": "bool",
    "page": "str",
    "arm": "str",
    "environment": "str",
    "prompt_class": "str",
    "prompt_tokens": "int",
    "generation_tokens": "int",
    "concurrency": "int",
    "load": "str",
    "model": "str",
    "hardware": "str",
    "campaign": "str",
    "title": "str",
    "date": "str",
    "order": "int",
    "commit": "str",
    "provenance": "str",
    "position": "int",
    "median": "float",
    "min": "float",
    "max": "float",
    "n": "int",
    "spread": "float",
}


def _polars_schema() -> dict[str, Any]:
    import polars as pl

    types = {"str": pl.String, "bool": pl.Boolean, "int": pl.Int64, "float": pl.Float64}
    return {k: types[v] for k, v in TABLE_SCHEMA.items()}


def context_of(f: Mapping[str, Any]) -> str:
    """What a figure's numbers are about: arm, prompt class and length, generation length,
    concurrency, load and environment (every figure states them; model and hardware are beside it)."""
    parts = [f"arm {f['arm']}"]
    if f.get("prompt_class"):
        pt = f.get("prompt_tokens")
        parts.append(f"{f['prompt_class']} prompt" + (f" ({pt} tok)" if pt else ""))
    if f.get("generation_tokens"):
        parts.append(f"{f['generation_tokens']} generated")
    if f.get("concurrency") and f["metric"] == "ladder_tok_s":
        parts.append(f"n={f['concurrency']}")
    if f.get("load"):
        parts.append(f"load {f['load']}")
    parts.append(f"env {f.get('environment') or 'default'}")
    return ", ".join(parts)


# what must agree for two campaigns' figures to be one series: the workload (prompt and generation
# length, concurrency, load), the environment, the model and the hardware (docs/history.md)
CONTEXT_FIELDS: tuple[tuple[str, str], ...] = (
    ("prompt_tokens", "prompt tokens"),
    ("generation_tokens", "generated tokens"),
    ("concurrency", "concurrency"),
    ("load", "load"),
    ("environment", "environment"),
    ("model", "model"),
    ("hardware", "hardware"),
)


def figure_id(f: Mapping[str, Any]) -> str:
    """The figure's identity across campaigns: metric, arm, prompt class and concurrency readable,
    then a digest of its whole context (:data:`CONTEXT_FIELDS`): figures of another workload, model or
    hardware never share an id, so they are never one series."""
    import hashlib

    keys = (f["metric"], f["arm"], f.get("prompt_class") or "", str(f.get("concurrency") or ""))
    ctx = json.dumps([f.get(k) for k, _ in CONTEXT_FIELDS], default=str)
    return "/".join(keys) + "/" + hashlib.sha256(ctx.encode()).hexdigest()[:8]


def _base_id(f: Mapping[str, Any]) -> str:
    return "/".join((f["metric"], f["arm"], f.get("prompt_class") or "", str(f.get("concurrency") or "")))


def history_table(headlines: Iterable[Mapping[str, Any]]) -> pl.DataFrame:
    """One tidy row per (series, figure, campaign), ordered by series, figure, then campaign order."""
    import polars as pl

    rows = []
    for h in headlines:
        seen: set[str] = set()
        for f0 in h.get("figures", []):
            f = {**f0, "model": h.get("model"), "hardware": h.get("hardware")}
            vals = [v for v in f["values"] if v is not None and math.isfinite(v)]
            if not vals:
                continue
            fid = figure_id(f)
            if fid in seen:  # one campaign, one point per figure: two would be plotted as two campaigns
                raise ValueError(f"{h['campaign']}: two headline figures with one context ({fid})")
            seen.add(fid)
            spread = stats.run_spread(vals) if len(vals) >= 2 and min(vals) > 0 else None
            rows.append(
                {
                    "series": h["series"],
                    "figure": fid,
                    "metric": f["metric"],
                    "label": f["label"],
                    "context": context_of(f),
                    "unit": f["unit"],
                    "higher_is_better": bool(f["higher_is_better"]),
                    "page": f["page"],
                    "arm": f["arm"],
                    "environment": f.get("environment") or "",
                    "prompt_class": f.get("prompt_class"),
                    "prompt_tokens": f.get("prompt_tokens"),
                    "generation_tokens": f.get("generation_tokens"),
                    "concurrency": f.get("concurrency"),
                    "load": f.get("load"),
                    "model": f.get("model"),
                    "hardware": f.get("hardware"),
                    "campaign": h["campaign"],
                    "title": h["title"],
                    "date": h["date"],
                    "order": h.get("order", 0),
                    "commit": h.get("commit", ""),
                    "provenance": h.get("provenance", ""),
                    "position": 0,
                    "median": statistics.median(vals),
                    "min": min(vals),
                    "max": max(vals),
                    "n": len(vals),
                    "spread": spread,
                }
            )
    df = pl.DataFrame(rows, schema=_polars_schema())
    df = df.sort(["series", "figure", "date", "order", "campaign"])
    return df.with_columns(
        (pl.col("campaign").cum_count().over(["series", "figure"]) - 1).cast(pl.Int64).alias("position")
    )


def read_table(path: str | Path) -> pl.DataFrame:
    """``history.parquet`` as written by the renderer (for the explore notebook)."""
    import polars as pl

    return pl.read_parquet(path)


# ----------------------------------------------------------------------------- step detection


def robust_scatter(y: Sequence[float]) -> float:
    """Point-to-point noise of a series, robust to a few steps: ``1.4826 × median|Δy| / √2``."""
    d = [abs(b - a) for a, b in zip(y, y[1:])]
    if not d:
        return 0.0
    return 1.4826 * statistics.median(d) / math.sqrt(2)


def detect_steps(
    y: Sequence[float], sigma: Sequence[float], penalty: float | None = None
) -> list[tuple[int, int, float]]:
    """Exact optimal partitioning of ``y`` into constant segments.

    Minimises ``Σ ((y_i − level)/σ_i)² + penalty × (segments − 1)`` over every segmentation
    (O(n²) dynamic programming on prefix sums; the level of a segment is its weighted mean).
    ``penalty`` defaults to ``3 ln n``. Returns the segments as ``(start, end, level)`` with
    ``end`` exclusive, in order.
    """
    import numpy as np

    n = len(y)
    if n == 0:
        return []
    yy = np.asarray(y, dtype=float)
    w = 1.0 / np.square(np.asarray(sigma, dtype=float))
    beta = STEP_PENALTY_PER_LOG_N * math.log(max(n, 2)) if penalty is None else penalty
    W = np.concatenate([[0.0], np.cumsum(w)])
    WY = np.concatenate([[0.0], np.cumsum(w * yy)])
    WYY = np.concatenate([[0.0], np.cumsum(w * yy * yy)])
    best = np.zeros(n + 1)
    prev = np.zeros(n + 1, dtype=int)
    best[0] = -beta
    for j in range(1, n + 1):
        i = np.arange(j)
        sw = W[j] - W[i]
        swy = WY[j] - WY[i]
        cost = (WYY[j] - WYY[i]) - swy * swy / sw
        total = best[:j] + np.maximum(cost, 0.0) + beta
        k = int(np.argmin(total))  # first minimum: deterministic
        best[j] = total[k]
        prev[j] = k
    bounds = []
    j = n
    while j > 0:
        bounds.append((int(prev[j]), j))
        j = int(prev[j])
    bounds.reverse()
    out = []
    for a, b in bounds:
        level = float((WY[b] - WY[a]) / (W[b] - W[a]))
        out.append((a, b, level))
    return out


# ----------------------------------------------------------------------------- the history


@dataclass
class Figure:
    """One headline figure of one series, over its campaigns (rows of the tidy table)."""

    series: str
    figure: str
    metric: str
    label: str
    context: str
    unit: str
    higher_is_better: bool
    page: str
    points: list[dict[str, Any]]  # one per campaign, in history order
    band: float | None  # the history's noise band: median of the measured run-to-run spreads
    scatter: float | None  # campaign-to-campaign scatter of ln(median), robust
    history_noise: float | None = None  # exp(k·√2·scatter) − 1 with ≥ MIN_STEP_CAMPAIGNS campaigns
    changes: list[dict[str, Any]] = field(default_factory=list)  # consecutive campaigns
    segments: list[dict[str, Any]] = field(default_factory=list)  # the step fit
    steps: list[dict[str, Any]] = field(default_factory=list)  # boundaries between segments
    cannot_tell: list[str] = field(default_factory=list)  # why something could not be judged
    setup: str = ""  # model and hardware, beside the context


@dataclass
class History:
    rule: str
    campaigns: int
    series: dict[str, list[str]]  # series -> campaign names in order
    figures: list[Figure]
    what_changed: list[dict[str, Any]]  # worst first
    cannot_tell: list[dict[str, Any]]
    not_comparable: list[dict[str, Any]] = field(default_factory=list)  # one name, several contexts

    def figure(self, series: str, figure: str) -> Figure:
        for f in self.figures:
            if f.series == series and f.figure == figure:
                return f
        raise KeyError((series, figure))

    def summary(self) -> dict[str, Any]:
        """Plain JSON for recorded values and tests."""
        return {
            "rule": self.rule,
            "campaigns": self.campaigns,
            "series": self.series,
            "what_changed": self.what_changed,
            "cannot_tell": self.cannot_tell,
            "not_comparable": self.not_comparable,
            "steps": [
                {"series": f.series, "figure": f.figure, **s} for f in self.figures for s in f.steps if s["is_result"]
            ],
        }


def _cell(p: Mapping[str, Any]) -> stats.Cell:
    if p["n"] <= 1:
        return stats.Cell(p["median"], p["median"], p["median"], 1, (p["median"],))
    return stats.Cell(p["median"], p["min"], p["max"], p["n"], (p["min"], p["median"], p["max"]))


def _consecutive(fig: Figure, rule: str) -> None:
    pts = fig.points
    for a, b in zip(pts, pts[1:]):
        row = {
            "from": a["campaign"],
            "to": b["campaign"],
            "from_date": a["date"],
            "to_date": b["date"],
            "change": b["median"] / a["median"] - 1.0 if a["median"] else None,
        }
        if a["spread"] is None or b["spread"] is None:
            one = [p["campaign"] for p in (a, b) if p["spread"] is None]
            row.update(
                verdict=CANNOT_TELL,
                is_result=False,
                direction=None,
                threshold=None,
                reason=f"no measured run-to-run spread in {' and '.join(one)} (one run): {CANNOT_TELL}",
            )
        elif not (a["min"] > 0 and b["min"] > 0):
            row.update(
                verdict=CANNOT_TELL, is_result=False, direction=None, threshold=None, reason="non-positive values"
            )
        else:
            spread = max(a["spread"], b["spread"])
            what = "the larger of the two campaigns' run-to-run spreads"
            if fig.history_noise is not None and fig.history_noise > spread:
                spread = fig.history_noise
                what = f"the history's own campaign-to-campaign noise ({HISTORY_NOISE_SIGMAS:g} σ of a difference)"
            c = compare(_cell(a), _cell(b), spread=spread, higher_is_better=fig.higher_is_better, rule=rule)
            row.update(
                verdict=c.verdict,
                is_result=c.is_result,
                direction=c.direction,
                threshold=c.threshold,
                reason=f"{c.reason}; spread: {what}",
                **{k: v for k, v in typed_fields(c.typed).items() if k != "direction"},
            )
        fig.changes.append(row)


def _steps(fig: Figure) -> None:
    pts = fig.points
    n = len(pts)
    if n < MIN_STEP_CAMPAIGNS:
        fig.cannot_tell.append(f"{n} campaign(s): step detection needs at least {MIN_STEP_CAMPAIGNS}; {CANNOT_TELL}")
        return
    if fig.band is None:
        fig.cannot_tell.append(f"no campaign measured a run-to-run spread (one run each): {CANNOT_TELL}")
        return
    if any(p["median"] <= 0 for p in pts):
        fig.cannot_tell.append(f"non-positive values: {CANNOT_TELL}")
        return
    y = [math.log(p["median"]) for p in pts]
    widths = [math.log(p["max"] / p["min"]) if p["n"] > 1 and p["min"] > 0 else None for p in pts]
    known = [x for x in widths if x is not None]
    typical = statistics.median(known) if known else 0.0
    base = max(fig.scatter or 0.0, 1e-9)
    sigma = [base * max(1.0, (wd / typical) if (wd is not None and typical > 0) else 1.0) for wd in widths]
    segs = detect_steps(y, sigma)
    for a, b, level in segs:
        fig.segments.append(
            {
                "start": pts[a]["campaign"],
                "end": pts[b - 1]["campaign"],
                "start_position": a,
                "end_position": b - 1,
                "campaigns": b - a,
                "level": math.exp(level),
            }
        )
    for left, right in zip(fig.segments, fig.segments[1:]):
        before, after = left["level"], right["level"]
        diff = stats.rel_diff(before, after)
        change = after / before - 1.0
        typed = decide(
            Evidence(
                point(before),
                point(after),
                fig.higher_is_better,
                "seed",
                fig.band,
                "the history's noise band (median run-to-run spread)",
            )
        )
        is_result = typed.is_result
        at = pts[right["start_position"]]
        prev = pts[right["start_position"] - 1]
        fig.steps.append(
            {
                "at": at["campaign"],
                "at_date": at["date"],
                "previous": prev["campaign"],
                "previous_date": prev["date"],
                "before": before,
                "after": after,
                "change": change,
                "band": fig.band,
                "is_result": is_result,
                "direction": typed.direction if is_result else None,
                "verdict": typed.text if is_result else NOT_A_RESULT,
                **{k: v for k, v in typed_fields(typed).items() if k != "direction"},
                "reason": (
                    f"level {before:.4g} → {after:.4g} {fig.unit}: the difference {stats.fmt_pct(diff)} "
                    f"{'exceeds' if is_result else 'does not exceed'} the history's noise band "
                    f"{stats.fmt_pct(fig.band)} (median run-to-run spread)"
                ),
            }
        )


def load_history(table: str | Path, *, rule: str = "seed") -> History:
    """Read a history table (history.parquet, written by ``render --all``) and judge it with the noise
    ``rule`` (verdict.RULES): the history page's one entry. A missing or unreadable table, a missing
    column or an unknown rule is bad input, named."""
    from benchbook.analysis.verdict import check_rule
    from benchbook.errors import InputError

    check_rule(rule)
    path = Path(table)
    if not path.is_file():
        raise InputError(path, None, "history table does not exist (render --all writes it)")
    try:
        frame = read_table(path)
    except Exception as e:  # noqa: BLE001 - a corrupt Parquet file is bad input, named
        raise InputError(path, None, f"not a readable Parquet table: {type(e).__name__}") from None
    missing = sorted(set(TABLE_SCHEMA) - set(frame.columns))
    if missing:
        raise InputError(path, None, f"missing column(s) {', '.join(missing)}")
    return analyse(frame, rule=rule)


def analyse(table: pl.DataFrame, *, rule: str = "seed") -> History:
    """Judge a :func:`history_table`: consecutive changes, steps, the "what changed" list, and the
    figures of one name that are not comparable (another workload, model or hardware)."""

    figures: list[Figure] = []
    series: dict[str, list[str]] = {}
    cannot: list[dict[str, Any]] = []
    for (s,), g in table.sort(["series", "date", "order", "campaign"]).group_by(["series"], maintain_order=True):
        series[s] = g.unique("campaign", maintain_order=True)["campaign"].to_list()
    for s, names in series.items():
        if len(names) < 2:
            cannot.append(
                {
                    "series": s,
                    "figure": None,
                    "label": f"series {s}",
                    "reason": f"only one campaign ({names[0]}): nothing to compare; {CANNOT_TELL}",
                }
            )
    for (s, fid), g in table.sort(["series", "figure", "position"]).group_by(["series", "figure"], maintain_order=True):
        pts = g.drop(["series", "figure"]).to_dicts()
        spreads = [p["spread"] for p in pts if p["spread"] is not None]
        first = pts[0]
        fig = Figure(
            series=s,
            figure=fid,
            metric=first["metric"],
            label=first["label"],
            context=first["context"],
            unit=first["unit"],
            higher_is_better=first["higher_is_better"],
            page=first["page"],
            points=pts,
            band=statistics.median(spreads) if spreads else None,
            scatter=robust_scatter([math.log(p["median"]) for p in pts if p["median"] > 0]),
            setup=_setup(first),
        )
        if len(pts) >= MIN_STEP_CAMPAIGNS and fig.scatter:
            fig.history_noise = math.exp(HISTORY_NOISE_SIGMAS * math.sqrt(2) * fig.scatter) - 1.0
        if len(pts) >= 2:
            _consecutive(fig, rule)
            _steps(fig)
        figures.append(fig)
    apart = _not_comparable(figures)
    for fig in figures:
        if len(fig.points) < 2:
            other = next((a for a in apart if fig.figure in a["figures"]), None)
            fig.cannot_tell.append(
                f"one campaign ({fig.points[0]['campaign']}) in this context"
                + (f"; the others of its name differ in {', '.join(other['differ'])} (not comparable)" if other else "")
                + f": nothing to compare; {CANNOT_TELL}"
            )
        if len(series.get(fig.series, [])) >= 2:
            label = f"{fig.label} — {fig.context}"
            for why in fig.cannot_tell:
                cannot.append({"series": fig.series, "figure": fig.figure, "label": label, "reason": why})
            undecided = [c for c in fig.changes if c["verdict"] == CANNOT_TELL]
            if undecided:
                cannot.append(
                    {
                        "series": fig.series,
                        "figure": fig.figure,
                        "label": label,
                        "reason": f"{len(undecided)} of {len(fig.changes)} consecutive change(s) cannot be judged: "
                        + undecided[0]["reason"],
                    }
                )
    return History(
        rule=rule,
        campaigns=table["campaign"].n_unique() if table.height else 0,
        series=series,
        figures=figures,
        what_changed=_what_changed(figures),
        cannot_tell=cannot,
        not_comparable=apart,
    )


def _setup(p: Mapping[str, Any]) -> str:
    """Model and hardware of a figure's campaigns, as a reader sees them beside its context."""
    return f"model {p.get('model') or 'not recorded'}, hardware {p.get('hardware') or 'not recorded'}"


def _shown(v: Any) -> str:
    return "not recorded" if v is None or v == "" else str(v)


def _not_comparable(figures: list[Figure]) -> list[dict[str, Any]]:
    """Figures of one name (metric, arm, prompt class, concurrency) in one series whose contexts differ:
    each is its own series of campaigns, never compared with the others; one entry per name saying
    what differs and which campaigns are in each context. Where the context a reader sees would be the
    same (only the model or hardware differs), the differing fields are added to it."""
    groups: dict[tuple[str, str], list[Figure]] = {}
    for f in figures:
        groups.setdefault((f.series, _base_id(f.points[0])), []).append(f)
    out = []
    for (s, _base), fs in groups.items():
        if len(fs) < 2 or len({p["campaign"] for f in fs for p in f.points}) < 2:
            continue  # one campaign's two loads: two figures, but nothing anyone would compare
        differ = [(k, what) for k, what in CONTEXT_FIELDS if len({_shown(f.points[0].get(k)) for f in fs}) > 1]
        if len({f.context for f in fs}) < len(fs):
            for f in fs:
                extra = [f"{what} {_shown(f.points[0].get(k))}" for k, what in differ if f"{what} " not in f.context]
                f.context = ", ".join([f.context, *extra])
        contexts = [
            {"figure": f.figure, "context": f.context, "setup": f.setup, "campaigns": [p["campaign"] for p in f.points]}
            for f in fs
        ]
        what = [w for _, w in differ]
        desc = "; ".join(f"{c['context']} ({', '.join(c['campaigns'])})" for c in contexts)
        out.append(
            {
                "series": s,
                "label": f"{fs[0].label}, arm {fs[0].points[0]['arm']}",
                "differ": what,
                "figures": [f.figure for f in fs],
                "contexts": contexts,
                "reason": f"not comparable: the campaigns differ in {', '.join(what)}; shown as {len(fs)} "
                f"separate figures, never one series: {desc}",
            }
        )
    return out


def _what_changed(figures: list[Figure]) -> list[dict[str, Any]]:
    """Every change that is a result — between consecutive campaigns or a step over the history —
    one row per (figure, campaign where it happened), regressions first, largest first."""
    rows: dict[tuple, dict[str, Any]] = {}
    for f in figures:
        for c in f.changes:
            if c["is_result"]:
                r = _row(rows, f, c["to"], c["to_date"], c["from"], c["from_date"])
                r["consecutive"] = c["verdict"]
                r["change"] = c["change"]
                r["reason"] = c["reason"]
        for st in f.steps:
            if st["is_result"]:
                r = _row(rows, f, st["at"], st["at_date"], st["previous"], st["previous_date"])
                r["step"] = st["verdict"]
                r["step_change"] = st["change"]
                r.setdefault("reason", st["reason"])
                if r.get("change") is None:
                    r["change"] = st["change"]
    out = list(rows.values())
    for r in out:
        better = (r["change"] > 0) == r["higher_is_better"]
        r["direction"] = "improvement" if better else "regression"
    out.sort(key=lambda r: (r["direction"] != "regression", -abs(r["change"]), r["series"], r["figure"], r["to_date"]))
    return out


def _row(rows, f: Figure, to, to_date, frm, from_date) -> dict[str, Any]:
    key = (f.series, f.figure, to)
    if key not in rows:
        rows[key] = {
            "series": f.series,
            "figure": f.figure,
            "label": f.label,
            "context": f.context,
            "unit": f.unit,
            "page": f.page,
            "higher_is_better": f.higher_is_better,
            "from": frm,
            "from_date": from_date,
            "to": to,
            "to_date": to_date,
            "change": None,
            "consecutive": None,
            "step": None,
            "step_change": None,
        }
    return rows[key]
