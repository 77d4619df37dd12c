"""What could make a figure lie, per window, from the engine's own counters (docs/checks.md).

A *window* is a before/after pair of ``/metrics`` scrapes around one measurement: a phase sample, a
results run, a ladder step. :func:`audit` reads, over that window and through the engine profile
(``metrics/profiles.py``, never literal names):

- **prefix cache** — prompt tokens served from the cache vs computed. Sources, first present wins:
  ``prompt_tokens_cached`` (vLLM ``vllm:prompt_tokens_cached_total``, SGLang
  ``sglang:cached_tokens_total``), ``prompt_tokens_cache_hit`` (vLLM
  ``vllm:prompt_tokens_by_source_total{source="local_cache_hit"}``), ``prefix_cache_hits`` (vLLM
  ``vllm:prefix_cache_hits_total``, tokens, over ``prefix_cache_queries_total``). An engine whose
  profile has none of them is *not measured* — never zero.
- **preemption** — Δ ``preemptions`` (vLLM ``vllm:num_preemptions_total``).
- **queueing** — the queue share of E2E: Δ ``queue`` histogram sum ÷ Δ ``e2e`` histogram sum (vLLM
  ``vllm:request_queue_time_seconds`` / ``vllm:e2e_request_latency_seconds``); mean and max of the
  ``waiting`` gauge over the scrapes taken during the window, where there are any.
- **token accounting** — the engine's Δ prompt/generation tokens against what the client sent,
  asked for and received.

Series are filtered by ``labels`` (the run's ``metrics_labels``) and the rest summed: a share is a
ratio over one set of series (every DP rank of one deployment); name labels when the scrape holds
another model's series too. A counter that went down (a restart) gives no figure and a note.

:func:`run_checks` turns a campaign's audits into :class:`benchbook.findings.Check` dicts, one per run
and concern (status pass/warn/fail), which the pages and ``summary --json`` carry; :func:`cached_phase_samples` names the phase samples whose
prompt was mostly cached (share ≥ :data:`CACHED_SHARE`), which the phase cells leave out of the
prefill figures (``cached_prefill="exclude"``, the default) or keep and label ("cached prefill").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from benchbook.analysis.tables import tables_for
from benchbook.findings import Check

if TYPE_CHECKING:
    from benchbook.ingest.campaign import Campaign
    from benchbook.metrics.profiles import EngineProfile
    from benchbook.metrics.prometheus import Snapshot

CACHED_SHARE = 0.5  # a phase sample whose prompt was at least this share cached is not a prefill measurement
QUEUE_SHARE_WARN = 0.10  # a window whose requests spent ≥ 10 % of their E2E queued: latency is queueing
CACHED_PREFILL_MODES = ("exclude", "keep")
# counters in order of preference for "prompt tokens served from the cache"
CACHE_SOURCES = ("prompt_tokens_cached", "prompt_tokens_cache_hit", "prefix_cache_hits")
AUDIT_QUANTITIES = (
    "prompt_tokens",
    "generation_tokens",
    *CACHE_SOURCES,
    "prefix_cache_queries",
    "preemptions",
    "queue",
    "e2e",
    "waiting",
    "running",
    "kv_cache_usage",
    "estimated_flops",
    "estimated_read_bytes",
)
SAME_PROMPT_WHY = (
    "the phase harness sends the same prompt text every round, so with prefix caching on every round after "
    "the first finds its prompt in the cache"
)


def audit_names(profile: EngineProfile) -> list[str]:
    """Sample-name prefixes :func:`audit` reads (hand them to ``prometheus.parse``)."""
    return profile.sample_names(list(AUDIT_QUANTITIES))


def _keep(key: tuple[tuple[str, str], ...], labels: Mapping[str, str] | None) -> bool:
    return all((k, v) in key for k, v in (labels or {}).items())


def counter_sum(
    before: Snapshot, after: Snapshot, profile: EngineProfile, quantity: str, labels: Mapping[str, str] | None = None
) -> tuple[float | None, str]:
    """Δ of a counter quantity summed over the series matching ``labels``: (value, source or why none).

    A series absent before the window counts from 0 (vLLM creates some series at first use); one that
    went down is a reset: no value."""
    from benchbook.analysis import enginemetrics

    if not profile.has(quantity):
        return None, f"not measured: the {profile.name} profile has no {quantity} counter"
    ref = profile.ref(quantity)
    b = {k: v for k, v in enginemetrics.values(before, profile, quantity).items() if _keep(k, labels)}
    a = {k: v for k, v in enginemetrics.values(after, profile, quantity).items() if _keep(k, labels)}
    if not a:
        return None, f"not measured: {ref.name} is not in the scrape"
    if any(a[k] < b.get(k, 0.0) for k in a):
        return None, f"{ref.name} went down inside the window (the engine restarted): no figure"
    return sum(a[k] - b.get(k, 0.0) for k in a), ref.name + "".join(f'{{{k}="{v}"}}' for k, v in ref.labels)


def histogram_sums(
    before: Snapshot, after: Snapshot, profile: EngineProfile, quantity: str, labels: Mapping[str, str] | None = None
) -> tuple[float | None, float | None]:
    """(Δ sum, Δ count) of a histogram quantity over the matching series; (None, None) without it."""
    from benchbook.analysis import enginemetrics

    if not profile.has(quantity):
        return None, None
    d = {k: v for k, v in enginemetrics.histogram_delta(before, after, profile, quantity).items() if _keep(k, labels)}
    if not d or any(h.delta is None for h in d.values()):
        return None, None
    return sum(h.delta.sum for h in d.values()), sum(h.delta.count for h in d.values())


def gauge_series(
    scrapes: Sequence[Snapshot], profile: EngineProfile, quantity: str, labels: Mapping[str, str] | None = None
) -> list[float]:
    """The gauge summed over matching series, one value per scrape that carries it."""
    from benchbook.analysis import enginemetrics

    if not profile.has(quantity):
        return []
    out = []
    for s in scrapes:
        v = {k: x for k, x in enginemetrics.values(s, profile, quantity).items() if _keep(k, labels)}
        if v:
            out.append(sum(v.values()))
    return out


@dataclass(frozen=True)
class WindowAudit:
    """One window's cache, preemption, queueing and token figures (None: not measured)."""

    window: str  # e.g. "batch: long round 2"
    kind: str  # "phase sample" | "results run" | "ladder step"
    run: str | None = None
    arm: str | None = None
    prompt_tokens: float | None = None  # engine Δ
    cached_tokens: float | None = None  # engine Δ, served from the prefix cache
    cache_source: str = "not measured"
    preemptions: float | None = None
    preemption_source: str = "not measured"
    requests: float | None = None  # Δ e2e count
    queue_s: float | None = None  # Δ queue-time histogram sum
    e2e_s: float | None = None  # Δ e2e histogram sum
    generation_tokens: float | None = None  # engine Δ
    waiting_mean: float | None = None
    waiting_max: float | None = None
    waiting_points: int = 0
    kv_usage_max: float | None = None  # the KV cache usage gauge's peak over the scrapes (fraction 0–1)
    running_max: float | None = None
    estimated_flops: float | None = None  # vLLM's own estimate, where exported and non-zero
    estimated_read_bytes: float | None = None
    client: Mapping[str, Any] = field(default_factory=dict)  # prompt_tokens, received, requested, short
    sample: tuple[str, str, int] | None = (
        None  # a phase sample's (run, prompt class, repeat); a ladder step's (run, step, n)
    )

    @property
    def cached_share(self) -> float | None:
        if self.cached_tokens is None or not self.prompt_tokens:
            return None
        return self.cached_tokens / self.prompt_tokens

    @property
    def computed_tokens(self) -> float | None:
        if self.cached_tokens is None or self.prompt_tokens is None:
            return None
        return self.prompt_tokens - self.cached_tokens

    @property
    def queue_share(self) -> float | None:
        if self.queue_s is None or not self.e2e_s:
            return None
        return self.queue_s / self.e2e_s

    @property
    def mostly_cached(self) -> bool:
        s = self.cached_share
        return s is not None and s >= CACHED_SHARE

    def as_dict(self) -> dict[str, Any]:
        return {
            "window": self.window,
            "kind": self.kind,
            "run": self.run,
            "arm": self.arm,
            "prompt_tokens": self.prompt_tokens,
            "cached_tokens": self.cached_tokens,
            "computed_tokens": self.computed_tokens,
            "cached_share": self.cached_share,
            "cache_source": self.cache_source,
            "preemptions": self.preemptions,
            "preemption_source": self.preemption_source,
            "requests": self.requests,
            "queue_s": self.queue_s,
            "e2e_s": self.e2e_s,
            "queue_share": self.queue_share,
            "waiting_mean": self.waiting_mean,
            "waiting_max": self.waiting_max,
            "waiting_points": self.waiting_points,
            "kv_usage_max": self.kv_usage_max,
            "running_max": self.running_max,
            "generation_tokens": self.generation_tokens,
            "estimated_flops": self.estimated_flops,
            "estimated_read_bytes": self.estimated_read_bytes,
            "client": dict(self.client),
        }


