"""Regenerate tests/fixtures/tools/: result files written by the real benchmark tools against a real
vLLM engine (CPU build, tiny local Llama, 127.0.0.1), with /metrics captured around each run.

    make fixtures          (builds .venv-engine as `make engine` does, .venv-guidellm and
                            .venv-aiperf first; ENGINE_VENV, GUIDELLM_VENV, AIPERF_VENV override)

Not part of `make test`: CI reads the committed files only. Every server this starts listens on
127.0.0.1 and is stopped by its process-group id; every tool run is bounded by a request count.
The folder of each tool is named after the version that wrote it (``vllm-0.32.0+cpu``,
``guidellm-0.8.1``, ``aiperf-0.13.0``); PROVENANCE.md lists the versions, commands and date.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "fixtures" / "tools"
ENGINE = Path(os.environ.get("ENGINE_VENV", ROOT / ".venv-engine"))
GUIDELLM = Path(os.environ.get("GUIDELLM_VENV", ROOT / ".venv-guidellm"))
AIPERF = Path(os.environ.get("AIPERF_VENV", ROOT / ".venv-aiperf"))
INFERENCE_PERF = Path(os.environ.get("INFERENCE_PERF_VENV", ROOT / ".venv-inference-perf"))
MODEL_DIR = ROOT / ".cache" / "tiny-llama"
TINY_LLAMA = Path(os.environ.get("TINY_LLAMA", ROOT / "tests" / "tiny_llama.py"))
MODEL = "tiny-llama"
WORK = ROOT / ".cache" / "tool-fixtures"

# one load shape for every tool: 30 requests, 64 prompt tokens, 32 output tokens, 4 in flight
N, ISL, OSL, CONC = 30, 64, 32, 4

ENV = {
    "VLLM_CPU_KVCACHE_SPACE": "1",
    "VLLM_HOST_IP": "127.0.0.1",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
    "VLLM_CPU_OMP_THREADS_BIND": "nobind",
    "NO_PROXY": "127.0.0.1,localhost",
}


def env_for(venv: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VLLM_", "CUDA_", "VIRTUAL_ENV"))}
    env.update(ENV)
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["HF_HOME"] = str(ROOT / ".cache" / "hf")
    return env


def version(venv: Path, dist: str) -> str:
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-c", f"import importlib.metadata as m; print(m.version({dist!r}))"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def hf_cache_alias(model_dir: Path, repo: str) -> str:
    """Expose the local tokenizer as ``repo`` in the offline Hugging Face cache (HF_HOME/hub).

    AIPerf 0.13 in offline mode resolves ``--tokenizer`` through the hub cache only, so a plain
    folder path is refused ("Repo id must be in the form ..."); a cache entry needs no network."""
    org, name = repo.split("/")
    root = ROOT / ".cache" / "hf" / "hub" / f"models--{org}--{name}"
    rev = "0" * 40
    snap = root / "snapshots" / rev
    shutil.rmtree(root, ignore_errors=True)
    snap.mkdir(parents=True)
    (root / "refs").mkdir()
    (root / "refs" / "main").write_text(rev)
    for f in model_dir.iterdir():
        if f.is_file() and f.suffix in (".json", ".txt", ".model"):
            shutil.copy2(f, snap / f.name)
    return repo


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(url: str, dest: Path) -> None:
    with urllib.request.urlopen(url + "/metrics", timeout=30) as r:
        dest.write_bytes(r.read())


@contextlib.contextmanager
def engine(log: Path):
    port = free_port()
    cmd = [str(ENGINE / "bin" / "vllm"), "serve", str(MODEL_DIR), "--served-model-name", MODEL, "--host",
           "127.0.0.1", "--port", str(port), "--max-model-len", "2048", "--dtype", "float32", "--max-num-seqs",
           "16", "--uvicorn-log-level", "warning"]  # fmt: skip
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env_for(ENGINE), start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 600
        while True:
            if proc.poll() is not None:
                sys.exit(f"vllm serve exited with {proc.returncode}; see {log}")
            if time.monotonic() > deadline:
                sys.exit(f"vllm serve not ready in 600 s; see {log}")
            with contextlib.suppress(OSError):
                if urllib.request.urlopen(url + "/health", timeout=2).status == 200:
                    break
            time.sleep(1)
        yield url, cmd
    finally:
        for sig, wait in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=wait)
                break


def _shown(arg: str, url: str = "") -> str:
    """An argument as PROVENANCE.md shows it: no machine paths, no port."""
    arg = arg.replace(str(ENGINE), ".venv-engine").replace(str(INFERENCE_PERF), ".venv-inference-perf")
    arg = arg.replace(str(ROOT) + "/", "")
    return arg.replace(url, "http://127.0.0.1:PORT") if url else arg


def run_tool(name: str, venv: Path, argv: list[str], url: str, dest: Path, commands: list[str]) -> None:
    """/metrics before, the tool, /metrics after; the command line is recorded for PROVENANCE.md."""
    dest.mkdir(parents=True, exist_ok=True)
    scrape(url, dest / "metrics_before.prom")
    shown = " ".join(shlex.quote(_shown(a, url)) for a in argv)
    commands.append(f"{name}: {shown}")
    print(f"make_tool_fixtures: {shown}", flush=True)
    with (WORK / f"{name}.log").open("wb") as log:
        subprocess.run(
            argv, check=True, env=env_for(venv), cwd=WORK, stdout=log, stderr=subprocess.STDOUT, timeout=1800
        )
    scrape(url, dest / "metrics_after.prom")
    unroot(dest)


def unroot(folder: Path) -> None:
    """Replace this checkout's absolute path, which the tools write into their files (vLLM's tokenizer_id,
    AIPerf's artifact dir), by ``$REPO``: the only edit made to the tools' files (PROVENANCE.md says so)."""
    root = str(ROOT)
    for f in folder.rglob("*"):
        if f.is_file() and f.suffix in {".json", ".jsonl", ".csv", ".yaml", ".txt"}:
            text = f.read_text("utf-8")
            if root in text:
                f.write_text(text.replace(root, "$REPO"), "utf-8")


def main() -> None:
    for v in (ENGINE, GUIDELLM, AIPERF):
        if not (v / "bin" / "python").exists():
            sys.exit(f"{v} is missing: see `make fixtures` in the Makefile")
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    subprocess.run([str(ENGINE / "bin" / "python"), str(TINY_LLAMA), str(MODEL_DIR)], check=True, env=env_for(ENGINE))
    versions = {
        "vllm": version(ENGINE, "vllm"),
        "guidellm": version(GUIDELLM, "guidellm"),
        "aiperf": version(AIPERF, "aiperf"),
    }
    dirs = {k: OUT / f"{k}-{v}" for k, v in versions.items()}
    for d in dirs.values():
        shutil.rmtree(d, ignore_errors=True)
    commands: list[str] = []
    with engine(WORK / "vllm-serve.log") as (url, serve_cmd):
        # vllm bench serve: per-request arrays with --save-detailed
        run_tool("vllm", ENGINE, [
            str(ENGINE / "bin" / "vllm"), "bench", "serve", "--backend", "openai", "--base-url", url, "--model", MODEL,
            "--tokenizer", str(MODEL_DIR), "--dataset-name", "random", "--random-input-len", str(ISL),
            "--random-output-len", str(OSL), "--num-prompts", str(N), "--max-concurrency", str(CONC),
            "--request-rate", "inf", "--ignore-eos", "--seed", "0", "--percentile-metrics", "ttft,tpot,itl,e2el",
            "--metric-percentiles", "50,90,99", "--save-result", "--save-detailed", "--result-dir", str(dirs["vllm"]),
            "--result-filename", "bench_serve.json",
        ], url, dirs["vllm"], commands)  # fmt: skip
        # GuideLLM: a concurrent profile, request samples kept (all N)
        run_tool("guidellm", GUIDELLM, [
            str(GUIDELLM / "bin" / "guidellm"), "run",
            "--backend", f"kind=openai_http,target={url},model={MODEL},request_format=/v1/completions",
            "--profile", f"kind=concurrent,streams={CONC}",
            "--constraint", f"kind=max_requests,count={N}",
            "--data", f"kind=synthetic_text,prompt_tokens={ISL},output_tokens={OSL}",
            "--tokenizer", f"kind=huggingface_auto,model={MODEL_DIR}",
            "--output", f"kind=json,path={dirs['guidellm'] / 'benchmarks.json'}",
            "--disable-console-interactive",
        ], url, dirs["guidellm"], commands)  # fmt: skip
        # AIPerf: records export level (per-request JSONL + aggregate JSON/CSV)
        run_tool("aiperf", AIPERF, [
            str(AIPERF / "bin" / "aiperf"), "profile", "--model", MODEL, "--url", url, "--endpoint-type",
            "completions", "--streaming", "--tokenizer", hf_cache_alias(MODEL_DIR, "local/tiny-llama"), "--isl", str(ISL), "--isl-stddev", "0",
            "--osl", str(OSL), "--extra-inputs", "ignore_eos:true", "--extra-inputs", f"min_tokens:{OSL}",
            "--request-count", str(N), "--concurrency", str(CONC), "--random-seed", "0", "--ui", "none",
            "--export-level", "records", "--artifact-dir", str(WORK / "aiperf-artifacts"),
        ], url, dirs["aiperf"], commands)  # fmt: skip
    for f in sorted((WORK / "aiperf-artifacts").rglob("profile_export*")):
        if f.suffix in (".json", ".jsonl", ".csv") and "raw" not in f.name:
            shutil.copy2(f, dirs["aiperf"] / f.name)
    write_provenance(versions, commands, serve_cmd)


def write_provenance(versions: dict[str, str], commands: list[str], serve_cmd: list[str]) -> None:
    serve = " ".join(shlex.quote(_shown(a)) for a in serve_cmd).replace(
        serve_cmd[serve_cmd.index("--port") + 1], "PORT"
    )
    lines = [
        "# Result files written by the real tools",
        "",
        f"Made by `make fixtures` (tests/make_tool_fixtures.py) on {dt.date.today().isoformat()}: each tool ran "
        f"against one real vLLM engine (vLLM's CPU build, a tiny random-weight Llama built by tests/tiny_llama.py, "
        f"no download) on 127.0.0.1, {N} requests of {ISL} prompt / {OSL} output tokens, {CONC} in flight. "
        "`metrics_before.prom` / `metrics_after.prom` in each folder are the engine's /metrics scraped right before "
        "and after that tool's run. One edit only: the tools wrote the checkout's absolute path into some fields "
        "(vLLM's tokenizer_id, AIPerf's artifact dir); it is replaced by `$REPO` (make_tool_fixtures.unroot).",
        "",
        "The timings measure the tools on a shared 2-core machine with a tiny model, not the engine's capability: "
        "the fixtures exist to pin the file layouts and to check that benchbook's figures match each tool's own "
        "summary in the same file.",
        "",
        "| tool | version |",
        "|---|---|",
        *(f"| {k} | {v} |" for k, v in versions.items()),
        "",
        "Engine:",
        "",
        f"    {serve}",
        "",
        "Commands (PORT = the engine's port, chosen free at run time):",
        "",
        *(f"    {c}" for c in commands),
        "",
    ]
    prov = OUT / "PROVENANCE.md"
    kept = ""  # the sections below the generated part (inference-perf, files written from a schema) stay
    if prov.exists() and "\n## " in prov.read_text():
        kept = "\n## " + prov.read_text().split("\n## ", 1)[1]
    prov.write_text("\n".join(lines) + kept)


def inference_perf_config(url: str, dest: Path) -> str:
    """inference-perf's YAML config: the same load shape as the other tools, every report it writes
    (summary, per stage, per request with computed metrics, no payloads), no Prometheus server (the
    engine's /metrics is scraped around the run instead, as for the other tools)."""
    import json

    cfg = {
        "api": {"type": "completion", "streaming": True},
        "data": {
            "type": "random",
            "input_distribution": {"min": ISL, "max": ISL, "mean": ISL, "std_dev": 0},
            "output_distribution": {"min": OSL, "max": OSL, "mean": OSL, "std_dev": 0},
        },
        "load": {"type": "concurrent", "stages": [{"num_requests": N, "concurrency_level": CONC}], "num_workers": 1},
        "server": {"type": "vllm", "model_name": MODEL, "base_url": url, "ignore_eos": True},
        "tokenizer": {"pretrained_model_name_or_path": str(MODEL_DIR)},
        "report": {
            "request_lifecycle": {
                "summary": True,
                "per_stage": True,
                "per_request": True,
                "per_request_fields": {"request": False, "response": False, "info": False,
                                       "response_chunks": False, "computed_metrics": True},
                "percentiles": [50, 90, 99],
            },
            "prometheus": None,
        },
        "storage": {"local_storage": {"path": str(dest)}},
    }  # fmt: skip
    path = WORK / "inference-perf.yaml"
    path.write_text(json.dumps(cfg, indent=1))  # JSON is YAML
    return str(path)


def inference_perf_only() -> None:
    """`python tests/make_tool_fixtures.py inference-perf`: only inference-perf's folder (it needs
    Python >= 3.12, so its venv is built apart: INFERENCE_PERF_VENV); PROVENANCE.md gains a section."""
    for v in (ENGINE, INFERENCE_PERF):
        if not (v / "bin" / "python").exists():
            sys.exit(f"{v} is missing: see `make fixtures` in the Makefile")
    WORK.mkdir(parents=True, exist_ok=True)
    subprocess.run([str(ENGINE / "bin" / "python"), str(TINY_LLAMA), str(MODEL_DIR)], check=True, env=env_for(ENGINE))
    ver = version(INFERENCE_PERF, "inference-perf")
    dest = OUT / f"inference-perf-{ver}"
    shutil.rmtree(dest, ignore_errors=True)
    commands: list[str] = []
    with engine(WORK / "vllm-serve-ip.log") as (url, _serve_cmd):
        cfg = inference_perf_config(url, dest)
        run_tool("inference-perf", INFERENCE_PERF, [str(INFERENCE_PERF / "bin" / "inference-perf"), "--config_file", cfg],
                 url, dest, commands)  # fmt: skip
    shown = Path(cfg).read_text().replace(str(ROOT) + "/", "").replace(url, "http://127.0.0.1:PORT")
    (dest / "input_config.yaml").write_text(shown)  # config.yaml is the tool's own dump of what it ran
    prov = OUT / "PROVENANCE.md"
    head = "## inference-perf"
    section = "\n".join([
        head, "",
        f"`inference-perf-{ver}/` was made on {dt.date.today().isoformat()} by `python tests/make_tool_fixtures.py "
        f"inference-perf` against the same engine command, with inference-perf {ver} from PyPI in its own Python 3.12 "
        "venv (it requires Python >= 3.12). Same load shape: {N} requests, {ISL}/{OSL} tokens, {CONC} in flight. "
        "No Prometheus server was configured, so the tool wrote no server-metrics report. `input_config.yaml` is the "
        "config given to it (PORT for the port; per-request entries keep computed_metrics, not the raw `info`, "
        "so the fixture stays under 100 KB); `config.yaml` is the tool's own dump of what it ran.".format(
            N=N, ISL=ISL, OSL=OSL, CONC=CONC), "",
        *(f"    {c}" for c in commands), "", "",
    ])  # fmt: skip
    parts = (prov.read_text() if prov.exists() else "").split("\n## ")
    parts = [parts[0].rstrip() + "\n"] + ["## " + x for x in parts[1:] if not ("## " + x).startswith(head)]
    parts.insert(1, section)
    prov.write_text("\n".join(p.rstrip("\n") + "\n" for p in parts))


if __name__ == "__main__":
    if sys.argv[1:] == ["inference-perf"]:
        inference_perf_only()
    else:
        main()
