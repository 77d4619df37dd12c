"""A starved KV cache on the real vLLM CPU engine (tests/engine.py helpers) preempts, and the audit reports
it as a failed check.

The run's ``starved_engine`` (conftest; tests/engine.py ``KINDS``) serves the tiny Llama with 12 KV blocks
of 32 tokens (384 tokens of cache, ``--num-gpu-blocks-override``) and 16 sequences at once. 16 requests
of ~30-75 prompt + 160 generated tokens need ~7 blocks each, so any two running at once overflow the
cache and the scheduler preempts and recomputes. With 8 requests of 96 tokens (~5 blocks: three at
once to overflow) a loaded host's API server handed the requests to the engine too far apart and the
engine never preempted (0 preemptions, issue 35). Measured on a shared 2-core host: ready in ~35-60 s,
the load ~15–60 s.
"""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor

import httpx

import engine as eng
from benchbook.analysis import checks
from benchbook.metrics import prometheus
from benchbook.metrics.profiles import PROFILES

REQUESTS, MAX_TOKENS = 16, 160  # prompt + generation within --max-model-len 256


def test_a_starved_kv_cache_preempts_and_the_check_fails(starved_engine):
    starved = starved_engine.url
    vllm = PROFILES["vllm"]
    names = checks.audit_names(vllm)
    before = prometheus.parse(httpx.get(starved + "/metrics").text, "before", names)

    def one(i: int) -> int:
        body = {"model": eng.MODEL_NAME, "prompt": "word " * (10 + i), "max_tokens": MAX_TOKENS}
        r = httpx.post(starved + "/v1/completions", json={**body, "ignore_eos": True, "temperature": 0}, timeout=300)
        r.raise_for_status()
        return r.json()["usage"]["completion_tokens"]

    with ThreadPoolExecutor(REQUESTS) as pool:
        got = list(pool.map(one, range(REQUESTS)))
    after = prometheus.parse(httpx.get(starved + "/metrics").text, "after", names)
    au = checks.audit(
        before, after, vllm, window="starved", kind="results run", run="starved", client={"received": float(sum(got))}
    )
    print(f"\nstarved engine: {au.preemptions} preemptions over {REQUESTS} requests", file=sys.stderr)
    assert au.preemptions and au.preemptions > 0
    assert au.generation_tokens == sum(got) == REQUESTS * MAX_TOKENS  # recomputation is not counted twice
    by = {c["name"].split(":")[0]: c for c in checks.run_checks([au])}
    assert by["preemption"]["status"] == "fail" and by["preemption"]["preemptions"] == au.preemptions
    assert by["token accounting"]["status"] == "pass"
