"""Benchmark result files compared like with like: everything the compare page shows, decided here.

:func:`build` reads the files (any format :mod:`benchbook.ingest.formats` knows), then

1. counts each run once: duplicates (the same identity and the same per-request records or figures,
   :func:`identity.find_duplicates`) collapse to the richest copy, listed with every file that carried it;
2. reads each run's identity (:mod:`benchbook.analysis.identity`, with the user's overrides) and
   groups runs into configurations — model, dataset and deployment; never the load — and, inside
   each, into loads: runs of one configuration at one load are repeats;
3. pairs configurations: model or dataset differ → side by side, "not comparable"; otherwise
   verdicts at every matched load in three states (:func:`verdict.judge`) with the spread measured
   between the repeats at that load, and the headline per pair at its highest matched load;
4. draws one curve per configuration and load axis (:mod:`benchbook.analysis.sweep`): median
   [min–max] and n per load, saturation from the points that passed the gates;
5. with an SLO (:mod:`benchbook.analysis.slo`), attainment and goodput per run and the highest
   load of each curve meeting it;
6. gates per run (one findings line per failed gate) and the findings a reader needs first.

The page (``benchbook.pages.compare_page``) only formats a :class:`ResultSet`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchbook.analysis import gates as gates_mod
from benchbook.analysis import identity as ident
from benchbook.analysis import slo as slo_mod
from benchbook.analysis import stats
from benchbook.analysis import sweep as sweep_mod
from benchbook.analysis.verdict import STATE_TEXT, Judgement, cannot_tell, check_rule, judge, verdict_fields
from benchbook.errors import InputError
from benchbook.findings import Findings

if TYPE_CHECKING:  # pragma: no cover
    from benchbook.findings import Check
    from benchbook.ingest.formats import BenchmarkRun

VERDICT_METRICS: tuple[tuple[str, bool], ...] = (
    ("output_throughput", True),
    ("request_throughput", True),
    *((f"median_{m}_ms", False) for m in ("ttft", "tpot", "itl", "e2el")),
    *((f"p99_{m}_ms", False) for m in ("ttft", "tpot", "itl", "e2el")),
)
LOAD_KEYS = ("request_rate", "max_concurrency")
# fields a configuration's short label may use, in order, when they vary across the page
_LABEL_FIELDS = (("dataset", ""), ("request_rate", "rate "), ("max_concurrency", "concurrency "),
                 ("engine", "backend "), ("hardware", ""), ("gpus", "GPUs "), ("parallelism", ""))  # fmt: skip


@dataclass
class Entry:
    """One run, counted once."""

    id: str
    run: BenchmarkRun
    carried_by: list[str]  # "file (location)" of every copy, the kept one first
    identity: ident.Identity
    config: str = ""
    gpus: int | None = None
    gates: list[Check] = field(default_factory=list)
    load: str = ""  # the load this run was made at, as the page shows it ("max concurrency 8")

    def get(self, key: str) -> Any:
        return self.run.summary.get(key)


@dataclass
class Configuration:
    label: str
    identity: ident.Identity
    entries: list[Entry]
    why: str  # why these runs are one configuration
    spreads: dict[str, float] = field(default_factory=dict)  # largest run-to-run spread per metric over its loads
    points: list[LoadPoint] = field(default_factory=list)  # its loads, in increasing order


@dataclass
class LoadPoint:
    """A configuration at one load: its repeats."""

    key: tuple[Any, ...]  # identity.load_key
    shown: str  # "max concurrency 8"
    entries: list[Entry]


@dataclass
class Pairing:
    """A configuration against its reference: what kind of comparison they allow, and why."""

    reference: str
    other: str
    kind: str  # "verdicts" | "not comparable" | "no verdict"
    reason: str
    loads: list[str] = field(default_factory=list)  # verdicts: the loads both were run at (matched load)


@dataclass
class VerdictRow:
    baseline: str
    candidate: str
    metric: str
    higher_is_better: bool
    baseline_cell: stats.Cell
    candidate_cell: stats.Cell
    judgement: Judgement
    load: str = ""  # the matched load the two configurations are compared at
    key: tuple[Any, ...] = ()  # that load's identity.load_key (request rate, max concurrency)
    below_gates: tuple[str, ...] = ()  # runs judged below the duration/count gates (spread measured between processes)
    evidence: str = ""  # the engine's figures beside the ratio (analysis.evidence.attach)


@dataclass
class CompareFinding:
    kind: str  # "fail" | "result" | "cannot" | "not comparable" | "saturation" | "slo" | "duplicate" | "noise"
    text: str
    anchor: str  # the page section that shows it


@dataclass
class ResultSet:
    files: list[str]
    entries: list[Entry]
    duplicates: list[dict[str, Any]]
    configs: list[Configuration]
    baseline: str
    rule: str
    pairings: list[Pairing]
    verdicts: list[VerdictRow]
    spreads: dict[str, dict[str, float]]  # comparison group name -> metric -> spread
    sweeps: list[sweep_mod.Sweep]
    slo: slo_mod.Slo | None
    slo_runs: dict[str, slo_mod.RunSlo]
    slo_highest: list[tuple[str, slo_mod.HighestLoad]]
    gate_params: dict[str, Any]
    overrides: list[str]
    findings: list[CompareFinding] = field(default_factory=list)
    headlines: list[dict[str, Any]] = field(default_factory=list)  # across configurations at matched load
    preset: str = ""  # "smoke": gates lowered, every result labelled smoke
    gates: gates_mod.Gates | None = None  # the gates applied, with where they came from
    processes: dict[str, str] = field(default_factory=dict)  # run id -> server process (a campaign's arm/run layout)
    pairs: list[tuple[str, str]] = field(default_factory=list)  # the campaign's (baseline, candidate) arms

    def verdict_lookup(self, arm_of: Mapping[str, str]) -> dict[tuple[str, str, str, int], VerdictRow]:
        """The verdicts at closed-loop loads (every request sent at once, at a max concurrency) by
        (baseline arm, candidate arm, metric, concurrency), ``arm_of``: configuration label -> arm. The
        ladder and the switch ablation show these, so a comparison has one verdict on every page."""
        out = {}
        for v in self.verdicts:
            rate, conc = (list(v.key) + [None, None])[:2]
            if not isinstance(conc, int) or str(rate) not in ("inf", "None") and rate != float("inf"):
                continue
            out[(arm_of.get(v.baseline, v.baseline), arm_of.get(v.candidate, v.candidate), v.metric, conc)] = v
        return out

    def spread_note(self) -> str:
        """Why no spread was measured, as it is (:func:`benchbook.analysis.narrative.spread_sentence`)."""
        from benchbook.analysis.narrative import spread_sentence

        return spread_sentence(self)

    def repeated(self, point: LoadPoint) -> bool:
        """The runs at ``point`` come from two or more server processes: their spread is measured."""
        return len({self.processes[e.id] for e in point.entries if e.id in self.processes}) >= 2

    def usable(self, e: Entry, repeated: bool) -> bool:
        """``e`` may be judged: it passed every gate, or failed only those a spread measured between
        server processes stands in for (:func:`gates.waived`)."""
        failed = _failed(e)
        return not failed or gates_mod.waived(failed, repeated)

    def config(self, label: str) -> Configuration:
        return next(c for c in self.configs if c.label == label)

    def entry(self, run_id: str) -> Entry:
        return next(e for e in self.entries if e.id == run_id)

    # ---- what the compare page reads (issue 26: the result set computes, the page formats) --------
    def identity_rows(self) -> list[dict[str, Any]]:
        return identity_rows(self)

    def pairing_rows(self) -> list[dict[str, Any]]:
        return pairing_rows(self)

    def verdict_rows(self) -> list[dict[str, Any]]:
        return verdict_rows(self)

    def sweep_rows(self) -> list[dict[str, Any]]:
        return sweep_rows(self)

    def check_rows(
        self, engine_checks: Sequence[tuple[str, Sequence[Check]]] = (), entries: Sequence[Entry] | None = None
    ) -> list[dict[str, Any]]:
        return check_rows(self, engine_checks, entries)

    @staticmethod
    def short_why(j: Judgement) -> str:
        return short_why(j)

    def design_notes(self) -> list[str]:
        """What each n-vs-n design among the verdicts allows (:func:`stats.design_note`), once per design."""
        designs = sorted({(v.baseline_cell.n, v.candidate_cell.n) for v in self.verdicts})
        return [stats.design_note(a, b) for a, b in designs]

    def config_cell(self, label: str, key: str) -> stats.Cell | None:
        """The median [min–max] of ``key`` over configuration ``label``'s runs (None without a figure)."""
        vals = [v for v in (e.get(key) for e in self.config(label).entries) if v is not None]
        return stats.cell(vals) if vals else None

    def findings_box(self, audit: Any = None) -> Findings:
        """The compare page's findings box of files compared outside a campaign
        (:func:`benchbook.analysis.campaign_findings.result_set_findings`)."""
        from benchbook.analysis.campaign_findings import result_set_findings

        return result_set_findings(self, audit)

    def request_views(self) -> list[Any]:
        """Per-request views of every run that carries per-request records (:func:`per_request.views`)."""
        from benchbook.analysis.per_request import views

        return views((e.id, e.config, e.run) for e in self.entries)

    def pd_deployment(self, link_gb_s: float | None = None) -> list[Any]:
        """The PD deployments stated by the runs' Benchmark Reports (:func:`pd_report.campaign_reports`)."""
        from benchbook.analysis.pd_report import campaign_reports

        return campaign_reports(((e.id, e.run) for e in self.entries), link_gb_s)

    def engine_window(self, run_id: str, before: str, after: str) -> tuple[Any, list[Any]]:
        """The engine's ``/metrics`` window of ``run_id`` from a before/after pair and its checks (the
        window's own and the reconciliation of the run's figures with it)."""
        from benchbook.analysis import enginemetrics
        from benchbook.analysis.results import EngineWindow, reconcile_run
        from benchbook.metrics import prometheus

        window = enginemetrics.window(prometheus.read(before), prometheus.read(after))
        ew = EngineWindow(run_id, window, {}, "metrics_labels", [before, after])
        return window, [*window.checks, *reconcile_run(self.entry(run_id).run, ew)]


