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
from benchbook.analysis.verdict import NOT_A_RESULT, Evidence, State, Verdict, check_rule, decide, point, typed_fields
from benchbook.errors import InputError
from benchbook.findings import Findings

if TYPE_CHECKING:
    import polars as pl

    from benchbook.analysis.ablation import CampaignAblation
    from benchbook.analysis.audit import CampaignAudit
    from benchbook.analysis.disaggregation import PDReport
    from benchbook.analysis.pd_report import PDReport as PDDeployment
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
    threshold_gib: float | None  # the spread applied to the smaller of the two figures
    verdict: str
    is_result: bool
    reason: str
    typed: Verdict | None = None

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
            **typed_fields(self.typed),
            "text": self.describe(),
        }


def memory_decision(base_gib: float, cand_gib: float, spread: float | None) -> Verdict:
    """The typed verdict on a memory delta between two single memory runs (n=1 each).

    A memory run is one process sampled once, so no memory spread is measured; the campaign's
    run-to-run spread (the noise yardstick) is the threshold on the symmetric difference
    max/min − 1 — equivalently |Δ| against the spread × the *smaller* figure, so swapping the arms
    never changes the verdict. Less memory is the better direction. Without a measured spread
    nothing is called a result."""
    ev = Evidence(
        point(base_gib),
        point(cand_gib),
        higher_is_better=False,
        rule="seed",
        spread=spread,
        spread_from="the campaign's run-to-run spread (noise yardstick); n=1 memory run per arm",
        no_spread="no arm was run twice, so there is no measured spread",
    )
    return decide(ev)


def memory_verdict(base_gib: float, cand_gib: float, spread: float | None) -> tuple[float | None, str, bool, str]:
    """(threshold GiB, verdict words, is_result, reason) of :func:`memory_decision` (kept for callers)."""
    v = memory_decision(base_gib, cand_gib, spread)
    return _memory_words(v, base_gib, cand_gib)


