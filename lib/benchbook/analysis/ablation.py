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
from typing import TYPE_CHECKING

from benchbook.analysis.stats import Cell, fmt_pct
from benchbook.analysis.verdict import Comparison, Rule, compare
from benchbook.errors import InputError

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