def run_id(path: str | Path, location: str, several: bool) -> str:
    """``stem`` for a file holding one run, ``stem:location`` (``x:line 2``, ``x:$[1]``) otherwise."""
    stem = Path(path).stem
    return f"{stem}:{location}" if several else stem


def shown_paths(files: Sequence[str | Path]) -> list[str]:
    """Each input as a page shows it: relative to the inputs' common folder — never to where the
    kernel runs, and never a machine's absolute path (when the only common folder is the filesystem
    root, the fewest trailing components that tell the files apart)."""
    import os

    if not files:
        return []
    absolute = [os.path.abspath(str(f)) for f in files]
    root = os.path.commonpath([os.path.dirname(a) for a in absolute])
    if os.path.dirname(root) == root:  # "/" (or a drive): nothing in common worth naming
        return ident.short_names([a.replace(os.sep, "/") for a in absolute])
    return [os.path.relpath(a, root).replace(os.sep, "/") for a in absolute]


def _run_ids(raw: list[tuple[str, BenchmarkRun]], shown: dict[str, str]) -> list[str]:
    """Run ids: the file stem (``stem:location``), or where two files share it, the path from the
    inputs' common folder that tells them apart (``serial/results/bench_conc1``)."""
    ids = [rid for rid, _ in raw]
    if len(set(ids)) == len(ids):
        return ids
    clash = set(ids)  # one rule for every run: the path that tells the files apart
    out = []
    for rid, r in raw:
        if rid not in clash:
            out.append(rid)
            continue
        path = shown.get(str(r.source), str(r.source))
        out.append(str(Path(path).with_suffix("")) + ("" if r.location == "$" or ":" not in rid else f":{r.location}"))
    seen: set[str] = set()
    uniq = []
    for rid in out:
        while rid in seen:
            rid += "'"
        seen.add(rid)
        uniq.append(rid)
    return uniq


