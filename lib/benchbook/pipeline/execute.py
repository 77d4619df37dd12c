"""Execute a page notebook and export it: papermill executes, nbconvert exports, three files published.

``render_page`` executes a source notebook (never written) with papermill in a kernel running this
same Python, keeps the executed copy beside the page as ``<page>.ipynb`` (the immutable record),
collects the values the notebook recorded with :func:`benchbook.pages.display.record` into
``<page>.values.json``, and exports HTML with the project's offline template. The three files are
published together (:mod:`benchbook.pipeline.writes`): only when everything succeeded, and so that a
render killed at any moment leaves the previous three files or the new three, never a mix.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import secrets
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchbook.errors import InputError, RenderError, SourceError, first_line
from benchbook.pages.display import VALUES_MIME
from benchbook.pipeline import writes
from benchbook.pipeline.outline import outline
from benchbook.pipeline.params import check_parameter_types, declared_parameters

TEMPLATES = Path(__file__).resolve().parents[1] / "templates"
TEMPLATE_NAME = "benchbook"


@dataclasses.dataclass(frozen=True)
class RenderResult:
    page: str
    html: Path
    notebook: Path  # the executed copy, <page>.ipynb
    values_path: Path  # <page>.values.json
    values: dict[str, Any]
    seconds: float  # wall time: execute + export + write
    execute_seconds: float
    bytes: int  # size of the HTML


def _kernel_manager_class():
    """A KernelManager that runs the kernel on *this* interpreter (see :mod:`benchbook.pipeline.kernels`;
    its stdout/stderr go to a log file, not to the renderer's stderr)."""
    from benchbook.pipeline.kernels import kernel_manager_class

    return kernel_manager_class()


def _source_cell(notebook: Path, executed_index: int) -> str:
    """Name a cell of the *source* notebook from its index in the executed one (papermill inserts an
    injected-parameters cell after the parameters cell): 1-based position plus its first line."""
    import nbformat

    try:
        cells = nbformat.read(str(notebook), as_version=4).cells
    except Exception:  # noqa: BLE001 - naming the cell is best effort
        return f"cell #{executed_index}"
    tagged = [i for i, c in enumerate(cells) if "parameters" in c.metadata.get("tags", [])]
    injected_at = tagged[0] + 1 if tagged else 0
    if executed_index == injected_at:
        return "injected parameters cell"
    i = executed_index - 1 if executed_index > injected_at else executed_index
    if not 0 <= i < len(cells):
        return f"cell #{executed_index}"
    first = first_line(cells[i].source)
    first = first if len(first) <= 50 else first[:47] + "..."
    return f"cell {i + 1} `{first}`"


def recorded_values(nb: Any) -> dict[str, Any]:
    """Values recorded with :func:`benchbook.pages.display.record` in an executed notebook (node or path).

    Raises ``ValueError`` when a name was recorded twice.
    """
    import nbformat

    if isinstance(nb, (str, Path)):
        nb = nbformat.read(str(nb), as_version=4)
    out: dict[str, Any] = {}
    where: dict[str, int] = {}
    for i, cell in enumerate(nb.cells):
        for o in cell.get("outputs", []):
            data = o.get("data", {}) if o.get("output_type") in ("display_data", "execute_result") else {}
            if VALUES_MIME in data:
                payload = data[VALUES_MIME]
                name = payload["name"]
                if name in out:
                    raise ValueError(f"value {name!r} recorded twice (cells {where[name]} and {i})")
                out[name] = payload["value"]
                where[name] = i
    return dict(sorted(out.items()))


def _normalize(nb: Any) -> None:
    """Make the executed notebook's volatile parts deterministic: cell ids by position; papermill's
    ``input_path``/``output_path`` as the notebook's file name, never the checkout's absolute path
    (a page names no folder of the machine that rendered it); timing metadata dropped when
    SOURCE_DATE_EPOCH is set (reproducible build)."""
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i:03d}"
    meta = nb.metadata.get("papermill")
    if isinstance(meta, dict):
        for k in ("input_path", "output_path"):
            if isinstance(meta.get(k), str):
                meta[k] = os.path.basename(meta[k])
    if os.environ.get("SOURCE_DATE_EPOCH"):
        pm = nb.metadata.get("papermill", {})
        for k in ("start_time", "end_time", "duration"):
            pm.pop(k, None)
        for cell in nb.cells:
            cpm = cell.metadata.get("papermill", {})
            for k in ("start_time", "end_time", "duration"):
                cpm.pop(k, None)
            cell.metadata.pop("execution", None)


# an output payload the exporter's BeautifulSoup pass need not see: text/html and inline SVG charts
PAYLOAD_TYPES = ("text/html", "image/svg+xml")
PAYLOAD_MIN_CHARS = 512


def export_html(nb: Any, *, title: str, set_aside_payloads: bool = True) -> str:
    """Export an executed notebook with the project template (inputs hidden, nothing external).

    nbconvert's ``HTMLExporter`` parses the whole exported page with BeautifulSoup to give ``<img>``
    alt text and output wrappers a tabindex — neither occurs in this template (its images carry
    ``alt``, its wrappers are its own) — and writes the page back out: seconds on a page of large
    charts (4.3 s of a 3.6 MB history page). With ``set_aside_payloads`` each large text/html or SVG
    output is replaced by a placeholder comment for the export and put back after it, so that pass
    runs over the page's skeleton. The result is the library's page (the same document once parsed;
    tests/test_render.py compares both exports that way); the notebook is left as it was.
    """
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(
        template_name=TEMPLATE_NAME,
        extra_template_basedirs=[str(TEMPLATES)],
        exclude_input=True,
        exclude_input_prompt=True,
        exclude_output_prompt=True,
    )
    aside: list[str] = []
    restore: list[tuple[dict, str, Any]] = []
    nonce = secrets.token_hex(8)
    if set_aside_payloads:
        for cell in nb.cells:
            for out in cell.get("outputs", ()):
                data = out.get("data") if out.get("output_type") in ("execute_result", "display_data") else None
                for mime in PAYLOAD_TYPES if data else ():
                    value = data.get(mime)
                    text = "".join(value) if isinstance(value, list) else value
                    if isinstance(text, str) and len(text) >= PAYLOAD_MIN_CHARS:
                        restore.append((data, mime, value))
                        data[mime] = f"<!--bb-payload-{nonce}-{len(aside)}-->"
                        aside.append(text)
    try:
        body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": title}})
    finally:
        for data, mime, value in restore:
            data[mime] = value
    if aside:
        body = re.sub(f"<!--bb-payload-{nonce}-(\\d+)-->", lambda m: aside[int(m.group(1))], body)
    return outline(body)  # heading anchors and the table of contents


