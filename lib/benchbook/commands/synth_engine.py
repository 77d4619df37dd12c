"""The timing model and the synthetic engine behind ``benchbook synth`` (docs/bench.md).

The model's constants (:class:`Model`), the harness protocol it is run through, prefill-first FCFS
scheduling of one group (:func:`simulate_group`), seeded random streams, and :class:`PocketEngine`,
the cumulative counters of the synthetic engine rendered as `pocket` /metrics text. Only the standard
library is imported (the CLI must stay fast).
"""

from __future__ import annotations

import math
import random
from dataclasses import asdict, dataclass

PROMPT_CLASSES = {"short": {"words": 128, "tokens": 120}, "long": {"words": 1600, "tokens": 1446}}
GENERATION_TOKENS = 32
# The concurrency harness's protocol: (scenario, n, prompt classes in submission order, offsets).
PROTOCOL = [
    ("single", 1, ["short"], [0.0]),
    ("ladder", 2, ["short"] * 2, [0.0] * 2),
    ("ladder", 4, ["short"] * 4, [0.0] * 4),
    ("ladder", 8, ["short"] * 8, [0.0] * 8),
    ("interleave", 2, ["long", "short"], [0.0, 1.0]),  # the short request starts 1 s into the long one
]
WARMUP = ("warmup", 1, ["short"], [0.0])
ROUND0 = 1 + sum(g[1] for g in PROTOCOL)  # 18 requests: warm-up + one protocol round
GROUP_GAP_S = 0.5  # client pause between groups
CLIENT_OVERHEAD_S = 0.002  # client-side total minus engine total in a phase sample
FIRST_EVENT_S = 0.003  # the role chunk arrives before prefill starts (as on the seed's path)
TTFT_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 15.0, 20.0, 30.0, 60.0)
DUR_BUCKETS = (0.5, 1.0, 2.0, 4.0, 6.0, 8.0, 9.0, 10.0, 12.0, 15.0, 20.0, 30.0, 45.0, 60.0, 90.0, 120.0)
STEP_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.75, 1.0, 1.5, 2.0, 5.0, 10.0)
RANKS = 4


@dataclass(frozen=True)
class Model:
    """The timing model's constants (calibrated to the order of the serial baseline seed)."""

    prefill_fixed_s: float = 2.45  # fixed per-request prefill cost
    prefill_tok_s: float = 540.0  # marginal prefill rate, tokens/s
    decode_step_s: float = 0.185  # one decode step, one row, empty context
    decode_ctx_s: float = 1.4e-5  # extra step time per token of context
    batch_alpha: float = 0.39  # each extra row adds this fraction of a one-row step (8 rows: 3.73)
    assembly_s: float = 0.004  # response assembly after the last token (scheduler busy)
    run_spread: float = 0.03  # sigma of the lognormal per-run factor
    request_jitter: float = 0.01  # sigma of the per-request factor
    step_jitter: float = 0.02  # half-width of the uniform per-step factor
    # PD kind (prefill/decode disaggregated, the PD seed's settings)
    pd_prompt_tokens: int = 16388
    pd_generation_tokens: int = 2048
    pd_chunk: int = 8192  # per-DP chunk: global 131072 / DP 16
    pd_dp: int = 16
    pd_page: int = 128
    pd_max_requests: int = 2
    pd_batch_fixed_s: float = 0.045  # fixed cost of one prefill batch
    pd_prefill_tok_s: float = 60000.0  # prefill rate of one batch, tokens/s
    pd_transfer_s: float = 0.02  # KV transfer P -> D
    pd_tpot_s: float = 0.0087  # decode time per output token
    pd_accept_len: float = 5.75  # speculative decoding: tokens per verify call
    pd_cards: int = 16

    def scaled(self, noise: float) -> Model:
        d = asdict(self)
        for k in ("run_spread", "request_jitter", "step_jitter"):
            d[k] *= noise
        return Model(**d)


def prefill_s(m: Model, p: int) -> float:
    return m.prefill_fixed_s + p / m.prefill_tok_s


def step_s(m: Model, p: float, width: int = 1) -> float:
    return (m.decode_step_s + m.decode_ctx_s * p) * (1.0 + m.batch_alpha * (width - 1))


