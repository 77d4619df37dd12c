"""Results campaigns: what the compare page reads from a campaign of results runs, and each run's
reconciliation against the engine's own counters over the same window.

``campaign_inputs(path)`` loads the campaign, reads every result file of every results run
(``benchbook.ingest.formats``) and, for a run that has engine ``/metrics`` (a before/after capture
pair or a Prometheus window), the window's deltas (``enginemetrics.window``).

``reconcile_run(bench, engine)`` first decides *which* engine series the client's requests went
to. The series are split by labels that identify deployments (``model_name``, ``engine`` = DP rank);
they are never added up. The client's model (``config.model``) must name the series' ``model_name``
(exactly, or as the last path component: ``facebook/opt-125m`` ↔ ``opt-125m``); a window whose only
series serves another model is **not comparable** and the model check fails — the figures of 600
``opt-125m-tp2`` requests say nothing about a bench of 8 ``facebook/opt-125m`` requests. When the
files cannot tell (a ``--served-model-name`` alias, several DP ranks), ``metrics_labels`` in
campaign.json picks the series, and the check names that key.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchbook.analysis import enginemetrics
from benchbook.analysis.reconcile import figure_check as Check  # the one check model, with its figures
from benchbook.analysis.reconcile import reconcile
from benchbook.analysis.tables import tables_for
from benchbook.errors import InputError
from benchbook.findings import Exclusion
from benchbook.ingest.formats import BenchmarkRun
from benchbook.ingest.results_runs import ResultsRun

if TYPE_CHECKING:
    from benchbook.ingest.campaign import Campaign

MODEL_CHECK = "model: engine series vs client model"
# what reconcile() reports, for the "not comparable" rows when the series cannot be chosen
RECONCILE_CHECKS = (
    "generation tokens: engine Δ vs client Σ output tokens",
    "successes: engine Δ vs client completed",
    "mean TTFT: engine vs client",
    "mean E2E: engine vs client",
)
RECONCILE_QUANTITIES = ("ttft", "e2e", "generation_tokens", "prompt_tokens", "requests_success")
LITTLE_CHECK = "Little's law: engine in-flight (running + waiting) vs client λ × W"
# The engine's in-flight count is sampled every few seconds and time-averaged between samples, while
# the client's W is measured per request: a gap of 10 % passes, up to 25 % warns, beyond fails.
SNAPSHOT_TOLERANCE = 0.10
SNAPSHOT_FAIL_TOLERANCE = 0.25


@dataclass
class EngineWindow:
    """A results run's engine window and how to pick its series."""

    run_id: str
    window: enginemetrics.MetricsWindow
    labels: dict[str, str]
    labels_key: str  # the campaign.json key that sets ``labels``
    sources: list[str]
    snapshots: list[tuple[Path, float | None]] = field(default_factory=list)  # periodic, (file, unix_s)
    series: list[Path] = field(default_factory=list)  # JSON Lines scrape series taken during the run

    def scrapes(self, names: list[str], *, untimed: bool = False) -> list[tuple[float | None, Any]]:
        """The scrapes taken during the run (``results_runs.timed_scrapes``), parsed for ``names``."""
        from benchbook.ingest.results_runs import timed_scrapes

        return timed_scrapes(self.snapshots, self.series, names, untimed=untimed)


@dataclass
class CampaignInputs:
    root: Path
    title: str
    runs: list[tuple[str, str, BenchmarkRun]]  # (page run id, results run id, run)
    files: list[str]  # result files, in order
    inputs: list[str]  # every file read (campaign.json, results.json, captures), for provenance
    windows: dict[str, EngineWindow] = field(default_factory=dict)  # results run id -> window
    todo: list[str] = field(default_factory=list)
    incomplete: list[str] = field(default_factory=list)  # results runs whose capture stopped early
    # page run id -> configuration label, for runs whose campaign.json entry names an arm: the arm's
    # label is the configuration (two arms are two configurations even where the files look alike)
    configs: dict[str, str] = field(default_factory=dict)

    def open_items(self) -> list[str]:
        """The campaign's ``todo`` and, for a run whose capture stopped early that no todo line
        names, a line saying so: what the page lists under its title."""
        out = list(self.todo)
        for rid in self.incomplete:
            if not any(t.startswith(f"run {rid}:") for t in self.todo):
                out.append(f"run {rid}: its capture stopped before the end (results.json complete: false)")
        return out

    def engine_checks(self) -> list[tuple[str, list[Check]]]:
        """(page run id, checks) for every run whose results run has an engine window: the window's own
        checks and the reconciliation (model first). A results run holding several benchmark runs
        shares one window among them: nothing is reconciled, and the row says why."""
        out: list[tuple[str, list[Check]]] = []
        per_rr: dict[str, list[tuple[str, BenchmarkRun]]] = {}
        for pid, rid, run in self.runs:
            per_rr.setdefault(rid, []).append((pid, run))
        for rid, ew in self.windows.items():
            members = per_rr.get(rid, [])
            if len(members) == 1:
                pid, run = members[0]
                out.append((pid, [*ew.window.checks, *reconcile_run(run, ew)]))
            else:
                why = f"the window of run {rid!r} covers {len(members)} benchmark runs; split them into one results run each"
                out.append((rid, [*ew.window.checks, Check(MODEL_CHECK, "warn", f"not checked: {why}")]))
        return out


