"""The validity gates of result-file runs: their values, where they came from, and when a run below them
is still judged — one set per analysis, used by every page of a campaign and its summary.

A run shorter than ``min_duration_s``, with fewer than ``min_completed`` completed requests or an error
rate above ``max_error_rate`` (:func:`benchbook.analysis.reconcile.gates`) is shown but not judged:
nothing measured how much such a run moves from one try to the next. Where the runs at a load were
repeated in two or more **server processes** of one side (a campaign in ``benchbook init``'s arm/run
layout), that spread *is* measured, so runs below the duration and request-count gates are judged
against it and carried as a warning ("below the gates"). The error-rate gate is never waived: failed
requests are not noise.

The gates are the campaign's: ``campaign.json`` ``gates`` (``min_duration_s``, ``min_completed``,
``max_error_rate``, ``preset``), else the defaults; a page's own gate parameters, where given, win for
that analysis and the page says so (:attr:`Gates.source`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from benchbook.errors import InputError

GATE_DEFAULTS: dict[str, Any] = {"min_duration_s": 60.0, "min_completed": 100, "max_error_rate": 0.01}
#: validity gates of a smoke run (a short sweep that checks the set-up, not a measurement)
PRESETS: dict[str, dict[str, Any]] = {
    "smoke": {"min_duration_s": 1.0, "min_completed": 10, "max_error_rate": 0.05},
}
#: gates a measured spread between server processes stands in for (never the error rate)
WAIVABLE = frozenset({"minimum duration", "minimum completed requests"})
UNSET = -1  # a page parameter left to the campaign


@dataclass(frozen=True)
class Gates:
    """The gates one analysis applies, and where they came from."""

    min_duration_s: float
    min_completed: int
    max_error_rate: float
    preset: str = ""
    source: str = "the defaults"  # "the defaults" | "campaign.json gates" | "this page's parameters"

    def params(self) -> dict[str, Any]:
        return {"min_duration_s": self.min_duration_s, "min_completed": self.min_completed,
                "max_error_rate": self.max_error_rate}  # fmt: skip

    def describe(self) -> str:
        """``duration ≥ 60 s, ≥ 100 completed requests, error rate ≤ 1 %``."""
        return (
            f"duration ≥ {self.min_duration_s:g} s, ≥ {self.min_completed} completed requests, "
            f"error rate ≤ {self.max_error_rate:.0%}" + (" (smoke preset)" if self.preset == "smoke" else "")
        )


def _is_set(key: str, v: Any) -> bool:
    return v is not None and v != UNSET and not (isinstance(v, (int, float)) and v < 0)


def resolve(options: Mapping[str, Any] | None = None, stated: Mapping[str, Any] | None = None) -> Gates:
    """The gates of one analysis: ``options`` (a page's or a caller's ``min_duration_s``,
    ``min_completed``, ``max_error_rate``, ``preset``; −1 or absent: not given) over ``stated`` (the
    campaign's ``gates``) over :data:`GATE_DEFAULTS`. A preset lowers every gate nobody set."""
    options, stated = dict(options or {}), dict(stated or {})
    preset = str(options.get("preset") or stated.get("preset") or "")
    if preset and preset not in PRESETS:
        raise InputError("parameters", "preset", f"unknown preset {preset!r}; choose {', '.join(PRESETS)} or none")
    vals, source = {}, "the defaults"
    for k, default in GATE_DEFAULTS.items():
        if _is_set(k, options.get(k)) and options[k] != default:
            vals[k], source = options[k], "this page's parameters"
        elif _is_set(k, stated.get(k)):
            vals[k] = stated[k]
            source = source if source != "the defaults" else "campaign.json gates"
        elif preset:
            vals[k] = PRESETS[preset][k]
        else:
            vals[k] = default
    if preset and source == "the defaults":
        source = "campaign.json gates" if stated.get("preset") else "this page's parameters"
    return Gates(float(vals["min_duration_s"]), int(vals["min_completed"]), float(vals["max_error_rate"]), preset,
                 source)  # fmt: skip


def waived(failed: list[str], repeated: bool) -> bool:
    """A run that failed only ``failed`` gates is judged anyway: the spread at its load was measured
    between server processes (``repeated``) and none of them is the error rate."""
    return bool(failed) and repeated and set(failed) <= WAIVABLE


#: per gate: (threshold as the page names it, what a run that failed it did, unit of its figure)
_GATE_WORDS = {
    "minimum duration": ("min_duration_s", "{:g} s", "shorter", "{:.1f}", " s"),
    "minimum completed requests": ("min_completed", "{}", "completed fewer", "{:.0f}", ""),
    "maximum error rate": ("max_error_rate", "{:.2%}", "had more errors", "{:.2%}", ""),
}


def gate_lines(rs: Any) -> list[tuple[str, str, list[str]]]:
    """Per failed validity gate of a result set: (gate, the line with the runs it caught and their
    range, the ids caught) — ``minimum duration 60 s: 19 of 19 runs shorter (2.7–32.2 s)``."""
    by: dict[str, list[tuple[Any, Any]]] = {}
    for e in rs.entries:
        for g in e.gates:
            if g.status == "fail":
                by.setdefault(g.name, []).append((e, g.figures.get("client")))
    out = []
    for name, caught in by.items():
        key, thr, verb, fmt, unit = _GATE_WORDS.get(name, ("", "", "failed", "{:g}", ""))
        head = f"{name} {thr.format(rs.gate_params[key])}" if key in rs.gate_params else name
        vals = [v for _, v in caught if isinstance(v, (int, float))]
        rng = f" ({fmt.format(min(vals))}–{fmt.format(max(vals))}{unit})" if len(vals) > 1 else (
            f" ({fmt.format(vals[0])}{unit})" if vals else "")  # fmt: skip
        ids = [e.id for e, _ in caught]
        who = "" if len(ids) == len(rs.entries) else ": " + ", ".join(ids[:6]) + (" …" if len(ids) > 6 else "")
        out.append((name, f"{head}: {len(caught)} of {len(rs.entries)} runs {verb}{rng}{who}", ids))
    return out
