"""The physical limit beside the figures it bounds (docs/checks.md).

- **Decode floor** per token at batch 1: every weight is read once per step, so
  ``floor_s = weight_bytes ÷ memory bandwidth`` (+ ``kv_bytes_per_token × context`` ÷ bandwidth where the
  model's shape is known: the KV cache read per step grows with the context). A measured time per
  output token (TPOT, or 1 / the phase split's decode rate) is shown as "achieved x % of the limit"
  = ``floor_s ÷ measured_s``.
- **Prefill ceiling**: a forward pass costs ``2 × parameters`` FLOP per token, so
  ``ceiling_tok_s = peak dense FLOP/s ÷ (2 × parameters)``; a measured prefill rate is
  ``rate ÷ ceiling`` of it (attention's own FLOPs are left out: the ceiling is generous at short
  context).

A figure beyond its limit (a TPOT below the floor, a prefill rate above the ceiling) is a failed
check: the measurement or the inputs are wrong (a cached prompt, a wrong GPU, quantized weights).

Inputs, each named on the page with where it came from: weight bytes from the engine's log (vLLM
``Model loading took 13.91 GiB``, per GPU), a checkpoint's ``model.safetensors.index.json``
``total_size`` or its safetensors headers, else the config's shape; the GPU from ``nvidia-smi -q``
(``Product Name``) or the manifest's ``host.GPU``; bandwidth and dense peaks from
``benchbook/data/accelerators.json``, each entry with its public source.
"""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from benchbook.errors import InputError
from benchbook.findings import Check

