"""A tiny stand-in for ``vllm bench serve`` in the sweep tests (tests/test_capture_sweep.py): sends
``--num-prompts`` streamed completions to ``--base-url`` with at most ``--max-concurrency`` in flight
and writes a vLLM-shaped result file (the keys ``vllm bench serve --save-result`` writes, without the
per-request lists) as ``--result-dir/--result-filename``. ``--fail-at C`` exits 3 when the concurrency
is C (a failed point). Standard library only."""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
import urllib.request


def one(base: str, tokens: int) -> int:
    body = {"model": "m", "prompt": "hello there", "max_tokens": tokens, "stream": True}
    req = urllib.request.Request(
        base + "/v1/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=60) as r:
        r.read()
    return tokens


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--base-url", required=True)
    p.add_argument("--num-prompts", type=int, required=True)
    p.add_argument("--max-concurrency", type=int)
    p.add_argument("--request-rate", default="inf")
    p.add_argument("--max-tokens", type=int, default=4)
    p.add_argument("--result-dir", required=True)
    p.add_argument("--result-filename", required=True)
    p.add_argument("--fail-at", type=int)
    a = p.parse_args()
    if a.fail_at is not None and a.max_concurrency == a.fail_at:
        print(f"failing on purpose at concurrency {a.fail_at}", file=sys.stderr)
        return 3
    sem = threading.Semaphore(a.max_concurrency or a.num_prompts)
    done: list[int] = []
    t0 = time.time()

    def worker() -> None:
        with sem:
            done.append(one(a.base_url, a.max_tokens))

    threads = [threading.Thread(target=worker) for _ in range(a.num_prompts)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    dur = time.time() - t0
    doc = {
        "date": time.strftime("%Y%m%d-%H%M%S"),
        "backend": "vllm",
        "model_id": "m",
        "tokenizer_id": "m",
        "num_prompts": a.num_prompts,
        "request_rate": a.request_rate,
        "burstiness": 1.0,
        "max_concurrency": a.max_concurrency,
        "duration": dur,
        "completed": len(done),
        "failed": a.num_prompts - len(done),
        "total_input_tokens": 4 * len(done),
        "total_output_tokens": sum(done),
        "request_throughput": len(done) / dur,
        "output_throughput": sum(done) / dur,
        "total_token_throughput": (sum(done) + 4 * len(done)) / dur,
    }
    os.makedirs(a.result_dir, exist_ok=True)
    with open(os.path.join(a.result_dir, a.result_filename), "w") as f:
        json.dump(doc, f)
    print(f"sent {len(done)} requests in {dur:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
