"""One analysis per campaign: every figure, comparison, verdict, check and exclusion, computed once.

:func:`analyse` loads a campaign and runs every analysis that applies to it — whole-request cells
and ladders, phase cells, the noise yardstick, comparisons between arms with their verdicts,
checks (serialization, pure queueing, batching amortization), memory per run and the deltas
between compared arms (with verdicts), clamps, interval rates between prompt classes, reference
points from earlier measurements, the environment ablation, and the PD analyses — into one
:class:`CampaignAnalysis`. Pages read from it and format; ``benchbook summary --json`` serializes
:meth:`CampaignAnalysis.as_dict` (docs/summary.md documents every key). Nothing here formats HTML.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchbook.analysis import baseline, stats
from benchbook.analysis.memory import MemorySummary, fmt_gib, memory_delta
from benchbook.errors import InputError

if TYPE_CHECKING:
    import polars as pl

    from benchbook.analysis.ablation import CampaignAblation
    from benchbook.analysis.audit import CampaignAudit
    from benchbook.analysis.disaggregation import PDReport
    from benchbook.analysis.results import CampaignInputs
    from benchbook.analysis.resultset import ResultSet
    from benchbook.ingest.campaign import Campaign

SUMMARY_FORMAT = "benchbook.summary/3"
MEMORY_LABEL = {"peak": "peak GPU per rank", "steady": "steady GPU per rank"}


# ---- memory ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MemoryDeltaResult:
    """Candidate − baseline memory per rank (GiB, the largest rank) for one compared arm pair."""

    baseline: str
    candidate: str
    baseline_run: str
    candidate_run: str
    quantity: str  # "peak" | "steady"
    baseline_gib: float
    candidate_gib: float
    delta_gib: float
    threshold_gib: float | None  # the spread applied to the baseline figure
    verdict: str
    is_result: bool
    reason: str

    def describe(self) -> str:
        return (
            f"{self.candidate} vs {self.baseline}: {fmt_gib(self.delta_gib, 2, signed=True)} per rank at "
            f"{self.quantity} ({self.candidate_gib:.2f} against {self.baseline_gib:.2f} GiB, one memory run each) — "
            f"{self.verdict}"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline,
            "candidate": self.candidate,
            "baseline_run": self.baseline_run,
            "candidate_run": self.candidate_run,
            "quantity": self.quantity,
            "metric": f"memory_{self.quantity}_gib",
            "baseline_gib": self.baseline_gib,
            "candidate_gib": self.candidate_gib,
            "delta_gib": self.delta_gib,
            "threshold_gib": self.threshold_gib,
            "verdict": self.verdict,
            "is_result": self.is_result,
            "reason": self.reason,
            "text": self.describe(),
        }


def memory_verdict(base_gib: float, cand_gib: float, spread: float | None) -> tuple[float | None, str, bool, str]:
    """(threshold GiB, verdict, is_result, reason) for a memory delta between two single runs.

    A memory run is one process sampled once, so no memory spread is measured; the campaign's
    run-to-run spread (the noise yardstick) is applied to the baseline's figure as the threshold.
    Without a measured spread nothing is called a result."""
    delta = cand_gib - base_gib
    if spread is None:
        return None, "no verdict", False, "no arm was run twice, so there is no measured spread"
    thr = spread * base_gib
    if abs(delta) > thr:
        word = "more memory" if delta > 0 else "less memory"
        return (
            thr,
            f"result ({word})",
            True,
            f"|{delta:.2f}| GiB exceeds the {stats.fmt_pct(spread)} run-to-run spread of the baseline's "
            f"{base_gib:.2f} GiB ({thr:.2f} GiB); n=1 memory run per arm",
        )
    return (
        thr,
        "within noise — not a result",
        False,
        f"|{delta:.2f}| GiB is inside the {stats.fmt_pct(spread)} run-to-run spread of the baseline's "
        f"{base_gib:.2f} GiB ({thr:.2f} GiB); n=1 memory run per arm",
    )


# ---- interval rates and reference points ------------------------------------------------------------
@dataclass(frozen=True)
class IntervalRateResult:
    """Prefill interval rate of one arm between its shortest and longest prompt class."""

    arm: str
    environment: str
    from_class: str
    to_class: str
    rate: stats.IntervalRate
    n: int  # samples per cell behind each median

    def describe(self) -> str:
        r = self.rate
        return (
            f"{self.arm}: {r.value:.0f} tok/s over the {r.tokens_from:g} → {r.tokens_to:g} token interval "
            f"(prefill medians {r.seconds_from:.3f} s and {r.seconds_to:.3f} s, n={self.n} each) — "
            f"an {r.label}: the interval contains the fixed per-request cost"
        )

    def as_dict(self) -> dict[str, Any]:
        r = self.rate
        return {
            "arm": self.arm,
            "environment": self.environment,
            "from_class": self.from_class,
            "to_class": self.to_class,
            "tokens_from": r.tokens_from,
            "tokens_to": r.tokens_to,
            "seconds_from": r.seconds_from,
            "seconds_to": r.seconds_to,
            "rate_tok_s": r.value,
            "label": r.label,
            "n": self.n,
            "text": self.describe(),
        }


@dataclass(frozen=True)
class ReferenceResult:
    """This campaign's figure against a curve from an earlier measurement (``references`` in the
    manifest), interpolated linearly at this campaign's prompt length."""

    name: str
    source: str
    date: str | None
    arm: str
    prompt_class: str
    metric: str
    unit: str
    prompt_tokens: float
    measured: float
    n: int
    points: tuple[tuple[float, float], ...]
    reference: float | None
    method: str
    change: float | None
    verdict: str
    note: str

    def describe(self) -> str:
        pts = ", ".join(f"{t:g} → {v:g} {self.unit}" for t, v in self.points)
        if self.reference is None:
            return f"{self.name}: {self.method} ({pts}); no reference figure at {self.prompt_tokens:g} tokens"
        return (
            f"{self.metric} at {self.prompt_tokens:g} tokens: {self.measured:.3f} {self.unit} here ({self.arm}, "
            f"median of n={self.n}) against {self.reference:.2f} {self.unit} from {self.name} ({self.method} of "
            f"{pts}), {stats.fmt_pct(self.change, signed=True)} — {self.verdict}"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "source": self.source,
            "date": self.date,
            "arm": self.arm,
            "prompt_class": self.prompt_class,
            "metric": self.metric,
            "unit": self.unit,
            "prompt_tokens": self.prompt_tokens,
            "measured": self.measured,
            "n": self.n,
            "points": [{"prompt_tokens": t, "value": v} for t, v in self.points],
            "reference": self.reference,
            "method": self.method,
            "change": self.change,
            "verdict": self.verdict,
            "note": self.note,
            "text": self.describe(),
        }


