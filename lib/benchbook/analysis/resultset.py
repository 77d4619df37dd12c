"""Benchmark result files compared like with like: everything the compare page shows, decided here.

:func:`build` reads the files (any format :mod:`benchbook.ingest.formats` knows), then

1. counts each run once: duplicates by content (:func:`identity.find_duplicates`) collapse to the
   richest copy, listed with every file that carried it;
2. reads each run's identity (:mod:`benchbook.analysis.identity`, with the user's overrides) and
   groups runs into configurations: repeats only when every identity field agrees;
3. pairs configurations: model or dataset differ → side by side, "not comparable"; load alone
   differs → a sweep (:mod:`benchbook.analysis.sweep`); deployment differs at equal load → verdicts
   in three states (:func:`verdict.judge`) with the spread measured between repeats of the
   configurations in that comparison;
4. with an SLO (:mod:`benchbook.analysis.slo`), attainment and goodput per run and the highest
   load of each sweep meeting it;
5. gates per run and the findings a reader needs first.

The page (``benchbook.pages.compare_page``) only formats a :class:`ResultSet`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchbook.analysis import identity as ident
from benchbook.analysis import slo as slo_mod
from benchbook.analysis import stats
from benchbook.analysis import sweep as sweep_mod
from benchbook.analysis.verdict import Judgement, cannot_tell, check_rule, judge, verdict_fields
from benchbook.errors import InputError

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

    def get(self, key: str) -> Any:
        return self.run.summary.get(key)


@dataclass
class Configuration:
    label: str
    identity: ident.Identity
    entries: list[Entry]
    why: str  # why these runs are one configuration
    spreads: dict[str, float] = field(default_factory=dict)  # run-to-run spread per metric, n >= 2


@dataclass
class Pairing:
    """A configuration against its reference: what kind of comparison they allow, and why."""

    reference: str
    other: str
    kind: str  # "verdicts" | "sweep" | "not comparable" | "no verdict"
    reason: str


@dataclass
class VerdictRow:
    baseline: str
    candidate: str
    metric: str
    higher_is_better: bool
    baseline_cell: stats.Cell
    candidate_cell: stats.Cell
    judgement: Judgement


@dataclass
class Finding:
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
    findings: list[Finding] = field(default_factory=list)

    def config(self, label: str) -> Configuration:
        return next(c for c in self.configs if c.label == label)

    def entry(self, run_id: str) -> Entry:
        return next(e for e in self.entries if e.id == run_id)


def run_id(path: str | Path, location: str, several: bool) -> str:
    """``stem`` for a file holding one run, ``stem:location`` (``x:line 2``, ``x:$[1]``) otherwise."""
    stem = Path(path).stem
    return f"{stem}:{location}" if several else stem


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
) -> ResultSet:
    """``runs``: (run id, run) already read (a campaign's results runs), instead of reading ``files``
    (which then only locate ``benchbook-compare.yml``); ``arms``: run id -> the arm label a campaign
    gives it, which names the configuration and, like a user's label, tells configurations apart."""
    from benchbook.analysis.reconcile import gates
    from benchbook.ingest import formats

    if not files:
        raise InputError("parameters", "files", "no result files to compare")
    check_rule(rule)
    the_slo = slo_mod.parse(slo)
    overrides = ident.load_overrides(files, labels)
    raw: list[tuple[str, BenchmarkRun]] = list(runs or [])
    for f in files if runs is None else []:
        read = formats.read(f)
        for r in read:
            raw.append((run_id(f, r.location, len(read) > 1), r))
    # 1. duplicates
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
        if arms and rid in arms:
            user = {"label": arms[rid], **user}
        e = Entry(rid, r, carried[i], ident.read_identity(r, user))
        e.gpus = ident.gpu_count(r, e.identity)
        e.gates = gates(r, min_duration_s=min_duration_s, min_completed=min_completed, max_error_rate=max_error_rate)
        entries.append(e)
    # 2. configurations
    groups: list[list[Entry]] = []
    for e in entries:
        for g in groups:
            if ident.same_configuration(g[0].identity, e.identity):
                g.append(e)
                break
        else:
            groups.append([e])
    labels_ = _labels([g[0].identity for g in groups])
    configs = []
    for lab, g in zip(labels_, groups):
        for e in g:
            e.config = lab
        configs.append(Configuration(lab, g[0].identity, g, _why_grouped(g)))
        configs[-1].spreads = _spreads(configs[-1:])
    base = _pick_baseline(baseline, configs, entries)
    rs = ResultSet(
        [str(f) for f in files], entries, duplicates, configs, base, rule, [], [], {}, [], the_slo, {}, [],
        {"min_duration_s": min_duration_s, "min_completed": min_completed, "max_error_rate": max_error_rate},
        overrides.sources(),
    )  # fmt: skip
    _pair(rs)
    _sweeps(rs)
    if the_slo is not None:
        for e in entries:
            rs.slo_runs[e.id] = slo_mod.evaluate(e.run, the_slo)
        for sw in rs.sweeps:
            pts = [(p.load_shown, p.load, p.achieved_req_s, rs.slo_runs[p.run_id]) for p in sw.points]
            rs.slo_highest.append((sw.series, slo_mod.highest_load(pts, sw.axis)))
    rs.findings = _findings(rs)
    return rs


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


def _why_grouped(g: list[Entry]) -> str:
    if len(g) == 1:
        return "one run"
    if g[0].identity.group is not None:
        return f"declared one configuration by the user (group {g[0].identity.group!r})"
    n = len(g[0].identity.fields)
    return f"{len(g)} runs whose {n} identity fields all agree: repeats"


def _labels(ids: list[ident.Identity]) -> list[str]:
    def varying(key: str, among: list[ident.Identity]) -> bool:
        vals = {i.fields[key].shown if key in i.fields else None for i in among}
        return len(vals) > 1

    out = []
    params = sorted({k for i in ids for k in i.fields if k.startswith("param:")})
    for i in ids:
        if "user_label" in i.fields:
            out.append(i.fields["user_label"].shown)
            continue
        m = i.fields.get("model")
        # what tells this configuration apart from the others of the same model
        same = [j for j in ids if (j.fields.get("model") and j.fields["model"].value) == (m and m.value)]
        parts = [m.shown.rstrip("/").split("/")[-1] if m else "unknown model"]
        for k in ("tag", "label"):
            if k in i.fields:
                parts.append(i.fields[k].shown)
        for k, prefix in _LABEL_FIELDS:
            if varying(k, same) and k in i.fields:
                parts.append(prefix + i.fields[k].shown)
        for k in params:
            if varying(k, same) and k in i.fields:
                parts.append(f"{i.fields[k].label} {i.fields[k].shown}")
        out.append(" · ".join(parts))
    seen: dict[str, int] = {}
    uniq = []
    for lab in out:
        seen[lab] = seen.get(lab, 0) + 1
        uniq.append(lab if seen[lab] == 1 else f"{lab} #{seen[lab]}")
    return uniq


def _pair(rs: ResultSet) -> None:
    """Each configuration against the earlier ones (the reference first): verdicts with one at the
    same load that differs in deployment, sweep with one that differs only in load (or one swept
    parameter); "no verdict" when every comparable one differs in both; "not comparable" (against
    the reference) when none shares model and dataset. Then verdicts inside each verdict group."""
    base = rs.config(rs.baseline)
    order = [base, *(c for c in rs.configs if c is not base)]
    for k, c in enumerate(order[1:], 1):
        comparable = [r for r in order[:k] if ident.not_comparable_reason(r.identity, c.identity) is None]
        if not comparable:
            reason = ident.not_comparable_reason(base.identity, c.identity) or ""
            rs.pairings.append(
                Pairing(base.label, c.label, "not comparable", reason + "; shown side by side, no ratio verdict")
            )
            continue
        verdict_ref = sweep_ref = None
        for r in comparable:
            diffs = ident.differences(r.identity, c.identity)
            load = [d for d in diffs if d.group == "load"]
            dep = [d for d in diffs if d.group == "deployment"]
            if load and not dep and sweep_ref is None:
                sweep_ref = r
                rs.pairings.append(
                    Pairing(
                        r.label, c.label, "sweep", "only the offered load differs: " + "; ".join(d.text() for d in load)
                    )
                )
            elif not load and len(dep) == 1 and dep[0].key.startswith("param:") and sweep_ref is None:
                sweep_ref = r
                rs.pairings.append(
                    Pairing(r.label, c.label, "sweep", f"only the swept parameter differs: {dep[0].text()}")
                )
            elif not load and verdict_ref is None and not (len(dep) == 1 and dep[0].key.startswith("param:")):
                verdict_ref = r
                why = "; ".join(d.text() for d in dep) or "declared different by the user"
                rs.pairings.append(
                    Pairing(r.label, c.label, "verdicts", f"same model, dataset and load; differs in {why}")
                )
        if verdict_ref is None and sweep_ref is None:
            r = comparable[0]
            diffs = ident.differences(r.identity, c.identity)
            rs.pairings.append(
                Pairing(
                    r.label,
                    c.label,
                    "no verdict",
                    "both load and deployment differ, so no single factor is under study: "
                    + "; ".join(d.text() for d in diffs),
                )  # fmt: skip
            )
    # verdict groups: configurations joined by "verdicts" pairings to the same reference
    by_ref: dict[str, list[str]] = {}
    for p in rs.pairings:
        if p.kind == "verdicts":
            by_ref.setdefault(p.reference, []).append(p.other)
    for ref_label, others in by_ref.items():
        members = [rs.config(ref_label), *(rs.config(o) for o in others)]
        spreads = _spreads(members)
        rs.spreads[ref_label] = spreads
        ref = members[0]
        for c in members[1:]:
            for metric, hib in VERDICT_METRICS:
                bv, cv = _values(ref, metric), _values(c, metric)
                if not bv or not cv or min(bv) <= 0 or min(cv) <= 0:
                    continue
                bok, cok = _values(ref, metric, valid=True), _values(c, metric, valid=True)
                if not bok or not cok:
                    sides = [x for x, ok in ((ref, bok), (c, cok)) if not ok]
                    why = "; ".join(
                        f"every run of {x.label} failed a validity gate ({_failed_gates(x)})" for x in sides
                    ) + (", so the figures are shown but not judged")
                    j = cannot_tell(bv, cv, higher_is_better=hib, why=why)
                    rs.verdicts.append(VerdictRow(ref.label, c.label, metric, hib, stats.cell(bv), stats.cell(cv), j))
                    continue
                j = judge(bok, cok, spread=spreads.get(metric), higher_is_better=hib, rule=rs.rule)  # type: ignore[arg-type]
                left = [e.id for e in (*ref.entries, *c.entries) if _failed(e) and e.get(metric) is not None]
                if left:
                    j = dataclasses.replace(j, why=f"{j.why}; left out, failed a validity gate: {', '.join(left)}")
                rs.verdicts.append(VerdictRow(ref.label, c.label, metric, hib, stats.cell(bok), stats.cell(cok), j))


def _failed(e: Entry) -> list[str]:
    """The validity gates run ``e`` failed (minimum duration, completed requests, error rate …)."""
    return [g.name for g in e.gates if g.status == "fail"]


def _failed_gates(c: Configuration) -> str:
    names = sorted({n for e in c.entries for n in _failed(e)})
    return ", ".join(names)


def _values(c: Configuration, metric: str, *, valid: bool = False) -> list[float]:
    """The configuration's run-level figures of ``metric`` (runs that record it); ``valid``: only runs
    that passed every validity gate — a run that failed one is shown but never judged or used as noise."""
    return [v for e in c.entries if not (valid and _failed(e)) for v in [e.get(metric)] if v is not None]


def _spreads(members: list[Configuration]) -> dict[str, float]:
    """Per metric: the largest run-to-run spread over the configurations run at least twice (runs that
    passed every validity gate)."""
    out: dict[str, float] = {}
    for metric, _ in VERDICT_METRICS:
        for c in members:
            vals = [v for v in _values(c, metric, valid=True) if v > 0]
            if len(vals) >= 2:
                out[metric] = max(out.get(metric, 0.0), stats.run_spread(vals, metric))
    return out


def _sweeps(rs: ResultSet) -> None:
    """Connected sets of configurations joined by "sweep" pairings become sweeps, one point per run."""
    adj: dict[str, set[str]] = {}
    for p in rs.pairings:
        if p.kind == "sweep":
            adj.setdefault(p.reference, set()).add(p.other)
            adj.setdefault(p.other, set()).add(p.reference)
    done: set[str] = set()
    for c in rs.configs:
        if c.label not in adj or c.label in done:
            continue
        comp, todo = [], [c.label]
        while todo:
            x = todo.pop()
            if x in done:
                continue
            done.add(x)
            comp.append(x)
            todo.extend(adj.get(x, ()))
        cfgs = [cf for cf in rs.configs if cf.label in comp]
        rs.sweeps.append(_sweep(cfgs))


def _sweep(cfgs: list[Configuration]) -> sweep_mod.Sweep:
    ids = [c.identity for c in cfgs]
    keys = list(dict.fromkeys(k for i in ids for k in i.fields))
    varying = [k for k in keys if len({i.fields[k].shown if k in i.fields else None for i in ids}) > 1]
    if "request_rate" in varying:
        axis, key, kind = "request rate", "request_rate", "load"
    elif "max_concurrency" in varying:
        axis, key, kind = "max concurrency", "max_concurrency", "load"
    else:  # burstiness, or one swept engine parameter
        key = next((k for k in varying if k.startswith("param:")), varying[0] if varying else "request_rate")
        ref = next((i.fields[key] for i in ids if key in i.fields), None)
        axis = ref.label if ref is not None else key
        kind = "load" if ref is not None and ref.group == "load" else "parameter"
    common = [ids[0].fields[k] for k in keys if k not in varying and k in ids[0].fields]
    model = ids[0].fields.get("model")
    series = (
        (model.shown.rstrip("/").split("/")[-1] if model else "unknown model")
        + " · "
        + ", ".join(f"{f.label} {f.shown}" for f in common if f.key not in ("model",) and f.source != "measured")
    )
    points = []
    mean_e2e, dur, done = {}, {}, {}
    for c in cfgs:
        for e in c.entries:
            f = e.identity.fields.get(key)
            load = f.value if f is not None else None
            if not isinstance(load, (int, float)) or isinstance(load, bool):
                try:
                    load = float(load) if load is not None else None
                except (TypeError, ValueError):
                    load = None
            lat = {f"{s}_{m}_ms": e.get(f"{s}_{m}_ms") for m in sweep_mod.LATENCIES for s in ("median", "p99")}
            failed = [g for g in e.gates if g.status == "fail"]
            points.append(
                sweep_mod.Point(
                    e.id,
                    c.label,
                    load,
                    f.shown if f is not None else "—",
                    e.get("request_throughput"),
                    e.get("output_throughput"),
                    lat,
                    e.gpus,
                    not failed,
                    "; ".join(f"{g.name}: {g.detail}" for g in failed),
                )  # fmt: skip
            )
            m = e.get("mean_e2el_ms")
            mean_e2e[e.id] = None if m is None else m / 1000
            dur[e.id] = e.get("duration_s")
            done[e.id] = e.get("completed")
    sw = sweep_mod.Sweep(series, axis, kind, points)
    sweep_mod.mark_saturation(sw, mean_e2e, dur, done)
    return sw


def short_why(j: Judgement) -> str:
    """Why there is no verdict, without the note on rank tests."""
    return j.why.split("; no rank test")[0]


def _findings(rs: ResultSet) -> list[Finding]:
    out: list[Finding] = []
    for e in rs.entries:
        for g in e.gates:
            if g.status == "fail":
                out.append(Finding("fail", f"{e.id}: {g.name} failed — {g.detail}", "compare-checks"))
    results = [v for v in rs.verdicts if v.judgement.state == "result"]
    results.sort(key=lambda v: (v.judgement.direction != "regression", -abs(math.log(v.judgement.ratio))))
    for v in results:
        out.append(
            Finding(
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
        out.append(Finding("cannot", f"{c} vs {b}: cannot tell ({len(whys)} metrics) — {whys[0]}", "compare-verdicts"))
    for p in rs.pairings:
        if p.kind == "not comparable":
            out.append(Finding("not comparable", f"{p.other} vs {p.reference}: {p.reason}", "compare-pairings"))
        elif p.kind == "no verdict":
            out.append(Finding("cannot", f"{p.other} vs {p.reference}: no verdict — {p.reason}", "compare-pairings"))
    for sw in rs.sweeps:
        if sw.saturation is not None:
            pts = ", ".join(p.load_shown for p in sw.points if p.saturated)
            out.append(
                Finding(
                    "saturation",
                    f"sweep {sw.series}: saturated at {sw.axis} {sw.saturation} (saturated points: {pts})",
                    "compare-sweeps",
                )
            )
    for series, h in rs.slo_highest:
        out.append(
            Finding(
                "slo",
                f"sweep {series}: highest load meeting the SLO ({rs.slo.describe() if rs.slo else ''}): {h.text}",
                "compare-slo",
            )
        )
    for d in rs.duplicates:
        out.append(
            Finding(
                "duplicate",
                f"one run read {len(d['files'])} times, counted once: {', '.join(d['files'])}",
                "compare-duplicates",
            )
        )
    return out


# ---- the one serialized form (compare page values and ``summary --json``) --------------------------
def identity_rows(rs: ResultSet) -> list[dict[str, Any]]:
    return [
        {
            "label": c.label,
            "runs": [e.id for e in c.entries],
            "why": c.why,
            "identity": {k: f.shown for k, f in c.identity.fields.items()},
            "spreads": c.spreads,
        }
        for c in rs.configs
    ]


def pairing_rows(rs: ResultSet) -> list[dict[str, Any]]:
    return [{"reference": p.reference, "other": p.other, "kind": p.kind, "reason": p.reason} for p in rs.pairings]


def verdict_rows(rs: ResultSet) -> list[dict[str, Any]]:
    return [
        {
            "baseline": v.baseline,
            "candidate": v.candidate,
            "metric": v.metric,
            "state": v.judgement.state,
            "is_result": v.judgement.is_result,
            "direction": v.judgement.direction,
            "ratio": v.judgement.ratio,
            "spread": v.judgement.spread,
            "p_value": v.judgement.p_value,
            "ci": list(v.judgement.ci) if v.judgement.ci else None,
            "why": v.judgement.why,
            **verdict_fields(v.judgement),
        }
        for v in rs.verdicts
    ]


def sweep_rows(rs: ResultSet) -> list[dict[str, Any]]:
    return [
        {
            "series": sw.series,
            "axis": sw.axis,
            "kind": sw.kind,
            "saturation": sw.saturation,
            "points": [
                {
                    "run": p.run_id,
                    "load": p.load_shown,
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
        "checks": check_rows(rs, engine_checks),
        "findings": [{"kind": f.kind, "text": f.text} for f in rs.findings],
    }
