"""Render page notebooks to self-contained HTML: papermill executes, nbconvert exports.

``render_page`` executes a source notebook (never written) with papermill in a kernel running this
same Python, keeps the executed copy beside the page as ``<page>.ipynb`` (the immutable record),
collects the values the notebook recorded with :func:`benchbook.pages.display.record` into
``<page>.values.json``, and exports HTML with the project's offline template. The three files are
published together (:mod:`benchbook.pipeline.writes`): only when everything succeeded, and so that a
render killed at any moment leaves the previous three files or the new three, never a mix.

The CLI (``benchbook render``) decides which pages a campaign gets from its ``campaign.json``,
renders them, and with ``--all`` writes ``index.html`` linking every page.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import secrets
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from benchbook import __version__
from benchbook.errors import EXIT_BAD_INPUT, EXIT_RENDER, EXIT_SOURCE, InputError, RenderError, SourceError
from benchbook.pages.display import VALUES_MIME
from benchbook.pipeline import writes
from benchbook.pipeline.outline import outline

ROOT = Path(__file__).resolve().parents[3]
# the checkout's notebooks/; an installed (non-editable) package ships them as benchbook/notebooks/
NOTEBOOKS = ROOT / "notebooks" if (ROOT / "notebooks").is_dir() else Path(__file__).resolve().parents[1] / "notebooks"
TEMPLATES = Path(__file__).resolve().parents[1] / "templates"
TEMPLATE_NAME = "benchbook"

# page kind -> (notebook file name, label shown in titles and on the index)
PAGES: dict[str, tuple[str, str]] = {
    "baseline": ("baseline.ipynb", "baseline"),
    "ablation": ("ablation.ipynb", "ablation"),
    "pd": ("pd.ipynb", "prefill/decode disaggregation"),
    "compare": ("compare.ipynb", "comparison"),
}


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


QUIET = False  # --quiet: progress lines off, errors still printed (see _error)


def _log(msg: str) -> None:
    if not QUIET:
        print(f"benchbook render: {msg}", file=sys.stderr, flush=True)


def _error(msg: str) -> None:
    print(f"benchbook render: {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- execution


def _kernel_manager_class():
    """A KernelManager that runs the kernel on *this* interpreter (see :mod:`benchbook.pipeline.kernels`;
    its stdout/stderr go to a log file, not to the renderer's stderr)."""
    from benchbook.pipeline.kernels import kernel_manager_class

    return kernel_manager_class()


def declared_parameters(notebook: Path) -> dict[str, Any]:
    """The parameters a notebook's ``parameters`` cell declares (name -> papermill's description)."""
    import papermill

    try:
        return dict(papermill.inspect_notebook(str(notebook)))
    except Exception as e:  # noqa: BLE001 - a broken page notebook is a render failure, not a crash
        raise RenderError(
            Path(notebook).stem, f"cannot read the parameters of {notebook}: {type(e).__name__}: {_first_line(str(e))}"
        ) from None


_TYPES = {"str": (str,), "int": (int,), "float": (int, float), "bool": (bool,), "list": (list, tuple), "dict": (dict,)}


def check_parameter_types(params: Mapping[str, Any], declared: Mapping[str, Any], source: str = "parameters") -> None:
    """A parameter whose value does not have the declared literal type is bad input (exit 2)."""
    for name, value in params.items():
        typ = (declared.get(name) or {}).get("inferred_type_name")
        ok = _TYPES.get(typ)
        if ok is None:
            continue
        if isinstance(value, bool) and typ in ("int", "float"):
            ok = ()
        if not isinstance(value, ok):
            raise InputError(
                source, name, f"expected {typ} (as the notebook declares it), got {type(value).__name__} {value!r}"
            )


def _first_line(s: str) -> str:
    s = (s or "").strip()
    return s.splitlines()[0] if s else ""


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
    first = _first_line(cells[i].source)
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
    """Make the executed notebook's volatile parts deterministic: cell ids by position; timing
    metadata dropped when SOURCE_DATE_EPOCH is set (reproducible build)."""
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i:03d}"
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
        line = f"{e.ename}: {_first_line(e.evalue)}"
        if e.ename in ("InputError", "InputErrors"):
            parts = _first_line(e.evalue).split(": ", 2)
            if len(parts) == 3:
                file = parts[0] if cwd is None or os.path.isabs(parts[0]) else str(Path(cwd) / parts[0])
                raise InputError(file, parts[1], f"{parts[2]} (page {page}, {cell})") from None
        if e.ename == "SourceError":  # a Prometheus server the campaign names did not answer: exit 4
            src, _, reason = _first_line(e.evalue).partition(": ")
            raise SourceError(src, f"{reason} (page {page}, {cell})") from None
        raise RenderError(page, f"{notebook.name} {cell}: {line}") from None
    except Exception as e:  # kernel died, timeout, bad notebook JSON: one line, exit 3
        raise RenderError(page, f"{notebook.name}: {type(e).__name__}: {_first_line(str(e))}") from None
    t_exec = time.perf_counter() - t0

    try:
        values = recorded_values(nb)
    except ValueError as e:
        raise RenderError(page, f"{notebook.name}: {e}") from None
    _normalize(nb)
    try:
        body = export_html(nb, title=title)
    except Exception as e:  # noqa: BLE001 - template/export failure becomes a RenderError
        raise RenderError(page, f"export failed: {type(e).__name__}: {_first_line(str(e))}") from None

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


