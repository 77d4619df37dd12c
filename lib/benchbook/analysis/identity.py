"""Configuration identity of benchmark runs, duplicates found by content, and what may be compared.

A run's *identity* is what its file says about the configuration it measured, field by field, in
four groups:

* ``model``      — everything the file says about the model: its full path or id (``/mnt/ckpt/sft-run-A/final``
  and ``/mnt/ckpt/dpo-run-B/final`` are two models), revision, served name and tokenizer;
* ``dataset``    — dataset name, input/output length settings (or, when the file has no settings,
  the measured mean prompt/output tokens per request, equal within :data:`MEASURED_TOL`) and the
  number of prompts;
* ``load``       — offered request rate, maximum concurrency and (vLLM) burstiness — the sweep axis —,
  and the prompt count (the size of the run at that load);
* ``deployment`` — client backend, engine version, SGLang ``tag``, vLLM ``label`` and metadata
  (swept server parameters such as ``max_num_seqs``), parallelism, GPU count, hardware,
  prefill/decode disaggregation, and a user's label.

A *configuration* is model, dataset and deployment (everything the server ran, the user's arm name
included); the load is not part of it: runs of one configuration at several loads are its curve
(:func:`same_configuration`), and runs of one configuration at one load (:func:`same_point`) are
*repeats* (a field recorded for one run and not the other disagrees). A user may add or override fields, or declare runs the same
configuration, with :class:`Overrides` (a ``benchbook-compare.yml`` beside the files, or ``--label``).

Two configurations are *comparable* (a ratio and a verdict between them mean something) only when
model and dataset agree; configurations that differ in load alone form a sweep.

*Duplicates* are the same run read twice (one report as JSON and YAML, AIPerf's JSON, CSV and JSONL,
a vLLM sweep's ``summary.json`` beside its ``run=N.json``): every identity field both files record
agrees, and identical per-request records, or every shared run-level figure equal (within the
rounding of a CSV export) when a file has no records. Runs that completed nothing are never
duplicates by their figures ("both failed" is not "the same run"). A duplicate set counts once.

Every string read into an identity is normalised first (:func:`clean_text`: NFC, zero-width and
bidirectional controls removed), so ``eager`` and ``eager\u200b`` are one label and a right-to-left
override cannot reorder a page.
"""

from __future__ import annotations

import fnmatch
import hashlib
import math
import os
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchbook.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    from benchbook.ingest.formats import BenchmarkRun

GROUPS = ("model", "dataset", "load", "deployment")
#: the load fields that place a run on a curve (the prompt count is load-group context, not an axis)
AXES = ("request_rate", "max_concurrency", "burstiness")
#: characters a reader cannot see, or that reorder the text around them: zero-width characters,
#: invisible operators (U+2061-2064), bidirectional controls, variation selectors (U+FE00-FE0F,
#: U+E0100-E01EF, Mongolian U+180B-180F), the combining grapheme joiner U+034F, tag characters
#: (U+E0000-E007F), Hangul fillers (U+115F, U+1160, U+3164, U+FFA0), Khmer U+17B4/17B5
_INVISIBLE = dict.fromkeys(
    [0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF, 0x00AD, 0x200E, 0x200F, 0x061C, 0x034F,
     *range(0x2061, 0x2065), *range(0x202A, 0x202F), *range(0x2066, 0x206A),
     *range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0), *range(0x180B, 0x1810), *range(0xE0000, 0xE0080),
     0x115F, 0x1160, 0x3164, 0xFFA0, 0x17B4, 0x17B5]
)  # fmt: skip


def clean_text(s: str) -> str:
    """``s`` in NFC with invisible characters (:data:`_INVISIBLE`) removed and whitespace — any
    Unicode space, U+2028/2029 line and paragraph separators, tabs — collapsed to one space and
    trimmed at both ends: what a reader sees is what is compared (``eager``, ``eager\u200b``,
    ``eager\u2063`` and ``eager `` are one label)."""
    return " ".join(unicodedata.normalize("NFC", str(s)).translate(_INVISIBLE).split())


