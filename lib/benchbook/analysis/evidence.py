"""Every comparison row with its evidence beside it (docs/checks.md, "Evidence in the row").

A ratio between two arms says *that* a figure moved; the engine's own counters over the same windows
often say *why*: the candidate preempted requests (it ran out of KV cache), served its prompts from the
prefix cache, left them queued, filled its KV cache, or was clamped below what was asked. And what its
server ran otherwise than the baseline's (:mod:`benchbook.analysis.what_ran`: the KV cache's size
included). :func:`attach` writes that, once per row, into the rows the pages show — the ablation
page's (``switch_ablation.rows``), the baseline page's results-ladder comparisons and the compare
page's verdicts — as ``evidence`` (one phrase) and ``evidence_figures`` (the numbers):

    kvlimited vs batch, concurrency 64: 0.25×; KV cache 8,752 vs 930,192 tokens;
    gpu_memory_utilization 0.115 vs 0.92; 44 preemptions (batch 0); KV cache usage peak 100 % (batch 7.8 %)

Figures come from the campaign audit's windows (:mod:`benchbook.analysis.checks`: Δ of the engine's
counters over each results run or phase sample, the gauges over the scrapes taken during it); a
figure the engine does not export is left out, never written as 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

QUEUE_SHOWN = 0.01  # a queue share below 1 % of E2E is not worth a word in a row
CACHE_SHOWN = 0.01


@dataclass(frozen=True)
class RowEvidence:
    """The engine's figures over a set of windows (one arm at one load, or its phase samples)."""

    windows: int = 0
    preemptions: float | None = None
    cached_share: float | None = None
    queue_share: float | None = None  # the largest of the windows'
    kv_usage_max: float | None = None
    waiting_max: float | None = None
    clamps: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "windows": self.windows,
            "preemptions": self.preemptions,
            "cached_share": self.cached_share,
            "queue_share": self.queue_share,
            "kv_usage_max": self.kv_usage_max,
            "waiting_max": self.waiting_max,
            "clamps": list(self.clamps),
        }


def gather(windows: Iterable[Any], clamps: Sequence[str] = ()) -> RowEvidence:
    """:class:`RowEvidence` over audit windows (``checks.WindowAudit``): preemptions summed, the cache share
    over all their prompt tokens, the largest queue share, KV usage and waiting count."""
    ws = list(windows)
    pre = [w.preemptions for w in ws if w.preemptions is not None]
    cached = [(w.cached_tokens, w.prompt_tokens) for w in ws if w.cached_tokens is not None and w.prompt_tokens]
    queue = [w.queue_share for w in ws if w.queue_share is not None]
    kv = [w.kv_usage_max for w in ws if getattr(w, "kv_usage_max", None) is not None]
    wait = [w.waiting_max for w in ws if w.waiting_max is not None]
    return RowEvidence(
        windows=len(ws),
        preemptions=sum(pre) if pre else None,
        cached_share=sum(c for c, _ in cached) / sum(p for _, p in cached) if cached else None,
        queue_share=max(queue) if queue else None,
        kv_usage_max=max(kv) if kv else None,
        waiting_max=max(wait) if wait else None,
        clamps=tuple(clamps),
    )


def _pct(x: float) -> str:
    return f"{100 * x:.0f} %" if x >= 0.1 else f"{100 * x:.1f} %"


