"""A worker's reused kernel: each notebook runs in a fresh namespace, counts from 1, and shows the
warnings a fresh kernel would show; a dead kernel is replaced."""

from __future__ import annotations

import nbformat
import pytest

from benchbook.pipeline.kernels import WorkerKernel

pytestmark = pytest.mark.fresh_kernel  # these tests make their kernels themselves


def _notebook(path, *sources):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 0", metadata={"tags": ["parameters"]})]
    nb.cells += [nbformat.v4.new_code_cell(s) for s in sources]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(path))
    return path


def _outputs(nb) -> list[str]:
    return [
        "".join(o.get("text", "")) + str(o.get("data", {}).get("text/plain", "")) for c in nb.cells for o in c.outputs
    ]


def test_each_notebook_gets_a_fresh_namespace(tmp_path):
    first = _notebook(
        tmp_path / "first.ipynb",
        "leak = 41\nimport warnings\nwarnings.warn('once per process', UserWarning)",
        "leak + x",
    )
    second = _notebook(
        tmp_path / "second.ipynb",
        "print('leak' in dir(), 'warnings' in dir())\nimport warnings\nwarnings.warn('once per process', UserWarning)",
        "x",
    )
    with WorkerKernel(tmp_path, warm=("json",)) as k:
        a = k.execute(first, {"x": 1}, 120)
        b = k.execute(second, {"x": 2}, 120)
        assert k.pages == 2 and k.alive()
    assert "42" in _outputs(a)[-1]
    out = _outputs(b)
    assert out[0].startswith("False False")  # nothing of the first notebook is visible
    assert any("once per process" in o for o in out)  # the warning shows again
    # execution counts start from 1 in each notebook, as in a fresh kernel
    assert [c.execution_count for c in b.cells if c.cell_type == "code"] == [
        c.execution_count for c in a.cells if c.cell_type == "code"
    ]
    assert b.cells[0].execution_count == 1


def test_a_dead_kernel_is_replaced(tmp_path):
    from benchbook.pipeline.schedule import _LazyKernel

    dies = _notebook(tmp_path / "dies.ipynb", "import os\nos._exit(1)")
    fine = _notebook(tmp_path / "fine.ipynb", "x * 2")
    lazy = _LazyKernel(str(tmp_path))
    try:
        with pytest.raises(Exception):  # noqa: B017 - nbclient's DeadKernelError (or a timeout) is what happens
            lazy.get().execute(dies, {}, 60)
        nb = lazy.get().execute(fine, {"x": 21}, 60)
        assert "42" in _outputs(nb)[-1]
    finally:
        lazy.close()
