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
import os
import weakref
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchbook.analysis import baseline, copies, evidence, interleave, stats
from benchbook.analysis.campaign_findings import UNRECONCILED, miscounted
from benchbook.analysis.clamps import ClampResult
from benchbook.analysis.engine_gauges import EngineGauges, engine_gauges
from benchbook.analysis.memory import MemoryDeltaResult, MemorySummary
from benchbook.analysis.references import IntervalRateResult, ReferenceResult
from benchbook.analysis.tables import AnalysisTables, tables_for
from benchbook.analysis.verdict import check_rule
from benchbook.errors import InputError
from benchbook.findings import Exclusion, Findings

if TYPE_CHECKING:
    import polars as pl

    from benchbook.analysis.ablation import CampaignAblation
    from benchbook.analysis.audit import CampaignAudit
    from benchbook.analysis.disaggregation import PDAnalysis
    from benchbook.analysis.pd_report import PDDeployment
    from benchbook.analysis.results import CampaignInputs
    from benchbook.analysis.resultset import ResultSet
    from benchbook.ingest.campaign import Campaign
    from benchbook.reads import ReadCache

SUMMARY_FORMAT = "benchbook.summary/3"
MEMORY_LABEL = {"peak": "peak GPU per rank", "steady": "steady GPU per rank"}


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
    host_memory: dict[str, Any] = field(default_factory=dict)  # run -> memory.HostMemorySummary (no GPU sampled)
    clamps: list[ClampResult] = field(default_factory=list)
    interval_rates: list[IntervalRateResult] = field(default_factory=list)
    references: list[ReferenceResult] = field(default_factory=list)
    ablation: CampaignAblation | None = None
    ablation_note: str | None = None
    pd: PDAnalysis | None = None
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
    copies: list[copies.Copy] = field(default_factory=list)  # runs read twice: counted once, listed
    # the analysis's read cache (benchbook.reads): each input file read once; its counts stay after
    reads: ReadCache | None = field(default=None, repr=False, compare=False)
    # the tables this analysis computed once and the samples it left out (benchbook.analysis.tables):
    # this analysis's own, never another's of the same loaded campaign
    tables: AnalysisTables = field(default=None, repr=False, compare=False)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.tables is None:
            self.tables = tables_for(self.camp)

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
        """A view computed once per analysis object, with this analysis's tables active (the tables
        it asks for are this analysis's, computed once; what it excludes is this analysis's)."""
        with self.tables.active():
            return self.tables.derived(("view", key), make)

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
        """The engine's gauges over the windows of the runs of ``arms`` (:func:`engine_gauges.engine_gauges`)."""
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

    def load_ramps(self, runs: list[str], budget: int) -> dict[str, tuple[pl.DataFrame, pl.DataFrame]]:
        """The memory ramps of ``runs`` inside one chart's row budget (:func:`memory.load_ramps`)."""
        from benchbook.analysis.memory import load_ramps

        gpu, _host, markers = self.camp.memory
        return self._memo(("load_ramps", tuple(runs), budget), lambda: load_ramps(gpu, markers, list(runs), budget))

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

    def excluded(self) -> list[Exclusion]:
        """The samples left out of the figures: what loading left out, then what this analysis did."""
        return [*self.camp.exclusions, *self.tables.excluded]

    def headline(self) -> dict[str, Any]:
        """The campaign's headline figures (:func:`benchbook.analysis.history.headline`), from this
        analysis's tables (the phase and whole-request cells it computed)."""
        from benchbook.analysis.history import headline

        return self._memo("headline", lambda: headline(self.camp))

    def exclusions(self) -> list[dict[str, str]]:
        """Every sample left out, once each, in the order found (PD exclusions included)."""
        seen, out = set(), []
        items = [e.as_dict() for e in self.excluded()]
        items += [{"file": c.file, "sample": f"run {c.run}", "reason": c.text()} for c in self.copies]
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

    def pd_findings(self) -> Findings:
        """The PD page's findings box: the pd.json runs' (:meth:`disaggregation.PDAnalysis.findings`)
        and the Benchmark Reports' deployment checks (:func:`pd_report.findings`)."""
        from benchbook.analysis import pd_report

        base = self.pd.findings() if self.pd is not None else None
        return pd_report.findings(self.pd_deployment, base) if self.pd_deployment else base or Findings.build()

    def baseline_findings(self, arms: list[str] | None = None) -> Findings:
        """The baseline page's findings box for ``arms`` (default: the main arms): the comparisons
        failed checks and clamps first, then the comparisons called results (worst first), then what
        could not be judged."""
        camp = self.camp
        chosen = list(arms) if arms else baseline.main_arms(camp)
        comps = [c for c in self.comparisons if c["baseline"] in chosen and c["candidate"] in chosen]
        checks = [c for c in self.checks if c.get("run") is None or camp.run(c["run"]).arm in chosen]
        # an arm whose engine did not generate the tokens its client reports: its figures are not measured
        unmeasured = {camp.run(c["run"]).arm for c in checks if c.get("run") and miscounted(c)}
        results, why_not = [], {}
        for c in comps:
            if c["is_result"] and {c["baseline"], c["candidate"]} & unmeasured:
                why_not.setdefault(UNRECONCILED, []).append(c)
            elif c["is_result"]:
                name = f"{c['candidate']} vs {c['baseline']}, {baseline.METRIC_NAMES.get(c['metric'], c['metric'])}"
                text = f"{name} ({c['context']}): {c['ratio']:.2f}x ({c['change_pct']:+.1f}%)"
                results.append((c["state"], c["speedup"], text, "comparisons"))
            elif c.get("speedup") is None:  # no verdict possible (no measured spread): one line per reason
                why_not.setdefault(c["reason"], []).append(c)
        unjudged = [
            (f"{len(cs)} comparison{'s' * (len(cs) != 1)} without a verdict: {reason}", "comparisons")
            for reason, cs in why_not.items()
        ]
        unjudged += [(n, "comparisons") for n in interleave.not_measured(camp, chosen)]
        failed = [(f"{c['name']}: {c['detail']}", "checks") for c in checks if c["status"] == "fail"]
        failed += [
            (
                f"{r.arm} clamped: "
                + "; ".join(f"{x['setting']} {x['requested']} requested, {x['ran']} ran" for x in r.clamps),
                "clamps",
            )
            for r in self.clamps
            if r.arm in chosen and r.clamped
        ]
        rl = self.results_ladder
        if rl:  # the ladder from result files: its verdicts and what could not be judged
            rcomps = (
                [c for c in rl["comparisons"] if c["baseline"] in chosen and c["candidate"] in chosen]
                if arms
                else rl["comparisons"]
            )
            results += [
                (
                    c["direction"],
                    c["speedup"],
                    f"{c['candidate']} vs {c['baseline']}, output tok/s at concurrency {c['concurrency']}: {c['ratio']:.2f}x"
                    + (f"; {c['evidence']}" if c.get("evidence") else ""),
                    "results-ladder",
                )
                for c in rcomps
                if c["is_result"]
            ]
            nov = [c for c in rcomps if c["verdict"] == "no verdict"]
            if nov:
                unjudged.append(
                    (
                        f"{len(nov)} output-rate comparison(s) between arms without a verdict: {nov[0]['reason']}",
                        "results-ladder",
                    )
                )
        unjudged += [(line, "exclusions") for line in copies.lines(self.copies)]
        excluded = [e for e in self.excluded() if "warm-up" not in e.reason]
        if excluded:
            unjudged.append(
                (
                    f"{len(excluded)} sample(s) excluded from the statistics besides warm-up rounds; reasons listed",
                    "exclusions",
                )
            )
        return Findings.build(results=results, failed=failed, unjudged=unjudged, results_section="comparisons")

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
        """Each page's findings box, by page kind: the campaign's one list on every page (what the pages
        show, what the index counts and what ``summary --json`` carries)."""
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
            "host_memory": {r: s.figures() for r, s in self.host_memory.items()},
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
                self.engine_gauges().as_dict() if any(self.camp.prometheus_windows(r) for r in self.camp.runs) else None
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
            "copies": [c.as_dict() for c in self.copies],
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
    applies to it. Computed once per loaded campaign object and argument set while the analysis is
    held (and once per campaign folder unchanged on disk where :func:`share_analyses` is on). ``results_options``: keyword
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
    opts, pd_opts = _stated(results_options), dict(pd_options or {})
    frozen = json.dumps([opts, pd_opts], sort_keys=True, default=str)
    link = link_rate(link_gb_s)
    key = (rule, warmup_rounds, spread_override, frozen, cached_prefill, allow_preemption, link)
    shared, folder = _SHARED, None
    if shared is not None and not isinstance(campaign, Campaign):
        folder = (str(Path(campaign).resolve()), campaign_stamp(Path(campaign)), key)
        if (an := shared.get(folder)) is not None:
            return an
    camp = campaign if isinstance(campaign, Campaign) else load_campaign(campaign)
    an = _MADE.get((id(camp), key))
    if an is None or an.camp is not camp:
        an = _read_once(
            camp,
            lambda: _analyse(
                camp, rule, warmup_rounds, spread_override, opts, pd_opts, cached_prefill, allow_preemption, link
            ),
        )
        _MADE[(id(camp), key)] = an
    if folder is not None and not _reads_a_server(camp):
        shared.put(folder, an)
    return an