def render_page(
    notebook: Path,
    parameters: Mapping[str, Any],
    out_html: Path,
    *,
    title: str,
    page: str | None = None,
    timeout: int = 600,
    cwd: Path | None = None,
    kernel: Any = None,
) -> RenderResult:
    """Execute ``notebook`` with ``parameters`` and write ``out_html`` (+ ``.ipynb``, ``.values.json``).

    ``title`` is the HTML ``<title>``; it is also passed to the notebook as ``title`` when its
    parameters cell declares one and ``parameters`` does not set it. Raises :class:`RenderError`
    (exit 3) naming the page and the failing cell's error line; an ``InputError`` raised inside the
    notebook (a loader rejecting a file) is re-raised as :class:`InputError` (exit 2).
    Nothing is written unless everything succeeded. The kernel runs in ``cwd`` (default: the
    notebook's folder); a campaign page runs in the campaign's parent folder with ``campaign`` set
    to the folder's name, so no absolute path of this machine enters the page or its notebook.
    ``kernel``: a :class:`benchbook.pipeline.kernels.WorkerKernel` to execute in (reset first)
    instead of a new kernel for this page.
    """
    import nbformat
    import papermill
    from papermill.exceptions import PapermillExecutionError

    notebook = Path(notebook).resolve()
    out_html = writes.fixed_name(out_html)
    page = page or out_html.stem
    if not notebook.is_file():
        raise RenderError(page, f"notebook {notebook} does not exist")
    params = dict(parameters)
    declared = declared_parameters(notebook)
    if "title" in declared and "title" not in params:
        params["title"] = title
    check_parameter_types(params, declared, f"parameters of {page}")
    unknown = sorted(set(params) - set(declared))
    if unknown:
        raise RenderError(page, f"{notebook.name} does not declare parameter(s) {', '.join(unknown)}")

    t0 = time.perf_counter()
    try:
        if kernel is not None:
            nb = kernel.execute(notebook, params, timeout, cwd=cwd)
        else:
            nb = papermill.execute_notebook(
                str(notebook),
                None,  # papermill writes nothing; we write atomically below
                parameters=params,
                kernel_name="python3",
                progress_bar=False,
                request_save_on_cell_execute=False,
                cwd=str(cwd or notebook.parent),
                execution_timeout=timeout,
                kernel_manager_class=_kernel_manager_class(),
            )
    except PapermillExecutionError as e:
        cell = _source_cell(notebook, e.cell_index)
        line = f"{e.ename}: {first_line(e.evalue)}"
        if e.ename in ("InputError", "InputErrors"):
            parts = first_line(e.evalue).split(": ", 2)
            if len(parts) == 3:
                file = parts[0] if cwd is None or os.path.isabs(parts[0]) else str(Path(cwd) / parts[0])
                raise InputError(file, parts[1], f"{parts[2]} (page {page}, {cell})") from None
        if e.ename == "SourceError":  # a Prometheus server the campaign names did not answer: exit 4
            src, _, reason = first_line(e.evalue).partition(": ")
            raise SourceError(src, f"{reason} (page {page}, {cell})") from None
        raise RenderError(page, f"{notebook.name} {cell}: {line}") from None
    except Exception as e:  # kernel died, timeout, bad notebook JSON: one line, exit 3
        raise RenderError(page, f"{notebook.name}: {type(e).__name__}: {first_line(str(e))}") from None
    t_exec = time.perf_counter() - t0

    try:
        values = recorded_values(nb)
    except ValueError as e:
        raise RenderError(page, f"{notebook.name}: {e}") from None
    _normalize(nb)
    try:
        body = export_html(nb, title=title)
    except Exception as e:  # noqa: BLE001 - template/export failure becomes a RenderError
        raise RenderError(page, f"export failed: {type(e).__name__}: {first_line(str(e))}") from None

    ipynb_path = out_html.with_suffix(".ipynb")
    values_path = out_html.with_suffix(".values.json")
    html_bytes = body.encode("utf-8")
    try:
        writes.publish(
            out_html.parent,
            out_html.stem,
            {
                ".html": html_bytes,
                ".ipynb": nbformat.writes(nb).encode("utf-8") + b"\n",
                ".values.json": json.dumps(values, indent=2, sort_keys=True, ensure_ascii=False).encode("utf-8")
                + b"\n",
            },
        )
    except OSError as e:  # full disk, read-only folder: the previous page is intact, exit 3
        raise RenderError(page, f"cannot write {e.filename or out_html}: {e.strerror or e}") from None
    return RenderResult(
        page=page,
        html=out_html,
        notebook=ipynb_path,
        values_path=values_path,
        values=values,
        seconds=time.perf_counter() - t0,
        execute_seconds=t_exec,
        bytes=len(html_bytes),
    )