def single_service_s(m: Model, p: int, g: int = GENERATION_TOKENS) -> float:
    """Engine time of one request alone, without noise: prefill + (g − 1) steps + assembly."""
    return prefill_s(m, p) + (g - 1) * step_s(m, p) + m.assembly_s


def simulate_group(m: Model, reqs, width: int, rng: random.Random | None, t0: float = 0.0):
    """Prefill-first FCFS scheduling of one group.

    ``reqs``: list of ``(arrival offset, prompt tokens, tokens to generate, factor)``.
    Returns per request ``(arrival, first token time, end time, [inter-token latencies])``.
    """
    n = len(reqs)
    arrival = [t0 + r[0] for r in reqs]
    first = [0.0] * n
    end = [0.0] * n
    itl: list[list[float]] = [[] for _ in range(n)]
    last = [0.0] * n
    left = [r[2] for r in reqs]
    order = sorted(range(n), key=lambda i: (arrival[i], i))
    nxt = 0
    running: list[int] = []
    t = t0
    jit = m.step_jitter
    while nxt < n or running:
        if nxt < n and len(running) < width and arrival[order[nxt]] <= t:
            i = order[nxt]
            nxt += 1
            t += prefill_s(m, reqs[i][1]) * reqs[i][3]
            first[i] = last[i] = t
            left[i] -= 1
            if left[i] <= 0:
                t += m.assembly_s
                end[i] = t
            else:
                running.append(i)
            continue
        if not running:  # idle until the next arrival
            t = max(t, arrival[order[nxt]])
            continue
        w = len(running)
        ctx = sum(reqs[i][1] for i in running) / w
        f = sum(reqs[i][3] for i in running) / w
        u = rng.random() if (rng is not None and jit) else 0.5
        t += step_s(m, ctx, w) * f * (1.0 + jit * (2.0 * u - 1.0))
        done = []
        for i in running:
            itl[i].append(t - last[i])
            last[i] = t
            left[i] -= 1
            if left[i] <= 0:
                done.append(i)
        if done:
            t += m.assembly_s
            for i in done:
                end[i] = t
                running.remove(i)
    return [(arrival[i], first[i], end[i], itl[i]) for i in range(n)]


def r6(x: float) -> float:
    return round(x, 6)


def seeded_rng(seed: int, *parts) -> random.Random:
    return random.Random(":".join(str(p) for p in (seed,) + parts))  # str seeds hash with SHA-512


def run_factor(m: Model, seed: int, run_id: str) -> float:
    return math.exp(seeded_rng(seed, run_id, "factor").gauss(0.0, 1.0) * m.run_spread)


# ------------------------------------------------------------------------------------ /metrics