def _reads_a_server(camp: Campaign) -> bool:
    """The campaign's figures come partly from a Prometheus server (``prometheus`` in campaign.json or
    a run): what it answers is not a file of the folder, so its analysis is never kept across pages."""
    m = camp.manifest
    return bool(m.get("prometheus")) or any(isinstance(r, dict) and r.get("prometheus") for r in m.get("runs", []))


def _stated(results_options: Mapping[str, Any] | None) -> dict[str, Any]:
    """The result-set options that differ from :func:`resultset.build`'s defaults (an empty label
    list, SLO or preset is the default's "none"): the compare page's parameters at their defaults and
    no options at all are one analysis, so a campaign's pages and its findings share it."""
    import inspect

    from benchbook.analysis.resultset import build

    def empty(x: Any) -> bool:
        return x is None or (isinstance(x, (str, list, tuple, dict)) and len(x) == 0)

    defaults = {k: p.default for k, p in inspect.signature(build).parameters.items()}
    return {
        k: v
        for k, v in (results_options or {}).items()
        if k not in defaults or not (v == defaults[k] or (empty(v) and empty(defaults[k])))
    }


# the analyses made of each loaded campaign object, by argument set ((id(camp), key) -> analysis),
# while someone holds the analysis: weak values, so a campaign and its analyses are freed together (an
# entry's analysis holds its campaign, so the id is not reused while the entry lives)
_MADE: weakref.WeakValueDictionary[tuple, CampaignAnalysis] = weakref.WeakValueDictionary()


