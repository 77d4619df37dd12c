"""``benchbook synth``: a synthetic campaign from a small, documented timing model.

Everything written here is marked ``"provenance": "synthetic"`` in campaign.json (and said again in
the campaign's README.md and server.log), so no page can pass it off as a measurement. The same
arguments and seed give byte-identical files. The timing model (docs/bench.md has the full text):

* prefill of a ``p``-token prompt: ``prefill_s(p) = PREFILL_FIXED_S + p / PREFILL_TOK_S``;
* one decode step for one row at context ``p``: ``step_s(p) = DECODE_STEP_S + DECODE_CTX_S * p``;
  a step with ``w`` rows costs ``step_s(p̄) * (1 + BATCH_ALPHA * (w - 1))`` (``p̄`` the mean context);
* a request of ``g`` generated tokens: one prefill (it yields the first token), ``g - 1`` decode
  steps, then ``ASSEMBLY_S`` of response assembly during which the scheduler is busy;
* scheduling is prefill-first, FCFS, at most ``width`` rows decoding together; serial is width 1,
  so a group of ``n`` equal requests submitted together completes at ``k × single`` (k = 1..n);
* noise: each run's times are scaled by a run factor (lognormal, sigma ``RUN_SPREAD``), each
  request by ``1 + REQUEST_JITTER * N(0,1)``, each decode step by ``1 ± STEP_JITTER``; ``--noise``
  scales all three (``--noise 0``: the model's exact figures).

Large campaigns also get ``runs/<id>/requests.ndjson`` (every round of the harness protocol, one
request a line, with ``ttft`` and, with ``--itl``, the inter-token latencies); ``requests.json``
keeps round 0, which is exactly what the concurrency harness writes. The campaign loader reads
``requests.ndjson`` instead of ``requests.json`` when it exists (data/README.md);
:func:`read_requests_ndjson` is its reader, ``benchbook.ingest.requests_ndjson``.

Only the standard library is imported at module level (the CLI must stay fast); orjson is used for
writing NDJSON and polars for reading it, imported where used.
"""

from __future__ import annotations

import json
import math
import random
import shutil
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from benchbook.errors import UsageError

__all__ = [
    "Model",
    "prefill_s",
    "step_s",
    "single_service_s",
    "simulate_group",
    "synthesize",
    "read_requests_ndjson",
    "add_arguments",
    "run",
]

DATE = "2026-01-01"  # fixed: the files must not depend on when they were generated
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


def _r6(x: float) -> float:
    return round(x, 6)


def _rng(seed: int, *parts) -> random.Random:
    return random.Random(":".join(str(p) for p in (seed,) + parts))  # str seeds hash with SHA-512


def _run_factor(m: Model, seed: int, run_id: str) -> float:
    return math.exp(_rng(seed, run_id, "factor").gauss(0.0, 1.0) * m.run_spread)


# --------------------------------------------------------------------------- requests (serial/batch)


def _request_records(m: Model, seed: int, run_id: str, width: int, n_total: int):
    """Yield request records, round by round, until ``n_total`` (round 0 holds the warm-up)."""
    rng = _rng(seed, run_id, "requests")
    factor = _run_factor(m, seed, run_id)
    t = 0.0
    made = 0
    rnd = 0
    while made < n_total:
        groups = ([WARMUP] if rnd == 0 else []) + PROTOCOL
        if rnd > 0 and n_total - made < ROUND0 - 1:  # too few left for a round: single requests
            groups = [PROTOCOL[0]] * (n_total - made)
        for scenario, n, classes, offsets in groups:
            reqs = []
            for cls, off in zip(classes, offsets):
                g = GENERATION_TOKENS
                if rnd > 0 and rng.random() < 0.0005:  # rare early stop: excluded by the loader
                    g = rng.randint(2, GENERATION_TOKENS - 1)
                f = factor * (1.0 + m.request_jitter * rng.gauss(0.0, 1.0))
                reqs.append((off, PROMPT_CLASSES[cls]["tokens"], g, f))
            out = simulate_group(m, reqs, width, rng, t)
            for idx, ((arr, first, end, itl), (cls, (_o, p, g, _f))) in enumerate(zip(out, zip(classes, reqs))):
                yield {
                    "round": rnd,
                    "scenario": scenario,
                    "n": n,
                    "index": idx,
                    "prompt_class": cls,
                    "start": _r6(arr),
                    "end": _r6(end),
                    "prompt_tokens": p,
                    "completion_tokens": g,
                    "finish_reason": "length" if g == GENERATION_TOKENS else "stop",
                    "stream": True,
                    "ttft": _r6(first - arr),
                    "itl": [_r6(x) for x in itl],
                }
            made += n
            t = max(o[2] for o in out) + GROUP_GAP_S
        rnd += 1


