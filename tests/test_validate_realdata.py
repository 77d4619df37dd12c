"""`benchbook validate FILE` on every real public capture: exit 0 and a correct description."""

import pytest

from benchbook.commands.cli import main
from realdata import realdata

REAL = realdata()
FOLDERS = ["vllm_bench_serving", "sglang_bench_serving", "guidellm", "aiperf_genai_perf", "llmperf", "prom_llm_servers"]
# Expected description fragments, keyed by what the file IS (its content), checked per folder.
EXPECT = {
    "vllm_bench_serving": ("vllm-",),
    "sglang_bench_serving": ("sglang-bench-serving",),
    "guidellm": ("guidellm-report", "completed=46", "incomplete=1"),
    "aiperf_genai_perf": ("aiperf", "genai-perf"),
    "llmperf": ("llmperf-",),
    "prom_llm_servers": ("Prometheus text exposition",),
}
FILES = sorted(p for d in FOLDERS for p in (REAL / d).glob("*") if p.is_file()) if REAL.is_dir() else []


@pytest.mark.skipif(not FILES, reason=f"real captures absent at {REAL} (CI has ../shared beside the clone)")
@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_validate_reads_every_real_capture(path, capsys):
    assert main(["validate", str(path)]) == 0
    out = capsys.readouterr().out
    frags = EXPECT[path.parent.name]
    assert any(f in out for f in frags), out
    for f in frags[1:] if path.parent.name == "guidellm" else ():
        assert f in out


@pytest.mark.skipif(not FILES, reason="real captures absent")
def test_vllm_idle_loaded_pair_is_described_with_its_engine_profile(capsys):
    d = REAL / "prom_llm_servers"
    assert main(["validate", str(d / "er0080_metrics_vllm_0_25_1_loaded.txt")]) == 0
    out = capsys.readouterr().out
    assert "engine profile vllm" in out and "generation_tokens=165293" in out and "ttft_count=664" in out
    assert "running=64" in out and "waiting=64" in out
