"""The baseline page's figures, computed from a loaded campaign.

Everything the baseline page (and ``benchbook summary``) shows comes from here: phase-split cells,
whole-request rows (single request, the 2/4/8 ladder, the interleave), the noise yardstick, the
comparisons between arms with their verdicts, and the checks. The statistics themselves live in
``stats``/``verdict``/``ladder``/``memory``/``clamps``; this module only feeds them campaign tables.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from benchbook.analysis import stats
from benchbook.analysis.copies import copied_runs
from benchbook.analysis.tables import tables_for
from benchbook.analysis.verdict import ZERO_SPREAD, Evidence, compare, decide, typed_fields
from benchbook.errors import InputError
from benchbook.findings import Check, Exclusion

if TYPE_CHECKING:
    import polars as pl

    from benchbook.ingest.campaign import Campaign

# metric -> (unit, higher_is_better, digits, label)
PHASE_METRICS: dict[str, tuple[str, bool, int, str]] = {
    "prefill_s": ("s", False, 3, "Prefill"),
    "prefill_tok_s": ("tok/s", True, 1, "Prefill tok/s"),
    "decode_tok_s": ("tok/s", True, 3, "Decode tok/s"),
    "engine_total_s": ("s", False, 3, "Total (engine)"),
    "client_total_s": ("s", False, 3, "Total (client)"),
}
WHOLE_METRICS: dict[str, tuple[str, bool, int, str]] = {
    "single_latency_s": ("s", False, 3, "Single request"),
    "single_tok_s": ("tok/s", True, 3, "Single request tok/s"),
    "ladder_tok_s": ("tok/s", True, 3, "Aggregate rate"),
    "ladder_wall_s": ("s", False, 3, "Ladder wall"),
    "interleave_short_latency_s": ("s", False, 3, "Interleave, short latency"),
    "mean_latency_s": ("s", False, 3, "Mean latency"),
    "worst_latency_s": ("s", False, 3, "Worst latency"),
}
NOISE_METRIC = "single_tok_s"
#: a metric's name on a page ("Decode tok/s")
METRIC_NAMES: dict[str, str] = {
    **{k: v[3] for k, v in PHASE_METRICS.items()},
    **{k: v[3] for k, v in WHOLE_METRICS.items()},
}


@dataclass(frozen=True)
class Noise:
    """The campaign's noise yardstick: the run-to-run spread between identical runs. ``prompt_class``
    is set for the phase cells' yardstick from server processes (:func:`phase_noise`): then ``runs``
    are the processes and ``values`` each process's median over its rounds."""

    arm: str
    metric: str
    runs: tuple[str, ...]
    values: tuple[float, ...]
    spread: float
    prompt_class: str | None = None

    def describe(self) -> str:
        vals = " against ".join(f"{v:.3f}" for v in self.values)
        if self.prompt_class is not None:
            return (
                f"{vals} ({METRIC_NAMES.get(self.metric, self.metric)}, {self.prompt_class} prompt: the median "
                f"over its rounds of each server process {', '.join(self.runs)} of arm {self.arm}) is "
                f"{stats.fmt_pct(self.spread)} of run-to-run variation between processes — the largest of "
                "the phase figures"
            )
        return (
            f"{vals} ({', '.join(self.runs)}: the same command run twice, arm {self.arm}) is "
            f"{stats.fmt_pct(self.spread)} of run-to-run variation on identical inputs"
        )

    @property
    def source(self) -> str:
        """Where the spread came from, in a few words (a verdict's ``spread_from``)."""
        if self.prompt_class is not None:
            return (
                f"run-to-run spread between the server processes of arm {self.arm} "
                f"({self.metric}, {self.prompt_class} prompt; the largest of the phase figures)"
            )
        return f"run-to-run spread of {self.metric} between runs {', '.join(self.runs)} of arm {self.arm}"

    def as_dict(self) -> dict[str, Any]:
        out = {
            "arm": self.arm,
            "metric": self.metric,
            "runs": list(self.runs),
            "values": list(self.values),
            "spread": self.spread,
        }
        if self.prompt_class is not None:
            out["prompt_class"] = self.prompt_class
            out["text"] = self.describe()
        return out


