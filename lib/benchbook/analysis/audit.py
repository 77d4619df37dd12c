"""The campaign's audit: what could make its figures lie, and how far they are from the hardware.

:func:`campaign_audit` gathers, for one campaign, the per-window engine audits
(:mod:`benchbook.analysis.checks`: prefix cache, preemption, queueing, token accounting — phase
samples and results runs), their checks, the physical limits beside the figures they bound
(:mod:`benchbook.analysis.limits`) and the energy per window and per arm
(:mod:`benchbook.analysis.energy`). :class:`benchbook.analysis.campaign_analysis.CampaignAnalysis`
holds it as ``audit`` and ``summary --json`` carries :meth:`CampaignAudit.as_dict` under ``audit``;
the failing and warning checks also join the campaign's ``checks`` so every findings box leads with
them. docs/checks.md documents every figure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchbook.analysis import checks as checks_mod
from benchbook.analysis import energy as energy_mod
from benchbook.analysis import limits as limits_mod
from benchbook.analysis.tables import tables_for
from benchbook.errors import InputError, InputErrors
from benchbook.jsonfile import MAX_LOG_BYTES, MAX_SMI_Q_BYTES, open_regular, read_bytes

if TYPE_CHECKING:
    import polars as pl

    from benchbook.ingest.campaign import Campaign

GPU_SAMPLES_FILE = "gpu_samples.csv"  # nvidia-smi --query-gpu CSV beside a run's file
SMI_Q_FILE = "nvidia_smi_q.txt"  # nvidia-smi -q, in the campaign folder or a run's folder


def _text(path: Path, limit: int) -> str:
    """A text file the audit reads, within its kind's size limit (checked before reading: a 2 GB log
    is bad input, not 4 GB of memory) and as a regular file; bytes that are not UTF-8 are replaced."""
    return read_bytes(path, "text file", limit).decode("utf-8", errors="replace")


def text_files(camp: Campaign) -> list[tuple[Path, int]]:
    """The text files the audit finds by name, each with its size limit: ``nvidia_smi_q.txt`` in the
    campaign folder and each run folder, every ``*.log`` of a run folder."""
    out = [(f / SMI_Q_FILE, MAX_SMI_Q_BYTES) for f in [camp.root, *sorted({r.path for r in camp.runs})]]
    out = [(p, n) for p, n in out if p.exists()]
    for folder in sorted({r.path for r in camp.runs}):
        out += [(p, MAX_LOG_BYTES) for p in sorted(folder.glob("*.log"))]
    return out


def check_text_files(camp: Campaign) -> None:
    """``validate``'s check of :func:`text_files`: each inside the campaign, a regular file, within its
    limit — what the audit (``summary``, ``render``) would refuse, found without reading a byte."""
    errors = []
    for p, limit in text_files(camp):
        try:
            open_regular(_own(camp, p, "text file"), limit=limit).close()
        except InputError as e:
            errors.append(e)
    if errors:
        raise errors[0] if len(errors) == 1 else InputErrors(errors)


def _own(camp: Campaign, path: Path, what: str) -> Path:
    """A file the audit finds by name in the campaign, checked to resolve inside it (a symlink out of
    the campaign folder is bad input, as for every file a campaign names)."""
    return camp.inside(path, path, "-", what)


@dataclass
class CampaignAudit:
    cached_prefill: str  # "exclude" | "keep"
    allow_preemption: bool
    windows: list[checks_mod.WindowAudit] = field(default_factory=list)
    window_notes: list[str] = field(default_factory=list)  # windows that could not be audited, and why
    checks: list[dict[str, Any]] = field(default_factory=list)
    limits: list[limits_mod.Limit] = field(default_factory=list)
    limit_notes: list[str] = field(default_factory=list)
    energy: list[energy_mod.WindowEnergy] = field(default_factory=list)
    energy_comparisons: list[dict[str, Any]] = field(default_factory=list)
    energy_notes: list[str] = field(default_factory=list)

    def energy_of(self, name: str) -> energy_mod.WindowEnergy | None:
        """The energy of one window, by its name (a page run id) or its results run id."""
        return next((e for e in self.energy if e.window == name), None) or next(
            (e for e in self.energy if e.run == name), None
        )

    def limit_checks(self) -> list[dict[str, Any]]:
        return [lim.check().as_dict() for lim in self.limits]

    def all_checks(self) -> list[dict[str, Any]]:
        return self.checks + self.limit_checks()

    def cached_samples(self) -> list[checks_mod.WindowAudit]:
        return [a for a in self.windows if a.kind == "phase sample" and a.mostly_cached]

    def as_dict(self) -> dict[str, Any]:
        return {
            "cached_prefill": self.cached_prefill,
            "allow_preemption": self.allow_preemption,
            "windows": [a.as_dict() for a in self.windows],
            "window_notes": list(self.window_notes),
            "limits": [lim.as_dict() for lim in self.limits],
            "limit_notes": list(self.limit_notes),
            "energy": [e.as_dict() for e in self.energy],
            "energy_comparisons": list(self.energy_comparisons),
            "energy_notes": list(self.energy_notes),
        }


def campaign_audit(
    camp: Campaign,
    *,
    phase_cells: pl.DataFrame | None,
    results_inputs: Any = None,
    spread: float | None = None,
    rule: str = "seed",
    cached_prefill: str = "exclude",
    allow_preemption: bool = False,
) -> CampaignAudit:
    if cached_prefill not in checks_mod.CACHED_PREFILL_MODES:
        raise InputError("parameters", "cached_prefill", f"unknown mode {cached_prefill!r}; choose exclude or keep")
    out = CampaignAudit(cached_prefill, allow_preemption)
    out.windows = list(checks_mod.phase_audits_cached(camp)) if camp.runs_of("phases") else []
    if results_inputs is not None:
        res, out.window_notes = checks_mod.results_audits(camp, results_inputs)
        out.windows += res
    if camp.runs_of("requests"):  # each capture ladder step against its own scrapes (analysis.step_audits)
        from benchbook.analysis.step_audits import ladder_audits, ladder_distinct

        steps, step_notes = ladder_audits(camp)
        out.windows += steps
        out.window_notes += step_notes
    from benchbook.analysis import cache_cause

    distinct = {r.id: camp.phases_doc(r).get("distinct_prompts") for r in camp.runs_of("phases")}
    if camp.runs_of("requests"):
        distinct.update(ladder_distinct(camp))
    out.checks = checks_mod.run_checks(
        out.windows,
        allow_preemption=allow_preemption,
        distinct=distinct,
        causes=cache_cause.causes(camp, results_inputs, out.windows),
        caching={r.id: cache_cause.caching(camp, r.id) for r in camp.runs_of("phases") + camp.runs_of("requests")},
    )
    out.limits, out.limit_notes = campaign_limits(camp, phase_cells, results_inputs)
    out.limits += estimate_limits(camp, out.windows)
    if out.limits:  # every limit says which file named the GPU it was drawn for
        import dataclasses

        name, where = gpu_name(camp)
        out.limits = [
            dataclasses.replace(lim, inputs={**lim.inputs, "gpu": name, "gpu_source": where}) for lim in out.limits
        ]
    out.energy, out.energy_notes = campaign_energy(camp, results_inputs, out.windows)
    out.energy_comparisons = energy_comparisons(camp, out.energy, spread=spread, rule=rule)
    return out


def energy_comparisons(
    camp: Campaign, energy: list[energy_mod.WindowEnergy], *, spread: float | None, rule: str
) -> list[dict[str, Any]]:
    """J per output token between arms at matched load: per load point of init's layout (the manifest's
    ``point``: conc8 against conc8), else over each arm's windows; the pairs the campaign compares
    (its ``comparisons``), else every arm against the role-baseline arm (or the first with figures).
    One row per (point, pair)."""
    point = {e.get("id"): e.get("point") for e in camp.manifest.get("runs", []) if isinstance(e, dict)}
    groups: dict[str | None, dict[str, list[float]]] = {}
    for e in energy:
        if e.j_per_token is not None and e.arm is not None:
            groups.setdefault(point.get(e.run), {}).setdefault(e.arm, []).append(e.j_per_token)
    pairs = [
        (c["baseline"], c["candidate"])
        for c in camp.manifest.get("comparisons") or []
        if isinstance(c, dict) and c.get("baseline") and c.get("candidate")
    ]
    role = next((a for a, v in camp.arms.items() if v.get("role") == "baseline"), None)
    out = []
    for pt, per_arm in groups.items():
        todo = [(b, c) for b, c in pairs if b in per_arm and c in per_arm]
        if not pairs and len(per_arm) > 1:
            base = role if role in per_arm else next(iter(per_arm))
            todo = [(base, a) for a in per_arm if a != base]
        for b, c in todo:
            for row in energy_mod.compare_arms({b: per_arm[b], c: per_arm[c]}, b, spread=spread, rule=rule):
                out.append({**row, "point": pt})
    return out


# ---- limits -------------------------------------------------------------------------------------------
def gpu_name(camp: Campaign) -> tuple[str | None, str]:
    """(the GPU's name, where it came from), from the first source that names it: ``nvidia-smi -q``
    (``Product Name``) in the campaign or a run folder; the manifest's ``host.GPU`` (or the GPUs init
    read from a capture's host facts); a GPU sample file's ``name`` column, GPU telemetry (DCGM
    ``modelName``, AIPerf ``gpu_model_name``); a ``capture.json``'s own GPU facts; an engine log line
    naming its device (:mod:`benchbook.ingest.gpu_names`)."""
    return tables_for(camp).derived(("gpu_name",), lambda: _gpu_name(camp))


def _gpu_name(camp: Campaign) -> tuple[str | None, str]:
    from benchbook.ingest import gpu_names, telemetry

    folders = [camp.root, *sorted({r.path for r in camp.runs})]
    for folder in folders:
        p = folder / SMI_Q_FILE
        if p.is_file():
            name = limits_mod.gpu_from_smi_q(_text(_own(camp, p, "nvidia-smi -q output"), MAX_SMI_Q_BYTES))
            if name:
                return name, f"{p.relative_to(camp.root)}: Product Name"
    host = camp.manifest.get("host") or {}
    for key in ("GPU", "gpu", "accelerator", "gpu_memory"):
        if isinstance(host.get(key), str) and host[key].strip():
            return host[key], f"campaign.json $.host.{key}"
    # the run folders' own files: init copies each process's folder whole, so look up to the process
    procs = sorted({p for f in folders[1:] for p in (f, f.parent, f.parent.parent) if p.is_relative_to(camp.root)})
    procs = [p for p in procs if p != camp.root]
    for folder in procs:
        for p in (
            sorted(folder.glob("*.csv"))
            + telemetry.telemetry_files(folder)
            + telemetry.telemetry_files(folder / "metrics")
        ):
            names = (
                gpu_names.from_smi_csv(_own(camp, p, "GPU sample file"))
                if p.suffix.lower() == ".csv"
                else gpu_names.from_telemetry(_own(camp, p, "GPU telemetry"))
            )
            if names:
                return names[0], f"{p.relative_to(camp.root)}: " + (
                    "name column" if p.suffix.lower() == ".csv" else "the telemetry's GPU model"
                )
    for folder in procs:
        for p in sorted(folder.glob("*/capture.json")) + sorted(folder.glob("capture.json")):
            from benchbook.jsonfile import load_json

            names = gpu_names.from_capture(load_json(_own(camp, p, "capture.json")))
            if names:
                return names[0], f"{p.relative_to(camp.root)}: host.gpu_memory.gpus[0].name"
    for folder in procs:
        for p in sorted(folder.glob("*.log")):
            names = gpu_names.from_log(_text(_own(camp, p, "engine log"), MAX_LOG_BYTES))
            if names:
                return names[0], f"{p.relative_to(camp.root)}: the engine's device line"
    return None, (
        "no file names the GPU (nvidia_smi_q.txt, host.GPU in campaign.json, a name column in the GPU samples, "
        "DCGM/AIPerf telemetry, a capture.json's GPU facts or an engine log's device line)"
    )


def _arm_dtype(camp: Campaign, arm: str) -> tuple[str, str]:
    from benchbook.analysis.what_ran import arm_settings

    args = camp.arms.get(arm, {}).get("server_args", {}) or {}
    for k in ("dtype", "--dtype"):
        if isinstance(args, dict) and args.get(k):
            return str(args[k]), f"server argument dtype={args[k]}"
    st = arm_settings(camp, arm).get("dtype")
    if isinstance(st, dict) and st.get("value"):
        return str(st["value"]), f"dtype {st['value']} ({st.get('source', 'the server config')})"
    return "bfloat16", "assumed bfloat16 (2 bytes per parameter): no dtype among the server arguments"


def _arm_weights(camp: Campaign, arm: str) -> limits_mod.Weights | None:
    """The weights one GPU holds, from the engine's load line in a log of one of the arm's runs: its
    ``server.log``, else any ``*.log`` in the run folder (a vLLM log has no benchbook startup line, so
    a campaign may keep it under another name); in init's arm/run layout, the process's settings
    (``server_config.settings.weights_gib``, read from its log at init)."""
    from benchbook.analysis.what_ran import arm_settings

    w = arm_settings(camp, arm).get("weights_gib")
    if isinstance(w, dict) and isinstance(w.get("value"), (int, float)):
        return limits_mod.Weights(
            float(w["value"]) * limits_mod.GIB,
            f"{w.get('source', 'server log')}: 'Model loading took {w['value']} GiB'",
        )
    for r in camp.runs:
        if r.arm != arm:
            continue
        logs = [r.server_log] if r.server_log.is_file() else []
        logs += [p for p in sorted(r.path.glob("*.log")) if p != r.server_log]
        for p in logs:
            text = _text(_own(camp, p, "engine log"), MAX_LOG_BYTES)
            w = limits_mod.weights_from_log(text, f"{r.id}/{p.name}")
            if w is not None:
                return w
    return None


def campaign_limits(camp: Campaign, pc: pl.DataFrame | None, inputs: Any) -> tuple[list[limits_mod.Limit], list[str]]:
    """The decode floor beside each arm's batch-1 decode figure (the phase split's decode rate; a results
    run at concurrency 1: its median TPOT) and the prefill ceiling beside each phase prefill rate."""
    import polars as pl

    name, where = gpu_name(camp)
    acc = limits_mod.find_accelerator(name)
    if acc is None:
        why = where if name is None else f"GPU {name!r} ({where}) is not in the accelerator table"
        return [], [f"no physical limit drawn: {why}"]
    out: list[limits_mod.Limit] = []
    notes: list[str] = []
    arms = list(camp.arms)
    weights = {a: _arm_weights(camp, a) for a in arms}
    missing = [
        a
        for a in arms
        if weights[a] is None and (camp.runs_of("phases", a) or any(r.arm == a for r in camp.results_runs))
    ]
    if missing:
        notes.append(
            f"no weight size ('Model loading took … GiB' in a log of the run) for arm(s) {', '.join(missing)}: no limit drawn"
        )
    if pc is not None and pc.height:
        for a in arms:
            w = weights[a]
            if w is None:
                continue
            dtype, dtype_src = _arm_dtype(camp, a)
            params = w.bytes / limits_mod.DTYPE_BYTES.get(dtype.lower(), 2)
            psrc = f"{w.source} ÷ {limits_mod.DTYPE_BYTES.get(dtype.lower(), 2)} bytes per parameter ({dtype_src})"
            for row in pc.filter(
                (pl.col("arm") == a) & pl.col("metric").is_in(["decode_tok_s", "prefill_tok_s"])
            ).to_dicts():
                what = f"{a}, {row['prompt_class']} prompt ({row['prompt_tokens']:g} tokens), run {row['run']}"
                if row["metric"] == "decode_tok_s" and row["median"]:
                    out.append(
                        limits_mod.decode_limit(
                            f"{what}: time per decode token (1 / median decode rate, batch 1)",
                            1.0 / row["median"],
                            w,
                            acc,
                            run=row["run"],
                            arm=a,
                        )
                    )
                elif row["metric"] == "prefill_tok_s" and row["median"]:
                    lim = limits_mod.prefill_limit(
                        f"{what}: median prefill rate", row["median"], params, psrc, acc, dtype, run=row["run"], arm=a
                    )
                    if lim is not None:
                        out.append(lim)
    if inputs is not None:
        ids = {r.id: r for r in camp.runs}
        for pid, rid, run in inputs.runs:
            arm = ids[rid].arm if rid in ids else None
            w = weights.get(arm) if arm else None
            tpot = run.summary.get("median_tpot_ms")
            if w is None or not tpot or run.config.get("max_concurrency") != 1:
                continue
            out.append(
                limits_mod.decode_limit(f"{pid}: median TPOT at concurrency 1", tpot / 1e3, w, acc, run=rid, arm=arm)
            )
    return out, notes


def estimate_limits(camp: Campaign, windows: list[checks_mod.WindowAudit]) -> list[limits_mod.Limit]:
    """The engine's own read-bytes and FLOP estimates of each results run (where exported and non-zero)
    as rates over its span (:func:`energy_window`) against the GPU's bandwidth and peak."""
    acc = limits_mod.find_accelerator(gpu_name(camp)[0])
    rrs = {rr.id: rr for rr in camp.results_runs}
    out: list[limits_mod.Limit] = []
    for a in windows:
        if acc is None or a.kind != "results run" or a.run not in rrs:
            continue
        if not (a.estimated_read_bytes or a.estimated_flops):
            continue
        t0, t1 = _unix(rrs[a.run].doc.get("started_at")), _unix(rrs[a.run].doc.get("ended_at"))
        if t0 is None or t1 is None or t1 <= t0:
            continue
        dtype, _ = _arm_dtype(camp, a.arm or "")
        out += limits_mod.engine_estimate_limits(
            a.window,
            t1 - t0,
            acc,
            read_bytes=a.estimated_read_bytes,
            flops=a.estimated_flops,
            dtype=dtype,
            run=a.run,
            arm=a.arm,
        )
    return out


