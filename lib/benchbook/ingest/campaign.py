"""Loading a campaign folder (see data/README.md) into tidy polars tables.

Every file is validated against its bundled JSON Schema on load. Problems with the input are raised
as InputError naming file, place and reason; samples that are valid input but cannot be used (a
sample whose counters moved by 2, a request that did not reach its token budget) are *excluded*
and listed with the reason — never silently dropped.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from benchbook.errors import InputError, InputErrors
from benchbook.findings import Exclusion  # noqa: F401 - also imported from here by readers
from benchbook.ingest.manifest import is_pd, open_manifest  # noqa: F401 - open_manifest also read from here
from benchbook.jsonfile import MAX_LOG_BYTES, inside, join_inside, load_json, read_text, validate
from benchbook.metrics import phases as phases_mod
from benchbook.metrics import prometheus
from benchbook.metrics.profiles import EngineProfile, get_profile
from benchbook.reads import resolved

HARNESS_FILES = {
    "requests": "requests.json",
    "phases": "phases.json",
    "memory": "memory.json",
    "pd": "pd.json",
    "results": "results.json",
    "gpu": "gpu.json",  # nvidia-smi / host samples of one server process (ingest.run_layout)
}


def REQUEST_SCHEMA():
    """Columns of ``Campaign.requests``."""
    import polars as pl

    return {
        "run": pl.String,
        "arm": pl.String,
        "environment": pl.String,
        "round": pl.Int64,
        "scenario": pl.String,
        "n": pl.Int64,
        "index": pl.Int64,
        "prompt_class": pl.String,
        "start": pl.Float64,
        "end": pl.Float64,
        "latency": pl.Float64,
        "prompt_tokens": pl.Int64,
        "completion_tokens": pl.Int64,
        "finish_reason": pl.String,
        "stream": pl.Boolean,
    }


@dataclass(frozen=True)
class Run:
    id: str
    arm: str
    harness: str
    path: Path
    date: str | None = None

    @property
    def file(self) -> Path:
        return self.path / HARNESS_FILES[self.harness]

    @property
    def server_log(self) -> Path:
        return self.path / "server.log"


@dataclass
class Campaign:
    root: Path
    manifest: dict[str, Any]
    runs: list[Run]
    # the samples loading left out; what an analysis leaves out, and the tables it computes, are
    # that analysis's own (benchbook.analysis.tables)
    exclusions: list[Exclusion] = field(default_factory=list)

    # ---- manifest accessors -------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.root.name

    @property
    def title(self) -> str:
        return self.manifest["title"]

    @property
    def arms(self) -> dict[str, dict[str, Any]]:
        return self.manifest.get("arms", {})

    @property
    def environments(self) -> dict[str, dict[str, Any]]:
        return self.manifest.get("environments", {})

    @property
    def prompt_classes(self) -> dict[str, dict[str, Any]]:
        return self.manifest.get("prompt_classes", {})

    @property
    def generation_tokens(self) -> int | None:
        return self.manifest.get("generation_tokens")

    @property
    def profile(self) -> EngineProfile:
        engine = self.manifest.get("engine")
        if not engine:  # a results-only campaign may omit it; the phase split cannot
            raise InputError(
                self.root / "campaign.json", "$.engine", 'no engine: add "engine": {"name": …, "profile": …}'
            )
        return get_profile(engine["profile"])

    @property
    def noise(self) -> dict[str, Any]:
        return self.manifest.get("noise", {})

    def arm_label(self, arm: str) -> str:
        return self.arms.get(arm, {}).get("label", arm)

    def arm_environment(self, arm: str) -> str:
        return self.arms.get(arm, {}).get("environment", "default")

    def runs_of(self, harness: str, arm: str | None = None) -> list[Run]:
        return [r for r in self.runs if r.harness == harness and (arm is None or r.arm == arm)]

    def run(self, run_id: str) -> Run:
        for r in self.runs:
            if r.id == run_id:
                return r
        raise KeyError(run_id)

    def server_log_text(self, run: Run) -> str | None:
        p = run.server_log
        if not p.exists():
            return None
        return _read_text(self.inside(p, p, "-", "server log"))

    def inside(self, path: Path, named_by: str | Path, location: str, what: str = "file") -> Path:
        """``path`` checked to resolve inside the campaign folder (``jsonfile.inside``)."""
        return inside(self.root, path, named_by, location, what)

    def snapshot_path(self, r: Run, rel: str, where: str) -> Path:
        """The ``/metrics`` capture a phase sample names, resolved and checked to lie inside the
        campaign folder (an absolute name, a ``../`` or a symlink leaving it is bad input)."""
        return resolved(join_inside(self.root, r.path, rel, r.file, where, "snapshot"))

    def input_files(self) -> list[Path]:
        """Every raw file this campaign reads, for provenance hashes (sorted, stable)."""
        files = {self.root / "campaign.json"}
        for r in self.runs:
            files.add(r.file)
            if r.harness == "requests" and (r.path / "requests.ndjson").is_file():
                files.add(r.path / "requests.ndjson")
            if r.server_log.exists():
                files.add(r.server_log)
            # what the audit reads by name (analysis/audit.py): engine logs, GPU samples, nvidia-smi -q
            files.update(p for p in r.path.glob("*.log") if p.is_file())
            files.update(p for p in (r.path / "gpu_samples.csv", r.path / "nvidia_smi_q.txt") if p.is_file())
            if r.harness == "results":
                files.update(self.results_run(r).input_files())
            if r.harness == "gpu":
                from benchbook.ingest.gpu_runs import input_files as gpu_inputs

                files.update(gpu_inputs(self, r))
            if r.harness == "phases":
                for i, s in enumerate(self.phases_doc(r)["samples"]):
                    if "window" in s:  # counters from a Prometheus server: no capture file
                        continue
                    for key in ("metrics_before", "metrics_after"):
                        files.add(self.snapshot_path(r, s[key], f"$.samples[{i}].{key}"))
        if (self.root / "nvidia_smi_q.txt").is_file():
            files.add(self.root / "nvidia_smi_q.txt")
        return sorted(files)

    # ---- Prometheus source (phase samples that give a window instead of capture files) ----
    def prometheus_source(self, run: Run) -> dict[str, Any] | None:
        """The run's Prometheus source: the campaign's ``prometheus`` with the run's merged over it."""
        return prometheus_source(self.manifest, run.id, self.root / "campaign.json")

    def prometheus_windows(self, run: Run) -> list[tuple[float, float]]:
        """The ``window`` of every phase sample of a run that has one, in file order."""
        if run.harness != "phases":
            return []
        return [
            (float(s["window"]["t0"]), float(s["window"]["t1"]))
            for s in self.phases_doc(run)["samples"]
            if "window" in s
        ]

    # ---- prefill/decode disaggregation (a lazy part of the campaign) ---------------------------
    @property
    def is_pd(self) -> bool:
        """A PD campaign (``ingest.manifest.is_pd``: kind "pd" or an arm with mode "pd")."""
        return is_pd(self.manifest)

    @cached_property
    def pd(self):
        """The campaign's PD part (``ingest.pd_runs.PDCampaign``), built once from this campaign's own
        manifest — the PD page, its analysis and history read this one object."""
        from benchbook.ingest.pd_runs import pd_campaign

        return pd_campaign(self.root, self.root / "campaign.json", self.manifest)

    # ---- results runs (benchmark-tool result files) ----------------------------------------
    def results_run(self, run: Run):
        """The run's ``results.json`` read and checked (``ingest.results_runs.ResultsRun``)."""
        from benchbook.ingest.results_runs import read_results_run

        cache = self.__dict__.setdefault("_results_runs", {})
        if run.id not in cache:
            cache[run.id] = read_results_run(self.root, self.manifest, run, self.prometheus_source(run) is not None)
        return cache[run.id]

    @property
    def results_runs(self) -> list:
        """Every results run, in manifest order."""
        return [self.results_run(r) for r in self.runs_of("results")]

    # ---- tables -------------------------------------------------------------------------
    @cached_property
    def requests(self):
        """Whole-request results of every `requests` run, one row per request.

        Columns: run, arm, environment, round, scenario, n, index, prompt_class, start, end,
        latency, prompt_tokens, completion_tokens, finish_reason, stream. A run's
        ``requests.ndjson`` (every round of the protocol, at scale) is read instead of its
        ``requests.json`` when it exists; ``requests.json`` records are round 0. Requests that did
        not reach the campaign's token budget or whose end does not follow their start are
        excluded (listed).
        """
        import polars as pl

        frames = [self._requests_of(r) for r in self.runs_of("requests")]
        if not frames:
            return pl.DataFrame(schema=REQUEST_SCHEMA())
        return pl.concat(frames, how="vertical") if len(frames) > 1 else frames[0]

    def requests_file(self, run: Run) -> Path:
        """The file ``requests`` reads for a run: ``requests.ndjson`` if present, else ``requests.json``."""
        nd = run.path / "requests.ndjson"
        return self.inside(nd, nd, "-", "request log") if nd.is_file() else run.file

    def _requests_of(self, r: Run):
        import polars as pl

        from benchbook.ingest.requests_ndjson import read_requests_ndjson

        nd = self.requests_file(r)
        if nd != r.file:
            doc = load_json(r.file)  # still the harness's own file: it must be valid too
            validate(doc, "requests", r.file)
            df, excl = read_requests_ndjson(nd, self.generation_tokens, self.prompt_classes, itl=False)
            self.exclusions.extend(Exclusion(str(nd), line, reason) for line, reason in excl)
            if excl:
                df = df.filter(~pl.col("excluded"))
            return df.select(
                pl.lit(r.id).alias("run"),
                pl.lit(r.arm).alias("arm"),
                pl.lit(self.arm_environment(r.arm)).alias("environment"),
                "round",
                "scenario",
                "n",
                "index",
                "prompt_class",
                "start",
                "end",
                "latency",
                "prompt_tokens",
                "completion_tokens",
                "finish_reason",
                pl.col("stream").fill_null(False),
            )
        rows = []
        doc = load_json(r.file)
        validate(doc, "requests", r.file)
        for i, q in enumerate(doc["requests"]):
            where = f"$.requests[{i}]"
            if q["prompt_class"] not in self.prompt_classes and self.prompt_classes:
                raise InputError(r.file, f"{where}.prompt_class", f"unknown prompt class {q['prompt_class']!r}")
            reason = None
            if q["end"] < q["start"]:
                reason = f"end {q['end']} precedes start {q['start']}"
            elif q["end"] == q["start"]:  # a zero latency would divide by zero downstream
                reason = f"end {q['end']} equals start {q['start']}: zero latency"
            elif q["end"] - q["start"] < phases_mod.MIN_DURATION_S:  # a denormal: the rate would be meaningless
                reason = (
                    f"latency {q['end'] - q['start']:g} s (start {q['start']}, end {q['end']}) is below "
                    f"{phases_mod.MIN_DURATION_S:g} s: no rate can be taken from it"
                )
            elif (
                self.generation_tokens and q["completion_tokens"] < self.generation_tokens and q["scenario"] != "warmup"
            ):
                reason = (
                    f"{q['completion_tokens']} of {self.generation_tokens} tokens generated "
                    f"(finish_reason {q['finish_reason']!r}): did not reach its budget"
                )
            if reason:
                self.exclusions.append(Exclusion(str(r.file), where, reason))
                continue
            rows.append(
                {
                    "run": r.id,
                    "arm": r.arm,
                    "environment": self.arm_environment(r.arm),
                    "round": 0,
                    "scenario": q["scenario"],
                    "n": q["n"],
                    "index": q["index"],
                    "prompt_class": q["prompt_class"],
                    "start": float(q["start"]),
                    "end": float(q["end"]),
                    "latency": float(q["end"]) - float(q["start"]),
                    "prompt_tokens": q["prompt_tokens"],
                    "completion_tokens": q["completion_tokens"],
                    "finish_reason": q["finish_reason"],
                    "stream": bool(q.get("stream", False)),
                }
            )
        return pl.DataFrame(rows, schema=REQUEST_SCHEMA())

    def phases_doc(self, r: Run) -> dict[str, Any]:
        """A phases run's ``phases.json``, read and validated once per campaign (the split, the checks,
        the audit and the explore notebook all read its samples)."""
        cache = self.__dict__.setdefault("_phase_docs", {})
        if r.id not in cache:
            doc = load_json(r.file)
            validate(doc, "phases", r.file)
            cache[r.id] = doc
        return cache[r.id]

    def check_snapshots(self, r: Run, skip: set[str] | frozenset[str] = frozenset()) -> list[InputError]:
        """Every ``/metrics`` snapshot a phases run names, parsed with the whole families the split
        reads (``phases.needed_names``: buckets included) and all of benchbook's checks on them.

        ``phase_samples`` hands the parser only the lines the split reads (``phases.needed_samples``:
        a histogram's ``_sum`` and ``_count``, not its ``_bucket`` lines), so a bucket defect — buckets
        not cumulative, ``+Inf`` differing from ``_count``, no ``+Inf`` bucket — does not stop it;
        ``benchbook validate`` calls this to reject such a campaign (file and line). Families the
        split does not read are not checked (as on the narrow path). Files in ``skip`` (already
        reported) and files that do not exist (``phase_samples`` reports them) are passed over.
        Returns the problems, one per file at most.
        """
        names = phases_mod.needed_names(self.profile)
        problems: list[InputError] = []
        seen: set[Path] = set()
        for i, s in enumerate(self.phases_doc(r)["samples"]):
            for key in ("metrics_before", "metrics_after"):
                if key not in s:
                    continue
                p = self.snapshot_path(r, s[key], f"$.samples[{i}].{key}")
                if p in seen or str(p) in skip or not p.is_file():
                    continue
                seen.add(p)
                try:
                    text = prometheus.read_capture(p)
                    prometheus.parse(text, p, names)
                    prometheus.parse(text, p, phases_mod.counter_families(text))  # what the restart check reads
                except InputError as e:
                    problems.append(e)
        return problems

    def sample_snapshots(self, r: Run, i: int):
        """``(before, after, window, restarted)`` of sample ``i`` of phases run ``r``: the one reader
        of phase samples, whichever source they come from — two capture files (``window`` None), or
        the run's Prometheus server for the sample's ``window`` (the two Snapshots of a
        ``promsource.PromWindow``, whose ``check_resets`` tells a reset inside it). ``restarted`` says
        why the engine restarted between two captures (``phases.restart`` over every counter family
        and the process start time), else None. Capture files are checked to lie inside the
        campaign folder and parsed once per campaign object (the split's samples: a histogram's
        ``_sum``/``_count``, no buckets); windows are fetched once."""
        doc = self.phases_doc(r)
        s = doc["samples"][i]
        where = f"$.samples[{i}]"
        cache = self.__dict__.setdefault("_snapshots", {})
        if "window" in s:
            if (r.id, i) not in cache:
                cache[(r.id, i)] = _fetch_window(self, r, s, f"{where}.window", self.profile)
            win = cache[(r.id, i)]
            return win.before, win.after, win, None
        before, after, restarted = capture_sample_snapshots(self.root, r.path, r.file, s, i, self.profile, cache, r.id)
        return before, after, None, restarted

    @cached_property
    def phase_samples(self):
        """One row per phase sample with its split; unattributable samples are excluded (listed).

        Columns: run, arm, environment, prompt_class, repeat, warmup, client_total_s,
        first_event_s, prompt_tokens, generated_tokens, prefill_s, decode_tokens, decode_s,
        engine_total_s, prefill_tok_s, decode_tok_s, file, finished_reason (the success counter's
        reason where the engine splits it: vLLM's stop/length; null otherwise).
        """
        import polars as pl

        profile = self.profile
        rows = []
        from benchbook.ingest.results_runs import metrics_labels

        for r in self.runs_of("phases"):
            doc = self.phases_doc(r)
            labels, labels_key = metrics_labels(self.manifest, r.id)
            seen: dict[tuple[str, int], int] = {}
            for i, s in enumerate(doc["samples"]):
                where = f"$.samples[{i}]"
                key = (s["prompt_class"], s["repeat"])
                if key in seen:
                    raise InputError(
                        r.file, where, f"duplicate sample: {key[0]} repeat {key[1]} also at $.samples[{seen[key]}]"
                    )
                seen[key] = i
                if s["prompt_class"] not in self.prompt_classes and self.prompt_classes:
                    raise InputError(r.file, f"{where}.prompt_class", f"unknown prompt class {s['prompt_class']!r}")
                label = f"{s['prompt_class']} repeat {s['repeat']}"
                try:
                    before, after, win, restarted = self.sample_snapshots(r, i)
                    if win is not None:  # a counter reset inside the window excludes the sample
                        win.check_resets(profile, phases_mod.NEEDED)
                    if restarted:
                        raise phases_mod.Excluded(restarted)
                    sp = phases_mod.split(
                        before, after, profile, s["client_total_s"], s.get("first_event_s"), labels, labels_key
                    )
                except phases_mod.Excluded as e:
                    self.exclusions.append(Exclusion(str(r.file), f"{where} ({label})", e.reason))
                    continue
                if s["warmup"]:
                    self.exclusions.append(
                        Exclusion(str(r.file), f"{where} ({label})", "warm-up round: discarded before statistics")
                    )
                rows.append(
                    {
                        "run": r.id,
                        "arm": r.arm,
                        "environment": self.arm_environment(r.arm),
                        "prompt_class": s["prompt_class"],
                        "repeat": s["repeat"],
                        "warmup": s["warmup"],
                        "client_total_s": float(s["client_total_s"]),
                        "first_event_s": s.get("first_event_s"),
                        "prompt_tokens": sp.prompt_tokens,
                        "generated_tokens": sp.generated_tokens,
                        "prefill_s": sp.prefill_s,
                        "decode_tokens": sp.decode_tokens,
                        "decode_s": sp.decode_s,
                        "engine_total_s": sp.engine_total_s,
                        "prefill_tok_s": sp.prefill_tok_s,
                        "decode_tok_s": sp.decode_tok_s,
                        "file": str(r.file),
                        "finished_reason": ",".join(k for k, v in sp.finished.items() if v) or None,
                    }
                )
        schema = {
            "run": pl.String,
            "arm": pl.String,
            "environment": pl.String,
            "prompt_class": pl.String,
            "repeat": pl.Int64,
            "warmup": pl.Boolean,
            "client_total_s": pl.Float64,
            "first_event_s": pl.Float64,
            "prompt_tokens": pl.Float64,
            "generated_tokens": pl.Float64,
            "prefill_s": pl.Float64,
            "decode_tokens": pl.Float64,
            "decode_s": pl.Float64,
            "engine_total_s": pl.Float64,
            "prefill_tok_s": pl.Float64,
            "decode_tok_s": pl.Float64,
            "file": pl.String,
            "finished_reason": pl.String,  # the success counter's reason(s), where the engine splits it
        }
        return pl.DataFrame(rows, schema=schema)

    @cached_property
    def memory(self):
        """Memory runs as three tables: (gpu, host, markers).

        gpu: run, arm, t, rank, gpu_used_mib. host: run, arm, t, shmem_kib, mem_available_kib,
        pss_kib_sum (null where absent). markers: run, arm, t, event, label.
        """
        import polars as pl

        gpu, host, markers = [], [], []
        for r in self.runs_of("memory"):
            doc = load_json(r.file)
            validate(doc, "memory", r.file)
            ranks = None
            last_t = None
            for i, s in enumerate(doc["samples"]):
                where = f"$.samples[{i}]"
                if ranks is None:
                    ranks = len(s["gpu_used_mib"])
                elif len(s["gpu_used_mib"]) != ranks:
                    raise InputError(
                        r.file, f"{where}.gpu_used_mib", f"{len(s['gpu_used_mib'])} ranks, earlier samples have {ranks}"
                    )
                if last_t is not None and s["t"] <= last_t:
                    raise InputError(r.file, f"{where}.t", f"time {s['t']} does not increase (previous {last_t})")
                last_t = s["t"]
                for rank, v in enumerate(s["gpu_used_mib"]):
                    gpu.append({"run": r.id, "arm": r.arm, "t": float(s["t"]), "rank": rank, "gpu_used_mib": float(v)})
                pss = s.get("pss_kib")
                host.append(
                    {
                        "run": r.id,
                        "arm": r.arm,
                        "t": float(s["t"]),
                        "shmem_kib": s.get("shmem_kib"),
                        "mem_available_kib": s.get("mem_available_kib"),
                        "pss_kib_sum": float(sum(pss)) if pss else None,
                    }
                )
            events = {m["event"] for m in doc["markers"]}
            for need in ("load_end", "stop"):
                if need not in events:
                    raise InputError(r.file, "$.markers", f"no {need!r} marker: cannot tell loaded samples apart")
            for m in doc["markers"]:
                markers.append(
                    {"run": r.id, "arm": r.arm, "t": float(m["t"]), "event": m["event"], "label": m.get("label")}
                )
        frames = (
            pl.DataFrame(
                gpu,
                schema={
                    "run": pl.String,
                    "arm": pl.String,
                    "t": pl.Float64,
                    "rank": pl.Int64,
                    "gpu_used_mib": pl.Float64,
                },
            ),
            pl.DataFrame(
                host,
                schema={
                    "run": pl.String,
                    "arm": pl.String,
                    "t": pl.Float64,
                    "shmem_kib": pl.Float64,
                    "mem_available_kib": pl.Float64,
                    "pss_kib_sum": pl.Float64,
                },
            ),
            pl.DataFrame(
                markers,
                schema={"run": pl.String, "arm": pl.String, "t": pl.Float64, "event": pl.String, "label": pl.String},
            ),
        )
        return self._with_gpu_runs(frames)

    def _with_gpu_runs(self, frames):
        """``memory``'s tables with every ``gpu`` run's samples appended (``gpu_runs.gpu_memory``:
        nvidia-smi and host sampler CSVs, the runner's events as markers)."""
        import polars as pl

        from benchbook.ingest.gpu_runs import gpu_memory

        gpu_runs = self.runs_of("gpu")
        if not gpu_runs:
            return frames
        parts = [frames] + [gpu_memory(self, r) for r in gpu_runs]
        return tuple(pl.concat([p[i].cast(frames[i].schema) for p in parts], how="vertical") for i in range(3))


