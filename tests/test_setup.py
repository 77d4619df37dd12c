"""The project's setup: one dependency list, a Makefile whose default target is help, CI via make test."""

import re
import subprocess
import sys
from pathlib import Path

import tomllib
import yaml

ROOT = Path(__file__).resolve().parents[1]


def _norm(req: str) -> str:
    return re.sub(r"\s+", "", req).lower().replace("_", "-")


def test_environment_yml_lists_the_same_dependencies_as_pyproject():
    """environment.yml is for people who explore in conda: the run-time list plus the `lab` extra."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    deps = project["dependencies"] + project["optional-dependencies"]["lab"]
    assert {"pandas", "pyarrow"} <= {re.split(r"[<>=]", d)[0] for d in project["optional-dependencies"]["lab"]}
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    assert sorted(map(_norm, pip)) == sorted(map(_norm, deps))


def test_make_help_is_the_default_target():
    out = subprocess.run(["make", "-s", "-C", str(ROOT)], capture_output=True, text=True, check=True).stdout
    for target in ("report", "test", "test-fast", "lab", "bench", "setup"):
        assert f"make {target}" in out


def test_ci_runs_make_test():
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^make test\b", ci, re.M)
    readme = (ROOT / "README.md").read_text()
    assert "make test" in readme and "make report" in readme


def test_cli_help_is_quick_and_light():
    # --help must not import the heavy libraries (speed is measured by `make bench`, not here).
    code = (
        "import sys; from benchbook.commands.cli import main; main(['--help'])\n"
        "heavy = [m for m in ('polars', 'pandas', 'scipy', 'altair', 'papermill') if m in sys.modules]\n"
        "assert not heavy, heavy"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "validate" in r.stdout and "prefill-sim" in r.stdout


def _lab_command(tmp_path, uid: int) -> str:
    """The command ``make lab`` would run, with ``id -u`` answering ``uid``."""
    (tmp_path / "id").write_text(f"#!/bin/sh\necho {uid}\n")
    (tmp_path / "id").chmod(0o755)
    import os

    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"}
    (tmp_path / "stamp").touch()  # newer than pyproject.toml: no setup step in the way
    out = subprocess.run(
        ["make", "-s", "-n", "-C", str(ROOT), "lab", f"STAMP={tmp_path / 'stamp'}"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout
    return next(line for line in out.splitlines() if "jupyter lab" in line)


def test_make_lab_passes_allow_root_only_as_root(tmp_path):
    """As root, Jupyter exits at once ("Running as root is not recommended. Use --allow-root")."""
    assert _lab_command(tmp_path, 0).endswith("--allow-root")
    assert "--allow-root" not in _lab_command(tmp_path, 1000)