# --------------------------------------------------------------------------- page registry


def read_manifest(campaign: Path) -> dict[str, Any]:
    """``campaign.json`` as a dict, read by the one manifest reader
    (:func:`benchbook.ingest.campaign.open_manifest`; only what the renderer needs is checked here,
    full validation happens when a page loads the campaign)."""
    from benchbook.ingest.campaign import open_manifest

    return open_manifest(campaign, schema=False)[2]


def pages_for(manifest: Mapping[str, Any]) -> list[str]:
    """Which pages a campaign gets: ``baseline`` when it has requests/phases runs, ``ablation`` when
    any arm has role "ablation", ``pd`` when any arm has mode "pd", ``compare`` when it has results
    runs (benchmark-tool result files; the page reads them from the campaign)."""
    arms = manifest.get("arms") or {}
    runs = manifest.get("runs") or []
    pages = []
    layout = [r for r in runs if isinstance(r, dict) and isinstance(r.get("process"), str)]
    if any(isinstance(r, dict) and r.get("harness") in ("requests", "phases") for r in runs) or any(
        r.get("harness") in ("results", "gpu") for r in layout
    ):  # init's arm/run layout: a ladder of result files or GPU samples reach the baseline page
        pages.append("baseline")
    if any(isinstance(a, dict) and a.get("role") == "ablation" for a in arms.values()):
        pages.append("ablation")
    if any(isinstance(a, dict) and a.get("mode") == "pd" for a in arms.values()):
        pages.append("pd")
    if any(isinstance(r, dict) and r.get("harness") == "results" for r in runs):
        pages.append("compare")
    return pages


def notebook_for(page: str, notebooks: Path | None = None) -> Path:
    if page not in PAGES:
        raise InputError(None, "--page", f"unknown page {page!r}; choose from {', '.join(PAGES)}")
    return (notebooks or NOTEBOOKS) / PAGES[page][0]


def page_title(manifest: Mapping[str, Any], campaign: Path, page: str) -> str:
    return f"{manifest.get('title') or campaign.name} — {PAGES[page][1]}"


# notebook parameters that choose what a page reads: set by the renderer from the campaign folder (or
# --compare's files), never by render.yml or --params, so a parameter file cannot pull another
# folder's data onto a campaign's page
INPUT_PARAMETERS = frozenset({"campaign", "files", "inputs", "engine_before", "engine_after"})


def check_overrides(overrides: Mapping[str, Mapping[str, Any]], source: str, allowed: frozenset = frozenset()) -> None:
    """Parameter files set a page's parameters only: naming an input (``campaign``, ``files`` …) is
    bad input (exit 2), except the ``allowed`` ones."""
    for page, params in overrides.items():
        for k in sorted(set(params) & (INPUT_PARAMETERS - allowed)):
            raise InputError(
                source,
                f"$.{page}.{k}",
                f"{k!r} chooses which files the page reads; render.yml and --params set a page's parameters, "
                "not its input (render the other folder itself)",
            )


