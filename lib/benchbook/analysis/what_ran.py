"""What ran, compared between server processes and arms in the settings' own units (docs/checks.md).

Each process's settings are what its files state (:func:`benchbook.ingest.server_config.settings`:
``vllm:cache_config_info``, the log's engine-config and startup lines, ``/version``, SGLang's
``server_info``), carried in the manifest as ``server_config.settings``. Two processes differ in what
ran when a setting a person sets (a *knob*: ``gpu_memory_utilization``, ``max_model_len``, block size,
cache dtype, the parallel sizes, quantization, speculative decoding, the engine's version …) states two
values, or when a size the engine derived (the KV cache in tokens and blocks, its memory, the weights)
differs by more than :data:`SIZE_TOLERANCE` — an engine sizes its KV cache from the memory left after
the weights and its CUDA graphs, so two arms of one configuration differ by a few hundred tokens
(930,192 vs 930,672 on the H200 with and without CUDA graphs), and a starved one by 100×.

:func:`differences` lists them as :class:`SettingDifference` values ("KV cache 8,752 vs 930,192 tokens;
gpu_memory_utilization 0.115 vs 0.92"); init's todo, the ablation page's rows and its switches
table read them from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from benchbook.analysis.tables import tables_for
from benchbook.ingest.server_config import SETTINGS

SIZE_TOLERANCE = 0.05  # sizes within 5 % of each other are the same size
OVERRIDES = ("kv_cache_memory_bytes", "num_gpu_blocks_override")  # absent from the info series: not set
# how a setting is named in a sentence (the engine's own name where it has one a user types)
LABELS = {
    "engine_version": "engine version",
    "kv_cache_tokens": "KV cache",
    "num_gpu_blocks": "KV cache blocks",
    "kv_cache_gib": "KV cache memory",
    "kv_cache_max_concurrency": "KV cache room",
    "weights_gib": "weights",
}


def fmt(v: Any) -> str:
    """A setting's value as a page shows it: integers with thousands separators, other numbers to 4
    significant figures, booleans and strings as stated."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, int) or float(v).is_integer():
        return f"{int(v):,}"
    return f"{v:.4g}"


@dataclass(frozen=True)
class SettingDifference:
    name: str
    a: Any  # the first process's value (None: not set)
    b: Any
    unit: str
    kind: str  # "knob" | "size"

    @property
    def label(self) -> str:
        return LABELS.get(self.name, self.name)

    def text(self) -> str:
        unit = f" {self.unit}" if self.unit and self.unit != "of GPU memory" else ""
        if self.a is None or self.b is None:  # "num_gpu_blocks_override 17 blocks vs not set"
            a = "not set" if self.a is None else fmt(self.a) + unit
            b = "not set" if self.b is None else fmt(self.b) + unit
            return f"{self.label} {a} vs {b}"
        return f"{self.label} {fmt(self.a)} vs {fmt(self.b)}{unit}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "setting": self.name,
            "a": self.a,
            "b": self.b,
            "unit": self.unit,
            "kind": self.kind,
            "text": self.text(),
        }


def _values(settings: Mapping[str, Any] | None) -> dict[str, Any]:
    return {k: (v.get("value") if isinstance(v, Mapping) else v) for k, v in (settings or {}).items()}


