"""The environment ablation page: arms that differ by environment variables, each switch alone and in
combination against the baseline arm, cell by cell of the phase split (``notebooks/ablation.ipynb``
through :mod:`benchbook.pages.ablation_page`).

The figures are phase-split cells (:func:`benchbook.analysis.baseline.phase_cells`); the verdicts,
interactions, interaction findings and phase findings come from
:class:`benchbook.analysis.ablation.CampaignAblation`; every sentence is generated from those computed
verdicts. Each section records what it shows with ``bd.record``.

An arm's *switches* are the variables whose effective value (set, else the built-in default from
``campaign.json``'s ``variables``) differs from the baseline arm's. A variable an arm sets to the
value it already has in the baseline arm is not a variable and is dropped with a note (the seed's
``POCKETLLM_CPP_PREFILL_BATCHED_ATTN=1``). This makes any arm usable as the baseline: against
``tuned``, the default arm's switches are the three variables turned back off.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from benchbook.analysis.ablation import Ablation, CampaignAblation
from benchbook.analysis.baseline import PHASE_METRICS
from benchbook.analysis.stats import Cell
from benchbook.analysis.verdict import RULE_TEXT, Comparison
from benchbook.numfmt import fmt_pct
from benchbook.pages import display as bd
from benchbook.pages import sections


@dataclass
class Page:
    camp: Any
    title: str
    noise: Any  # baseline.Noise
    analysis: CampaignAblation
    campaign: Any = None  # the campaign's analysis (benchbook.analysis.campaign_analysis.CampaignAnalysis)

    rule = property(lambda self: self.analysis.rule)
    baseline_arm = property(lambda self: self.analysis.baseline_arm)
    arms = property(lambda self: self.analysis.arms)
    metrics = property(lambda self: self.analysis.metrics)
    spread = property(lambda self: self.analysis.spread)
    cells = property(lambda self: self.analysis.cells)
    keys = property(lambda self: self.analysis.keys)
    notes = property(lambda self: self.analysis.notes)

    @property
    def ablation(self) -> Ablation:
        return self.analysis.ablation

    @property
    def all_arms(self) -> list[str]:
        return self.analysis.all_arms

    def metric_of(self, key: tuple[str, str]) -> str:
        return self.analysis.metric_of(key)

    def cell(self, arm: str, key: tuple[str, str]) -> Cell | None:
        return self.analysis.cell(arm, key)

    def comparison(self, arm: str, key: tuple[str, str]) -> Comparison | None:
        return self.analysis.comparison(arm, key)


# ---- helpers ------------------------------------------------------------------------------------
def _digits(page: Page, key) -> int:
    return PHASE_METRICS[page.metric_of(key)][2]


def _unit(page: Page, key) -> str:
    return PHASE_METRICS[page.metric_of(key)][0]


def _tokens(page: Page, pclass: str) -> int:
    return int(page.camp.prompt_classes.get(pclass, {}).get("tokens", 0))


def cell_title(page: Page, key) -> str:
    return f"{key[1].capitalize()} {key[0]}"


def _label(page: Page, arm: str) -> str:
    return page.camp.arm_label(arm)


def _switch_text(page: Page, arm: str) -> str:
    return " + ".join(page.ablation.switches.get(arm, ())) or "nothing beyond the baseline"


# ---- opening ------------------------------------------------------------------------------------
def header(page: Page) -> bd.Block:
    from benchbook.pages.baseline_page import header as _header

    bd.record("baseline_arm", page.baseline_arm)
    bd.record("arms", page.all_arms)
    return bd.Block(
        str(_header(page))
        + str(
            bd.text(
                "Environment ablation against {b}: each switch alone and in combination, each arm in its own server "
                "process, the same command and the same phase harness.",
                b=f"{page.baseline_arm} ({_label(page, page.baseline_arm)})",
            )
        )
        + str(findings(page))
    )


def findings(page: Page) -> bd.Block:
    """The campaign's findings box (the same on every page of it): the ablation's cells called results
    (worst first; interactions said so), the cells that could not be compared, and every other line."""
    if page.campaign is None:  # a Page built by hand (tests): the ablation's own box
        return sections.findings_box(page.analysis.findings(), "ablation")
    return sections.findings_box(page.campaign.campaign_findings(), "ablation")


def how_to_read(page: Page) -> bd.Block:
    ns = sorted({int(n) for n in page.cells["n"].to_list()})
    disc = sorted({int(n) for n in page.cells["discarded"].to_list()})
    bd.record("noise_spread", page.spread)
    bd.record("rule", page.rule)
    return bd.how_to_read(
        n_per_cell=(
            f"each cell is the median of n={'/'.join(map(str, ns))} samples from one phase-split run, with "
            "[min–max]" + ("; with n=3 those are exactly the three samples" if 3 in ns else "") + ". Runs, not "
            "requests, are the unit of replication."
        ),
        warmup=f"{'/'.join(map(str, disc)) or 'no'} warm-up round(s) per cell discarded before statistics (listed under Exclusions)",
        noise_rule=(
            page.campaign.reading_guide("ablation")["noise_rule"]
            if page.campaign is not None
            else RULE_TEXT[page.rule] + f". Measured spread: {page.noise.describe()}."
        ),
        marks=("result", "noise", "excluded"),
        extra=[
            f"Every comparison is against the baseline arm {page.baseline_arm} ({_label(page, page.baseline_arm)}); "
            "change = candidate median / baseline median − 1.",
            "INTERACTION: a combination of switches is a result on a cell while every one of its switches, "
            "measured alone against the same baseline, is within noise. It is minimal when no smaller measured "
            "combination of those switches is already a result there.",
            "Decode rates are floors (the engine's duration runs to the end of the response).",
            # what the smallest n allows (no p-value, bootstrap = range), from stats.small_n_notes
            *(page.campaign.design_notes(min(ns))[2:] if ns else []),
        ],
    )


def switches(page: Page) -> bd.Block:
    c = page.camp
    clamps = {x.arm: x for x in page.campaign.clamps if x.arm in page.all_arms}
    bd.record("clamps", [x.as_dict() for x in clamps.values()])
    rows = [
        {
            "Arm": a,
            "Label": _label(page, a),
            "Environment": c.arm_environment(a),
            "Switches vs baseline": "— (the baseline)" if a == page.baseline_arm else _switch_text(page, a),
            "What ran (server log)": "—"
            if a not in clamps
            else bd.mark("fail" if clamps[a].clamped else "pass", clamps[a].verdict),
        }
        for a in page.all_arms
    ]
    variables = c.manifest.get("variables", {})
    eff = {a: page.campaign.effective_env(a) for a in page.all_arms}
    names = [
        v
        for v in sorted(next(iter(eff.values())))
        if len({e[v] for e in eff.values()}) > 1
        or any(v in c.environments.get(c.arm_environment(a), {}).get("variables", {}) for a in page.all_arms)
    ]
    var_rows = [
        {
            "Variable": v,
            "Built-in default": variables.get(v, {}).get("default", "—"),
            **{a: eff[a][v] for a in page.all_arms},
        }
        for v in names
    ]
    meaning = "".join(
        f"<li><code>{bd.esc(v)}</code>: {bd.esc(variables[v].get('description', ''))}</li>"
        for v in names
        if variables.get(v, {}).get("description")
    )
    bd.record("switches", {a: list(page.ablation.switches.get(a, ())) for a in page.arms})
    bd.record("notes", page.notes)
    notes = "".join(f'<p class="bb-note">{bd.esc(n)}</p>' for n in page.notes)
    return bd.Block(
        "<h2>Arms and switches</h2>"
        + str(
            bd.table(
                rows,
                id="ablation-arms",
                caption=(
                    "Switches are the variables whose value differs from the baseline arm's (set, else built-in default)."
                ),
            )
        )
        + str(
            bd.table(
                var_rows,
                id="ablation-variables",
                caption=(
                    "Effective value of each variable per arm; the built-in default applies where an environment sets nothing."
                ),
            )
        )
        + (f"<ul>{meaning}</ul>" if meaning else "")
        + notes
    )


# ---- the table ----------------------------------------------------------------------------------
def table_rows(page: Page) -> list[dict[str, Any]]:
    """One record per (arm, cell): the figures, the change vs the baseline and the verdict."""
    return page.analysis.rows()


def ablation_table(page: Page) -> bd.Block:
    rows = table_rows(page)
    bd.record("ablation_table", rows)
    by = {(r["arm"], r["phase"], r["prompt_class"]): r for r in rows}
    out = []
    for a in page.all_arms:
        row: dict[str, Any] = {"Arm": a, "Environment": page.camp.arm_environment(a)}
        for k in page.keys:
            r = by.get((a, *k))
            d = _digits(page, k)
            if r is None:
                row[cell_title(page, k)] = "—"
                continue
            fig = Cell(r["median"], r["min"], r["max"], r["n"], ()).fmt(d)
            if a == page.baseline_arm:
                row[cell_title(page, k)] = bd.Block(f"{bd.esc(fig)}<br><small>baseline</small>")
            else:
                kind = ("regression" if r["direction"] == "regression" else "result") if r["is_result"] else "noise"
                label = (f"{r['direction']}" if r["is_result"] else "noise") + (
                    " · interaction" if r["interaction"] else ""
                )
                row[cell_title(page, k)] = bd.Block(
                    f"{bd.esc(fig)}<br><small>{bd.esc(fmt_pct(r['change'], signed=True))}</small> {bd.mark(kind, label)}"
                )
        out.append(row)
    headers = {
        cell_title(page, k): f"{cell_title(page, k)} ({_tokens(page, k[1])} prompt tok, "
        f"{page.camp.generation_tokens} generated, {_unit(page, k)})"
        for k in page.keys
    }
    return bd.Block(
        str(bd.heading("The ablation, cell by cell", id="ablation"))
        + str(
            bd.table(
                out,
                id="ablation",
                headers=headers,
                caption=(
                    f"Median (min–max) per arm and cell; the second line is the change against {page.baseline_arm} with its verdict. "
                    "Each column states its prompt tokens and generated tokens; each row its environment. Decode rates are floors."
                ),
            )
        )
    )


def range_charts(page: Page) -> bd.Block:
    """One dot-and-interval chart per cell: every arm's median and [min–max], the baseline's range shaded."""
    import altair as alt
    import polars as pl

    rows = table_rows(page)
    parts = []
    for k in page.keys:
        d = pl.DataFrame(
            [
                {
                    "arm": r["arm"],
                    "median": r["median"],
                    "min": r["min"],
                    "max": r["max"],
                    "role": "baseline"
                    if r["arm"] == page.baseline_arm
                    else ("result" if r["is_result"] else "within noise"),
                }
                for r in rows
                if (r["phase"], r["prompt_class"]) == k
            ]
        )
        b = d.filter(pl.col("role") == "baseline")
        x = alt.X("median:Q", title=f"{k[0]} {_unit(page, k)}", scale=alt.Scale(zero=False))
        y = alt.Y("arm:N", sort=page.all_arms, title=None, axis=alt.Axis(labelLimit=240))
        color = alt.Color(
            "role:N",
            title="vs baseline",
            scale=alt.Scale(domain=["baseline", "within noise", "result"], range=["#4a5568", "#a0aec0", "#c05621"]),
        )
        band = alt.Chart(b).mark_rect(opacity=0.15, color="#4a5568").encode(x="min:Q", x2="max:Q")
        rng = alt.Chart(d).mark_rule(strokeWidth=2).encode(x="min:Q", x2="max:Q", y=y, color=color)
        pts = (
            alt.Chart(d)
            .mark_point(filled=True, size=70)
            .encode(
                x=x,
                y=y,
                color=color,
                shape=alt.Shape(
                    "role:N",
                    legend=None,
                    scale=alt.Scale(
                        domain=["baseline", "within noise", "result"], range=["diamond", "circle", "circle"]
                    ),
                ),
            )
        )
        ch = alt.layer(band, rng, pts).properties(
            width=300,
            height=24 * len(page.all_arms),
            padding={"left": 30, "top": 5, "right": 5, "bottom": 5},
            title=f"{cell_title(page, k)} ({_tokens(page, k[1])} prompt tok, {page.camp.generation_tokens} generated)",
        )
        parts.append(str(bd.chart(ch, id=f"range-{sections.slug(k[0])}-{sections.slug(k[1])}")))
    return bd.Block(
        "<h2>Ranges per cell</h2>"
        + str(
            bd.text(
                "Dot = median, bar = min–max of the samples; the shaded band is the baseline arm's range (diamond). "
                "A bar that overlaps the band is within noise whatever its median says."
            )
        )
        + '<div class="bb-chart-grid" style="display:flex;flex-wrap:wrap;gap:0 2rem">'
        + "".join(parts)
        + "</div>"
    )


# ---- interactions and findings -----------------------------------------------------------------
def steps(page: Page) -> list[dict[str, Any]]:
    """What one switch adds on top of a measured combination (computed in the analysis)."""
    return page.analysis.steps


def interactions(page: Page) -> bd.Block:
    found = page.analysis.interaction_findings()  # decided by the analysis (CampaignAblation)
    summary = page.analysis.single_switch_summary()
    st = steps(page)
    bd.record("interactions", page.analysis.interaction_rows())
    bd.record("interaction_findings", found)
    bd.record("single_switch_summary", summary)
    bd.record("steps", st)
    lines = summary + [f["text"] for f in found] + [s["text"] for s in st]
    if not page.ablation.interactions:
        lines.append(
            "No interaction: no combination is a result on a cell where all of its switches alone are within noise."
        )
    lines.append(_n_sentence(page))
    return bd.Block("<h2>Interactions</h2><ul>" + "".join(f"<li>{bd.esc(x)}</li>" for x in lines) + "</ul>")


def _n_sentence(page: Page) -> str:
    """The n behind every verdict of the page, from the cells."""
    ns = sorted({int(n) for n in page.cells["n"].to_list()})
    return (
        f"Each verdict above compares two cells of n={'/'.join(map(str, ns))} samples each (median [min–max]), "
        f"against the {fmt_pct(page.spread)} spread between two identical runs."
    )


def phase_findings(page: Page) -> bd.Block:
    """Which switches buy (or cost) which phase: ablate's findings plus a per-arm summary table."""
    bd.record("findings", page.ablation.findings)
    rows = []
    for a in page.arms:
        res = [(k, page.comparison(a, k)) for k in page.keys if page.comparison(a, k) is not None]
        fmt = lambda want: (
            ", ".join(
                f"{k[1]} {k[0]} {fmt_pct(c.change, signed=True)}"  # noqa: E731
                for k, c in res
                if c.is_result and c.direction == want
            )
            or "—"
        )
        rows.append(
            {
                "Arm": a,
                "Switches": _switch_text(page, a),
                "Buys (results)": fmt("improvement"),
                "Costs (results)": fmt("regression"),
                "Within noise": ", ".join(f"{k[1]} {k[0]}" for k, c in res if not c.is_result) or "—",
            }
        )
    items = (
        "".join(f"<li>{bd.esc(f)}.</li>" for f in page.ablation.findings) or "<li>No arm is a result on any cell.</li>"
    )
    return bd.Block(
        "<h2>Which switches buy which phase</h2><ul>"
        + items
        + "</ul>"
        + str(
            bd.table(
                rows,
                id="ablation-phases",
                caption=f"Against {page.baseline_arm}; only results count as buying or costing.",
            )
        )
    )


