"""Memory sampled while capturing: the host sampler for real (/proc of this machine, a real process
tree), the nvidia-smi sampler with a fake `nvidia-smi` on PATH that prints nvidia-smi's CSV, both
stopped cleanly — also on Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

import fake_openai
from benchbook.commands.capture_memory import HOST_HEADER, MemorySampling, process_tree
from realdata import realdata

REAL_GPU_CSV = realdata("vllm_h200_llama8b", "batch", "gpu_samples.csv")
REAL_HOST_CSV = REAL_GPU_CSV.with_name("host_samples.csv")
HEADER = (
    "timestamp, index, memory.used [MiB], memory.total [MiB], power.draw [W], utilization.gpu [%], "
    "utilization.memory [%], clocks.current.sm [MHz], clocks.current.memory [MHz], temperature.gpu"
)

FAKE_SMI = f"""#!/bin/sh
echo $$ >> "$(dirname "$0")/smi.pids"
case "$*" in *noheader*) ;; *) echo "{HEADER}" ;; esac
case "$*" in
  *-lms*) i=0; while true; do echo "2026/12/01 08:33:2$((i % 10)).275, 0, $((1024 + i)), 143771, 81.99, 0, 0, 345, 3201, 38"; \
echo "2026/12/01 08:33:2$((i % 10)).276, 1, 2048, 143771, 75.00, 3, 1, 345, 3201, 36"; i=$((i + 1)); sleep 0.1; done ;;
  *) echo "2026/12/01 08:33:25.275, 0, 0, 143771, 81.99, 0, 0, 345, 3201, 38" ;;
esac
"""


def _fake_smi(tmp_path: Path) -> dict[str, str]:
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    smi = bin_ / "nvidia-smi"
    smi.write_text(FAKE_SMI)
    smi.chmod(smi.stat().st_mode | stat.S_IEXEC)
    return {**os.environ, "PATH": f"{bin_}{os.pathsep}{os.environ['PATH']}"}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_the_files_have_the_layout_of_the_real_campaigns_samplers():
    assert REAL_GPU_CSV.read_text().splitlines()[0] == HEADER
    assert REAL_HOST_CSV.read_text().splitlines()[0] + "\n" == HOST_HEADER


def test_host_sampler_reads_this_hosts_meminfo_and_a_real_process_tree(tmp_path):
    parent = subprocess.Popen(
        [sys.executable, "-c", "import subprocess, time; subprocess.Popen(['sleep', '30']); time.sleep(30)"]
    )
    try:
        deadline = time.monotonic() + 10
        while len(process_tree(parent.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        tree = process_tree(parent.pid)
        assert len(tree) == 2 and tree[0] == parent.pid
        s = MemorySampling(tmp_path, server_pid=parent.pid, gpu_every_ms=100).start()
        time.sleep(1.3)
        out = s.stop()
    finally:
        for p in process_tree(parent.pid)[::-1]:
            os.kill(p, signal.SIGKILL)
        parent.wait()
    lines = (tmp_path / "host_samples.csv").read_text().splitlines()
    assert lines[0] + "\n" == HOST_HEADER
    rows = [line.split(",") for line in lines[1:]]
    assert len(rows) == out["host"]["lines_appended"] == 4  # two ticks (0 s, 1 s) x two processes
    assert {int(r[5]) for r in rows} == set(tree) and {r[6] for r in rows} >= {"sleep"}
    meminfo = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
    for r in rows:
        assert int(r[1]) == int(meminfo["MemTotal"].split()[0])
        assert 0 < int(r[2]) <= int(r[1]) and int(r[3]) >= 0 and int(r[4]) >= 0
        assert 0 < int(r[8]) <= int(r[7])  # Pss <= Rss
    assert out["host"]["server_pid"] == parent.pid
    assert out["gpu"] in ("not sampled (nvidia-smi not found on PATH)",) or isinstance(out["gpu"], dict)
    assert s.stop() == out  # idempotent


def test_gpu_samples_from_nvidia_smi_appended_per_capture_into_the_run_folder(tmp_path):
    env = _fake_smi(tmp_path)
    with fake_openai.serving(token_s=0.02) as (url, _st):
        for i in (1, 2):
            r = subprocess.run(
                [sys.executable, "-m", "benchbook.commands.cli", "capture", "ladder", "--url", url, "--model", "m",
                 "--concurrency", "1", "--warmup", "0", "--max-tokens", "8", "--arm", "a", "--run", "p1",
                 "--point", f"ladder{i}", "--out", str(tmp_path / "caps")],
                capture_output=True, text=True, env=env, timeout=60,
            )  # fmt: skip
            assert r.returncode == 0, r.stderr
    run = tmp_path / "caps" / "a" / "p1"
    lines = (run / "gpu_samples.csv").read_text().splitlines()
    assert lines[0] == HEADER and lines.count(HEADER) == 1  # the second capture appended without a header
    assert all(len(line.split(", ")) == 10 for line in lines[1:]) and len(lines) >= 5
    caps = [json.loads((run / f"ladder{i}" / "capture.json").read_text()) for i in (1, 2)]
    for cap in caps:
        gpu = cap["memory_samples"]["gpu"]
        assert gpu["file"] == "gpu_samples.csv" and gpu["lines_appended"] >= 2
        assert "--format=csv,nounits -lms 500" in gpu["command"]
    assert sum(c["memory_samples"]["gpu"]["lines_appended"] for c in caps) == len(lines) - 1
    pids = [int(p) for p in (tmp_path / "bin" / "smi.pids").read_text().split()]
    assert pids and not any(_alive(p) for p in pids)  # every nvidia-smi the captures started is gone


def test_without_nvidia_smi_capture_json_says_not_sampled(tmp_path):
    s = MemorySampling(tmp_path).start()
    old = os.environ["PATH"]
    try:
        os.environ["PATH"] = str(tmp_path)  # nothing on it
        (tmp_path / "x").mkdir()
        s2 = MemorySampling(tmp_path / "x").start()
    finally:
        os.environ["PATH"] = old
    assert s2.stop()["gpu"] == "not sampled (nvidia-smi not found on PATH)"
    s.stop()
    assert "no --server-pid" in s.stop()["host"]["note"]


def test_ctrl_c_stops_the_samplers_and_keeps_what_they_wrote(tmp_path):
    env = _fake_smi(tmp_path)
    with fake_openai.serving(token_s=0.5, serial=True) as (url, _st):
        p = subprocess.Popen(
            [sys.executable, "-m", "benchbook.commands.cli", "capture", "ladder", "--url", url, "--model", "m",
             "--concurrency", "1,4", "--warmup", "0", "--max-tokens", "40", "--out", str(tmp_path / "o")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while not (tmp_path / "o" / "gpu_samples.csv").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1.0)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=30)
    assert p.returncode == 130, err
    cap = json.loads((tmp_path / "o" / "capture.json").read_text())
    assert cap["complete"] is False and "Ctrl-C" in cap["stopped"]
    assert cap["memory_samples"]["gpu"]["lines_appended"] >= 2
    assert cap["memory_samples"]["host"]["lines_appended"] >= 1
    pids = [int(x) for x in (tmp_path / "bin" / "smi.pids").read_text().split()]
    assert not any(_alive(x) for x in pids)


@pytest.mark.parametrize("pid", [2**22 + 7])
def test_a_server_pid_that_does_not_exist_is_said(tmp_path, pid):
    s = MemorySampling(tmp_path, server_pid=pid).start()
    out = s.stop()
    assert "no such process" in out["host"]["note"]
    assert (tmp_path / "host_samples.csv").read_text().splitlines()[1].endswith(",,,,")
