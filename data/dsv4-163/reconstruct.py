#!/usr/bin/env python3
"""Reconstruct the dsv4-163 example campaign from the seed page's published tables.

The files this script writes are RECONSTRUCTED, not measured: every figure the seed page
prints (medians, min/max, walls, rates, latencies, memory peaks) is a constraint, and every
other number (the order of repeats, the counter values before the first sample, start
offsets, log lines, sample jitter) is a free but fixed choice. See README.md next to it.

Usage:  python data/dsv4-163/reconstruct.py [--out DIR]    (default: this folder)

Standard library only, seeded random, no clock, no environment: the output is byte-identical
on every run (tests/test_dsv4_reconstruction.py checks that the committed files are current).
"""
from __future__ import annotations

import argparse
import itertools
import json
import math
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEED = 163
US = 1_000_000  # all times are built as integer microseconds, written as seconds

COMMIT_1536681 = "15366816ae95983163e824ccb0d1c2eeffab7560"
COMMIT_CCB339D = "ccb339d"
DATE_1536681 = "2026-09-14"
DATE_CCB339D = "2026-09-22"  # free choice: the seed says only "later", after #239/#241
EPOCH = {DATE_1536681: 1789344000, DATE_CCB339D: 1790035200}  # UTC midnight of each date

PROMPT_TOKENS = {"short": 120, "long": 1446}
GEN_TOKENS = 32
DECODE_TOKENS = GEN_TOKENS - 1
CKPT = "/mnt/data3/DeepSeek-V4-Flash-0731"

# --------------------------------------------------------------------------------------
# Manifest content (from the seed's Scope, Configuration and Environment sections)
# --------------------------------------------------------------------------------------

TUNED_VARS = {
    "POCKETLLM_CPP_DECODE_SPARSE_ARENA": "12",
    "DEEPSEEK_GPU_PREFILL_MOE_MAX_CACHED_LAYERS": "43",
    "POCKETLLM_CPP_PREFILL_MOE_PREFETCH": "1",
    "POCKETLLM_CPP_PREFILL_BATCHED_ATTN": "1",
}
SPARSE = {"POCKETLLM_CPP_DECODE_SPARSE_ARENA": "12"}
PREFETCH = {"POCKETLLM_CPP_PREFILL_MOE_PREFETCH": "1"}
CACHED = {"DEEPSEEK_GPU_PREFILL_MOE_MAX_CACHED_LAYERS": "43"}

VARIABLES = {
    "POCKETLLM_CPP_DECODE_SPARSE_ARENA": {
        "default": "0",
        "description": "Use a sparse per-layer arena for decode, and drop the dense prefill "
                       "arenas so all 43 layer arenas stay resident"},
    "DEEPSEEK_GPU_PREFILL_MOE_MAX_CACHED_LAYERS": {
        "default": "0",
        "description": "LRU cap on the resident per-layer active-expert arena cache"},
    "POCKETLLM_CPP_PREFILL_MOE_PREFETCH": {
        "default": "0",
        "description": "Prefetch the next layer's experts during prefill; also enables the "
                       "copy stream"},
    "POCKETLLM_CPP_PREFILL_BATCHED_ATTN": {
        "default": "1",
        "description": "Row-batched prefill attention (already on by default)"},
    "POCKETLLM_CPP_BATCHED_DECODE": {
        "default": "0",
        "description": "Row-batched forward in PersistentEngine::batch_decode_step (#239); "
                       "off keeps the serial per-request reference loop"},
}

ENVIRONMENTS = {
    "default": {"description": "nothing set: every variable at its built-in default",
                "variables": {}},
    "tuned": {"description": "the four switches that matter for this checkpoint",
              "variables": dict(TUNED_VARS)},
    "sparse": {"description": "ablation: sparse decode arena alone, on top of default",
               "variables": dict(SPARSE)},
    "prefetch": {"description": "ablation: prefill MoE prefetch alone, on top of default",
                 "variables": dict(PREFETCH)},
    "cached": {"description": "ablation: 43 cached MoE layers alone, on top of default",
               "variables": dict(CACHED)},
    "sparse+cached": {"description": "ablation: sparse arena + 43 cached layers, the pair the "
                                     "source comment predicts is the operative combination",
                      "variables": {**SPARSE, **CACHED}},
    "tuned+batched-decode": {"description": "tuned plus the batched decode forward (#239)",
                             "variables": {**TUNED_VARS, "POCKETLLM_CPP_BATCHED_DECODE": "1"}},
}

SERIAL_ARGS = {"max_batch_size": 1, "prefill_token_budget": 0}
BATCH_ARGS = {"max_batch_size": 8, "prefill_token_budget": 4096}

