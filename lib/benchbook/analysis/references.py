"""The phase cells set against each other and against earlier measurements: each arm's prefill
interval rate between its shortest and longest prompt class (:func:`interval_rates`), and this
campaign's figures against the curves of earlier measurements the manifest names (``references``,
interpolated at this campaign's prompt length, judged by :func:`reference_decision`). Results beside
the analysis that makes them; the campaign's analysis holds them (``interval_rates``, ``references``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from benchbook.analysis import baseline, stats
from benchbook.analysis.verdict import Evidence, State, Verdict, decide, point, typed_fields
from benchbook.errors import InputError

if TYPE_CHECKING:
    import polars as pl

    from benchbook.ingest.campaign import Campaign


@dataclass(frozen=True)
class IntervalRateResult:
    """Prefill interval rate of one arm between its shortest and longest prompt class."""

    arm: str
    environment: str
    from_class: str
    to_class: str
    rate: stats.IntervalRate
    n: int  # samples per cell behind each median

    def describe(self) -> str:
        r = self.rate
        return (
            f"{self.arm}: {r.value:.0f} tok/s over the {r.tokens_from:g} → {r.tokens_to:g} token interval "
            f"(prefill medians {r.seconds_from:.3f} s and {r.seconds_to:.3f} s, n={self.n} each) — "
            f"an {r.label}: the interval contains the fixed per-request cost"
        )

    def as_dict(self) -> dict[str, Any]:
        r = self.rate
        return {
            "arm": self.arm,
            "environment": self.environment,
            "from_class": self.from_class,
            "to_class": self.to_class,
            "tokens_from": r.tokens_from,
            "tokens_to": r.tokens_to,
            "seconds_from": r.seconds_from,
            "seconds_to": r.seconds_to,
            "rate_tok_s": r.value,
            "label": r.label,
            "n": self.n,
            "text": self.describe(),
        }


@dataclass(frozen=True)
class ReferenceResult:
    """This campaign's figure against a curve from an earlier measurement (``references`` in the
    manifest), interpolated linearly at this campaign's prompt length."""

    name: str
    source: str
    date: str | None
    arm: str
    prompt_class: str
    metric: str
    unit: str
    prompt_tokens: float
    measured: float
    n: int
    points: tuple[tuple[float, float], ...]
    reference: float | None
    method: str
    change: float | None
    verdict: str
    note: str
    typed: Verdict | None = None

    def describe(self) -> str:
        pts = ", ".join(f"{t:g} → {v:g} {self.unit}" for t, v in self.points)
        if self.reference is None:
            return f"{self.name}: {self.method} ({pts}); no reference figure at {self.prompt_tokens:g} tokens"
        return (
            f"{self.metric} at {self.prompt_tokens:g} tokens: {self.measured:.3f} {self.unit} here ({self.arm}, "
            f"median of n={self.n}) against {self.reference:.2f} {self.unit} from {self.name} ({self.method} of "
            f"{pts}), {stats.fmt_pct(self.change, signed=True)} — {self.verdict}"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "source": self.source,
            "date": self.date,
            "arm": self.arm,
            "prompt_class": self.prompt_class,
            "metric": self.metric,
            "unit": self.unit,
            "prompt_tokens": self.prompt_tokens,
            "measured": self.measured,
            "n": self.n,
            "points": [{"prompt_tokens": t, "value": v} for t, v in self.points],
            "reference": self.reference,
            "method": self.method,
            "change": self.change,
            "verdict": self.verdict,
            "note": self.note,
            **typed_fields(self.typed),
            "text": self.describe(),
        }


def interpolate(points: list[tuple[float, float]], x: float) -> tuple[float | None, str]:
    """Linear interpolation of ``(x, y)`` points at ``x``: (value, the method in words).

    Only between the two measured points that bracket ``x``; outside the measured range there is
    no value (no extrapolation)."""
    pts = sorted(points)
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        if x0 <= x <= x1 and x1 > x0:
            y = y0 + (y1 - y0) * (x - x0) / (x1 - x0)
            return y, f"linear interpolation between {x0:g} and {x1:g} tokens"
    for px, py in pts:
        if px == x:
            return py, f"the measured point at {px:g} tokens"
    return None, f"{x:g} tokens is outside the measured range {pts[0][0]:g}–{pts[-1][0]:g}: not extrapolated"


