"""A starved KV cache on the real vLLM CPU engine (tests/engine.py helpers) preempts, and the audit reports
it as a failed check.

The engine serves the tiny Llama with 12 KV blocks of 32 tokens (384 tokens of cache,
``--num-gpu-blocks-override``) and 16 sequences at once; 8 concurrent requests of ~50 prompt + 96
generated tokens need ~1200, so the scheduler preempts and recomputes. Measured on a shared 2-core host:
ready in ~60 s, the load ~15–60 s, 42 preemptions with 24 requests × 150 tokens. Run it under
``flock /tmp/engine.lock`` on a shared machine.
"""

from __future__ import annotations

import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

import engine as eng
from benchbook.analysis import checks
from benchbook.metrics import prometheus
from benchbook.metrics.profiles import PROFILES

pytestmark = pytest.mark.engine
KV_BLOCKS, BLOCK = 12, 32  # the CPU attention backend takes block sizes in multiples of 32
REQUESTS, MAX_TOKENS = 8, 96


@pytest.fixture(scope="module")
def starved(tmp_path_factory):
    why = eng.unavailable()
    if why:
        eng.skip_or_fail(why)
    model = eng.build_model()
    port = eng.free_port()
    log = tmp_path_factory.mktemp("starved") / "vllm-serve.log"
    cmd = [
        str(eng.VLLM), "serve", str(model), "--served-model-name", eng.MODEL_NAME,
        "--host", "127.0.0.1", "--port", str(port), "--max-model-len", "256", "--dtype", "float32",
        "--max-num-seqs", "16", "--optimization-level", "0", "--uvicorn-log-level", "warning",
        "--num-gpu-blocks-override", str(KV_BLOCKS), "--block-size", str(BLOCK),
    ]  # fmt: skip
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=eng.engine_env(), start_new_session=True)
    url, t0 = f"http://127.0.0.1:{port}", time.monotonic()
    try:
        while True:
            if proc.poll() is not None or time.monotonic() - t0 > eng.START_TIMEOUT_S:
                pytest.fail(
                    f"the starved vllm serve did not become ready; its log:\n{log.read_text(errors='replace')[-3000:]}"
                )
            try:
                if httpx.get(url + "/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        yield url
    finally:
        eng.stop(proc)


def test_a_starved_kv_cache_preempts_and_the_check_fails(starved):
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
    assert au.preemptions and au.preemptions > 0
    assert au.generation_tokens == sum(got) == REQUESTS * MAX_TOKENS  # recomputation is not counted twice
    by = {c["name"].split(":")[0]: c for c in checks.run_checks([au])}
    assert by["preemption"]["status"] == "fail" and by["preemption"]["preemptions"] == au.preemptions
    assert by["token accounting"]["status"] == "pass"