def audit(
    before: Snapshot,
    after: Snapshot,
    profile: EngineProfile,
    *,
    window: str,
    kind: str,
    run: str | None = None,
    arm: str | None = None,
    labels: Mapping[str, str] | None = None,
    scrapes: Sequence[Snapshot] = (),
    client: Mapping[str, Any] | None = None,
    sample: tuple[str, str, int] | None = None,
) -> WindowAudit:
    """The audit of one window (module docstring). ``scrapes``: snapshots taken during the window, for the
    waiting gauge; ``client``: what the client says (``prompt_tokens``, ``received`` and ``requested``
    completion tokens, ``short``: the requests that got fewer tokens than asked, by name)."""
    prompt, _ = counter_sum(before, after, profile, "prompt_tokens", labels)
    gen, _ = counter_sum(before, after, profile, "generation_tokens", labels)
    cached, source, whys = None, "", []
    for q in CACHE_SOURCES:
        v, src = counter_sum(before, after, profile, q, labels)
        if v is not None:
            cached, source = v, src
            if q == "prefix_cache_hits":  # tokens hit over tokens queried: the share's own denominator
                queries, _ = counter_sum(before, after, profile, "prefix_cache_queries", labels)
                if queries is not None:
                    prompt = queries if prompt is None else prompt
            break
        whys.append(src)
    if cached is None:
        source = "not measured: " + "; ".join(w.removeprefix("not measured: ") for w in whys)
    pre, pre_src = counter_sum(before, after, profile, "preemptions", labels)
    q_sum, _ = histogram_sums(before, after, profile, "queue", labels)
    e_sum, e_count = histogram_sums(before, after, profile, "e2e", labels)
    waiting = gauge_series(scrapes, profile, "waiting", labels)
    kv_usage = gauge_series(scrapes, profile, "kv_cache_usage", labels)
    running = gauge_series(scrapes, profile, "running", labels)
    flops, _ = counter_sum(before, after, profile, "estimated_flops", labels)
    rbytes, _ = counter_sum(before, after, profile, "estimated_read_bytes", labels)
    return WindowAudit(
        window=window,
        kind=kind,
        run=run,
        arm=arm,
        prompt_tokens=prompt,
        cached_tokens=cached,
        cache_source=source,
        preemptions=pre,
        preemption_source=pre_src,
        requests=e_count,
        queue_s=q_sum,
        e2e_s=e_sum,
        generation_tokens=gen,
        waiting_mean=sum(waiting) / len(waiting) if waiting else None,
        waiting_max=max(waiting) if waiting else None,
        waiting_points=len(waiting),
        kv_usage_max=max(kv_usage) if kv_usage else None,
        running_max=max(running) if running else None,
        estimated_flops=flops or None,  # vLLM exports 0 unless its cost estimate is enabled
        estimated_read_bytes=rbytes or None,
        client=dict(client or {}),
        sample=sample,
    )