def _model_matches(client: str | None, served: str) -> bool:
    if not client:
        return False
    c = client.rstrip("/")
    return c == served or c.split("/")[-1] == served.rstrip("/").split("/")[-1]


def pick_series(run: BenchmarkRun, ew: EngineWindow) -> tuple[Check, tuple | None]:
    """The model check and the one series the client's requests went to (None when there is none)."""
    keys = [k for k in ew.window.series if all(item in k for item in ew.labels.items())]
    client = run.config.get("model")
    shown = ", ".join(enginemetrics.fmt_labels(k) for k in ew.window.series[:4]) or "none"
    if ew.labels:
        if len(keys) == 1:
            served = dict(keys[0]).get("model_name")
            return (
                Check(
                    MODEL_CHECK,
                    "pass",
                    f"series {enginemetrics.fmt_labels(keys[0])} picked by {ew.labels_key} in campaign.json "
                    f"(client model {client!r}{'' if served is None else f', engine model_name {served!r}'})",
                ),
                keys[0],
            )
        return (
            Check(
                MODEL_CHECK,
                "fail",
                f"{ew.labels_key} {ew.labels} picks {len(keys)} of the window's series ({shown}); "
                "it must pick exactly one",
            ),
            None,
        )
    with_model = [k for k in keys if "model_name" in dict(k)]
    if not with_model:
        if len(keys) == 1:
            return (
                Check(
                    MODEL_CHECK,
                    "warn",
                    f"not checked: the engine's series carry no model_name label (client model {client!r})",
                ),
                keys[0],
            )
        return (
            Check(
                MODEL_CHECK,
                "warn",
                f"not checked: {len(keys)} series ({shown}) and no model_name label; set {ew.labels_key} "
                "in campaign.json to the labels of the client's series",
            ),
            None,
        )
    match = [k for k in with_model if _model_matches(client, dict(k)["model_name"])]
    served = sorted({dict(k)["model_name"] for k in with_model})
    if not match:
        return (
            Check(
                MODEL_CHECK,
                "fail",
                f"not comparable: the client ran model {client!r} but the engine window's series serve "
                f"{', '.join(repr(s) for s in served)}; a different model's counters say nothing about this run. "
                f"If it is the same deployment under another name (--served-model-name), set {ew.labels_key} "
                f'in campaign.json (e.g. {{"model_name": "{served[0]}"}})',
                None,
                None,
            ),
            None,
        )
    if len(match) > 1:
        return (
            Check(
                MODEL_CHECK,
                "warn",
                f"not checked: {len(match)} series serve {client!r} "
                f"({', '.join(enginemetrics.fmt_labels(k) for k in match[:4])}: several engines/DP ranks, never added "
                f'up); set {ew.labels_key} in campaign.json to pick one (e.g. {{"engine": "0"}})',
            ),
            None,
        )
    return (
        Check(MODEL_CHECK, "pass", f"client model {client!r} is served by {enginemetrics.fmt_labels(match[0])}"),
        match[0],
    )


def reconcile_run(run: BenchmarkRun, ew: EngineWindow) -> list[Check]:
    """The model check, then ``reconcile.reconcile`` on the series it picked; when no series can be
    picked, every reconciliation check is listed as not comparable (never passed)."""
    model, key = pick_series(run, ew)
    if key is None:
        # the reason is the model check's, said there once; each check left unmade points to it
        why = f"not checked: no engine series for the client's model (see {MODEL_CHECK!r})"
        return [model, *(Check(name, "warn", why) for name in RECONCILE_CHECKS)]
    out = [model, *reconcile(run, ew.window.engine(key))]
    if ew.snapshots or ew.series:
        out.append(littles_law(run, ew, key))
    return out