def _memory_words(v: Verdict, base_gib: float, cand_gib: float) -> tuple[float | None, str, bool, str]:
    spread = v.evidence.spread
    if spread is None:
        return None, "no verdict", False, v.reason
    delta = cand_gib - base_gib
    thr = spread * min(base_gib, cand_gib)
    where = (
        f"the {stats.fmt_pct(spread)} run-to-run spread of the smaller figure "
        f"{min(base_gib, cand_gib):.2f} GiB ({thr:.2f} GiB); n=1 memory run per arm"
    )
    if v.is_result:
        word = "more memory" if delta > 0 else "less memory"
        return thr, f"result ({word})", True, f"|{delta:.2f}| GiB exceeds {where}"
    return thr, NOT_A_RESULT, False, f"|{delta:.2f}| GiB is inside {where}"


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
    typed: Verdict | None = None

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
            **typed_fields(self.typed),
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
    # the ladder from results runs that are load points of server processes (init's arm/run layout)
    results_ladder: dict[str, Any] | None = None
    switch_ablation: Any = None  # ablation.SwitchAblation: arms that differ by server switches
    # per gpu run with host samples: each sampled process's Pss/Rss while loaded (memory.process_footprints)
    memory_processes: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # what could make the figures lie (cache, preemption, queueing, tokens), the physical limits, energy
    audit: CampaignAudit | None = None
    # PD deployments stated by llm-d Benchmark Reports among the results runs (analysis.pd_report)
    pd_deployment: list[PDDeployment] = field(default_factory=list)
    link_gb_s: float | None = None  # the KV link rate the deployment checks were held against
    # the phase cells' yardstick where an arm ran its phases in two or more server processes
    # (baseline.phase_noise); None otherwise (the phase comparisons then use ``noise``)
    phase_noise: baseline.Noise | None = None
    _views: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def spread(self) -> float | None:
        """The threshold the verdicts used: the override, else the measured spread."""
        if self.spread_override is not None:
            return self.spread_override
        return self.noise.spread if self.noise else None

    @property
    def phase_spread(self) -> float | None:
        """The threshold for phase figures: the override, else the spread between server processes
        (:attr:`phase_noise`) where measured, else :attr:`spread`."""
        if self.spread_override is not None:
            return self.spread_override
        return self.phase_noise.spread if self.phase_noise else self.spread

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

    # ---- views the pages read (computed here, once per argument; pages format them) ------------
    def _memo(self, key: Any, make: Any) -> Any:
        """A view computed once per analysis object (kept here, not on the ingest campaign)."""
        if key not in self._views:
            self._views[key] = make()
        return self._views[key]

    def main_arms(self) -> list[str]:
        """The arms the baseline page shows by default (:func:`baseline.main_arms`)."""
        return self._memo("main_arms", lambda: baseline.main_arms(self.camp))

    def phase_cells_of(self, arms: list[str] | None = None) -> pl.DataFrame:
        """The phase cells of ``arms`` at this analysis' warm-up rounds, the discarded samples named
        (:func:`baseline.phase_cells`); the pages' tables and charts read these."""
        key = ("phase_cells", None if arms is None else tuple(arms))
        return self._memo(key, lambda: baseline.phase_cells(self.camp, arms, self.warmup_rounds))

    @staticmethod
    def cell_of(
        cells: pl.DataFrame, arm: str, prompt_class: str, metric: str, run: str | None = None
    ) -> stats.Cell | None:
        """One cell of a phase-cells frame (:func:`baseline.cell_of`; ``run``: that process's)."""
        return baseline.cell_of(cells, arm, prompt_class, metric, run)

    def whole_request_rows(self) -> list[dict[str, Any]]:
        """The whole-request table, one row per run in manifest order (:func:`baseline.whole_request_rows`)."""
        return self._memo("whole_request_rows", lambda: baseline.whole_request_rows(self.camp))

    def engine_gauges(self, arms: list[str] | None = None) -> EngineGauges:
        """The engine's gauges over the windows of the runs of ``arms`` (:func:`engine_gauges`)."""
        return engine_gauges(self.camp, arms)

    def memory_table(self) -> pl.DataFrame:
        """The memory display table, one row per memory/gpu run (:func:`memory.memory_table`)."""
        from benchbook.analysis.memory import memory_table

        return self._memo("memory_table", lambda: memory_table(self.memory))

    def load_ramp(self, run: str) -> tuple[pl.DataFrame, pl.DataFrame]:
        """One gpu run's memory over time and its events (:func:`memory.load_ramp`)."""
        from benchbook.analysis.memory import load_ramp

        gpu, _host, markers = self.camp.memory
        return self._memo(("load_ramp", run), lambda: load_ramp(gpu, markers, run))

    def ladder_table(self) -> pl.DataFrame:
        """The request ladder of the requests runs, one row per (run, concurrency) (:func:`ladder.ladder_table`);
        an empty frame without requests runs."""

        def make() -> pl.DataFrame:
            import polars as pl

            from benchbook.analysis.ladder import ladder_table

            req = self.camp.requests
            return ladder_table(req) if req.height else pl.DataFrame()

        return self._memo("ladder_table", make)

    def ablation_of(
        self, baseline_arm: str = "", arms: list[str] | None = None, metrics: list[str] | None = None
    ) -> CampaignAblation:
        """The environment ablation of ``arms`` against ``baseline_arm`` (defaults: the role-baseline
        arm and every ablation arm; :func:`ablation.campaign_ablation`); bad input raises, named."""
        from benchbook.analysis.ablation import campaign_ablation

        key = (
            "ablation",
            baseline_arm,
            None if arms is None else tuple(arms),
            None if metrics is None else tuple(metrics),
        )
        return self._memo(
            key,
            lambda: campaign_ablation(self.camp, baseline_arm=baseline_arm, arms=arms, metrics=metrics, rule=self.rule),
        )

    def server_switch_ablation(self) -> Any:
        """The server-switch ablation of init's arm/run layout (:func:`ablation.switch_ablation`), or None."""
        if self.switch_ablation is not None:
            return self.switch_ablation
        if not any(r.get("process") for r in self.camp.manifest.get("runs", [])):
            return None
        from benchbook.analysis.ablation import switch_ablation

        return self._memo("switch_ablation", lambda: switch_ablation(self.camp, rule=self.rule))

    def effective_env(self, arm: str) -> dict[str, str]:
        """Every known variable's value in ``arm``'s environment (:func:`ablation.effective_env`)."""
        from benchbook.analysis.ablation import effective_env

        return self._memo(("effective_env", arm), lambda: effective_env(self.camp, arm))

    @staticmethod
    def design_notes(n_per_side: int) -> list[str]:
        """What n per side allows (p-values, bootstrap), in sentences (:func:`stats.small_n_notes`)."""
        return stats.small_n_notes(n_per_side)

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

    # ---- findings: what each page (and the index) opens with -----------------------------------
    def page_kinds(self) -> list[str]:
        """The pages this campaign gets, decided from what it holds (the renderer's ``pages_for``
        decides the same from the manifest): baseline (requests/phases runs), ablation (an arm with
        role ablation), pd (PD runs, or results runs read from Benchmark Reports that state prefill and
        decode roles), compare (results runs)."""
        camp = self.camp
        kinds = []
        if camp.runs_of("requests") or camp.runs_of("phases"):
            kinds.append("baseline")
        if any(v.get("role") == "ablation" for v in camp.arms.values()):
            kinds.append("ablation")
        if self.pd is not None or self.pd_deployment:
            kinds.append("pd")
        if self.results is not None:
            kinds.append("compare")
        return kinds

    def campaign_findings(self) -> Findings:
        """The campaign's one findings list (:func:`benchbook.analysis.campaign_findings.campaign_findings`):
        failed checks, warnings by cause, results, what was not judged, and the rules — every page of
        the campaign opens with it, ``summary --json`` and the index carry it."""
        from benchbook.analysis.campaign_findings import campaign_findings

        return self._memo("campaign_findings", lambda: campaign_findings(self))

    def verdict_sentences(self, arms: list[str]) -> list[str]:
        """The baseline page's verdict for ``arms`` (:func:`benchbook.analysis.narrative.verdict_sentences`)."""
        from benchbook.analysis.narrative import verdict_sentences

        return verdict_sentences(self, arms)

    def processes_sentence(self, arms: list[str] | None = None) -> str:
        """How many server processes (repeats) each arm ran (:func:`narrative.processes_sentence`)."""
        from benchbook.analysis.narrative import processes_sentence

        return processes_sentence(self.camp, arms)

    def reading_guide(self, kind: str, arms: list[str] | None = None) -> dict[str, Any]:
        """The "How to read this page" items of a page of ``kind`` (:func:`narrative.reading_guide`)."""
        from benchbook.analysis.narrative import reading_guide

        return reading_guide(self, kind, arms)

    @property
    def findings(self) -> dict[str, Findings]:
        """Each page's findings box, by page kind: the campaign's one list on every page."""
        box = self.campaign_findings()
        return {kind: box for kind in self.page_kinds()}

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
            "noise": None if nz is None else nz.as_dict(),
            "phase_noise": None if self.phase_noise is None else self.phase_noise.as_dict(),
            "small_n": self.small_n_notes(),
            "cells": self.cells(),
            "comparisons": self.comparisons + (pd.comparisons if pd else []),
            "checks": self.checks + (pd.checks if pd else []),
            "memory": [{"run": run, **s.figures(), "notes": list(s.notes)} for run, s in sorted(self.memory.items())],
            "memory_deltas": [d.as_dict() for d in self.memory_deltas],
            "memory_processes": self.memory_processes,
            "clamps": [c.as_dict() for c in self.clamps],
            "interval_rates": [r.as_dict() for r in self.interval_rates],
            "references": [r.as_dict() for r in self.references],
            "ablation": None if self.ablation is None else self.ablation.as_dict(),
            "ablation_note": self.ablation_note,
            "pd": None
            if pd is None
            else {"admission": pd.admission, "batch_composition": pd.batch_composition, "seam": pd.seam},
            "pd_deployment": {"link_gb_s": self.link_gb_s, "runs": [r.as_dict() for r in self.pd_deployment]}
            if self.pd_deployment
            else None,
            "engine_gauges": (
                engine_gauges(self.camp).as_dict()
                if any(self.camp.prometheus_windows(r) for r in self.camp.runs)
                else None
            ),
            "results": None if self.results is None else resultset.as_dict(self.results, self.results_engine_checks),
            "results_ladder": self.results_ladder,
            "switch_ablation": None if self.switch_ablation is None else self.switch_ablation.as_dict(),
            "server_configs": {
                r["process"]: r["server_config"]
                for r in self.camp.manifest.get("runs", [])
                if r.get("process") and isinstance(r.get("server_config"), dict)
            },
            "audit": None if self.audit is None else self.audit.as_dict(),
            "exclusions": self.exclusions(),
            "findings": {k: f.as_dict() for k, f in self.findings.items()},
            "todo": list(self.camp.manifest.get("todo", [])),
        }


