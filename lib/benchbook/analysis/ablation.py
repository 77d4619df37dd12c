"""Environment ablation: each switch alone and in combination against the baseline arm, per cell.

A *cell* is ``(metric, prompt_class)`` — e.g. ``("decode", "short")`` — holding a
:class:`benchbook.analysis.stats.Cell`. Every ablation arm is compared with the baseline arm cell by cell with
:func:`benchbook.analysis.verdict.compare`. An INTERACTION is reported for a cell when a combination of
switches is a result while every one of its switches, measured alone, is within noise. Switches set
to their built-in default are not variables and are dropped first (with a note).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from benchbook.analysis.stats import Cell, fmt_pct
from benchbook.analysis.verdict import Comparison, Rule, compare, typed_fields
from benchbook.errors import InputError
from benchbook.findings import Findings

if TYPE_CHECKING:
    import polars as pl

CellKey = tuple[str, str]  # (metric, prompt_class)


@dataclass(frozen=True)
class AblationArm:
    """An arm: the variables it sets on top of the baseline environment, and its cells."""

    name: str
    switches: Mapping[str, str]
    cells: Mapping[CellKey, Cell]


@dataclass(frozen=True)
class Interaction:
    """A combination that is a result on a cell where each of its switches alone is not."""

    arm: str
    switches: tuple[str, ...]
    cell: CellKey
    comparison: Comparison
    singles: dict[str, str]  # switch → the single-switch arm that measured it
    minimal: bool  # no smaller measured combination of these switches is already a result here

    def describe(self) -> str:
        metric, pclass = self.cell
        return (
            f"INTERACTION on {metric} ({pclass}): {' + '.join(self.switches)} together "
            f"{fmt_pct(self.comparison.change, signed=True)} ({self.comparison.direction}), while each "
            "switch alone is within noise"
        )


@dataclass(frozen=True)
class Ablation:
    comparisons: dict[tuple[str, str, str], Comparison]  # (arm, metric, prompt_class) → verdict
    switches: dict[str, tuple[str, ...]]  # arm → effective switches, sorted
    interactions: list[Interaction]
    findings: list[str]  # which switches buy (or cost) which phase, in words
    notes: list[str] = field(default_factory=list)

    def table(self) -> pl.DataFrame:
        """One row per (arm, metric, prompt_class): medians, change, mark, verdict, reason."""
        import polars as pl

        rows = [
            {
                "arm": arm,
                "switches": " + ".join(self.switches[arm]),
                "metric": m,
                "prompt_class": pc,
                "baseline": c.baseline.median,
                "candidate": c.candidate.median,
                "change": c.change,
                "mark": c.mark,
                "verdict": c.verdict,
                "reason": c.reason,
                "interaction": any(i.arm == arm and i.cell == (m, pc) for i in self.interactions),
            }
            for (arm, m, pc), c in self.comparisons.items()
        ]
        return pl.DataFrame(rows)


def _typed(c: Comparison) -> dict[str, Any]:
    """The typed verdict's ``state`` and ``verdict_evidence`` beside a row's ``verdict`` words."""
    return {k: v for k, v in typed_fields(c.typed).items() if k != "direction"}


def _spread_for(spread: float | Mapping[str, float], metric: str) -> float:
    if isinstance(spread, Mapping):
        if metric not in spread:
            raise InputError(None, f"spread.{metric}", "no run-to-run spread measured for this metric")
        return spread[metric]
    return spread


def ablate(
    baseline: Mapping[CellKey, Cell],
    arms: Sequence[AblationArm],
    *,
    spread: float | Mapping[str, float],
    higher_is_better: Mapping[str, bool] | None = None,
    defaults: Mapping[str, str] | None = None,
    rule: Rule = "seed",
) -> Ablation:
    """Compare every arm with ``baseline`` on every cell they share, and find interactions.

    ``spread`` is one fraction or one per metric; ``higher_is_better`` maps metric → direction
    (default True: rates); ``defaults`` maps variable → built-in default value, so a switch set to
    its default (``POCKETLLM_CPP_PREFILL_BATCHED_ATTN=1``) is dropped. Arms are reported in the
    order given; cells in the baseline's order.
    """
    hib = dict(higher_is_better or {})
    defaults = dict(defaults or {})
    notes: list[str] = []
    eff: dict[str, dict[str, str]] = {}
    for arm in arms:
        if arm.name in eff:
            raise InputError(None, f"arm {arm.name}", "arm listed twice")
        kept = {}
        for var, val in arm.switches.items():
            if var in defaults and str(defaults[var]) == str(val):
                notes.append(f"{arm.name}: {var}={val} is the built-in default, not a variable; ignored")
            else:
                kept[var] = str(val)
        if not kept:
            notes.append(f"{arm.name}: sets nothing beyond the defaults; it is a repeat of the baseline")
        eff[arm.name] = kept

    comparisons: dict[tuple[str, str, str], Comparison] = {}
    for arm in arms:
        for key, base in baseline.items():
            if key not in arm.cells:
                notes.append(f"{arm.name}: no {key[0]} ({key[1]}) cell; not compared")
                continue
            metric = key[0]
            comparisons[(arm.name, *key)] = compare(
                base,
                arm.cells[key],
                spread=_spread_for(spread, metric),
                higher_is_better=hib.get(metric, True),
                rule=rule,
            )

    def label(vars_: Mapping[str, str]) -> tuple[str, ...]:
        return tuple(f"{k}={v}" for k, v in sorted(vars_.items()))

    single_of = {next(iter(v.items())): name for name, v in eff.items() if len(v) == 1}  # (var, value) → arm
    interactions: list[Interaction] = []
    for arm in arms:
        sw = eff[arm.name]
        if len(sw) < 2:
            continue
        for key in baseline:
            c = comparisons.get((arm.name, *key))
            if c is None or not c.is_result:
                continue
            singles, missing = {}, []
            for item in sorted(sw.items()):
                if item in single_of and (single_of[item], *key) in comparisons:
                    singles[f"{item[0]}={item[1]}"] = single_of[item]
                else:
                    missing.append(f"{item[0]}={item[1]}")
            if missing:
                notes.append(
                    f"{arm.name}: {key[0]} ({key[1]}) is a result, but {', '.join(missing)} was not "
                    "measured alone, so an interaction cannot be called"
                )
                continue
            if any(comparisons[(a, *key)].is_result for a in singles.values()):
                continue
            minimal = not any(
                1 < len(eff[o.name]) < len(sw)
                and set(eff[o.name].items()) <= set(sw.items())
                and (o.name, *key) in comparisons
                and comparisons[(o.name, *key)].is_result
                for o in arms
            )
            interactions.append(Interaction(arm.name, label(sw), key, c, singles, minimal))

    findings = _findings(arms, eff, comparisons, interactions, label)
    return Ablation(
        comparisons=comparisons,
        switches={a.name: label(eff[a.name]) for a in arms},
        interactions=interactions,
        findings=findings,
        notes=notes,
    )


def _classes(keys: list[CellKey]) -> str:
    return ", ".join(pc for _, pc in keys)


def _findings(arms, eff, comparisons, interactions, label) -> list[str]:
    out: list[str] = []
    for arm in arms:
        sw = eff[arm.name]
        names = " + ".join(label(sw)) or arm.name
        results = [(k[1:], c) for k, c in comparisons.items() if k[0] == arm.name and c.is_result]
        by: dict[tuple[str, str], list[tuple[CellKey, Comparison]]] = {}
        for key, c in results:
            by.setdefault((key[0], c.direction), []).append((key, c))
        for (metric, direction), items in by.items():
            verb = "buys" if direction == "improvement" else "costs"
            changes = ", ".join(f"{k[1]} {fmt_pct(c.change, signed=True)}" for k, c in items)
            inter = [i for i in interactions if i.arm == arm.name and i.cell in [k for k, _ in items]]
            if len(sw) == 1:
                out.append(f"{names} alone {verb} {metric} ({changes})")
            elif inter and len(inter) == len(items) and all(i.minimal for i in inter):
                verb_pl = "buy" if direction == "improvement" else "cost"
                out.append(
                    f"{names} together {verb_pl} {metric} ({changes}) — an interaction: each switch "
                    "alone is within noise"
                )
            elif inter and not all(i.minimal for i in inter):
                out.append(
                    f"{arm.name} ({names}): {metric} {direction} ({changes}), which a smaller "
                    "combination's interaction already gives"
                )
            elif inter:
                out.append(f"{arm.name} ({names}): {metric} {direction} ({changes}), partly an interaction")
            else:
                out.append(
                    f"{arm.name} ({names}): {metric} {direction} ({changes}), where one of its switches alone "
                    "is already a result"
                )
    return out


# ---- a campaign's ablation -------------------------------------------------------------------------
# metric -> the phase name used in cell keys and sentences
PHASE_NAME = {
    "prefill_tok_s": "prefill",
    "decode_tok_s": "decode",
    "prefill_s": "prefill time",
    "engine_total_s": "total time",
    "client_total_s": "client total",
}
DEFAULT_METRICS = ["prefill_tok_s", "decode_tok_s"]
UNSET = "unset"


def effective_env(camp: Any, arm: str) -> dict[str, str]:
    """Every known variable's value in ``arm``'s environment: set, else built-in default, else "unset"."""
    env = camp.environments.get(camp.arm_environment(arm), {}).get("variables", {})
    defaults = {k: str(v.get("default", UNSET)) for k, v in camp.manifest.get("variables", {}).items()}
    names = set(defaults) | {v for e in camp.environments.values() for v in e.get("variables", {})}
    return {v: str(env[v]) if v in env else defaults.get(v, UNSET) for v in sorted(names)}


def switches_against(camp: Any, arm: str, base: str) -> tuple[dict[str, str], list[str]]:
    """(switches of ``arm`` relative to ``base``, notes on variables set but not varied).

    A switch is a variable whose effective value (set, else built-in default) differs from the
    baseline arm's; a variable set to the value it already has in ``base`` is dropped with a note.
    """
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


@dataclass
class CampaignAblation:
    """The environment ablation of one campaign: every arm against the baseline arm, cell by cell,
    the interactions, what one added switch does on top of a measured combination (``steps``) and
    the spread of each cell (``noisiest``). Computed once; the ablation page and the summary read it."""

    baseline_arm: str
    arms: list[str]  # compared arms, in order (baseline excluded)
    metrics: list[str]
    keys: list[CellKey]  # (phase name, prompt class), display order
    cells: Any  # pl.DataFrame from baseline.phase_cells
    spread: float
    rule: str
    prompt_tokens: dict[str, int]
    generation_tokens: int | None
    environments: dict[str, str]  # arm -> environment name
    ablation: Ablation
    notes: list[str] = field(default_factory=list)
    steps: list[dict[str, Any]] = field(default_factory=list)
    noisiest: list[dict[str, Any]] = field(default_factory=list)

    @property
    def all_arms(self) -> list[str]:
        return [self.baseline_arm, *self.arms]

    def metric_of(self, key: CellKey) -> str:
        return {PHASE_NAME.get(m, m): m for m in self.metrics}[key[0]]

    def cell(self, arm: str, key: CellKey) -> Cell | None:
        from benchbook.analysis import baseline

        return baseline.cell_of(self.cells, arm, key[1], self.metric_of(key))

    def comparison(self, arm: str, key: CellKey) -> Comparison | None:
        return self.ablation.comparisons.get((arm, *key))

    def findings(self) -> Findings:
        """The ablation page's findings box: every cell called a result (worst first; interactions
        said so) and the cells that could not be compared."""
        return Findings.build(**self.finding_parts(), results_section="ablation")

    def finding_parts(self) -> dict[str, list]:
        """The lines of :meth:`findings` before they are ordered (the campaign's findings join them)."""
        inter = {(i.arm, i.cell) for i in self.ablation.interactions}
        results, unjudged = [], []
        for a in self.arms:
            for k in self.keys:
                cmp = self.comparison(a, k)
                if cmp is None:
                    unjudged.append((f"{a}: no {k[1]} {k[0]} cell to compare with {self.baseline_arm}", "ablation"))
                    continue
                if not cmp.is_result:
                    continue
                text = f"{a} vs {self.baseline_arm}, {f'{k[1]} {k[0]}'.lower()}: {cmp.ratio:.2f}x ({fmt_pct(cmp.change, signed=True)})"
                if (a, k) in inter:
                    text += f" — an interaction of {len(self.ablation.switches.get(a, ()))} switches, each within noise alone"
                results.append((cmp.state.value, cmp.speedup, text, "ablation"))
        return {"results": results, "unjudged": unjudged}

    def digits(self, key: CellKey) -> int:
        """Decimals a figure of this cell is shown with (its metric's, baseline.PHASE_METRICS)."""
        from benchbook.analysis.baseline import PHASE_METRICS

        return PHASE_METRICS[self.metric_of(key)][2]

    def interaction_findings(self) -> list[dict[str, Any]]:
        """Per (combination arm, phase): the interaction and the single-switch figures behind it, in words
        (the ablation page's interaction findings)."""
        groups: dict[tuple[str, str], list] = {}
        for i in self.ablation.interactions:
            groups.setdefault((i.arm, i.cell[0]), []).append(i)
        out = []
        for (arm, phase), items in groups.items():
            singles = sorted({s for i in items for s in i.singles.values()})
            cells = [i.cell for i in items]
            d = self.digits(cells[0])
            base = {pc: self.cell(self.baseline_arm, (phase, pc)).median for _, pc in cells}
            single_txt = "; ".join(
                f"{pc}: "
                + ", ".join(f"{s} {self.cell(s, (phase, pc)).median:.{d}f}" for s in singles)
                + f" against {base[pc]:.{d}f}"
                for _, pc in cells
            )
            combo = ", ".join(
                f"{i.cell[1]} {i.comparison.candidate.median:.{d}f} ({fmt_pct(i.comparison.change, signed=True)})"
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
                        for o in self.arms
                        if 1 < len(self.ablation.switches[o]) < len(items[0].switches)
                        and set(self.ablation.switches[o]) <= set(items[0].switches)
                        and all(self.comparison(o, c) and self.comparison(o, c).is_result for c in cells)
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

    def single_switch_summary(self) -> list[str]:
        """Per phase: is any single switch a result (and which), in words."""
        singles = [a for a in self.arms if len(self.ablation.switches.get(a, ())) == 1]
        out = []
        if not singles:
            return ["No arm changes exactly one switch, so no single-switch effect and no interaction can be judged."]
        for phase in dict.fromkeys(k[0] for k in self.keys):
            keys = [k for k in self.keys if k[0] == phase]
            res = [(a, k) for a in singles for k in keys if self.comparison(a, k) and self.comparison(a, k).is_result]
            combos = [i for i in self.ablation.interactions if i.cell[0] == phase and i.minimal]
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
                    f"({', '.join(singles)}) are within noise of {self.baseline_arm} on every {phase} cell."
                )
            else:
                out.append(
                    f"On {phase}, single switches that are results on their own: "
                    + "; ".join(
                        f"{a} {k[1]} {fmt_pct(self.comparison(a, k).change, signed=True)} ({self.comparison(a, k).direction})"
                        for a, k in res
                    )
                    + "."
                )
        return out

    def rows(self) -> list[dict[str, Any]]:
        """One record per (arm, cell): the figures, the change vs the baseline and the verdict."""
        out = []
        inter = {(i.arm, i.cell): i for i in self.ablation.interactions}
        for a in self.all_arms:
            for k in self.keys:
                c = self.cell(a, k)
                if c is None:
                    continue
                cmp = self.comparison(a, k)
                i = inter.get((a, k))
                out.append(
                    {
                        "arm": a,
                        "phase": k[0],
                        "prompt_class": k[1],
                        "metric": self.metric_of(k),
                        "prompt_tokens": self.prompt_tokens.get(k[1], 0),
                        "generated_tokens": self.generation_tokens,
                        "environment": self.environments[a],
                        "baseline_arm": self.baseline_arm,
                        "median": c.median,
                        "min": c.min,
                        "max": c.max,
                        "n": c.n,
                        "change": None if cmp is None else cmp.change,
                        "is_result": None if cmp is None else cmp.is_result,
                        "direction": None if cmp is None else cmp.direction,
                        "verdict": "baseline" if a == self.baseline_arm else (cmp.verdict if cmp else "not compared"),
                        "reason": "" if cmp is None else cmp.reason,
                        **({} if cmp is None else _typed(cmp)),
                        "interaction": i is not None,
                        "minimal": None if i is None else i.minimal,
                    }
                )
        return out

    def interaction_rows(self) -> list[dict[str, Any]]:
        return [
            {
                "arm": i.arm,
                "switches": list(i.switches),
                "phase": i.cell[0],
                "prompt_class": i.cell[1],
                "change": i.comparison.change,
                "direction": i.comparison.direction,
                "verdict": i.comparison.verdict,
                **_typed(i.comparison),
                "minimal": i.minimal,
                "singles": i.singles,
                "text": i.describe(),
            }
            for i in self.ablation.interactions
        ]

    def spread_rows(self) -> list[dict[str, Any]]:
        """(max − min) / min of every cell's samples, per arm."""
        return [
            {"arm": a, "phase": k[0], "prompt_class": k[1], "min": c.min, "max": c.max, "rel_width": c.rel_width}
            for a in self.all_arms
            for k in self.keys
            if (c := self.cell(a, k)) is not None
        ]

    def as_dict(self) -> dict[str, Any]:
        """The summary's ``ablation`` object (docs/summary.md)."""
        return {
            "baseline_arm": self.baseline_arm,
            "arms": self.arms,
            "rule": self.rule,
            "spread": self.spread,
            "switches": {a: list(self.ablation.switches.get(a, ())) for a in self.arms},
            "cells": self.rows(),
            "interactions": self.interaction_rows(),
            "findings": list(self.ablation.findings),
            "steps": self.steps,
            "noisiest": self.noisiest,
            "notes": self.notes,
        }


def campaign_ablation(
    camp: Any,
    *,
    baseline_arm: str = "",
    arms: Sequence[str] | None = None,
    metrics: Sequence[str] | None = None,
    rule: str = "seed",
) -> CampaignAblation:
    """Compute the whole ablation of a campaign. ``baseline_arm`` "" = the arm with role baseline;
    ``arms`` empty = every ablation arm (role ``ablation``), singles first, then pairs, …"""
    from benchbook.analysis import baseline

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
    name_to_metric = {PHASE_NAME.get(m, m): m for m in metrics}
    base_cells = {k: baseline.cell_of(cells, baseline_arm, k[1], name_to_metric[k[0]]) for k in keys}
    base_cells = {k: c for k, c in base_cells.items() if c is not None}
    notes: list[str] = []
    ab_arms = []
    for a in chosen:
        sw, n = switches_against(camp, a, baseline_arm)
        notes += n
        arm_cells = {}
        for k in keys:
            c = baseline.cell_of(cells, a, k[1], name_to_metric[k[0]])
            if c is not None:
                arm_cells[k] = c
        ab_arms.append(AblationArm(a, sw, arm_cells))
    if not explicit_order:  # singles first, then pairs, …, manifest order inside each size
        ab_arms.sort(key=lambda x: len(x.switches))
        chosen = [x.name for x in ab_arms]
    hib = {PHASE_NAME.get(m, m): baseline.PHASE_METRICS[m][1] for m in metrics}
    ab = ablate(base_cells, ab_arms, spread=nz.spread, higher_is_better=hib, rule=rule)
    res = CampaignAblation(
        baseline_arm=baseline_arm,
        arms=chosen,
        metrics=metrics,
        keys=[k for k in keys if k in base_cells],
        cells=cells,
        spread=nz.spread,
        rule=rule,
        prompt_tokens={pc: int(v.get("tokens", 0)) for pc, v in camp.prompt_classes.items()},
        generation_tokens=camp.generation_tokens,
        environments={a: camp.arm_environment(a) for a in [baseline_arm, *chosen]},
        ablation=ab,
        notes=notes + ab.notes,
    )
    res.steps = steps(res)
    res.noisiest = noisiest(res)
    return res


def _digits(ab: CampaignAblation, key: CellKey) -> int:
    from benchbook.analysis import baseline

    return baseline.PHASE_METRICS[ab.metric_of(key)][2]


def steps(ab: CampaignAblation) -> list[dict[str, Any]]:
    """What one switch adds on top of a measured combination: arm B = arm A + one switch, compared
    directly (B against A, with the campaign's spread); only results are listed."""
    from benchbook.analysis import baseline

    out = []
    sw = {a: set(ab.ablation.switches.get(a, ())) for a in ab.arms}
    for b in ab.arms:
        for a in ab.arms:
            if len(sw[a]) < 2 or not (sw[a] < sw[b]) or len(sw[b] - sw[a]) != 1:
                continue
            added = next(iter(sw[b] - sw[a]))
            for k in ab.keys:
                ca, cb = ab.cell(a, k), ab.cell(b, k)
                if ca is None or cb is None:
                    continue
                cmp = compare(
                    ca,
                    cb,
                    spread=ab.spread,
                    higher_is_better=baseline.PHASE_METRICS[ab.metric_of(k)][1],
                    rule=ab.rule,
                )
                if not cmp.is_result:
                    continue
                base_cmp = ab.comparison(a, k)
                d = _digits(ab, k)
                repairs = (
                    base_cmp is not None
                    and base_cmp.is_result
                    and base_cmp.direction == "regression"
                    and cmp.direction == "improvement"
                )
                text = (
                    f"Adding {added} to {a} moves {k[1]} {k[0]} from {ca.median:.{d}f} to {cb.median:.{d}f} "
                    f"({fmt_pct(cmp.change, signed=True)}, a result: {cmp.direction}; n={ca.n} against n={cb.n})"
                )
                if repairs:
                    text += (
                        f"; it repairs the regression {a} introduces ({ca.median:.{d}f} against "
                        f"{ab.baseline_arm}'s {base_cmp.baseline.median:.{d}f})"
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
                        "verdict": cmp.verdict,
                        **_typed(cmp),
                        "repairs": repairs,
                        "text": text + ".",
                    }
                )
    return out