def prometheus_source(
    manifest: dict[str, Any], run_id: str, mpath: Path | str = "campaign.json"
) -> dict[str, Any] | None:
    """The campaign's ``prometheus`` with run ``run_id``'s merged over it (run matchers win per
    label); None when neither names one. Keys: url, matchers, timeout_s?, step_s?."""
    base = manifest.get("prometheus") or {}
    i, own = next(
        ((i, r.get("prometheus") or {}) for i, r in enumerate(manifest["runs"]) if r["id"] == run_id), (0, {})
    )
    if not base and not own:
        return None
    merged = {**base, **own, "matchers": {**base.get("matchers", {}), **own.get("matchers", {})}}
    if "url" not in merged:
        raise InputError(mpath, f"$.runs[{i}].prometheus", "no url: give one here or in the campaign's prometheus")
    return merged


def _fetch_window(camp: Campaign, run: Run, sample: dict[str, Any], where: str, profile: EngineProfile):
    """The counters of a sample whose window comes from the run's Prometheus source.

    ``promsource.fetch_window`` gives the same Snapshots as two capture files; the phase split
    excludes the sample when a counter reset inside the window (``PromWindow.check_resets``). An
    unreachable server raises SourceError (exit 4); a query that returns nothing raises InputError
    (exit 2).
    """
    from benchbook.metrics import promsource, source_allow
    from benchbook.metrics.promsource import DEFAULT_TIMEOUT_S

    src = camp.prometheus_source(run)
    if src is None:
        raise InputError(
            run.file,
            where,
            "this sample gives a window but neither campaign.json nor its run names a prometheus source",
        )
    w = sample["window"]
    if not w["t1"] > w["t0"]:
        raise InputError(run.file, where, f"t1 {w['t1']} is not after t0 {w['t0']}")
    refused = source_allow.refusal(src["url"])
    if refused:  # a campaign file does not choose what this machine queries: the sample is listed
        raise phases_mod.Excluded(refused)
    return promsource.fetch_window(
        src["url"], w["t0"], w["t1"], src["matchers"], profile, timeout=src.get("timeout_s", DEFAULT_TIMEOUT_S)
    )