REQUEST_KEYS = ("scenario", "n", "index", "prompt_class", "start", "end", "prompt_tokens",
                "completion_tokens", "finish_reason", "stream")  # fmt: skip


def _write_requests(run_dir: Path, run_id: str, recs_iter, n_total: int, itl: bool) -> None:
    import orjson

    round0 = []
    ndjson = n_total > ROUND0 or itl
    fh = open(run_dir / "requests.ndjson", "wb") if ndjson else None
    try:
        for rec in recs_iter:
            if rec["round"] == 0:
                round0.append({k: rec[k] for k in REQUEST_KEYS})
            if fh is not None:
                if not itl:
                    rec = dict(rec)
                    del rec["itl"]
                fh.write(orjson.dumps(rec))
                fh.write(b"\n")
    finally:
        if fh is not None:
            fh.close()
    body = ",\n".join(json.dumps(r, separators=(",", ":")) for r in round0)
    (run_dir / "requests.json").write_text(
        f'{{"format": "benchbook.requests/1", "run": {json.dumps(run_id)},\n "requests": [\n{body}\n]}}\n',
        encoding="utf-8",
    )


# ------------------------------------------------------------------------------------ /metrics


class _Engine:
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


def _write_phases(m: Model, seed: int, run_dir: Path, run_id: str, k: int, interference: float) -> None:
    rng = _rng(seed, run_id, "phases")
    factor = _run_factor(m, seed, run_id)
    eng = _Engine(rng)
    mdir = run_dir / "metrics"
    mdir.mkdir()
    # the harness's own warm-up ladder ran before the first sample: counters do not start at zero
    for _ in range(15):
        p = PROMPT_CLASSES["short"]["tokens"]
        eng.request(p, GENERATION_TOKENS, prefill_s(m, p), [step_s(m, p)] * (GENERATION_TOKENS - 1), m.assembly_s)
    samples = []
    classes = list(PROMPT_CLASSES)
    for i in range(k):
        cls = classes[i % len(classes)]
        rep = i // len(classes)
        p = PROMPT_CLASSES[cls]["tokens"]
        before = f"metrics/{cls}-{rep}.before.prom"
        after = f"metrics/{cls}-{rep}.after.prom"
        (run_dir / before).write_text(eng.text(0), encoding="utf-8")
        f = factor * (1.0 + m.request_jitter * rng.gauss(0.0, 1.0))
        pre = prefill_s(m, p) * f
        steps = [
            step_s(m, p) * f * (1.0 + m.step_jitter * (2.0 * rng.random() - 1.0)) for _ in range(GENERATION_TOKENS - 1)
        ]
        total = eng.request(p, GENERATION_TOKENS, pre, steps, m.assembly_s)
        if rng.random() < interference:  # a neighbour's request finished inside the window
            q = PROMPT_CLASSES["short"]["tokens"]
            eng.request(q, GENERATION_TOKENS, prefill_s(m, q), [step_s(m, q)] * (GENERATION_TOKENS - 1), m.assembly_s)
        (run_dir / after).write_text(eng.text(0), encoding="utf-8")
        samples.append(
            {
                "prompt_class": cls,
                "repeat": rep,
                "warmup": rep < 1,
                "client_total_s": _r6(total + CLIENT_OVERHEAD_S * (1.0 + 0.2 * rng.random())),
                "first_event_s": _r6(FIRST_EVENT_S * (1.0 + 0.2 * rng.random())),
                "metrics_before": before,
                "metrics_after": after,
            }
        )
    body = ",\n".join(json.dumps(s, separators=(",", ":")) for s in samples)
    (run_dir / "phases.json").write_text(
        f'{{"format": "benchbook.phases/1", "run": {json.dumps(run_id)}, "warmup_rounds": 1,\n "samples": [\n{body}\n]}}\n',
        encoding="utf-8",
    )