def phrase(c: RowEvidence, b: RowEvidence | None, base: str) -> list[str]:
    """The candidate's figures, each with the baseline's beside it where measured: preemptions always
    (0 is evidence too), the cache and queue shares and the KV peak where they are worth a word."""
    out: list[str] = []

    def beside(v: float | None, fmt) -> str:
        return f" ({base} {fmt(v)})" if b is not None and v is not None else ""

    if c.preemptions is not None:
        n = int(c.preemptions)
        out.append(f"{n:,} preemption{'s' * (n != 1)}" + beside(b.preemptions if b else None, lambda v: f"{int(v):,}"))
    if c.kv_usage_max is not None:
        out.append(f"KV cache usage peak {_pct(c.kv_usage_max)}" + beside(b.kv_usage_max if b else None, _pct))
    if c.queue_share is not None and (c.queue_share >= QUEUE_SHOWN or (b and (b.queue_share or 0) >= QUEUE_SHOWN)):
        out.append(f"queued {_pct(c.queue_share)} of E2E" + beside(b.queue_share if b else None, _pct))
    if c.cached_share is not None and (c.cached_share >= CACHE_SHOWN or (b and (b.cached_share or 0) >= CACHE_SHOWN)):
        out.append(
            f"prefix cache {_pct(c.cached_share)} of prompt tokens" + beside(b.cached_share if b else None, _pct)
        )
    out += [f"clamped: {x}" for x in c.clamps]
    return out


def row_evidence(what_ran_text: str, cand: RowEvidence | None, base: RowEvidence | None, base_name: str) -> str:
    parts = [what_ran_text] if what_ran_text else []
    if cand is not None and cand.windows:
        parts += phrase(cand, base if base is not None and base.windows else None, base_name)
    return "; ".join(parts)


# ---- the campaign's rows -------------------------------------------------------------------------
def _clamps(camp: Any, arm: str, concurrency: int | None) -> list[str]:
    """Where an arm's server ran less than it was asked (``max_num_seqs N requested``, the most
    requests the log's stats lines ever showed running), under a load that offered that many."""
    out = []
    for r in camp.manifest.get("runs", []):
        if not isinstance(r, dict) or r.get("arm") != arm or not isinstance(r.get("server_config"), dict):
            continue
        sc = r["server_config"]
        asked, ran = (sc.get("requested") or {}).get("max_num_seqs"), sc.get("max_running")
        if isinstance(asked, int) and isinstance(ran, int) and concurrency and concurrency >= asked > ran:
            out.append(f"max_num_seqs {asked} requested, {ran} ran")
            break
    return out


class _Index:
    """Audit windows by results run and by arm's phase samples; results runs by (arm, concurrency)."""

    def __init__(self, an: Any):
        self.camp = an.camp
        au = an.audit
        ws = list(au.windows) if au is not None else []
        self.by_run: dict[str, list[Any]] = {}
        self.phase: dict[str, list[Any]] = {}
        self.steps: dict[tuple[str, int], list[Any]] = {}  # (arm, n) -> capture ladder steps at n
        for w in ws:
            if w.kind == "results run" and w.run:
                self.by_run.setdefault(w.run, []).append(w)
            elif w.kind == "phase sample" and w.arm:
                self.phase.setdefault(w.arm, []).append(w)
            elif w.kind == "ladder step" and w.arm:
                step = w.window.rsplit(": ", 1)[-1]
                n = (
                    1
                    if step == "single"
                    else int(step[7:])
                    if step.startswith("ladder-") and step[7:].isdigit()
                    else None
                )
                if n is not None:
                    self.steps.setdefault((w.arm, n), []).append(w)
        self.point: dict[tuple[str, int], list[str]] = {}
        rl = an.results_ladder or {}
        for p in rl.get("points", []):
            if p.get("concurrency") is not None and p.get("request_rate") in (None, float("inf"), "inf"):
                self.point.setdefault((p["arm"], int(p["concurrency"])), []).append(p["run"])

    def at(self, arm: str, concurrency: int | None) -> RowEvidence | None:
        if concurrency is None:
            return None
        runs = self.point.get((arm, concurrency), [])
        ws = [w for r in runs for w in self.by_run.get(r, [])] + self.steps.get((arm, concurrency), [])
        return gather(ws, _clamps(self.camp, arm, concurrency)) if ws else None

    def of_runs(self, runs: Iterable[str], arm: str | None) -> RowEvidence | None:
        ws = [w for r in runs for w in self.by_run.get(r, [])]
        return gather(ws, _clamps(self.camp, arm, None) if arm else ()) if ws else None

    def phases(self, arm: str) -> RowEvidence | None:
        """The arm's measured phase samples (warm-up rounds left out, as the phase cells leave them)."""
        warm = set()
        for r in self.camp.runs_of("phases", arm):
            for s in self.camp.phases_doc(r).get("samples", []):
                if s.get("warmup"):
                    warm.add((r.id, s.get("prompt_class"), s.get("repeat")))
        ws = [w for w in self.phase.get(arm, []) if w.sample not in warm]
        return gather(ws) if ws else None