def differences(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> list[SettingDifference]:
    """Where two processes' settings (``server_config.settings`` dicts) differ, in :data:`SETTINGS`
    order, sizes first: a knob both state with two values (an override one states while the other's
    info series has none: "not set"), a size both state that differs by more than
    :data:`SIZE_TOLERANCE`. A setting only one side states is not a difference — its files are silent."""
    va, vb = _values(a), _values(b)
    out: list[SettingDifference] = []
    for name, (unit, kind) in SETTINGS.items():
        x, y = va.get(name), vb.get(name)
        if x is None and y is None:
            continue
        if x is None or y is None:
            if name in OVERRIDES and "num_gpu_blocks" in va and "num_gpu_blocks" in vb:
                out.append(SettingDifference(name, x, y, unit, kind))
            continue
        if kind == "size" and isinstance(x, (int, float)) and isinstance(y, (int, float)):
            lo = min(abs(x), abs(y))
            if lo == 0 and x == y:
                continue
            if lo and abs(x - y) / lo <= SIZE_TOLERANCE:
                continue
        elif x == y or str(x) == str(y):
            continue
        out.append(SettingDifference(name, x, y, unit, kind))
    return sorted(out, key=lambda d: d.kind != "size")


# a size that says the same as another one shown beside it (blocks × block size = tokens)
IMPLIED = {"kv_cache_tokens": ("num_gpu_blocks", "kv_cache_gib", "kv_cache_max_concurrency")}


def shown(diffs: list[SettingDifference]) -> list[SettingDifference]:
    """The differences a sentence names: the KV cache in tokens stands for its blocks, memory and room."""
    names = {d.name for d in diffs}
    drop = {x for k, xs in IMPLIED.items() if k in names for x in xs}
    return [d for d in diffs if d.name not in drop]


def text(diffs: list[SettingDifference]) -> str:
    """The differences as one phrase ("KV cache 8,752 vs 930,192 tokens; gpu_memory_utilization 0.115
    vs 0.92")."""
    return "; ".join(d.text() for d in shown(diffs))


SUMMARY_KEYS = (
    "kv_cache_tokens",
    "num_gpu_blocks",
    "gpu_memory_utilization",
    "mem_fraction_static",
    "kv_cache_memory_bytes",
    "num_gpu_blocks_override",
    "weights_gib",
    "max_model_len",
    "max_num_batched_tokens",
    "block_size",
    "kv_cache_dtype",
    "tensor_parallel_size",
    "pipeline_parallel_size",
    "data_parallel_size",
    "quantization",
    "speculative",
    "engine_version",
)


def columns(settings: Mapping[str, Any] | None) -> dict[str, str]:
    """One process's settings as table cells (label with unit -> value), in :data:`SUMMARY_KEYS` order."""
    vals = _values(settings)
    out = {}
    for k in SUMMARY_KEYS:
        if vals.get(k) is None:
            continue
        unit = SETTINGS[k][0]
        head = LABELS.get(k, k) + (f" ({unit})" if unit and unit != "of GPU memory" else "")
        out[head] = fmt(vals[k])
    return out


def summary(settings: Mapping[str, Any] | None) -> str:
    """The capacity a process ran with, in one phrase ("KV cache 930,192 tokens, gpu_memory_utilization
    0.92, weights 13.91 GiB"); "" where its files state none of them."""
    vals = _values(settings)
    parts = []
    for k in ("kv_cache_tokens", "gpu_memory_utilization", "mem_fraction_static", "weights_gib"):
        if vals.get(k) is not None:
            unit = SETTINGS[k][0]
            unit = f" {unit}" if unit and unit != "of GPU memory" else ""
            parts.append(f"{LABELS.get(k, k)} {fmt(vals[k])}{unit}")
    return ", ".join(parts)


def process_settings(camp: Any) -> dict[str, dict[str, Any]]:
    """process (``arm/run``) -> its ``server_config.settings`` as the manifest carries them; for a
    manifest an older init wrote (a ``server_config`` without ``settings``), read from the process's
    own folder (``runs/<arm>/<run>``: :func:`settings_from_folder`)."""
    return tables_for(camp).derived(("process_settings",), lambda: _process_settings(camp))


def _process_settings(camp: Any) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for r in camp.manifest.get("runs", []):
        if not (isinstance(r, dict) and r.get("process") and isinstance(r.get("server_config"), dict)):
            continue
        if r["process"] in out:
            continue
        stated = r["server_config"].get("settings")
        out[r["process"]] = stated if isinstance(stated, dict) else settings_from_folder(camp, r["process"])
    return out


def settings_from_folder(camp: Any, process: str) -> dict[str, Any]:
    """The settings a process's folder states (its server logs, its ``version.json``, and the first
    /metrics capture in it: every capture of one process states the same ``vllm:cache_config_info``);
    ``{}`` where the folder is not there."""
    from benchbook.ingest import run_layout, server_config

    folder = camp.root / "runs" / process
    if not folder.is_dir() or folder.is_symlink():
        return {}
    logs = sorted(p for p in folder.rglob("*.log") if p.name in run_layout.LOG_NAMES or "server" in p.name)
    versions = sorted(p for p in folder.rglob("*") if p.name in run_layout.VERSION_NAMES)
    infos = sorted(p for p in folder.rglob("*") if p.name in run_layout.INFO_NAMES)
    first = next((p for p in sorted(folder.rglob("*.prom*")) if p.is_file() and not p.is_symlink()), None)

    def own(ps: list[Any]) -> list[Any]:  # each checked to lie inside the campaign (no symlink out)
        return [camp.inside(q, q, "-", "server file") for q in ps]

    cfg = server_config.read_server_config(own([first] if first else []), own(logs), own(infos), versions=own(versions))
    return server_config.settings(cfg)


def arm_settings(camp: Any, arm: str) -> dict[str, Any]:
    """The settings of ``arm``'s first server process (init checks its processes agree)."""
    procs = process_settings(camp)
    for r in camp.manifest.get("runs", []):
        if isinstance(r, dict) and r.get("arm") == arm and r.get("process") in procs:
            return procs[r["process"]]
    return {}


def arm_differences(camp: Any, arm: str, base: str) -> list[SettingDifference]:
    """Where ``arm``'s server ran otherwise than ``base``'s (``arm``'s value first)."""
    return differences(arm_settings(camp, arm), arm_settings(camp, base))
