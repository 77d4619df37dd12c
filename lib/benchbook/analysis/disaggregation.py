"""PD (prefill/decode disaggregated) analyses: per-card throughput, gains, lifecycle, checks.

The page and ``benchbook summary`` call :func:`analyse`; the pieces are public for notebooks and
tests. Formulas (``docs/pd.md`` is the reader's version):

* per-card throughput = system Output Token Throughput / (prefill cards + decode cards), per window;
* relative gain = candidate / baseline − 1, only between runs under the same load (requests,
  concurrency, rate, prompt class) — a 320-request screen is never compared with a 640 run;
* lifecycle: TTFT share of E2E = mean TTFT / mean E2E; time generating = mean E2E − mean TTFT;
* acceptance length = output tokens / verify calls;
* Little's law (``benchbook.analysis.littles``), from the window's own figures and from per-request records;
* window validity: the native window must last ≥ ``min_window_s`` (60 s) and hold more than the
  concurrency's worth of requests (> C);
* batch composition from prefill scheduler log lines, and the admission simulator's batch counts
  for each arm's scheduler settings.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchbook.analysis import littles
from benchbook.analysis.verdict import NOT_A_RESULT, Evidence, State, Verdict, decide, typed_fields
from benchbook.errors import InputError
from benchbook.findings import Check, Exclusion, Findings
from benchbook.ingest.campaign import Campaign
from benchbook.ingest.pd_runs import (
    PDCampaign,
    PDRun,
    SummaryWindow,
    load_pd_campaign,
    load_pd_requests,
    read_prefill_log,
)
from benchbook.numfmt import fmt_num

MIN_WINDOW_S = 60.0
UNREPLICATED = "unreplicated — spread not measured"
INVALID_WINDOW = "not a result — window invalid"

__all__ = [
    "Check",
    "PDAnalysis",
    "per_card",
    "gain",
    "acceptance_length",
    "lifecycle",
    "window_validity",
    "batch_composition",
    "admission_table",
    "analyse",
    "MIN_WINDOW_S",
]


@dataclass
class PDAnalysis:
    """What the PD page and the summary JSON show. Lists of plain dicts, in a stable order."""

    title: str
    provenance: str
    cells: list[dict[str, Any]] = field(default_factory=list)
    comparisons: list[dict[str, Any]] = field(default_factory=list)
    checks: list[dict[str, str]] = field(default_factory=list)
    exclusions: list[dict[str, str]] = field(default_factory=list)
    admission: list[dict[str, Any]] = field(default_factory=list)  # simulator batch counts per arm/load
    batch_composition: list[dict[str, Any]] = field(default_factory=list)  # from logs or reported counts
    seam: dict[str, Any] = field(default_factory=dict)  # the first simulated batches per cap (batch_seam)
    loads: int = 0  # distinct loads (requests, concurrency, rate, prompt class) among the runs
    replicated: bool = False  # some arm has two or more runs under one load (a spread can be measured)
    runs_per_arm_and_load: list[int] = field(default_factory=list)  # the distinct run counts (n per cell)
    caveats: list[str] = field(default_factory=list)  # what could make the figures mislead (:func:`caveats`)

    def as_dict(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "provenance": self.provenance,
            "cells": self.cells,
            "comparisons": self.comparisons,
            "checks": self.checks,
            "exclusions": self.exclusions,
            "admission": self.admission,
            "batch_composition": self.batch_composition,
        }

    def cell(self, run: str, key: str, window: str | None = None) -> dict[str, Any]:
        for c in self.cells:
            if c["run"] == run and c["key"] == key and (window is None or c["window"] == window):
                return c
        raise KeyError((run, key, window))

    def comparison(self, key: str, window: str, context_contains: str = "") -> dict[str, Any]:
        for c in self.comparisons:
            if c["key"] == key and c["window"] == window and context_contains in c["context"]:
                return c
        raise KeyError((key, window, context_contains))

    def findings(self) -> Findings:
        """The PD page's findings box: results (worst first), failed checks (window-validity checks
        linked to the windows section), and the gains it could not judge — each per-card gain on its
        own line, the other figures grouped by verdict."""
        return Findings.build(**self.finding_parts(), results_section="throughput")

    def finding_parts(self) -> dict[str, list]:
        """The lines of :meth:`findings` before they are ordered (the campaign's findings join them)."""
        results, unjudged, others = [], [], {}
        for c in self.comparisons:
            where = "throughput" if c["key"] == "output_tok_s_per_card" else "other-figures"
            text = f"{c['candidate']} vs {c['baseline']}, {c['metric']} ({c['context']}): {c['change_pct']:+.1f}%"
            state = State(c["state"])
            if state.is_result:
                worse = state is State.REGRESSION
                order = 1 / (1 + abs(c["change_pct"]) / 100) if worse else 1 + abs(c["change_pct"]) / 100
                results.append(("regression" if worse else "improvement", order, text, where))
            elif c["key"] == "output_tok_s_per_card":
                unjudged.append((f"{text} — {c['verdict']}", where))
            else:
                others.setdefault(c["verdict"], []).append(c)
        unjudged += [
            (f"{len(cs)} other figure{'s' * (len(cs) != 1)} compared without a result: {verdict}", "other-figures")
            for verdict, cs in others.items()
        ]
        failed = [
            (f"{c['name']}: {c['detail']}", "windows" if c.get("kind") == "window validity" else "checks")
            for c in self.checks
            if c["status"] == "fail"
        ]
        return {"results": results, "failed": failed, "unjudged": unjudged}

    def check(self, name: str) -> dict[str, str]:
        for c in self.checks:
            if c["name"] == name:
                return c
        raise KeyError(name)


# ------------------------------------------------------------------------------ small formulas


def per_card(output_tok_s: float, cards: int) -> float:
    """System output throughput / total cards (2659.84 token/s / 16 = 166.24)."""
    if cards <= 0:
        raise ValueError(f"cards must be positive (got {cards})")
    return output_tok_s / cards


def gain(candidate: float, baseline: float) -> float:
    """Relative change candidate / baseline − 1 (216.5483 vs 166.24 → +0.3026)."""
    if baseline <= 0:
        raise ValueError(f"baseline must be positive (got {baseline})")
    return candidate / baseline - 1.0


def acceptance_length(output_tokens: int, verify_calls: int) -> float:
    """Output tokens per verify call (655360 / 114009 = 5.7483)."""
    if verify_calls <= 0:
        raise ValueError(f"verify calls must be positive (got {verify_calls})")
    return output_tokens / verify_calls


def lifecycle(mean_ttft_s: float, mean_e2e_s: float) -> dict[str, float]:
    """Time before the first token vs time generating, and TTFT's share of E2E (34.0264 / 42.9285)."""
    if mean_e2e_s <= 0:
        raise ValueError(f"mean E2E must be positive (got {mean_e2e_s})")
    return {
        "before_first_token_s": mean_ttft_s,
        "generating_s": mean_e2e_s - mean_ttft_s,
        "ttft_share": mean_ttft_s / mean_e2e_s,
    }


def window_validity(
    window: SummaryWindow,
    concurrency: float | None,
    *,
    min_duration_s: float = MIN_WINDOW_S,
    min_requests: float | None = None,
) -> Check:
    """Is the window long enough (≥ min_duration_s) and holding > min_requests (default: C)?

    Unknown figures make it ``warn``; a published lower bound ("over 60 s, over 128 requests")
    satisfies the rule and says so; a figure below the threshold is ``fail``.
    """
    need_req = concurrency if min_requests is None else min_requests
    name = f"{window.name} window validity"
    problems, unknown, notes = [], [], []
    lb = window.reported_lower_bounds or {}
    d = window.duration_s
    if d is not None:
        notes.append(f"{d:.2f} s")
        if d < min_duration_s:
            problems.append(f"{d:.2f} s is shorter than {min_duration_s:g} s")
    elif lb.get("duration_s") is not None and lb["duration_s"] >= min_duration_s:
        notes.append(f"> {lb['duration_s']:g} s (published lower bound, not a printed value)")
    else:
        unknown.append("duration not recorded")
    n = window.requests
    if need_req is None:
        unknown.append("no concurrency to compare the request count with")
    elif n is not None:
        notes.append(f"{n} requests")
        if n <= need_req:
            problems.append(f"{n} requests is not more than the concurrency's worth ({need_req:g})")
    elif lb.get("requests") is not None and lb["requests"] >= need_req:
        notes.append(f"> {lb['requests']} requests (published lower bound, not a printed value)")
    else:
        unknown.append("request count not recorded")
    rule = (
        f"rule: ≥ {min_duration_s:g} s and > {need_req:g} requests"
        if need_req is not None
        else f"rule: ≥ {min_duration_s:g} s"
    )
    if problems:
        status, text = "fail", "; ".join(problems) + (f" ({'; '.join(unknown)})" if unknown else "")
    elif unknown:
        status, text = "warn", "; ".join(unknown)
    else:
        status, text = "pass", ", ".join(notes)
    on_bound = status == "pass" and any("published lower bound" in x for x in notes)
    finding = text
    if lb.get("source") and status != "fail" and "published" in text:
        text += f" — source: {lb['source']}"
    return Check(name, status, f"{text}; {rule}", {"finding": finding, "lower_bound": on_bound})


def batch_composition(log_frame, page_size: int) -> dict[str, Any]:
    """Counts from parsed ``Prefill batch.`` lines: reports, requests per batch, tail-only (< one
    page of new tokens), single-request tail batches and multi-request batches."""
    seqs = log_frame["new_seq"].to_list()
    toks = log_frame["new_token"].to_list()
    hist: dict[int, int] = {}
    for s in seqs:
        hist[s] = hist.get(s, 0) + 1
    return {
        "reports": len(seqs),
        "requests_per_batch": dict(sorted(hist.items())),
        "multi_request_batches": sum(1 for s in seqs if s >= 2),
        "tail_only_batches": sum(1 for t in toks if t < page_size),
        "single_request_tail_batches": sum(1 for s, t in zip(seqs, toks) if s == 1 and t < page_size),
    }


SEAM_BATCHES = 7  # batches shown side by side in the seam picture (A, B, C and the start of D at cap 2)
SEAM_REQUESTS = 8  # requests fed to the simulator for the seam picture (more than the shown batches need)


def _letter(i: int) -> str:
    return chr(ord("A") + i) if i < 26 else f"R{i}"


def batch_seam(campaign: PDCampaign, base_arm: str) -> dict[str, Any]:
    """The first prefill batches of identical prompts at each cap the arms use, replayed by the
    admission simulator with the baseline arm's chunk and page size and the first prompt class:
    ``prompt_tokens, chunk_size, page_size, sequences`` (``cap<N>`` → batches → ``request`` letter
    and ``new_tokens``) and ``cut`` (how request A is cut, "8192 + 8192 + 4" for 16388 tokens); {} when no
    prompt length is recorded."""
    from benchbook.analysis import admission as simulator

    base = campaign.arms[base_arm]
    pcs = [r.load.get("prompt_class") for r in campaign.runs if r.load.get("prompt_class")]
    pt = campaign.prompt_tokens(pcs[0]) if pcs else None
    if pt is None:
        return {}
    caps = sorted({a.prefill_max_requests for a in campaign.arms.values()})
    chunk, psize = base.chunk_size, base.page_size
    seqs: dict[str, list[list[dict[str, Any]]]] = {}
    for cap in caps:
        res = simulator.simulate([pt] * SEAM_REQUESTS, chunk, psize, cap)
        seqs[f"cap{cap}"] = [
            [{"request": _letter(i), "new_tokens": n} for i, n in parts] for parts in res.sequence()[:SEAM_BATCHES]
        ]
    pieces = [str(p["new_tokens"]) for b in seqs[f"cap{caps[0]}"] for p in b if p["request"] == "A"]
    return {
        "prompt_tokens": pt,
        "chunk_size": chunk,
        "page_size": psize,
        "requests": SEAM_REQUESTS,
        "sequences": seqs,
        "cut": " + ".join(pieces),
    }


def admission_table(campaign: PDCampaign, caps=(1, 2, 3, 4)) -> list[dict[str, Any]]:
    """Simulated prefill batch counts for each load's prompts under the arms' scheduler settings.

    One row per distinct (requests, prompt tokens, chunk, page) and cap in ``caps``: requests,
    prompt_tokens, chunk_size, page_size, max_requests, batches, tail_only_batches,
    multi_request_batches, new_tokens, arms (the arms configured with that cap, comma-separated).
    """
    from benchbook.analysis.admission import batch_counts_by_cap

    setups: dict[tuple[int, int, int, int], set[tuple[str, int]]] = {}
    for r in campaign.runs:
        arm = campaign.arms[r.arm]
        n, pt = r.load.get("requests"), campaign.prompt_tokens(r.load.get("prompt_class"))
        if n is None or pt is None:
            continue
        setups.setdefault((n, pt, arm.chunk_size, arm.page_size), set()).add((arm.name, arm.prefill_max_requests))
    rows = []
    for (n, pt, chunk, page), arms in sorted(setups.items()):
        all_caps = sorted(set(caps) | {c for _, c in arms})
        for row in batch_counts_by_cap([pt] * n, chunk, page, all_caps):
            names = sorted(a for a, c in arms if c == row["max_requests"])
            rows.append(
                {
                    "requests": n,
                    "prompt_tokens": pt,
                    "chunk_size": chunk,
                    "page_size": page,
                    **row,
                    "arms": ", ".join(names),
                }
            )
    return rows


# ------------------------------------------------------------------------------ analyse


# key -> (label, unit, higher is better)
_METRICS: dict[str, tuple[str, str, bool]] = {
    "output_tok_s_per_card": ("output throughput per card", "token/s/card", True),
    "output_tok_s": ("system output throughput", "token/s", True),
    "request_rate": ("completion rate", "req/s", True),
    "mean_ttft_s": ("mean TTFT", "s", False),
    "mean_tpot_ms": ("mean TPOT", "ms", False),
    "mean_itl_ms": ("mean ITL", "ms", False),
    "mean_e2e_s": ("mean E2E", "s", False),
    "ttft_share": ("TTFT share of E2E", "fraction", False),
    "generating_s": ("time generating (E2E − TTFT)", "s", False),
    "mean_concurrency": ("mean system concurrency", "requests", True),
    "littles_lambda_w": ("completion rate × mean E2E (λW)", "requests", True),
    "window_s": ("window duration", "s", True),
    "acceptance_length": ("acceptance length", "tokens/verify", True),
}
_COMPARED = (
    "output_tok_s_per_card",
    "request_rate",
    "mean_ttft_s",
    "mean_tpot_ms",
    "mean_e2e_s",
    "ttft_share",
    "acceptance_length",
)
_RANK = {"recorded": 0, "derived": 1, "approximate": 2, "reported": 3}


def _worst(*sources: str) -> str:
    return max(sources, key=lambda s: _RANK[s])


def _load_key(r: PDRun) -> tuple:
    ld = r.load
    return (ld.get("requests"), ld.get("concurrency"), ld.get("request_rate"), ld.get("prompt_class"))


def _load_text(campaign: PDCampaign, r: PDRun) -> str:
    ld = r.load
    parts = []
    if ld.get("requests") is not None:
        parts.append(f"{ld['requests']} requests")
    if ld.get("concurrency") is not None:
        parts.append(f"C{ld['concurrency']}")
    if ld.get("request_rate") is not None:
        parts.append(f"{ld['request_rate']:g} req/s")
    pt, gt = campaign.prompt_tokens(ld.get("prompt_class")), campaign.generation_tokens
    parts.append(f"{pt if pt is not None else '?'} in / {gt if gt is not None else '?'} out")
    return ", ".join(parts)


def _window_values(campaign: PDCampaign, r: PDRun, w: SummaryWindow) -> dict[str, tuple[float, str]]:
    """key -> (value, source) for the figures one window supports."""
    arm = campaign.arms[r.arm]
    out: dict[str, tuple[float, str]] = {}

    def src(section: str, key: str, stat: str | None = None) -> str:
        p = f"$.windows.{w.name}.{section}.{key}" + (f".{stat}" if stat else "")
        return r.source(p)

    tput = w.get("Output Token Throughput")
    if tput is not None:
        s = src("common", "Output Token Throughput")
        out["output_tok_s"] = (tput, s)
        out["output_tok_s_per_card"] = (per_card(tput, arm.cards), s)
    if w.get("Request Throughput") is not None:
        out["request_rate"] = (w.get("Request Throughput"), src("common", "Request Throughput"))
    for m, key, scale in (
        ("TTFT", "mean_ttft_s", 1e-3),
        ("TPOT", "mean_tpot_ms", 1.0),
        ("ITL", "mean_itl_ms", 1.0),
        ("E2EL", "mean_e2e_s", 1e-3),
    ):
        v = w.stat(m)
        if v is not None:
            out[key] = (v * scale, src("metrics", m, "Average"))
    if "mean_ttft_s" in out and "mean_e2e_s" in out:
        lc = lifecycle(out["mean_ttft_s"][0], out["mean_e2e_s"][0])
        s = _worst(out["mean_ttft_s"][1], out["mean_e2e_s"][1])
        out["ttft_share"] = (lc["ttft_share"], s)
        out["generating_s"] = (lc["generating_s"], s)
    if w.get("Concurrency") is not None:
        out["mean_concurrency"] = (w.get("Concurrency"), src("common", "Concurrency"))
    if "request_rate" in out and "mean_e2e_s" in out:
        out["littles_lambda_w"] = (
            littles.implied_concurrency(out["request_rate"][0], out["mean_e2e_s"][0]),
            _worst(out["request_rate"][1], out["mean_e2e_s"][1]),
        )
    if w.duration_s is not None:
        out["window_s"] = (w.duration_s, src("common", "Benchmark Duration"))
    spec = r.speculative
    if spec is not None and spec.get("window", "whole") == w.name:
        sp = "derived" if any(p.startswith("$.speculative") for p in r.derived) else "recorded"
        out["acceptance_length"] = (acceptance_length(spec["output_tokens"], spec["verify_calls"]), sp)
    return out


def _concurrency_limit(r: PDRun, w: SummaryWindow) -> float | None:
    c = w.get("Max Concurrency")
    return c if c is not None else r.load.get("concurrency")


def _cell(
    campaign: PDCampaign,
    r: PDRun,
    window: str,
    key: str,
    value: float,
    source: str,
    n: int = 1,
    lo: float | None = None,
    hi: float | None = None,
    metric: str | None = None,
    unit: str | None = None,
) -> dict:
    arm = campaign.arms[r.arm]
    pc = r.load.get("prompt_class")
    label, u, _ = _METRICS.get(key, (key, "", True))
    return {
        "arm": r.arm,
        "run": r.id,
        "environment": arm.environment,
        "prompt_class": pc,
        "prompt_tokens": campaign.prompt_tokens(pc),
        "generated_tokens": campaign.generation_tokens,
        "metric": metric or f"{label} ({window})",
        "unit": unit or u,
        "median": value,
        "min": value if lo is None else lo,
        "max": value if hi is None else hi,
        "n": n,
        "window": window,
        "key": key,
        "source": source,
        "load": _load_text(campaign, r),
    }


def decision(key: str, base: list[float], cand: list[float], noise_pct: float | None, invalid: str | None) -> Verdict:
    """The typed verdict on one PD metric between two arms' runs (under the same load).

    The noise yardstick: with at least two runs on each side, the larger of the two arms' own
    run-to-run spreads (the same whichever arm is the baseline); else the user's ``noise_pct``
    (supplied, not measured); else none — cannot tell ("unreplicated"). A window that fails its
    validity rule makes the comparison not comparable. The rule is the seed rule."""
    from benchbook.analysis import stats as st

    higher = _METRICS[key][2]
    b, c = st.cell(base, what="baseline"), st.cell(cand, what="candidate")
    if min(base + cand) <= 0 and not invalid:  # a ratio of a zero figure means nothing: shown, not judged
        invalid = "a non-positive figure on one side: no ratio can be judged"
    if invalid:
        spread, source = None, ""
    elif len(base) >= 2 and len(cand) >= 2:
        spread, source = max(st.run_spread(v) for v in (base, cand)), "the larger of the two arms' own spreads"
    elif noise_pct is not None:
        spread, source = noise_pct / 100, "the given noise threshold (supplied, not measured)"
    else:
        spread, source = None, ""
    direction = (
        "no change" if b.median == c.median else ("improvement" if (c.median > b.median) == higher else "regression")
    )
    ev = Evidence(
        b,
        c,
        higher,
        "seed",
        spread,
        source,
        not_comparable=invalid,
        no_spread=f"n={len(base)} vs n={len(cand)} runs: run-to-run spread unmeasured, direction {direction}",
    )
    return decide(ev)


#: the PD page's words for each state (older summaries carry them in ``verdict``)
PD_WORDS = {State.NOT_COMPARABLE: INVALID_WINDOW, State.CANNOT_TELL: UNREPLICATED, State.WITHIN_NOISE: NOT_A_RESULT}


def _words(v: Verdict) -> tuple[str, str]:
    reason = v.reason
    if v.evidence.spread_from and v.state is not State.NOT_COMPARABLE:
        reason += f" ({v.evidence.spread_from})"
    return PD_WORDS.get(v.state, f"result ({v.direction})"), reason


def analyse(
    campaign_dir: str | Path | PDCampaign | Campaign,
    *,
    min_window_s: float = MIN_WINDOW_S,
    min_window_requests: float | None = None,
    tolerance: float = littles.TOLERANCE,
    fail_tolerance: float = littles.FAIL_TOLERANCE,
    noise_pct: float | None = None,
    baseline_arm: str | None = None,
) -> PDAnalysis:
    """Everything the PD page shows, for one campaign folder.

    ``min_window_s`` / ``min_window_requests`` (default: the run's concurrency) are the native
    window's validity thresholds; ``tolerance`` / ``fail_tolerance`` Little's law's; ``noise_pct``
    an optional noise threshold (in %) for single-run comparisons. ``campaign_dir``: a folder, a
    loaded :class:`Campaign` (its lazy PD part is used) or a :class:`PDCampaign`.
    """
    if isinstance(campaign_dir, PDCampaign):
        campaign = campaign_dir
    elif isinstance(campaign_dir, Campaign):
        campaign = campaign_dir.pd
    else:
        campaign = load_pd_campaign(campaign_dir)
    base_arm = baseline_arm or campaign.baseline_arm()
    if base_arm not in campaign.arms:
        raise InputError(campaign.root / "campaign.json", "$.arms", f"baseline arm {base_arm!r} is not an arm")
    rep = PDAnalysis(title=campaign.title, provenance=campaign.provenance)
    values: dict[tuple[str, str], dict[str, tuple[float, str]]] = {}
    invalid: dict[tuple[str, str], str] = {}

    for r in campaign.runs:
        arm = campaign.arms[r.arm]
        for wname in ("whole", "native"):
            w = r.windows.get(wname)
            if w is None:
                continue
            vals = _window_values(campaign, r, w)
            values[(r.id, wname)] = vals
            for key in _METRICS:
                if key in vals:
                    rep.cells.append(_cell(campaign, r, wname, key, *vals[key]))
            # Little's law from the window's own figures
            if "request_rate" in vals and "mean_e2e_s" in vals:
                lc = littles.check(
                    vals["request_rate"][0],
                    vals["mean_e2e_s"][0],
                    vals.get("mean_concurrency", (None,))[0],
                    limit=_concurrency_limit(r, w),
                    tolerance=tolerance,
                    fail_tolerance=fail_tolerance,
                    independent="the tool's Concurrency is its requests' summed E2E over the duration, λ × W by "
                    "construction (it only shows the figures belong to one window)",
                )
                rep.checks.append(lc.as_check(f"Little's law: {r.id} {wname}").as_dict())
            if wname == "native":
                chk = window_validity(
                    w, _concurrency_limit(r, w), min_duration_s=min_window_s, min_requests=min_window_requests
                )
                chk = Check(
                    f"native window validity: {r.id}",
                    chk.status,
                    chk.detail,
                    {"kind": "window validity", "run": r.id, "window": wname, **chk.figures},
                )
                rep.checks.append(chk.as_dict())
                if chk.status != "pass":
                    invalid[(r.id, wname)] = f"{r.id} native window: {chk.detail}"
            _consistency(r, w, rep)
        _speculative(r, rep)
        if r.requests_file is not None:
            _records(campaign, r, rep, tolerance, fail_tolerance)
        if r.prefill_log is not None:
            frame, excl = read_prefill_log(r.prefill_log)
            rep.exclusions.extend(e.as_dict() for e in excl)
            bc = batch_composition(frame, arm.page_size)
            rep.batch_composition.append(
                {"run": r.id, "arm": r.arm, "kind": "counted from log lines", "source": str(r.prefill_log), **bc}
            )
        pb = r.reported.get("prefill_batches")
        if pb is not None:
            rep.batch_composition.append({"run": r.id, "arm": r.arm, "kind": "reported counts (no log lines)", **pb})

    # comparisons: baseline arm vs each other arm, only under the same load
    groups: dict[tuple, list[PDRun]] = {}
    for r in campaign.runs:
        groups.setdefault(_load_key(r), []).append(r)
    for runs in groups.values():
        base_runs = [r for r in runs if r.arm == base_arm]
        if not base_runs:
            continue
        for cand_arm in [a for a in campaign.arms if a != base_arm]:
            cand_runs = [r for r in runs if r.arm == cand_arm]
            if not cand_runs:
                continue
            context_load = _load_text(campaign, base_runs[0])
            for wname in ("whole", "native"):
                for key in _COMPARED:
                    b = [values[(r.id, wname)][key] for r in base_runs if key in values.get((r.id, wname), {})]
                    c = [values[(r.id, wname)][key] for r in cand_runs if key in values.get((r.id, wname), {})]
                    if len(b) != len(base_runs) or len(c) != len(cand_runs) or not b or not c:
                        continue
                    bv, cv = [v for v, _ in b], [v for v, _ in c]
                    bad = "; ".join(invalid[(r.id, wname)] for r in base_runs + cand_runs if (r.id, wname) in invalid)
                    typed = decision(key, bv, cv, noise_pct, bad or None)
                    verdict, reason = _words(typed)
                    bm, cm = statistics.median(bv), statistics.median(cv)
                    src = _worst(*(s for _, s in b + c))
                    if src != "recorded":
                        reason += f"; inputs include {src} figures"
                    rep.comparisons.append(
                        {
                            "baseline": base_arm,
                            "candidate": cand_arm,
                            "metric": f"{_METRICS[key][0]} ({wname})",
                            "context": f"{wname} window, {context_load}",
                            "ratio": cm / bm if bm else None,
                            "change_pct": (cm / bm - 1) * 100 if bm else None,
                            "verdict": verdict,
                            "reason": reason,
                            "key": key,
                            "window": wname,
                            "baseline_value": bm,
                            "candidate_value": cm,
                            "unit": _METRICS[key][1],
                            "source": src,
                            **typed_fields(typed),
                            "replicated": typed.n_baseline >= 2 and typed.n_candidate >= 2,
                        }
                    )
    rep.admission = admission_table(campaign)
    rep.seam = batch_seam(campaign, base_arm)
    per_load: dict[tuple, dict[str, int]] = {}
    for r in campaign.runs:
        d = per_load.setdefault(_load_key(r), {})
        d[r.arm] = d.get(r.arm, 0) + 1
    rep.loads = len(per_load)
    rep.runs_per_arm_and_load = sorted({n for d in per_load.values() for n in d.values()})
    rep.replicated = any(n > 1 for n in rep.runs_per_arm_and_load)
    rep.caveats = caveats(campaign, rep)
    return rep


def caveats(c: PDCampaign, rep: PDAnalysis) -> list[str]:
    """What could make the PD page's figures mislead, one sentence each, from what the inputs hold
    (provenance, per-request records, prefill logs, replication, loads, window validity, value marks,
    speculative counters, the simulator, stage timings): the page's "Caveats from the inputs"."""
    out: list[str] = []
    if c.provenance != "measured":
        out.append(f"Provenance is '{c.provenance}': the figures were not measured by this tool.")
    if not any(r.requests_file for r in c.runs):
        out.append(
            "No per-request records: concurrency is not measured independently; Little's law from the "
            "summary only shows the figures belong to one window."
        )
    elif not all(r.requests_file for r in c.runs):
        out.append(
            "Per-request records exist for only some runs: " + ", ".join(r.id for r in c.runs if r.requests_file) + "."
        )
    reported = [b for b in rep.batch_composition if b["kind"].startswith("reported")]
    if reported and not any(r.prefill_log for r in c.runs):
        out.append(
            "Prefill batch counts are reported counts, no log lines: "
            + "; ".join(
                f"{b['run']}: {b.get('reports')} reports, {b.get('multi_request_batches')} multi-request"
                for b in reported
            )
            + "."
        )
    elif not any(r.prefill_log for r in c.runs):
        out.append("No prefill log: the batch seam is known only from the simulator.")
    if not rep.replicated:
        out.append("One run per arm and load: every gain is unreplicated and the run-to-run spread is unmeasured.")
    if rep.loads > 1:
        out.append(f"{rep.loads} different loads: gains are computed within a load only, never across loads.")
    for chk in rep.checks:
        if chk.get("kind") == "window validity":
            run = chk["run"]
            if chk["status"] == "fail":
                out.append(
                    f"{run}'s native window fails the window rule ({chk['finding']}): its native figures are not a result."
                )
            elif chk["lower_bound"]:
                out.append(
                    f"{run}'s native window passes only on a published lower bound; its length and request "
                    "count were not printed."
                )
            elif chk["status"] == "warn":
                out.append(f"{run}'s native window cannot be checked: {chk['finding']}.")
    for r in c.runs:
        w = r.windows.get("whole")
        if w is not None and w.get("Concurrency") is None and w.get("Request Throughput") is not None:
            out.append(f"{r.id}: no whole-window mean concurrency recorded, so λ × W is an implied concurrency.")
    n_der = sum(len(r.derived) for r in c.runs)
    n_apx = sum(len(r.approximate) for r in c.runs)
    if n_der or n_apx:
        out.append(
            f"{n_der} figure(s) are derived and {n_apx} approximate (see Value marks); gains built on them "
            "inherit the mark."
        )
    if any(r.speculative for r in c.runs):
        out.append(
            "Acceptance length is output tokens / verify calls; a strict acceptance rate needs the proposal "
            "count, which is not recorded."
        )
    if rep.admission:
        out.append(
            "Simulator batch counts replay admission on the CPU with ample memory; arrival times, KV "
            "resources and DP distribution are not modelled, so they explain the mechanism, not the speed-up."
        )
    if not any(
        r.windows.get("whole") and r.windows["whole"].stat("TTFT") is not None and r.requests_file for r in c.runs
    ):
        out.append("TTFT is not split into queueing, prefill and hand-off: no stage timings in the inputs.")
    return out


def _consistency(r: PDRun, w: SummaryWindow, rep: PDAnalysis) -> None:
    """Output Token Throughput ≈ Total Generated Tokens / Benchmark Duration, when all three exist."""
    t, n, d = w.get("Output Token Throughput"), w.get("Total Generated Tokens"), w.duration_s
    if t is None or n is None or d is None:
        return
    expect = n / d
    gap = abs(expect - t) / max(expect, t)
    status = "pass" if gap <= 0.001 else "warn" if gap <= 0.01 else "fail"
    rep.checks.append(
        Check(
            f"throughput = tokens / duration: {r.id} {w.name}",
            status,
            f"{n} tokens / {d:.3f} s = {fmt_num(expect, 4, sig=7, trim=True)} token/s vs recorded "
            f"{fmt_num(t, 4, sig=7, trim=True)} (gap {fmt_num(gap * 100, 3)} %)",
        ).as_dict()
    )


def _speculative(r: PDRun, rep: PDAnalysis) -> None:
    spec = r.speculative
    if spec is None:
        return
    al = acceptance_length(spec["output_tokens"], spec["verify_calls"])
    width = spec.get("verify_width")
    problems = []
    if al < 1:
        problems.append(f"fewer output tokens than verify calls (AL {al:.4f} < 1)")
    if width is not None and al > width:
        problems.append(f"AL {al:.4f} exceeds the verify width {width}")
    w = r.windows.get(spec.get("window", "whole"))
    gen = w.get("Total Generated Tokens") if w else None
    if gen is not None and gen != spec["output_tokens"]:
        problems.append(f"speculative output tokens {spec['output_tokens']} != window's Total Generated Tokens {gen}")
    rep.checks.append(
        Check(
            f"acceptance length: {r.id}",
            "fail" if problems else "pass",
            "; ".join(problems) or f"{spec['output_tokens']} / {spec['verify_calls']} = {al:.4f}",
            {
                "run": r.id,
                "output_tokens": spec["output_tokens"],
                "verify_calls": spec["verify_calls"],
                "acceptance_length": al,
            },
        ).as_dict()
    )


def _records(campaign: PDCampaign, r: PDRun, rep: PDAnalysis, tolerance: float, fail_tolerance: float) -> None:
    df = load_pd_requests(r.requests_file)
    fname = str(r.requests_file)
    for row in df.filter(~df["success"]).iter_rows(named=True):
        rep.exclusions.append(
            Exclusion(
                fname,
                f"$.requests[{row['index']}]",
                "failed request: excluded from completion rate and mean E2E, counted in the in-flight concurrency",
            ).as_dict()
        )
    starts, ends, ok = df["start"].to_list(), df["end"].to_list(), df["success"].to_list()
    for wname, w in r.windows.items():
        if wname == "whole":
            t0 = w.start_s if w.start_s is not None else min(starts)
            t1 = w.end_s if w.end_s is not None else max(ends)
        elif w.start_s is not None and w.end_s is not None:
            t0, t1 = w.start_s, w.end_s
        else:
            continue
        rw = littles.records_window(starts, ends, ok, t0, t1)
        rep.cells.append(
            _cell(
                campaign,
                r,
                wname,
                "mean_concurrency",
                rw.in_flight,
                "recorded",
                metric=f"time-weighted in-flight requests, from records ({wname})",
            )
        )
        lam = w.get("Request Throughput")
        e2e = w.stat("E2EL")
        label = "summary"
        if lam is None or e2e is None:  # nothing to hold the records against but their own λW
            if rw.mean_e2e_s is None:
                continue
            lam, e2e, label = rw.completion_rate, rw.mean_e2e_s * 1000, "records"
        lc = littles.check(
            lam,
            e2e / 1000,
            rw.in_flight,
            limit=_concurrency_limit(r, w),
            tolerance=tolerance,
            fail_tolerance=fail_tolerance,
            concurrency_source="measured (records, time-weighted)",
            independent=None
            if label == "summary"
            else "λ and W come from the same records the in-flight count does: nothing independent to hold it against",
        )
        rep.checks.append(
            Check(
                f"Little's law, measured: {r.id} {wname}",
                lc.status,
                f"λ, W from the {label}; " + lc.detail,
                {"kind": "littles measured", "run": r.id, "window": wname},
            ).as_dict()
        )
    ttft = df.filter(df["success"] & df["ttft_s"].is_not_null())
    if ttft.height:
        lc = lifecycle(ttft["ttft_s"].mean(), ttft["e2e_s"].mean())
        for key in ("ttft_share", "generating_s"):
            rep.cells.append(
                _cell(
                    campaign,
                    r,
                    "records",
                    key,
                    lc[key],
                    "recorded",
                    metric=f"{_METRICS[key][0]} (per-request records, n={ttft.height})",
                )
            )
