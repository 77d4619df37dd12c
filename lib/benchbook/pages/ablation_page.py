"""Sections of the ablation page, each computed by ``benchbook`` and returned as a display Block.

``notebooks/ablation.ipynb`` is a parameters cell and one call per section, like the baseline page.
The figures are phase-split cells (:func:`benchbook.analysis.baseline.phase_cells`); the verdicts,
interactions and phase findings come from :func:`benchbook.analysis.ablation.ablate`; every sentence is
generated from those computed verdicts. Each section records what it shows with ``bd.record``.

An arm's *switches* are the variables whose effective value (set, else the built-in default from
``campaign.json``'s ``variables``) differs from the baseline arm's. A variable an arm sets to the
value it already has in the baseline arm is not a variable and is dropped with a note (the seed's
``POCKETLLM_CPP_PREFILL_BATCHED_ATTN=1``). This makes any arm usable as the baseline: against
``tuned``, the default arm's switches are the three variables turned back off.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from benchbook.analysis import baseline, stats
from benchbook.analysis.ablation import Ablation, AblationArm, ablate
from benchbook.analysis.verdict import RULE_TEXT, Comparison, compare
from benchbook.errors import InputError
from benchbook.pages import display as bd
from benchbook.pages import sections

DEFAULT_METRICS = ["prefill_tok_s", "decode_tok_s"]
# metric -> the phase name used in cell keys and sentences
PHASE_NAME = {
    "prefill_tok_s": "prefill",
    "decode_tok_s": "decode",
    "prefill_s": "prefill time",
    "engine_total_s": "total time",
    "client_total_s": "client total",
}
UNSET = "unset"


@dataclass
class Page:
    camp: Any
    rule: str
    baseline_arm: str
    arms: list[str]  # compared arms, in order (baseline excluded)
    metrics: list[str]
    title: str
    spread: float
    noise: Any  # baseline.Noise
    cells: Any  # pl.DataFrame from baseline.phase_cells
    keys: list[tuple[str, str]]  # (phase name, prompt class), display order
    ablation: Ablation
    notes: list[str] = field(default_factory=list)

    @property
    def all_arms(self) -> list[str]:
        return [self.baseline_arm, *self.arms]

    def metric_of(self, key: tuple[str, str]) -> str:
        return {PHASE_NAME.get(m, m): m for m in self.metrics}[key[0]]

    def cell(self, arm: str, key: tuple[str, str]) -> stats.Cell | None:
        return baseline.cell_of(self.cells, arm, key[1], self.metric_of(key))

    def comparison(self, arm: str, key: tuple[str, str]) -> Comparison | None:
        return self.ablation.comparisons.get((arm, *key))


# ---- loading ------------------------------------------------------------------------------------
def effective_env(camp: Any, arm: str) -> dict[str, str]:
    """Every known variable's value in ``arm``'s environment: set, else built-in default, else "unset"."""
    env = camp.environments.get(camp.arm_environment(arm), {}).get("variables", {})
    defaults = {k: str(v.get("default", UNSET)) for k, v in camp.manifest.get("variables", {}).items()}
    names = set(defaults) | {v for e in camp.environments.values() for v in e.get("variables", {})}
    return {v: str(env[v]) if v in env else defaults.get(v, UNSET) for v in sorted(names)}


def switches_against(camp: Any, arm: str, base: str) -> tuple[dict[str, str], list[str]]:
    """(switches of ``arm`` relative to ``base``, notes on variables set but not varied)."""
    ea, eb = effective_env(camp, arm), effective_env(camp, base)
    set_a = camp.environments.get(camp.arm_environment(arm), {}).get("variables", {})
    set_b = camp.environments.get(camp.arm_environment(base), {}).get("variables", {})
    builtin = {k: str(v.get("default", UNSET)) for k, v in camp.manifest.get("variables", {}).items()}
    out, notes = {}, []
    for v in sorted(set(ea) | set(eb)):
        if ea.get(v, UNSET) != eb.get(v, UNSET):
            out[v] = ea.get(v, UNSET)
        elif v in set_a and v not in set_b:
            why = "the built-in default" if builtin.get(v) == ea[v] else f"the value it has in {base}"
            notes.append(f"{arm}: {v}={ea[v]} is {why}, not a variable; ignored")
    return out, notes


def load(
    campaign: str,
    *,
    baseline_arm: str = "",
    arms: list[str] | None = None,
    metrics: list[str] | None = None,
    rule: str = "seed",
    title: str = "",
) -> Page:
    """Load a campaign and compute the whole ablation. ``baseline_arm`` "" = the arm with role
    baseline; ``arms`` empty = the role-baseline arm and every ablation arm, in manifest order."""
    from benchbook.ingest.campaign import load_campaign

    if rule not in RULE_TEXT:
        raise InputError("parameters", "rule", f"unknown noise rule {rule!r}; choose seed or strict")
    camp = load_campaign(campaign)
    metrics = list(metrics) if metrics else list(DEFAULT_METRICS)
    bad = [m for m in metrics if m not in baseline.PHASE_METRICS]
    if bad:
        raise InputError(
            "parameters",
            "metrics",
            f"unknown metric(s) {', '.join(bad)}; choose from {', '.join(baseline.PHASE_METRICS)}",
        )
    roles = [a for a, v in camp.arms.items() if v.get("role") == "baseline"]
    if not baseline_arm:
        if not roles:
            raise InputError(
                camp.root / "campaign.json", "$.arms", "no arm has role baseline; set the baseline_arm parameter"
            )
        baseline_arm = roles[0]
    if baseline_arm not in camp.arms:
        raise InputError("parameters", "baseline_arm", f"unknown arm {baseline_arm!r}")
    chosen = list(arms) if arms else [a for a, v in camp.arms.items() if v.get("role") in ("baseline", "ablation")]
    explicit_order = bool(arms)
    unknown = [a for a in chosen if a not in camp.arms]
    if unknown:
        raise InputError("parameters", "arms", f"unknown arm(s): {', '.join(unknown)}")
    if len(set(chosen)) != len(chosen):
        raise InputError("parameters", "arms", "an arm is listed twice")
    chosen = [a for a in chosen if a != baseline_arm]
    no_phases = [a for a in [baseline_arm, *chosen] if not camp.runs_of("phases", a)]
    if no_phases:
        raise InputError("parameters", "arms", f"no phase-split run for arm(s): {', '.join(no_phases)}")
    nz = baseline.noise(camp)
    if nz is None:
        raise InputError(
            camp.root / "campaign.json",
            "$.noise",
            "no arm was run twice, so there is no measured spread and no verdict can be given",
        )
    cells = baseline.phase_cells(camp, [baseline_arm, *chosen])
    keys = [(PHASE_NAME.get(m, m), pc) for m in metrics for pc in camp.prompt_classes]
    base_cells = {
        k: baseline.cell_of(cells, baseline_arm, k[1], m)
        for k, m in zip(keys, [m for m in metrics for _ in camp.prompt_classes])
    }
    base_cells = {k: c for k, c in base_cells.items() if c is not None}
    notes: list[str] = []
    ab_arms = []
    for a in chosen:
        sw, n = switches_against(camp, a, baseline_arm)
        notes += n
        arm_cells = {}
        for k in keys:
            m = {PHASE_NAME.get(x, x): x for x in metrics}[k[0]]
            c = baseline.cell_of(cells, a, k[1], m)
            if c is not None:
                arm_cells[k] = c
        ab_arms.append(AblationArm(a, sw, arm_cells))
    if not explicit_order:  # singles first, then pairs, …, manifest order inside each size
        ab_arms.sort(key=lambda x: len(x.switches))
        chosen = [x.name for x in ab_arms]
    hib = {PHASE_NAME.get(m, m): baseline.PHASE_METRICS[m][1] for m in metrics}
    ab = ablate(base_cells, ab_arms, spread=nz.spread, higher_is_better=hib, rule=rule)
    return Page(
        camp,
        rule,
        baseline_arm,
        chosen,
        metrics,
        title or camp.title,
        nz.spread,
        nz,
        cells,
        [k for k in keys if k in base_cells],
        ab,
        notes + ab.notes,
    )


# ---- helpers ------------------------------------------------------------------------------------
def _digits(page: Page, key) -> int:
    return baseline.PHASE_METRICS[page.metric_of(key)][2]


def _unit(page: Page, key) -> str:
    return baseline.PHASE_METRICS[page.metric_of(key)][0]


def _tokens(page: Page, pclass: str) -> int:
    return int(page.camp.prompt_classes.get(pclass, {}).get("tokens", 0))


def cell_title(page: Page, key) -> str:
    return f"{key[1].capitalize()} {key[0]}"


def cell_context(page: Page, key) -> str:
    return (
        f"{key[1]} prompt ({_tokens(page, key[1])} prompt tokens), {page.camp.generation_tokens} generated tokens, "
        f"{_unit(page, key)}"
    )


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
    """The findings box: every cell the ablation called a result (worst first; interactions said so)
    and the cells that could not be compared."""
    inter = {(i.arm, i.cell) for i in page.ablation.interactions}
    results, unjudged = [], []
    for a in page.arms:
        for k in page.keys:
            cmp = page.comparison(a, k)
            if cmp is None:
                unjudged.append((f"{a}: no {k[1]} {k[0]} cell to compare with {page.baseline_arm}", "ablation"))
                continue
            if not cmp.is_result:
                continue
            text = f"{a} vs {page.baseline_arm}, {cell_title(page, k).lower()}: {cmp.ratio:.2f}x ({stats.fmt_pct(cmp.change, signed=True)})"
            if (a, k) in inter:
                text += (
                    f" — an interaction of {len(page.ablation.switches.get(a, ()))} switches, each within noise alone"
                )
            results.append((cmp.direction, cmp.speedup, text, "ablation"))
    return sections.findings(results=results, unjudged=unjudged, results_section="ablation")


def how_to_read(page: Page) -> bd.Block:
    ns = sorted({int(n) for n in page.cells["n"].to_list()})
    disc = sorted({int(n) for n in page.cells["discarded"].to_list()})
    bd.record("noise_spread", page.spread)
    bd.record("rule", page.rule)
    return bd.how_to_read(
        n_per_cell=(
            f"each cell is the median of n={'/'.join(map(str, ns))} samples from one phase-split run, with "
            "[min–max]; with n=3 those are exactly the three samples. Runs, not requests, are the unit of replication."
        ),
        warmup=f"{'/'.join(map(str, disc)) or 'no'} warm-up round(s) per cell discarded before statistics (listed under Exclusions)",
        noise_rule=RULE_TEXT[page.rule] + f". Measured spread: {page.noise.describe()}.",
        marks=("result", "noise", "excluded"),
        extra=[
            f"Every comparison is against the baseline arm {page.baseline_arm} ({_label(page, page.baseline_arm)}); "
            "change = candidate median / baseline median − 1.",
            "INTERACTION: a combination of switches is a result on a cell while every one of its switches, "
            "measured alone against the same baseline, is within noise. It is minimal when no smaller measured "
            "combination of those switches is already a result there.",
            "Decode rates are floors (the engine's duration runs to the end of the response); at n=3 no p-value is printed.",
        ],
    )


def switches(page: Page) -> bd.Block:
    c = page.camp
    rows = [
        {
            "Arm": a,
            "Label": _label(page, a),
            "Environment": c.arm_environment(a),
            "Switches vs baseline": "— (the baseline)" if a == page.baseline_arm else _switch_text(page, a),
        }
        for a in page.all_arms
    ]
    variables = c.manifest.get("variables", {})
    eff = {a: effective_env(c, a) for a in page.all_arms}
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
    out = []
    inter = {(i.arm, i.cell): i for i in page.ablation.interactions}
    for a in page.all_arms:
        for k in page.keys:
            c = page.cell(a, k)
            if c is None:
                continue
            cmp = page.comparison(a, k)
            i = inter.get((a, k))
            out.append(
                {
                    "arm": a,
                    "phase": k[0],
                    "prompt_class": k[1],
                    "metric": page.metric_of(k),
                    "prompt_tokens": _tokens(page, k[1]),
                    "generated_tokens": page.camp.generation_tokens,
                    "environment": page.camp.arm_environment(a),
                    "baseline_arm": page.baseline_arm,
                    "median": c.median,
                    "min": c.min,
                    "max": c.max,
                    "n": c.n,
                    "change": None if cmp is None else cmp.change,
                    "is_result": None if cmp is None else cmp.is_result,
                    "direction": None if cmp is None else cmp.direction,
                    "verdict": "baseline" if a == page.baseline_arm else (cmp.verdict if cmp else "not compared"),
                    "reason": "" if cmp is None else cmp.reason,
                    "interaction": i is not None,
                    "minimal": None if i is None else i.minimal,
                }
            )
    return out


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
            fig = stats.Cell(r["median"], r["min"], r["max"], r["n"], ()).fmt(d)
            if a == page.baseline_arm:
                row[cell_title(page, k)] = bd.Block(f"{bd.esc(fig)}<br><small>baseline</small>")
            else:
                kind = ("regression" if r["direction"] == "regression" else "result") if r["is_result"] else "noise"
                label = (f"{r['direction']}" if r["is_result"] else "noise") + (
                    " · interaction" if r["interaction"] else ""
                )
                row[cell_title(page, k)] = bd.Block(
                    f"{bd.esc(fig)}<br><small>{bd.esc(stats.fmt_pct(r['change'], signed=True))}</small> {bd.mark(kind, label)}"
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
def interaction_findings(page: Page) -> list[dict[str, Any]]:
    """Per (combination arm, phase): the interaction and the single-switch figures behind it."""
    groups: dict[tuple[str, str], list] = {}
    for i in page.ablation.interactions:
        groups.setdefault((i.arm, i.cell[0]), []).append(i)
    out = []
    for (arm, phase), items in groups.items():
        singles = sorted({s for i in items for s in i.singles.values()})
        cells = [i.cell for i in items]
        d = _digits(page, cells[0])
        base = {pc: page.cell(page.baseline_arm, (phase, pc)).median for _, pc in cells}
        single_txt = "; ".join(
            f"{pc}: "
            + ", ".join(f"{s} {page.cell(s, (phase, pc)).median:.{d}f}" for s in singles)
            + f" against {base[pc]:.{d}f}"
            for _, pc in cells
        )
        combo = ", ".join(
            f"{i.cell[1]} {i.comparison.candidate.median:.{d}f} ({stats.fmt_pct(i.comparison.change, signed=True)})"
            for i in items
        )
        direction = items[0].comparison.direction
        minimal = all(i.minimal for i in items)
        if minimal:
            text = (
                f"Every single switch of {arm} is within noise on {phase} ({single_txt}); the combination "
                f"{' + '.join(items[0].switches)} is a result ({direction}: {combo}): these switches interact."
            )
        else:
            smaller = sorted(
                {
                    o
                    for o in page.arms
                    if 1 < len(page.ablation.switches[o]) < len(items[0].switches)
                    and set(page.ablation.switches[o]) <= set(items[0].switches)
                    and all(page.comparison(o, c) and page.comparison(o, c).is_result for c in cells)
                }
            )
            text = (
                f"{arm} is also a result on {phase} ({direction}: {combo}) with each single switch within noise, "
                f"but the smaller combination {', '.join(smaller) or 'measured here'} already gives it: "
                "not a new interaction."
            )
        out.append(
            {
                "arm": arm,
                "phase": phase,
                "switches": list(items[0].switches),
                "singles": singles,
                "cells": [c[1] for c in cells],
                "direction": direction,
                "minimal": minimal,
                "changes": {i.cell[1]: i.comparison.change for i in items},
                "text": text,
            }
        )
    return out


def single_switch_summary(page: Page) -> list[str]:
    """Per phase: is any single switch a result (and which), in words."""
    singles = [a for a in page.arms if len(page.ablation.switches.get(a, ())) == 1]
    out = []
    if not singles:
        return ["No arm changes exactly one switch, so no single-switch effect and no interaction can be judged."]
    for phase in dict.fromkeys(k[0] for k in page.keys):
        keys = [k for k in page.keys if k[0] == phase]
        res = [(a, k) for a in singles for k in keys if page.comparison(a, k) and page.comparison(a, k).is_result]
        combos = [i for i in page.ablation.interactions if i.cell[0] == phase and i.minimal]
        if not res:
            gain = (
                " produces the "
                + phase
                + " "
                + ("gain" if combos[0].comparison.direction == "improvement" else "change")
                if combos
                else " moves " + phase
            )
            out.append(
                f"No single switch{gain}: all {len(singles)} single-switch arms "
                f"({', '.join(singles)}) are within noise of {page.baseline_arm} on every {phase} cell."
            )
        else:
            out.append(
                f"On {phase}, single switches that are results on their own: "
                + "; ".join(
                    f"{a} {k[1]} {stats.fmt_pct(page.comparison(a, k).change, signed=True)} ({page.comparison(a, k).direction})"
                    for a, k in res
                )
                + "."
            )
    return out


def steps(page: Page) -> list[dict[str, Any]]:
    """What one switch adds on top of a measured combination: arm B = arm A + one switch, compared directly."""
    out = []
    sw = {a: set(page.ablation.switches.get(a, ())) for a in page.arms}
    for b in page.arms:
        for a in page.arms:
            if len(sw[a]) < 2 or not (sw[a] < sw[b]) or len(sw[b] - sw[a]) != 1:
                continue
            added = next(iter(sw[b] - sw[a]))
            for k in page.keys:
                ca, cb = page.cell(a, k), page.cell(b, k)
                if ca is None or cb is None:
                    continue
                cmp = compare(
                    ca,
                    cb,
                    spread=page.spread,
                    higher_is_better=baseline.PHASE_METRICS[page.metric_of(k)][1],
                    rule=page.rule,
                )
                if not cmp.is_result:
                    continue
                base_cmp = page.comparison(a, k)
                d = _digits(page, k)
                repairs = (
                    base_cmp is not None
                    and base_cmp.is_result
                    and base_cmp.direction == "regression"
                    and cmp.direction == "improvement"
                )
                text = (
                    f"Adding {added} to {a} moves {k[1]} {k[0]} from {ca.median:.{d}f} to {cb.median:.{d}f} "
                    f"({stats.fmt_pct(cmp.change, signed=True)}, a result: {cmp.direction})"
                )
                if repairs:
                    text += (
                        f"; it repairs the regression {a} introduces ({ca.median:.{d}f} against "
                        f"{page.baseline_arm}'s {base_cmp.baseline.median:.{d}f})"
                    )
                out.append(
                    {
                        "from": a,
                        "to": b,
                        "added": added,
                        "phase": k[0],
                        "prompt_class": k[1],
                        "change": cmp.change,
                        "direction": cmp.direction,
                        "repairs": repairs,
                        "text": text + ".",
                    }
                )
    return out


def interactions(page: Page) -> bd.Block:
    found = interaction_findings(page)
    summary = single_switch_summary(page)
    st = steps(page)
    bd.record(
        "interactions",
        [
            {
                "arm": i.arm,
                "switches": list(i.switches),
                "phase": i.cell[0],
                "prompt_class": i.cell[1],
                "change": i.comparison.change,
                "direction": i.comparison.direction,
                "minimal": i.minimal,
                "singles": i.singles,
            }
            for i in page.ablation.interactions
        ],
    )
    bd.record("interaction_findings", found)
    bd.record("single_switch_summary", summary)
    bd.record("steps", st)
    lines = summary + [f["text"] for f in found] + [s["text"] for s in st]
    if not page.ablation.interactions:
        lines.append(
            "No interaction: no combination is a result on a cell where all of its switches alone are within noise."
        )
    return bd.Block("<h2>Interactions</h2><ul>" + "".join(f"<li>{bd.esc(x)}</li>" for x in lines) + "</ul>")


def phase_findings(page: Page) -> bd.Block:
    """Which switches buy (or cost) which phase: ablate's findings plus a per-arm summary table."""
    bd.record("findings", page.ablation.findings)
    rows = []
    for a in page.arms:
        res = [(k, page.comparison(a, k)) for k in page.keys if page.comparison(a, k) is not None]
        fmt = lambda want: (
            ", ".join(
                f"{k[1]} {k[0]} {stats.fmt_pct(c.change, signed=True)}"  # noqa: E731
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
    return [
        {"arm": a, "phase": k[0], "prompt_class": k[1], "min": c.min, "max": c.max, "rel_width": c.rel_width}
        for a in page.all_arms
        for k in page.keys
        if (c := page.cell(a, k)) is not None
    ]


def noisiest(page: Page) -> list[dict[str, Any]]:
    """Cells ranked by the median range width across arms (noisiest first), with their widest arm."""
    rows = spread_rows(page)
    out = []
    for k in page.keys:
        rs = [r for r in rows if (r["phase"], r["prompt_class"]) == k]
        widths = sorted(r["rel_width"] for r in rs)
        widest = max(rs, key=lambda r: (r["rel_width"], r["arm"]))
        base = next(r for r in rs if r["arm"] == page.baseline_arm)
        wide = [
            r["arm"]
            for r in rs
            if r["arm"] != page.baseline_arm and base["rel_width"] > 0 and r["rel_width"] >= 3 * base["rel_width"]
        ]
        out.append(
            {
                "phase": k[0],
                "prompt_class": k[1],
                "median_width": widths[len(widths) // 2],
                "max_width": widest["rel_width"],
                "widest_arm": widest["arm"],
                "baseline_width": base["rel_width"],
                "several_times_baseline": wide,
            }
        )
    return sorted(out, key=lambda r: (-r["median_width"], r["phase"], r["prompt_class"]))


def spread(page: Page) -> bd.Block:
    rows = spread_rows(page)
    ranked = noisiest(page)
    bd.record("spread", rows)
    bd.record("noisiest", ranked)
    by = {(r["arm"], r["phase"], r["prompt_class"]): r for r in rows}
    table = [
        {
            "Arm": a,
            **{
                cell_title(page, k): stats.fmt_pct(by[(a, *k)]["rel_width"]) if (a, *k) in by else "—"
                for k in page.keys
            },
        }
        for a in page.all_arms
    ]
    lines = []
    top, tight = ranked[0], ranked[-1]
    fmtc = lambda a, k: page.cell(a, k).fmt(_digits(page, k))  # noqa: E731
    tk = (top["phase"], top["prompt_class"])
    lines.append(
        f"The noisiest column is {top['prompt_class']} {top['phase']}: the median arm's range is "
        f"{stats.fmt_pct(top['median_width'])} of its minimum, and {top['widest_arm']}'s spans "
        f"{fmtc(top['widest_arm'], tk)} ({stats.fmt_pct(top['max_width'])})."
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
        f"{stats.fmt_pct(tight['median_width'])}); differences below the {stats.fmt_pct(page.spread)} "
        "spread are not measurable with these samples."
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


# ---- closing ------------------------------------------------------------------------------------
def exclusions(page: Page) -> bd.Block:
    files = {str(r.file) for a in page.all_arms for r in page.camp.runs_of("phases", a)}
    return sections.exclusions(
        page.camp.root,
        ((e.file, e.sample, e.reason) for e in page.camp.exclusions if e.file in files),
        caption="Every phase sample of these arms left out of the statistics, with the reason.",
    )


def provenance(page: Page, parameters: dict[str, Any]) -> bd.Block:
    return sections.provenance(page.camp.input_files(), parameters, root=page.camp.root)
