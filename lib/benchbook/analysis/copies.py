"""Runs of a campaign that are copies of another run: counted once, never as a repeat.

A copy measures no run-to-run spread: two byte-identical run folders in one arm (or the same folder
with its timestamps, file names or paths changed) would give the noise yardstick a spread of 0, and
then any difference would be "a result". The baseline page's repeats (the whole-request runs behind
the noise yardstick, the phase runs of an arm's server processes, the results ladder's processes) are
checked here with the compare section's rule — identity and data, not bytes:

* results runs of a server process (the ladder's): :func:`benchbook.analysis.identity.find_duplicates`
  over every benchmark run of the campaign, exactly as the compare section collapses its duplicates
  (every identity field both record agrees, and identical per-request records or run-level figures);
  results runs outside the ladder are the compare section's to list, once;
* phase runs of one arm (its configuration: the identity): every sample (prompt class, repeat) with
  the same token counts and the same client and engine times (within :data:`TIME_ABS` s): figures
  read from two processes' counters never agree to the microsecond on every sample;
* whole-request runs of one arm: every request (round, scenario, n, index) with the same token
  counts, finish reason and latency within :data:`TIME_ABS` s — the start and end times themselves
  may differ (a copy shifted in time is still a copy).

The same data in two arms is no repeat of either: it cannot make a spread, and the comparison of
the two arms shows no difference (within noise), so it is left to the pages.

The copy (every member but the kept one, the first in manifest order — for results runs the richest,
as the compare section keeps it) is left out of the cells, the yardsticks and the ladder, and listed:
``validate`` prints it as a ``todo`` line, every page's findings say it once per copied process.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from benchbook.analysis import identity as ident
from benchbook.analysis.tables import tables_for

if TYPE_CHECKING:
    import polars as pl

    from benchbook.ingest.campaign import Campaign

#: times (s) that agree within this are "the same" for a copy (a shifted epoch time loses ~0.5 µs)
TIME_ABS = 1e-6
TIME_REL = 1e-9

PHASE_KEYS = ("prompt_class", "repeat")
PHASE_TIMES = ("client_total_s", "prefill_s", "decode_s", "engine_total_s")
PHASE_COUNTS = ("prompt_tokens", "generated_tokens", "warmup")
REQUEST_KEYS = ("round", "scenario", "n", "index", "prompt_class")
REQUEST_TIMES = ("latency",)
REQUEST_COUNTS = ("prompt_tokens", "completion_tokens", "finish_reason")


@dataclass(frozen=True)
class Copy:
    """Run ``run`` is a copy of run ``of`` (the kept one): ``why`` says which data agree."""

    run: str
    of: str
    harness: str  # results | phases | requests
    why: str
    file: str  # the copy's file (what a reader removes)
    process: str | None = None  # the copy's server process (init's arm/run layout), if any
    of_process: str | None = None
    where: str = "$"  # results runs: the benchmark run's location in its file

    def text(self) -> str:
        return (
            f"run {self.run!r} is a copy of run {self.of!r} ({self.why}): counted once, not as a repeat "
            "(a copy measures no run-to-run spread); remove it or measure the run again"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "of": self.of,
            "harness": self.harness,
            "why": self.why,
            "file": self.file,
            "process": self.process,
            "of_process": self.of_process,
            "text": self.text(),
        }


def find_copies(
    results: Sequence[tuple[str, str, Any]] = (),
    phases: pl.DataFrame | None = None,
    requests: pl.DataFrame | None = None,
    processes: dict[str, str] | None = None,
    files: dict[str, str] | None = None,
) -> list[Copy]:
    """Every copy among a campaign's runs. ``results``: ``(run id, file, BenchmarkRun)`` in manifest
    order; ``phases``: ``Campaign.phase_samples``; ``requests``: ``Campaign.requests``; ``processes``:
    run id → server process (``baseline.run_processes``); ``files``: run id → the file a reader would
    remove (phase and whole-request runs)."""
    procs = processes or {}
    named = files or {}
    out: list[Copy] = []
    if len(results) >= 2:
        for d in ident.find_duplicates([b for _, _, b in results]):
            kept = results[d.kept][0]
            for i in d.members:
                rid, f, b = results[i]
                # two files of one results run, or runs outside the ladder (no server process), are the
                # compare section's duplicates: listed there, once
                if i != d.kept and rid != kept and rid in procs:
                    out.append(Copy(rid, kept, "results", d.why, str(f), procs.get(rid), procs.get(kept), b.location))
    if phases is not None and phases.height:
        out += _frame_copies(phases, "phases", PHASE_KEYS, PHASE_TIMES, PHASE_COUNTS, "phase samples", procs, named)
    if requests is not None and requests.height:
        out += _frame_copies(
            requests, "requests", REQUEST_KEYS, REQUEST_TIMES, REQUEST_COUNTS, "requests", procs, named
        )
    return out


def _frame_copies(frame, harness, keys, times, counts, what, procs, named) -> list[Copy]:
    import polars as pl

    runs = list(dict.fromkeys(frame["run"].to_list()))
    if len(runs) < 2:
        return []
    arm = dict(frame.select("run", "arm").unique(subset="run").iter_rows()) if "arm" in frame.columns else {}
    keys = [k for k in keys if k in frame.columns]
    per = {r: frame.filter(pl.col("run") == r).sort(keys, nulls_last=True) for r in runs}
    copy_of: dict[str, str] = {}
    out = []
    for j, b in enumerate(runs):
        for a in runs[:j]:
            if a in copy_of or arm.get(a) != arm.get(b):  # identity: one arm's configuration
                continue
            if _same_rows(per[a], per[b], keys, times, counts):
                copy_of[b] = a
                why = f"the same {per[b].height} {what}: token counts and times equal within {TIME_ABS:g} s"
                out.append(Copy(b, a, harness, why, named.get(b, b), procs.get(b), procs.get(a)))
                break
    return out


def _same_rows(x, y, keys, times, counts) -> bool:
    import polars as pl

    if x.height != y.height or x.height == 0:
        return False
    if not x.select(keys).equals(y.select(keys)):
        return False
    for c in counts:
        if c in x.columns and not x[c].equals(y[c]):
            return False
    for c in times:
        if c not in x.columns:
            continue
        a, b = x[c], y[c]
        if not a.is_null().equals(b.is_null()):
            return False
        both = pl.DataFrame({"a": a, "b": b}).drop_nulls()
        tol = TIME_ABS + TIME_REL * both.select(pl.max_horizontal(pl.col("a").abs(), pl.col("b").abs())).to_series()
        if both.height and not bool(((both["a"] - both["b"]).abs() <= tol).all()):
            return False
    return True


def campaign_copies(camp: Campaign) -> list[Copy]:
    """:func:`find_copies` over a loaded campaign: every harness's copies, in that order."""
    return [c for h in ("results", "phases", "requests") for c in copies_of(camp, h)]


