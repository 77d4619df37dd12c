"""Little's law: mean concurrency L against completion rate λ × mean end-to-end latency W.

Two uses, kept apart because they mean different things:

* **From a summary's own figures** (``λ`` = Request Throughput, ``W`` = mean E2EL, ``L`` = the
  tool's mean system concurrency). AISBench computes its Concurrency as Σ E2EL / duration, which is
  λ × W by construction, so agreement here checks that the figures belong to one window (and catch
  transcription slips); it is not an independent measurement. The seed says as much.
  ``λ × W`` must also stay under the client's concurrency limit (C128): in-flight requests cannot
  average more than the cap allows.
* **Measured from per-request records**: L as the time-weighted number of requests in flight over
  the window, counted from start/end times (failed requests occupy a slot too). That *can*
  disagree with the summary's λ × W — e.g. when failures held slots, or the window's duration or
  request set differs from what the tool reported.

Status: ``pass`` when the relative gap ``|L − λW| / max(L, λW)`` is within ``tolerance``, ``warn``
up to ``fail_tolerance``, ``fail`` beyond (and ``fail`` when λW exceeds the limit by more than
``tolerance``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from benchbook.errors import InputError
from benchbook.findings import Check
from benchbook.numfmt import fmt_num

TOLERANCE = 0.02  # the summary's L is λW up to rounding: 2 % is generous
FAIL_TOLERANCE = 0.10

__all__ = [
    "LittlesCheck",
    "RecordsWindow",
    "implied_concurrency",
    "time_weighted_in_flight",
    "records_window",
    "check",
    "TOLERANCE",
    "FAIL_TOLERANCE",
]


def implied_concurrency(completion_rate: float, mean_e2e_s: float) -> float:
    """λ × W (2.5975 req/s × 42.9285 s ≈ 111.507)."""
    if completion_rate < 0 or mean_e2e_s < 0:
        raise InputError(None, None, f"negative rate or latency ({completion_rate}, {mean_e2e_s})")
    return completion_rate * mean_e2e_s


def time_weighted_in_flight(
    starts: Sequence[float], ends: Sequence[float], t0: float | None = None, t1: float | None = None
) -> float:
    """Mean number of requests in flight over [t0, t1] (default: first start to last end).

    ``∫ n(t) dt / (t1 − t0)`` with ``n(t)`` the count of requests with start ≤ t < end, which is the
    sum of each request's overlap with the window divided by the window's length.
    """
    if len(starts) != len(ends):
        raise ValueError("starts and ends differ in length")
    if not starts:
        raise ValueError("no requests")
    lo = min(starts) if t0 is None else t0
    hi = max(ends) if t1 is None else t1
    if hi <= lo:
        raise ValueError(f"empty window [{lo}, {hi}]")
    busy = sum(max(0.0, min(e, hi) - max(s, lo)) for s, e in zip(starts, ends))
    return busy / (hi - lo)


@dataclass(frozen=True)
class RecordsWindow:
    """Little's-law quantities measured from per-request records over one window."""

    t0: float
    t1: float
    in_flight: float  # L, time-weighted
    completions: int  # successful requests that ended inside the window
    completion_rate: float  # λ = completions / (t1 − t0)
    mean_e2e_s: float | None  # W over those completions

    @property
    def duration_s(self) -> float:
        return self.t1 - self.t0

    @property
    def implied(self) -> float | None:
        return None if self.mean_e2e_s is None else self.completion_rate * self.mean_e2e_s


def records_window(
    starts: Sequence[float],
    ends: Sequence[float],
    success: Sequence[bool],
    t0: float | None = None,
    t1: float | None = None,
) -> RecordsWindow:
    """L, λ and W from request records over [t0, t1] (default: first start to last end)."""
    lo = min(starts) if t0 is None else t0
    hi = max(ends) if t1 is None else t1
    L = time_weighted_in_flight(starts, ends, lo, hi)
    done = [e - s for s, e, ok in zip(starts, ends, success) if ok and lo <= e <= hi]
    lam = len(done) / (hi - lo)
    W = sum(done) / len(done) if done else None
    return RecordsWindow(lo, hi, L, len(done), lam, W)


@dataclass(frozen=True)
class LittlesCheck:
    status: str  # pass | warn | fail
    concurrency: float | None  # L
    implied: float  # λ × W
    gap: float | None  # |L − λW| / max(L, λW)
    limit: float | None
    detail: str

    def as_check(self, name: str) -> Check:
        """This result as the one check model, with its figures."""
        return Check(
            name,
            self.status,
            self.detail,
            {"concurrency": self.concurrency, "implied": self.implied, "gap": self.gap, "limit": self.limit},
        )


def _worse(a: str, b: str) -> str:
    order = {"pass": 0, "warn": 1, "fail": 2}
    return a if order[a] >= order[b] else b


def check(
    completion_rate: float,
    mean_e2e_s: float,
    concurrency: float | None = None,
    *,
    limit: float | None = None,
    tolerance: float = TOLERANCE,
    fail_tolerance: float = FAIL_TOLERANCE,
    concurrency_source: str = "reported mean concurrency",
    independent: str | None = None,
) -> LittlesCheck:
    """Compare L with λ × W (and λ × W with the concurrency limit); see the module docstring.

    ``independent``: None when L was measured apart from the client's λ and W (the engine's in-flight
    gauges, requests counted from their own times); else why it was not (the tool's Concurrency is
    Σ E2E ÷ duration). A check with nothing independent to hold λ × W against — no L, or an L that is
    λ × W by construction — is not judged (``warn``, "not judged: …"), never a pass; a limit exceeded or
    a disagreement still fails (the figures cannot belong to one window)."""
    if not 0 <= tolerance <= fail_tolerance:
        raise ValueError("need 0 <= tolerance <= fail_tolerance")
    lw = implied_concurrency(completion_rate, mean_e2e_s)
    rate, e2e = fmt_num(completion_rate, 4, sig=7, trim=True), fmt_num(mean_e2e_s, 4, sig=7, trim=True)
    parts = [f"λ × W = {rate} req/s × {e2e} s = {lw:.3f}"]  # the inputs as recorded: 32.764, not 32.7640
    status = "pass"
    gap = None
    if concurrency is not None:
        gap = abs(concurrency - lw) / max(concurrency, lw) if max(concurrency, lw) > 0 else 0.0
        s = "pass" if gap <= tolerance else "warn" if gap <= fail_tolerance else "fail"
        status = _worse(status, s)
        parts.append(
            f"{concurrency_source} L = {concurrency:.3f}; gap {gap * 100:.2f} % "
            f"(pass ≤ {tolerance * 100:g} %, fail > {fail_tolerance * 100:g} %)"
        )
    else:
        parts.append("no mean concurrency recorded: λ × W is an implied concurrency, not an independent measurement")
    if limit is not None:
        if lw > limit * (1 + tolerance):
            status = "fail"
            parts.append(f"exceeds the concurrency limit {limit:g}: impossible for one window")
        else:
            parts.append(f"within the concurrency limit {limit:g}")
    why = "no concurrency measured apart from λ and W" if concurrency is None else independent
    if why and status == "pass":
        status = "warn"
        parts.append(f"not judged: {why}, so agreement is not a check of Little's law")
    return LittlesCheck(status, concurrency, lw, gap, limit, "; ".join(parts))