def _ordered_arms(camp: Campaign, arms: list[str] | None) -> list[str]:
    if arms is None:
        return list(camp.arms)
    unknown = [a for a in arms if a not in camp.arms]
    if unknown:
        raise InputError(camp.root / "campaign.json", "$.arms", f"unknown arm(s) {', '.join(unknown)}")
    return list(arms)


# ---- phase split ----------------------------------------------------------------------------
def phase_cells(
    camp: Campaign, arms: list[str] | None = None, warmup_rounds: int | None = None, cached_prefill: str = "exclude"
) -> pl.DataFrame:
    """Median [min–max] and n per (arm, prompt class, metric) over non-warm-up samples.

    Computed once per campaign and argument set.

    ``warmup_rounds``: None uses each sample's ``warmup`` flag; an integer discards that many
    leading repeats per (run, prompt class) instead (the notebook parameter).
    ``cached_prefill``: "exclude" (default) leaves a sample whose prompt the engine mostly served from
    its prefix cache out of the prefill figures (listed as an exclusion, ``analysis.checks``); "keep"
    keeps it (the page labels those figures "cached prefill").
    """
    keep = _ordered_arms(camp, arms)
    return tables_for(camp).derived(
        ("phase_cells", tuple(keep), warmup_rounds, cached_prefill),
        lambda: _phase_cells(camp, keep, warmup_rounds, cached_prefill),
    )


PREFILL_METRICS = ("prefill_s", "prefill_tok_s")


def _phase_cells(
    camp: Campaign, keep: list[str], warmup_rounds: int | None, cached_prefill: str = "exclude"
) -> pl.DataFrame:
    import polars as pl

    df = camp.phase_samples
    copies = copied_runs(camp, "phases")  # a copy is counted once, never as a repeat
    if copies:
        df = df.filter(~pl.col("run").is_in(sorted(copies)))
    rows: list[dict[str, Any]] = []
    for arm in keep:
        sub = df.filter(pl.col("arm") == arm)
        for (run, pclass), g in sub.group_by(["run", "prompt_class"], maintain_order=True):
            g = g.sort("repeat")
            flags = g["warmup"].to_list() if warmup_rounds is None else [i < warmup_rounds for i in range(g.height)]
            if all(flags):
                tables_for(camp).exclude(
                    _excl(g["file"][0], f"{run} {pclass}", "arm has no usable samples after the warm-up discard")
                )
                continue
            ptok = stats.cell(g["prompt_tokens"].to_list(), warmup=flags)
            ctok = stats.cell(g["generated_tokens"].to_list(), warmup=flags)
            cached = _cached_repeats(camp, g, run, pclass) if cached_prefill == "exclude" else set()
            for metric, (unit, _hib, _d, _l) in PHASE_METRICS.items():
                vals, fl = g[metric].to_list(), flags
                if metric in PREFILL_METRICS and cached:  # a cached prompt is not a prefill measurement
                    idx = [i for i, rep in enumerate(g["repeat"].to_list()) if rep not in cached]
                    vals, fl = [vals[i] for i in idx], [flags[i] for i in idx]
                    if all(fl):
                        continue  # no measured prefill left: the exclusions say why
                c = stats.cell(vals, warmup=fl, what=f"{run} {pclass} {metric}")
                rows.append(
                    {
                        "arm": arm,
                        "run": run,
                        "environment": camp.arm_environment(arm),
                        "prompt_class": pclass,
                        "prompt_tokens": ptok.median,
                        "generated_tokens": ctok.median,
                        "metric": metric,
                        "unit": unit,
                        "median": c.median,
                        "min": c.min,
                        "max": c.max,
                        "n": c.n,
                        "discarded": c.discarded,
                    }
                )
    return pl.DataFrame(rows, schema=_CELL_SCHEMA())


def _cached_repeats(camp: Campaign, g: pl.DataFrame, run: str, pclass: str) -> set[int]:
    """Repeats of (run, prompt class) whose prompt was mostly served from the prefix cache, each listed
    as an exclusion from the prefill figures (``analysis.checks.cached_phase_samples``)."""
    from benchbook.analysis.checks import cached_phase_samples, cached_reason

    found = cached_phase_samples(camp)
    out = set()
    for rep in g["repeat"].to_list():
        a = found.get((run, pclass, int(rep)))
        if a is not None:
            out.add(int(rep))
            e = _excl(
                g["file"][0],
                f"{run}: {pclass} repeat {rep} (prefill only)",
                cached_reason(a) + "; excluded from the prefill figures",
            )
            tables_for(camp).exclude(e)
    return out


