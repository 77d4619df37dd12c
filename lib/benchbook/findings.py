"""What analyses and loaders report besides figures: checks, exclusions and findings.

A *check* is a named consistency test with a status (``pass``, ``warn`` or ``fail``), a detail in
words and the figures it compared (``figures``: engine vs client, measured vs threshold, a ladder's
flatness, …; read as attributes too, ``check.gap``); an *exclusion* is a sample left out of the
statistics, with the file, the place and why. They are the one model for both, in every analysis
(baseline, reconciliation, Little's law, PD); they end up as plain dicts in the summary JSON
(``as_dict``: name, status, detail, then the figures) and as rows on the pages. Kept free of heavy
imports so every reader can use them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # "pass" | "warn" | "fail"
    detail: str
    figures: Mapping[str, Any] = field(default_factory=dict)

    def __getattr__(self, key: str) -> Any:  # the figures read as attributes: check.gap, check.client
        figures = self.__dict__.get("figures") or {}
        if key in figures:
            return figures[key]
        raise AttributeError(key)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "detail": self.detail, **self.figures}


@dataclass
class Exclusion:
    file: str
    sample: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        return {"file": self.file, "sample": self.sample, "reason": self.reason}


# ---- the findings box: what a page (and the index) opens with ------------------------------------

#: a finding's kinds in the box's order: a failed check first (a figure it may invalidate is not worth
#: reading before it), then the warnings (grouped by cause), then results worst first, then what
#: could not be judged
FINDING_KINDS: tuple[str, ...] = ("fail", "warn", "regression", "improvement", "result", "unjudged")
MAX_RESULT_LINES = 8  # more results than this: the rest are counted and linked, listed in their section


def headline(n_results: int, n_regressions: int, n_failed: int, n_unjudged: int, n_warnings: int = 0) -> str:
    """The counts in one line, e.g. "3 results (1 regression), 2 failed checks, 1 warning" (shown on
    the index)."""
    parts = [
        f"{n_results} result{'s' * (n_results != 1)}"
        + (f" ({n_regressions} regression{'s' * (n_regressions != 1)})" if n_regressions else "")
    ]
    if n_failed:
        parts.append(f"{n_failed} failed check{'s' * (n_failed != 1)}")
    if n_warnings:
        parts.append(f"{n_warnings} warning{'s' * (n_warnings != 1)}")
    if n_unjudged:
        parts.append(f"{n_unjudged} not judged")
    return ", ".join(parts)


_SECTION = re.compile(r"^[a-z][a-z0-9\-]*$")


def anchor(kind: str, name: str) -> str:
    """The id a page gives the row of ``name`` (a window, a run) and a finding links to:
    ``win-batch-p1-conc8`` (ASCII letters and digits, dashes elsewhere)."""
    out = "".join(ch if ch.isascii() and ch.isalnum() else "-" for ch in name.lower())
    return f"{kind}-" + "-".join(x for x in out.split("-") if x)


@dataclass(frozen=True)
class Finding:
    """One line of a findings box: its kind (:data:`FINDING_KINDS`), the sentence with its figure,
    and the page section that holds the detail. ``links``: (label, anchor) of each window or run the
    line covers (a line of one cause names each once, e.g. with its cached share); ``where``: (page
    kind, section) of every page that shows the detail — a box on another page links to the first —
    (empty: the page the box is on, at ``section``); ``cause``: what the line is about (``prefix
    cache``, ``queueing`` …) for the warnings and failed checks it groups."""

    kind: str
    text: str
    section: str
    links: tuple[tuple[str, str], ...] = ()
    where: tuple[tuple[str, str], ...] = ()
    cause: str = ""

    def __post_init__(self) -> None:
        if self.kind not in FINDING_KINDS:
            raise ValueError(f"Finding: unknown kind {self.kind!r}; choose from {', '.join(FINDING_KINDS)}")
        for sec in (self.section, *(a for _, a in self.links), *(s for _, s in self.where)):
            if not _SECTION.match(sec):
                raise ValueError(f"Finding: section {sec!r} must match [a-z][a-z0-9-]*")

    @property
    def pages(self) -> tuple[str, ...]:
        return tuple(p for p, _ in self.where)

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"kind": self.kind, "text": self.text, "section": self.section}
        if self.links:
            d["links"] = [{"label": a, "anchor": b} for a, b in self.links]
        if self.where:
            d["where"] = [{"page": p, "section": sec} for p, sec in self.where]
        if self.cause:
            d["cause"] = self.cause
        return d


Line = tuple[str, str] | Finding  # (sentence, section), or a finding made whole


def _line(kind: str, x: Line) -> Finding:
    if isinstance(x, Finding):
        return x if x.kind == kind else Finding(kind, x.text, x.section, x.links, x.where, x.cause)
    return Finding(kind, x[0], x[1])


@dataclass(frozen=True)
class Findings:
    """A findings box, decided by the analysis: failed checks first, then warnings (one line per
    cause), then results worst first (at most :data:`MAX_RESULT_LINES`, then a line counting the
    rest), then what was not judged; the counts and the headline, and the rules every verdict on the
    campaign's pages was made by (``rules``: sentences, stated once on the first screen). Pages format
    it; the index and ``summary --json`` read the same values."""

    lines: tuple[Finding, ...]
    results: int
    regressions: int
    improvements: int
    failed_checks: int
    unjudged: int
    warnings: int = 0
    rules: tuple[str, ...] = ()

    @property
    def headline(self) -> str:
        return headline(self.results, self.regressions, self.failed_checks, self.unjudged, self.warnings)

    def as_dict(self) -> dict[str, Any]:
        return {
            "headline": self.headline,
            "results": self.results,
            "regressions": self.regressions,
            "improvements": self.improvements,
            "failed_checks": self.failed_checks,
            "warnings": self.warnings,
            "unjudged": self.unjudged,
            "rules": list(self.rules),
            "lines": [f.as_dict() for f in self.lines],
        }

    @classmethod
    def build(
        cls,
        *,
        results: Iterable[
            tuple[str, float, str, str] | tuple[str, float, Finding] | tuple[str, float, Finding, int]
        ] = (),
        failed: Iterable[Line] = (),
        unjudged: Iterable[Line] = (),
        warnings: Iterable[Line] = (),
        results_section: str | None = None,
        rules: Iterable[str] = (),
    ) -> Findings:
        """Select and order: the failed checks lead (a check that failed may invalidate the figures
        the results rest on), then the warnings, then the results, then what could not be judged.
        ``failed``/``warnings``/``unjudged``: (sentence, section) or a :class:`Finding` per line, in
        the order given; ``results``: (direction "regression" | "improvement" | other, speedup (> 1 is
        better), sentence with its figure, section) — or (direction, speedup, Finding[, how many
        decisions the line states]) — for every comparison called a result, shown worst first
        (regressions by speedup ascending, then the rest by speedup descending)."""
        res = [
            (r[0], r[1], r[2], r[3] if len(r) > 3 else 1)
            if isinstance(r[2], Finding)
            else (r[0], r[1], Finding("result", r[2], r[3]), 1)  # fmt: skip
            for r in results
        ]  # (direction, speedup, line, how many decisions the line states)
        regs = sorted((r for r in res if r[0] == "regression"), key=lambda r: r[1])
        imps = sorted((r for r in res if r[0] != "regression"), key=lambda r: -r[1])
        fails, warns, unj = list(failed), list(warnings), list(unjudged)
        lines = [_line("regression", f) for _, _, f, _ in regs]
        lines += [_line("improvement" if d == "improvement" else "result", f) for d, _, f, _ in imps]
        kept = lines[:MAX_RESULT_LINES]
        if len(lines) > len(kept):
            more = len(lines) - len(kept)
            section = results_section or kept[-1].section
            kept.append(
                Finding(
                    "result",
                    f"… and {more} more result{'s' * (more != 1)}, each in its section",
                    section,
                    where=kept[-1].where,
                )  # fmt: skip
            )
        shown = [_line("fail", f) for f in fails] + [_line("warn", f) for f in warns] + kept
        shown += [_line("unjudged", f) for f in unj]
        return cls(
            tuple(shown),
            results=sum(r[3] for r in res),
            regressions=sum(r[3] for r in regs),
            improvements=sum(r[3] for r in res if r[0] == "improvement"),
            failed_checks=len(fails),
            unjudged=len(unj),
            warnings=len(warns),
            rules=tuple(rules),
        )