GIB = 2**30
DTYPE_BYTES = {"bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2, "half": 2, "float32": 4, "fp32": 4, "fp8": 1}
DTYPE_PEAK = {"bfloat16": "bf16", "bf16": "bf16", "float16": "fp16", "fp16": "fp16", "half": "fp16", "fp8": "fp8"}
_LOADING = re.compile(r"Model loading took ([0-9.]+) ?(GiB|GB|MiB)")
_PRODUCT = re.compile(r"^\s*Product Name\s*:\s*(.+?)\s*$", re.M)


@dataclass(frozen=True)
class Accelerator:
    name: str
    match: tuple[str, ...]
    memory_bandwidth_Bps: float
    peak_flops: Mapping[str, float]
    source: str
    max_power_W: float | None = None  # the board power limit (configurable parts: their highest setting)
    power_source: str = ""

    def peak(self, dtype: str) -> tuple[float | None, str]:
        """(dense peak FLOP/s for ``dtype``, the precision used): bf16 falls back to fp16 where the part
        has no bf16 (Turing)."""
        want = DTYPE_PEAK.get(dtype.lower(), dtype.lower())
        if want in self.peak_flops:
            return self.peak_flops[want], want
        if want == "bf16" and "fp16" in self.peak_flops:
            return self.peak_flops["fp16"], "fp16 (no bf16 on this part)"
        return None, want


@cache
def accelerators() -> tuple[Accelerator, ...]:
    """The documented accelerator table (``benchbook/data/accelerators.json``)."""
    from importlib import resources

    doc = json.loads(resources.files("benchbook").joinpath("data/accelerators.json").read_text("utf-8"))
    return tuple(
        Accelerator(
            a["name"],
            tuple(a["match"]),
            float(a["memory_bandwidth_Bps"]),
            dict(a["peak_flops"]),
            a["source"],
            float(a["max_power_W"]) if a.get("max_power_W") else None,
            a.get("power_source", ""),
        )
        for a in doc["accelerators"]
    )


def find_accelerator(gpu_name: str | None) -> Accelerator | None:
    """The first table entry one of whose ``match`` strings occurs in ``gpu_name`` (case-insensitive)."""
    if not gpu_name:
        return None
    low = gpu_name.lower()
    for a in accelerators():
        if any(m.lower() in low for m in a.match):
            return a
    return None


def gpu_from_smi_q(text: str) -> str | None:
    """The ``Product Name`` of ``nvidia-smi -q`` output (the first GPU's)."""
    m = _PRODUCT.search(text)
    return m.group(1) if m else None


# ---- weight bytes -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Weights:
    bytes: float  # per GPU
    source: str  # where the figure came from, in words


def weights_from_log(text: str, source: str = "server log") -> Weights | None:
    """vLLM's ``Model loading took 13.91 GiB`` (the weights one GPU holds); the last such line."""
    found = _LOADING.findall(text)
    if not found:
        return None
    v, unit = found[-1]
    scale = {"GiB": GIB, "GB": 1e9, "MiB": 2**20}[unit]
    return Weights(float(v) * scale, f"{source}: 'Model loading took {v} {unit}'")


def weights_from_index(path: str | Path) -> Weights:
    """``metadata.total_size`` of a checkpoint's ``model.safetensors.index.json``."""
    p = Path(path)
    try:
        doc = json.loads(p.read_text("utf-8"))
        size = float(doc["metadata"]["total_size"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise InputError(p, "$.metadata.total_size", f"no checkpoint size: {e}") from None
    return Weights(size, f"{p.name}: metadata.total_size")


def weights_from_safetensors(paths: list[str | Path]) -> Weights:
    """The tensors' bytes from the safetensors headers (8-byte length, then JSON with ``data_offsets``)."""
    total = 0
    for path in paths:
        p = Path(path)
        with p.open("rb") as f:
            head = f.read(8)
            if len(head) != 8:
                raise InputError(p, "header", "shorter than a safetensors header")
            (n,) = struct.unpack("<Q", head)
            if n > 100 * 2**20:
                raise InputError(p, "header", f"header length {n} is not plausible")
            try:
                meta = json.loads(f.read(n))
            except ValueError as e:
                raise InputError(p, "header", f"header is not JSON: {e}") from None
        for name, t in meta.items():
            if name == "__metadata__":
                continue
            lo, hi = t["data_offsets"]
            total += hi - lo
    return Weights(float(total), f"safetensors headers of {len(paths)} file(s)")


def shape_of(config: Mapping[str, Any]) -> dict[str, int]:
    """hidden, layers, heads, kv_heads, intermediate, vocab, head_dim of a Llama-like ``config.json``."""
    try:
        h, n_l = int(config["hidden_size"]), int(config["num_hidden_layers"])
        heads = int(config["num_attention_heads"])
        kvh = int(config.get("num_key_value_heads", heads))
        return {
            "hidden": h,
            "layers": n_l,
            "heads": heads,
            "kv_heads": kvh,
            "intermediate": int(config["intermediate_size"]),
            "vocab": int(config["vocab_size"]),
            "head_dim": int(config.get("head_dim") or h // heads),
            "tied": bool(config.get("tie_word_embeddings", False)),
        }
    except (KeyError, TypeError, ValueError) as e:
        raise InputError("config.json", str(e), "not a Llama-like shape (hidden_size, num_hidden_layers …)") from None


def parameters_from_shape(s: Mapping[str, int]) -> float:
    """Parameters of a Llama-like decoder: embeddings (+ an untied LM head), per layer q/k/v/o, the
    gated MLP (3 × hidden × intermediate) and two norms, plus the final norm."""
    h, kv = s["hidden"], s["kv_heads"] * s["head_dim"]
    attn = h * s["heads"] * s["head_dim"] + 2 * h * kv + s["heads"] * s["head_dim"] * h
    layer = attn + 3 * h * s["intermediate"] + 2 * h
    emb = s["vocab"] * h * (1 if s["tied"] else 2)
    return float(emb + s["layers"] * layer + h)


def kv_bytes_per_token(s: Mapping[str, int], dtype_bytes: float) -> float:
    """KV-cache bytes one token of context adds: 2 (K and V) × layers × kv_heads × head_dim × dtype."""
    return 2.0 * s["layers"] * s["kv_heads"] * s["head_dim"] * dtype_bytes


# ---- the limits -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Limit:
    """One measured figure beside its physical limit."""

    kind: str  # "decode floor" | "prefill ceiling" | "memory bandwidth" | "compute" (the engine's estimate)
    what: str  # the figure, e.g. "batch: TPOT at concurrency 1"
    measured: float
    limit: float
    unit: str  # "s/token" | "tok/s" | "B/s" | "FLOP/s"
    share: float  # achieved share of the limit (≤ 1 unless the figure is impossible)
    formula: str
    inputs: Mapping[str, Any] = field(default_factory=dict)
    run: str | None = None
    arm: str | None = None

    @property
    def beyond(self) -> bool:
        return self.share > 1.0

    def check(self) -> Check:
        fig = {"run": self.run, "arm": self.arm, "measured": self.measured, "limit": self.limit, "share": self.share}
        if self.beyond:
            return Check(
                f"{self.kind}: {self.what}",
                "fail",
                f"{self.describe()}: beyond what the hardware allows, so the measurement or its inputs are "
                "wrong (a cached prompt, another GPU, quantized weights)",
                fig,
            )
        return Check(f"{self.kind}: {self.what}", "pass", self.describe(), fig)

    def describe(self) -> str:
        if self.unit == "s/token":
            m, lim = f"{1e3 * self.measured:.2f} ms/token", f"{1e3 * self.limit:.2f} ms floor"
        elif self.unit == "B/s":
            m, lim = f"{self.measured / 1e12:.3g} TB/s", f"{self.limit / 1e12:.3g} TB/s peak"
        elif self.unit == "FLOP/s":
            m, lim = f"{self.measured / 1e12:.4g} TFLOP/s", f"{self.limit / 1e12:.4g} TFLOP/s peak"
        else:
            m, lim = f"{self.measured:,.0f} tok/s", f"{self.limit:,.0f} tok/s ceiling"
        return f"{self.what}: {m} against a {lim} ({self.formula}) — achieved {100 * self.share:.0f} % of the limit"

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "what": self.what,
            "run": self.run,
            "arm": self.arm,
            "measured": self.measured,
            "limit": self.limit,
            "unit": self.unit,
            "share": self.share,
            "beyond": self.beyond,
            "formula": self.formula,
            "inputs": dict(self.inputs),
            "text": self.describe(),
        }


def decode_floor_s(weight_bytes: float, bandwidth_Bps: float, kv_bytes: float = 0.0) -> float:
    """Seconds per decode step at batch 1: (weights + KV cache read) ÷ memory bandwidth."""
    return (weight_bytes + kv_bytes) / bandwidth_Bps


def prefill_ceiling_tok_s(parameters: float, peak_flops: float) -> float:
    """Prompt tokens per second at the dense peak: peak ÷ (2 × parameters)."""
    return peak_flops / (2.0 * parameters)


def decode_limit(
    what: str,
    tpot_s: float,
    weights: Weights,
    acc: Accelerator,
    *,
    kv_per_token: float | None = None,
    context_tokens: float | None = None,
    run: str | None = None,
    arm: str | None = None,
) -> Limit:
    """A measured time per output token at batch 1 against the decode floor."""
    kv = (kv_per_token or 0.0) * (context_tokens or 0.0)
    floor = decode_floor_s(weights.bytes, acc.memory_bandwidth_Bps, kv)
    gb = weights.bytes / 1e9
    formula = f"{gb:.2f} GB of weights" + (f" + {kv / 1e9:.3f} GB of KV cache" if kv else "")
    formula += f" ÷ {acc.memory_bandwidth_Bps / 1e12:.3g} TB/s ({acc.name})"
    inputs = {
        "weight_bytes": weights.bytes,
        "weights_source": weights.source,
        "kv_bytes": kv,
        "accelerator": acc.name,
        "memory_bandwidth_Bps": acc.memory_bandwidth_Bps,
        "accelerator_source": acc.source,
    }
    return Limit("decode floor", what, tpot_s, floor, "s/token", floor / tpot_s, formula, inputs, run, arm)


def prefill_limit(
    what: str,
    rate_tok_s: float,
    parameters: float,
    parameters_source: str,
    acc: Accelerator,
    dtype: str = "bfloat16",
    *,
    run: str | None = None,
    arm: str | None = None,
) -> Limit | None:
    """A measured prefill rate against the dense-peak ceiling; None when the table has no peak for ``dtype``."""
    peak, used = acc.peak(dtype)
    if peak is None:
        return None
    ceiling = prefill_ceiling_tok_s(parameters, peak)
    formula = f"{peak / 1e12:.4g} TFLOP/s {used} dense ({acc.name}) ÷ (2 × {parameters / 1e9:.3g} B parameters)"
    inputs = {
        "parameters": parameters,
        "parameters_source": parameters_source,
        "peak_flops": peak,
        "precision": used,
        "accelerator": acc.name,
        "accelerator_source": acc.source,
    }
    return Limit("prefill ceiling", what, rate_tok_s, ceiling, "tok/s", rate_tok_s / ceiling, formula, inputs, run, arm)


def engine_estimate_limits(
    what: str,
    seconds: float,
    acc: Accelerator,
    *,
    read_bytes: float | None = None,
    flops: float | None = None,
    dtype: str = "bfloat16",
    run: str | None = None,
    arm: str | None = None,
) -> list[Limit]:
    """The engine's own cost estimate over a window (vLLM 0.26+ ``estimated_read_bytes_per_gpu_total`` /
    ``estimated_flops_per_gpu_total``, per GPU) as rates against the bandwidth and the dense peak: an
    engine that claims to have read or computed more than the part can in that time is a failed check."""
    out = []
    if read_bytes and seconds > 0:
        rate = read_bytes / seconds
        bw = acc.memory_bandwidth_Bps
        out.append(
            Limit(
                "memory bandwidth",
                f"{what}: engine-estimated bytes read per second",
                rate,
                bw,
                "B/s",
                rate / bw,
                f"{read_bytes / 1e9:.3g} GB ÷ {seconds:.3g} s against {bw / 1e12:.3g} TB/s ({acc.name})",
                {
                    "read_bytes": read_bytes,
                    "seconds": seconds,
                    "accelerator": acc.name,
                    "accelerator_source": acc.source,
                },
                run,
                arm,
            )
        )
    peak, used = acc.peak(dtype)
    if flops and seconds > 0 and peak:
        rate = flops / seconds
        out.append(
            Limit(
                "compute",
                f"{what}: engine-estimated FLOP per second",
                rate,
                peak,
                "FLOP/s",
                rate / peak,
                f"{flops / 1e12:.3g} TFLOP ÷ {seconds:.3g} s against {peak / 1e12:.4g} TFLOP/s {used} dense ({acc.name})",
                {"flops": flops, "seconds": seconds, "accelerator": acc.name, "accelerator_source": acc.source},
                run,
                arm,
            )
        )
    return out