def _CELL_SCHEMA():
    import polars as pl

    return {
        "arm": pl.String,
        "run": pl.String,
        "environment": pl.String,
        "prompt_class": pl.String,
        "prompt_tokens": pl.Float64,
        "generated_tokens": pl.Float64,
        "metric": pl.String,
        "unit": pl.String,
        "median": pl.Float64,
        "min": pl.Float64,
        "max": pl.Float64,
        "n": pl.Int64,
        "discarded": pl.Int64,
    }


def _excl(file: str, sample: str, reason: str) -> Exclusion:
    return Exclusion(file, sample, reason)


def cell_of(cells: pl.DataFrame, arm: str, prompt_class: str, metric: str, run: str | None = None) -> stats.Cell | None:
    """The cell of ``arm`` (its first run's, or ``run``'s) for one prompt class and metric."""
    import polars as pl

    r = cells.filter((pl.col("arm") == arm) & (pl.col("prompt_class") == prompt_class) & (pl.col("metric") == metric))
    if run is not None:
        r = r.filter(pl.col("run") == run)
    if r.height == 0:
        return None
    row = r.row(0, named=True)
    n = row["n"]
    if n == 1:
        return stats.Cell(row["median"], row["median"], row["median"], 1, (row["median"],))
    return stats.Cell(row["median"], row["min"], row["max"], n, (row["min"], row["median"], row["max"]))


# ---- whole requests ---------------------------------------------------------------------------
def whole_request_cells(camp: Campaign) -> pl.DataFrame:
    """One row per (run, metric, n): single request, ladder rates and walls, interleave, queue shape."""
    return tables_for(camp).derived("whole_request_cells", lambda: _whole_request_cells(camp))


def _whole_request_cells(camp: Campaign) -> pl.DataFrame:
    import polars as pl

    from benchbook.analysis import interleave
    from benchbook.analysis.ladder import ladder_table

    req = camp.requests
    copies = copied_runs(camp, "requests")  # a copy is counted once, never as a repeat
    if copies:
        req = req.filter(~pl.col("run").is_in(sorted(copies)))
    if req.height == 0:
        return pl.DataFrame(schema={**_CELL_SCHEMA(), "concurrency": pl.Int64})
    table = ladder_table(req)
    gen = camp.generation_tokens
    rows: list[dict[str, Any]] = []

    def add(run, arm, metric, value, n, pclass="short"):
        unit = WHOLE_METRICS[metric][0]
        rows.append(
            {
                "arm": arm,
                "run": run,
                "environment": camp.arm_environment(arm),
                "prompt_class": pclass,
                "prompt_tokens": float(camp.prompt_classes.get(pclass, {}).get("tokens", 0)) or None,
                "generated_tokens": float(gen) if gen else None,
                "metric": metric,
                "unit": unit,
                "median": value,
                "min": value,
                "max": value,
                "n": 1,
                "discarded": 0,
                "concurrency": n,
            }
        )

    # requests.ndjson repeats the protocol: each figure is per (run, round); a run's cell is the
    # median [min–max] over its rounds, n = rounds (one round: the value itself, n = 1).
    def over_rounds(frame, keys, cols):
        if "round" not in frame.columns:
            frame = frame.with_columns(pl.lit(0, pl.Int64).alias("round"))
        return frame.group_by(keys, maintain_order=True).agg(
            pl.col("round").n_unique().alias("_n"),
            *[
                e
                for c in cols
                for e in (
                    pl.col(c).median().alias(c),
                    pl.col(c).min().alias(c + "_min"),
                    pl.col(c).max().alias(c + "_max"),
                )
            ],
        )

    def add_cell(r, metric, col, n, pclass="short"):
        add(r["run"], r["arm"], metric, r[col], n, pclass)
        rows[-1].update({"min": r[col + "_min"], "max": r[col + "_max"], "n": r["_n"]})

    cols = ["wall_s", "rate_tok_s", "mean_latency_s", "worst_latency_s"]
    for r in over_rounds(table, ["arm", "run", "scenario", "n"], cols).iter_rows(named=True):
        scen, n = r["scenario"], r["n"]
        if scen == "single":
            add_cell(r, "single_latency_s", "wall_s", 1)
            add_cell(r, "single_tok_s", "rate_tok_s", 1)
        elif scen == "ladder":
            add_cell(r, "ladder_tok_s", "rate_tok_s", n)
            add_cell(r, "ladder_wall_s", "wall_s", n)
            add_cell(r, "mean_latency_s", "mean_latency_s", n)
            add_cell(r, "worst_latency_s", "worst_latency_s", n)
    # only short requests that started while a long one was in flight (analysis.interleave): a round
    # whose long request had ended first measured a short request alone, not an interleave
    inter = interleave.overlapping(req)
    if "round" in inter.columns and inter.select(pl.col("round").n_unique()).item() > 1:
        for r in over_rounds(inter, ["arm", "run", "n"], ["latency"]).iter_rows(named=True):
            add_cell(r, "interleave_short_latency_s", "latency", r["n"])
    else:  # one round: every interleave short request as it is (as requests.json always was)
        for r in inter.iter_rows(named=True):
            add(r["run"], r["arm"], "interleave_short_latency_s", r["latency"], r["n"])
    return pl.DataFrame(rows, schema={**_CELL_SCHEMA(), "concurrency": pl.Int64})