def interpolate(points: list[tuple[float, float]], x: float) -> tuple[float | None, str]:
    """Linear interpolation of ``(x, y)`` points at ``x``: (value, the method in words).

    Only between the two measured points that bracket ``x``; outside the measured range there is
    no value (no extrapolation)."""
    pts = sorted(points)
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        if x0 <= x <= x1 and x1 > x0:
            y = y0 + (y1 - y0) * (x - x0) / (x1 - x0)
            return y, f"linear interpolation between {x0:g} and {x1:g} tokens"
    for px, py in pts:
        if px == x:
            return py, f"the measured point at {px:g} tokens"
    return None, f"{x:g} tokens is outside the measured range {pts[0][0]:g}–{pts[-1][0]:g}: not extrapolated"


# ---- clamps --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ClampResult:
    arm: str
    run: str
    line: str
    clamped: bool
    clamps: tuple[dict[str, Any], ...]
    detail: str

    @property
    def verdict(self) -> str:
        return "clamped" if self.clamped else "as requested"

    def as_dict(self) -> dict[str, Any]:
        return {
            "arm": self.arm,
            "run": self.run,
            "clamped": self.clamped,
            "verdict": self.verdict,
            "clamps": list(self.clamps),
            "line": self.line,
            "detail": self.detail,
        }