def _where(path: str | Path, location: str) -> str:
    return Path(path).name + ("" if location == "$" else f" ({location})")


def build(
    files: Sequence[str | Path],
    *,
    baseline: str = "",
    rule: str = "seed",
    labels: Mapping[str, str] | Iterable[str] = (),
    slo: Mapping[str, Any] | None = None,
    min_duration_s: float = 60.0,
    min_completed: int = 100,
    max_error_rate: float = 0.01,
    runs: Sequence[tuple[str, BenchmarkRun]] | None = None,
    arms: Mapping[str, str] | None = None,
    preset: str = "",
    processes: Mapping[str, str] | None = None,
    pairs: Sequence[tuple[str, str]] = (),
    gates: gates_mod.Gates | None = None,
) -> ResultSet:
    """``runs``: (run id, run) already read (a campaign's results runs), instead of reading ``files``
    (which then only locate ``benchbook-compare.yml``); ``arms``: run id -> the arm a campaign gives
    it: the arm *is* the configuration (one per arm, whatever the files' own metadata say) and names
    it. ``processes``: run id -> the server process it is a load point of (init's arm/run layout):
    runs of one arm at one load from two processes measure the spread, and stand in for the
    duration and request-count gates (:mod:`benchbook.analysis.gates`). ``pairs``: the campaign's
    (baseline, candidate) arms, compared in that orientation. ``preset``: ``"smoke"`` lowers the
    validity gates left at their defaults (:data:`gates.PRESETS`) and labels every finding as smoke;
    ``gates``: the analysis' gates, instead of the gate arguments."""
    from benchbook.analysis.reconcile import gates as run_gates
    from benchbook.ingest import formats

    if not files:
        raise InputError("parameters", "files", "no result files to compare")
    check_rule(rule)
    the_gates = gates or gates_mod.resolve(
        {
            "min_duration_s": min_duration_s,
            "min_completed": min_completed,
            "max_error_rate": max_error_rate,
            "preset": preset,
        }  # fmt: skip
    )
    preset = the_gates.preset
    gate_args = the_gates.params()
    the_slo = slo_mod.parse(slo)
    overrides = ident.load_overrides(files, labels)
    raw: list[tuple[str, BenchmarkRun]] = list(runs or [])
    for f in files if runs is None else []:
        read = formats.read(f)
        for r in read:
            raw.append((run_id(f, r.location, len(read) > 1), r))
    shown = dict(zip(map(str, files), shown_paths(files)))
    raw = list(zip(_run_ids(raw, shown) if runs is None else [rid for rid, _ in raw], [r for _, r in raw]))
    # 1. duplicates: the same run (same identity, same records or figures) read more than once
    dup_sets = ident.find_duplicates([r for _, r in raw])
    dropped: set[int] = set()
    carried: dict[int, list[str]] = {i: [_where(r.source, r.location)] for i, (_, r) in enumerate(raw)}
    duplicates = []
    for d in dup_sets:
        others = [i for i in d.members if i != d.kept]
        dropped.update(others)
        carried[d.kept] = [_where(raw[i][1].source, raw[i][1].location) for i in [d.kept, *others]]
        duplicates.append(
            {"kept": raw[d.kept][0], "copies": [raw[i][0] for i in others], "files": carried[d.kept], "why": d.why}
        )
    entries: list[Entry] = []
    seen: set[str] = set()
    for i, (rid, r) in enumerate(raw):
        if i in dropped:
            continue
        while rid in seen:
            rid += "'"
        seen.add(rid)
        user = {}
        for j in [i] + [k for d in dup_sets if d.kept == i for k in d.members if k != i]:
            user = {**overrides.for_file(raw[j][1].source), **user}
        if arms and rid in arms:  # the campaign's arm (campaign.json, often init's): not the user's label
            user = {"campaign_arm": arms[rid], **user}
        e = Entry(rid, r, carried[i], ident.read_identity(r, user))
        e.gpus = ident.gpu_count(r, e.identity)
        e.gates = run_gates(r, **gate_args)
        entries.append(e)
    # 2. configurations (model, dataset, deployment; a campaign's arm) and, inside each, its loads
    groups: list[list[Entry]] = []
    for e in entries:
        for g in groups:
            if _same_configuration(g[0], e, arms):
                g.append(e)
                break
        else:
            groups.append([e])
    axes = _varying_axes(entries)
    labels_ = _labels([g[0].identity for g in groups])
    configs = []
    for lab, g in zip(labels_, groups):
        c = Configuration(lab, g[0].identity, g, "")
        for e in g:
            e.config = lab
            e.load = _load_shown(e.identity, axes)
            pt = next((p for p in c.points if p.key == ident.load_key(e.identity)), None)
            if pt is None:
                c.points.append(LoadPoint(ident.load_key(e.identity), e.load, [e]))
            else:
                pt.entries.append(e)
        c.points.sort(key=lambda p: tuple(_order(v) for v in p.key))
        c.why = _why_grouped(c, arms)
        configs.append(c)
    labels_in = {c.label for c in configs}
    pairs_ = [(b, c) for b, c in pairs if b in labels_in and c in labels_in]
    base = _pick_baseline(baseline or (pairs_[0][0] if pairs_ else ""), configs, entries)
    rs = ResultSet(
        [str(f) for f in files], entries, duplicates, configs, base, rule, [], [], {}, [], the_slo, {}, [],
        dict(gate_args), overrides.sources(), preset=preset, gates=the_gates, processes=dict(processes or {}),
        pairs=pairs_,
    )  # fmt: skip
    for c in configs:
        c.spreads = _point_spreads(c.points, rs)
    _pair(rs)
    _sweeps(rs)
    if the_slo is not None:
        for e in entries:
            rs.slo_runs[e.id] = slo_mod.evaluate(e.run, the_slo)
        for sw in rs.sweeps:
            pts = [
                (p.load_shown, p.load, p.achieved_req_s, _point_slo([rs.slo_runs[r] for r in p.runs]))
                for p in sw.points
            ]
            rs.slo_highest.append((sw.series, slo_mod.highest_load(pts, sw.axis)))
    rs.headlines = _headlines(rs)
    rs.findings = _findings(rs)
    return rs