# ---- energy -------------------------------------------------------------------------------------------
def _unix(text: Any) -> float | None:
    from benchbook.ingest.windows import unix

    return unix(text)


def energy_window(rr: Any, run: Any) -> tuple[float, float, str] | None:
    """(t0, t1, where it came from) of a results run in Unix seconds: the results file's
    ``started_at``/``ended_at`` (init writes them from the runner's markers, the capture's own times or
    the result file's date; ``window_source`` says which), else its requests' span when their start
    times are Unix time (vllm bench serve records ``time.perf_counter()``, which is not), else the result
    file's ``date`` less its ``duration`` (``ingest.windows.result_window``)."""
    import polars as pl

    from benchbook.ingest.windows import result_window

    t0, t1 = _unix(rr.doc.get("started_at")), _unix(rr.doc.get("ended_at"))
    if t0 is not None and t1 is not None and t1 > t0:
        return t0, t1, str(rr.doc.get("window_source") or "results.json started_at → ended_at")
    df = run.requests
    if df is not None and df.height:
        ok = df.filter(pl.col("success") & pl.col("start_s").is_not_null())
        if ok.height and float(ok["start_s"].min()) >= 1e9:
            return (
                float(ok["start_s"].min()),
                float((ok["start_s"] + ok["e2e_s"]).max()),
                "first request start → last end",
            )
    w = result_window(run.config.get("date"), run.summary.get("duration_s"), Path(str(run.source)).name)
    return None if w is None else (w.t0, w.t1, w.source)