def engine_in_flight(ew: EngineWindow, key: tuple) -> tuple[float, int, float, float] | None:
    """Time-averaged running + waiting of series ``key`` over the snapshots that carry a time
    (trapezoids between samples, the gauge linear between scrapes): (mean in flight, snapshots used,
    span in seconds, largest gap in seconds); None with fewer than two timed snapshots. A
    concurrency measured by the engine, independent of the client."""
    from benchbook.analysis import engine_concurrency

    prof = ew.window.profile
    if not (prof.has("running") and prof.has("waiting")):
        return None
    names = prof.sample_names(["running", "waiting"])
    pts = []
    for t, snap in ew.scrapes(names):
        n = sum(enginemetrics.values(snap, prof, q).get(key, 0.0) for q in ("running", "waiting"))
        pts.append((float(t), n))
    pts.sort()
    if len(pts) < 2 or pts[-1][0] <= pts[0][0]:
        return None
    span = pts[-1][0] - pts[0][0]
    gap = max(t1 - t0 for (t0, _), (t1, _) in zip(pts, pts[1:], strict=False))
    mean = engine_concurrency.time_average([engine_concurrency.GaugeSample(t, n) for t, n in pts])
    return mean, len(pts), span, gap


def engine_in_flight_time(ew: EngineWindow, key: tuple, span: float) -> tuple[float, str] | None:
    """L from the engine's own E2E histogram: Δ sum of its request latencies over the window, divided by
    the window — the time-integral of the requests in flight, by the engine's clock, that no scrape gap
    can miss (requests that started before the window or ended after it count whole: the before/after
    scrapes bracket the run). None without the histogram."""
    e = ew.window.engine(key)
    if "e2e_sum" not in e or span <= 0:
        return None
    name = ew.window.profile.ref("e2e").name if ew.window.profile.has("e2e") else "e2e"
    how = (
        f"the engine's own time in flight, Δ {name}_sum {e['e2e_sum']:.4g} s over {e.get('e2e_count', 0):g} "
        f"requests ÷ the {span:.3g}-s window,"
    )
    return e["e2e_sum"] / span, how


def littles_law(run: BenchmarkRun, ew: EngineWindow, key: tuple) -> Check:
    """The engine's own in-flight count L against the client's λ × W over the snapshots' window.

    The window is the timed snapshots' span (``capture run`` takes one before and one after the
    command, so every request falls inside it); λ is the client's completed requests over that same
    span — L and λW share their denominator — and W the client's mean E2E.
    """
    from benchbook.analysis import engine_concurrency, littles

    done, w_ms = run.summary.get("completed"), run.summary.get("mean_e2el_ms")
    if done is None or w_ms is None:
        return Check(LITTLE_CHECK, "warn", "not checked: the client file records no completed count or mean E2E")
    got = engine_in_flight(ew, key)
    if got is None:
        return Check(
            LITTLE_CHECK,
            "warn",
            "not checked: fewer than two periodic snapshots with a time (unix_s), or no running/waiting gauges",
        )
    L, n, span, gap = got
    c = littles.check(
        float(done) / span,
        float(w_ms) / 1000,
        L,
        tolerance=SNAPSHOT_TOLERANCE,
        fail_tolerance=SNAPSHOT_FAIL_TOLERANCE,
        concurrency_source=(
            f"engine running + waiting, time-averaged over {n} snapshots ({span:.1f} s, largest gap {gap:.3g} s)"
        ),
    )
    c = engine_concurrency.unresolved(c, gap, float(w_ms) / 1000)
    alt = engine_in_flight_time(ew, key, span) if gap > float(w_ms) / 1000 else None
    if alt is not None:  # the gauges sampled too sparsely to show every request: the engine's own time in flight
        L, how = alt
        c = littles.check(
            float(done) / span,
            float(w_ms) / 1000,
            L,
            tolerance=SNAPSHOT_TOLERANCE,
            fail_tolerance=SNAPSHOT_FAIL_TOLERANCE,
            concurrency_source=how
            + f" (the gauges' largest gap between scrapes, {gap:.3g} s, is longer than W, {float(w_ms) / 1000:.3g} s)",
        )
        n = ew.window.engine(key).get("e2e_count")
        if n is not None and n != float(done):
            c = dataclasses.replace(
                c,
                detail=f"{c.detail}; the engine finished {n:g} requests in the window, the client's file {done}: "
                "the others (the tool's warm-up or test requests) are in L, not in λ",
            )
    rel = (L - c.implied) / c.implied if c.implied else None
    return Check(LITTLE_CHECK, c.status, c.detail, L, c.implied, L - c.implied, rel)