@dataclass(frozen=True)
class _PointSlo:
    """A point's repeats against the SLO: met when every repeat met it, missed when one missed it."""

    meets: bool | None
    margin: float | None


def _point_slo(runs: list[slo_mod.RunSlo]) -> _PointSlo:
    states = [r.meets for r in runs]
    meets = False if False in states else True if states and all(s is True for s in states) else None
    margins = [r.margin for r in runs]
    return _PointSlo(meets, None if not margins or None in margins else min(m for m in margins if m is not None))


def _order(v: Any) -> float:
    if v is None:
        return -math.inf
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.inf


_AXIS_NAME = {"request_rate": "request rate", "max_concurrency": "concurrency", "burstiness": "burstiness"}


def _varying_axes(entries: list[Entry]) -> list[str]:
    """The load fields that vary across the page (all recorded ones when none varies)."""
    vals = {k: {e.identity.fields[k].shown if k in e.identity.fields else None for e in entries} for k in ident.AXES}
    out = [k for k in ident.AXES if len(vals[k]) > 1]
    return out or [k for k in ident.AXES if vals[k] - {None}][:2]


def _load_shown(i: ident.Identity, axes: list[str]) -> str:
    """``concurrency 8`` (every request at once, at most 8 in flight), ``request rate 8, concurrency 256``."""
    f = i.fields
    keys = [k for k in axes if k in f]
    if "max_concurrency" in keys and "request_rate" in keys and f["request_rate"].shown == "inf":
        keys.remove("request_rate")
    parts = [f"{_AXIS_NAME[k]} {f[k].shown}" for k in keys]
    return ", ".join(parts) or "load not recorded"


def _pick_baseline(baseline: str, configs: list[Configuration], entries: list[Entry]) -> str:
    if not baseline:
        return configs[0].label
    by_id = {e.id: e.config for e in entries}
    if baseline in by_id:
        return by_id[baseline]
    if baseline in [c.label for c in configs]:
        return baseline
    raise InputError(
        "parameters",
        "baseline",
        f"{baseline!r} is neither a run id nor a configuration; runs: {', '.join(by_id)}",
    )


def _same_configuration(a: Entry, b: Entry, arms: Mapping[str, str] | None) -> bool:
    """One configuration: the same campaign arm where the campaign gives arms (whatever the files' own
    metadata say), else the same model, dataset and deployment fields (:func:`identity.same_configuration`)."""
    if arms and a.id in arms and b.id in arms:
        return arms[a.id] == arms[b.id]
    return ident.same_configuration(a.identity, b.identity)