@dataclass
class SharedAnalyses:
    """Analyses of campaign folders, kept across the pages one process renders (a render worker's
    kernel: the baseline, compare and ablation pages and the campaign's findings of one campaign share
    one analysis). An entry is the folder, the stamp of every file in it (:func:`campaign_stamp`) and
    the arguments, so a folder changed on disk is analysed again; the last ``capacity`` are kept. A
    campaign that reads a Prometheus server is never kept (the server's answer is not on disk)."""

    capacity: int = 2
    entries: OrderedDict[tuple, CampaignAnalysis] = field(default_factory=OrderedDict, repr=False)
    made: int = 0
    reused: int = 0

    def get(self, key: tuple) -> CampaignAnalysis | None:
        an = self.entries.get(key)
        if an is not None:
            self.entries.move_to_end(key)
            self.reused += 1
        return an

    def put(self, key: tuple, an: CampaignAnalysis) -> None:
        if key not in self.entries:
            self.made += 1
        self.entries[key] = an
        self.entries.move_to_end(key)
        while len(self.entries) > self.capacity:
            self.entries.popitem(last=False)


_SHARED: SharedAnalyses | None = None


def share_analyses(capacity: int = 2) -> SharedAnalyses:
    """From now on in this process, :func:`analyse` of a campaign folder reuses the analysis of that
    folder, unchanged on disk, with the same arguments (render workers and their kernels call it;
    elsewhere every call of a folder loads and analyses it anew). Returns the store (its counts)."""
    global _SHARED
    _SHARED = SharedAnalyses(capacity)
    return _SHARED


