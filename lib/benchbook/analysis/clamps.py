"""Clamp detection: what the server log says ran, against what the arm's server_args requested.

The startup line looks like::

    [server] batch width 1 (engine declares max_slots=8, continuous_batching=no), prefill budget 0

:func:`parse_startup_line` finds and parses it tolerantly (any prefix, case, extra spaces,
``yes/no/true/false/1/0``, ``=`` or ``:``); :func:`detect_clamps` compares it with the requested
``max_batch_size`` and ``prefill_token_budget``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchbook.errors import InputError

_MARK = re.compile(r"batch\s+width", re.IGNORECASE)
_LINE = re.compile(
    r"batch\s+width\s*[:=]?\s*(?P<width>\d+)\s*"
    r"\(\s*engine\s+declares\s+max_slots\s*[=:]\s*(?P<slots>\d+)\s*,\s*"
    r"continuous_batching\s*[=:]\s*(?P<cb>yes|no|true|false|on|off|1|0)\s*\)\s*,?\s*"
    r"prefill\s+(?:token\s+)?budget\s*[:=]?\s*(?P<budget>\d+)",
    re.IGNORECASE,
)
_TRUE = {"yes", "true", "on", "1"}


@dataclass(frozen=True)
class StartupLine:
    """The fields of the server's startup line, and where it was found."""

    batch_width: int
    max_slots: int
    continuous_batching: bool
    prefill_budget: int
    line: int  # 1-based line number in the log
    text: str


def parse_startup_line(text: str, file: str | Path | None = None) -> StartupLine:
    """Find and parse the ``batch width … prefill budget …`` line in a server log's text.

    Raises :class:`InputError` naming ``file`` and the line when the line is garbled, when several
    startup lines disagree, or (location ``whole file``) when no such line exists.
    """
    found: list[StartupLine] = []
    for no, raw in enumerate(text.splitlines(), start=1):
        if not _MARK.search(raw):
            continue
        m = _LINE.search(raw)
        if m is None:
            raise InputError(
                file,
                f"line {no}",
                "startup line is garbled: expected 'batch width N (engine declares max_slots=M, "
                f"continuous_batching=yes|no), prefill budget B', got {raw.strip()[:160]!r}",
            )
        found.append(
            StartupLine(
                batch_width=int(m["width"]),
                max_slots=int(m["slots"]),
                continuous_batching=m["cb"].lower() in _TRUE,
                prefill_budget=int(m["budget"]),
                line=no,
                text=raw.strip(),
            )
        )
    if not found:
        raise InputError(
            file,
            "whole file",
            "no startup line 'batch width … prefill budget …': cannot tell what the server ran",
        )
    first = found[0]
    for other in found[1:]:
        if (other.batch_width, other.max_slots, other.continuous_batching, other.prefill_budget) != (
            first.batch_width,
            first.max_slots,
            first.continuous_batching,
            first.prefill_budget,
        ):
            raise InputError(
                file,
                f"line {other.line}",
                f"a second startup line disagrees with line {first.line} (one run is one server process)",
            )
    return first


@dataclass(frozen=True)
class Clamp:
    """One requested setting the server did not honour."""

    setting: str  # the server_args key
    requested: int
    ran: int
    explanation: str


def detect_clamps(requested: Mapping[str, object], ran: StartupLine) -> list[Clamp]:
    """Compare requested ``server_args`` with the startup line; one :class:`Clamp` per mismatch.

    ``requested`` is the arm's ``server_args`` (``max_batch_size``, ``prefill_token_budget``; other
    keys ignored, missing keys not checked). Seed 1536681 batch arm: asked 8, ran width 1 with
    continuous_batching=no → clamp; budget 4096 → 0 → clamp.
    """
    out: list[Clamp] = []

    def as_int(key: str) -> int | None:
        v = requested.get(key)
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)) or int(v) != v:
            raise InputError(None, f"server_args.{key}", f"expected an integer, got {v!r}")
        return int(v)

    mbs = as_int("max_batch_size")
    if mbs is not None and mbs != ran.batch_width:
        why = f"requested max_batch_size {mbs}, the server ran batch width {ran.batch_width}"
        if not ran.continuous_batching and ran.batch_width == 1:
            why += (
                f" — the engine declares max_slots={ran.max_slots} but continuous_batching=no, "
                "so the scheduler clamps every batch to width 1"
            )
        elif ran.batch_width == ran.max_slots and mbs > ran.max_slots:
            why += f" — capped at the engine's max_slots={ran.max_slots}"
        out.append(Clamp("max_batch_size", mbs, ran.batch_width, why + f" (log line {ran.line})"))
    budget = as_int("prefill_token_budget")
    if budget is not None and budget != ran.prefill_budget:
        why = f"requested prefill_token_budget {budget}, the server ran prefill budget {ran.prefill_budget}"
        if ran.prefill_budget == 0:
            why += " — the budget was zeroed (the engine does not report chunked prefill)"
        out.append(Clamp("prefill_token_budget", budget, ran.prefill_budget, why + f" (log line {ran.line})"))
    return out


# ---- per arm: did its server run what was requested (the campaign analysis's clamps) ------------------
@dataclass(frozen=True)
class ClampResult:
    """One arm's server: the start-up line read, and the settings it clamped (requested -> ran)."""

    arm: str
    run: str
    line: str
    clamped: bool
    clamps: tuple[dict[str, Any], ...]
    detail: str

    @property
    def verdict(self) -> str:
        return "clamped" if self.clamped else "as requested"

    def as_dict(self) -> dict[str, Any]:
        return {
            "arm": self.arm,
            "run": self.run,
            "clamped": self.clamped,
            "verdict": self.verdict,
            "clamps": list(self.clamps),
            "line": self.line,
            "detail": self.detail,
        }


def campaign_clamps(camp: Any) -> list[ClampResult]:
    """Per arm with a server log: what its server's start-up line says ran, against what the arm
    requested (``server_args``)."""
    out = []
    for arm in camp.arms:
        runs = [r for r in camp.runs if r.arm == arm and r.server_log.exists()]
        if not runs:
            continue
        r = runs[0]
        st = parse_startup_line(camp.server_log_text(r) or "", r.server_log)
        cl = detect_clamps(camp.arms[arm].get("server_args", {}), st)
        out.append(
            ClampResult(
                arm,
                r.id,
                st.text,
                bool(cl),
                tuple({"setting": c.setting, "requested": c.requested, "ran": c.ran} for c in cl),
                "; ".join(c.explanation for c in cl) or "the server ran what was requested",
            )
        )
    return out
