"""Seeded `vllm bench serve --save-result --save-detailed` files of any size, for tests and bench.

The numbers follow a small queueing shape (TTFT grows with the request's position in a burst) so
the per-request views have something to show; they are synthetic and never committed: callers
write them under tmp_path (tests) or a temporary folder (bench/run.py).
"""

from __future__ import annotations

import json
import random
from pathlib import Path


def result(n_requests: int, *, seed: int, concurrency: int = 16, itl_gaps: int = 8) -> dict:
    """One result document with ``n_requests`` per-request records (a few errored)."""
    rng = random.Random(seed)
    ttfts, itls, ins, outs, errors, starts, lat = [], [], [], [], [], [], []
    t = 1_767_225_600.0
    for i in range(n_requests):
        t += rng.expovariate(concurrency / 2.0)
        failed = rng.random() < 0.01
        ttft = 0.05 + 0.0004 * (i % 200) + rng.random() * 0.02
        gaps = [0.01 + rng.random() * 0.004 for _ in range(itl_gaps)]
        out = 0 if failed else itl_gaps + 1
        ttfts.append(0.0 if failed else round(ttft, 6))
        itls.append([] if failed else [round(g, 6) for g in gaps])
        ins.append(rng.randint(100, 400))
        outs.append(out)
        errors.append("timeout" if failed else "")
        starts.append(round(t, 6))
        lat.append(0.0 if failed else round(ttft + sum(gaps), 6))
    ok = n_requests - errors.count("timeout")
    return {
        "date": "20260101-000000",
        "backend": "vllm",
        "model_id": "synthetic/model",
        "tokenizer_id": "synthetic/model",
        "num_prompts": n_requests,
        "request_rate": "inf",
        "max_concurrency": concurrency,
        "duration": round(starts[-1] - starts[0] + 1.0, 3),
        "completed": ok,
        "total_input_tokens": sum(x for x, e in zip(ins, errors) if not e),
        "total_output_tokens": sum(outs),
        "request_throughput": 1.0,
        "output_throughput": 1.0,
        "total_token_throughput": 1.0,
        "mean_ttft_ms": 60.0,
        "median_ttft_ms": 60.0,
        "std_ttft_ms": 1.0,
        "p99_ttft_ms": 120.0,
        "input_lens": ins,
        "output_lens": outs,
        "ttfts": ttfts,
        "itls": itls,
        "start_times": starts,
        "latencies": lat,
        "errors": errors,
    }


def write_results(folder: Path, files: int, requests_per_file: int, *, seed: int = 0) -> list[Path]:
    """``files`` result files of ``requests_per_file`` requests each, concurrency cycling 1..64."""
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for k in range(files):
        conc = (1, 2, 4, 8, 16, 32, 64)[k % 7]
        p = folder / f"bench_conc{conc}_{k:03d}.json"
        p.write_text(json.dumps(result(requests_per_file, seed=seed * 1000 + k, concurrency=conc)))
        out.append(p)
    return out