# ---- checks ---------------------------------------------------------------------------------------
def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


TOKEN_TOLERANCE = 0.10  # a phase sample or ladder step: engine and client counts within 10 % of each other
OWN_WINDOWS = ("phase sample", "ladder step")  # windows holding only the harness's own requests


def _apart(a: float, b: float) -> float:
    return abs(a - b) / max(a, b) if max(a, b) > 0 else 0.0


def _times(hi: float, lo: float) -> str:
    return f"{hi / lo:,.1f}× as many" if lo > 0 else "the other counted none"


def token_check(a: WindowAudit) -> Check | None:
    """Engine Δ tokens against the client's counts (the server's ``usage``); fails on a short count
    (named), on a client that received more tokens than the engine generated (a server whose usage
    over-reports: every figure made from the client's counts is then not measured), and — in a window
    of the harness's own requests (:data:`OWN_WINDOWS`) — on engine and client generation or prompt
    counts more than :data:`TOKEN_TOLERANCE` apart. None without client counts."""
    c = a.client
    if not c:
        return None
    fig = {
        "run": a.run,
        "window": a.window,
        "engine_prompt_tokens": a.prompt_tokens,
        "engine_generation_tokens": a.generation_tokens,
        "client_prompt_tokens": c.get("prompt_tokens"),
        "client_received": c.get("received"),
        "client_requested": c.get("requested"),
        "short": list(c.get("short", [])),
    }
    problems, notes = [], []
    short = list(c.get("short", []))
    if short:
        shown = ", ".join(short[:8]) + (f" and {len(short) - 8} more" if len(short) > 8 else "")
        problems.append(
            f"{len(short)} request(s) ended before the requested length ({shown}): they stopped early "
            "(an EOS, ignore_eos not honoured), so per-token figures average over fewer tokens than asked"
        )
    rec, req = c.get("received"), c.get("requested")
    if rec is not None and req is not None:
        notes.append(f"client received {rec:g} of {req:g} requested completion tokens")
    gen = a.generation_tokens
    own = a.kind in OWN_WINDOWS  # the window holds the harness's own requests and nothing else
    if gen is not None and rec is not None:
        if gen < rec:
            problems.append(
                f"the client's usage reports {rec:g} completion tokens, the engine generated {gen:g} between the "
                f"window's scrapes ({_times(rec, gen)}): the server's usage does not state what the engine did, or "
                "the scrapes do not enclose this window — figures made from the client's counts are not measured"
            )
        elif own and _apart(gen, rec) > TOKEN_TOLERANCE:
            problems.append(
                f"the engine generated {gen:g} tokens between the window's scrapes, the client's usage reports "
                f"{rec:g} ({_times(gen, rec)}, tolerance {_pct(TOKEN_TOLERANCE)}): another client's requests in "
                "the window, or a server whose usage under-reports"
            )
        else:
            notes.append(f"engine generated {gen:g}")
    cp, ep = c.get("prompt_tokens"), a.prompt_tokens
    if cp is not None and ep is not None:
        if own and _apart(ep, cp) > TOKEN_TOLERANCE:
            problems.append(
                f"the engine counted {ep:g} prompt tokens, the client's usage {cp:g} ({_times(max(ep, cp), min(ep, cp))}, "
                f"tolerance {_pct(TOKEN_TOLERANCE)}): the two do not describe the same requests"
            )
        else:
            notes.append(f"engine prompt tokens {ep:g} against the client's {cp:g}")
    status = "fail" if problems else "pass"
    return Check(f"token accounting: {a.window}", status, "; ".join(problems + notes) or "no counts to compare", fig)


