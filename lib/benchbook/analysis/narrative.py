"""The sentences a campaign's pages say about their design and their verdicts, generated from what the
campaign holds — processes per arm, the rule used, the spread measured — never typed by hand.

* :func:`verdict_sentences`: the baseline page's "Verdict": every comparison the page shows (the phase
  cells and the ladder's output rate, per compared pair: results, within noise, cannot tell), which
  server processes were flat and which not, batching amortization with its check's status, memory;
* :func:`processes_sentence`: how many server processes each arm ran (the repeats);
* :func:`spread_sentence`: why a result set measured no spread, truly (nothing repeated, or repeats
  below the gates).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from benchbook.numfmt import fmt_pct, fmt_ratio

CampaignAnalysis = Any  # benchbook.analysis.campaign_analysis.CampaignAnalysis (it imports this module)


def processes_of(camp: Any) -> dict[str, list[str]]:
    """Arm -> its server processes (init's arm/run layout; an arm of runs without processes: its runs)."""
    out: dict[str, list[str]] = {}
    for r in camp.manifest.get("runs", []):
        p = r.get("process") or r.get("id")
        if r.get("arm") and p not in out.setdefault(r["arm"], []):
            out[r["arm"]].append(p)
    return out


def processes_sentence(camp: Any, arms: Iterable[str] | None = None) -> str:
    """``serial: 2 server processes (serial/p1, serial/p2); eager: 1`` — the repeats each arm has."""
    procs = processes_of(camp)
    if not any(r.get("process") for r in camp.manifest.get("runs", [])):
        return ""
    parts = []
    for a in arms if arms is not None else procs:
        ps = procs.get(a, [])
        if ps:
            parts.append(
                f"{a}: {len(ps)} server process{'es' * (len(ps) != 1)}" + (f" ({', '.join(ps)})" if len(ps) > 1 else "")
            )
    return "; ".join(parts)


def _state(c: Mapping[str, Any]) -> str:
    if c.get("is_result"):
        return "result"
    s = c.get("state")
    if s in ("cannot tell", "not comparable") or c.get("verdict") == "no verdict":
        return "cannot"
    return "noise"


def _ratio_change(r: Mapping[str, Any]) -> str:
    """``1.48x (+47.7%,`` — the findings box's convention: candidate / baseline and its change beside it."""
    pct = r.get("change_pct")
    if pct is None:
        pct = (r["ratio"] - 1) * 100
    return f"{fmt_ratio(r['ratio'])} ({fmt_pct(pct / 100, signed=True)},"


def _pair_sentence(b: str, c: str, rows: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    """One pair's verdicts over every figure the page shows for it."""
    res = [(name, r) for name, r in rows if _state(r) == "result"]
    noise = [name for name, r in rows if _state(r) == "noise"]
    cannot = [(name, r) for name, r in rows if _state(r) == "cannot"]
    ns = sorted({f"n={r.get('candidate_n')} vs {r.get('baseline_n')}" for _, r in rows if r.get("candidate_n")})
    head = f"{c} vs {b}: {len(res)} of {len(rows)} figures are results"
    shown = "; ".join(f"{name} {_ratio_change(r)} {r.get('state') or r.get('direction')})" for name, r in res[:4])
    parts = [head + (f" — {shown}" + (f"; … {len(res) - 4} more" if len(res) > 4 else "") if res else "")]
    if noise:
        parts.append(f"{len(noise)} within noise ({', '.join(noise[:2])}{' …' if len(noise) > 2 else ''})")
    if cannot:
        parts.append(
            f"{len(cannot)} cannot be told ({', '.join(n for n, _ in cannot[:2])}{' …' if len(cannot) > 2 else ''})"
        )
    return "; ".join(parts) + (f" ({', '.join(ns)})." if ns else ".")


def verdict_sentences(an: CampaignAnalysis, arms: Sequence[str]) -> list[str]:
    """The baseline page's verdict for ``arms`` (its phase comparisons) and every ladder comparison it shows."""
    from benchbook.analysis.baseline import METRIC_NAMES

    lines: list[str] = []
    # serialization, in one sentence: which processes were flat and which not, per arm
    ser = [c for c in an.checks if c.get("kind") == "serialization"]
    runs = {r.id: r.arm for r in an.camp.runs}
    by_arm: dict[str, list[dict[str, Any]]] = {}
    for c in ser:
        by_arm.setdefault(c.get("arm") or runs.get(c.get("run")), []).append(c)
    flat, rising, odd = [], [], []
    for arm, cs in by_arm.items():
        serial = an.camp.arms.get(arm, {}).get("mode") == "serial"
        f = [c.get("process") or c.get("run") for c in cs if c.get("flat")]
        r = [c.get("process") or c.get("run") for c in cs if not c.get("flat")]
        if f and serial:
            flat.append(f"{arm} ({', '.join(f)})")
        elif f:
            odd.append(f"{arm} (flat though batched: {', '.join(f)})")
        if r:
            (odd if serial else rising).append(
                f"{arm} ({', '.join(r)})" + (" not flat though serial" if serial else "")
            )
    parts = []
    if flat:
        parts.append("flat across the ladder, requests served one at a time: " + "; ".join(flat))
    if rising:
        parts.append("the rate rises with n: " + "; ".join(rising))
    if odd:
        parts.append("to check: " + "; ".join(dict.fromkeys(odd)))
    if parts:
        lines.append("Serialization — " + " — ".join(parts) + ".")
    # every comparison the page shows, per pair: the phase cells and the ladder's output rate
    pairs: dict[tuple[str, str], list[tuple[str, Mapping[str, Any]]]] = {}
    for c in (an.results_ladder or {}).get("comparisons", []):  # the output rate first: what serving is about
        pairs.setdefault((c["baseline"], c["candidate"]), []).append(
            (f"output tok/s at concurrency {c['concurrency']}", c)
        )
    for c in an.comparisons:
        if c["baseline"] in arms and c["candidate"] in arms:
            name = f"{METRIC_NAMES.get(c['metric'], c['metric'])} ({c['context']})"
            pairs.setdefault((c["baseline"], c["candidate"]), []).append((name, c))
    lines += [_pair_sentence(b, c, rows) for (b, c), rows in pairs.items()]
    for c in an.checks:
        if c.get("kind") == "batching amortization":
            lines.append(f"batching amortization ({c['status']}): {c['detail']}")
    lines += [d.describe() for d in an.memory_deltas if d.baseline in arms and d.candidate in arms]
    return lines


def spread_sentence(rs: Any) -> str:
    """Why the verdicts of a result set had no spread to use, as it is: nothing was repeated, or every
    repeat failed a validity gate that no spread between server processes stands in for."""
    repeated = [f"{c.label} ({max(len(p.entries) for p in c.points)})" for c in rs.configs
                if any(len(p.entries) > 1 for p in c.points)]  # fmt: skip
    if not repeated:
        return (
            "No configuration in these comparisons was run more than once: the run-to-run noise is unknown, so every "
            "verdict below is 'cannot tell' and the ratios are only ratios."
        )
    return (
        f"Repeated configurations ({', '.join(repeated)} runs at a load) measured no spread: every repeat failed a "
        "validity gate, so every verdict below is 'cannot tell' and the ratios are only ratios."
    )


RULES_POINTER = (
    "the campaign's rules, stated once under Rules in the findings box above: the same on every page of this "
    "campaign and in its summary"
)


def reading_guide(an: CampaignAnalysis, kind: str, arms: Sequence[str] | None = None) -> dict[str, Any]:
    """The "How to read this page" items a page of ``kind`` (baseline | ablation | compare) says about
    its design: n per cell with the processes each arm ran, the noise rule (a pointer to the rules the
    findings box states once), and the page's other design sentences."""
    procs = processes_sentence(an.camp, arms)
    extra: list[str] = []
    if kind == "baseline":
        ns = an.cell_ns(list(arms) if arms is not None else None)
        parts = []
        if ns:
            parts.append(
                f"phase-split cells are the median of n={'/'.join(map(str, ns))} samples of one server process with "
                "[min–max]" + ("; with n=3 the three samples are exactly min, median and max" if 3 in ns else "")
            )
            if an.phase_noise is not None:
                parts.append(
                    "an arm run in two or more server processes is compared over its processes (each process's "
                    "median; n = processes)"
                )
        else:
            parts.append("no phase-split cells")
        if an.results_ladder:
            parts.append(
                "the ladder from result files has one row per load point of a server process; arms are compared over "
                "their processes at each load (n = processes)"
            )
        if an.camp.runs_of("requests"):
            parts.append("whole-request figures are one run each (n=1); runs of the same arm are separate rows")
        n_per_cell = "; ".join(parts)
    elif kind == "ablation":
        n_per_cell = (
            "ladder figures: one value per server process of the arm (n = processes); phase figures: the median "
            "[min–max] of the measured rounds of one process, or over the processes where an arm ran several"
        )
        extra.append("A switch is a server setting whose stated value differs from the baseline arm's.")
    else:
        rs = an.results
        reps = sorted({len(p.entries) for c in rs.configs for p in c.points}) if rs is not None else []
        n_per_cell = (
            "each run is one benchmark run (one load point of a server process), counted once however many files "
            "carried it; figures per run are the tool's own statistics over its requests. A configuration (an arm) "
            f"at one load is the median over its repeats at that load, with their [min–max] (n = {', '.join(map(str, reps))})"
        )
        extra.append(
            "A configuration is the campaign's arm (campaign.json; the files' own metadata only where it names none); "
            "the load (request rate, concurrency) is not part of it: each configuration is one curve over its loads, "
            "and runs of it at one load are repeats; see 'Configurations'."
        )
        gated = bool(rs is not None and rs.processes)
        extra.append(
            "Configurations are judged against each other at matched load, only when model and dataset agree; the rest "
            "are shown side by side, 'not comparable'. "
            + (
                "Runs below the duration and request-count gates are judged where two or more server processes "
                "measured the spread at their load, otherwise shown, not judged; the error-rate gate is never waived."
                if gated
                else "Runs that failed a validity gate are shown, never judged."
            )
        )
    if procs:
        n_per_cell += f". Server processes per arm: {procs}"
    from benchbook.analysis.verdict import RULE_TEXT

    full = []
    if kind in ("baseline", "ablation") and (an.comparisons or an.ablation is not None):
        full.append(f"phase figures — {RULE_TEXT[an.rule]}")
    if an.results is not None and an.results.verdicts and kind in ("baseline", "ablation", "compare"):
        full.append(f"result files — {RULE_TEXT['small-n']}")
    return {
        "n_per_cell": n_per_cell + ". Runs, not requests, are the unit of replication.",
        "noise_rule": RULES_POINTER + (". In full: " + "; ".join(full) if full else ""),
        "extra": extra,
    }
