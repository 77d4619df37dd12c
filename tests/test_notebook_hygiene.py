"""Tracked notebooks stay free of outputs however people use ``make lab``: JupyterLab's checkpoints
are ignored, git stores a notebook as nbstripout leaves it (the filter ``make notebook-filter``
defines, which ``make lab`` runs), the notebooks git tracks carry no outputs, and the README lists
every notebook."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _git(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)


def _in_git() -> bool:
    return _git("rev-parse", "--git-dir").returncode == 0


# a copy of the tree without .git (an sdist) has nothing to check; CI runs in a clone, and never skips
CI = os.environ.get("CI") == "true"
needs_git = pytest.mark.skipif(not _in_git() and not CI, reason="not a git checkout (CI always runs in one)")


@needs_git
def test_checkpoints_are_ignored_and_notebooks_filtered():
    assert _git("check-ignore", "-q", "notebooks/.ipynb_checkpoints/explore-checkpoint.ipynb").returncode == 0
    out = _git("check-attr", "filter", "diff", "--", "notebooks/explore.ipynb").stdout
    assert "filter: nbstripout" in out and "diff: ipynb" in out


@needs_git
def test_the_notebooks_git_tracks_carry_no_outputs():
    """What is committed (the index's copy), not only the working file: with the filter, a notebook
    someone ran in JupyterLab keeps its outputs on disk while git stores it clean."""
    tracked = _git("ls-files", "*.ipynb").stdout.split()
    assert tracked and all(p.startswith("notebooks/") for p in tracked)
    for path in tracked:
        nb = nbformat.reads(_git("show", f":{path}").stdout, as_version=4)
        dirty = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and (c.outputs or c.execution_count)]
        assert dirty == [], f"{path}: cells {dirty} carry outputs or execution counts in git"


def test_the_readme_lists_every_notebook():
    readme = (ROOT / "README.md").read_text()
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        assert f"`{nb.name}`" in readme, f"README does not list notebooks/{nb.name}"


@pytest.mark.skipif(not CI and (shutil.which("git") is None or shutil.which("make") is None), reason="needs git, make")
def test_the_filter_keeps_outputs_out_of_git(tmp_path):
    """`make notebook-filter` in a repository: a notebook with outputs is committed without them and
    stays as it is on disk."""
    repo = tmp_path / "repo"
    (repo / "notebooks").mkdir(parents=True)
    assert _git("init", "-q", cwd=repo).returncode == 0
    shutil.copyfile(ROOT / ".gitattributes", repo / ".gitattributes")
    (repo / "pyproject.toml").touch()
    (repo / "stamp").touch()  # newer than pyproject.toml: no set-up step in the way
    r = subprocess.run(
        [
            "make",
            "-s",
            "-f",
            str(ROOT / "Makefile"),
            "notebook-filter",
            "STAMP=stamp",
            f"BIN={Path(sys.executable).parent}",
        ],
        cwd=repo,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    assert "nbstripout" in _git("config", "filter.nbstripout.clean", cwd=repo).stdout
    nb = nbformat.read(ROOT / "notebooks" / "explore.ipynb", as_version=4)
    code = next(c for c in nb.cells if c.cell_type == "code")
    code.execution_count = 3
    code.outputs = [nbformat.v4.new_output("stream", name="stdout", text="ran in JupyterLab\n")]
    nbformat.write(nb, repo / "notebooks" / "explore.ipynb")
    assert _git("add", "notebooks/explore.ipynb", cwd=repo).returncode == 0
    stored = json.loads(_git("show", ":notebooks/explore.ipynb", cwd=repo).stdout)
    assert all(
        not c.get("outputs") and c.get("execution_count") is None for c in stored["cells"] if c["cell_type"] == "code"
    )
    on_disk = nbformat.read(repo / "notebooks" / "explore.ipynb", as_version=4)
    assert any(c.get("outputs") for c in on_disk.cells if c.cell_type == "code")
    # the stored ids are the notebook's own (--keep-id): git sees no change where nothing but outputs changed
    assert [c["id"] for c in stored["cells"]] == [c["id"] for c in nb.cells]
