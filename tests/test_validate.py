"""`benchbook validate` lists every problem at once, each with where and how to fix it."""

import json
import subprocess
import sys

from benchbook.commands.cli import main
from benchbook.errors import EXIT_BAD_INPUT


def test_every_schema_error_at_once_with_how_to_fix_it(tmp_path, capsys):
    # A minimal manifest with four mistakes took four validate rounds, one error at a time.
    m = {
        "format": "benchbook.campaign/1",
        "title": "t",
        "date": "16 Aug 2026",
        "provenance": "measured by me",
        "runs": [{"id": "r", "harness": "vllm-bench-serve", "path": "runs/r"}],
    }
    (tmp_path / "campaign.json").write_text(json.dumps(m))
    assert main(["validate", str(tmp_path)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    mpath = tmp_path / "campaign.json"
    lines = [ln for ln in err.splitlines() if ln.startswith(str(mpath))]
    assert any(ln.startswith(f"{mpath}: $: 'question' is a required property: add 'question'") for ln in lines)
    assert any("$.date: '16 Aug 2026' is not a date: write it as YYYY-MM-DD" in ln for ln in lines)
    assert any("$.provenance:" in ln and "use one of: 'measured', 'reconstructed'" in ln for ln in lines)
    assert any("$.runs[0].harness:" in ln and "'results'" in ln for ln in lines)
    # a harness that is not results needs the seeds' keys: said once, with why
    assert any("add 'engine'" in ln and "not every run is a results run" in ln for ln in lines)
    assert any(
        "$.runs[0]: 'arm' is a required property" in ln and "unless the run's harness is 'results'" in ln
        for ln in lines
    )
    assert f"{len(lines)} problem(s) found" in err


def test_validate_by_subprocess_exits_2_and_names_the_unknown_key(tmp_path):
    m = {"format": "benchbook.results/1", "files": ["bench.json"], "metrics_befor": "before.prom"}
    (tmp_path / "results.json").write_text(json.dumps(m))
    run = tmp_path / "r"
    run.mkdir()
    (run / "results.json").write_text(json.dumps(m))
    manifest = {
        "format": "benchbook.campaign/1",
        "title": "t",
        "question": "q",
        "date": "2026-08-16",
        "provenance": "measured",
        "runs": [{"id": "r", "harness": "results", "path": "r"}],
    }
    (tmp_path / "campaign.json").write_text(json.dumps(manifest))
    p = subprocess.run(
        [sys.executable, "-m", "benchbook.commands.cli", "validate", str(tmp_path)], capture_output=True, text=True
    )
    assert p.returncode == EXIT_BAD_INPUT, p.stderr
    assert "'metrics_befor' was unexpected" in p.stderr and "remove it or fix its spelling" in p.stderr
    assert "metrics_before" in p.stderr  # the known keys are listed


def test_output_names_no_empty_place_and_quiet_is_quiet(tmp_path, capsys):
    """``validate`` printed ``vllm-bench-serve $  [`` (the whole file's JSON path, "$", as if it were a
    place in it); ``validate -q`` and ``init -q`` still printed a ``[1/7] run`` progress line each."""
    from pathlib import Path

    camp = Path(__file__).resolve().parents[1] / "data" / "er0080-opt125m"
    assert main(["validate", str(camp)]) == 0
    out = capsys.readouterr().out
    lines = [ln for ln in out.splitlines() if "vllm-bench-serve" in ln]
    assert lines and all(" $ " not in ln and "vllm-bench-serve  [" in ln for ln in lines), lines
    assert main(["validate", "-q", str(camp)]) == 0
    assert capsys.readouterr() == ("", "")
    src = camp / "runs" / "bench-serve" / "er0080_bench_serve_v0.25.1.json"
    assert main(["init", "-q", str(tmp_path / "new"), str(src)]) == 0
    assert capsys.readouterr() == ("", "")