def whole_request_rows(camp: Campaign) -> list[dict[str, Any]]:
    """The whole-request table as the seed prints it: one row per run, in manifest order."""
    import polars as pl

    cells = whole_request_cells(camp)
    out = []
    for run in camp.runs_of("requests"):
        c = cells.filter(pl.col("run") == run.id)

        def get(metric, n=None):
            f = c.filter(pl.col("metric") == metric)
            if n is not None:
                f = f.filter(pl.col("concurrency") == n)
            return f["median"][0] if f.height else None

        arm = camp.arms[run.arm]
        out.append(
            {
                "run": run.id,
                "arm": run.arm,
                "environment": arm["environment"],
                "mode": arm["mode"],
                "server_args": arm.get("server_args", {}),
                "series": arm.get("series"),
                "single_latency_s": get("single_latency_s"),
                "single_tok_s": get("single_tok_s"),
                **{f"ladder_{n}_tok_s": get("ladder_tok_s", n) for n in (2, 4, 8)},
                **{f"ladder_{n}_wall_s": get("ladder_wall_s", n) for n in (2, 4, 8)},
                "mean_latency_8_s": get("mean_latency_s", 8),
                "worst_latency_8_s": get("worst_latency_s", 8),
                "interleave_short_latency_s": get("interleave_short_latency_s"),
            }
        )
    return out


# ---- noise ------------------------------------------------------------------------------------
def noise(camp: Campaign) -> Noise | None:
    """Spread of the single-request rate between the runs of the reference arm (manifest ``noise``).

    Without a reference arm, the first arm with two or more whole-request runs is used. None when
    no arm was run twice — then no comparison can be called a result.
    """
    import polars as pl

    cells = whole_request_cells(camp).filter(pl.col("metric") == NOISE_METRIC)
    ref = camp.noise.get("reference_arm")
    candidates = [ref] if ref else list(camp.arms)
    for arm in candidates:
        c = cells.filter(pl.col("arm") == arm)
        if c.height >= 2:
            vals = tuple(c["median"].to_list())
            return Noise(arm, NOISE_METRIC, tuple(c["run"].to_list()), vals, stats.run_spread(vals))
    return None


# ---- server processes as the repeats of the phase cells (benchbook init's arm/run layout) ------------
def run_processes(camp: Campaign) -> dict[str, str]:
    """Run id -> its server process (``process`` in campaign.json, init's arm/run layout)."""
    return {r["id"]: r["process"] for r in camp.manifest.get("runs", []) if r.get("process")}


def process_phase_values(camp: Campaign, cells: pl.DataFrame) -> dict[tuple[str, str, str], dict[str, float]]:
    """(arm, prompt class, metric) -> {process: figure}: each server process's phase cell as one figure,
    its median over its (non-warm-up) rounds — the median of those medians should a process hold two
    phases runs. Runs without a ``process`` are left out (an empty dict for a campaign without any)."""
    procs = run_processes(camp)
    if not procs or cells is None or cells.height == 0:
        return {}
    acc: dict[tuple[str, str, str], dict[str, list[float]]] = {}
    for r in cells.iter_rows(named=True):
        proc = procs.get(r["run"])
        if proc is not None:
            acc.setdefault((r["arm"], r["prompt_class"], r["metric"]), {}).setdefault(proc, []).append(r["median"])
    return {k: {p: statistics.median(v) for p, v in d.items()} for k, d in acc.items()}