ARMS = {
    "default": {
        "label": "default (nothing set)", "mode": "serial", "environment": "default",
        "server_args": SERIAL_ARGS, "commit": COMMIT_1536681, "series": "1536681",
        "role": "baseline",
        "description": "Serial, --max-batch-size 1 --prefill-token-budget 0, no engine "
                       "variable set. Baseline of the environment ablation."},
    "tuned": {
        "label": "tuned (all four)", "mode": "serial", "environment": "tuned",
        "server_args": SERIAL_ARGS, "commit": COMMIT_1536681, "series": "1536681",
        "role": "ablation", "switches": dict(TUNED_VARS),
        "description": "Serial, --max-batch-size 1 --prefill-token-budget 0, the tuned "
                       "environment. The reference for decode-path changes and the "
                       "'all four' row of the ablation."},
    "batch": {
        "label": "batch mode", "mode": "batch", "environment": "tuned",
        "server_args": BATCH_ARGS, "commit": COMMIT_1536681, "series": "1536681",
        "description": "Tuned environment with --max-batch-size 8 --prefill-token-budget "
                       "4096 requested; the scheduler clamped it to width 1, budget 0 "
                       "(caps().continuous_batching hardcoded false)."},
    "sparse": {
        "label": "POCKETLLM_CPP_DECODE_SPARSE_ARENA=12", "mode": "serial",
        "environment": "sparse", "server_args": SERIAL_ARGS, "commit": COMMIT_1536681,
        "series": "1536681", "role": "ablation", "switches": dict(SPARSE),
        "description": "Sparse decode arena alone on top of the default environment."},
    "prefetch": {
        "label": "POCKETLLM_CPP_PREFILL_MOE_PREFETCH=1", "mode": "serial",
        "environment": "prefetch", "server_args": SERIAL_ARGS, "commit": COMMIT_1536681,
        "series": "1536681", "role": "ablation", "switches": dict(PREFETCH),
        "description": "Prefill MoE prefetch alone on top of the default environment."},
    "cached": {
        "label": "DEEPSEEK_GPU_PREFILL_MOE_MAX_CACHED_LAYERS=43", "mode": "serial",
        "environment": "cached", "server_args": SERIAL_ARGS, "commit": COMMIT_1536681,
        "series": "1536681", "role": "ablation", "switches": dict(CACHED),
        "description": "43 cached MoE layers alone on top of the default environment."},
    "sparse+cached": {
        "label": "SPARSE_ARENA=12 + MAX_CACHED_LAYERS=43", "mode": "serial",
        "environment": "sparse+cached", "server_args": SERIAL_ARGS,
        "commit": COMMIT_1536681, "series": "1536681", "role": "ablation",
        "switches": {**SPARSE, **CACHED},
        "description": "The sparse arena and the 43-layer cache together, on top of the "
                       "default environment."},
    "serial": {
        "label": "serial control (ccb339d)", "mode": "serial", "environment": "tuned",
        "server_args": SERIAL_ARGS, "commit": COMMIT_CCB339D, "series": "ccb339d",
        "description": "Commit ccb339d plus the caps() change, tuned environment, "
                       "--max-batch-size 1 --prefill-token-budget 0: the width-1 control."},
    "batched-forward": {
        "label": "batched forward (ccb339d)", "mode": "batch", "environment": "tuned+batched-decode",
        "server_args": BATCH_ARGS, "commit": COMMIT_CCB339D, "series": "ccb339d",
        "description": "Commit ccb339d plus the caps() change, tuned environment with "
                       "POCKETLLM_CPP_BATCHED_DECODE=1, --max-batch-size 8 "
                       "--prefill-token-budget 4096: runs at width 8 (budget still 0, "
                       "chunked_prefill is false)."},
}

SCOPE = {
    "measured": [
        "DeepSeek-V4-Flash-0731 safetensors, FP8 (e4m3) block-quantized weights, "
        "quant_method fp8, weight_block_size [128, 128], 43 layers",
        "the native pocketllm_engine --serve process (server_architecture=deepseek_v4), "
        "not the Python server",
        "CUDA, TP4, four RTX 2080 Ti devices, full model depth",
        "OpenAI /v1/chat/completions, greedy, non-streaming for the throughput ladder and "
        "streaming for the phase split, --max-context 8192",
    ],
    "outside": [
        "Multi-slot execution in the 1536681 baseline: the engine declared up to 8 slots but "
        "ran at width 1 (see the clamps); the ccb339d batched arm runs at width 8 on later "
        "code and is not part of the baseline's result",
        "Token parity against a reference implementation: no PyTorch or GGUF reference run; "
        "the harnesses check well-formed responses that reach their token budget with "
        "finish_reason length, not token ids",
        "The GGUF Q2 path, which has its own engine path and its own baseline",
        "Ascend, which cannot run this checkpoint",
        "Long context: the longest prompt is 1446 tokens; 8192 is only the configured "
        "context limit; no claim about 32K or 64K prefill",
    ],
}

HOST = {
    "GPU": "4 x RTX 2080 Ti, 22528 MiB each, driver 580.173.02",
    "GPU topology": "GPU0-GPU1 PHB, GPU2-GPU3 NV2 (NVLink), every cross pair SYS; TP4 spans "
                    "both NUMA nodes and moves three of its six rank pairs over PCIe",
    "TP / EP world": "TP4, one rank per device, devices 0,1,2,3",
    "CPU / host": "2 x Xeon E5-2696 v4, 88 hardware threads, 2 NUMA nodes, 1007 GiB RAM",
    "Toolchain": "gcc 11.4.0, cmake 3.26.3, nvcc CUDA 13.0",
}

CHECKPOINT = {
    "path": CKPT,
    "size": "156 GB",
    "architecture": "deepseek_v4",
    "layers": "43",
    "routed experts": "256",
    "vocab": "129280",
    "torch_dtype": "bfloat16",
    "quantization": "FP8 (e4m3) block-quantized, quant_method fp8, "
                    "weight_block_size [128, 128]",
}

QUESTION = (
    "What does the PersistentEngine serve on DeepSeek-V4-Flash-0731 (TP4, 4 x RTX 2080 Ti) "
    "one request at a time — throughput, single-request latency, prefill and decode "
    "separately, memory — so that issue #163's concurrent-request work can be judged "
    "against a recorded baseline; and does batch mode change it?")

# --------------------------------------------------------------------------------------
# The seed's published tables (the constraints)
# --------------------------------------------------------------------------------------

# (arm, class): ptok, median prefill seconds S (or None), prefill tok/s (min, med, max),
# decode tok/s (min, med, max), median engine total T (or None).
PHASE_CELLS = {
    ("default", "short"): (2.580, (46.2, 46.5, 46.7), (3.529, 3.554, 3.571), 11.303),
    ("default", "long"): (5.914, (244.0, 244.5, 245.9), (3.248, 3.328, 3.387), 15.117),
    ("tuned", "short"): (2.699, (43.0, 44.5, 44.7), (5.205, 5.248, 5.371), 8.606),
    ("tuned", "long"): (5.139, (276.2, 281.4, 284.3), (4.785, 4.868, 4.936), 11.516),
    ("batch", "short"): (2.775, (42.9, 43.2, 43.8), (4.872, 4.927, 5.114), 9.066),
    ("batch", "long"): (5.148, (274.4, 280.9, 282.9), (4.441, 4.446, 4.602), 12.120),
    ("sparse", "short"): (None, (44.5, 45.2, 45.5), (3.592, 3.598, 3.602), None),
    ("sparse", "long"): (None, (241.0, 241.4, 244.2), (3.356, 3.420, 3.435), None),
    ("prefetch", "short"): (None, (43.6, 45.2, 45.3), (3.416, 3.428, 3.442), None),
    ("prefetch", "long"): (None, (259.0, 263.3, 273.5), (3.295, 3.296, 3.304), None),
    ("cached", "short"): (None, (45.8, 46.6, 46.8), (3.573, 3.577, 3.577), None),
    ("cached", "long"): (None, (221.6, 228.4, 239.7), (3.328, 3.352, 3.359), None),
    ("sparse+cached", "short"): (None, (38.2, 42.6, 43.3), (4.751, 5.104, 5.239), None),
    ("sparse+cached", "long"): (None, (211.4, 212.2, 218.8), (4.876, 4.925, 4.932), None),
    ("serial", "short"): (2.716, (44.0, 44.2, 44.4), (5.314, 5.370, 5.423), 8.489),
    ("serial", "long"): (5.163, (279.8, 280.1, 282.0), (4.442, 4.685, 4.872), 11.780),
    ("batched-forward", "short"): (2.739, (43.4, 43.8, 44.8), (5.199, 5.422, 5.450), 8.482),
    ("batched-forward", "long"): (5.113, (281.2, 282.8, 283.9), (4.796, 4.988, 5.099), 11.173),
}
# tuned/short: "8.640 s against 8.641 s for one tuned short-prompt sample" -> the sample with
# the max prefill rate has engine total 8.640 and client total 8.641.
PHASE_PIN = {("tuned", "short"): {"rank": 2, "engine": 8.640, "client": 8.641}}

