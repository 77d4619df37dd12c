"""The server-switch ablation page: arms in init's arm/run layout that differ by server switches (what
their engines stated), each against the baseline arm, with the interactions of single switches
(``notebooks/ablation.ipynb`` through :mod:`benchbook.pages.ablation_page`). What it shows was decided
by :class:`benchbook.analysis.ablation.SwitchAblation`, its findings box included."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from benchbook.analysis.verdict import RULE_TEXT
from benchbook.numfmt import fmt_pct
from benchbook.pages import display as bd
from benchbook.pages import sections


@dataclass
class SwitchPage:
    """The ablation page of arms that differ by server switches (``analysis.ablation.switch_ablation``)."""

    camp: Any
    title: str
    switch: Any  # SwitchAblation
    analysis: Any = None  # the campaign's analysis (CampaignAnalysis): its findings box and reading guide

    rule = property(lambda self: self.switch.rule)
    baseline_arm = property(lambda self: self.switch.baseline_arm)
    all_arms = property(lambda self: [self.switch.baseline_arm, *self.switch.arms])


def findings(page: SwitchPage) -> bd.Block:
    """The campaign's findings box (the same on every page of it), which holds the switch ablation's
    results and what it could not judge; without the campaign's analysis, the ablation's own box."""
    if page.analysis is None:
        return sections.findings_box(page.switch.findings(), "ablation")
    return sections.findings_box(page.analysis.campaign_findings(), "ablation")


def header(page: SwitchPage) -> bd.Block:
    sa = page.switch
    bd.record("baseline_arm", sa.baseline_arm)
    bd.record("arms", page.all_arms)
    bd.record("switch_ablation", sa.as_dict())
    parts = [
        bd.heading(page.title, 1),
        bd.text("{q}", q=page.camp.manifest.get("question", "")),
        bd.text(
            "Server-switch ablation against {b}: each arm is one server configuration as its engine stated it "
            "(benchbook init), each switch alone and, where an arm ran them together, in combination.",
            b=sa.baseline_arm,
        ),
        findings(page),
    ]
    return bd.Block("".join(str(p) for p in parts))


def how_to_read(page: SwitchPage) -> bd.Block:
    sa = page.switch
    bd.record("noise_spread", sa.spread)
    bd.record("rule", sa.rule)
    if page.analysis is not None:  # generated from what the campaign holds
        guide = page.analysis.reading_guide("ablation", page.all_arms)
        return bd.how_to_read(
            n_per_cell=guide["n_per_cell"],
            warmup="the phase harness's warm-up round (round 0) is discarded before statistics",
            noise_rule=guide["noise_rule"],
            marks=("result", "noise", "cannot"),
            extra=guide["extra"],
        )
    return bd.how_to_read(
        n_per_cell=(
            "ladder figures: one value per server process of the arm (n = processes); phase figures: the median "
            "[min–max] of the measured rounds of one process, or one value per process (its median) where the arm "
            "ran several. Server processes, not requests, are the unit of replication."
        ),
        warmup="the phase harness's warm-up round (round 0) is discarded before statistics",
        noise_rule=RULE_TEXT[sa.rule]
        + f". Spread used: {'—' if sa.spread is None else fmt_pct(sa.spread)} ({sa.spread_from}).",
        marks=("result", "noise"),
        extra=["A switch is a server setting whose stated value differs from the baseline arm's."],
    )


def switches(page: SwitchPage) -> bd.Block:
    sa = page.switch
    rows = [
        {
            "Arm": a,
            "Role": page.camp.arms[a].get("role", ""),
            "Switches vs baseline": " + ".join(f"{k}={v}" for k, v in sa.switches.get(a, {}).items()) or "—",
            f"What ran otherwise than {sa.baseline_arm}": sa.differs(a) or "—",
            **{k: str(v) for k, v in (page.camp.arms[a].get("server_args") or {}).items()},
        }
        for a in page.all_arms
    ]
    every = [{"Arm": a, **sa.settings.get(a, {})} for a in page.all_arms if sa.settings.get(a)]
    return bd.Block(
        str(bd.heading("Switches", 2, id="switches"))
        + str(bd.table(rows, id="switches", caption="What each arm's server ran, as its engine stated it."))
        + (
            str(
                bd.collapsed(
                    "Every setting each arm's engine stated (KV cache, memory, lengths, parallelism, version)",
                    bd.table(every, id="settings", caption="From vllm:cache_config_info, the server log, /version"),
                )
            )
            if every
            else ""
        )
        + "".join(f'<p class="bb-note">{bd.esc(n)}</p>' for n in sa.notes)
    )


def ablation_table(page: SwitchPage) -> bd.Block:
    sa = page.switch
    bd.record("ablation_rows", sa.rows)
    rows = [
        {
            "Arm": r["arm"],
            "Switches": r["switches"],
            "Figure": r["metric"],
            "Context": r["context"],
            f"{sa.baseline_arm}": f"{r['baseline_median']:.2f}",
            "Arm value": f"{r['candidate_median']:.2f}",
            "Ratio": f"{r['ratio']:.2f}x",
            "Verdict": r["verdict"],
            "Evidence (engine)": r.get("evidence") or "—",
        }
        for r in sa.rows
    ]
    return bd.Block(
        str(bd.heading("Each switch against the baseline", 2, id="ablation"))
        + str(
            bd.table(
                rows,
                id="ablation",
                caption=f"Every figure against {sa.baseline_arm}; verdicts use the spread in How to read.",
            )
        )
    )


def range_charts(page: SwitchPage) -> bd.Block:
    """No range charts: the switch ablation's cells are one value per server process."""
    return bd.Block("")


def phase_findings(page: SwitchPage) -> bd.Block:
    """No phase findings section: the switch ablation's rows say which figures moved."""
    return bd.Block("")


def spread(page: SwitchPage) -> bd.Block:
    """No spread section: the spread used is stated in How to read."""
    return bd.Block("")


def interactions(page: SwitchPage) -> bd.Block:
    items = "".join(f"<li>{bd.esc(i['finding'])}</li>" for i in page.switch.interactions)
    bd.record("interactions", page.switch.interactions)
    return bd.Block(
        str(bd.heading("Interactions", 2, id="interactions"))
        + (f"<ul>{items}</ul>" if items else "<p>No pair of single switches.</p>")
    )