def engine_window(camp, rr: ResultsRun) -> EngineWindow | None:
    """The results run's engine window (capture pair or Prometheus window); None without one."""
    from benchbook.metrics import prometheus
    from benchbook.metrics.profiles import detect_profile

    if rr.metrics_before is not None and rr.metrics_after is not None:
        before, after = prometheus.read(rr.metrics_before), prometheus.read(rr.metrics_after)
        profile = camp.profile if camp.manifest.get("engine") else detect_profile(after)
        w = enginemetrics.window(before, after, profile)
        return EngineWindow(
            rr.id, w, rr.labels, rr.labels_key, [str(rr.metrics_before), str(rr.metrics_after)], rr.snapshots, rr.series
        )
    if rr.window is not None:
        from benchbook.metrics import promsource, source_allow
        from benchbook.metrics.promsource import DEFAULT_TIMEOUT_S

        src = camp.prometheus_source(camp.run(rr.id))
        refused = source_allow.refusal(src["url"])
        if refused:  # not allowed in this run: no engine window, and the run says why
            tables_for(camp).exclude(Exclusion(str(rr.file), "engine window", refused))
            return None
        if not camp.manifest.get("engine"):
            raise InputError(
                camp.root / "campaign.json",
                "$.engine.profile",
                f"run {rr.id!r} reads its engine window from Prometheus: name the engine profile "
                '(e.g. "engine": {"name": "vllm", "profile": "vllm"})',
            )
        profile = camp.profile
        qs = [q for q in RECONCILE_QUANTITIES if profile.has(q)]
        pw = promsource.fetch_window(
            src["url"],
            rr.window[0],
            rr.window[1],
            src["matchers"],
            profile,
            qs,
            src.get("timeout_s", DEFAULT_TIMEOUT_S),
        )
        w = enginemetrics.window(pw.before, pw.after, profile)
        where = f"{src['url']} [{rr.window[0]:.0f}, {rr.window[1]:.0f}]"
        return EngineWindow(rr.id, w, rr.labels, rr.labels_key, [where], rr.snapshots, rr.series)
    return None


def benchmark_runs(camp: Campaign, rr: ResultsRun) -> list[tuple[Path, BenchmarkRun]]:
    """``(file, BenchmarkRun)`` for every benchmark run in a results run's files, read once per
    campaign (the ladder, the copy check and the compare section read the same objects)."""
    from benchbook.ingest import formats

    return tables_for(camp).derived(
        ("benchmark_runs", rr.id), lambda: [(f, b) for f in rr.files for b in formats.read(f)]
    )


def campaign_inputs(path: str | Path | Campaign) -> CampaignInputs:
    """Every results run of a campaign (a folder, or the loaded campaign: not loaded twice), read:
    benchmark runs, engine windows, provenance inputs."""
    from benchbook.ingest.campaign import Campaign, load_campaign

    camp = path if isinstance(path, Campaign) else load_campaign(path)
    rruns = camp.results_runs
    if not rruns:
        raise InputError(camp.root / "campaign.json", "$.runs", 'no results run (harness "results") to compare')
    runs: list[tuple[str, str, BenchmarkRun]] = []
    files: list[str] = []
    inputs = [str(camp.root / "campaign.json")]
    windows: dict[str, EngineWindow] = {}
    configs: dict[str, str] = {}
    named = {r["id"] for r in camp.manifest["runs"] if "arm" in r}
    for rr in rruns:
        got = benchmark_runs(camp, rr)  # read once per campaign (the results ladder reads the same)
        for f, r in got:
            pid = rr.id
            if len(got) > 1:
                pid += "/" + f.stem + ("" if r.location == "$" else r.location)
            runs.append((pid, rr.id, r))
            if rr.id in named:
                configs[pid] = camp.arm_label(rr.arm)
        files += [str(f) for f in rr.files]
        inputs += [str(p) for p in rr.input_files()]
        ew = engine_window(camp, rr)
        if ew is not None:
            windows[rr.id] = ew
    return CampaignInputs(
        root=camp.root,
        title=camp.title,
        runs=runs,
        files=files,
        inputs=sorted(dict.fromkeys(inputs)),
        windows=windows,
        todo=list(camp.manifest.get("todo", [])),
        incomplete=[rr.id for rr in rruns if not rr.complete],
        configs=configs,
    )