def noisiest(ab: CampaignAblation) -> list[dict[str, Any]]:
    """Cells ranked by the median range width across arms (noisiest first), with their widest arm.

    The median of an even number of widths is the mean of the two middle ones."""
    import statistics

    rows = ab.spread_rows()
    out = []
    for k in ab.keys:
        rs = [r for r in rows if (r["phase"], r["prompt_class"]) == k]
        widest = max(rs, key=lambda r: (r["rel_width"], r["arm"]))
        base = next(r for r in rs if r["arm"] == ab.baseline_arm)
        wide = [
            r["arm"]
            for r in rs
            if r["arm"] != ab.baseline_arm and base["rel_width"] > 0 and r["rel_width"] >= 3 * base["rel_width"]
        ]
        out.append(
            {
                "phase": k[0],
                "prompt_class": k[1],
                "arms": len(rs),
                "median_width": statistics.median(r["rel_width"] for r in rs),
                "max_width": widest["rel_width"],
                "widest_arm": widest["arm"],
                "baseline_width": base["rel_width"],
                "several_times_baseline": wide,
            }
        )
    return sorted(out, key=lambda r: (-r["median_width"], r["phase"], r["prompt_class"]))


# ---- server switches (benchbook init's arm/run layout: each arm one server configuration) ---------