def _clean(v: Any) -> Any:
    if isinstance(v, str):
        return clean_text(v)
    if isinstance(v, tuple):
        return tuple(_clean(x) for x in v)
    return v


#: a measured mean (tokens per request) agrees with another within this relative tolerance
MEASURED_TOL = 0.05
#: figures compared to detect duplicates (each must agree where both files carry it)
DUPLICATE_FIGURES = (
    "duration_s", "completed", "failed", "total_input_tokens", "total_output_tokens",
    "request_throughput", "output_throughput", "total_token_throughput",
    *(f"{s}_{m}_ms" for m in ("ttft", "tpot", "itl", "e2el") for s in ("mean", "median", "p99")),
)  # fmt: skip
#: at least this many shared figures must agree before two summaries are called one run
MIN_SHARED_FIGURES = 4
#: CSV exports round to 2 decimals: figures agree within half a unit of that, or a relative 1e-6
ROUNDING_ABS = 0.0051
ROUNDING_REL = 1e-6
COUNTS = ("completed", "failed", "total_input_tokens", "total_output_tokens")
OVERRIDE_FILES = ("benchbook-compare.yml", "benchbook-compare.yaml")
#: keys a user may set per file in an overrides file (besides ``label`` and ``group``)
USER_FIELDS = ("model", "dataset", "input_len", "output_len", "num_prompts", "request_rate", "max_concurrency",
               "engine", "engine_version", "gpus", "hardware", "parallelism")  # fmt: skip


@dataclass(frozen=True)
class Field:
    """One identity field: ``value`` is what is compared, ``shown`` what a reader sees."""

    key: str
    group: str
    label: str
    value: Any
    shown: str
    source: str = "file"  # "file" | "measured" | "user" | "campaign" (the arm campaign.json names)

    def agrees(self, other: Field) -> bool:
        if self.source == "measured" or other.source == "measured":
            a, b = self.value, other.value
            if isinstance(a, (int, float)) and isinstance(b, (int, float)):
                return math.isclose(a, b, rel_tol=MEASURED_TOL)
        return self.value == other.value


@dataclass
class Identity:
    fields: dict[str, Field]
    group: str | None = None  # declared by the user: runs with the same group are one configuration

    def get(self, key: str) -> Field | None:
        return self.fields.get(key)

    def as_rows(self) -> list[dict[str, str]]:
        return [
            {"group": f.group, "field": f.label, "value": f.shown, "source": f.source} for f in self.fields.values()
        ]


@dataclass(frozen=True)
class Difference:
    key: str
    group: str
    label: str
    a: str
    b: str
    measured: bool = False  # a measured mean on either side, not a setting

    def text(self) -> str:
        return f"{self.label} ({self.a} vs {self.b})"


def differences(a: Identity, b: Identity) -> list[Difference]:
    """Every field on which two identities disagree, in field order (absent on one side disagrees)."""
    out = []
    for key in dict.fromkeys([*a.fields, *b.fields]):
        fa, fb = a.fields.get(key), b.fields.get(key)
        if fa is not None and fb is not None and fa.agrees(fb):
            continue
        ref = fa or fb
        assert ref is not None
        measured = any(f is not None and f.source == "measured" for f in (fa, fb))
        a_shown, b_shown = (f.shown if f else "not recorded" for f in (fa, fb))
        out.append(Difference(key, ref.group, ref.label, a_shown, b_shown, measured))
    return out


def same_configuration(a: Identity, b: Identity) -> bool:
    """One configuration: model, dataset and deployment agree (the load may differ: a curve)."""
    if a.group is not None or b.group is not None:
        return a.group == b.group
    return not [d for d in differences(a, b) if d.group != "load"]


def same_point(a: Identity, b: Identity) -> bool:
    """Repeats: one configuration at one load (request rate, concurrency and burstiness agree)."""
    return same_configuration(a, b) and not [d for d in differences(a, b) if d.key in AXES]


def load_key(i: Identity) -> tuple[Any, ...]:
    """The load that places a run on its configuration's curve (None where not recorded)."""
    return tuple(None if i.get(k) is None else i.fields[k].value for k in AXES)


