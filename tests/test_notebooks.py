"""Source notebooks are thin and stored without outputs (CONVENTIONS: notebooks are thin and immutable)."""

import ast
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_stored_without_outputs(path):
    r = subprocess.run(
        [sys.executable, "-m", "nbstripout", "--verify", "--keep-id", str(path)], capture_output=True, text=True
    )
    assert r.returncode == 0, f"{path.name} has outputs or execution counts: run nbstripout on it"
    nb = nbformat.read(path, as_version=4)
    for c in nb.cells:
        if c.cell_type == "code":
            assert not c.outputs and c.execution_count is None


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_one_parameters_cell_first_with_typed_literals(path):
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    tagged = [i for i, c in enumerate(code) if "parameters" in c.metadata.get("tags", [])]
    assert tagged == [0], "the first code cell, and only it, is tagged parameters"
    for node in ast.parse(code[0].source).body:
        assert isinstance(node, ast.AnnAssign), f"{path.name}: parameters are typed assignments"
        ast.literal_eval(node.value)  # a literal, nothing derived from another parameter
    for line in code[0].source.splitlines():
        assert "#" in line, f"{path.name}: every parameter carries a trailing comment: {line!r}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_logic_in_notebooks(path):
    nb = nbformat.read(path, as_version=4)
    for c in nb.cells[1:]:
        if c.cell_type != "code":
            continue
        for node in ast.walk(ast.parse(c.source)):
            assert not isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.For, ast.While, ast.Lambda)), (
                f"{path.name}: logic belongs in lib/benchbook, not in a notebook cell:\n{c.source}"
            )


def test_defaults_work_where_jupyter_runs_the_kernel():
    """`make lab` opens notebooks whose kernels run in notebooks/: default campaign paths resolve there."""
    import papermill

    for path in NOTEBOOKS:
        params = papermill.inspect_notebook(str(path))
        if "campaign" in params:
            folder = (path.parent / ast.literal_eval(params["campaign"]["default"])).resolve()
            assert (folder / "campaign.json").is_file(), f"{path.name}: default campaign {folder} does not exist"