# ---- campaign windows -----------------------------------------------------------------------------
def read_snapshot(path, profile: EngineProfile) -> Snapshot:
    """A window's /metrics capture, parsed for what :func:`audit` reads."""
    from benchbook.metrics import prometheus

    return prometheus.parse(prometheus.read_capture(path), path, audit_names(profile))


def phase_audits(camp: Campaign) -> list[WindowAudit]:
    """One audit per phase sample of every phases run (capture files; a Prometheus-window sample is
    audited from the window's snapshots, which hold only what the split fetched)."""
    from benchbook.errors import InputError
    from benchbook.ingest.results_runs import metrics_labels
    from benchbook.metrics.phases import Excluded

    out: list[WindowAudit] = []
    profile = camp.profile
    for r in camp.runs_of("phases"):
        doc = camp.phases_doc(r)
        labels, _ = metrics_labels(camp.manifest, r.id)
        for i, s in enumerate(doc["samples"]):
            try:
                if "window" in s:
                    before, after, _w, _r = camp.sample_snapshots(r, i)
                else:
                    before = read_snapshot(
                        camp.snapshot_path(r, s["metrics_before"], f"$.samples[{i}].metrics_before"), profile
                    )
                    after = read_snapshot(
                        camp.snapshot_path(r, s["metrics_after"], f"$.samples[{i}].metrics_after"), profile
                    )
            except (InputError, Excluded):  # the phase split already excluded and listed this sample
                continue
            out.append(
                audit(
                    before,
                    after,
                    profile,
                    window=f"{r.id}: {s['prompt_class']} repeat {s['repeat']}",
                    kind="phase sample",
                    run=r.id,
                    arm=r.arm,
                    labels=labels,
                    client=_phase_client(s, camp.generation_tokens),
                    sample=(r.id, s["prompt_class"], int(s["repeat"])),
                )
            )
    return out