def _read_text(p: Path) -> str:
    return read_text(p, "server log", MAX_LOG_BYTES)


def load_campaign(path: str | Path) -> Campaign:
    """Load and cross-check a campaign manifest; tables load lazily (``.requests`` …)."""
    root, mpath, manifest = open_manifest(path)
    errors: list[InputError] = []
    if "engine" in manifest:
        try:
            get_profile(manifest["engine"]["profile"])
        except InputError as e:
            errors.append(InputError(mpath, e.location, e.reason))
    arms = manifest.get("arms", {})
    envs = manifest.get("environments", {})
    harness_arms = {r["arm"] for r in manifest["runs"] if r["harness"] != "results" and "arm" in r}
    for name, arm in arms.items():
        if name in harness_arms:
            missing = [k for k in ("mode", "environment") if k not in arm]
            if missing:
                errors.append(
                    InputError(
                        mpath,
                        f"$.arms.{name}",
                        f"no {' or '.join(missing)}: required for an arm of a requests/phases/memory/pd run "
                        '(mode: "serial", "batch" or "pd"; environment: a key of environments)',
                    )
                )
                continue
        if "environment" in arm and arm["environment"] not in envs:
            errors.append(
                InputError(mpath, f"$.arms.{name}.environment", f"unknown environment {arm['environment']!r}")
            )
    ref = manifest.get("noise", {}).get("reference_arm")
    if ref is not None and ref not in arms:
        errors.append(InputError(mpath, "$.noise.reference_arm", f"unknown arm {ref!r}"))
    for i, c in enumerate(manifest.get("comparisons", [])):
        for side in ("baseline", "candidate"):
            if c[side] not in arms:
                errors.append(InputError(mpath, f"$.comparisons[{i}].{side}", f"unknown arm {c[side]!r}"))
    runs: list[Run] = []
    seen: dict[str, int] = {}
    for i, r in enumerate(manifest["runs"]):
        where = f"$.runs[{i}]"
        if r["id"] in seen:
            errors.append(
                InputError(mpath, f"{where}.id", f"duplicate run id {r['id']!r} (also $.runs[{seen[r['id']]}])")
            )
            continue
        seen[r["id"]] = i
        arm = r.get("arm", r["id"])  # a results run may leave its arm out: it is its own configuration
        if "arm" in r and r["arm"] not in arms:
            errors.append(
                InputError(
                    mpath, f"{where}.arm", f"unknown arm {r['arm']!r}; arms: {', '.join(arms) or 'none defined'}"
                )
            )
            continue
        try:
            path = join_inside(root, root, r["path"], mpath, f"{where}.path", "run folder")
            run = Run(r["id"], arm, r["harness"], path, r.get("date"))
            for f in (run.file, run.server_log, run.path / "requests.ndjson"):  # the files it reads by name
                if os.path.lexists(f):
                    inside(root, f, mpath, f"{where}.path", f"run file {f.name}")
        except InputError as e:
            errors.append(e)
            continue
        if not run.path.is_dir():
            errors.append(InputError(mpath, f"{where}.path", f"run folder {r['path']!r} does not exist"))
            continue
        if not run.file.is_file():
            errors.append(
                InputError(
                    mpath,
                    f"{where}.path",
                    f"run folder has no {HARNESS_FILES[run.harness]} for harness {run.harness!r}",
                )
            )
            continue
        runs.append(run)
    if errors:
        raise errors[0] if len(errors) == 1 else InputErrors(errors)
    return Campaign(root=root, manifest=manifest, runs=runs)