def phase_noise(camp: Campaign, cells: pl.DataFrame | None) -> Noise | None:
    """The phase cells' yardstick where an arm ran two or more server processes: the run-to-run spread
    ``(max − min) / min`` between its processes' figures (each a median over rounds) of one phase
    figure, the largest over the figures (every metric and prompt class, the client's total included)
    and over such arms. None when no arm has phase runs from two processes."""
    if cells is None:
        return None
    best: Noise | None = None
    for (arm, pclass, metric), per in process_phase_values(camp, cells).items():
        if len(per) < 2 or min(per.values()) <= 0:
            continue
        procs = tuple(sorted(per))
        vals = tuple(per[p] for p in procs)
        s = stats.run_spread(vals, what=f"{arm} {pclass} {metric} between processes")
        if best is None or s > best.spread:
            best = Noise(arm, metric, procs, vals, s, prompt_class=pclass)
    return best


def process_cell(values: dict[tuple[str, str, str], dict[str, float]], arm: str, pclass: str, metric: str):
    """An arm's phase cell with its processes as the repeats: median [min–max] over the processes'
    figures, n = processes (one process: that figure, n=1). None when the arm has none."""
    per = values.get((arm, pclass, metric))
    if not per:
        return None
    return stats.cell([per[p] for p in sorted(per)])


# ---- comparisons ------------------------------------------------------------------------------
def main_arms(camp: Campaign) -> list[str]:
    """Arms the baseline page shows by default: every arm except those that exist only for the
    ablation (role "ablation" and no whole-request or memory run) and results arms (benchmark-tool
    files: the compare page's)."""
    measured = {r.arm for r in camp.runs if r.harness in ("requests", "memory")}
    return [
        a
        for a, v in camp.arms.items()
        if v.get("mode") != "results" and "environment" in v and (v.get("role") != "ablation" or a in measured)
    ]


def comparison_pairs(camp: Campaign) -> list[tuple[str, str]]:
    """(baseline, candidate) arm pairs: the manifest's ``comparisons``; else, in init's arm/run layout
    (runs carry ``process``; an arm's environment there *is* its server switches, so the two never
    differ apart), each serial arm against the baseline arm (role baseline, else the first batched
    arm) and the baseline against each other arm the baseline page shows — as the results ladder
    pairs them; else arms in the same series that differ in exactly one of environment and server
    configuration."""
    explicit = camp.manifest.get("comparisons")
    if explicit:
        return [(c["baseline"], c["candidate"]) for c in explicit]
    names = main_arms(camp)
    if run_processes(camp):
        arms = camp.arms
        base = next((a for a in names if arms[a].get("role") == "baseline"), None) or next(
            (a for a in names if arms[a].get("mode") == "batch"), None
        )
        if base is None:
            return []
        serial = [(a, base) for a in names if arms[a].get("mode") == "serial" and a != base]
        return serial + [(base, a) for a in names if a != base and arms[a].get("mode") != "serial"]
    pairs = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            A, B = camp.arms[a], camp.arms[b]
            if A.get("series") != B.get("series"):
                continue
            diff_env = A["environment"] != B["environment"]
            diff_cfg = (A["mode"], A.get("server_args")) != (B["mode"], B.get("server_args"))
            if diff_env != diff_cfg:
                pairs.append((a, b))
    return pairs