def _phase_client(s: Mapping[str, Any], requested: int | None) -> dict[str, Any]:
    """What a phase sample's client says: prompt and completion tokens, the request asked (from the
    campaign's generation length) and whether it came back short."""
    rec = s.get("completion_tokens")
    if rec is None and isinstance(s.get("usage"), Mapping):
        rec = s["usage"].get("completion_tokens")
    if rec is None:
        return {}
    out: dict[str, Any] = {"received": float(rec), "prompt_tokens": s.get("prompt_tokens")}
    req = s.get("max_tokens", requested)
    if req is not None:
        out["requested"] = float(req)
        if rec < req:
            out["short"] = [f"{s['prompt_class']} repeat {s['repeat']}"]
    return out


def cached_phase_samples(camp: Campaign) -> dict[tuple[str, str, int], WindowAudit]:
    """(run, prompt class, repeat) -> audit, for each phase sample whose prompt was mostly cached;
    computed once per campaign object."""
    return tables_for(camp).derived(
        ("cached_phase_samples",),
        lambda: {a.sample: a for a in phase_audits_cached(camp) if a.mostly_cached and a.sample},
    )


def phase_audits_cached(camp: Campaign) -> list[WindowAudit]:
    return tables_for(camp).derived(("phase_audits",), lambda: phase_audits(camp))


def cached_reason(a: WindowAudit) -> str:
    return (
        f"cached prefill: {a.cached_tokens:g} of {a.prompt_tokens:g} prompt tokens ({_pct(a.cached_share or 0)}) "
        f"came from the prefix cache ({a.cache_source}), so this is not a prefill measurement"
    )


def results_audits(camp: Campaign, inputs: Any) -> tuple[list[WindowAudit], list[str]]:
    """One audit per results run with an engine window (``results.CampaignInputs.windows``) over the one
    series its client's requests went to (``results.pick_series``: never another model's), its periodic
    snapshots as the waiting series, the client's counts from its requests; and, per window that could
    not be audited, why."""
    from benchbook.analysis.results import pick_series

    out: list[WindowAudit] = []
    notes: list[str] = []
    per_rr: dict[str, list[Any]] = {}
    for _pid, rid, run in inputs.runs:
        per_rr.setdefault(rid, []).append(run)
    ids = {r.id: r for r in camp.runs}
    for rid, ew in sorted(inputs.windows.items()):
        runs = per_rr.get(rid, [])
        if len(runs) != 1:
            notes.append(f"{rid}: the window covers {len(runs)} benchmark runs: not audited")
            continue
        model, key = pick_series(runs[0], ew)
        if key is None:
            notes.append(f"{rid}: not audited — {model.detail}")
            continue
        w = ew.window
        scrapes = [snap for _t, snap in ew.scrapes(audit_names(w.profile), untimed=True)]
        out.append(
            audit(
                w.before,
                w.after,
                w.profile,
                window=rid,
                kind="results run",
                run=rid,
                arm=ids[rid].arm if rid in ids else None,
                labels=dict(key),
                scrapes=scrapes,
                client=_results_client(runs[0]),
            )
        )
    return out, notes


