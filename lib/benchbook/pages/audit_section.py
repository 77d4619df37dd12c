"""The audit section a page shows: what could make its figures lie (prefix cache, preemption, queueing,
token accounting), the physical limit beside the figures it bounds, and the energy per window.

Formats :class:`benchbook.analysis.audit.CampaignAudit` only: every figure, threshold and status is
decided there (docs/checks.md). Records ``audit`` (the summary's dict) for tests.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from benchbook.findings import anchor
from benchbook.pages import display as bd
from benchbook.pages import sections

SECTION_ID = "audit"


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f} %"


def _num(x: float | None, fmt: str = "{:,.0f}") -> str:
    return "not measured" if x is None else fmt.format(x)


def _limit_fig(v: float, unit: str) -> str:
    return {
        "s/token": f"{1e3 * v:.2f} ms/token",
        "tok/s": f"{v:,.0f} tok/s",
        "B/s": f"{v / 1e12:.3g} TB/s",
        "FLOP/s": f"{v / 1e12:.4g} TFLOP/s",
    }[unit]


def _said_once(notes: Iterable[str]) -> list[str]:
    """Notes ``run: why`` that share their why become one note naming the runs (``why: a, b, c``)."""
    by: dict[str, list[str]] = {}
    for n in notes:
        who, sep, why = n.partition(": ")
        key = why if sep and " " not in who else n
        by.setdefault(key, []).append(who if sep and " " not in who else "")
    return [w if who == [""] else (f"{who[0]}: {w}" if len(who) == 1 else f"{w} ({len(who)}: {', '.join(who)})")
            for w, who in by.items()]  # fmt: skip


def failed_lines(audit: Any, runs: Iterable[str] | None = None) -> list[tuple[str, str]]:
    """(sentence, section id) per failed audit check, for a findings box (the baseline page's come
    through the campaign's checks instead)."""
    keep = None if runs is None else set(runs)
    return [
        (f"{c['name']}: {c['detail']}", SECTION_ID)
        for c in audit.all_checks()
        if c["status"] == "fail" and (keep is None or c.get("run") in keep or c.get("run") is None)
    ]


def section(audit: Any, *, runs: Iterable[str] | None = None, with_checks: bool = False) -> bd.Block:
    """The section for the windows of ``runs`` (default: all). ``with_checks``: show the audit's checks
    here too (a page whose own checks table does not carry the campaign's checks)."""
    if audit is None:
        return bd.Block("")
    keep = None if runs is None else set(runs)

    def mine(run: str | None) -> bool:
        return keep is None or run is None or run in keep

    windows = [a for a in audit.windows if mine(a.run)]
    checks = [c for c in audit.all_checks() if mine(c.get("run"))]
    limits = [lim for lim in audit.limits if mine(lim.run)]
    energy = [e for e in audit.energy if mine(e.run)]
    bd.record(
        "audit",
        {
            **audit.as_dict(),
            "windows": [a.as_dict() for a in windows],
            "checks": checks,
            "limits": [lim.as_dict() for lim in limits],
            "energy": [e.as_dict() for e in energy],
        },
    )
    measured = [a for a in windows if a.cached_tokens is not None or a.preemptions is not None]
    if not (measured or checks or limits or energy or audit.energy_comparisons):
        # nothing this campaign's files let us audit: one folded line that says why, no section
        whys = dict.fromkeys(
            [*(a.cache_source for a in windows[:1]), *_said_once([*audit.limit_notes, *audit.energy_notes])]
        )
        body = bd.Block("".join(str(bd.text("{w}", w=w)) for w in whys) or "<p>nothing to audit</p>")
        return bd.collapsed("Cache hits, preemption, physical limits, energy: not measured for this campaign", body)
    out = [str(bd.heading("What could make these figures lie", id=SECTION_ID))]
    out.append(
        str(
            bd.text(
                "From the engine's own counters over each window (a phase sample, a results run): prompt tokens "
                "served from the prefix cache, preemptions, time queued, tokens counted; then each figure beside "
                "the physical limit of the hardware, and the energy per window. docs/checks.md gives every formula."
            )
        )
    )
    cached = [a for a in windows if a.kind == "phase sample" and a.mostly_cached]
    if cached:
        if audit.cached_prefill == "keep":
            msg = (
                f"{len(cached)} phase sample(s) had their prompt served mostly from the prefix cache and are KEPT in the "
                "prefill figures (parameter cached_prefill = keep): those prefill figures are cached prefill, not "
                "prefill measurements."
            )
        else:
            msg = (
                f"{len(cached)} phase sample(s) had their prompt served mostly from the prefix cache: left out of the "
                "prefill figures (their decode figures stay), each listed under the exclusions with its share."
            )
        out.append(str(bd.Block(f'<p class="bb-banner"><strong>{bd.esc(msg)}</strong></p>')))
    if with_checks and checks:
        rows = [{"Check": c["name"], "Status": bd.status_mark(c["status"]), "Detail": c["detail"]} for c in checks]
        out.append(str(sections.checks_table(rows, [c["status"] == "pass" for c in checks], id="audit-checks")))
    if measured:
        rows = [
            {
                "Window": bd.Block(f'<span id="{anchor("win", a.window)}">{bd.esc(a.window)}</span>'),
                "Prompt tokens (engine)": _num(a.prompt_tokens),
                "From cache": _num(a.cached_tokens),
                "Cached share": _pct(a.cached_share),
                "Preemptions": _num(a.preemptions, "{:g}"),
                "Queue share of E2E": _pct(a.queue_share),
                "Waiting mean / max": "—" if a.waiting_max is None else f"{a.waiting_mean:.2f} / {a.waiting_max:g}",
                "Generated (engine)": _num(a.generation_tokens),
            }
            for a in measured
        ]
        tbl = bd.table(
            rows,
            id="audit-windows",
            caption=f"Per window, Δ of the engine's counters ({measured[0].cache_source}); each window's prompt and "
            "generation lengths are its own (the phase classes, the run's load)",
        )
        out.append(str(bd.collapsed(f"Cache, preemption and queueing per window ({len(rows)} windows)", tbl)))
    elif windows:
        out.append(str(bd.text("Cache and preemption: {why}.", why=windows[0].cache_source)))
    if limits:
        rows = [
            {
                "Figure": lim.what,
                "Measured": _limit_fig(lim.measured, lim.unit),
                "Limit": _limit_fig(lim.limit, lim.unit),
                "Achieved": bd.mark("fail", f"{100 * lim.share:.0f} % — beyond the limit")
                if lim.beyond
                else f"{100 * lim.share:.0f} %",
                "From": lim.formula,
            }
            for lim in limits
        ]
        sources = dict.fromkeys(
            lim.inputs.get("weights_source") or lim.inputs.get("parameters_source")
            for lim in limits
            if lim.inputs.get("weights_source") or lim.inputs.get("parameters_source")
        )
        src = limits[0].inputs
        named = f"GPU {src['gpu']!r} named by {src['gpu_source']}. " if src.get("gpu_source") else ""
        note = (
            named
            + f"{src['accelerator']}: {src['accelerator_source']}."
            + (f" Weights: {'; '.join(sources)}." if sources else "")
        )
        out.append(
            str(bd.heading("Distance to the physical limit", 3, id="audit-limits"))
            + str(
                bd.table(
                    rows,
                    id="audit-limits",
                    caption="Decode floor = weight bytes ÷ memory bandwidth (batch 1); prefill ceiling = peak dense FLOP/s ÷ (2 × parameters)",
                    note=note,
                )
            )
        )
    for n in _said_once(audit.limit_notes):
        out.append(str(bd.text("{n}", n=n)))
    if energy or audit.energy_notes:
        out.append(str(bd.heading("Energy", 3, id="audit-energy")))
    if energy:
        rows = [
            {
                "Window": e.window,
                "Seconds": f"{e.seconds:.1f}",
                "Joules": _num(e.joules),
                "Mean W": _num(e.mean_w),
                "J / output token": _num(e.j_per_token, "{:.3f}"),
                "J / request": _num(e.j_per_request, "{:.1f}"),
                "Idle W (stated apart)": _num(e.idle_w),
                "J / token above idle": _num(e.above_idle_j_per_token, "{:.3f}"),
                "Window from": e.window_source or "—",
            }
            for e in energy
        ]
        out.append(
            str(
                bd.table(
                    rows,
                    id="audit-energy",
                    caption="Energy over each window, summed over GPUs: "
                    + ("; ".join(dict.fromkeys(e.method for e in energy if e.joules is not None)) or "not measured")
                    + "; tokens and requests as the engine counted them over the window; idle power (the GPUs "
                    "loaded and waiting, before the window) stated apart",
                )
            )
        )
        for e in energy:
            if e.joules is None:
                out.append(str(bd.text("{t}", t=e.describe())))
    # said once: the comparisons of one verdict and one reason are one line naming each with its ratio
    by_why: dict[tuple[str, str], list[str]] = {}
    for c in audit.energy_comparisons:
        at = f" at {c['point']}" if c.get("point") else ""
        by_why.setdefault((c["verdict"], c["why"]), []).append(
            f"{c['candidate']} vs {c['baseline']}{at} ×{c['ratio']:.3f}"
        )
    for (verdict, why), which in by_why.items():
        out.append(str(bd.text("J per output token, {w}: {v} ({why})", w="; ".join(which), v=verdict, why=why)))
    for n in _said_once(audit.energy_notes):
        out.append(str(bd.text("{n}", n=n)))
    return bd.Block("".join(out))