def comparisons(
    camp: Campaign,
    rule: str = "seed",
    spread_override: float | None = None,
    pairs: list[tuple[str, str]] | None = None,
    warmup_rounds: int | None = None,
    cached_prefill: str = "exclude",
) -> list[dict[str, Any]]:
    """Every comparison of the page: phase cells and whole-request figures, candidate vs baseline.

    Where an arm ran its phases in two or more server processes (:func:`phase_noise`), the phase
    comparisons take the processes as the repeats: each arm's cell is over its processes' figures
    (each a median over rounds) and the threshold is the spread between processes; otherwise the
    phase cells are over rounds and the threshold is the campaign's yardstick (:func:`noise`)."""

    nz = noise(camp)
    spread = spread_override if spread_override is not None else (nz.spread if nz else None)
    from_ = "override" if spread_override is not None else (nz.source if nz else "")
    pairs = comparison_pairs(camp) if pairs is None else pairs
    out: list[dict[str, Any]] = []
    pc = (
        phase_cells(camp, warmup_rounds=warmup_rounds, cached_prefill=cached_prefill)
        if camp.runs_of("phases")
        else None
    )
    pn = phase_noise(camp, pc)
    per_process = process_phase_values(camp, pc) if pn is not None else {}
    phase_spread, phase_from = spread, from_
    if pn is not None and spread_override is None:
        phase_spread, phase_from = pn.spread, pn.source
    wc = whole_request_cells(camp)

    def emit(base, cand, metric, context, b, c, hib, prompt_class=None, concurrency=None, spread=spread, from_=from_):
        if b is None or c is None:
            return
        if not spread:  # none measured, or 0 (identical repeats): no yardstick, no verdict
            why = (
                "no arm was run twice, so there is no measured spread; no difference can be called a result"
                if spread is None
                else ZERO_SPREAD
            )
            typed = decide(Evidence(b, c, hib, rule, spread, from_, no_spread=why))
            out.append(
                _row(base, cand, metric, context, b, c, None, "no verdict", why, "?", prompt_class, concurrency, typed)
            )
            return
        cmp = compare(b, c, spread=spread, higher_is_better=hib, rule=rule, spread_from=from_)
        out.append(
            _row(
                base,
                cand,
                metric,
                context,
                b,
                c,
                cmp,
                cmp.verdict,
                cmp.reason,
                cmp.mark,
                prompt_class,
                concurrency,
                cmp.typed,
            )
        )

    for base, cand in pairs:
        if pc is not None:
            for pclass in camp.prompt_classes or ["short", "long"]:
                for metric in ("prefill_tok_s", "decode_tok_s", "prefill_s", "engine_total_s"):
                    _u, hib, _d, _l = PHASE_METRICS[metric]
                    ctx = f"{pclass} prompt, {int(camp.prompt_classes.get(pclass, {}).get('tokens', 0))} tokens, {camp.generation_tokens} generated"
                    if pn is not None:  # the processes are the repeats
                        b, c = (process_cell(per_process, a, pclass, metric) for a in (base, cand))
                    else:
                        b, c = (cell_of(pc, a, pclass, metric) for a in (base, cand))
                    emit(base, cand, metric, ctx, b, c, hib, pclass, spread=phase_spread, from_=phase_from)
        for metric, n in (
            ("single_tok_s", 1),
            ("ladder_tok_s", 2),
            ("ladder_tok_s", 4),
            ("ladder_tok_s", 8),
            ("interleave_short_latency_s", 2),
        ):
            hib = WHOLE_METRICS[metric][1]
            b = _whole_cell(wc, base, metric, n)
            c = _whole_cell(wc, cand, metric, n)
            ctx = (
                f"n={n}"
                if metric == "ladder_tok_s"
                else ("single request" if metric == "single_tok_s" else "short request during a long one")
            )
            emit(base, cand, metric, ctx, b, c, hib, "short", n)
    return out


def _whole_cell(wc, arm, metric, n) -> stats.Cell | None:
    import polars as pl

    f = wc.filter((pl.col("arm") == arm) & (pl.col("metric") == metric) & (pl.col("concurrency") == n))
    if f.height == 0:
        return None
    vals = f["median"].to_list()
    return stats.cell(vals)


def _row(base, cand, metric, context, b, c, cmp, verdict, reason, mark, prompt_class, concurrency, typed=None):
    return {
        "baseline": base,
        "candidate": cand,
        "metric": metric,
        "context": context,
        "prompt_class": prompt_class,
        "concurrency": concurrency,
        "baseline_median": b.median,
        "baseline_min": b.min,
        "baseline_max": b.max,
        "baseline_n": b.n,
        "candidate_median": c.median,
        "candidate_min": c.min,
        "candidate_max": c.max,
        "candidate_n": c.n,
        "ratio": c.median / b.median,
        # the ratio's range from the two [min–max] ranges (the forest chart's bar) and the noise band
        # around 1 the verdict used (None without a measured spread)
        "ratio_min": c.min / b.max,
        "ratio_max": c.max / b.min,
        "threshold": cmp.threshold if cmp else None,
        "band_min": 1 / (1 + cmp.threshold) if cmp else None,  # ratios inside [band_min, band_max] are
        "band_max": 1 + cmp.threshold if cmp else None,  # within the threshold (symmetric gap)
        "direction": cmp.direction if cmp else None,
        "speedup": cmp.speedup if cmp else None,
        "change_pct": (c.median / b.median - 1) * 100,
        "verdict": verdict,
        "is_result": bool(cmp and cmp.is_result),
        "mark": mark,
        "reason": reason,
        **{k: v for k, v in typed_fields(typed).items() if k != "direction"},  # None above: no verdict
    }