def capture_sample_snapshots(
    root: str | Path,
    run_path: str | Path,
    run_file: str | Path,
    sample: dict[str, Any],
    i: int,
    profile: EngineProfile,
    cache: dict[Any, Any] | None = None,
    cache_key: str = "",
) -> tuple[prometheus.Snapshot, prometheus.Snapshot, str | None]:
    """``(before, after, restarted)`` of phase sample ``i`` taken as two ``/metrics`` capture files:
    the one reader of such samples, for a campaign (:meth:`Campaign.sample_snapshots`) and for
    ``benchbook init`` before the campaign exists. Each capture must lie inside ``root`` (an absolute
    name, a ``../`` or a symlink leaving it is bad input, :func:`join_inside`) and exist; it is parsed
    for the split's samples (a histogram's ``_sum``/``_count``, no buckets) once per ``cache``.
    ``restarted`` says why the engine restarted between the captures (``phases.restart`` over every
    counter family and the process start time), else None."""
    where = f"$.samples[{i}]"
    if sample["metrics_before"] == sample["metrics_after"]:
        raise InputError(run_file, where, "metrics_before and metrics_after name the same file")
    names = phases_mod.needed_samples(profile)  # _sum/_count of the histograms, no buckets
    cache = {} if cache is None else cache

    def snap(rel: str, at: str) -> tuple[prometheus.Snapshot, prometheus.Snapshot]:
        """(the split's samples, every counter family + process start time) of a capture."""
        p = resolved(join_inside(root, run_path, rel, run_file, at, "snapshot"))
        if not p.exists():
            raise InputError(run_file, at, f"references {rel!r}, which does not exist")
        if (cache_key, rel) not in cache:
            text = prometheus.read_capture(p)
            counters = prometheus.parse(text, p, phases_mod.counter_families(text))
            cache[(cache_key, rel)] = (prometheus.parse(text, p, names), counters)
        return cache[(cache_key, rel)]

    before, before_counters = snap(sample["metrics_before"], f"{where}.metrics_before")
    after, after_counters = snap(sample["metrics_after"], f"{where}.metrics_after")
    return before, after, phases_mod.restart(before_counters, after_counters)
