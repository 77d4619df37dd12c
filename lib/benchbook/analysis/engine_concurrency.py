"""Little's law as a real check: the engine's own in-flight count against the client's λ × W.

``benchbook capture run --every S`` snapshots the engine's ``/metrics`` before, every S seconds
during, and after a benchmark. The engine's running + waiting gauges, averaged over time across
those snapshots, are a mean concurrency L measured *independently of the client*; the client's
completion rate λ and mean end-to-end latency W come from the benchmark's result file. Little's
law says L = λ × W over one window, so the two must agree (where the tool's own "concurrency" is
λ × W by construction, e.g. SGLang's, this is the only independent check).

The window is the snapshots' span [t_first, t_last]. The gauges are sampled, not integrated: the
time average uses the trapezoid rule between consecutive snapshots (linear interpolation of the
gauge between scrapes), so a window needs at least two snapshots, and a gauge that moves faster
than the snapshot interval is only approximated — the check states the number of snapshots and
their largest gap. When that gap is longer than a request's mean time W, whole requests can fall
between two scrapes — and they do: a server busy streaming tokens answers ``/metrics`` late, so
scrapes bunch up in idle stretches and the average comes out low. The check is then not judged
(``warn``, never ``fail``), and says why. λ is the client's completed requests divided by the *same* window (every
request falls inside it, because the first and last snapshots bracket the command), so L and λW
share their denominator. Running and waiting are summed over every series of the server (engine
ranks): a deployment's in-flight requests are all of them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from benchbook.analysis import enginemetrics, littles
from benchbook.errors import InputError
from benchbook.metrics.profiles import EngineProfile
from benchbook.metrics.prometheus import Snapshot

# The engine's gauge is sampled while the client's W is measured per request: agreement within 10 %
# passes, within 25 % warns (coarse sampling, the tool's own warm-up request), beyond fails.
TOLERANCE = 0.10
FAIL_TOLERANCE = 0.25


@dataclass(frozen=True)
class GaugeSample:
    t: float  # seconds (any clock, same for all samples)
    in_flight: float  # running + waiting


@dataclass(frozen=True)
class EngineConcurrency:
    t0: float
    t1: float
    snapshots: int
    max_gap_s: float
    mean_in_flight: float  # L, time-averaged (trapezoid)
    peak_in_flight: float
    completed: int  # the client's successful requests
    completion_rate: float  # λ = completed / (t1 − t0)
    mean_e2e_s: float  # W, the client's
    check: littles.LittlesCheck

    @property
    def duration_s(self) -> float:
        return self.t1 - self.t0


def in_flight(snap: Snapshot, profile: EngineProfile) -> float:
    """running + waiting in one scrape, summed over every series; InputError when the profile has no gauge."""
    total = 0.0
    for q in ("running", "waiting"):
        if not profile.has(q):
            raise InputError(
                snap.source, q, f"engine profile {profile.name} has no {q} gauge: no engine-side concurrency"
            )
        vals = enginemetrics.values(snap, profile, q)
        if not vals:
            raise InputError(snap.source, profile.ref(q).name, f"the {q} gauge is missing from this snapshot")
        total += sum(vals.values())
    return total


def time_average(samples: Sequence[GaugeSample]) -> float:
    """∫ n(t) dt / (t_last − t_first), n linear between samples (trapezoid rule)."""
    pts = sorted(samples, key=lambda s: s.t)
    if len(pts) < 2:
        raise ValueError("need at least two snapshots for a time average")
    span = pts[-1].t - pts[0].t
    if span <= 0:
        raise ValueError("the snapshots span no time")
    area = sum((b.t - a.t) * (a.in_flight + b.in_flight) / 2 for a, b in zip(pts, pts[1:]))
    return area / span


def engine_concurrency(
    samples: Iterable[GaugeSample],
    completed: int,
    mean_e2e_s: float,
    *,
    tolerance: float = TOLERANCE,
    fail_tolerance: float = FAIL_TOLERANCE,
) -> EngineConcurrency:
    """L from the engine's gauges against λ × W from the client, over the snapshots' window."""
    pts = sorted(samples, key=lambda s: s.t)
    L = time_average(pts)
    t0, t1 = pts[0].t, pts[-1].t
    if completed < 0 or mean_e2e_s < 0:
        raise ValueError("negative completions or latency")
    lam = completed / (t1 - t0)
    gap = max(b.t - a.t for a, b in zip(pts, pts[1:]))
    chk = littles.check(
        lam,
        mean_e2e_s,
        L,
        tolerance=tolerance,
        fail_tolerance=fail_tolerance,
        concurrency_source=f"engine running + waiting, time-averaged over {len(pts)} snapshots "
        f"(largest gap {gap:.3g} s)",
    )
    chk = unresolved(chk, gap, mean_e2e_s)
    return EngineConcurrency(t0, t1, len(pts), gap, L, max(p.in_flight for p in pts), completed, lam, mean_e2e_s, chk)


def unresolved(chk: littles.LittlesCheck, max_gap_s: float, mean_e2e_s: float) -> littles.LittlesCheck:
    """``chk`` unjudged (a fail becomes warn, with the reason) when the snapshots' largest gap is longer
    than a request's mean time: sampled that sparsely, the gauge cannot show every request."""
    if max_gap_s <= mean_e2e_s:
        return chk
    why = (
        f"not judged: the largest gap between snapshots ({max_gap_s:.3g} s) is longer than a request's mean time "
        f"W ({mean_e2e_s:.3g} s), so whole requests can fall between scrapes (a busy server answers /metrics late)"
    )
    return dataclasses.replace(
        chk, status="warn" if chk.status == "fail" else chk.status, detail=f"{chk.detail}; {why}"
    )


def samples_from_snapshots(snaps: Iterable[tuple[float, Snapshot]], profile: EngineProfile) -> list[GaugeSample]:
    """(time, parsed scrape) pairs -> gauge samples."""
    return [GaugeSample(t, in_flight(s, profile)) for t, s in snaps]