PHASE_RUNS = {  # run id -> arm
    "phases-default": "default", "phases-tuned": "tuned", "phases-batch": "batch",
    "phases-sparse": "sparse", "phases-prefetch": "prefetch", "phases-cached": "cached",
    "phases-sparse+cached": "sparse+cached", "phases-serial": "serial",
    "phases-batched": "batched-forward",
}

# Whole-request runs. single: latency (s); ladder: aggregate rate (3 dp) per n, or wall (s)
# where the seed prints the wall; interleave: latency of the short request (s).
REQUEST_RUNS = {
    "serial": {"arm": "default", "single": 11.922,
               "ladder_rate": {2: 2.686, 4: 2.686, 8: 2.686}, "interleave": 26.384,
               # "finish at 11.9 s, 23.8 s, 35.7 s, ..., 95.3 s" (the elided ones: k x 11.9)
               "n8_ends": [11.9, 23.8, 35.7, 47.7, 59.6, 71.5, 83.4, 95.3]},
    "serial2": {"arm": "default", "single": 11.335,
                "ladder_rate": {2: 2.798, 4: 2.806, 8: 2.803}, "interleave": 25.390},
    "tuned": {"arm": "tuned", "single": 9.330,
              "ladder_rate": {2: 3.443, 4: 3.449, 8: 3.444}, "interleave": 20.439},
    "tuned2": {"arm": "tuned", "single": 8.682,
               "ladder_rate": {2: 3.683, 4: 3.775, 8: 3.770}, "interleave": 19.289},
    "batch": {"arm": "batch", "single": 8.845,
              "ladder_rate": {2: 3.582, 4: 3.538, 8: 3.544}, "interleave": 20.187},
    "serial-ccb339d": {"arm": "serial", "single": 8.656,
                       "ladder_wall": {2: 17.734, 4: 34.760, 8: 69.495},
                       "n8_latency": (39.113, 69.490), "interleave": 19.660},
    "batched-ccb339d": {"arm": "batched-forward", "single": 8.978,
                        "ladder_wall": {2: 16.581, 4: 27.624, 8: 42.927},
                        "n8_latency": (42.830, 42.925), "interleave": 18.538},
}

# Memory: peak / steady GPU per rank (GiB, 2 dp, max over ranks). None = not printed.
MEMORY_RUNS = {
    "memory-default": {"arm": "default", "peak": 8.19, "steady": 6.29, "host": True},
    "memory-tuned": {"arm": "tuned", "peak": 15.57, "steady": 8.15, "host": True},
    "memory-batch": {"arm": "batch", "peak": 16.42, "steady": 9.73, "host": True},
    "memory-serial": {"arm": "serial", "peak": 15.90, "steady": None, "host": False},
    "memory-batched": {"arm": "batched-forward", "peak": 17.52, "steady": None, "host": False},
}
SHMEM_LOADED_GIB = 137.1
MEMAVAIL_IDLE_GIB = 997.1
MEMAVAIL_LOADED_GIB = 853.0
PSS_SUM_GIB = 285

# --------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------


def half(dp: int) -> float:
    return 0.5 * 10 ** -dp


def near(x: float, target: float, dp: int, margin: float = 0.2) -> bool:
    """x rounds to target at dp decimals, with at least margin*half-width to spare."""
    return abs(x - target) <= half(dp) * (1 - margin)


def sec(us: int) -> float:
    return us / US


def fmt6(us: int) -> str:
    """Seconds with six decimals, as the engine's std::to_string writes them."""
    return f"{us // US}.{us % US:06d}"


def median3(xs):
    return sorted(xs)[1]


def json_text(obj) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False) + "\n"