def _why_grouped(c: Configuration, arms: Mapping[str, str] | None = None) -> str:
    g = c.entries
    if arms and all(e.id in arms for e in g):
        head = f"{len(g)} run(s) of arm {arms[g[0].id]!r}, as the campaign lays it out (campaign.json)"
    elif g[0].identity.group is not None:
        head = f"declared one configuration by the user (group {g[0].identity.group!r})"
    elif len(g) == 1:
        return "one run"
    else:
        n = sum(f.group != "load" for f in g[0].identity.fields.values())
        head = f"{len(g)} runs whose {n} model, dataset and deployment fields all agree"
    reps = [f"{p.shown} (n={len(p.entries)})" for p in c.points if len(p.entries) > 1]
    loads = f"at {len(c.points)} load(s)"
    return f"{head}, {loads}" + (f"; repeats at {', '.join(reps)}" if reps else "; no load repeated")


def _labels(ids: list[ident.Identity]) -> list[str]:
    """The shortest label that tells each configuration apart: the user's label where given; else the
    file's own name for it (SGLang tag, vLLM label or ``--metadata arm=``), the deployment and dataset
    fields that differ among configurations of the same model, and the model (the fewest path
    components that tell the models apart) when the models differ or nothing else does."""

    def varying(key: str, among: list[ident.Identity]) -> bool:
        vals = {i.fields[key].shown if key in i.fields else None for i in among}
        return len(vals) > 1

    models = list(dict.fromkeys(i.fields["model"].value for i in ids if "model" in i.fields))
    short = dict(zip(models, ident.short_names(models)))
    params = sorted({k for i in ids for k in i.fields if k.startswith("param:")})
    out = []
    for i in ids:
        if "user_label" in i.fields:
            out.append(i.fields["user_label"].shown)
            continue
        m = i.fields.get("model")
        same = [j for j in ids if (j.fields.get("model") and j.fields["model"].value) == (m and m.value)]
        parts = [i.fields[k].shown for k in ("tag", "label", "param:arm") if k in i.fields and varying(k, same)]
        for k, prefix in _LABEL_FIELDS:
            if k not in ("request_rate", "max_concurrency") and varying(k, same) and k in i.fields:
                parts.append(prefix + i.fields[k].shown)
        for k in params:
            if k != "param:arm" and varying(k, same) and k in i.fields:
                parts.append(f"{i.fields[k].label} {i.fields[k].shown}")
        if len(models) > 1 or not parts:
            parts.insert(0, short.get(m.value, m.shown) if m else "unknown model")
        out.append(" · ".join(parts))
    seen: dict[str, int] = {}
    uniq = []
    for lab in out:
        seen[lab] = seen.get(lab, 0) + 1
        uniq.append(lab if seen[lab] == 1 else f"{lab} #{seen[lab]}")
    return uniq


def _pair(rs: ResultSet) -> None:
    """The campaign's (baseline, candidate) pairs in that orientation where it states them; every other
    configuration against the reference (or, when they may not be compared, the first earlier
    configuration that may): "verdicts" at every load both were run at; "no verdict" when they share
    no load; "not comparable" when no earlier one shares model and dataset."""
    base = rs.config(rs.baseline)
    order = [base, *(c for c in rs.configs if c is not base)]
    paired = {c for _, c in rs.pairs}
    for b, c in rs.pairs:
        reason = ident.not_comparable_reason(rs.config(b).identity, rs.config(c).identity)
        if reason is not None:
            rs.pairings.append(Pairing(b, c, "not comparable", reason + "; shown side by side, no ratio verdict"))
        else:
            _pairing(rs, rs.config(b), rs.config(c))
    for k, c in enumerate(order[1:], 1):
        if c.label in paired or (c is not base and any(c.label == b for b, _ in rs.pairs)):
            continue
        comparable = [r for r in order[:k] if ident.not_comparable_reason(r.identity, c.identity) is None]
        if not comparable:
            reason = ident.not_comparable_reason(base.identity, c.identity) or ""
            rs.pairings.append(
                Pairing(base.label, c.label, "not comparable", reason + "; shown side by side, no ratio verdict")
            )
            continue
        _pairing(rs, comparable[0], c)
    for p in rs.pairings:
        if p.kind == "verdicts":
            _judge_pair(rs, rs.config(p.reference), rs.config(p.other))


def _pairing(rs: ResultSet, r: Configuration, c: Configuration) -> None:
    dep = [d for d in ident.differences(r.identity, c.identity) if d.group == "deployment"]
    why = "; ".join(d.text() for d in dep) or "declared different by the user"
    if (r.label, c.label) in rs.pairs:
        why += f" (the campaign compares {c.label} against {r.label})"
    keys = {p.key for p in c.points}
    matched = [p.shown for p in r.points if p.key in keys]
    if not matched:
        rs.pairings.append(
            Pairing(
                r.label,
                c.label,
                "no verdict",
                f"no load in common ({', '.join(p.shown for p in r.points)} vs {', '.join(p.shown for p in c.points)}), "
                f"so no comparison at matched load; they differ in {why}",
            )
        )
        return
    rs.pairings.append(
        Pairing(
            r.label,
            c.label,
            "verdicts",
            f"same model and dataset, compared at matched load ({', '.join(matched)}); differs in {why}",
            matched,
        )
    )