def campaign_stamp(folder: Path) -> tuple[tuple[str, int, int, int, int], ...]:
    """Every file under ``folder`` (symbolic links not followed) as (path inside it, modification and
    change times in ns, size, inode), sorted: what changes when a file of the campaign is written,
    replaced, added or removed."""
    out = []
    root = str(folder)
    for dirpath, _dirs, files in os.walk(folder):
        for name in files:
            path = os.path.join(dirpath, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue  # gone since the walk listed it: the load that follows says so if it matters
            out.append((os.path.relpath(path, root), st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino))
    return tuple(sorted(out))


def _read_once(camp: Campaign, run: Callable[[], CampaignAnalysis]) -> CampaignAnalysis:
    """``run()`` with a read cache of its own (an analysis inside another shares the outer one) and
    tables of its own held active (:mod:`benchbook.analysis.tables`): each input file is read once,
    each table computed once; what was read is dropped when it is done, the counts kept (``reads``)."""
    from benchbook.reads import ReadCache, current

    tables = AnalysisTables(camp)
    outer = current()
    if outer is not None:
        with tables.active():
            an = run()
        an.reads = outer
        return an
    reads = ReadCache()
    with reads.active(), tables.active():
        an = run()
    reads.release()
    an.reads = reads
    return an


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
        copies=copies.campaign_copies(camp),
    )
    if camp.runs_of("memory") or camp.runs_of("gpu"):
        gpu, host, markers = camp.memory
        from benchbook.analysis.memory import host_memory_summaries, memory_deltas, memory_processes, memory_summaries

        out.memory = memory_summaries(gpu, host, markers)
        out.host_memory = host_memory_summaries(gpu, host, markers)
        out.memory_deltas = memory_deltas(camp, out.memory, out.spread)
        out.memory_processes = memory_processes(camp, markers)
    from benchbook.analysis.clamps import campaign_clamps
    from benchbook.analysis.references import interval_rates, references

    out.clamps = campaign_clamps(camp)
    if pc is not None:
        out.interval_rates = interval_rates(camp, pc)
        out.references = references(camp, pc, out.phase_spread)
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
    _one_decision(out, rule, spread_override)
    if out.switch_ablation is None:  # one ablation per campaign: the one its ablation page shows
        out.ablation, out.ablation_note = _ablation(camp, rule)
    else:
        out.ablation_note = "the arms differ by server switches: the server-switch ablation is this campaign's ablation"
    out.audit = _audit(out, cached_prefill, allow_preemption)
    evidence.attach(out)  # every comparison row with the engine's figures beside it
    return out


def _one_decision(out: CampaignAnalysis, rule: str, spread_override: float | None) -> None:
    """The ladder from result files and the switch ablation of init's arm/run layout, carrying the
    campaign's one decision per comparison: the result set's verdict at a concurrency, the phase
    comparison of a prompt class (a comparison has one verdict on every page and in the summary)."""
    camp = out.camp
    runs = camp.manifest.get("runs", [])
    decided: dict[tuple, Any] = {}
    for c in out.comparisons:  # a phase figure by prompt class, a whole-request figure by concurrency
        decided[(c["baseline"], c["candidate"], c["metric"], c["prompt_class"])] = c
        if c.get("concurrency") is not None:
            decided[(c["baseline"], c["candidate"], c["metric"], int(c["concurrency"]))] = c
    if out.results is not None:
        decided.update(out.results.verdict_lookup({camp.arm_label(a): a for a in camp.arms}))
    if any(r.get("process") for r in runs if r.get("harness") == "results"):
        from benchbook.analysis.ladder import ladder_checks, results_ladder_analysis

        out.results_ladder = results_ladder_analysis(
            camp, rule=rule, spread_override=spread_override, decided=decided, pairs=baseline.comparison_pairs(camp)
        )
        out.checks += ladder_checks(out.results_ladder)
    if any(r.get("process") for r in runs):  # init's arm/run layout: its ablation
        from benchbook.analysis.ablation import switch_ablation

        out.switch_ablation = switch_ablation(camp, rule=rule, spread_override=spread_override, decided=decided)


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