@dataclass
class SwitchAblation:
    """Arms that differ by server switches (what their engines stated), each against the baseline
    arm: the ladder's output rate and TPOT per concurrency and the phase cells, one value per server
    process (the cell's n), judged against the run-to-run spread of repeated processes (or an
    override); the interactions of every pair of single-switch arms, "not measured" where no arm ran
    both switches together."""

    baseline_arm: str
    arms: list[str]
    switches: dict[str, dict[str, str]]  # arm -> {switch: value} where it differs from the baseline
    spread: float | None
    spread_from: str
    rule: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    interactions: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # arm -> where its server ran otherwise than the baseline's (analysis.what_ran, capacity included)
    what_ran: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    settings: dict[str, dict[str, str]] = field(default_factory=dict)  # arm -> its settings as table cells

    def differs(self, arm: str) -> str:
        """What ``arm``'s server ran otherwise than the baseline's, as one phrase ("" when nothing)."""
        from benchbook.analysis import what_ran

        return what_ran.text([what_ran.SettingDifference(**_diff_args(d)) for d in self.what_ran.get(arm, [])])

    def as_dict(self) -> dict[str, Any]:
        return {
            "baseline_arm": self.baseline_arm,
            "arms": list(self.arms),
            "switches": self.switches,
            "what_ran": self.what_ran,
            "settings": self.settings,
            "spread": self.spread,
            "spread_from": self.spread_from,
            "rule": self.rule,
            "rows": self.rows,
            "interactions": self.interactions,
            "notes": list(self.notes),
        }

    def findings(self) -> Findings:
        """The switch ablation page's findings box: every row called a result (worst first), and what
        could not be judged — no verdicts without a measured spread, interactions not measured."""
        results = [
            (
                r["direction"],
                r["speedup"],
                f"{r['arm']} ({r['switches']}) vs {self.baseline_arm}, {r['metric']} ({r['context']}): {r['ratio']:.2f}x"
                + (f"; {r['evidence']}" if r.get("evidence") else ""),
                "ablation",
            )
            for r in self.rows
            if r["is_result"]
        ]
        unjudged = []
        if self.spread is None:
            unjudged.append((f"no verdicts: {NO_SPREAD}", "ablation"))
        unjudged += [(i["finding"], "interactions") for i in self.interactions if not i["measured"]]
        return Findings.build(results=results, unjudged=unjudged, results_section="ablation")