# ------------------------------------------------------------------------------------- memory


def _write_memory(seed: int, run_dir: Path, run_id: str, width: int) -> None:
    rng = _rng(seed, run_id, "memory")
    gib = 1024.0
    steady = 8.15 * gib + (width - 1) * 0.23 * gib
    peak = 15.57 * gib + (width - 1) * 0.12 * gib
    idle_avail = 1045535539
    shmem = int(137.1 * 1024 * 1024)
    markers = [
        (4.0, "load_start", None),
        (180.0, "load_end", None),
        (182.0, "request_start", "short"),
        (191.0, "request_end", "short"),
        (194.0, "request_start", "long"),
        (206.0, "request_end", "long"),
        (214.0, "stop", None),
    ]
    samples = []
    t = 0.0
    while t <= 220.0:
        if t < 4.0 or t >= 214.0:
            g, sh, pss = 512.0, 0, None
        elif t < 180.0:
            frac = (t - 4.0) / 176.0
            g = (
                512.0 + (peak - 512.0) * min(1.0, frac * 1.05)
                if t < 170.0
                else peak - (peak - steady) * (t - 170.0) / 10.0
            )
            sh, pss = int(shmem * frac), int(71.3 * 1024 * 1024 * frac)
        else:
            g = steady + (0.35 * gib if 182.0 <= t <= 206.0 else 0.0)
            sh, pss = shmem, int(71.3 * 1024 * 1024)
        ranks = [round(g + rng.uniform(-6.0, 6.0) + 2.0 * r, 1) for r in range(RANKS)]
        s = {"t": t, "gpu_used_mib": ranks, "shmem_kib": sh, "mem_available_kib": idle_avail - int(sh * 1.051)}
        if pss is not None:
            s["pss_kib"] = [pss + 17 * r for r in range(RANKS)]
        samples.append(s)
        t += 2.0
    doc = {
        "format": "benchbook.memory/1",
        "run": run_id,
        "interval_s": 2.0,
        "samples": samples,
        "markers": [{"t": t_, "event": e, **({"label": lab} if lab else {})} for t_, e, lab in markers],
    }
    (run_dir / "memory.json").write_text(json.dumps(doc, separators=(",", ":")) + "\n", encoding="utf-8")


def _server_log(width: int, max_slots: int) -> str:
    cb = "yes" if width > 1 else "no"
    return (
        "[server] SYNTHETIC: written by benchbook synth; no server ran and nothing was measured\n"
        "[server] pocketllm_engine --serve (synthetic), TP4, devices 0,1,2,3\n"
        f"[server] batch width {width} (engine declares max_slots={max_slots}, continuous_batching={cb}), prefill budget 0\n"
        "[server] listening on 127.0.0.1:8000\n"
    )


# ----------------------------------------------------------------------------------------- PD


