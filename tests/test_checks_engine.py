"""A starved KV cache on the real vLLM CPU engine (tests/engine.py helpers) preempts, and the audit reports
it as a failed check.

The run's ``starved_engine`` (conftest; tests/engine.py ``KINDS``) serves the tiny Llama with 17 KV blocks
of 128 tokens (2,176 tokens of cache, ``--num-gpu-blocks-override``) and 16 sequences at once. 8 requests
of ~45-50 prompt + 512 generated tokens grow to 5 blocks each, so any 4 running at once overflow the cache
and the scheduler preempts and recomputes — unambiguous on a busy host, where the requests reach the engine
seconds apart (with 8 requests of ~5 blocks of 32 tokens that needed 3 at once, a loaded host's API server
handed them over too far apart and the engine never preempted: issue 35). The same engine serves the
KV-starved ablation arm in tests/test_engine_capture.py.
"""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor

import httpx

import engine as eng
from benchbook.analysis import checks
from benchbook.metrics import prometheus
from benchbook.metrics.profiles import PROFILES

REQUESTS, MAX_TOKENS = 8, 512  # ~560 tokens a request: 5 of the 17 blocks


def test_a_starved_kv_cache_preempts_and_the_check_fails(starved_engine):
    starved = starved_engine.url
    vllm = PROFILES["vllm"]
    names = checks.audit_names(vllm)
    before = prometheus.parse(httpx.get(starved + "/metrics").text, "before", names)

    def one(i: int) -> int:
        body = {"model": eng.MODEL_NAME, "prompt": "word " * (40 + i), "max_tokens": MAX_TOKENS}
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