def _results_client(run: Any) -> dict[str, Any]:
    """Client counts of a benchmark run: Σ prompt and completion tokens of its successful requests. The
    length each request asked for is tested by :func:`short_count_checks`, where the file states it."""
    df = run.requests
    if df is None or df.height == 0:
        s = run.summary
        if s.get("total_output_tokens") is None:
            return {}
        return {"received": float(s["total_output_tokens"]), "prompt_tokens": s.get("total_input_tokens")}
    import polars as pl

    ok = df.filter(pl.col("success"))
    return {
        "received": float(ok["completion_tokens"].sum()),
        "prompt_tokens": float(ok["prompt_tokens"].sum()) if ok["prompt_tokens"].null_count() < ok.height else None,
    }


def _why_cached(
    kind: str, cached_any: bool, distinct: bool | None, caching: tuple[bool | None, str] = (None, "")
) -> str:
    """Why a phases run's rounds were (or were not) served from the cache; ``caching``: whether the
    engine states prefix caching on, and where (``cache_cause.caching``) — a hint never contradicts it."""
    on, src = caching
    if kind in OWN_WINDOWS:
        if distinct:
            return (
                "each round's prompt was distinct, so the hits are the part every prompt shares (chat template, "
                "system prompt)"
                if cached_any
                else "each round's prompt was distinct: nothing to reuse"
            )
        if cached_any:
            return SAME_PROMPT_WHY if kind == "phase sample" else "the same prompt text was sent again (--same-prompt)"
        if on is False:
            return f"prefix caching is off ({src} states enable_prefix_caching False)"
        if on:
            return f"no round found its prompt in the cache, with prefix caching on ({src})"
        return "no round found its prompt in the cache (the files do not state whether prefix caching was on)"
    if cached_any:
        return "these prompts (or their prefixes) reached this server before"
    return "no prompt of this run was found in the cache"