def _diff_args(d: dict[str, Any]) -> dict[str, Any]:
    return {"name": d["setting"], "a": d["a"], "b": d["b"], "unit": d["unit"], "kind": d["kind"]}


NO_SPREAD = (
    "no arm was run twice (one server process each), so there is no measured spread; no difference can be "
    "called a result"
)


def _decided_fields(v: Any) -> dict[str, Any]:
    """A row's figures and verdict from the campaign's decision: a result set's ``VerdictRow`` (a
    concurrency) or a phase comparison row (:func:`benchbook.analysis.baseline.comparisons`)."""
    if isinstance(v, dict):
        keys = ("baseline_median", "baseline_min", "baseline_max", "candidate_median", "candidate_min",
                "candidate_max", "ratio", "speedup", "direction", "verdict", "is_result", "reason", "state",
                "verdict_evidence")  # fmt: skip
        return {k: v[k] for k in keys if k in v}
    from benchbook.analysis.ladder import decided_row

    d = decided_row(v)
    return {k: d[k] for k in ("baseline_median", "candidate_median", "verdict", "is_result", "reason", "ratio",
                              "speedup", "direction", "state", "verdict_evidence") if k in d}  # fmt: skip


def switch_ablation(
    camp: Any, *, rule: str = "seed", spread_override: float | None = None, decided: Any = None
) -> SwitchAblation | None:
    """The server-switch ablation of a campaign in init's arm/run layout (None when it has no
    role-baseline arm with ablation arms, or no ladder or phase runs to compare). ``decided``: the
    campaign's one decision per comparison at a concurrency (see :func:`ladder.results_ladder_analysis`):
    the output-rate and TPOT rows carry its verdicts."""
    import polars as pl

    from benchbook.analysis import baseline as bl
    from benchbook.analysis import stats
    from benchbook.analysis.ladder import direction_of, pl_col_inf, results_ladder

    roles = {a: v.get("role") for a, v in camp.arms.items()}
    base = next((a for a, r in roles.items() if r == "baseline"), None)
    arms = [a for a, r in roles.items() if r == "ablation"]
    if base is None or not arms:
        return None
    sw = {}
    notes: list[str] = []
    for a in arms:
        s, n = switches_against(camp, a, base)
        sw[a] = s
        notes += n
    lad = results_ladder(camp)
    closed = lad.filter(pl_col_inf(lad)) if lad.height else lad
    spreads = []
    if closed.height:
        for (_arm, _pt), g in closed.group_by(["arm", "point"], maintain_order=True):
            if g["process"].n_unique() >= 2:
                spreads.append(stats.run_spread(g["rate_tok_s"].to_list()))
    measured = max(spreads) if spreads else None
    spread = spread_override if spread_override is not None else measured
    spread_from = (
        "override"
        if spread_override is not None
        else "the largest run-to-run spread of the output rate between processes of one arm"
        if measured is not None
        else "none: no arm was run twice"
    )
    out = SwitchAblation(base, arms, sw, spread, spread_from, rule, notes=notes)
    from benchbook.analysis import what_ran

    out.what_ran = {a: [d.as_dict() for d in what_ran.arm_differences(camp, a, base)] for a in arms}
    out.settings = {a: what_ran.columns(what_ran.arm_settings(camp, a)) for a in [base, *arms]}

    def values(arm: str) -> dict[tuple[str, str], tuple[list[float], bool, str, tuple]]:
        vals: dict[tuple[str, str], tuple[list[float], bool, str, tuple]] = {}
        if closed.height:
            g = closed.filter(pl.col("arm") == arm)
            for n in sorted(set(g["concurrency"].to_list())):
                gn = g.filter(pl.col("concurrency") == n)
                vals[("output tok/s", f"concurrency {n}")] = (
                    gn["rate_tok_s"].to_list(), True, "tok/s", ("output_throughput", int(n)))  # fmt: skip
                tp = [v for v in gn["median_tpot_ms"].to_list() if v is not None]
                if tp:
                    vals[("median TPOT", f"concurrency {n}")] = (tp, False, "ms", ("median_tpot_ms", int(n)))
        if camp.runs_of("requests", arm):  # capture ladder runs: the aggregate rate per step, a value per process
            wc = bl.whole_request_cells(camp)
            for metric, name in (("single_tok_s", "ladder output tok/s"), ("ladder_tok_s", "ladder output tok/s")):
                g = wc.filter((pl.col("arm") == arm) & (pl.col("metric") == metric))
                for n in sorted(set(g["concurrency"].drop_nulls().to_list())):
                    vals[(name, f"concurrency {n}")] = (
                        g.filter(pl.col("concurrency") == n)["median"].to_list(),
                        True,
                        "tok/s",
                        (metric, int(n)),
                    )
        if camp.runs_of("phases", arm):
            cells = bl.phase_cells(camp, [arm])
            for m in DEFAULT_METRICS:
                for pc in camp.prompt_classes:
                    c = bl.cell_of(cells, arm, pc, m)
                    if c is not None:
                        name = PHASE_NAME.get(m, m)
                        pr = camp.prompt_classes[pc].get("tokens", "?")
                        # several processes: a value per process (its median over rounds), as the ladder's
                        per_run = cells.filter(
                            (pl.col("arm") == arm) & (pl.col("prompt_class") == pc) & (pl.col("metric") == m)
                        )["median"].to_list()
                        vals[(f"{name} tok/s", f"{pc} prompt ({pr} tokens), {camp.generation_tokens} generated")] = (
                            per_run if len(per_run) > 1 else [c.min, c.median, c.max] if c.n >= 3 else [c.median],
                            bl.PHASE_METRICS[m][1],
                            "tok/s",
                            (m, pc),
                        )
        return vals

    base_vals = values(base)
    verdicts: dict[tuple[str, tuple[str, str]], dict[str, Any]] = {}
    for a in arms:
        for key, (cv, hib, unit, look) in values(a).items():
            if key not in base_vals:
                continue
            b = stats.cell(base_vals[key][0])
            c = stats.cell(cv)
            row = {
                "arm": a,
                "switches": " + ".join(f"{k}={v}" for k, v in sw[a].items())
                or out.differs(a)
                or "nothing beyond the baseline",
                "what_ran": out.differs(a),
                "metric": key[0],
                "context": key[1],
                "unit": unit,
                "baseline_median": b.median,
                "baseline_min": b.min,
                "baseline_max": b.max,
                "candidate_median": c.median,
                "candidate_min": c.min,
                "candidate_max": c.max,
                "ratio": c.median / b.median,
                "speedup": c.median / b.median if hib else b.median / c.median,  # > 1 is better
                "direction": direction_of(b.median, c.median, hib),
            }
            v = (decided or {}).get((base, a, *look))
            if v is not None:  # the campaign's one decision on this comparison (its figures and verdict)
                row.update(_decided_fields(v))
            elif spread is None:
                row.update(verdict="no verdict", is_result=False, reason=NO_SPREAD)
            else:
                cmp = compare(b, c, spread=spread, higher_is_better=hib, rule=rule)
                row.update(verdict=cmp.verdict, is_result=bool(cmp.is_result), reason=cmp.reason)
            out.rows.append(row)
            verdicts[(a, key)] = row
    # interactions: every pair of single-switch arms; measured where one arm ran both switch sets
    singles = [a for a in arms if not any(set(sw[o].items()) < set(sw[a].items()) for o in arms if o != a)]
    for i, a in enumerate(singles):
        for b_ in singles[i + 1 :]:
            union = {**sw[a], **sw[b_]}
            combo = next((x for x in arms if sw[x] == union), None)
            label = f"{a} ({' + '.join(sw[a])}) × {b_} ({' + '.join(sw[b_])})"
            if combo is None:
                out.interactions.append(
                    {
                        "pair": [a, b_],
                        "measured": False,
                        "finding": f"{label}: not measured — no arm ran both switches together, so whether they interact is unknown",
                    }
                )
                continue
            found = []
            for (arm, key), row in verdicts.items():
                if arm != combo:
                    continue
                alone = [verdicts.get((s, key)) for s in (a, b_)]
                if spread is None or any(x is None for x in alone):
                    continue
                if row["is_result"] and not any(x["is_result"] for x in alone):
                    found.append(f"{key[0]} ({key[1]})")
            finding = f"{label}: measured by {combo}; " + (
                "no verdict without a measured spread"
                if spread is None
                else f"an INTERACTION on {', '.join(found)}: the pair is a result where each switch alone is within noise"
                if found
                else "no interaction: no cell where the pair is a result while each switch alone is within noise"
            )
            out.interactions.append({"pair": [a, b_], "measured": True, "combination": combo, "finding": finding})
    return out