def _concurrency(context: str) -> int | None:
    import re

    m = re.match(r"^concurrency (\d+)$", str(context))
    return int(m.group(1)) if m else None


def _what_ran(camp: Any, arm: str, base: str) -> str:
    from benchbook.analysis import what_ran

    if arm not in camp.arms or base not in camp.arms:
        return ""
    return what_ran.text(what_ran.arm_differences(camp, arm, base))


def attach(an: Any) -> None:
    """Write ``evidence`` and ``evidence_figures`` into every comparison row of the analysis (module
    docstring); a row with nothing measured gets ``""``."""
    idx = _Index(an)
    camp = an.camp
    sa = an.switch_ablation
    if sa is not None:
        for row in sa.rows:
            n = _concurrency(row["context"])
            cand = idx.at(row["arm"], n) if n is not None else idx.phases(row["arm"])
            base = idx.at(sa.baseline_arm, n) if n is not None else idx.phases(sa.baseline_arm)
            row["evidence"] = row_evidence(row.get("what_ran", ""), cand, base, sa.baseline_arm)
            row["evidence_figures"] = {"candidate": _d(cand), "baseline": _d(base)}
    rl = an.results_ladder
    if rl and an.audit is not None:
        for p in rl.get("points", []):  # J per output token and per request of each load point
            e = an.audit.energy_of(p["run"])
            p["j_per_token"] = None if e is None else e.j_per_token
            p["j_per_request"] = None if e is None else e.j_per_request
            p["energy"] = "not measured" if e is None else e.how if e.joules is not None else e.describe()
            p["energy_method"] = None if e is None or e.joules is None else e.method
    if rl:
        for row in rl.get("comparisons", []):
            cand, base = idx.at(row["candidate"], row["concurrency"]), idx.at(row["baseline"], row["concurrency"])
            row["evidence"] = row_evidence(
                _what_ran(camp, row["candidate"], row["baseline"]), cand, base, row["baseline"]
            )
            row["evidence_figures"] = {"candidate": _d(cand), "baseline": _d(base)}
    rs, inputs = an.results, an.results_inputs
    if rs is not None and inputs is not None:
        rid = {pid: r for pid, r, _run in inputs.runs}
        arm_of = {r.id: r.arm for r in camp.runs}
        for v in rs.verdicts:
            pts = {}
            for label in (v.baseline, v.candidate):
                c = next((x for x in rs.configs if x.label == label), None)
                p = next((x for x in c.points if x.shown == v.load), None) if c is not None else None
                runs = [rid[e.id] for e in p.entries if e.id in rid] if p is not None else []
                arms = {arm_of.get(r) for r in runs} - {None}
                pts[label] = (runs, next(iter(arms)) if len(arms) == 1 else None)
            (b_runs, b_arm), (c_runs, c_arm) = pts[v.baseline], pts[v.candidate]
            cand, base = idx.of_runs(c_runs, c_arm), idx.of_runs(b_runs, b_arm)
            wr = _what_ran(camp, c_arm, b_arm) if c_arm and b_arm else ""
            v.evidence = row_evidence(wr, cand, base, v.baseline)


def _d(e: RowEvidence | None) -> dict[str, Any] | None:
    return None if e is None else e.as_dict()