def run_checks(
    audits: Sequence[WindowAudit],
    *,
    allow_preemption: bool = False,
    distinct: Mapping[str, bool | None] | None = None,
    causes: Mapping[str, str] | None = None,
    caching: Mapping[str, tuple[bool | None, str]] | None = None,
) -> list[dict[str, Any]]:
    """The checks of a campaign's windows, one per (run, what): the prefix cache (warn when any prompt
    token came from it, with the share and why), preemption (fail when > 0 unless allowed), queueing
    (warn from :data:`QUEUE_SHARE_WARN` of E2E) and token accounting (fail on a short count or an engine
    that counted fewer tokens than the client received, naming the windows). ``distinct``: per run,
    whether its phase prompts were distinct per round (what ``capture phases`` records); ``causes``: per
    results run, why its prompts were cached (``cache_cause.causes``); ``caching``: per run, whether the
    engine states prefix caching on (``cache_cause.caching``)."""
    groups: dict[tuple[str, str], list[WindowAudit]] = {}
    for a in audits:
        groups.setdefault((a.run or a.window, a.kind), []).append(a)
    out: list[dict[str, Any]] = []
    for (run, kind), g in groups.items():
        what = f"{run} ({len(g)} {kind}{'s' * (len(g) != 1)})"
        measured = [a for a in g if a.cached_tokens is not None]
        if measured:
            hit = [a for a in measured if a.cached_tokens]
            why = (causes or {}).get(run) or _why_cached(
                kind, bool(hit), (distinct or {}).get(run), (caching or {}).get(run, (None, ""))
            )
            tot_c = sum(a.cached_tokens or 0 for a in measured)
            tot_p = sum(a.prompt_tokens or 0 for a in measured)
            share = tot_c / tot_p if tot_p else None
            mostly = [a.window.split(": ", 1)[-1] for a in measured if a.mostly_cached]
            fig = {"run": run, "kind": kind, "cached_tokens": tot_c, "prompt_tokens": tot_p, "cached_share": share}
            fig["mostly_cached"] = mostly
            if hit:
                detail = (
                    f"{len(hit)} of {len(measured)} windows served prompt tokens from the prefix cache: "
                    f"{tot_c:g} of {tot_p:g} prompt tokens ({_pct(share or 0)}) were not computed"
                    + (f"; mostly cached (≥ {_pct(CACHED_SHARE)}): {', '.join(mostly)}" if mostly else "")
                    + f" — {why}"
                )
                out.append(Check(f"prefix cache: {what}", "warn", detail, fig).as_dict())
            else:
                out.append(
                    Check(f"prefix cache: {what}", "pass", f"no prompt token from the cache — {why}", fig).as_dict()
                )
        pre = [a for a in g if a.preemptions is not None]
        if pre:
            n = sum(a.preemptions or 0 for a in pre)
            where = [a.window.split(": ", 1)[-1] for a in pre if a.preemptions]
            fig = {"run": run, "kind": kind, "preemptions": n, "windows": where}
            if n > 0:
                detail = (
                    f"{n:g} preemption(s) in {', '.join(where)} ({pre[0].preemption_source}): the engine ran short "
                    "of KV cache and recomputed requests, so latency and throughput include that work"
                )
                status = "warn" if allow_preemption else "fail"
                out.append(
                    Check(
                        f"preemption: {what}", status, detail + (" (allowed)" if allow_preemption else ""), fig
                    ).as_dict()
                )
            else:
                out.append(
                    Check(f"preemption: {what}", "pass", f"no preemption ({pre[0].preemption_source})", fig).as_dict()
                )
        qs = [(a.queue_share, a) for a in g if a.queue_share is not None]
        if qs:
            share, worst = max(qs, key=lambda t: t[0])
            waits = [a.waiting_max for a in g if a.waiting_max is not None]
            fig = {"run": run, "kind": kind, "queue_share_max": share, "waiting_max": max(waits) if waits else None}
            detail = f"largest queue share of E2E {_pct(share)} ({worst.window.split(': ', 1)[-1]})"
            if waits:
                detail += f"; at most {max(waits):g} requests waiting"
            status = "warn" if share >= QUEUE_SHARE_WARN else "pass"
            if status == "warn":
                detail += ": latency there is mostly waiting for a slot, not serving"
            out.append(Check(f"queueing: {what}", status, detail, fig).as_dict())
        tok = [(a, token_check(a)) for a in g]
        tok = [(a, c) for a, c in tok if c is not None]
        if tok:
            bad = [(a, c) for a, c in tok if c.status == "fail"]
            short = [s for a, _ in tok for s in a.client.get("short", [])]
            fig = {"run": run, "kind": kind, "short": short, "windows_failed": [a.window for a, _ in bad]}
            if bad:
                detail = "; ".join(f"{a.window}: {c.detail}" for a, c in bad[:4])
                out.append(Check(f"token accounting: {what}", "fail", detail, fig).as_dict())
            else:
                out.append(
                    Check(
                        f"token accounting: {what}",
                        "pass",
                        f"every window's engine counts cover the client's; no request came back short ({len(tok)} windows)",
                        fig,
                    ).as_dict()
                )
    return out


# ---- short count: a results run whose file states a fixed output length and ignore_eos --------------
#: keys under which a result file's arguments state the output length each request asked for (vLLM:
#: ``vllm bench sweep`` writes the swept bench parameters into each run=N.json, ``--metadata K=V`` adds
#: K at the top level; SGLang bench_serving records ``random_output_len``); first present wins
OUTPUT_LEN_KEYS = ("output_len", "random_output_len", "sharegpt_output_len")
_TRUE = ("true", "1", "yes", "on")


def _stated(config: Mapping[str, Any], key: str) -> tuple[Any, str] | None:
    """A setting of the run as its file states it: the configuration's own key, else its ``params``
    (the file's other scalar keys: metadata, swept parameters); (value, where) or None."""
    if config.get(key) is not None:
        return config[key], key
    params = config.get("params")
    if isinstance(params, Mapping) and params.get(key) is not None:
        return params[key], key
    return None


