"""The files ``benchbook synth`` writes into one run folder: request records (requests.json and
requests.ndjson), phase samples with their /metrics snapshots, memory samples, the server log and the
PD run (pd.json, pd_requests.json, prefill.log), all from the timing model in
:mod:`benchbook.commands.synth_engine`. orjson is imported where used.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from benchbook.commands.synth_engine import (
    CLIENT_OVERHEAD_S,
    FIRST_EVENT_S,
    GENERATION_TOKENS,
    GROUP_GAP_S,
    PROMPT_CLASSES,
    PROTOCOL,
    RANKS,
    ROUND0,
    WARMUP,
    Model,
    PocketEngine,
    prefill_s,
    r6,
    run_factor,
    seeded_rng,
    simulate_group,
    step_s,
)

# --------------------------------------------------------------------------- requests (serial/batch)


def request_records(m: Model, seed: int, run_id: str, width: int, n_total: int):
    """Yield request records, round by round, until ``n_total`` (round 0 holds the warm-up)."""
    rng = seeded_rng(seed, run_id, "requests")
    factor = run_factor(m, seed, run_id)
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
                    "start": r6(arr),
                    "end": r6(end),
                    "prompt_tokens": p,
                    "completion_tokens": g,
                    "finish_reason": "length" if g == GENERATION_TOKENS else "stop",
                    "stream": True,
                    "ttft": r6(first - arr),
                    "itl": [r6(x) for x in itl],
                }
            made += n
            t = max(o[2] for o in out) + GROUP_GAP_S
        rnd += 1


REQUEST_KEYS = ("scenario", "n", "index", "prompt_class", "start", "end", "prompt_tokens",
                "completion_tokens", "finish_reason", "stream")  # fmt: skip


def write_requests(run_dir: Path, run_id: str, recs_iter, n_total: int, itl: bool) -> None:
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


def write_phases(m: Model, seed: int, run_dir: Path, run_id: str, k: int, interference: float) -> None:
    rng = seeded_rng(seed, run_id, "phases")
    factor = run_factor(m, seed, run_id)
    eng = PocketEngine(rng)
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
                "client_total_s": r6(total + CLIENT_OVERHEAD_S * (1.0 + 0.2 * rng.random())),
                "first_event_s": r6(FIRST_EVENT_S * (1.0 + 0.2 * rng.random())),
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


def write_memory(seed: int, run_dir: Path, run_id: str, width: int) -> None:
    rng = seeded_rng(seed, run_id, "memory")
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


def server_log(width: int, max_slots: int) -> str:
    cb = "yes" if width > 1 else "no"
    return (
        "[server] SYNTHETIC: written by benchbook synth; no server ran and nothing was measured\n"
        "[server] pocketllm_engine --serve (synthetic), TP4, devices 0,1,2,3\n"
        f"[server] batch width {width} (engine declares max_slots={max_slots}, continuous_batching={cb}), prefill budget 0\n"
        "[server] listening on 127.0.0.1:8000\n"
    )


# ----------------------------------------------------------------------------------------- PD


def write_pd(m: Model, seed: int, run_dir: Path, run_id: str, n: int, itl: bool) -> bool:
    """PD run: per-request records, a summary and (through benchbook.analysis.admission) prefill scheduler logs.

    Returns whether scheduler logs were written (False when benchbook.analysis.admission is unavailable).
    """
    import orjson

    rng = seeded_rng(seed, run_id, "pd")
    factor = run_factor(m, seed, run_id)
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
        gaps = [r6(tpot * (1.0 + m.step_jitter * (2.0 * rng.random() - 1.0))) for _ in range(g - 1)]
        end = r6(ttft + sum(gaps))
        recs.append(
            {
                "id": str(i),
                "start": 0.0,
                "first_token": r6(ttft),
                "end": end,
                "input_tokens": lengths[i],
                "output_tokens": g,
                "success": True,
            }
        )
        e2es.append(end)
        ttfts.append(r6(ttft))
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
            return r6(ys[min(len(ys) - 1, max(0, math.ceil(p * len(ys)) - 1))])

        return {
            "Average": r6(sum(ys) / len(ys)),
            "Min": r6(ys[0]),
            "Max": r6(ys[-1]),
            "Median": r6((ys[(len(ys) - 1) // 2] + ys[len(ys) // 2]) / 2),
            "P75": q(0.75),
            "P90": q(0.90),
            "P99": q(0.99),
            "N": len(ys),
        }

    metrics = {"TTFT": stats_ms(ttfts), "TPOT": stats_ms(tpots), "E2EL": stats_ms(e2es)}
    if itl:
        metrics["ITL"] = stats_ms(itls)
    common = {
        "Benchmark Duration": r6(wall * 1000.0),
        "Total Requests": n,
        "Failed Requests": 0,
        "Success Requests": n,
        # AISBench's concurrency: sum of E2E over the duration (the Little's-law L of this window)
        "Concurrency": r6(sum(e2es) / wall),
        "Max Concurrency": n,
        "Request Throughput": r6(n / wall),
        "Total Input Tokens": in_tok,
        "Total Generated Tokens": out_tok,
        "Input Token Throughput": r6(in_tok / wall),
        "Output Token Throughput": r6(out_tok / wall),
        "Total Token Throughput": r6((in_tok + out_tok) / wall),
    }
    doc = {
        "format": "benchbook.pd/1",
        "run": run_id,
        "tool": "benchbook synth (AISBench field names)",
        "windows": {"whole": {"metrics": metrics, "common": common, "start_s": 0.0, "end_s": r6(wall)}},
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