def _process_gpu_runs(camp: Campaign) -> dict[str, Any]:
    """Results run id -> the ``gpu`` run of the same server process (init's arm/run layout: the
    manifest's ``process``), for the runs whose process was sampled."""
    from benchbook.ingest.gpu_runs import gpu_doc, has_gpu_samples

    procs = {e.get("id"): e.get("process") for e in camp.manifest.get("runs", []) if isinstance(e, dict)}
    gpu = {procs[r.id]: r for r in camp.runs if r.harness == "gpu" and procs.get(r.id) and has_gpu_samples(gpu_doc(r))}
    return {r.id: gpu[procs[r.id]] for r in camp.runs if r.harness == "results" and procs.get(r.id) in gpu}


def campaign_energy(
    camp: Campaign, inputs: Any, audits: list[checks_mod.WindowAudit] | None = None
) -> tuple[list[energy_mod.WindowEnergy], list[str]]:
    """Joules per window for every results run with a ``gpu_samples.csv`` beside its file (window:
    :func:`energy_window`). Tokens and requests are the engine's Δ over the run's capture window where
    audited (the same span: warm-up requests included), else the client's successful requests. Idle
    power: :func:`benchbook.analysis.energy.idle_samples`."""
    import polars as pl

    from benchbook.ingest.gpu_samples import read_gpu_csv

    if not camp.runs:
        return [], []
    of_process = _process_gpu_runs(camp)
    with_samples = [r for r in camp.runs if (r.path / GPU_SAMPLES_FILE).is_file() or r.id in of_process]
    if not with_samples:
        return [], [f"energy not measured: no run has power samples ({GPU_SAMPLES_FILE} beside the run's file)"]
    out, notes = [], []
    per_rr: dict[str, list[tuple[str, Any]]] = {}
    for pid, rid, run in inputs.runs if inputs is not None else []:
        per_rr.setdefault(rid, []).append((pid, run))
    rrs = {rr.id: rr for rr in camp.results_runs}
    engine = {a.run: a for a in audits or [] if a.kind == "results run"}
    name, name_from = gpu_name(camp)
    acc = limits_mod.find_accelerator(name)
    limit = (acc.max_power_W, f"an {acc.name} ({name_from})") if acc is not None and acc.max_power_W else (None, "")
    for r in with_samples:
        runs = per_rr.get(r.id, [])
        if not runs or r.id not in rrs:
            notes.append(f"{r.id}: power samples but no results run to take a window from: not measured")
            continue
        if (r.path / GPU_SAMPLES_FILE).is_file():
            source = _own(camp, r.path / GPU_SAMPLES_FILE, "GPU sample file")
            samples = read_gpu_csv(source)
        else:  # init's layout: the samples of the run's server process (nvidia-smi CSV or GPU telemetry)
            from benchbook.ingest.gpu_runs import gpu_frame

            samples = gpu_frame(camp, of_process[r.id])
            source = of_process[r.id].file
        for pid, run in runs:
            win = energy_window(rrs[r.id], run)
            if win is None:
                notes.append(
                    f"{pid}: not measured — no window in Unix time (no marker in events.jsonl, no started_at/ended_at "
                    "in results.json, no date in the result file, and the request start times are not Unix time)"
                )
                continue
            t0, t1, what = win
            a = engine.get(r.id) if len(runs) == 1 else None
            if a is not None and a.generation_tokens:
                toks, reqs = a.generation_tokens, a.requests
            else:
                ok = run.requests.filter(pl.col("success")) if run.requests is not None else None
                toks = (
                    float(ok["completion_tokens"].sum()) if ok is not None else run.summary.get("total_output_tokens")
                )
                reqs = float(ok.height) if ok is not None else run.summary.get("completed")
            idle, _n = energy_mod.idle_power(energy_mod.idle_samples(samples, t0), t0)
            out.append(
                energy_mod.window_energy(
                    samples,
                    pid,
                    t0,
                    t1,
                    output_tokens=toks,
                    requests=reqs,
                    idle_w=idle,
                    run=r.id,
                    arm=r.arm,
                    window_source=what,
                    source=str(source),
                    max_power_w=limit[0],
                    limit_from=limit[1],
                )
            )
    return out, notes