def _flag(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() in _TRUE) or value == 1


def stated_output_length(config: Mapping[str, Any]) -> tuple[int, int, str] | None:
    """(asked, least, how it is stated) when a run's file states both the output length each request
    asked for and ``ignore_eos`` true (then every request must receive that many tokens); None when it
    does not state both — without ``ignore_eos`` an EOS may end a request early, legitimately. ``least``
    is the fewest tokens a request may be asked for: ``asked`` itself, or ``int(asked × (1 − r))``
    with vLLM's ``random_range_ratio`` r, which draws each request's length from that range."""
    eos = _stated(config, "ignore_eos")
    if eos is None or not _flag(eos[0]):
        return None
    dataset = _stated(config, "dataset_name")
    for key in OUTPUT_LEN_KEYS:
        if key == "random_output_len" and dataset is not None and str(dataset[0]) != "random":
            continue  # a default of another dataset's run, not what its requests asked for
        if key == "sharegpt_output_len" and (dataset is None or str(dataset[0]) != "sharegpt"):
            continue
        got = _stated(config, key)
        if got is None:
            continue
        try:
            asked = int(float(got[0]))
        except (TypeError, ValueError):
            continue
        if asked <= 0:
            continue
        how = f"{key} {asked} and ignore_eos {eos[0]} in the file"
        least = asked
        ratio = _stated(config, "random_range_ratio") if key != "sharegpt_output_len" else None
        if ratio is not None:
            try:
                r = float(ratio[0])
            except (TypeError, ValueError):
                r = 0.0
            if 0 < r < 1:
                least = int(asked * (1 - r))
                how += f", random_range_ratio {r:g}: each request asked for at least {least}"
        return asked, least, how
    return None


def short_count_checks(inputs: Any) -> list[dict[str, Any]]:
    """One check per results run whose file states a fixed output length and ``ignore_eos``
    (:func:`stated_output_length`): **fail** when a successful request received fewer tokens than asked
    (a short count: it stopped early, ``ignore_eos`` not honoured, so per-token figures average over
    fewer tokens than the run claims), naming the run and the requests; pass when every request got
    its length. Runs whose file states neither, or keeps no per-request counts, get no check."""
    import polars as pl

    out: list[dict[str, Any]] = []
    per_rr: dict[str, int] = {}
    for _pid, rid, _run in inputs.runs:
        per_rr[rid] = per_rr.get(rid, 0) + 1
    for pid, rid, run in inputs.runs:
        stated = stated_output_length(run.config)
        df = run.requests
        if stated is None or df is None or df.height == 0 or df["completion_tokens"].null_count() == df.height:
            continue
        asked, least, how = stated
        name = rid if per_rr[rid] == 1 else f"{rid} ({pid})"
        ok = df.filter(pl.col("success") & pl.col("completion_tokens").is_not_null())
        short = ok.filter(pl.col("completion_tokens") < least)
        fig = {
            "kind": "short count",
            "run": rid,
            "asked": asked,
            "least": least,
            "requests": ok.height,
            "short": short["index"].to_list(),
            "received_min": ok["completion_tokens"].min(),
            "source": run.source,
        }
        if short.height:
            shown = ", ".join(
                f"request {i} got {n}"
                for i, n in zip(short["index"].to_list()[:8], short["completion_tokens"].to_list()[:8])
            )
            more = f" and {short.height - 8} more" if short.height > 8 else ""
            detail = (
                f"{short.height} of {ok.height} requests of {name} received fewer than the {least} tokens asked "
                f"({shown}{more}; {how}): they stopped early, ignore_eos not honoured, so its per-token "
                "figures average over fewer tokens than the run claims"
            )
            out.append(Check(f"short count: {name}", "fail", detail, fig).as_dict())
        else:
            detail = f"all {ok.height} requests received at least the {least} tokens asked ({how})"
            out.append(Check(f"short count: {name}", "pass", detail, fig).as_dict())
    return out