def page_parameters(
    campaign: Path, manifest: Mapping[str, Any], page: str, notebook: Path, overrides: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Parameters for one page: ``campaign`` (the folder's name: the kernel runs in its parent folder,
    see :func:`render_page`) and ``title`` when the notebook declares them, then the overrides (from ``--params``); an override the notebook does not
    declare, or one that names an input (:data:`INPUT_PARAMETERS`), is an input error."""
    declared = declared_parameters(notebook)
    check_overrides({page: overrides or {}}, "--params")
    params: dict[str, Any] = {}
    if "campaign" in declared:
        params["campaign"] = Path(campaign).resolve().name
    if "title" in declared:
        params["title"] = page_title(manifest, campaign, page)
    for k, v in (overrides or {}).items():
        if k not in declared:
            raise InputError("--params", f"$.{page}.{k}", f"{notebook.name} declares no parameter {k!r}")
        params[k] = v
    return params


@dataclasses.dataclass
class CampaignOutcome:
    name: str
    manifest: dict[str, Any]
    rendered: list[RenderResult] = dataclasses.field(default_factory=list)
    skipped: list[str] = dataclasses.field(default_factory=list)  # page kinds without a notebook
    failed: dict[str, tuple[int, str]] = dataclasses.field(default_factory=dict)  # page -> (exit code, reason)
    error: tuple[int, str] | None = None  # the whole campaign failed (manifest unreadable …): (exit code, reason)
    # render --all (pipeline.schedule): pages rendered, unchanged (key matched), kept from earlier renders
    rendered_pages: list[str] = dataclasses.field(default_factory=list)
    unchanged: list[str] = dataclasses.field(default_factory=list)
    kept: list[str] = dataclasses.field(default_factory=list)


def campaign_failure(campaign: Path, exc: BaseException) -> CampaignOutcome:
    """One campaign's failure in ``render --all``, whatever it was: bad input keeps its code (2), a
    remote source its code (4); anything else (a RecursionError, a bug, memory) is that campaign's
    render failure (3), so the batch goes on and the index marks it."""
    from benchbook.errors import BenchbookError

    if isinstance(exc, BenchbookError):
        code, line = exc.exit_code, exc.one_line()
    else:
        code, line = EXIT_RENDER, f"{campaign.name}: render failed: {type(exc).__name__}: {_first_line(str(exc))}"
    if code not in (EXIT_BAD_INPUT, EXIT_SOURCE):
        code = EXIT_RENDER
    return CampaignOutcome(campaign.name, {}, error=(code, line))


def render_campaign(
    campaign: Path,
    out_dir: Path,
    *,
    pages: Iterable[str] | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    only: Iterable[str] | None = None,
    notebooks: Path | None = None,
    keep_going: bool = False,
) -> CampaignOutcome:
    """Render a campaign's pages into ``out_dir/<page>.html``.

    ``pages`` forces those page kinds; otherwise the pages the manifest calls for (``pages_for``),
    restricted to ``only`` when given. A page chosen from the manifest whose notebook does not exist
    yet is skipped with a message. Without ``keep_going`` the first failure is raised."""
    from benchbook.errors import BenchbookError

    campaign = Path(campaign)
    if not campaign.is_dir():
        raise InputError(campaign, None, "campaign folder does not exist")
    manifest = read_manifest(campaign)
    own = campaign_params(campaign)
    check_overrides(own, str(_params_file(campaign)))
    overrides = _merge_params(own, overrides or {})
    outcome = CampaignOutcome(campaign.name, manifest)
    writes.clean_folder(out_dir)  # what a killed render of this campaign left behind
    wanted = list(pages) if pages is not None else [p for p in pages_for(manifest) if only is None or p in only]
    if not wanted:
        _log(f"{campaign.name}: no page applies (no requests/phases/results runs, no ablation or pd arms)")
    for page in wanted:
        nb = notebook_for(page, notebooks)
        if not nb.is_file():
            if pages is None:  # chosen from the manifest: the page notebook is not written yet
                _log(f"{campaign.name}/{page}: skipped, {nb} does not exist yet")
                outcome.skipped.append(page)
                continue
            err = RenderError(f"{campaign.name}/{page}", f"asked for with --page but {nb} does not exist")
            if not keep_going:
                raise err
            outcome.failed[page] = (err.exit_code, err.one_line())
            continue
        _log(f"{campaign.name}/{page}: rendering {nb.name} ...")
        try:
            params = page_parameters(campaign, manifest, page, nb, (overrides or {}).get(page))
            res = render_page(
                nb,
                params,
                Path(out_dir) / f"{page}.html",
                title=page_title(manifest, campaign, page),
                page=f"{campaign.name}/{page}",
                cwd=campaign.resolve().parent,
            )
        except BenchbookError as e:
            if not keep_going:
                raise
            outcome.failed[page] = (e.exit_code, e.one_line())
            _error(f"{campaign.name}/{page}: FAILED: {e.one_line()}")
            continue
        outcome.rendered.append(res)
        _log(f"{campaign.name}/{page}: wrote {res.html} ({res.bytes / 1024:.0f} KiB, {res.seconds:.1f} s)")
    return outcome


def find_campaigns(data_dir: Path) -> list[Path]:
    """Every folder directly under ``data_dir`` holding a ``campaign.json``, sorted by name."""
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise InputError(data_dir, None, "data folder does not exist")
    return sorted((p for p in data_dir.iterdir() if (p / "campaign.json").is_file()), key=lambda p: p.name)


# --------------------------------------------------------------------------- index


def page_findings(html: Path) -> dict[str, Any]:
    """What a page's findings box counted (``findings_box``) and its one-line ``headline`` ("3 results
    (1 regression), 2 failed checks"), read from the ``<page>.values.json`` beside it; {} if none."""
    try:
        values = json.loads(html.with_suffix(".values.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(values, dict) or not isinstance(values.get("headline"), str):
        return {}
    box = values.get("findings_box") if isinstance(values.get("findings_box"), dict) else {}
    return {"headline": values["headline"], **{k: v for k, v in box.items() if isinstance(v, int)}}


def page_headline(html: Path) -> str:
    return page_findings(html).get("headline", "")


def index_html(outcomes: list[CampaignOutcome], reports: Path) -> str:
    """The index page: every campaign (newest first) with its title, date, provenance and pages."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES / TEMPLATE_NAME)), autoescape=True, keep_trailing_newline=True
    )
    rows = []
    for o in sorted(outcomes, key=lambda o: (str(o.manifest.get("date") or ""), o.name), reverse=True):
        links = []
        done = {r.page.rsplit("/", 1)[-1] for r in o.rendered} | set(o.rendered_pages) | set(o.unchanged)
        done |= set(o.kept)
        failed = dict(o.failed)
        if o.error is not None:  # the whole campaign failed: every page it had is marked, and kept
            failed.update({p: o.error for p in PAGES if (reports / o.name / f"{p}.html").exists()})
        for page in PAGES:
            # a failure first: a page kept from an earlier render is still marked as failed now
            if page in failed:
                kept = (reports / o.name / f"{page}.html").exists()
                links.append(
                    {
                        "label": PAGES[page][1],
                        "href": f"{o.name}/{page}.html" if kept else None,
                        "status": "failed",
                        "reason": failed[page][1],
                        "headline": page_headline(reports / o.name / f"{page}.html") if kept else "",
                    }
                )
            elif page in done:
                links.append(
                    {
                        "label": PAGES[page][1],
                        "href": f"{o.name}/{page}.html",
                        "status": "ok",
                        "headline": page_headline(reports / o.name / f"{page}.html"),
                    }
                )
        rows.append(
            {
                "name": o.name,
                "title": o.manifest.get("title") or o.name,
                "date": o.manifest.get("date") or "",
                "question": o.manifest.get("question") or "",
                "provenance": o.manifest.get("provenance") or "",
                "links": links,
                "skipped": [p for p in o.skipped],
                "error": o.error[1] if o.error is not None else "",
            }
        )
    css = (TEMPLATES / TEMPLATE_NAME / "page.css").read_text(encoding="utf-8")
    box = index_findings(rows, reports)
    history = "history.html" if (reports / "history.html").is_file() else None
    return outline(
        env.get_template("reports_index.html.j2").render(
            campaigns=rows, css=css, version=__version__, history=history, box=box
        )
    )


def index_findings(rows: list[dict[str, Any]], reports: Path) -> str:
    """The index's findings box: the totals over every page, then one line per page that found a
    regression, a failed check or something it could not judge, or that failed to render."""
    from benchbook.pages import display as bd
    from benchbook.pages.sections import headline

    totals = {"results": 0, "regressions": 0, "failed_checks": 0, "unjudged": 0}
    lines = []
    for i, c in enumerate(rows, 1):
        if c.get("error"):
            lines.append(bd.Finding("fail", f"{c['name']}: not rendered — {c['error']}", f"campaign-{i}"))
        for link in c["links"]:
            f = page_findings(reports / link["href"]) if link.get("href") else {}
            for k in totals:
                totals[k] += f.get(k, 0)
            where = f"campaign-{i}"
            name = f"{c['name']} / {link['label']}"
            if link["status"] == "failed":
                lines.append(bd.Finding("fail", f"{name}: this render failed — {link['reason']}", where))
            elif f.get("regressions"):
                lines.append(bd.Finding("regression", f"{name}: {f['headline']}", where))
            elif f.get("failed_checks"):
                lines.append(bd.Finding("fail", f"{name}: {f['headline']}", where))
            elif f.get("unjudged"):
                lines.append(bd.Finding("unjudged", f"{name}: {f['headline']}", where))
    order = {k: i for i, k in enumerate(bd.FINDING_ORDER)}
    lines.sort(key=lambda f: order[f.kind])
    head = f"{len(rows)} campaign{'s' * (len(rows) != 1)}: " + headline(
        totals["results"], totals["regressions"], totals["failed_checks"], totals["unjudged"]
    )
    return bd.findings_box(lines, headline=head, empty="No regression, failed check or unjudged figure.").html


# --------------------------------------------------------------------------- CLI


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("campaign", nargs="?", type=Path, help="campaign folder (holds campaign.json)")
    p.add_argument(
        "--all",
        dest="data_dir",
        type=Path,
        metavar="DATA_DIR",
        help="render every campaign folder under DATA_DIR into OUT/<campaign>/ and write OUT/index.html",
    )
    p.add_argument(
        "--out",
        type=Path,
        required=True,
        help="output folder: the page folder for one campaign, the reports root with --all",
    )
    p.add_argument(
        "--page",
        action="append",
        choices=[*PAGES, "history"],
        help="render only this page kind (repeatable); default: the pages the campaign calls for. "
        "With --all, only campaigns that call for it get it; every other page keeps its link in the index "
        "(--page history: only the history page)",
    )
    p.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=None,
        metavar="N",
        help="with --all: render on N worker processes, each reusing one kernel (default: the number of cores)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="with --all: render every page even when its inputs, parameters, notebook and benchbook are unchanged",
    )
    p.add_argument("--quiet", action="store_true", help="print errors only (for cron); exit codes are unchanged")
    p.add_argument(
        "--notebooks",
        type=Path,
        metavar="DIR",
        default=None,
        help="folder holding the page notebooks (default: the checkout's notebooks/)",
    )
    p.add_argument(
        "--params",
        type=Path,
        metavar="FILE",
        help='JSON or YAML parameter overrides per page kind: {"baseline": {"warmup": 1}}',
    )
    p.add_argument(
        "--wait",
        action="store_true",
        help="if another benchbook render is writing into OUT, wait for it instead of exiting with code 5",
    )
    p.add_argument(
        "--compare",
        nargs="+",
        type=Path,
        metavar="FILE",
        help="render the compare page of these benchmark result files into OUT/compare.html",
    )
    p.add_argument(
        "--label",
        action="append",
        default=[],
        metavar="FILE=LABEL",
        help="with --compare: name the configuration of FILE (a file name, path or pattern); runs with "
        "different labels are never repeats of each other (repeatable)",
    )


PARAMS_FILES = ("render.yml", "render.yaml", "render.json")


def campaign_params(campaign: Path) -> dict[str, dict[str, Any]]:
    """The campaign's own scheduled-run parameters: ``<campaign>/render.yml`` (or .yaml/.json),
    ``{page kind: {parameter: value}}``. Command-line ``--params`` override them."""
    f = _params_file(campaign)
    return _load_params(f) if f is not None else {}


def _params_file(campaign: Path) -> Path | None:
    return next((Path(campaign) / n for n in PARAMS_FILES if (Path(campaign) / n).is_file()), None)


def _merge_params(
    base: Mapping[str, Mapping[str, Any]], top: Mapping[str, Mapping[str, Any]]
) -> dict[str, dict[str, Any]]:
    return {page: {**base.get(page, {}), **top.get(page, {})} for page in set(base) | set(top)}


def _load_params(path: Path | None) -> dict[str, dict[str, Any]]:
    from benchbook.jsonfile import load_json, load_yaml

    if path is None:
        return {}
    # the input limits hold here too: size, nesting, duplicate keys, no YAML aliases
    data = load_yaml(path) if path.suffix in (".yaml", ".yml") else load_json(path)
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise InputError(path, "$", "expected {page kind: {parameter: value}}")
    bad = sorted(set(data) - set(PAGES))
    if bad:
        raise InputError(path, f"$.{bad[0]}", f"unknown page kind; choose from {', '.join(PAGES)}")
    return data


def run(args: argparse.Namespace) -> int:
    from benchbook.errors import UsageError

    global QUIET
    QUIET = bool(getattr(args, "quiet", False))
    if getattr(args, "jobs", None) is not None and args.jobs < 1:
        raise UsageError("-j/--jobs must be at least 1")

    overrides = _load_params(args.params)
    if args.notebooks is not None and not args.notebooks.is_dir():
        raise InputError(args.notebooks, None, "notebooks folder does not exist")
    if getattr(args, "label", None) and not getattr(args, "compare", None):
        raise UsageError("--label names result files of --compare; give --compare FILE... with it")
    compare = getattr(args, "compare", None)
    if compare:
        if args.campaign is not None or args.data_dir is not None:
            raise UsageError("--compare takes result files; give no CAMPAIGN or --all with it")
    elif (args.campaign is None) == (args.data_dir is None):
        raise UsageError("give either CAMPAIGN or --all DATA_DIR")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with writes.render_lock(out, wait=getattr(args, "wait", False)):
        removed = writes.clean_kernel_dirs() + writes.clean_folder(out)
        if removed:
            _log(f"removed {len(removed)} leftover(s) of an interrupted render: {', '.join(removed[:5])}")
        if compare:
            return _run_compare(args, overrides)
        if args.campaign is not None:
            t0 = time.perf_counter()
            outcome = render_campaign(
                args.campaign, out, pages=args.page, overrides=overrides, notebooks=args.notebooks
            )
            _log(f"done: {len(outcome.rendered)} page(s) in {time.perf_counter() - t0:.1f} s")
            return 0
        return _run_all(args, overrides)


def _run_compare(args: argparse.Namespace, overrides: Mapping[str, Mapping[str, Any]]) -> int:
    """The compare page reads exactly the files it is given (and says which)."""
    check_overrides(overrides, str(args.params), allowed=frozenset({"engine_before", "engine_after"}))
    for f in args.compare:
        if not f.is_file():
            raise InputError(f, None, "result file does not exist")
    params = dict(overrides.get("compare", {}))
    engine = [k for k in ("engine_before", "engine_after") if params.get(k)]
    given = [f.resolve() for f in args.compare] + [Path(params[k]).resolve() for k in engine]
    cwd = Path(os.path.commonpath([str(f.parent) for f in given]))
    staged = None
    if cwd.parent == cwd:
        # the inputs share no folder but the filesystem root: paths from there name this machine's
        # folders (home, user, project) on the page; the kernel reads copies named by the fewest
        # trailing components that tell them apart instead
        import shutil
        import tempfile

        from benchbook.analysis.identity import short_names

        staged = Path(tempfile.mkdtemp(prefix="benchbook-compare-"))
        copies = []
        for f, name in zip(given, short_names([str(f) for f in given]), strict=True):
            dst = staged / name
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f, dst)
            copies.append(dst)
        given, cwd = copies, staged
    try:
        if args.label:  # FILE=LABEL: the path as given (the kernel gets it as it reads that file), never its name
            labels = _compare_labels(args.label, args.compare, given[: len(args.compare)], cwd)
            params["labels"] = [*params.get("labels", []), *labels]
        named = [str(f) for f in args.compare] + [str(params[k]) for k in engine]
        _log(f"compare: reading {len(named)} file(s): {', '.join(named)}")
        # the kernel runs in the files' common folder and gets them relative to it: no absolute path of
        # this machine in the page or its notebook
        params["campaign"] = ""  # the files, not the notebook's default campaign
        params["files"] = [os.path.relpath(f, cwd) for f in given[: len(args.compare)]]
        params.update({k: os.path.relpath(f, cwd) for k, f in zip(engine, given[len(args.compare) :], strict=True)})
        res = render_page(
            notebook_for("compare", args.notebooks),
            params,
            Path(args.out) / "compare.html",
            title=params.get("title") or f"Comparison of {len(args.compare)} result file(s)",
            page="compare",
            cwd=cwd,
        )
    finally:
        if staged is not None:
            import shutil

            shutil.rmtree(staged, ignore_errors=True)
    _log(f"compare: wrote {res.html} ({res.bytes / 1024:.0f} KiB, {res.seconds:.1f} s)")
    return 0


def _compare_labels(items: list[str], files: list[Path], read: list[Path], cwd: Path) -> list[str]:
    """``--label FILE=LABEL`` items as the kernel must read them: FILE is one of the compared files'
    paths as given (or a name or pattern matching some), each match becomes ``path-from-cwd=LABEL``;
    one that matches no compared file is bad input (exit 2), never silently ignored. ``read``: where
    the kernel reads each of ``files``."""
    from benchbook.analysis.identity import matches

    out = []
    for item in items:
        pattern, eq, label = item.partition("=")
        if not eq or not pattern or not label:
            raise InputError("--label", item, "expected FILE=LABEL")
        hits = [k for k, f in enumerate(files) if Path(pattern).resolve() == f.resolve() or matches(pattern, f)]
        if not hits:
            raise InputError(
                "--label",
                item,
                f"{pattern!r} matches none of the {len(files)} compared files (e.g. {files[0]}); give a file's path "
                "as given, its name or a pattern",
            )
        out += [f"{os.path.relpath(read[k], cwd)}={label}" for k in hits]
    return out


def batch_exit_code(outcomes: list[CampaignOutcome]) -> int:
    """0 when every page rendered; else 2 if any input was bad, 4 if a source failed, 3 otherwise."""
    codes = [c for o in outcomes for c, _ in [*o.failed.values(), *([o.error] if o.error else [])]]
    if not codes:
        return 0
    for code in (EXIT_BAD_INPUT, EXIT_SOURCE):
        if code in codes:
            return code
    return EXIT_RENDER


def _run_all(args: argparse.Namespace, overrides: Mapping[str, Mapping[str, Any]]) -> int:
    """Every campaign under DATA_DIR: planned, rendered where something changed (on ``-j`` workers),
    then the history page, then the index, written once (:mod:`benchbook.pipeline.schedule`)."""
    from benchbook.pipeline import schedule

    t0 = time.perf_counter()
    out = Path(args.out)
    campaigns = find_campaigns(args.data_dir)
    _log(f"{len(campaigns)} campaign(s) under {args.data_dir}")
    outcomes, summary = schedule.render_all(
        campaigns,
        out,
        only=args.page,
        overrides=overrides,
        notebooks=args.notebooks,
        force=getattr(args, "force", False),
        workers=getattr(args, "jobs", None),
        log=_log,
        error=_error,
    )
    index = out / "index.html"
    try:
        writes.write_atomic(index, index_html(outcomes, out).encode("utf-8"))
    except OSError as e:
        raise RenderError("index", f"cannot write {index}: {e.strerror or e}") from None
    summary.seconds = time.perf_counter() - t0
    _log(f"done: {summary.line()}; index {index}")
    lines = [line for o in outcomes for _, line in [*([o.error] if o.error else []), *o.failed.values()]]
    lines += summary.other_failures
    if lines:
        _error(f"{len(lines)} failure(s); first: {lines[0]}")
    code = batch_exit_code(outcomes)
    if code == 0 and summary.other_failures:
        code = EXIT_RENDER
    return code