def records_json(head: dict, key: str, records: list, tail: dict | None = None) -> str:
    """A JSON object whose `key` array is written one record per line (diff-friendly)."""
    lines = ["{"]
    for k, v in head.items():
        lines.append(f"  {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)},")
    body = ",\n".join("    " + json.dumps(r, ensure_ascii=False) for r in records)
    end = "," if tail else ""
    lines.append(f"  {json.dumps(key)}: [\n{body}\n  ]{end}")
    if tail:
        items = list(tail.items())
        for i, (k, v) in enumerate(items):
            sep = "," if i < len(items) - 1 else ""
            if isinstance(v, list):
                inner = ",\n".join("    " + json.dumps(r, ensure_ascii=False) for r in v)
                lines.append(f"  {json.dumps(k)}: [\n{inner}\n  ]{sep}")
            else:
                lines.append(f"  {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}{sep}")
    lines.append("}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------
# Phase cells: three measured samples that give exactly the printed figures
# --------------------------------------------------------------------------------------


def us_range(lo: float, hi: float, shrink: float = 0.2) -> tuple[int, int]:
    w = hi - lo
    return math.ceil((lo + shrink * w) * US), math.floor((hi - shrink * w) * US)


def seconds_interval(tokens: int, rate: float, dp: int) -> tuple[float, float]:
    """Seconds that make tokens/seconds round to rate at dp decimals."""
    h = half(dp)
    return tokens / (rate + h), tokens / (rate - h)


def solve_cell(rng: random.Random, ptok: int, cell, pin=None):
    """Return [(prefill_us, decode_us)] for the three measured samples, ordered by rank of the
    prefill rate (min, median, max). Pairing of decode values with prefill values is searched
    over the six permutations, preferring 'fastest prefill with slowest decode'."""
    s_med, rates, drates, t_med = cell
    pre = [seconds_interval(ptok, r, 1) for r in rates]
    if s_med is not None:  # the median sample also fixes the printed prefill seconds
        lo, hi = pre[1]
        pre[1] = (max(lo, s_med - half(3)), min(hi, s_med + half(3)))
        assert pre[1][0] < pre[1][1], ("empty prefill interval", cell)
    dec = [seconds_interval(DECODE_TOKENS, d, 3) for d in drates]
    perms = [(2, 1, 0), (0, 1, 2), (1, 0, 2), (2, 0, 1), (0, 2, 1), (1, 2, 0)]
    # stay well inside the rounding intervals when possible; two cells sit at the edge
    for shrink in (0.2, 0.02):
        pre_us = [us_range(*iv, shrink) for iv in pre]
        dec_us = [us_range(*iv, shrink) for iv in dec]
        for perm in perms:
            for _ in range(1500):
                p = [rng.randint(*r) for r in pre_us]
                d = [rng.randint(*dec_us[perm[i]]) for i in range(3)]
                if t_med is not None:  # aim the median sample's total at the printed T
                    tot = [a + b for a, b in zip(p, d)]
                    j = tot.index(median3(tot))
                    (plo, phi), (dlo, dhi) = pre_us[j], dec_us[perm[j]]
                    want = round(t_med * US)
                    lo, hi = max(plo, want - dhi), min(phi, want - dlo)
                    if lo <= hi:
                        p[j] = (lo + hi) // 2
                        d[j] = want - p[j]
                if pin is not None:
                    i = pin["rank"]
                    want = round(pin["engine"] * US)
                    if not (want - 300 <= p[i] + d[i] <= want):
                        continue
                if check_cell(ptok, cell, p, d, margin=shrink):
                    return list(zip(p, d)), perm
    if t_med is None or pin is not None:
        raise SystemExit(f"no sample set satisfies cell {cell}")
    # The printed median total cannot be reached with every printed rate held (see README):
    # keep the rates and prefill seconds exact and get the median total as close as possible.
    best = None
    for perm in perms:
        for _ in range(1000):
            p = [rng.randint(*r) for r in pre_us]
            d = [rng.randint(*dec_us[perm[i]]) for i in range(3)]
            if not check_cell(ptok, (s_med, rates, drates, None), p, d, margin=0.02):
                continue
            err = abs(sec(median3([a + b for a, b in zip(p, d)])) - t_med)
            if best is None or err < best[0]:
                best = (err, list(zip(p, d)), perm)
    DEVIATIONS.append(f"median engine total {t_med:.3f} s is unreachable with the printed "
                      f"rates; closest reconstructed: "
                      f"{sec(median3([a + b for a, b in best[1]])):.3f} s (cell {cell})")
    return best[1], best[2]


DEVIATIONS: list[str] = []


def check_cell(ptok, cell, p, d, margin=0.2) -> bool:
    s_med, rates, drates, t_med = cell
    pr = sorted(ptok / sec(x) for x in p)
    dr = sorted(DECODE_TOKENS / sec(x) for x in d)
    if not all(near(a, b, 1, margin) for a, b in zip(pr, rates)):
        return False
    if not all(near(a, b, 3, margin) for a, b in zip(dr, drates)):
        return False
    if s_med is not None and not near(sec(median3(p)), s_med, 3, margin):
        return False
    if t_med is not None and not near(sec(median3([a + b for a, b in zip(p, d)])), t_med, 3,
                                      margin):
        return False
    return True


# --------------------------------------------------------------------------------------
# Prometheus /metrics exposition of the pocket engine
# --------------------------------------------------------------------------------------

TTFT_LE = ["0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "30", "60", "+Inf"]
DUR_LE = ["0.1", "0.5", "1", "2.5", "5", "10", "15", "20", "30", "60", "120", "+Inf"]


class Engine:
    """Cumulative counters of one server process, written as /metrics text."""

    def __init__(self, rng: random.Random, arm: str, date: str, start_offset_s: int):
        self.rng = rng
        self.arm = ARMS[arm]
        self.ttft = []   # observed values, microseconds
        self.dur = []
        self.prompt = 0
        self.gen = 0
        self.success = 0
        self.error = 0
        self.cpu_us = 0
        self.start_time = EPOCH[date] + start_offset_s
        self.rss = 0
        self.log: list[str] = []

    def observe(self, ttft_us: int, dur_us: int, ptok: int, ctok: int, cpu_factor=0.93):
        self.ttft.append(ttft_us)
        self.dur.append(dur_us)
        self.prompt += ptok
        self.gen += ctok
        self.success += 1
        self.cpu_us += int(dur_us * cpu_factor) + self.rng.randint(2000, 9000)

    def _hist(self, name: str, help_: str, les, values) -> list[str]:
        out = [f"# HELP {name} {help_}", f"# TYPE {name} histogram"]
        for le in les:
            bound = math.inf if le == "+Inf" else float(le)
            n = sum(1 for v in values if sec(v) <= bound)
            out.append(f'{name}_bucket{{le="{le}"}} {n}')
        out.append(f"{name}_sum {fmt6(sum(values))}")
        out.append(f"{name}_count {len(values)}")
        return out

    def exposition(self) -> str:
        a = self.arm
        short = a["commit"][:7]
        mbs = a["server_args"]["max_batch_size"]
        lines = [
            "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.",
            "# TYPE process_cpu_seconds_total counter",
            f"process_cpu_seconds_total {fmt6(self.cpu_us)[:-4]}",
            "# HELP process_resident_memory_bytes Resident memory size in bytes.",
            "# TYPE process_resident_memory_bytes gauge",
            f"process_resident_memory_bytes {self.rss}",
            "# HELP process_start_time_seconds Start time of the process since unix epoch in "
            "seconds.",
            "# TYPE process_start_time_seconds gauge",
            f"process_start_time_seconds {self.start_time}",
            "# HELP process_open_fds Number of open file descriptors.",
            "# TYPE process_open_fds gauge",
            "process_open_fds 97",
            "# HELP pocket_build_info Build of the running pocketllm_engine.",
            "# TYPE pocket_build_info gauge",
            f'pocket_build_info{{commit="{short}",build_type="Release",cuda="13.0",'
            f'arch="sm_75",server_architecture="deepseek_v4"}} 1',
            "# HELP pocket_scheduler_max_slots Slots the engine declares.",
            "# TYPE pocket_scheduler_max_slots gauge",
            f"pocket_scheduler_max_slots {mbs}",
            "# HELP pocket_requests_total Finished requests by final status.",
            "# TYPE pocket_requests_total counter",
            f'pocket_requests_total{{status="success"}} {self.success}',
            f'pocket_requests_total{{status="error"}} {self.error}',
            "# HELP pocket_tokens_total Tokens processed, by type.",
            "# TYPE pocket_tokens_total counter",
            f'pocket_tokens_total{{type="prompt"}} {self.prompt}',
            f'pocket_tokens_total{{type="generation"}} {self.gen}',
        ]
        lines += self._hist("pocket_ttft_seconds",
                            "Time from request submission to the first generated token.",
                            TTFT_LE, self.ttft)
        lines += self._hist("pocket_request_duration_seconds",
                            "Time from request submission to the end of the response.",
                            DUR_LE, self.dur)
        lines += [
            "# HELP pocket_requests_running Requests currently holding a slot.",
            "# TYPE pocket_requests_running gauge",
            "pocket_requests_running 0",
            "# HELP pocket_requests_waiting Requests queued for a slot.",
            "# TYPE pocket_requests_waiting gauge",
            "pocket_requests_waiting 0",
        ]
        return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------
# server.log
# --------------------------------------------------------------------------------------


def startup_log(arm_id: str, port: int, load_s: float, probe_error: bool = False) -> list[str]:
    a = ARMS[arm_id]
    env = ENVIRONMENTS[a["environment"]]["variables"]
    sa = a["server_args"]
    declared = sa["max_batch_size"]
    batched = env.get("POCKETLLM_CPP_BATCHED_DECODE") == "1" and declared > 1
    width = declared if batched else 1
    short = a["commit"][:7]
    envs = " ".join(f"{k}={v}" for k, v in env.items()) or \
        "(no POCKETLLM_CPP_* / DEEPSEEK_GPU_* variable set)"
    lines = [
        f"[launcher] cpp_engine/build/pocketllm_engine --serve --ckpt {CKPT} "
        f"--devices 0,1,2,3 --layers 0 --max-context 8192 --max-batch-size {declared} "
        f"--prefill-token-budget {sa['prefill_token_budget']} --host 127.0.0.1 --port {port}",
        f"[launcher] environment: {envs}",
        "[launcher] starting 4 ranks (tp_world=4)",
    ]
    for r in range(4):
        lines.append(f"[rank {r}] pocketllm_engine {short} (Release, CUDA 13.0, sm_75) "
                     f"device {r}: NVIDIA GeForce RTX 2080 Ti, 22528 MiB")
    lines += [
        f"[server] listening on 127.0.0.1:{port} (/v1/chat/completions, /health, /metrics)",
        "[rank 0] nccl: tp_world=4 ring 0->1->2->3 (0-1 PHB, 2-3 NV2, cross pairs SYS)",
        f"[loader] {CKPT}: server_architecture=deepseek_v4 layers=43 n_routed_experts=256 "
        "vocab_size=129280 torch_dtype=bfloat16",
        "[loader] quantization_config: quant_method=fp8 fmt=e4m3 weight_block_size=[128, 128]",
        "[loader] mapped 46 safetensors shards read-only (156.0 GB)",
    ]
    for var, meta in VARIABLES.items():
        if var == "POCKETLLM_CPP_BATCHED_DECODE" and a["series"] == "1536681":
            continue  # the switch does not exist at 1536681
        lines.append(f"[engine] {var}={env.get(var, meta['default'])}"
                     f"{'' if var in env else ' (default)'}")
    lines.append("[server] GET /health 503 (loading)")
    if probe_error:
        lines.append("[server] POST /v1/chat/completions 503 engine not ready")
    lines += [
        f"[engine] PersistentEngine ready: 43 layers on 4 ranks, load {load_s:.1f} s",
        f"[server] batch width {width} (engine declares max_slots={declared}, "
        f"continuous_batching={'yes' if batched else 'no'}), prefill budget 0",
        "[server] GET /health 200",
    ]
    return lines


def request_line(stream: bool, ptok: int, ctok: int = GEN_TOKENS) -> str:
    return (f"[server] POST /v1/chat/completions 200 stream={'true' if stream else 'false'} "
            f"prompt_tokens={ptok} completion_tokens={ctok} finish_reason=length")


def shutdown_log() -> list[str]:
    return ["[server] SIGTERM: stopping, 0 requests in flight",
            "[rank 0] exited 0", "[rank 1] exited 0", "[rank 2] exited 0", "[rank 3] exited 0"]


# --------------------------------------------------------------------------------------
# Builders
# --------------------------------------------------------------------------------------


class Out:
    def __init__(self, root: Path):
        self.root = root
        self.files: dict[str, str] = {}

    def put(self, rel: str, text: str):
        assert rel not in self.files, rel
        self.files[rel] = text

    def write(self):
        for rel, text in sorted(self.files.items()):
            path = self.root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8", newline="\n")


def run_date(arm_id: str) -> str:
    return DATE_CCB339D if ARMS[arm_id]["series"] == "ccb339d" else DATE_1536681


def build_phase_run(out: Out, rng: random.Random, run_id: str, arm_id: str, k: int):
    cells = {}
    for cls in ("short", "long"):
        ptok = PROMPT_TOKENS[cls]
        cell = PHASE_CELLS[(arm_id, cls)]
        pairs, _ = solve_cell(rng, ptok, cell, PHASE_PIN.get((arm_id, cls)))
        pairs = list(enumerate(pairs))  # keep the rank for the pinned sample
        rng.shuffle(pairs)              # the min is not always the first repeat
        med_p = median3([p for _, (p, _) in pairs])
        med_d = median3([d for _, (_, d) in pairs])
        warm = (int(med_p * rng.uniform(1.28, 1.45)), int(med_d * rng.uniform(1.06, 1.11)))
        cells[cls] = [(None, warm)] + pairs

    date = run_date(arm_id)
    eng = Engine(rng, arm_id, date, 3600 * 9 + 600 * k)
    eng.rss = 2_161_000_000 + 4096 * rng.randint(0, 20000)
    log = startup_log(arm_id, 18200 + k, rng.uniform(168, 186), probe_error=True)
    # the harness's readiness probe: one request refused while loading, two 1-token
    # non-streamed pings (no first-token instant on that path: ttft == duration)
    eng.error += 1
    for _ in range(2):
        d = rng.randint(380_000, 1_900_000)
        eng.observe(d, d, 9, 1)
        log.append(request_line(False, 9, 1))

    samples = []
    before = eng.exposition()
    for rep in range(4):
        for cls in ("short", "long"):
            rank, (p_us, d_us) = cells[cls][rep]
            total = p_us + d_us
            pinned = PHASE_PIN.get((arm_id, cls))
            if pinned and rank == pinned["rank"]:
                client = round(pinned["client"] * US) + 100
                assert 1000 <= client - total <= 3000
            else:
                client = total + rng.randint(1000, 3000)
            eng.observe(p_us, total, PROMPT_TOKENS[cls], GEN_TOKENS)
            eng.rss += 4096 * rng.randint(0, 300)
            after = eng.exposition()
            stem = f"metrics/{cls}-{rep}"
            out.put(f"runs/{run_id}/{stem}.before.prom", before)
            out.put(f"runs/{run_id}/{stem}.after.prom", after)
            samples.append({
                "prompt_class": cls, "repeat": rep, "warmup": rep == 0,
                "client_total_s": sec(client),
                "first_event_s": sec(rng.randint(1800, 6500)),
                "metrics_before": f"{stem}.before.prom",
                "metrics_after": f"{stem}.after.prom"})
            log.append(request_line(True, PROMPT_TOKENS[cls]))
            before = after
    out.put(f"runs/{run_id}/phases.json",
            records_json({"format": "benchbook.phases/1", "run": run_id, "warmup_rounds": 1},
                         "samples", samples))
    out.put(f"runs/{run_id}/server.log", "\n".join(log + shutdown_log()) + "\n")


def wall_for_rate(n: int, rate: float) -> int:
    """A wall (whole milliseconds, as us) whose aggregate rate rounds to rate at 3 dp."""
    ideal = n * GEN_TOKENS / rate
    for delta in (0, 1, -1, 2, -2, 3, -3):
        w = (round(ideal * 1000) + delta) * 1000
        if near(n * GEN_TOKENS / sec(w), rate, 3, margin=0.3):
            return w
    raise SystemExit(f"no wall for n={n} rate={rate}")


def serial_group(rng, t0: int, n: int, wall: int, mean_lat: float | None = None,
                 ends_1dp: list | None = None):
    """n requests submitted within a few ms, served one after another, FIFO."""
    for _ in range(10000):
        times = _serial_group(rng, t0, n, wall, mean_lat)
        if ends_1dp is None or [round(sec(e - t0), 1) for _, e in times] == ends_1dp:
            return times
    raise SystemExit(f"no serial group with ends {ends_1dp}")


def _serial_group(rng, t0, n, wall, mean_lat):
    starts = sorted([0] + [rng.randint(300, 5000) for _ in range(n - 1)])
    if mean_lat is not None:
        starts[-1] = 5000  # the last one in defines the worst latency = wall - 5 ms
    weights = [1 + rng.uniform(-0.004, 0.004) for _ in range(n)]
    scale = wall / sum(weights)
    svc = [int(w * scale) for w in weights]
    svc[-1] += wall - sum(svc)
    if mean_lat is not None:
        # shift x from each later request to the first one: sum of ends moves by n/2 * x
        target = round(mean_lat * US) * n + sum(starts)
        ends = list(itertools.accumulate(svc))
        y = (target - sum(ends)) * 2 // (n * (n - 1))  # moves sum(ends) by y*n*(n-1)/2
        svc[0] += y * (n - 1)
        for i in range(1, n):
            svc[i] -= y
        ends = list(itertools.accumulate(svc))
        fix = target - sum(ends)  # leftover microseconds: move the second end only
        svc[1] += fix
        svc[2] -= fix
    ends = list(itertools.accumulate(svc))
    return [(t0 + s, t0 + e) for s, e in zip(starts, ends)]


def batched_group(rng, t0: int, n: int, wall: int, lat: tuple | None = None):
    """n rows in one batch: submitted within a few ms, answered together with the batch;
    responses leave the server one after another, in no particular order."""
    starts = [0] + sorted(rng.randint(300, 7000) for _ in range(n - 1))
    last = rng.randrange(1, n) if n > 1 else 0
    if lat is not None:
        mean_lat, worst = lat
        starts[last] = wall - round(worst * US)
        starts = [0] + sorted(starts[1:])
        last = starts.index(wall - round(worst * US))
        gaps_total = n * wall - sum(starts) - round(mean_lat * US) * n
        w = [rng.uniform(0.3, 1.7) for _ in range(n - 1)]
        gaps = [int(gaps_total * x / sum(w)) for x in w]
        gaps[0] += gaps_total - sum(gaps)
    else:
        gaps = [rng.randint(2000, 40000) for _ in range(n - 1)]
    ends, gi = [], 0
    for i in range(n):
        if i == last:
            ends.append(wall)
        else:
            ends.append(wall - gaps[gi])
            gi += 1
    return [(t0 + s, t0 + e) for s, e in zip(starts, ends)]


def build_request_run(out: Out, rng: random.Random, run_id: str, spec: dict, k: int):
    arm_id = spec["arm"]
    batched = arm_id == "batched-forward"
    single = round(spec["single"] * US)
    reqs = []
    t = 0

    def add(scenario, n, times, classes=None):
        for i, (s, e) in enumerate(times):
            cls = classes[i] if classes else "short"
            reqs.append({"scenario": scenario, "n": n, "index": i, "prompt_class": cls,
                         "start": sec(s), "end": sec(e),
                         "prompt_tokens": PROMPT_TOKENS[cls],
                         "completion_tokens": GEN_TOKENS, "finish_reason": "length",
                         "stream": False})
        return max(e for _, e in times) + rng.randint(150_000, 400_000)

    # warm-up ladder: first request pays one-off costs, then n=2 and n=4
    t = add("warmup", 1, [(t, t + int(single * rng.uniform(1.35, 1.6)))])
    for n in (2, 4):
        w = int(single * n * rng.uniform(1.01, 1.04)) if not batched else \
            int(single * (1 + 0.28 * (n - 1)) * rng.uniform(1.01, 1.04))
        grp = batched_group(rng, t, n, w) if batched else serial_group(rng, t, n, w)
        t = add("warmup", n, grp)
    t = add("single", 1, [(t, t + single)])
    for n in (2, 4, 8):
        if "ladder_wall" in spec:
            wall = round(spec["ladder_wall"][n] * US)
        else:
            wall = wall_for_rate(n, spec["ladder_rate"][n])
        lat = spec.get("n8_latency") if n == 8 else None
        if batched:
            grp = batched_group(rng, t, n, wall, lat)
        else:
            grp = serial_group(rng, t, n, wall, lat[0] if lat else None,
                               spec.get("n8_ends") if n == 8 else None)
        t = add("ladder", n, grp)
    # interleave: a long request, then a short one 0.5 s later while it is in flight
    inter = round(spec["interleave"] * US)
    short_start = t + 500_000
    short_end = short_start + inter
    if batched:  # both rows decode in the same batch; the long one started decoding first
        long_end = short_end - rng.randint(700_000, 1_100_000)
    else:        # the short one waits for the long one, then takes a single request's time
        long_end = short_end - single - rng.randint(-40_000, 40_000)
    t = add("interleave", 2, [(t, long_end), (short_start, short_end)], ["long", "short"])

    out.put(f"runs/{run_id}/requests.json",
            records_json({"format": "benchbook.requests/1", "run": run_id}, "requests", reqs))
    log = startup_log(arm_id, 18100 + k, rng.uniform(168, 186))
    log += [request_line(False, r["prompt_tokens"]) for r in
            sorted(reqs, key=lambda r: (r["end"], r["index"]))]
    log += ["[harness] streaming check ok", "[harness] disconnect recovery check ok"]
    out.put(f"runs/{run_id}/server.log", "\n".join(log + shutdown_log()) + "\n")
    return reqs


GIB_KIB = 1024 * 1024


def gib_to_mib_center(gib: float) -> int:
    """A MiB value whose GiB (2 dp) rounds to gib, with room for ranks a few MiB lower."""
    return int(round(gib * 1024)) + 2


def build_memory_run(out: Out, rng: random.Random, run_id: str, spec: dict, k: int,
                     pss_sum_kib: int | None, request_windows):
    arm_id = spec["arm"]
    peak = gib_to_mib_center(spec["peak"])
    steady = gib_to_mib_center(spec["steady"]) if spec["steady"] else int(peak * 0.55)
    loaded0 = int(steady * 0.93)           # after the load, before the first request
    rank_off = [0, -2, -4, -3]
    load_start = 4_300_000
    load_end = load_start + rng.randint(171_000_000, 179_000_000)
    markers = [{"t": sec(load_start), "event": "load_start"},
               {"t": sec(load_end), "event": "load_end"}]
    # request windows: (label, duration_us, peak_here, level_during, prefill_us)
    t = load_end + rng.randint(2_500_000, 4_000_000)
    levels = []  # (start, end, mib, prefill_end, prefill_mib)
    for label, dur, level, pre, pre_mib in request_windows(peak, steady, loaded0):
        markers.append({"t": sec(t), "event": "request_start", "label": label})
        markers.append({"t": sec(t + dur), "event": "request_end", "label": label})
        levels.append((t, t + dur, level, t + pre, pre_mib))
        t += dur + rng.randint(300_000, 900_000)
    stop = t + rng.randint(60_000_000, 70_000_000)  # idle settle before stop
    markers.append({"t": sec(stop), "event": "stop"})
    end = stop + 10_000_000

    idle_avail = round(MEMAVAIL_IDLE_GIB * GIB_KIB)
    loaded_avail = round(MEMAVAIL_LOADED_GIB * GIB_KIB)
    shm_base = 12_044
    shm_loaded = round(SHMEM_LOADED_GIB * GIB_KIB)
    pss_rank = None
    if pss_sum_kib is not None:
        split = [0.2546, 0.2486, 0.2483, 0.2485]  # rank 0 also hosts the HTTP server
        pss_rank = [int(pss_sum_kib * s) for s in split]
        pss_rank[0] += pss_sum_kib - sum(pss_rank)

    peak_hit = False
    samples = []
    for ti in range(0, end + 1, 2_000_000):
        if ti < load_start or ti >= stop:
            gpu = 0
            frac = 0.0
        elif ti < load_end:
            frac = (ti - load_start) / (load_end - load_start)
            gpu = int(305 + (loaded0 - 305) * frac)
        else:
            frac = 1.0
            gpu = loaded0
            for (a, b, level, pre_end, pre_mib) in levels:
                if a <= ti < b:
                    gpu = pre_mib if ti < pre_end else level
                    if pre_mib == peak and ti < pre_end:
                        if peak_hit:
                            gpu = peak - rng.randint(20, 60)
                        peak_hit = True
                if ti >= b:
                    gpu = steady
        ranks = [max(0, gpu + off) if gpu else rng.choice([0, 1]) for off in rank_off]
        rec = {"t": sec(ti), "gpu_used_mib": ranks}
        shm = shm_base if frac == 0.0 else shm_base + int((shm_loaded - shm_base) * frac)
        if frac == 1.0:
            shm = shm_loaded
        rec["shmem_kib"] = shm
        if spec["host"]:
            jit = rng.randint(-3000, 3000)
            avail = idle_avail + int((loaded_avail - idle_avail) * frac)
            rec["mem_available_kib"] = avail + jit
            if pss_rank is not None and load_start <= ti < stop:
                rec["pss_kib"] = [int(p * (0.02 + 0.98 * frac)) for p in pss_rank]
        samples.append(rec)
    assert peak_hit, run_id
    out.put(f"runs/{run_id}/memory.json",
            records_json({"format": "benchbook.memory/1", "run": run_id, "interval_s": 2.0},
                         "samples", samples, {"markers": markers}))
    log = startup_log(arm_id, 18300 + k, sec(load_end - load_start))
    log += [request_line(False, PROMPT_TOKENS.get(m["label"], 120)) for m in markers
            if m["event"] == "request_end" and m["label"] in PROMPT_TOKENS]
    out.put(f"runs/{run_id}/server.log", "\n".join(log + shutdown_log()) + "\n")


def two_requests(rng, arm_id):
    """Memory runs of 1536681: one 128-word and one 1600-word request; the peak is taken
    during the long prompt's prefill, the allocator then settles at `steady`."""
    sp = round(PHASE_CELLS[(arm_id, "short")][0] * US)
    lp = round(PHASE_CELLS[(arm_id, "long")][0] * US)
    st = round(PHASE_CELLS[(arm_id, "short")][3] * US) + rng.randint(-50_000, 50_000)
    lt = round(PHASE_CELLS[(arm_id, "long")][3] * US) + rng.randint(-50_000, 50_000)

    def windows(peak, steady, loaded0):
        short_level = loaded0 + (steady - loaded0) // 2
        return [("short", st, short_level, sp, short_level + 180),
                ("long", lt, steady + (peak - steady) // 3, lp, peak)]
    return windows


def ladder_windows(rng, run_id):
    """ccb339d memory runs: the concurrency harness's groups, peak at the widest point."""
    spec = REQUEST_RUNS[run_id.replace("memory-", "") + "-ccb339d"]
    batched = spec["arm"] == "batched-forward"
    single = round(spec["single"] * US)
    groups = [("warmup", int(single * 1.45)), ("single", single)]
    groups += [(f"n={n}", round(w * US)) for n, w in spec["ladder_wall"].items()]
    groups += [("interleave", round(spec["interleave"] * US) + 500_000)]

    def windows(peak, steady, loaded0):
        res = []
        for label, dur in groups:
            if batched:
                level = {"n=8": peak - 260, "n=4": steady + 700, "n=2": steady + 350}.get(
                    label, steady + 120)
                pre_mib = peak if label == "n=8" else level
                pre = dur // 2
            else:
                level = steady + 90
                pre_mib = peak if label == "interleave" else steady + 600
                pre = 5_200_000
            res.append((label, dur, level, pre, pre_mib))
        return res
    return windows


def build_manifest(runs: list) -> str:
    m = {
        "format": "benchbook.campaign/1",
        "title": "DeepSeek-V4 PersistentEngine serial baseline",
        "question": QUESTION,
        "date": DATE_1536681,
        "provenance": "reconstructed",
        "scope": SCOPE,
        "host": HOST,
        "checkpoint": CHECKPOINT,
        "engine": {"name": "pocketllm_engine", "profile": "pocket", "commit": COMMIT_1536681,
                   "build": "cpp_engine/build/pocketllm_engine --serve, built Release, "
                            "CMAKE_CUDA_ARCHITECTURES=75"},
        "environments": ENVIRONMENTS,
        "variables": VARIABLES,
        "prompt_classes": {"short": {"words": 128, "tokens": 120},
                           "long": {"words": 1600, "tokens": 1446}},
        "generation_tokens": GEN_TOKENS,
        "arms": ARMS,
        "runs": runs,
        "noise": {"reference_arm": "tuned", "rule": "seed"},
        "comparisons": [
            {"baseline": "default", "candidate": "tuned", "why": "the tuned environment against an unset shell"},
            {"baseline": "tuned", "candidate": "batch", "why": "--max-batch-size 8 --prefill-token-budget 4096 at 1536681"},
            {"baseline": "serial", "candidate": "batched-forward", "why": "the batched forward switched on (ccb339d + caps())"},
        ],
        # The seed's "Comparison with the 2026-08-03 record": the two points of the older prefill
        # curve it interpolates between, as the seed's table prints them (s at prompt tokens).
        "references": [
            {"name": "dsv4_0731_e2e_perf_baseline", "date": "2026-08-03",
             "source": "seed page 000_d8db1e5203279a7a, table 'Comparison with the 2026-08-03 record', "
                       "row 'Prefill, ~1440 tokens' (786 -> 3.57 s and 1602 -> 5.40 s)",
             "arm": "tuned", "prompt_class": "long", "metric": "prefill_s",
             "points": [{"prompt_tokens": 786, "value": 3.57}, {"prompt_tokens": 1602, "value": 5.40}],
             "note": "The older prefill clock started when the role marker reached the client, before the "
                     "request was submitted, so it measures a longer span than TTFT: comparable in size, "
                     "not subtractable. The seed's prose says about 5.2 s; linear interpolation of its two "
                     "points gives the figure shown."},
        ],
    }
    return json_text(m)


def build(out_dir: Path) -> Out:
    rng = random.Random(SEED)
    out = Out(out_dir)
    runs = []
    for k, (run_id, spec) in enumerate(REQUEST_RUNS.items()):
        build_request_run(out, rng, run_id, spec, k)
        runs.append({"id": run_id, "arm": spec["arm"], "harness": "requests",
                     "path": f"runs/{run_id}", "date": run_date(spec["arm"])})
    for k, (run_id, arm_id) in enumerate(PHASE_RUNS.items()):
        build_phase_run(out, rng, run_id, arm_id, k)
        runs.append({"id": run_id, "arm": arm_id, "harness": "phases",
                     "path": f"runs/{run_id}", "date": run_date(arm_id)})
    base_pss = PSS_SUM_GIB * GIB_KIB
    pss_offsets = {"memory-default": -4_100, "memory-tuned": 2_300, "memory-batch": 6_900}
    for k, (run_id, spec) in enumerate(MEMORY_RUNS.items()):
        if spec["host"]:
            windows = two_requests(rng, spec["arm"])
            pss = base_pss + pss_offsets[run_id]
        else:
            windows = ladder_windows(rng, run_id)
            pss = None
        build_memory_run(out, rng, run_id, spec, k, pss, windows)
        runs.append({"id": run_id, "arm": spec["arm"], "harness": "memory",
                     "path": f"runs/{run_id}", "date": run_date(spec["arm"])})
    out.put("campaign.json", build_manifest(runs))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=HERE, help="output folder (default: %(default)s)")
    args = ap.parse_args(argv)
    out = build(args.out)
    out.write()
    print(f"wrote {len(out.files)} files under {args.out}")
    for dev in DEVIATIONS:
        print(f"deviation: {dev}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