def _write_pd(m: Model, seed: int, run_dir: Path, run_id: str, n: int, itl: bool) -> bool:
    """PD run: per-request records, a summary and (through benchbook.analysis.admission) prefill scheduler logs.

    Returns whether scheduler logs were written (False when benchbook.analysis.admission is unavailable).
    """
    import orjson

    rng = _rng(seed, run_id, "pd")
    factor = _run_factor(m, seed, run_id)
    lengths = [m.pd_prompt_tokens] * n
    try:
        from benchbook.analysis import admission
    except ImportError:
        admission = None
    done_at: dict[int, float] = {}
    log_lines: list[str] = []
    if admission is not None:
        res = admission.simulate(lengths, m.pd_chunk, m.pd_page, m.pd_max_requests)
        t = 0.0
        remaining = {}
        queue = n
        for b in res.batches:
            new = sum(k for _, k in b.parts)
            for i, k in b.parts:
                left = remaining.get(i, lengths[i]) - k
                remaining[i] = left
                if left == 0:
                    queue -= 1
            log_lines.append(
                f"[{t:10.3f}s DP0 TP0] Prefill batch. #new-seq: {b.requests}, #new-token: {new}, "
                f"#cached-token: 0, token usage: {min(0.99, 0.0003 * (n - queue)):.2f}, "
                f"#running-req: {n - queue}, #queue-req: {queue}"
            )
            t += (m.pd_batch_fixed_s + new / m.pd_prefill_tok_s) * factor
            for i, _k in b.parts:
                if remaining[i] == 0:
                    done_at[i] = t
    else:  # no simulator: one request at a time, whole prompts (no scheduler logs)
        t = 0.0
        for i, p in enumerate(lengths):
            t += (m.pd_batch_fixed_s + p / m.pd_prefill_tok_s) * factor
            done_at[i] = t
    g = m.pd_generation_tokens
    recs, e2es, ttfts, tpots, itls = [], [], [], [], []
    for i in range(n):
        ttft = done_at[i] + m.pd_transfer_s
        tpot = m.pd_tpot_s * factor * (1.0 + m.request_jitter * rng.gauss(0.0, 1.0))
        gaps = [_r6(tpot * (1.0 + m.step_jitter * (2.0 * rng.random() - 1.0))) for _ in range(g - 1)]
        end = _r6(ttft + sum(gaps))
        recs.append(
            {
                "id": str(i),
                "start": 0.0,
                "first_token": _r6(ttft),
                "end": end,
                "input_tokens": lengths[i],
                "output_tokens": g,
                "success": True,
            }
        )
        e2es.append(end)
        ttfts.append(_r6(ttft))
        tpots.append((end - ttft) / (g - 1))
        if itl:
            itls.extend(gaps)
    # benchbook.pd_requests/1: one record a line inside the JSON array (readable, diffable)
    body = ",\n".join(orjson.dumps(r).decode() for r in recs)
    (run_dir / "pd_requests.json").write_text(
        f'{{"format": "benchbook.pd_requests/1", "run": {json.dumps(run_id)},\n "requests": [\n{body}\n]}}\n',
        encoding="utf-8",
    )
    wall = max(e2es)
    out_tok = g * n
    in_tok = sum(lengths)

    def stats_ms(xs: list[float]) -> dict:
        ys = sorted(x * 1000.0 for x in xs)

        def q(p: float) -> float:
            return _r6(ys[min(len(ys) - 1, max(0, math.ceil(p * len(ys)) - 1))])

        return {
            "Average": _r6(sum(ys) / len(ys)),
            "Min": _r6(ys[0]),
            "Max": _r6(ys[-1]),
            "Median": _r6((ys[(len(ys) - 1) // 2] + ys[len(ys) // 2]) / 2),
            "P75": q(0.75),
            "P90": q(0.90),
            "P99": q(0.99),
            "N": len(ys),
        }

    metrics = {"TTFT": stats_ms(ttfts), "TPOT": stats_ms(tpots), "E2EL": stats_ms(e2es)}
    if itl:
        metrics["ITL"] = stats_ms(itls)
    common = {
        "Benchmark Duration": _r6(wall * 1000.0),
        "Total Requests": n,
        "Failed Requests": 0,
        "Success Requests": n,
        # AISBench's concurrency: sum of E2E over the duration (the Little's-law L of this window)
        "Concurrency": _r6(sum(e2es) / wall),
        "Max Concurrency": n,
        "Request Throughput": _r6(n / wall),
        "Total Input Tokens": in_tok,
        "Total Generated Tokens": out_tok,
        "Input Token Throughput": _r6(in_tok / wall),
        "Output Token Throughput": _r6(out_tok / wall),
        "Total Token Throughput": _r6((in_tok + out_tok) / wall),
    }
    doc = {
        "format": "benchbook.pd/1",
        "run": run_id,
        "tool": "benchbook synth (AISBench field names)",
        "windows": {"whole": {"metrics": metrics, "common": common, "start_s": 0.0, "end_s": _r6(wall)}},
        "speculative": {
            "window": "whole",
            "verify_calls": int(round(out_tok / m.pd_accept_len)),
            "output_tokens": out_tok,
            "verify_width": math.ceil(m.pd_accept_len) + 1,
        },
        "requests": "pd_requests.json",
        "notes": "SYNTHETIC: written by benchbook synth from its timing model; nothing was measured.",
    }
    if admission is not None:
        doc["prefill_log"] = "prefill.log"
    (run_dir / "pd.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    if admission is not None:
        (run_dir / "prefill.log").write_text("\n".join(log_lines) + "\n", encoding="utf-8")
    return admission is not None


# ------------------------------------------------------------------------------------ campaign


def synthesize(
    out: str | Path,
    kind: str = "serial",
    runs: int = 2,
    requests: int = ROUND0,
    seed: int = 0,
    snapshots: int = 6,
    itl: bool = False,
    noise: float = 1.0,
    interference: float = 0.01,
    memory: bool = True,
    force: bool = False,
    *,
    model: Model | None = None,
    date: str = DATE,
    history: dict | None = None,
) -> Path:
    """Write a synthetic campaign folder; returns its path. See the module docstring.

    ``model`` replaces the default timing model (before ``noise`` scales it), ``date`` the manifest
    and run dates, ``history`` is written as campaign.json's ``history`` key (the series a history
    page groups it in)."""
    if kind not in ("serial", "batch", "pd"):
        raise UsageError(f"--kind must be serial, batch or pd (got {kind!r})")
    if runs < 1:
        raise UsageError(f"--runs must be at least 1 (got {runs})")
    if kind != "pd" and requests < ROUND0:
        raise UsageError(f"--requests must be at least {ROUND0} (one warm-up plus one protocol round) for {kind}")
    if kind == "pd" and requests < 1:
        raise UsageError("--requests must be at least 1")
    if snapshots < 0 or noise < 0 or not 0 <= interference <= 1:
        raise UsageError("--snapshots and --noise must be non-negative, --interference within [0, 1]")
    root = Path(out)
    if root.exists() and any(root.iterdir()):
        if not force:
            raise UsageError(f"{root} exists and is not empty (use --force to replace it)")
        if not (root / "campaign.json").exists():
            raise UsageError(f"{root} is not a campaign folder; refusing to replace it")
        shutil.rmtree(root)
    root.mkdir(parents=True, exist_ok=True)
    m = (model or Model()).scaled(noise)

    arms: dict[str, dict] = {}
    run_list: list[dict] = []
    notes: list[str] = []
    if kind == "pd":
        arms["pd"] = {
            "label": "PD (synthetic)",
            "mode": "pd",
            "environment": "default",
            "series": "synthetic",
            "role": "baseline",
            "prefill_cards": m.pd_cards // 2,
            "decode_cards": m.pd_cards - m.pd_cards // 2,
            "scheduler": {
                "global_chunked_prefill_size": m.pd_chunk * m.pd_dp,
                "dp": m.pd_dp,
                "page_size": m.pd_page,
                "prefill_max_requests": m.pd_max_requests,
            },
            "server_args": {
                "chunked_prefill_size": m.pd_chunk * m.pd_dp,
                "dp": m.pd_dp,
                "page_size": m.pd_page,
                "prefill_max_requests": m.pd_max_requests,
            },
        }
        for r in range(1, runs + 1):
            rid = f"pd-{r}"
            d = root / "runs" / rid
            d.mkdir(parents=True)
            if not _write_pd(m, seed, d, rid, requests, itl):
                notes.append("benchbook.analysis.admission is not available: PD scheduler logs were not written")
            run_list.append(
                {
                    "id": rid,
                    "arm": "pd",
                    "harness": "pd",
                    "path": f"runs/{rid}",
                    "date": date,
                    "load": {"requests": requests, "concurrency": requests, "prompt_class": "pd"},
                }
            )
    else:
        widths = {"serial": 1} if kind == "serial" else {"serial": 1, "batch": 8}
        for arm, width in widths.items():
            arms[arm] = {
                "label": f"{arm}, mbs={width}" if arm == "batch" else "serial, mbs=1",
                "mode": arm,
                "environment": "default",
                "series": "synthetic",
                "role": "baseline" if arm == "serial" else "candidate",
                "server_args": {"max_batch_size": width, "prefill_token_budget": 0},
            }
            for r in range(1, runs + 1):
                rid = f"{arm}-{r}"
                d = root / "runs" / rid
                d.mkdir(parents=True)
                _write_requests(d, rid, _request_records(m, seed, rid, width, requests), requests, itl)
                (d / "server.log").write_text(_server_log(width, 8), encoding="utf-8")
                run_list.append({"id": rid, "arm": arm, "harness": "requests", "path": f"runs/{rid}", "date": date})
            if snapshots:
                for r in range(1, runs + 1):
                    rid = f"phases-{arm}-{r}"
                    d = root / "runs" / rid
                    d.mkdir(parents=True)
                    _write_phases(m, seed, d, rid, snapshots, interference)
                    (d / "server.log").write_text(_server_log(width, 8), encoding="utf-8")
                    run_list.append({"id": rid, "arm": arm, "harness": "phases", "path": f"runs/{rid}", "date": date})
            if memory:
                rid = f"memory-{arm}"
                d = root / "runs" / rid
                d.mkdir(parents=True)
                _write_memory(seed, d, rid, width)
                (d / "server.log").write_text(_server_log(width, 8), encoding="utf-8")
                run_list.append({"id": rid, "arm": arm, "harness": "memory", "path": f"runs/{rid}", "date": date})

    manifest = {
        "format": "benchbook.campaign/1",
        **({"kind": "pd"} if kind == "pd" else {}),
        "title": f"Synthetic {kind} campaign (seed {seed})",
        "question": "None: synthetic data from benchbook's timing model, for tests, demos and benchmarks",
        "date": date,
        "provenance": "synthetic",
        **({"history": history} if history else {}),
        "scope": {
            "measured": [],
            "outside": ["everything: no server ran; figures come from the timing model in docs/bench.md"],
        },
        "host": {"GPU": "none (synthetic)", "CPU / host": "none (synthetic)"},
        "checkpoint": {"path": "none (synthetic)", "architecture": "synthetic"},
        "engine": {"name": "synthetic pocket engine", "profile": "pocket", "commit": "synthetic"},
        "environments": {"default": {"description": "nothing set", "variables": {}}},
        "prompt_classes": {"pd": {"tokens": m.pd_prompt_tokens}} if kind == "pd" else PROMPT_CLASSES,
        "generation_tokens": m.pd_generation_tokens if kind == "pd" else GENERATION_TOKENS,
        "arms": arms,
        "runs": run_list,
        "noise": {"reference_arm": next(iter(arms)), "rule": "seed"},
        "synthetic": {
            "generator": "benchbook synth",
            "kind": kind,
            "seed": seed,
            "runs": runs,
            "requests": requests,
            "snapshots": snapshots,
            "itl": itl,
            "noise": noise,
            "interference": interference,
            "model": asdict(m),
            "notes": sorted(set(notes)),
        },
    }
    (root / "campaign.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    cmd = f"benchbook synth --kind {kind} --runs {runs} --requests {requests} --seed {seed} --snapshots {snapshots}"
    cmd += " --itl" if itl else ""
    (root / "README.md").write_text(
        f"# Synthetic campaign — not a measurement\n\nGenerated by `{cmd}`. No server ran: every number in "
        "these files comes from the timing model described in benchbook's docs/bench.md. campaign.json says "
        '`"provenance": "synthetic"`, and pages built from it say so.\n'
        + "".join(f"\n- {n}" for n in sorted(set(notes)))
        + ("\n" if notes else ""),
        encoding="utf-8",
    )
    return root


# ------------------------------------------------------------------------------ a series (history)

# metric a --step may move -> what it does to the timing model (factor f = 1 + X%)
STEP_METRICS = {
    "decode_tok_s": "decode steps take 1/f as long (decode tok/s × f)",
    "prefill_tok_s": "prefill takes 1/f as long (prefill tok/s × f)",
    "single_latency_s": "every engine time × f (latencies × f, rates / f)",
    "ladder_tok_s": "every engine time / f (aggregate and single rates × f)",
}


@dataclass(frozen=True)
class Step:
    """A known step in a synthetic series: from ``date`` on, ``metric`` moves by ``change`` (0.09 = +9 %)."""

    date: str
    metric: str
    change: float


def parse_step(text: str) -> Step:
    """``2026-11-13:decode_tok_s:-9%`` -> Step('2026-11-13', 'decode_tok_s', -0.09)."""
    import datetime as dt

    parts = text.split(":")
    if len(parts) != 3:
        raise UsageError(f"--step {text!r}: expected DATE:METRIC:+X% (e.g. 2026-11-13:decode_tok_s:-9%)")
    date, metric, pct = parts
    try:
        dt.date.fromisoformat(date)
    except ValueError:
        raise UsageError(f"--step {text!r}: {date!r} is not a YYYY-MM-DD date") from None
    if metric not in STEP_METRICS:
        raise UsageError(f"--step {text!r}: metric must be one of {', '.join(STEP_METRICS)}")
    try:
        change = float(pct.rstrip("%")) / 100.0
    except ValueError:
        raise UsageError(f"--step {text!r}: {pct!r} is not a percentage such as +9% or -9%") from None
    if not change > -1.0:
        raise UsageError(f"--step {text!r}: a change must be above -100%")
    return Step(date, metric, change)


def stepped_model(steps: list[Step], date: str, base: Model | None = None) -> Model:
    """The timing model of a campaign measured on ``date``: every step dated on or before it applied."""
    d = asdict(base or Model())
    for st in steps:
        if st.date > date:
            continue
        f = 1.0 + st.change
        if st.metric == "decode_tok_s":
            d["decode_step_s"] /= f
            d["decode_ctx_s"] /= f
        elif st.metric == "prefill_tok_s":
            d["prefill_fixed_s"] /= f
            d["prefill_tok_s"] *= f
        else:
            g = f if st.metric == "single_latency_s" else 1.0 / f
            for k in ("prefill_fixed_s", "decode_step_s", "decode_ctx_s", "assembly_s"):
                d[k] *= g
            d["prefill_tok_s"] /= g
    return Model(**d)


def synthesize_series(
    out: str | Path,
    count: int,
    steps: list[Step] | None = None,
    *,
    start: str = "2026-11-01",
    name: str = "nightly",
    kind: str = "serial",
    runs: int = 2,
    requests: int = ROUND0,
    seed: int = 0,
    snapshots: int = 6,
    noise: float = 1.0,
    memory: bool = True,
    force: bool = False,
) -> list[Path]:
    """Write ``count`` nightly campaigns ``out/<name>-<date>`` (one a day from ``start``), all in
    history series ``name``, each with its own noise seed, with ``steps`` applied from their dates."""
    import datetime as dt

    if count < 1:
        raise UsageError(f"--series must be at least 1 (got {count})")
    if kind == "pd" and steps:
        raise UsageError("--step applies to serial and batch series only")
    try:
        day0 = dt.date.fromisoformat(start)
    except ValueError:
        raise UsageError(f"--start {start!r} is not a YYYY-MM-DD date") from None
    steps = list(steps or [])
    paths = []
    for i in range(count):
        date = (day0 + dt.timedelta(days=i)).isoformat()
        paths.append(
            synthesize(
                Path(out) / f"{name}-{date}",
                kind,
                runs,
                requests,
                seed * 100003 + i,
                snapshots,
                False,
                noise,
                0.0,
                memory,
                force,
                model=stepped_model(steps, date),
                date=date,
                history={"series": name, "steps": [asdict(s) for s in steps if s.date <= date]},
            )
        )
    return paths


# ------------------------------------------------------------------------- reading requests.ndjson


def read_requests_ndjson(path, generation_tokens=None, prompt_classes=None, itl=None):
    """``benchbook.ingest.requests_ndjson.read_requests_ndjson`` (the campaign loader's reader)."""
    from benchbook.ingest.requests_ndjson import read_requests_ndjson as read

    return read(path, generation_tokens, prompt_classes, itl)


# ----------------------------------------------------------------------------------------- CLI


def add_arguments(p) -> None:
    p.epilog = (
        'Writes a campaign marked "provenance": "synthetic". Same arguments and seed give '
        "byte-identical files. Timing model: docs/bench.md."
    )
    p.add_argument("--out", required=True, type=Path, help="campaign folder to create (must be empty or absent)")
    p.add_argument(
        "--kind",
        choices=("serial", "batch", "pd"),
        default="serial",
        help="serial: one width-1 arm; batch: serial and width-8 arms; pd: a disaggregated arm",
    )
    p.add_argument("--runs", type=int, default=2, help="runs per arm and harness (identical configurations; default 2)")
    p.add_argument(
        "--requests",
        type=int,
        default=ROUND0,
        help=f"request records per run (default {ROUND0}: warm-up + one protocol round); "
        "more than that also writes runs/<id>/requests.ndjson",
    )
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument(
        "--snapshots", type=int, default=6, help="/metrics snapshot pairs per phases run (0: no phases runs)"
    )
    p.add_argument("--itl", action="store_true", help="write per-request inter-token latency lists to requests.ndjson")
    p.add_argument("--noise", type=float, default=1.0, help="scale of every noise term (0: exact model figures)")
    p.add_argument(
        "--interference",
        type=float,
        default=0.01,
        help="share of phase samples a neighbour request lands in (they are excluded on load)",
    )
    p.add_argument("--no-memory", action="store_true", help="skip the memory runs")
    p.add_argument("--force", action="store_true", help="replace an existing campaign folder")
    p.add_argument(
        "--series",
        type=int,
        metavar="K",
        help="write K nightly campaigns OUT/<name>-<date> (one a day from --start) in one history series",
    )
    p.add_argument(
        "--step",
        action="append",
        default=[],
        metavar="DATE:METRIC:+X%",
        help=f"with --series: from DATE on, METRIC moves by X%% (METRIC: {', '.join(STEP_METRICS)}); repeatable",
    )
    p.add_argument("--start", default="2026-11-01", help="with --series: date of the first campaign (YYYY-MM-DD)")
    p.add_argument("--name", default="nightly", help="with --series: the series name (campaign.json history.series)")


def run(args) -> int:
    if args.step and args.series is None:
        raise UsageError("--step needs --series K")
    if args.series is not None:
        paths = synthesize_series(
            args.out,
            args.series,
            [parse_step(t) for t in args.step],
            start=args.start,
            name=args.name,
            kind=args.kind,
            runs=args.runs,
            requests=args.requests,
            seed=args.seed,
            snapshots=args.snapshots,
            noise=args.noise,
            memory=not args.no_memory,
            force=args.force,
        )
        print(f"{args.out}: {len(paths)} synthetic {args.kind} campaign(s) in series {args.name!r}, seed {args.seed}")
        for t in args.step:
            print(f"  step {t}")
        return 0
    root = synthesize(
        args.out,
        args.kind,
        args.runs,
        args.requests,
        args.seed,
        args.snapshots,
        args.itl,
        args.noise,
        args.interference,
        not args.no_memory,
        args.force,
    )
    man = json.loads((root / "campaign.json").read_text("utf-8"))
    print(
        f"{root}: synthetic {args.kind} campaign, {len(man['arms'])} arm(s), {len(man['runs'])} runs, seed {args.seed}"
    )
    for note in man["synthetic"]["notes"]:
        print(f"note: {note}", file=sys.stderr)
    return 0
