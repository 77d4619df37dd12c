"""Reading PD (prefill/decode disaggregated) campaigns: manifest, per-run summaries, records, logs.

A PD campaign is an ordinary ``benchbook.campaign/1`` manifest (``kind: "pd"`` or arms with
``mode: "pd"``) whose PD arms also carry card counts per role and the prefill scheduler settings,
and whose runs (``harness: "pd"``) each hold a ``pd.json`` (schema ``benchbook.pd/1``): the benchmark
tool's summary per statistics window, after AISBench's field names. Optional per run: per-request
records (``benchbook.pd_requests/1``) and the prefill scheduler's log. ``docs/pd.md`` documents it all.

Everything is validated on load; problems raise :class:`InputError` naming file, JSON path or line
and reason. Lines of a scheduler log that look like a prefill report but cannot be used are
*excluded* (listed with the reason), never dropped silently.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchbook.errors import InputError, InputErrors
from benchbook.findings import Exclusion
from benchbook.ingest.manifest import is_pd, open_manifest
from benchbook.jsonfile import MAX_LOG_BYTES, inside, join_inside, load_json, read_text, validate
from benchbook.metrics.phases import MIN_DURATION_S

WINDOWS = ("whole", "native")
METRICS = ("TTFT", "TPOT", "ITL", "E2EL")  # AISBench per-request metrics, milliseconds
STATS = ("Average", "Min", "Max", "Median", "P75", "P90", "P99", "N")

__all__ = [
    "PDArm",
    "SummaryWindow",
    "PDRun",
    "PDCampaign",
    "load_pd_campaign",
    "pd_campaign",
    "load_pd_run",
    "load_pd_requests",
    "parse_prefill_log",
    "read_prefill_log",
    "summary_table",
]


@dataclass(frozen=True)
class PDArm:
    name: str
    label: str
    environment: str
    prefill_cards: int
    decode_cards: int
    global_chunked_prefill_size: int
    dp: int
    page_size: int
    prefill_max_requests: int
    role: str | None = None

    @property
    def cards(self) -> int:
        """Physical cards of the whole PD system (P + D): the per-card divisor."""
        return self.prefill_cards + self.decode_cards

    @property
    def chunk_size(self) -> int:
        """Per-DP chunk, the per-batch prefill token budget (131072 / DP16 = 8192)."""
        return self.global_chunked_prefill_size // self.dp


@dataclass(frozen=True)
class SummaryWindow:
    """One statistics window of the tool's summary. Times in ms (AISBench's units)."""

    name: str
    metrics: dict[str, dict[str, float]]
    common: dict[str, float]
    start_s: float | None = None
    end_s: float | None = None
    reported_lower_bounds: dict[str, Any] | None = None

    def stat(self, metric: str, stat: str = "Average") -> float | None:
        return self.metrics.get(metric, {}).get(stat)

    def get(self, key: str) -> float | None:
        return self.common.get(key)

    @property
    def duration_s(self) -> float | None:
        d = self.common.get("Benchmark Duration")
        return None if d is None else d / 1000.0

    @property
    def requests(self) -> int | None:
        """Requests the window holds: Success Requests, else the E2EL N."""
        n = self.common.get("Success Requests")
        if n is None:
            n = self.metrics.get("E2EL", {}).get("N")
        return None if n is None else int(n)


@dataclass(frozen=True)
class PDRun:
    id: str
    arm: str
    file: Path
    load: dict[str, Any]
    windows: dict[str, SummaryWindow]
    speculative: dict[str, Any] | None = None
    reported: dict[str, Any] = field(default_factory=dict)
    derived: dict[str, str] = field(default_factory=dict)
    approximate: dict[str, str] = field(default_factory=dict)
    prefill_log: Path | None = None
    requests_file: Path | None = None
    purpose: str | None = None
    notes: str | None = None

    def source(self, json_path: str) -> str:
        """``derived``, ``approximate`` or ``recorded`` for the value at ``json_path``."""
        if json_path in self.derived:
            return "derived"
        if json_path in self.approximate:
            return "approximate"
        return "recorded"

    def source_note(self, json_path: str) -> str | None:
        return self.derived.get(json_path) or self.approximate.get(json_path)


@dataclass
class PDCampaign:
    root: Path
    manifest: dict[str, Any]
    arms: dict[str, PDArm]
    runs: list[PDRun]

    @property
    def title(self) -> str:
        return self.manifest["title"]

    @property
    def provenance(self) -> str:
        return self.manifest.get("provenance", "measured")

    @property
    def generation_tokens(self) -> int | None:
        return self.manifest.get("generation_tokens")

    def prompt_tokens(self, prompt_class: str | None) -> int | None:
        if prompt_class is None:
            return None
        return self.manifest.get("prompt_classes", {}).get(prompt_class, {}).get("tokens")

    def baseline_arm(self) -> str:
        """The arm with ``role: baseline``, else the first arm."""
        for name, a in self.arms.items():
            if a.role == "baseline":
                return name
        return next(iter(self.arms))

    def input_files(self) -> list[Path]:
        files = {self.root / "campaign.json"}
        for r in self.runs:
            files.add(r.file)
            for p in (r.prefill_log, r.requests_file):
                if p is not None:
                    files.add(p)
        return sorted(files)


# ------------------------------------------------------------------------------------ loading


def _json_path_of(window: str, section: str, key: str, stat: str | None = None) -> str:
    p = f"$.windows.{window}.{section}.{key}"
    return p if stat is None else f"{p}.{stat}"


def load_pd_run(
    file: str | Path,
    run_id: str | None = None,
    arm: str = "",
    load: dict | None = None,
    purpose: str | None = None,
    root: str | Path | None = None,
) -> PDRun:
    """Read and validate one ``pd.json``; cross-check its figures for internal consistency.

    The files it names (``prefill_log``, ``requests``) must lie inside ``root`` (the campaign
    folder; the pd.json's own folder when it is read alone)."""
    file = Path(file)
    doc = load_json(file)
    validate(doc, "pd_run", file)
    windows: dict[str, SummaryWindow] = {}
    for name, w in doc["windows"].items():
        win = SummaryWindow(
            name=name,
            metrics={m: dict(v) for m, v in w.get("metrics", {}).items()},
            common=dict(w.get("common", {})),
            start_s=w.get("start_s"),
            end_s=w.get("end_s"),
            reported_lower_bounds=w.get("reported_lower_bounds"),
        )
        _check_window(file, win)
        windows[name] = win
    annotated = {**doc.get("derived", {}), **doc.get("approximate", {})}
    for path in annotated:
        if _resolve(doc, path) is _MISSING:
            raise InputError(file, path, "annotated as derived/approximate but no value at that JSON path")
    spec = doc.get("speculative")
    if spec is not None and spec.get("window", "whole") not in windows:
        raise InputError(file, "$.speculative.window", f"no {spec['window']!r} window in $.windows")
    base = file.parent
    return PDRun(
        id=run_id or doc.get("run") or base.name,
        arm=arm,
        file=file,
        load=dict(load or {}),
        windows=windows,
        speculative=spec,
        reported=doc.get("reported", {}),
        derived=dict(doc.get("derived", {})),
        approximate=dict(doc.get("approximate", {})),
        prefill_log=_ref(file, root or base, base, doc.get("prefill_log"), "$.prefill_log"),
        requests_file=_ref(file, root or base, base, doc.get("requests"), "$.requests"),
        purpose=purpose,
        notes=doc.get("notes"),
    )


_MISSING = object()


def _resolve(doc: Any, path: str) -> Any:
    cur = doc
    for part in path[2:].split("."):
        if not isinstance(cur, dict) or part not in cur:
            return _MISSING
        cur = cur[part]
    return cur


def _ref(file: Path, root: str | Path, base: Path, rel: str | None, where: str) -> Path | None:
    if rel is None:
        return None
    p = join_inside(root, base, rel, file, where).resolve()
    if not p.is_file():
        raise InputError(file, where, f"references {rel!r}, which does not exist")
    return p


def _check_window(file: Path, w: SummaryWindow) -> None:
    """Reject figures no single window can produce (a Min above a Max, more successes than requests)."""
    where = f"$.windows.{w.name}"
    for m, st in w.metrics.items():
        lo, hi = st.get("Min"), st.get("Max")
        if lo is not None and hi is not None and lo > hi:
            raise InputError(file, f"{where}.metrics.{m}", f"Min {lo} exceeds Max {hi}")
        for k in ("Average", "Median", "P75", "P90", "P99"):
            v = st.get(k)
            if v is not None and ((lo is not None and v < lo) or (hi is not None and v > hi)):
                raise InputError(file, f"{where}.metrics.{m}.{k}", f"{v} lies outside [Min {lo}, Max {hi}]")
    c = w.common
    tot, ok, bad = c.get("Total Requests"), c.get("Success Requests"), c.get("Failed Requests")
    if tot is not None and ok is not None and ok > tot:
        raise InputError(file, f"{where}.common.Success Requests", f"{ok} successes out of {tot} requests")
    if tot is not None and ok is not None and bad is not None and ok + bad != tot:
        raise InputError(file, f"{where}.common", f"Success {ok} + Failed {bad} != Total {tot}")
    d = w.duration_s
    if d is not None and d < MIN_DURATION_S:  # a denormal: every rate over it would be infinite
        raise InputError(
            file,
            f"{where}.common.Benchmark Duration",
            f"{d:g} s is below {MIN_DURATION_S:g} s: no rate can be taken over it",
        )
    if w.start_s is not None and w.end_s is not None and w.end_s <= w.start_s:
        raise InputError(file, f"{where}.end_s", f"window end {w.end_s} is not after its start {w.start_s}")


def load_pd_campaign(path: str | Path) -> PDCampaign:
    """Load a PD campaign folder: the manifest (campaign + PD schema) and every ``pd`` run.

    The PD page reads no ``/metrics``, so unlike the general loader this does not require the
    engine's metric-name profile to be known.
    """
    root, mpath, manifest = open_manifest(path)
    return pd_campaign(root, mpath, manifest)


def pd_campaign(root: Path, mpath: Path, manifest: dict[str, Any]) -> PDCampaign:
    """The PD part of a campaign whose manifest is already read (``Campaign.pd`` builds it once from
    the campaign's own manifest): checked against the PD schema, every ``pd`` run loaded."""
    validate(manifest, "pd_campaign", mpath)
    if not is_pd(manifest):
        raise InputError(mpath, "$.kind", "not a PD campaign: no kind 'pd' and no arm with mode 'pd'")
    errors: list[InputError] = []
    arms: dict[str, PDArm] = {}
    for name, a in manifest["arms"].items():
        where = f"$.arms.{name}"
        if a.get("mode") != "pd":
            errors.append(InputError(mpath, f"{where}.mode", f"mode {a.get('mode')!r} in a PD campaign; expected 'pd'"))
            continue
        if a["environment"] not in manifest["environments"]:
            errors.append(InputError(mpath, f"{where}.environment", f"unknown environment {a['environment']!r}"))
            continue
        s = a["scheduler"]
        if s["global_chunked_prefill_size"] % s["dp"]:
            errors.append(
                InputError(
                    mpath,
                    f"{where}.scheduler.global_chunked_prefill_size",
                    f"{s['global_chunked_prefill_size']} is not divisible by dp {s['dp']}",
                )
            )
            continue
        chunk = s["global_chunked_prefill_size"] // s["dp"]
        if chunk % s["page_size"]:
            errors.append(
                InputError(
                    mpath,
                    f"{where}.scheduler.page_size",
                    f"per-DP chunk {chunk} is not a multiple of page size {s['page_size']}",
                )
            )
            continue
        arms[name] = PDArm(
            name=name,
            label=a.get("label", name),
            environment=a["environment"],
            prefill_cards=a["prefill_cards"],
            decode_cards=a["decode_cards"],
            global_chunked_prefill_size=s["global_chunked_prefill_size"],
            dp=s["dp"],
            page_size=s["page_size"],
            prefill_max_requests=s["prefill_max_requests"],
            role=a.get("role"),
        )
    classes = manifest.get("prompt_classes", {})
    runs: list[PDRun] = []
    seen: set[str] = set()
    for i, entry in enumerate(manifest["runs"]):
        where = f"$.runs[{i}]"
        if entry["id"] in seen:
            errors.append(InputError(mpath, f"{where}.id", f"duplicate run id {entry['id']!r}"))
            continue
        seen.add(entry["id"])
        if entry["arm"] not in manifest["arms"]:
            errors.append(InputError(mpath, f"{where}.arm", f"unknown arm {entry['arm']!r}"))
            continue
        if entry["arm"] not in arms:
            continue  # the arm's own problem is already reported
        if entry["harness"] != "pd":
            errors.append(
                InputError(mpath, f"{where}.harness", f"harness {entry['harness']!r} in a PD campaign; expected 'pd'")
            )
            continue
        load = entry.get("load", {})
        pc = load.get("prompt_class")
        if pc is not None and pc not in classes:
            errors.append(InputError(mpath, f"{where}.load.prompt_class", f"unknown prompt class {pc!r}"))
            continue
        try:
            file = join_inside(root, root, entry["path"], mpath, f"{where}.path", "run folder") / "pd.json"
            if os.path.lexists(file):
                inside(root, file, mpath, f"{where}.path", "run file pd.json")
        except InputError as e:
            errors.append(e)
            continue
        if not file.is_file():
            errors.append(InputError(mpath, f"{where}.path", f"run folder {entry['path']!r} has no pd.json"))
            continue
        try:
            runs.append(load_pd_run(file, entry["id"], entry["arm"], load, entry.get("purpose"), root=root))
        except InputErrors as e:
            errors.extend(e.errors)
        except InputError as e:
            errors.append(e)
    if errors:
        raise errors[0] if len(errors) == 1 else InputErrors(errors)
    return PDCampaign(root=root, manifest=manifest, arms=arms, runs=runs)


def summary_table(campaign: PDCampaign):
    """Every figure of every run's summary, long format (polars).

    Columns: run, arm, window, section (``metrics``/``common``), metric, stat, value, unit, source
    (``recorded``/``derived``/``approximate``), json_path.
    """
    import polars as pl

    units = {
        "Benchmark Duration": "ms",
        "Concurrency": "requests",
        "Max Concurrency": "requests",
        "Request Throughput": "req/s",
        "Input Token Throughput": "token/s",
        "Output Token Throughput": "token/s",
        "Total Token Throughput": "token/s",
    }
    rows = []
    for r in campaign.runs:
        for wname, w in r.windows.items():
            for m, st in w.metrics.items():
                for s, v in st.items():
                    jp = _json_path_of(wname, "metrics", m, s)
                    rows.append(
                        (
                            r.id,
                            r.arm,
                            wname,
                            "metrics",
                            m,
                            s,
                            float(v),
                            "requests" if s == "N" else "ms",
                            r.source(jp),
                            jp,
                        )
                    )
            for k, v in w.common.items():
                jp = _json_path_of(wname, "common", k)
                rows.append(
                    (r.id, r.arm, wname, "common", k, "value", float(v), units.get(k, "count"), r.source(jp), jp)
                )
    cols = ["run", "arm", "window", "section", "metric", "stat", "value", "unit", "source", "json_path"]
    return pl.DataFrame(rows, schema={c: (pl.Float64 if c == "value" else pl.String) for c in cols}, orient="row")


def load_pd_requests(file: str | Path):
    """Per-request records as a polars frame.

    Columns: index, id, start, first_token, end, input_tokens, output_tokens, success, e2e_s, ttft_s.
    A record whose end precedes its start, or whose first token is outside [start, end], is an
    InputError naming ``$.requests[i]``.
    """
    import polars as pl

    file = Path(file)
    doc = load_json(file)
    validate(doc, "pd_requests", file)
    rows = []
    for i, q in enumerate(doc["requests"]):
        where = f"$.requests[{i}]"
        s, e, ft = float(q["start"]), float(q["end"]), q.get("first_token")
        if e < s:
            raise InputError(file, f"{where}.end", f"end {e} precedes start {s}")
        if ft is not None and not (s <= ft <= e):
            raise InputError(file, f"{where}.first_token", f"first token at {ft} is outside [start {s}, end {e}]")
        rows.append(
            {
                "index": i,
                "id": None if q.get("id") is None else str(q["id"]),
                "start": s,
                "first_token": None if ft is None else float(ft),
                "end": e,
                "input_tokens": q.get("input_tokens"),
                "output_tokens": q.get("output_tokens"),
                "success": bool(q["success"]),
                "e2e_s": e - s,
                "ttft_s": None if ft is None else float(ft) - s,
            }
        )
    if not rows:
        raise InputError(file, "$.requests", "no request records")
    schema = {
        "index": pl.Int64,
        "id": pl.String,
        "start": pl.Float64,
        "first_token": pl.Float64,
        "end": pl.Float64,
        "input_tokens": pl.Int64,
        "output_tokens": pl.Int64,
        "success": pl.Boolean,
        "e2e_s": pl.Float64,
        "ttft_s": pl.Float64,
    }
    return pl.DataFrame(rows, schema=schema)


# --------------------------------------------------------------------------- prefill scheduler log

_PREFILL = re.compile(r"prefill batch\.?", re.IGNORECASE)
_DP = re.compile(r"\bDP\s*(\d+)\b")
_NUM = re.compile(r"^[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?%?$")


def _value(text: str):
    t = text.strip()
    if _NUM.match(t):
        pct = t.endswith("%")
        t = t.rstrip("%")
        v = float(t)
        if pct:
            return v / 100.0
        return int(v) if v.is_integer() and "." not in t and "e" not in t.lower() else v
    return t


def _normalise_key(k: str) -> str:
    return re.sub(r"[^0-9a-z]+", "_", k.strip().lstrip("#").lower()).strip("_")


def parse_prefill_log(text: str, file: str | Path = "<log>"):
    """SGLang-style ``Prefill batch.`` lines -> (frame, exclusions).

    ``... Prefill batch. #new-seq: 2, #new-token: 8196, #cached-token: 0, token usage: 0.01, ...``
    is read as comma-separated ``key: value`` pairs after the marker, whatever the version's field
    set; keys are normalised (``#new-seq`` -> ``new_seq``). Frame columns: line, dp (from a ``DPn``
    tag in the prefix, else null), new_seq, new_token, cached_token (null when absent), fields (the
    other pairs as ``key=value`` text). A report without ``#new-seq`` or ``#new-token`` is excluded
    with its line number.
    """
    import polars as pl

    rows, excl = [], []
    for lineno, line in enumerate(text.splitlines(), start=1):
        m = _PREFILL.search(line)
        if not m:
            continue
        prefix, rest = line[: m.start()], line[m.end() :]
        pairs: dict[str, Any] = {}
        for part in rest.split(","):
            if ":" not in part:
                continue
            k, v = part.split(":", 1)
            key = _normalise_key(k)
            if key:
                pairs[key] = _value(v)
        seq, tok = pairs.pop("new_seq", None), pairs.pop("new_token", None)
        bad = [n for n, v in (("#new-seq", seq), ("#new-token", tok)) if not isinstance(v, int) or v < 0]
        if bad:
            excl.append(
                Exclusion(
                    str(file),
                    f"line {lineno}",
                    f"prefill report without a usable {' and '.join(bad)}: {line.strip()[:120]!r}",
                )
            )
            continue
        cached = pairs.pop("cached_token", None)
        dp = _DP.search(prefix)
        rows.append(
            {
                "line": lineno,
                "dp": int(dp.group(1)) if dp else None,
                "new_seq": seq,
                "new_token": tok,
                "cached_token": cached if isinstance(cached, int) else None,
                "fields": ", ".join(f"{k}={v}" for k, v in pairs.items()),
            }
        )
    schema = {
        "line": pl.Int64,
        "dp": pl.Int64,
        "new_seq": pl.Int64,
        "new_token": pl.Int64,
        "cached_token": pl.Int64,
        "fields": pl.String,
    }
    return pl.DataFrame(rows, schema=schema), excl


def read_prefill_log(file: str | Path):
    """Read a scheduler log file and parse it (see :func:`parse_prefill_log`)."""
    p = Path(file)
    text = read_text(p, "scheduler log", MAX_LOG_BYTES)
    return parse_prefill_log(text, p)