def _judge_pair(rs: ResultSet, ref: Configuration, c: Configuration) -> None:
    """Verdicts at every matched load: runs that passed the gates (or, where the spread at that load
    was measured between server processes, runs below the duration and count gates), against the
    largest spread measured at that load."""
    for rp in ref.points:
        cp = next((x for x in c.points if x.key == rp.key), None)
        if cp is None:
            continue
        repeated = rs.repeated(rp) or rs.repeated(cp)
        spreads = _point_spreads([rp, cp], rs)
        if spreads:
            rs.spreads[f"{ref.label} vs {c.label} at {rp.shown}"] = spreads
        for metric, hib in VERDICT_METRICS:
            bv, cv = _values(rp.entries, metric), _values(cp.entries, metric)
            if not bv or not cv or min(bv) <= 0 or min(cv) <= 0:
                continue
            use_b = [e for e in rp.entries if rs.usable(e, repeated)]
            use_c = [e for e in cp.entries if rs.usable(e, repeated)]
            bok, cok = _values(use_b, metric), _values(use_c, metric)
            row = functools.partial(VerdictRow, ref.label, c.label, metric, hib, load=rp.shown, key=rp.key)
            if not bok or not cok:
                sides = [x for x, ok in ((ref, bok), (c, cok)) if not ok]
                pts = {ref.label: rp, c.label: cp}
                why = "; ".join(
                    f"every run of {x.label} at {rp.shown} failed a validity gate ({_failed_gates(pts[x.label].entries)})"
                    for x in sides
                ) + (", so the figures are shown but not judged")
                waivable = all(set(_failed(e)) <= gates_mod.WAIVABLE for e in (*rp.entries, *cp.entries))
                if rs.processes and not repeated and waivable:
                    why = (
                        f"neither arm was run twice at {rp.shown} (one server process each), so no spread was "
                        f"measured to stand in for the validity gates its runs are below; {why}"
                    )
                j = cannot_tell(bv, cv, higher_is_better=hib, why=why)
                rs.verdicts.append(row(stats.cell(bv), stats.cell(cv), j))
                continue
            j = judge(bok, cok, spread=spreads.get(metric), higher_is_better=hib, rule=rs.rule)  # type: ignore[arg-type]
            used = [*use_b, *use_c]
            left = [e.id for e in (*rp.entries, *cp.entries) if e not in used and e.get(metric) is not None]
            below = tuple(e.id for e in used if _failed(e))
            if left:
                j = dataclasses.replace(j, why=f"{j.why}; left out, failed a validity gate: {', '.join(left)}")
            if below:
                j = dataclasses.replace(
                    j,
                    why=f"{j.why}; judged although below the duration/count gates ({len(below)} run(s)): the "
                    "spread at this load was measured between server processes",
                )
            rs.verdicts.append(row(stats.cell(bok), stats.cell(cok), j, below_gates=below))


def _failed(e: Entry) -> list[str]:
    """The validity gates run ``e`` failed (minimum duration, completed requests, error rate …)."""
    return [g.name for g in e.gates if g.status == "fail"]


def _failed_gates(entries: Sequence[Entry]) -> str:
    names = sorted({n for e in entries for n in _failed(e)})
    return ", ".join(names)


def _values(entries: Sequence[Entry], metric: str, *, valid: bool = False) -> list[float]:
    """The run-level figures of ``metric`` (runs that record it); ``valid``: only runs that passed
    every validity gate — a run that failed one is shown but never judged or used as noise."""
    return [v for e in entries if not (valid and _failed(e)) for v in [e.get(metric)] if v is not None]


def _point_spreads(points: Sequence[LoadPoint], rs: ResultSet | None = None) -> dict[str, float]:
    """Per metric: the largest run-to-run spread over the points repeated at least twice (runs that
    passed every validity gate, or below the duration/count gates at a point repeated in two or more
    server processes): repeats of one configuration at one load."""
    out: dict[str, float] = {}
    for metric, _ in VERDICT_METRICS:
        for p in points:
            rep = rs is not None and rs.repeated(p)
            use = [e for e in p.entries if (rs.usable(e, rep) if rs is not None else not _failed(e))]
            vals = [v for v in _values(use, metric) if v > 0]
            if len(vals) >= 2:
                out[metric] = max(out.get(metric, 0.0), stats.run_spread(vals, metric))
    return out