def results_findings(rs: ResultSet, audit: CampaignAudit | None = None) -> Findings:
    """The compare page's findings box from its result set (:meth:`ResultSet.findings_box`)."""
    return rs.findings_box(audit)


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
    link_gb_s: float | None = None,
) -> CampaignAnalysis:
    """Load ``campaign`` (a folder or a loaded :class:`Campaign`) and compute every analysis that
    applies to it. Computed once per campaign object and argument set. ``results_options``: keyword
    arguments of :func:`benchbook.analysis.resultset.build` for the results runs (baseline, labels,
    slo, validity gates; default: its defaults); ``pd_options``: keyword arguments of
    :func:`benchbook.analysis.disaggregation.analyse` (window minimums, baseline arm);
    ``cached_prefill``: "exclude" (default) leaves phase samples whose prompt came mostly from the
    prefix cache out of the prefill figures, "keep" keeps them labelled; ``allow_preemption``: a
    preemption warns instead of failing (docs/checks.md); ``link_gb_s``: the KV-transfer link rate
    (GB/s) the PD deployment checks of Benchmark Reports are held against (None or 0: not judged
    without a link rate, docs/pd.md)."""
    from benchbook.analysis.pd_report import link_rate
    from benchbook.ingest.campaign import Campaign, load_campaign

    check_rule(rule)
    camp = campaign if isinstance(campaign, Campaign) else load_campaign(campaign)
    opts, pd_opts = dict(results_options or {}), dict(pd_options or {})
    frozen = json.dumps([opts, pd_opts], sort_keys=True, default=str)
    link = link_rate(link_gb_s)
    key = ("campaign_analysis", rule, warmup_rounds, spread_override, frozen, cached_prefill, allow_preemption, link)
    return camp.derived(
        key,
        lambda: _analyse(
            camp, rule, warmup_rounds, spread_override, opts, pd_opts, cached_prefill, allow_preemption, link
        ),
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
    link_gb_s: float | None = None,
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
        phase_noise=baseline.phase_noise(camp, pc),
        link_gb_s=link_gb_s,
    )
    if camp.runs_of("memory") or camp.runs_of("gpu"):
        gpu, host, markers = camp.memory
        from benchbook.analysis.memory import memory_summaries

        out.memory = memory_summaries(gpu, host, markers)
        out.memory_deltas = _memory_deltas(camp, out.memory, out.spread)
        out.memory_processes = _memory_processes(camp, markers)
    out.clamps = _clamps(camp)
    if pc is not None:
        out.interval_rates = _interval_rates(camp, pc)
        out.references = _references(camp, pc, out.phase_spread)
    out.ablation, out.ablation_note = _ablation(camp, rule)
    if camp.is_pd:
        from benchbook.analysis import disaggregation

        out.pd = disaggregation.analyse(camp, **pd_options)  # the campaign's own PD part, not a reload
    if camp.results_runs:  # other tools' result files: identity, pairings, verdicts, sweeps, gates, engine checks
        from benchbook.analysis import gates, results, resultset

        out.results_inputs = inputs = results.campaign_inputs(camp)
        opts = {k: v for k, v in results_options.items() if k not in (*gates.GATE_DEFAULTS, "preset")}
        procs = {r["id"]: r["process"] for r in camp.manifest.get("runs", []) if r.get("process")}
        out.results = resultset.build(  # one configuration per arm, the campaign's pairs, processes and gates
            inputs.files,
            rule=rule,
            runs=[(pid, r) for pid, _, r in inputs.runs],
            arms=inputs.configs,
            processes={pid: procs[rid] for pid, rid, _ in inputs.runs if rid in procs},
            pairs=[(camp.arm_label(b), camp.arm_label(c)) for b, c in baseline.comparison_pairs(camp)],
            gates=gates.resolve(results_options, camp.manifest.get("gates")),
            **opts,
        )
        out.results_engine_checks = inputs.engine_checks()
        from benchbook.analysis import pd_report

        # runs counted once (a duplicate set's kept copy): their Benchmark Reports' PD deployments
        out.pd_deployment = pd_report.campaign_reports(((e.id, e.run) for e in out.results.entries), link_gb_s)
    if any(r.get("process") for r in camp.manifest.get("runs", []) if r.get("harness") == "results"):
        from benchbook.analysis.ablation import switch_ablation
        from benchbook.analysis.ladder import ladder_checks, results_ladder_analysis

        arm_of = {camp.arm_label(a): a for a in camp.arms}
        decided = {(c["baseline"], c["candidate"], c["metric"], c["prompt_class"]): c for c in out.comparisons}
        decided.update(out.results.verdict_lookup(arm_of) if out.results is not None else {})  # one decision each
        out.results_ladder = results_ladder_analysis(
            camp, rule=rule, spread_override=spread_override, decided=decided, pairs=baseline.comparison_pairs(camp)
        )
        out.checks += ladder_checks(out.results_ladder)
        out.switch_ablation = switch_ablation(camp, rule=rule, spread_override=spread_override, decided=decided)
    out.audit = _audit(out, cached_prefill, allow_preemption)
    return out