def consistent(a: Identity, b: Identity) -> bool:
    """No field that both record disagrees (what two copies of one run in two formats must satisfy:
    one format may record less than the other)."""
    return all(a.fields[k].agrees(b.fields[k]) for k in a.fields.keys() & b.fields.keys())


def not_comparable_reason(a: Identity, b: Identity) -> str | None:
    """``None`` when model and dataset agree; else ``"not comparable: model differs (…)"``."""
    diffs = [d for d in differences(a, b) if d.group in ("model", "dataset")]
    if any(d.group == "model" for d in diffs):
        # token counts are per tokenizer: measured means of two models say nothing about their dataset
        diffs = [d for d in diffs if not d.measured]
    if not diffs:
        return None
    kinds = list(dict.fromkeys(d.group for d in diffs))
    return f"not comparable: {' and '.join(kinds)} differ{'s' if len(kinds) == 1 else ''} — " + "; ".join(
        d.text() for d in diffs
    )


# ---------------------------------------------------------------------------------------------
# reading an identity off a run


def _num(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        if math.isinf(v):
            return "inf"
        return f"{v:g}"
    return str(v)


def model_key(model: Any) -> str | None:
    """The model as identity compares it: the whole path or id (normalised, no trailing slash) —
    never its last component, which two checkpoints (``…/sft-run-A/final``, ``…/dpo-run-B/final``) share."""
    if model is None or str(model).strip() == "":
        return None
    return clean_text(str(model).strip()).rstrip("/") or "/"


def short_names(names: Sequence[str]) -> list[str]:
    """For each path-like name, the fewest trailing ``/`` components that tell it apart from the
    others (``sft-run-A/final`` and ``dpo-run-B/final``; ``llama8b-random`` alone)."""
    parts = [str(n).rstrip("/").split("/") for n in names]
    out = []
    for p in parts:
        k = 1
        while k < len(p) and sum(q[-k:] == p[-k:] for q in parts) > sum(q == p for q in parts):
            k += 1
        out.append("/".join(p[-k:]))
    return out


def _requests_sent(run: BenchmarkRun) -> tuple[int | None, str]:
    c, s = run.config, run.summary
    if c.get("num_prompts") is not None:
        return int(c["num_prompts"]), "file"
    done, failed = s.get("completed"), s.get("failed")
    if done is None:
        return None, "file"
    return int(done) + int(failed or 0) + int(s.get("incomplete") or 0), "measured"


def _mean_tokens(run: BenchmarkRun, total_key: str) -> float | None:
    s = run.summary
    tot, done = s.get(total_key), s.get("completed")
    if tot is None or not done:
        return None
    return float(tot) / float(done)


def read_identity(run: BenchmarkRun, user: Mapping[str, Any] | None = None) -> Identity:
    """The identity of ``run`` from what its file says, with ``user`` fields (``label``, ``group``,
    any of :data:`USER_FIELDS`) added or overriding."""
    c = run.config
    f: dict[str, Field] = {}

    def put(key: str, group: str, label: str, value: Any, shown: str | None = None, source: str = "file") -> None:
        if value is None or value == "" or value == [] or value == {}:
            return
        shown = clean_text(shown) if shown is not None else _num(_clean(value))
        f[key] = Field(key, group, label, _clean(value), shown, source)

    model = model_key(c.get("model"))
    put("model", "model", "model", model, model)
    for key, label in (("revision", "revision"), ("model_revision", "revision"), ("served_model_name", "served name")):
        put(key if key != "model_revision" else "revision", "model", label, c.get(key))
    tok = model_key(c.get("tokenizer"))
    if tok is not None and tok != model:
        put("tokenizer", "model", "tokenizer", tok, tok)
    # dataset: name and settings the tool recorded; measured means when it recorded none
    dataset = c.get("dataset_name") or c.get("data")
    if isinstance(dataset, (list, tuple)):
        dataset = ", ".join(map(str, dataset))
    put("dataset", "dataset", "dataset", None if dataset is None else str(dataset))
    in_set = out_set = None
    if c.get("dataset_name") == "random" or (c.get("dataset_name") is None and c.get("random_input_len")):
        in_set, out_set = c.get("random_input_len"), c.get("random_output_len")
        if c.get("random_range_ratio"):
            put("range_ratio", "dataset", "length range ratio", c.get("random_range_ratio"))
    elif c.get("dataset_name") == "sharegpt" and c.get("sharegpt_output_len"):
        out_set = c.get("sharegpt_output_len")
    in_set = in_set if in_set is not None else c.get("input_tokens")
    if in_set is not None:
        put("input_len", "dataset", "input length (setting)", in_set)
    else:
        m = _mean_tokens(run, "total_input_tokens")
        put("input_len", "dataset", "input length (measured mean)", m, None if m is None else f"{m:.1f}", "measured")
    if out_set is not None:
        put("output_len", "dataset", "output length (setting)", out_set)
    else:
        m = _mean_tokens(run, "total_output_tokens")
        put("output_len", "dataset", "output length (measured mean)", m, None if m is None else f"{m:.1f}", "measured")
    n, how = _requests_sent(run)
    put("num_prompts", "load", "prompts" if how == "file" else "requests (counted)", n)
    # load
    put("request_rate", "load", "request rate", c.get("request_rate"))
    put("max_concurrency", "load", "max concurrency", c.get("max_concurrency"))
    put("burstiness", "load", "burstiness", c.get("burstiness"))  # vLLM: 1 = Poisson arrivals
    # deployment
    put("engine", "deployment", "backend", c.get("backend"))
    versions = sorted({str(v) for v in (c.get("prefill_versions") or []) + (c.get("decode_versions") or []) if v})
    server = c.get("server") or {}
    if not versions and server.get("version"):
        versions = [str(server["version"])]
    put("engine_version", "deployment", "engine version", ", ".join(versions) or None)
    put("tag", "deployment", "tag", c.get("label") if run.format.startswith("sglang") else None)
    if not run.format.startswith("sglang"):
        put("label", "deployment", "label", c.get("label"))
    for k, v in sorted((c.get("params") or {}).items()):
        if isinstance(v, (str, int, float, bool)) or v is None:
            put(f"param:{k}", "deployment", k, v)
    par = {k: server.get(k) for k in ("tp_size", "pp_size", "dp_size") if server.get(k) is not None}
    if par:
        put(
            "parallelism",
            "deployment",
            "parallelism",
            tuple(sorted(par.items())),
            " ".join(f"{k}={v}" for k, v in par.items()),
        )
    if c.get("disaggregated"):
        shown = f"{c.get('prefill_servers')} prefill + {c.get('decode_servers')} decode server(s) reported"
        put(
            "disaggregation", "deployment", "disaggregation", (c.get("prefill_servers"), c.get("decode_servers")), shown
        )
    put("hardware", "deployment", "hardware", c.get("gpu"))
    group = None
    for key, v in (user or {}).items():
        if key == "group":
            group = str(v)
        elif key == "label":
            put("user_label", "deployment", "label (user)", clean_text(str(v)), source="user")
        elif key == "campaign_arm":  # the arm campaign.json gives the run: it names the configuration too
            if "user_label" not in f:  # a user's own label (--label, benchbook-compare.yml) comes first
                put("user_label", "deployment", "arm (campaign.json)", clean_text(str(v)), source="campaign")
        elif key in USER_FIELDS:
            grp = next(g for g, keys in _USER_GROUPS.items() if key in keys)
            value = model_key(v) if key == "model" else _clean(v)
            f[key] = Field(key, grp, _USER_LABEL.get(key, key), value, clean_text(str(value)), "user")
    return Identity(f, group)


_USER_GROUPS = {
    "model": ("model",),
    "dataset": ("dataset", "input_len", "output_len"),
    "load": ("request_rate", "max_concurrency", "num_prompts"),
    "deployment": ("engine", "engine_version", "gpus", "hardware", "parallelism"),
}
_USER_LABEL = {"input_len": "input length", "output_len": "output length", "num_prompts": "prompts",
               "request_rate": "request rate", "max_concurrency": "max concurrency", "engine": "backend",
               "engine_version": "engine version", "gpus": "GPUs"}  # fmt: skip


def gpu_count(run: BenchmarkRun, ident: Identity) -> int | None:
    """GPUs the run used, where known: the user's ``gpus``, else the product of the server's
    tensor/pipeline/data-parallel sizes (aggregated SGLang servers; unknown for disaggregated ones)."""
    g = ident.get("gpus")
    if g is not None:
        try:
            return int(g.value)
        except (TypeError, ValueError):
            return None
    info = run.config.get("server_info")
    if not isinstance(info, dict):
        return None

    def one(s: Any) -> int | None:
        if not isinstance(s, dict) or s.get("tp_size") is None:
            return None
        return int(s.get("tp_size") or 1) * int(s.get("pp_size") or 1) * int(s.get("dp_size") or 1)

    if isinstance(info.get("prefill"), list) or isinstance(info.get("decode"), list):
        # a disaggregated router lists the servers it reported on, not every server it routes to
        # (a 1-prefill/8-decode run lists one decode server): say "unknown" rather than undercount
        return None
    return one(info)


# ---------------------------------------------------------------------------------------------
# user overrides


def _norm_path(path: str | Path) -> str:
    return os.path.normpath(str(path)).replace(os.sep, "/")


def matches(pattern: str, path: str | Path) -> bool:
    """A ``--label``/overrides pattern against a file: a pattern with a ``/`` is a path (or path
    pattern) as given, compared with the file's whole path or its as many trailing components; one
    without names the file (``fnmatch``)."""
    pat = _norm_path(pattern)
    if "/" in pat:
        p = _norm_path(path)
        k = len(pat.split("/"))  # or its trailing components: "batch/results/*.json" wherever that folder is
        return fnmatch.fnmatchcase(p, pat) or fnmatch.fnmatchcase("/".join(p.split("/")[-k:]), pat)
    return fnmatch.fnmatchcase(Path(path).name, pat)


@dataclass
class Overrides:
    """Per-file identity fields a user declares: ``{file pattern: {label, group, model, …}}``.

    Patterns name a file (``result.json``, ``run_*.json``) or, with a ``/``, its path as given
    (``lab/a/result.json``): :func:`matches`. Read from ``benchbook-compare.yml`` beside the files
    (patterns relative to that folder) and from ``--label FILE=LABEL``.
    """

    entries: list[tuple[str, dict[str, Any], str]] = field(default_factory=list)  # (pattern, fields, where)
    bases: dict[str, str] = field(default_factory=dict)  # where -> folder its patterns are relative to

    def for_file(self, path: str | Path) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for pattern, fields, where in self.entries:
            base = self.bases.get(where)
            if base is not None and "/" in pattern:
                pattern = f"{base}/{pattern}"
            if matches(pattern, path):
                out.update(fields)
        return out

    def sources(self) -> list[str]:
        return list(dict.fromkeys(w.split(":", 1)[0] for _, _, w in self.entries))


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")  # C0 (ESC of terminal sequences, a newline …), DEL, C1


def _no_control(s: str, file: str, where: str, what: str) -> str:
    """``s`` if it holds no control character: one from a user's file or option never reaches a page."""
    m = _CONTROL.search(s)
    if m is not None:
        raise InputError(file, where, f"{what} contains the control character \\x{ord(m.group()):02x}")
    return s


def _check_fields(fields: Any, file: str, where: str) -> dict[str, Any]:
    if not isinstance(fields, dict):
        raise InputError(
            file, where, f"expected {{label, group, {', '.join(USER_FIELDS[:3])}, …}}, found {type(fields).__name__}"
        )
    allowed = ("label", "group", *USER_FIELDS)
    for k, v in fields.items():
        if k not in allowed:
            raise InputError(file, f"{where}.{k}", f"unknown field; choose from {', '.join(allowed)}")
        if not isinstance(v, (str, int, float)) or isinstance(v, bool):
            raise InputError(file, f"{where}.{k}", f"expected a string or a number, found {type(v).__name__}")
        if isinstance(v, str):
            _no_control(v, file, f"{where}.{k}", "value")
    return dict(fields)


def load_overrides(files: Sequence[str | Path], labels: Mapping[str, str] | Iterable[str] = ()) -> Overrides:
    """Overrides from ``benchbook-compare.yml`` in each file's folder, then ``labels``
    (``{file: label}`` or ``["FILE=LABEL", …]``), later entries winning over the files'.

    The YAML is read as every parameter file is (``jsonfile.load_yaml``: 1 MiB, no aliases, no
    duplicate keys); a control character (ESC …) in a pattern or a value is bad input, so none
    reaches a page. A ``--label`` pattern that is exactly a compared file's path or name is that
    file, never a glob (``run[1].json`` is not ``run1.json``); two ``--label`` options giving one
    file different labels are bad input (which is meant?)."""
    from benchbook.jsonfile import MAX_PARAMS_BYTES, load_yaml

    ov = Overrides()
    folders: dict[Path, Path] = {}  # resolved folder -> the folder as the files were given (no machine path on a page)
    for f in files:
        folders.setdefault(Path(f).resolve().parent, Path(f).parent)
    for folder in folders.values():
        for name in OVERRIDE_FILES:
            p = folder / name
            if not p.is_file():
                continue
            doc = load_yaml(p, MAX_PARAMS_BYTES)
            if not isinstance(doc, dict) or not isinstance(doc.get("files"), dict):
                raise InputError(p, "$", "expected {files: {file name or pattern: {label, group, …}}}")
            for pattern, fields in doc["files"].items():
                _no_control(str(pattern), str(p), "$.files", "file pattern")
                where = f"{p}:$.files.{pattern}"
                ov.entries.append((str(pattern), _check_fields(fields, str(p), f"$.files.{pattern}"), where))
                ov.bases[where] = _norm_path(folder)
    items = labels.items() if isinstance(labels, Mapping) else [_split_label(s) for s in labels]
    given: dict[str, tuple[str, str]] = {}  # file -> (label, the --label that gave it)
    for pattern, label in items:
        pattern, label = str(pattern), clean_text(str(label))
        _no_control(label, "parameters", f"labels: {pattern}", "label")
        exact = [f for f in files if pattern in (str(f), _norm_path(f), Path(f).name)]
        hit = exact or [f for f in files if matches(pattern, f)]
        if not hit:
            raise InputError(
                "parameters",
                f"labels: {pattern}",
                f"--label {pattern}={label} matches none of the files compared ({_some(files)}); "
                "give a file's path as given, its name or a pattern",
            )
        for f in hit:
            before = given.get(str(f))
            if before is not None and before[0] != label:
                raise InputError(
                    "parameters",
                    f"labels: {pattern}",
                    f"{f} is labelled twice: --label {before[1]}={before[0]} and --label {pattern}={label} "
                    "(which is meant? give one)",
                )
            given[str(f)] = (label, pattern)
        key = _literal(pattern) if exact else pattern
        ov.entries.append((key, {"label": label}, f"--label:{pattern}"))
    return ov


def _literal(name: str) -> str:
    """``name`` as an fnmatch pattern matching only itself (``[``, ``*``, ``?`` bracketed)."""
    return re.sub(r"([\[\]*?])", r"[\1]", name)


def _some(files: Sequence[Any], n: int = 4) -> str:
    return ", ".join(map(str, files[:n])) + (f", … {len(files) - n} more" if len(files) > n else "")


def _split_label(s: str) -> tuple[str, str]:
    if "=" not in s:
        raise InputError("parameters", "labels", f"expected FILE=LABEL, found {s!r}")
    k, v = s.split("=", 1)
    if not k or not v:
        raise InputError("parameters", "labels", f"expected FILE=LABEL, found {s!r}")
    return k, v


# ---------------------------------------------------------------------------------------------
# duplicates


def requests_fingerprint(run: BenchmarkRun) -> str | None:
    """A hash of the per-request records (TTFT, E2E, token counts, success), or None without them."""
    df = run.requests
    if df is None or df.height == 0:
        return None
    import polars as pl

    cols = df.select(
        pl.col("ttft_s").round(9), pl.col("e2e_s").round(9), "prompt_tokens", "completion_tokens", "success"
    )
    if all(cols[c].null_count() == cols.height for c in ("ttft_s", "e2e_s")):
        return None
    h = hashlib.sha256()
    for c in cols.columns:
        h.update(repr(cols[c].to_list()).encode())
    return h.hexdigest()


def _figure_agree(key: str, a: Any, b: Any) -> bool:
    if key in COUNTS:
        return int(a) == int(b)
    return math.isclose(float(a), float(b), rel_tol=ROUNDING_REL, abs_tol=ROUNDING_ABS)


def same_figures(a: BenchmarkRun, b: BenchmarkRun) -> tuple[bool, list[str]]:
    """True when at least :data:`MIN_SHARED_FIGURES` run-level figures are present in both and all agree."""
    shared = [k for k in DUPLICATE_FIGURES if a.summary.get(k) is not None and b.summary.get(k) is not None]
    if len(shared) < MIN_SHARED_FIGURES:
        return False, shared
    return all(_figure_agree(k, a.summary[k], b.summary[k]) for k in shared), shared


@dataclass
class DuplicateSet:
    kept: int  # index of the run that stands for the set
    members: list[int]  # every index in the set, the kept one included, in input order
    why: str


def _richness(run: BenchmarkRun) -> tuple[int, int, int]:
    return (
        0 if run.requests is None else 1,
        sum(v is not None for v in run.summary.values() if not isinstance(v, (dict, list))),
        sum(v is not None and v != {} for v in run.config.values()),
    )


def find_duplicates(runs: Sequence[BenchmarkRun]) -> list[DuplicateSet]:
    """Sets of runs that are one run read more than once (only sets of two or more)."""
    parent = list(range(len(runs)))
    why: list[tuple[int, str]] = []

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    prints = [requests_fingerprint(r) for r in runs]
    idents = [read_identity(r) for r in runs]
    for i in range(len(runs)):
        for j in range(i + 1, len(runs)):
            if not consistent(idents[i], idents[j]):
                continue  # another model, dataset, load or deployment: never the same run
            if prints[i] is not None and prints[j] is not None and prints[i] != prints[j]:
                continue  # both keep their requests, and the requests differ
            ok, shared = same_figures(runs[i], runs[j])
            if ok and runs[i].summary.get("completed") == 0:
                ok = False  # nothing completed: all-zero figures say nothing about which run it was
            if ok:
                more = ", …" if len(shared) > 4 else ""
                reason = f"the same {len(shared)} run-level figures ({', '.join(shared[:4])}{more})"
            elif prints[i] is not None and prints[i] == prints[j]:
                reason = f"identical per-request records ({runs[i].requests.height} requests)"  # type: ignore[union-attr]
            else:
                continue
            ri, rj = root(i), root(j)
            if ri != rj:
                parent[rj] = ri
            why.append((i, reason))
    sets: dict[int, list[int]] = {}
    for i in range(len(runs)):
        sets.setdefault(root(i), []).append(i)
    out = []
    for members in sets.values():
        if len(members) < 2:
            continue
        kept = max(members, key=lambda i: (_richness(runs[i]), -i))
        reasons = list(dict.fromkeys(w for a, w in why if a in members))
        out.append(DuplicateSet(kept, members, "; ".join(reasons)))
    return sorted(out, key=lambda d: d.members[0])


def config_label(cfg: Mapping[str, Any]) -> str:
    """A short name for a configuration from a run's config — the model and what the file names the
    server (its label or ``--metadata arm=…``) — as ``benchbook init`` names an arm. The load is not in
    it: the runs of one configuration at every load share the arm (its curve). A name, not an
    identity: runs sharing it may still differ (see :func:`read_identity`), and the page keeps them apart."""
    model = clean_text(str(cfg.get("model") or "unknown model")).rstrip("/").split("/")[-1]
    params = cfg.get("params") if isinstance(cfg.get("params"), Mapping) else {}
    name = cfg.get("label") or params.get("arm")
    return model if name in (None, "") else f"{model} · {clean_text(str(name))}"