def _sweeps(rs: ResultSet) -> None:
    """One curve per configuration and load axis (a configuration run at ≥ 2 loads): points at a
    finite request rate form a request-rate curve per concurrency cap; points sending everything at
    once (rate inf) form a concurrency curve, or join the rate curve of their cap (an ``inf`` point
    of a rate sweep is its capacity)."""
    for c in rs.configs:
        ax = [(p, dict(zip(ident.AXES, p.key))) for p in c.points]
        caps = {a.get("max_concurrency") for _, a in ax if _finite(a.get("request_rate"))}
        fams: dict[tuple[str, Any], list[LoadPoint]] = {}
        for p, a in ax:
            conc = a.get("max_concurrency")
            if _finite(a.get("request_rate")) or conc in caps or conc is None:
                fam = ("request rate", conc)
            else:
                fam = ("max concurrency", None)
            fams.setdefault(fam, []).append(p)
        for (axis, cap), pts in fams.items():
            if len(pts) >= 2:
                rs.sweeps.append(_curve(c, axis, cap, pts, many=len(fams) > 1, rs=rs))


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _curve(
    c: Configuration, axis: str, cap: Any, pts: list[LoadPoint], *, many: bool, rs: ResultSet | None = None
) -> sweep_mod.Sweep:
    key = "request_rate" if axis == "request rate" else "max_concurrency"
    series = c.label + (
        f" ({axis} curve" + (f", max concurrency {cap}" if cap is not None and key == "request_rate" else "") + ")"
        if many
        else ""
    )
    points = []
    for lp in pts:
        rep = rs is not None and rs.repeated(lp)
        ok = [e for e in lp.entries if (rs.usable(e, rep) if rs is not None else not _failed(e))]
        use = ok or lp.entries
        f = lp.entries[0].identity.fields.get(key)
        load = f.value if f is not None else None
        if not isinstance(load, (int, float)) or isinstance(load, bool):
            try:
                load = float(load) if load is not None else None
            except (TypeError, ValueError):
                load = None
        vals: dict[str, list[float]] = {}
        for k in ("output_throughput", "request_throughput", "completed", "duration_s", *(
                f"{s}_{m}_ms" for m in sweep_mod.LATENCIES for s in ("median", "p99"))):  # fmt: skip
            vals[k] = [float(v) for v in _values(use, k)]
        vals["mean_e2el_s"] = [v / 1000 for v in _values(use, "mean_e2el_ms")]
        med = {k: (statistics.median(v) if v else None) for k, v in vals.items()}
        failed = [f"{e.id}: {g.name}: {g.detail}" for e in lp.entries for g in e.gates if g.status == "fail"]
        points.append(
            sweep_mod.Point(
                use[0].id,
                c.label,
                load,
                f.shown if f is not None else "—",
                med["request_throughput"],
                med["output_throughput"],
                {k: med[k] for k in med if k.endswith("_ms")},
                use[0].gpus,
                bool(ok),
                "; ".join(failed) if not ok else "",
                runs=[e.id for e in lp.entries],
                values=vals,
            )  # fmt: skip
        )
    sw = sweep_mod.Sweep(series, axis, "load", points, configuration=c.label)
    sweep_mod.mark_saturation(sw)
    return sw


def _headlines(rs: ResultSet) -> list[dict[str, Any]]:
    """Across configurations at matched load: per pair judged, output tok/s at the highest load both
    were run at, the faster named first."""
    out = []
    for p in rs.pairings:
        if p.kind != "verdicts":
            continue
        rows = [v for v in rs.verdicts if v.baseline == p.reference and v.candidate == p.other]
        rows = [v for v in rows if v.metric == "output_throughput"] or [
            v for v in rows if v.metric == "request_throughput"
        ]
        if not rows:
            continue
        v = rows[-1]  # the highest matched load (points are in increasing load)
        j = v.judgement
        fast, slow = (v.candidate, v.baseline) if j.ratio >= 1 else (v.baseline, v.candidate)
        nf, ns = (v.candidate_cell.n, v.baseline_cell.n) if j.ratio >= 1 else (v.baseline_cell.n, v.candidate_cell.n)
        ratio = j.ratio if j.ratio >= 1 else 1 / j.ratio
        what = "output tok/s" if v.metric == "output_throughput" else "req/s"
        text = f"{fast} vs {slow} at {v.load}: {ratio:.3g}× {what} ({STATE_TEXT[j.state]}, n={nf} vs {ns})"
        out.append({"faster": fast, "slower": slow, "load": v.load, "metric": v.metric, "ratio": ratio,
                    "state": j.state, "n": [nf, ns], "text": text, "why": j.why})  # fmt: skip
    return out


def short_why(j: Judgement) -> str:
    """Why there is no verdict, without the note on rank tests."""
    return j.why.split("; no rank test")[0]


def gate_lines(rs: ResultSet) -> list[str]:
    """One line per failed validity gate with the runs it caught and their range (:func:`gates.gate_lines`)."""
    return [text for _, text, _ in gates_mod.gate_lines(rs)]


def _findings(rs: ResultSet) -> list[CompareFinding]:
    out: list[CompareFinding] = [CompareFinding("fail", line, "compare-checks") for line in gate_lines(rs)]
    for h in rs.headlines:
        out.append(CompareFinding("headline", h["text"], "compare-verdicts"))
    results = [v for v in rs.verdicts if v.judgement.state == "result"]
    results.sort(key=lambda v: (v.judgement.direction != "regression", -abs(math.log(v.judgement.ratio))))
    for v in results:
        out.append(
            CompareFinding(
                "result",
                f"{v.candidate} vs {v.baseline}: {v.metric} {v.judgement.ratio:.3g}x, a result "
                f"({v.judgement.direction})",
                "compare-verdicts",
            )  # fmt: skip
        )
    cannot: dict[tuple[str, str], list[str]] = {}
    for v in rs.verdicts:
        if v.judgement.state == "cannot":
            cannot.setdefault((v.candidate, v.baseline), []).append(short_why(v.judgement))
    for (c, b), whys in cannot.items():
        out.append(
            CompareFinding("cannot", f"{c} vs {b}: cannot tell ({len(whys)} metrics) — {whys[0]}", "compare-verdicts")
        )
    for p in rs.pairings:
        if p.kind == "not comparable":
            out.append(CompareFinding("not comparable", f"{p.other} vs {p.reference}: {p.reason}", "compare-pairings"))
        elif p.kind == "no verdict":
            out.append(
                CompareFinding("cannot", f"{p.other} vs {p.reference}: no verdict — {p.reason}", "compare-pairings")
            )
    for sw in rs.sweeps:
        if sw.saturation is not None:
            pts = ", ".join(p.load_shown for p in sw.points if p.saturated)
            out.append(
                CompareFinding(
                    "saturation",
                    f"curve {sw.series}: saturated at {sw.axis} {sw.saturation} (saturated points: {pts})",
                    "compare-sweeps",
                )
            )
        elif sw.notes:
            out.append(CompareFinding("cannot", f"curve {sw.series}: {'; '.join(sw.notes)}", "compare-sweeps"))
    for series, h in rs.slo_highest:
        out.append(
            CompareFinding(
                "slo",
                f"curve {series}: highest load meeting the SLO ({rs.slo.describe() if rs.slo else ''}): {h.text}",
                "compare-slo",
            )
        )
    for d in rs.duplicates:
        out.append(
            CompareFinding(
                "duplicate",
                f"one run read {len(d['files'])} times, counted once: {', '.join(d['files'])}",
                "compare-duplicates",
            )
        )
    if rs.preset == "smoke":  # a smoke run checks the set-up: nothing on it is a measurement to publish
        out = [CompareFinding(f.kind, f"smoke: {f.text}", f.anchor) for f in out]
    return out