# ---- spread -------------------------------------------------------------------------------------
def spread_rows(page: Page) -> list[dict[str, Any]]:
    return page.analysis.spread_rows()


def noisiest(page: Page) -> list[dict[str, Any]]:
    """Cells ranked by the median range width across arms (computed in the analysis)."""
    return page.analysis.noisiest


def spread(page: Page) -> bd.Block:
    rows = spread_rows(page)
    ranked = noisiest(page)
    bd.record("spread", rows)
    bd.record("noisiest", ranked)
    by = {(r["arm"], r["phase"], r["prompt_class"]): r for r in rows}
    table = [
        {
            "Arm": a,
            **{cell_title(page, k): fmt_pct(by[(a, *k)]["rel_width"]) if (a, *k) in by else "—" for k in page.keys},
        }
        for a in page.all_arms
    ]
    lines = []
    top, tight = ranked[0], ranked[-1]
    fmtc = lambda a, k: page.cell(a, k).fmt(_digits(page, k))  # noqa: E731
    tk = (top["phase"], top["prompt_class"])
    lines.append(
        f"The noisiest column is {top['prompt_class']} {top['phase']}: the median arm's range is "
        f"{fmt_pct(top['median_width'])} of its minimum, and {top['widest_arm']}'s spans "
        f"{fmtc(top['widest_arm'], tk)} ({fmt_pct(top['max_width'])})."
    )
    for r in ranked:
        k = (r["phase"], r["prompt_class"])
        if r["several_times_baseline"]:
            lines.append(
                f"{r['prompt_class'].capitalize()} {r['phase']}: "
                + ", ".join(f"{a} {fmtc(a, k)}" for a in r["several_times_baseline"])
                + f" — at least three times the width of {page.baseline_arm}'s {fmtc(page.baseline_arm, k)}."
            )
    shortest = min(page.camp.prompt_classes, key=lambda pc: _tokens(page, pc))
    if any(k == ("prefill", shortest) for k in page.keys):
        lines.append(
            f"At {_tokens(page, shortest)} prompt tokens the prefill figure measures mostly the fixed "
            "per-request cost rather than a rate; treat that column as the least trustworthy."
        )
    lines.append(
        f"The tightest column is {tight['prompt_class']} {tight['phase']} (median range "
        f"{fmt_pct(tight['median_width'])}); differences below the {fmt_pct(page.spread)} "
        f"spread are not measurable with these n={'/'.join(map(str, sorted({int(n) for n in page.cells['n'].to_list()})))} samples."
    )
    bd.record("spread_sentences", lines)
    return bd.Block(
        "<h2>Spread within each cell</h2><ul>"
        + "".join(f"<li>{bd.esc(x)}</li>" for x in lines)
        + "</ul>"
        + str(
            bd.table(
                table,
                id="ablation-spread",
                caption=("(max − min) / min of each cell's samples — the same formula as the run-to-run spread."),
            )
        )
    )