def copies_of(camp: Campaign, harness: str) -> list[Copy]:
    """The copies among one harness's runs (computed once per campaign and harness: the results
    ladder needs no phase split)."""
    return tables_for(camp).derived(("copies", harness), lambda: _copies_of(camp, harness))


def _copies_of(camp: Campaign, harness: str) -> list[Copy]:
    procs = {r["id"]: r["process"] for r in camp.manifest.get("runs", []) if r.get("process")}
    if len(camp.runs_of(harness)) < 2:
        return []
    if harness == "results":
        from benchbook.analysis.results import benchmark_runs

        return find_copies(
            [(rr.id, f, b) for rr in camp.results_runs for f, b in benchmark_runs(camp, rr)], processes=procs
        )
    if harness == "phases":
        files = {r.id: str(r.file) for r in camp.runs_of("phases")}
        return find_copies(phases=camp.phase_samples, processes=procs, files=files)
    if harness == "requests":
        files = {r.id: str(camp.requests_file(r)) for r in camp.runs_of("requests")}
        return find_copies(requests=camp.requests, processes=procs, files=files)
    return []


def copied_runs(camp: Campaign, harness: str) -> set[str]:
    """Run ids of ``harness`` runs that are copies (left out of cells, yardsticks and ladders)."""
    return {c.run for c in copies_of(camp, harness)}


def copied_benchmarks(camp: Campaign) -> set[tuple[str, str, str]]:
    """``(run id, file, location)`` of results runs' benchmark runs that are copies."""
    return {(c.run, c.file, c.where) for c in copies_of(camp, "results")}


def lines(copies: Sequence[Copy]) -> list[str]:
    """One line per copied server process (its runs together), else one per copied run."""
    groups: dict[tuple[str, str], list[Copy]] = {}
    single: list[Copy] = []
    for c in copies:
        if c.process and c.of_process and c.process != c.of_process:
            groups.setdefault((c.process, c.of_process), []).append(c)
        else:
            single.append(c)
    out = []
    for (p, q), cs in groups.items():
        runs = list(dict.fromkeys(c.run for c in cs))
        out.append(
            f"server process {p} is a copy of {q} ({len(runs)} run{'s' * (len(runs) != 1)}: "
            f"{', '.join(runs[:4])}{', …' if len(runs) > 4 else ''}; {cs[0].why}): counted once, not as a "
            "repeat (a copy measures no run-to-run spread); remove it or run the process again"
        )
    return out + [c.text() for c in single]