# ---- the one serialized form (compare page values and ``summary --json``) --------------------------
def identity_rows(rs: ResultSet) -> list[dict[str, Any]]:
    return [
        {
            "label": c.label,
            "runs": [e.id for e in c.entries],
            "why": c.why,
            "identity": {k: f.shown for k, f in c.identity.fields.items() if f.group != "load"},
            "loads": [{"load": p.shown, "runs": [e.id for e in p.entries], "n": len(p.entries)} for p in c.points],
            "spreads": c.spreads,
        }
        for c in rs.configs
    ]


def pairing_rows(rs: ResultSet) -> list[dict[str, Any]]:
    return [
        {"reference": p.reference, "other": p.other, "kind": p.kind, "reason": p.reason, "loads": p.loads}
        for p in rs.pairings
    ]


def verdict_rows(rs: ResultSet) -> list[dict[str, Any]]:
    return [
        {
            "baseline": v.baseline,
            "candidate": v.candidate,
            "load": v.load,
            "metric": v.metric,
            "state": v.judgement.state,
            "is_result": v.judgement.is_result,
            "direction": v.judgement.direction,
            "ratio": v.judgement.ratio,
            "spread": v.judgement.spread,
            "p_value": v.judgement.p_value,
            "ci": list(v.judgement.ci) if v.judgement.ci else None,
            "why": v.judgement.why,
            "evidence": v.evidence,
            **verdict_fields(v.judgement),
        }
        for v in rs.verdicts
    ]


def sweep_rows(rs: ResultSet) -> list[dict[str, Any]]:
    return [
        {
            "series": sw.series,
            "configuration": sw.configuration,
            "axis": sw.axis,
            "kind": sw.kind,
            "saturation": sw.saturation,
            "notes": sw.notes,
            "points": [
                {
                    "run": p.run_id,
                    "runs": p.runs,
                    "n": p.n,
                    "load": p.load_shown,
                    "bands": {k: p.band(k) for k in ("output_throughput", "request_throughput", "median_e2el_ms")},
                    "achieved_req_s": p.achieved_req_s,
                    "output_tok_s": p.output_tok_s,
                    "send_rate": p.send_rate,
                    "saturated": p.saturated,
                    "saturation_why": p.saturation_why,
                    "valid": p.valid,
                    "gpus": p.gpus,
                    **p.latency,
                }
                for p in sw.points
            ],
        }
        for sw in rs.sweeps
    ]


def check_rows(
    rs: ResultSet, engine_checks: Sequence[tuple[str, Sequence[Check]]] = (), entries: Sequence[Entry] | None = None
) -> list[dict[str, Any]]:
    """Every run's validity gates, then the engine checks (window, reconciliation, Little's law) per run."""
    rows = [
        {"run": e.id, "kind": "gate", "name": c.name, "status": c.status, "detail": c.detail}
        for e in (rs.entries if entries is None else entries)
        for c in e.gates
    ]
    rows += [
        {"run": run_id, "kind": "engine", "name": c.name, "status": c.status, "detail": c.detail}
        for run_id, checks in engine_checks
        for c in checks
    ]
    return rows


def as_dict(rs: ResultSet, engine_checks: Sequence[tuple[str, Sequence[Check]]] = ()) -> dict[str, Any]:
    """The result set as plain values: what the compare page records, under the same keys."""
    return {
        "configurations": [c.label for c in rs.configs],
        "baseline": rs.baseline,
        "repeats": {c.label: len(c.entries) for c in rs.configs},
        "identities": identity_rows(rs),
        "duplicates": rs.duplicates,
        "pairings": pairing_rows(rs),
        "spreads": rs.spreads,
        "verdicts": verdict_rows(rs),
        "sweeps": sweep_rows(rs),
        "gates": dict(rs.gate_params),
        "preset": rs.preset,
        "headlines": rs.headlines,
        "checks": check_rows(rs, engine_checks),
        "findings": [{"kind": f.kind, "text": f.text} for f in rs.findings],
    }
