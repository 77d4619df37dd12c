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
#: reading before it), then results worst first, then what could not be judged
FINDING_KINDS: tuple[str, ...] = ("fail", "regression", "improvement", "result", "unjudged")
MAX_RESULT_LINES = 8  # more results than this: the rest are counted and linked, listed in their section


def headline(n_results: int, n_regressions: int, n_failed: int, n_unjudged: int) -> str:
    """The counts in one line, e.g. "3 results (1 regression), 2 failed checks" (shown on the index)."""
    parts = [
        f"{n_results} result{'s' * (n_results != 1)}"
        + (f" ({n_regressions} regression{'s' * (n_regressions != 1)})" if n_regressions else "")
    ]
    if n_failed:
        parts.append(f"{n_failed} failed check{'s' * (n_failed != 1)}")
    if n_unjudged:
        parts.append(f"{n_unjudged} not judged")
    return ", ".join(parts)


@dataclass(frozen=True)
class Finding:
    """One line of a findings box: its kind (:data:`FINDING_KINDS`), the sentence with its figure,
    and the page section that holds the detail."""

    kind: str
    text: str
    section: str

    def __post_init__(self) -> None:
        if self.kind not in FINDING_KINDS:
            raise ValueError(f"Finding: unknown kind {self.kind!r}; choose from {', '.join(FINDING_KINDS)}")

    def as_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "text": self.text, "section": self.section}


@dataclass(frozen=True)
class Findings:
    """A findings box, decided by the analysis: failed checks first, then results worst first (at most
    :data:`MAX_RESULT_LINES`, then a line counting the rest), then what was not judged; the counts and
    the headline. Pages format it; the index and ``summary --json`` read the same values."""

    lines: tuple[Finding, ...]
    results: int
    regressions: int
    improvements: int
    failed_checks: int
    unjudged: int

    @property
    def headline(self) -> str:
        return headline(self.results, self.regressions, self.failed_checks, self.unjudged)

    def as_dict(self) -> dict[str, Any]:
        return {
            "headline": self.headline,
            "results": self.results,
            "regressions": self.regressions,
            "improvements": self.improvements,
            "failed_checks": self.failed_checks,
            "unjudged": self.unjudged,
            "lines": [f.as_dict() for f in self.lines],
        }

    @classmethod
    def build(
        cls,
        *,
        results: Iterable[tuple[str, float, str, str]] = (),
        failed: Iterable[tuple[str, str]] = (),
        unjudged: Iterable[tuple[str, str]] = (),
        results_section: str | None = None,
    ) -> Findings:
        """Select and order: the failed checks lead (a check that failed may invalidate the figures
        the results rest on), then the results, then what could not be judged. ``failed``:
        (sentence, section) per failed check, in the order given; ``results``: (direction
        "regression" | "improvement" | other, speedup (> 1 is better), sentence with its figure,
        section) for every comparison called a result, shown worst first (regressions by speedup
        ascending, then the rest by speedup descending); ``unjudged``: (sentence, section) per thing
        that could not be judged."""
        res = list(results)
        regs = sorted((r for r in res if r[0] == "regression"), key=lambda r: r[1])
        imps = sorted((r for r in res if r[0] != "regression"), key=lambda r: -r[1])
        fails, unj = list(failed), list(unjudged)
        lines = [Finding("regression", t, s) for _, _, t, s in regs]
        lines += [Finding("improvement" if d == "improvement" else "result", t, s) for d, _, t, s in imps]
        kept = lines[:MAX_RESULT_LINES]
        if len(lines) > len(kept):
            more = len(lines) - len(kept)
            section = results_section or kept[-1].section
            kept.append(
                Finding("result", f"… and {more} more result{'s' * (more != 1)}, listed in full below", section)
            )
        shown = [Finding("fail", t, s) for t, s in fails] + kept
        shown += [Finding("unjudged", t, s) for t, s in unj]
        return cls(
            tuple(shown),
            results=len(res),
            regressions=len(regs),
            improvements=sum(r[0] == "improvement" for r in res),
            failed_checks=len(fails),
            unjudged=len(unj),
        )