class PocketEngine:
    """Cumulative counters of the synthetic engine, rendered as `pocket` /metrics text."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.ok = 0
        self.err = 0
        self.ptok = 0
        self.gtok = 0
        self.ttft = [0.0, 0, [0] * len(TTFT_BUCKETS)]
        self.dur = [0.0, 0, [0] * len(DUR_BUCKETS)]
        self.queue = [0.0, 0, [0] * len(TTFT_BUCKETS)]
        self.step = [0.0, 0, [0] * len(STEP_BUCKETS)]
        self.rank = [[0.0, 0, [0] * len(STEP_BUCKETS)] for _ in range(RANKS)]
        self.cpu = 12.5
        self.start_time = 1767225600.0

    @staticmethod
    def _obs(h, buckets, v: float, k: int = 1) -> None:
        h[0] += v * k
        h[1] += k
        for j, le in enumerate(buckets):
            if v <= le:
                h[2][j] += k

    def request(self, p: int, g: int, prefill: float, decode_steps: list[float], assembly: float) -> float:
        total = prefill + sum(decode_steps) + assembly
        self.ok += 1
        self.ptok += p
        self.gtok += g
        self._obs(self.ttft, TTFT_BUCKETS, prefill)
        self._obs(self.dur, DUR_BUCKETS, total)
        self._obs(self.queue, TTFT_BUCKETS, 0.0002)
        mean_step = sum(decode_steps) / max(1, len(decode_steps))
        self._obs(self.step, STEP_BUCKETS, mean_step, len(decode_steps))
        for r in range(RANKS):
            self._obs(self.rank[r], STEP_BUCKETS, mean_step * (0.97 + 0.01 * r), len(decode_steps))
        self.cpu += total * 1.9
        return total

    @staticmethod
    def _hist(out: list, name: str, help_: str, h, buckets, labels: str = "") -> None:
        lab = labels + "," if labels else ""
        if help_:
            out.append(f"# HELP {name} {help_}")
            out.append(f"# TYPE {name} histogram")
        for le, c in zip(buckets, h[2]):
            out.append(f'{name}_bucket{{{lab}le="{le}"}} {c}')
        out.append(f'{name}_bucket{{{lab}le="+Inf"}} {h[1]}')
        sel = f"{{{labels}}}" if labels else ""
        out.append(f"{name}_sum{sel} {h[0]!r}")
        out.append(f"{name}_count{sel} {h[1]}")

    def text(self, running: int) -> str:
        o: list[str] = []
        o += [
            "# HELP pocket_requests_total Requests finished, by status.",
            "# TYPE pocket_requests_total counter",
            f'pocket_requests_total{{status="success"}} {self.ok}',
            f'pocket_requests_total{{status="error"}} {self.err}',
        ]
        o += [
            "# HELP pocket_tokens_total Tokens processed, by type.",
            "# TYPE pocket_tokens_total counter",
            f'pocket_tokens_total{{type="prompt"}} {self.ptok}',
            f'pocket_tokens_total{{type="generation"}} {self.gtok}',
        ]
        self._hist(o, "pocket_ttft_seconds", "Time to first token, seconds.", self.ttft, TTFT_BUCKETS)
        self._hist(o, "pocket_request_duration_seconds", "Request duration, seconds.", self.dur, DUR_BUCKETS)
        self._hist(o, "pocket_queue_seconds", "Time in the queue, seconds.", self.queue, TTFT_BUCKETS)
        self._hist(o, "pocket_decode_step_seconds", "Decode step time, seconds.", self.step, STEP_BUCKETS)
        o += [
            "# HELP pocket_rank_forward_seconds Per-rank forward time, seconds.",
            "# TYPE pocket_rank_forward_seconds histogram",
        ]
        for r in range(RANKS):
            self._hist(o, "pocket_rank_forward_seconds", "", self.rank[r], STEP_BUCKETS, f'rank="{r}"')
        o += [
            "# HELP pocket_rank_allreduce_seconds Per-rank all-reduce time, seconds.",
            "# TYPE pocket_rank_allreduce_seconds histogram",
        ]
        for r in range(RANKS):
            h = self.rank[r]
            self._hist(o, "pocket_rank_allreduce_seconds", "", [h[0] * 0.11, h[1], h[2]], STEP_BUCKETS, f'rank="{r}"')
        o += [
            "# HELP pocket_requests_running Requests being decoded.",
            "# TYPE pocket_requests_running gauge",
            f"pocket_requests_running {running}",
            "# HELP pocket_requests_waiting Requests waiting.",
            "# TYPE pocket_requests_waiting gauge",
            "pocket_requests_waiting 0",
            "# HELP pocket_kv_cache_usage_ratio KV cache usage per rank.",
            "# TYPE pocket_kv_cache_usage_ratio gauge",
        ]
        o += [f'pocket_kv_cache_usage_ratio{{rank="{r}"}} {0.0125 * running:.4f}' for r in range(RANKS)]
        o += [
            "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.",
            "# TYPE process_cpu_seconds_total counter",
            f"process_cpu_seconds_total {self.cpu:.2f}",
            "# HELP process_resident_memory_bytes Resident memory size in bytes.",
            "# TYPE process_resident_memory_bytes gauge",
            "process_resident_memory_bytes 3.6983046144e+10",
            "# HELP process_virtual_memory_bytes Virtual memory size in bytes.",
            "# TYPE process_virtual_memory_bytes gauge",
            "process_virtual_memory_bytes 2.10450825216e+11",
            "# HELP process_open_fds Number of open file descriptors.",
            "# TYPE process_open_fds gauge",
            "process_open_fds 211",
            "# HELP process_max_fds Maximum number of open file descriptors.",
            "# TYPE process_max_fds gauge",
            "process_max_fds 1.048576e+06",
            "# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.",
            "# TYPE process_start_time_seconds gauge",
            f"process_start_time_seconds {self.start_time!r}",
        ]
        return "\n".join(o) + "\n"
