"""What one analysis of a campaign computed once: its tables, and the samples it left out.

A campaign's analysis asks for the same tables many times (the phase cells of every arm, the
whole-request cells, the results ladder, the phase audits, the engine gauges, the server settings of
each process, the GPU's name). :class:`AnalysisTables` holds them, and the exclusions the analyses
add while computing them (a run with no samples after the warm-up discard, a prompt served from the
prefix cache, a Prometheus source this run may not read), for **one** analysis: the
:class:`benchbook.analysis.campaign_analysis.CampaignAnalysis` owns it (``an.tables``). The ingest
``Campaign`` holds what loading found (its runs, and the samples loading left out) and nothing an
analysis made, so two analyses of one loaded campaign with other settings (another warm-up count,
another rule) never see each other's tables or exclusions, and what an analysis excludes does not
depend on which analysis ran first.

While an analysis computes — :func:`campaign_analysis.analyse`, and each lazily computed view of the
object afterwards (``CampaignAnalysis._memo``) — its tables are *active* (``with tables.active():``)
and the analysis functions reach them through :func:`tables_for`. Outside an analysis (a test calling
``baseline.phase_cells`` on a loaded campaign) :func:`tables_for` gives tables of that call only:
the table is computed, nothing is kept. A caller that wants several tables of one campaign computed
once without a whole analysis (``history.headline``) makes its own ``AnalysisTables(camp)`` and
holds it active.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from benchbook.findings import Exclusion
    from benchbook.ingest.campaign import Campaign

T = TypeVar("T")

_ACTIVE: ContextVar[tuple[AnalysisTables, ...]] = ContextVar("benchbook_analysis_tables", default=())


@dataclass(eq=False)
class AnalysisTables:
    """One analysis's tables of ``camp`` and what it excluded (see the module doc)."""

    camp: Campaign
    memo: dict[Any, Any] = field(default_factory=dict, repr=False)
    excluded: list[Exclusion] = field(default_factory=list)
    computed: int = 0  # tables computed (a memo miss); asks answered from the memo are ``asked - computed``
    asked: int = 0

    @contextlib.contextmanager
    def active(self) -> Iterator[AnalysisTables]:
        """Make these the tables :func:`tables_for` gives for ``camp``, for the ``with`` block (an
        analysis of another campaign inside it gets its own; nested blocks restore the outer ones)."""
        token = _ACTIVE.set((self, *_ACTIVE.get()))
        try:
            yield self
        finally:
            _ACTIVE.reset(token)

    def derived(self, key: Any, compute: Callable[[], T]) -> T:
        """``compute()``, once per key in this analysis."""
        self.asked += 1
        if key not in self.memo:
            self.computed += 1
            self.memo[key] = compute()
        return self.memo[key]

    def exclude(self, e: Exclusion) -> None:
        """Leave a sample out, once (the same file, sample and reason asked again is the same exclusion)."""
        if all((x.file, x.sample, x.reason) != (e.file, e.sample, e.reason) for x in self.excluded):
            self.excluded.append(e)


def _active(camp: Campaign) -> AnalysisTables | None:
    return next((t for t in _ACTIVE.get() if t.camp is camp), None)


def tables_for(camp: Campaign) -> AnalysisTables:
    """The active tables of ``camp`` (the analysis computing now); outside one, tables of this call only."""
    return _active(camp) or AnalysisTables(camp)


def holding(camp: Campaign) -> contextlib.AbstractContextManager[AnalysisTables]:
    """The active tables of ``camp`` if an analysis of it is computing, else new ones held active for
    the ``with`` block (a caller that asks for several tables of one campaign outside an analysis)."""
    t = _active(camp)
    return contextlib.nullcontext(t) if t is not None else AnalysisTables(camp).active()