# ---- checks -------------------------------------------------------------------------------------
def checks(camp: Campaign) -> list[dict[str, Any]]:
    """The whole-request checks: serialization (flat ladder), pure queueing, and batching amortization
    for each serial → batch comparison (status pass|warn|fail), each a :class:`benchbook.findings.Check`
    as its dict (name, status, detail, then its figures)."""
    import polars as pl

    from benchbook.analysis import ladder

    out: list[dict[str, Any]] = []
    nz = noise(camp)
    # Without repeated runs there is no measured spread; fall back to the strict rule's 2 % floor.
    spread = nz.spread if nz and nz.spread > 0 else 0.02  # a zero spread (identical runs) is no yardstick
    wc = whole_request_cells(camp)
    req = camp.requests
    for run in camp.runs_of("requests"):
        c = wc.filter(pl.col("run") == run.id)
        single = c.filter(pl.col("metric") == "single_tok_s")
        lad = c.filter(pl.col("metric") == "ladder_tok_s")
        if single.height and lad.height:
            rates = {1: single["median"][0], **dict(zip(lad["concurrency"].to_list(), lad["median"].to_list()))}
            f = ladder.flatness(rates, spread)
            batch = camp.arms[run.arm]["mode"] == "batch"
            serial = camp.arms[run.arm]["mode"] == "serial"
            out.append(
                Check(
                    f"serialization: {run.id}",
                    # the status its words describe: a batched arm that is flat, a serial arm that is not
                    "warn" if (f.flat and batch) or (serial and not f.flat) else "pass",
                    f.reason
                    + (" — a batch arm that serializes: see the clamp check" if f.flat and batch else "")
                    + (" — a serial arm should serve one request at a time" if serial and not f.flat else ""),
                    {"kind": "serialization", "run": run.id, "flat": f.flat},
                ).as_dict()
            )
        wall1 = c.filter(pl.col("metric") == "single_latency_s")
        g = req.filter((pl.col("run") == run.id) & (pl.col("scenario") == "ladder"))
        if g.height and "round" in g.columns:  # requests.ndjson: the queue of the first round
            g = g.filter(pl.col("round") == g["round"].min())
        if wall1.height and g.height:
            nmax = g["n"].max()
            grp = g.filter(pl.col("n") == nmax)
            offs = (grp["end"] - grp["start"].min()).to_list()
            q = ladder.queueing(wall1["median"][0], offs)
            batch = camp.arms[run.arm]["mode"] == "batch"
            out.append(
                Check(
                    f"pure queueing at n={nmax}: {run.id}",
                    "warn" if (q.pure and batch) else "pass",
                    q.reason,
                    {"kind": "pure queueing", "run": run.id, "pure": q.pure},
                ).as_dict()
            )
    for base, cand in comparison_pairs(camp):
        A, B = camp.arms[base], camp.arms[cand]
        if A["mode"] != "serial" or B["mode"] != "batch":
            continue

        def val(arm, metric, n):
            f = wc.filter((pl.col("arm") == arm) & (pl.col("metric") == metric) & (pl.col("concurrency") == n))
            return f["median"].median() if f.height else None

        single, bw, sw = val(base, "single_latency_s", 1), val(cand, "ladder_wall_s", 8), val(base, "ladder_wall_s", 8)
        if single and bw:
            a = ladder.amortization(single, bw, 8, sw, decode_steps=camp.generation_tokens or 32)
            out.append(
                Check(
                    f"batching amortization: {cand} vs {base}",
                    "pass" if a.agree in (True, None) else "warn",
                    a.explanation,
                    {
                        "kind": "batching amortization",
                        "effective_width": a.effective_width,
                        "speedup": a.speedup,
                        "single_row_steps": a.single_row_steps,
                        "step_cost_n_s": a.step_cost_n,
                        "step_cost_1_s": a.step_cost_1,
                    },
                ).as_dict()
            )
    return out