def _audit(an: CampaignAnalysis, cached_prefill: str, allow_preemption: bool) -> CampaignAudit:
    """The campaign's audit (analysis/audit.py) and the results runs' short-count checks
    (``checks.short_count_checks``: no engine window needed); its checks join the campaign's checks,
    so every findings box lists a failed one."""
    from benchbook.analysis.audit import campaign_audit
    from benchbook.analysis.checks import short_count_checks

    au = campaign_audit(
        an.camp,
        phase_cells=an.phase_cells,
        results_inputs=an.results_inputs,
        spread=an.spread,
        rule=an.rule,
        cached_prefill=cached_prefill,
        allow_preemption=allow_preemption,
    )
    if an.results_inputs is not None:
        au.checks += short_count_checks(an.results_inputs)
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


def _memory_processes(camp: Campaign, markers: pl.DataFrame) -> dict[str, list[dict[str, Any]]]:
    """Each gpu run's sampled processes (host sampler rows) while loaded, from its markers."""
    import polars as pl

    from benchbook.analysis.memory import loaded_window, process_footprints
    from benchbook.ingest.gpu_runs import host_processes

    out = {}
    for r in camp.runs_of("gpu"):
        host = host_processes(camp, r)
        if host is None:
            continue
        m = markers.filter(pl.col("run") == r.id)
        _start, load_end, stop = loaded_window(list(zip(m["t"].to_list(), m["event"].to_list())), f"run {r.id}")
        out[r.id] = process_footprints(host, load_end, stop)
    return out


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
            v = memory_decision(b, c, spread)
            thr, verdict, is_result, reason = _memory_words(v, b, c)
            out.append(
                MemoryDeltaResult(
                    base, cand, rb[0].id, rc[0].id, quantity, b, c, dv, thr, verdict, is_result, reason, v
                )
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
        typed = None if value is None else reference_decision(value, c, metric, spread)
        if typed is None:
            verdict = "no reference figure"
        elif typed.state is State.CANNOT_TELL:
            verdict = "no verdict: no measured spread"
        elif typed.state is State.WITHIN_NOISE:
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
                typed=typed,
            )
        )
    return out


def reference_decision(reference: float, measured: stats.Cell, metric: str, spread: float | None) -> Verdict:
    """This campaign's cell against an earlier measurement's (interpolated, n=1) figure: the seed rule
    with n=1 on the reference side, i.e. the symmetric difference max/min − 1 of the two medians
    against the run-to-run spread (the old rule tested |change| against the spread, with the change
    taken relative to the reference — not symmetric)."""
    return decide(
        Evidence(
            point(reference),
            measured,
            higher_is_better=baseline.PHASE_METRICS[metric][1],
            rule="seed",
            spread=spread,
            spread_from="the campaign's run-to-run spread (noise yardstick)",
            no_spread="no arm was run twice, so there is no measured spread",
        )
    )


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