# ---- the object ----------------------------------------------------------------------------------
@dataclass
class CampaignAnalysis:
    """Everything computed from one campaign (see the module docstring)."""

    camp: Campaign
    rule: str
    warmup_rounds: int | None
    spread_override: float | None
    noise: baseline.Noise | None
    phase_cells: pl.DataFrame | None
    whole_cells: pl.DataFrame
    comparisons: list[dict[str, Any]]
    checks: list[dict[str, Any]]
    memory: dict[str, MemorySummary] = field(default_factory=dict)
    memory_deltas: list[MemoryDeltaResult] = field(default_factory=list)
    clamps: list[ClampResult] = field(default_factory=list)
    interval_rates: list[IntervalRateResult] = field(default_factory=list)
    references: list[ReferenceResult] = field(default_factory=list)
    ablation: CampaignAblation | None = None
    ablation_note: str | None = None
    pd: PDReport | None = None
    # results runs (other tools' result files): the compare page's result set, its inputs and engine checks
    results: ResultSet | None = None
    results_inputs: CampaignInputs | None = None
    results_engine_checks: list[tuple[str, list[Any]]] = field(default_factory=list)
    # what could make the figures lie (cache, preemption, queueing, tokens), the physical limits, energy
    audit: CampaignAudit | None = None

    @property
    def spread(self) -> float | None:
        """The threshold the verdicts used: the override, else the measured spread."""
        if self.spread_override is not None:
            return self.spread_override
        return self.noise.spread if self.noise else None

    def cell_ns(self, arms: list[str] | None = None) -> list[int]:
        """The distinct n of the phase cells (of ``arms``), for "how to read" sentences."""
        if self.phase_cells is None or self.phase_cells.height == 0:
            return []
        import polars as pl

        c = self.phase_cells if arms is None else self.phase_cells.filter(pl.col("arm").is_in(arms))
        return sorted({int(n) for n in c["n"].to_list()})

    def small_n_notes(self, arms: list[str] | None = None) -> list[str]:
        """What the smallest n of the phase cells allows (p-values, bootstrap), from the data."""
        ns = self.cell_ns(arms)
        return stats.small_n_notes(min(ns)) if ns else []

    def exclusions(self) -> list[dict[str, str]]:
        """Every sample left out, once each, in the order found (PD exclusions included)."""
        seen, out = set(), []
        items = [e.as_dict() for e in self.camp.exclusions]
        if self.pd is not None:
            items += list(self.pd.exclusions)
        for e in items:
            key = (e["file"], e["sample"], e["reason"])
            if key not in seen:
                seen.add(key)
                out.append({"file": e["file"], "sample": e["sample"], "reason": e["reason"]})
        return out

    def cells(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if self.phase_cells is not None:
            out += self.phase_cells.drop("discarded").to_dicts()
        if self.whole_cells.height:
            out += self.whole_cells.drop("discarded").to_dicts()
        if self.pd is not None:
            out += self.pd.cells
        return out

    def as_dict(self) -> dict[str, Any]:
        """The summary (``benchbook.summary/3``): plain values; :func:`benchbook.jsonfile.plain` makes it JSON."""
        from benchbook.analysis import resultset

        nz = self.noise
        pd = self.pd
        return {
            "format": SUMMARY_FORMAT,
            "campaign": self.camp.name,
            "title": self.camp.title,
            "provenance": self.camp.manifest["provenance"],
            "rule": self.rule,
            "noise": None
            if nz is None
            else {
                "arm": nz.arm,
                "metric": nz.metric,
                "runs": list(nz.runs),
                "values": list(nz.values),
                "spread": nz.spread,
            },
            "small_n": self.small_n_notes(),
            "cells": self.cells(),
            "comparisons": self.comparisons + (pd.comparisons if pd else []),
            "checks": self.checks + (pd.checks if pd else []),
            "memory": [{"run": run, **s.figures(), "notes": list(s.notes)} for run, s in sorted(self.memory.items())],
            "memory_deltas": [d.as_dict() for d in self.memory_deltas],
            "clamps": [c.as_dict() for c in self.clamps],
            "interval_rates": [r.as_dict() for r in self.interval_rates],
            "references": [r.as_dict() for r in self.references],
            "ablation": None if self.ablation is None else self.ablation.as_dict(),
            "ablation_note": self.ablation_note,
            "pd": None if pd is None else {"admission": pd.admission, "batch_composition": pd.batch_composition},
            "engine_gauges": (
                engine_gauges(self.camp).as_dict()
                if any(self.camp.prometheus_windows(r) for r in self.camp.runs)
                else None
            ),
            "results": None if self.results is None else resultset.as_dict(self.results, self.results_engine_checks),
            "audit": None if self.audit is None else self.audit.as_dict(),
            "exclusions": self.exclusions(),
            "todo": list(self.camp.manifest.get("todo", [])),
        }


# ---- computing it --------------------------------------------------------------------------------
def analyse(
    campaign: str | Path | Campaign,
    *,
    rule: str = "seed",
    warmup_rounds: int | None = None,
    spread_override: float | None = None,
    results_options: Mapping[str, Any] | None = None,
    pd_options: Mapping[str, Any] | None = None,
    cached_prefill: str = "exclude",
    allow_preemption: bool = False,
) -> CampaignAnalysis:
    """Load ``campaign`` (a folder or a loaded :class:`Campaign`) and compute every analysis that
    applies to it. Computed once per campaign object and argument set. ``results_options``: keyword
    arguments of :func:`benchbook.analysis.resultset.build` for the results runs (baseline, labels,
    slo, validity gates; default: its defaults); ``pd_options``: keyword arguments of
    :func:`benchbook.analysis.disaggregation.analyse` (window minimums, baseline arm);
    ``cached_prefill``: "exclude" (default) leaves phase samples whose prompt came mostly from the
    prefix cache out of the prefill figures, "keep" keeps them labelled; ``allow_preemption``: a
    preemption warns instead of failing (docs/checks.md)."""
    from benchbook.analysis.verdict import RULE_TEXT
    from benchbook.ingest.campaign import Campaign, load_campaign

    if rule not in RULE_TEXT:
        raise InputError("parameters", "rule", f"unknown noise rule {rule!r}; choose seed or strict")
    camp = campaign if isinstance(campaign, Campaign) else load_campaign(campaign)
    opts, pd_opts = dict(results_options or {}), dict(pd_options or {})
    frozen = json.dumps([opts, pd_opts], sort_keys=True, default=str)
    key = ("campaign_analysis", rule, warmup_rounds, spread_override, frozen, cached_prefill, allow_preemption)
    return camp.derived(
        key,
        lambda: _analyse(camp, rule, warmup_rounds, spread_override, opts, pd_opts, cached_prefill, allow_preemption),
    )


def _analyse(
    camp: Campaign,
    rule: str,
    warmup_rounds: int | None,
    spread_override: float | None,
    results_options: dict,
    pd_options: dict,
    cached_prefill: str = "exclude",
    allow_preemption: bool = False,
) -> CampaignAnalysis:
    from benchbook.analysis.checks import CACHED_PREFILL_MODES

    if cached_prefill not in CACHED_PREFILL_MODES:
        raise InputError("parameters", "cached_prefill", f"unknown mode {cached_prefill!r}; choose exclude or keep")
    has_phases = bool(camp.runs_of("phases"))
    pc = baseline.phase_cells(camp, warmup_rounds=warmup_rounds, cached_prefill=cached_prefill) if has_phases else None
    wc = baseline.whole_request_cells(camp)
    nz = baseline.noise(camp)
    out = CampaignAnalysis(
        camp=camp,
        rule=rule,
        warmup_rounds=warmup_rounds,
        spread_override=spread_override,
        noise=nz,
        phase_cells=pc,
        whole_cells=wc,
        comparisons=baseline.comparisons(
            camp, rule=rule, spread_override=spread_override, warmup_rounds=warmup_rounds, cached_prefill=cached_prefill
        ),
        checks=baseline.checks(camp),
    )
    if camp.runs_of("memory"):
        gpu, host, markers = camp.memory
        from benchbook.analysis.memory import memory_summaries

        out.memory = memory_summaries(gpu, host, markers)
        out.memory_deltas = _memory_deltas(camp, out.memory, out.spread)
    out.clamps = _clamps(camp)
    if pc is not None:
        out.interval_rates = _interval_rates(camp, pc)
        out.references = _references(camp, pc, out.spread)
    out.ablation, out.ablation_note = _ablation(camp, rule)
    if camp.runs_of("pd"):
        from benchbook.analysis import disaggregation

        out.pd = disaggregation.analyse(camp.root, **pd_options)
    if camp.results_runs:  # other tools' result files: identity, pairings, verdicts, sweeps, gates, engine checks
        from benchbook.analysis import results, resultset

        inputs = results.campaign_inputs(camp.root)
        out.results_inputs = inputs
        out.results = resultset.build(
            inputs.files,
            rule=rule,
            runs=[(pid, r) for pid, _, r in inputs.runs],
            arms=inputs.configs,
            **results_options,
        )
        out.results_engine_checks = inputs.engine_checks()
    out.audit = _audit(out, cached_prefill, allow_preemption)
    return out


def _audit(an: CampaignAnalysis, cached_prefill: str, allow_preemption: bool) -> CampaignAudit:
    """The campaign's audit (analysis/audit.py); its checks join the campaign's checks, so every
    findings box lists a failed one."""
    from benchbook.analysis.audit import campaign_audit

    au = campaign_audit(
        an.camp,
        phase_cells=an.phase_cells,
        results_inputs=an.results_inputs,
        spread=an.spread,
        rule=an.rule,
        cached_prefill=cached_prefill,
        allow_preemption=allow_preemption,
    )
    an.checks = an.checks + au.all_checks()
    return au


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
    return camp.derived(("engine_gauges", wanted), lambda: _engine_gauges(camp, wanted))


def _engine_gauges(camp: Campaign, arms: tuple[str, ...]) -> EngineGauges:
    import polars as pl

    from benchbook.metrics import promsource

    frames, notes, spans, sources = [], [], [], set()
    for r in camp.runs:
        windows = camp.prometheus_windows(r) if r.arm in arms else []
        if not windows:
            continue
        src = camp.prometheus_source(r)
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
        sources.add(promsource._public_url(src["url"]))
        frames.append(g.with_columns(pl.lit(r.id).alias("run"), (pl.col("t") - t0).alias("s")))
    return EngineGauges(pl.concat(frames) if frames else None, spans, notes, sorted(sources))


def _memory_deltas(camp: Campaign, summ: dict[str, MemorySummary], spread: float | None) -> list[MemoryDeltaResult]:
    out = []
    for base, cand in baseline.comparison_pairs(camp):
        rb, rc = camp.runs_of("memory", base), camp.runs_of("memory", cand)
        if not rb or not rc:
            continue
        sb, sc = summ[rb[0].id], summ[rc[0].id]
        d = memory_delta(sb, sc)
        for quantity, b, c, dv in (
            ("peak", sb.peak_max_gib, sc.peak_max_gib, d.peak_gib),
            ("steady", sb.steady_max_gib, sc.steady_max_gib, d.steady_gib),
        ):
            thr, verdict, is_result, reason = memory_verdict(b, c, spread)
            out.append(
                MemoryDeltaResult(base, cand, rb[0].id, rc[0].id, quantity, b, c, dv, thr, verdict, is_result, reason)
            )
    return out


def _clamps(camp: Campaign) -> list[ClampResult]:
    from benchbook.analysis.clamps import detect_clamps, parse_startup_line

    out = []
    for arm in camp.arms:
        runs = [r for r in camp.runs if r.arm == arm and r.server_log.exists()]
        if not runs:
            continue
        r = runs[0]
        st = parse_startup_line(camp.server_log_text(r) or "", r.server_log)
        cl = detect_clamps(camp.arms[arm].get("server_args", {}), st)
        out.append(
            ClampResult(
                arm,
                r.id,
                st.text,
                bool(cl),
                tuple({"setting": c.setting, "requested": c.requested, "ran": c.ran} for c in cl),
                "; ".join(c.explanation for c in cl) or "the server ran what was requested",
            )
        )
    return out


def _interval_rates(camp: Campaign, pc: pl.DataFrame) -> list[IntervalRateResult]:
    """Per arm: the prefill interval rate between its shortest and longest prompt class."""
    out = []
    for arm in camp.arms:
        pts = []
        for pclass in camp.prompt_classes:
            c = baseline.cell_of(pc, arm, pclass, "prefill_s")
            if c is None:
                continue
            toks = _cell_tokens(pc, arm, pclass)
            pts.append((toks, c.median, pclass, c.n))
        if len(pts) < 2:
            continue
        pts.sort()
        lo, hi = pts[0], pts[-1]
        if lo[0] == hi[0]:
            continue
        rate = stats.interval_rate(lo[0], lo[1], hi[0], hi[1])
        out.append(IntervalRateResult(arm, camp.arm_environment(arm), lo[2], hi[2], rate, min(lo[3], hi[3])))
    return out


def _cell_tokens(pc: pl.DataFrame, arm: str, pclass: str) -> float:
    import polars as pl

    f = pc.filter((pl.col("arm") == arm) & (pl.col("prompt_class") == pclass))
    return float(f["prompt_tokens"][0])


def _references(camp: Campaign, pc: pl.DataFrame, spread: float | None) -> list[ReferenceResult]:
    out = []
    for i, ref in enumerate(camp.manifest.get("references", [])):
        where = f"$.references[{i}]"
        arm, metric = ref["arm"], ref["metric"]
        if arm not in camp.arms:
            raise InputError(camp.root / "campaign.json", f"{where}.arm", f"unknown arm {arm!r}")
        if metric not in baseline.PHASE_METRICS:
            raise InputError(camp.root / "campaign.json", f"{where}.metric", f"unknown phase metric {metric!r}")
        pclass = ref["prompt_class"]
        c = baseline.cell_of(pc, arm, pclass, metric)
        if c is None:
            continue
        toks = _cell_tokens(pc, arm, pclass)
        points = tuple((float(p["prompt_tokens"]), float(p["value"])) for p in ref["points"])
        value, method = interpolate(list(points), toks)
        change = None if value is None else c.median / value - 1
        if value is None:
            verdict = "no reference figure"
        elif spread is None:
            verdict = "no verdict: no measured spread"
        elif abs(change) <= spread:
            verdict = f"agrees within the {stats.fmt_pct(spread)} run-to-run spread"
        else:
            verdict = f"differs by more than the {stats.fmt_pct(spread)} run-to-run spread"
        out.append(
            ReferenceResult(
                name=ref["name"],
                source=ref["source"],
                date=ref.get("date"),
                arm=arm,
                prompt_class=pclass,
                metric=metric,
                unit=baseline.PHASE_METRICS[metric][0],
                prompt_tokens=toks,
                measured=c.median,
                n=c.n,
                points=points,
                reference=value,
                method=method,
                change=change,
                verdict=verdict,
                note=ref.get("note", ""),
            )
        )
    return out


def _ablation(camp: Campaign, rule: str) -> tuple[CampaignAblation | None, str | None]:
    """The campaign's environment ablation with its defaults, when the campaign has one: a
    role-baseline arm and ablation arms with phase runs, and a measured spread."""
    from benchbook.analysis.ablation import campaign_ablation

    roles = {a: v.get("role") for a, v in camp.arms.items()}
    if "baseline" not in roles.values() or "ablation" not in roles.values():
        return None, "no arm has role baseline and ablation arms: no ablation"
    try:
        return campaign_ablation(camp, rule=rule), None
    except InputError as e:  # e.g. no repeated runs, or an arm without phase runs: say why, keep the rest
        return None, f"no ablation: {e.reason}"