def interval_rates(camp: Campaign, pc: pl.DataFrame) -> list[IntervalRateResult]:
    """Per arm: the prefill interval rate between its shortest and longest prompt class."""
    out = []
    for arm in camp.arms:
        pts = []
        for pclass in camp.prompt_classes:
            c = baseline.cell_of(pc, arm, pclass, "prefill_s")
            if c is None:
                continue
            toks = _cell_tokens(pc, arm, pclass)
            pts.append((toks, c.median, pclass, c.n))
        if len(pts) < 2:
            continue
        pts.sort()
        lo, hi = pts[0], pts[-1]
        if lo[0] == hi[0]:
            continue
        rate = stats.interval_rate(lo[0], lo[1], hi[0], hi[1])
        out.append(IntervalRateResult(arm, camp.arm_environment(arm), lo[2], hi[2], rate, min(lo[3], hi[3])))
    return out


def _cell_tokens(pc: pl.DataFrame, arm: str, pclass: str) -> float:
    import polars as pl

    f = pc.filter((pl.col("arm") == arm) & (pl.col("prompt_class") == pclass))
    return float(f["prompt_tokens"][0])


def references(camp: Campaign, pc: pl.DataFrame, spread: float | None) -> list[ReferenceResult]:
    out = []
    for i, ref in enumerate(camp.manifest.get("references", [])):
        where = f"$.references[{i}]"
        arm, metric = ref["arm"], ref["metric"]
        if arm not in camp.arms:
            raise InputError(camp.root / "campaign.json", f"{where}.arm", f"unknown arm {arm!r}")
        if metric not in baseline.PHASE_METRICS:
            raise InputError(camp.root / "campaign.json", f"{where}.metric", f"unknown phase metric {metric!r}")
        pclass = ref["prompt_class"]
        c = baseline.cell_of(pc, arm, pclass, metric)
        if c is None:
            continue
        toks = _cell_tokens(pc, arm, pclass)
        points = tuple((float(p["prompt_tokens"]), float(p["value"])) for p in ref["points"])
        value, method = interpolate(list(points), toks)
        change = None if value is None else c.median / value - 1
        typed = None if value is None else reference_decision(value, c, metric, spread)
        if typed is None:
            verdict = "no reference figure"
        elif typed.state is State.CANNOT_TELL:
            verdict = "no verdict: no measured spread"
        elif typed.state is State.WITHIN_NOISE:
            verdict = f"agrees within the {stats.fmt_pct(spread)} run-to-run spread"
        else:
            verdict = f"differs by more than the {stats.fmt_pct(spread)} run-to-run spread"
        out.append(
            ReferenceResult(
                name=ref["name"],
                source=ref["source"],
                date=ref.get("date"),
                arm=arm,
                prompt_class=pclass,
                metric=metric,
                unit=baseline.PHASE_METRICS[metric][0],
                prompt_tokens=toks,
                measured=c.median,
                n=c.n,
                points=points,
                reference=value,
                method=method,
                change=change,
                verdict=verdict,
                note=ref.get("note", ""),
                typed=typed,
            )
        )
    return out


def reference_decision(reference: float, measured: stats.Cell, metric: str, spread: float | None) -> Verdict:
    """This campaign's cell against an earlier measurement's (interpolated, n=1) figure: the seed rule
    with n=1 on the reference side, i.e. the symmetric difference max/min − 1 of the two medians
    against the run-to-run spread (the old rule tested |change| against the spread, with the change
    taken relative to the reference — not symmetric)."""
    return decide(
        Evidence(
            point(reference),
            measured,
            higher_is_better=baseline.PHASE_METRICS[metric][1],
            rule="seed",
            spread=spread,
            spread_from="the campaign's run-to-run spread (noise yardstick)",
            no_spread="no arm was run twice, so there is no measured spread",
        )
    )
