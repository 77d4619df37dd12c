"""Render page notebooks to self-contained HTML: papermill executes, nbconvert exports.

``render_page`` executes a source notebook (never written) with papermill in a kernel running this
same Python, keeps the executed copy beside the page as ``<page>.ipynb`` (the immutable record),
collects the values the notebook recorded with :func:`benchbook.pages.display.record` into
``<page>.values.json``, and exports HTML with the project's offline template. All three files are
written to temporary files in the destination folder first and moved into place with
``os.replace`` only when everything succeeded, so a failed render leaves the previous page intact.

The CLI (``benchbook render``) decides which pages a campaign gets from its ``campaign.json``,
renders them, and with ``--all`` writes ``index.html`` linking every page.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from benchbook import __version__
from benchbook.errors import EXIT_BAD_INPUT, EXIT_RENDER, EXIT_SOURCE, InputError, RenderError, SourceError
from benchbook.pages.display import VALUES_MIME
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


def _log(msg: str) -> None:
    print(f"benchbook render: {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- execution


def _kernel_manager_class():
    """A KernelManager that runs the kernel on *this* interpreter, whatever kernelspecs exist
    (a user-level ``python3`` kernelspec pointing at another Python would lack benchbook)."""
    from jupyter_client.kernelspec import KernelSpec
    from jupyter_client.manager import AsyncKernelManager
    from traitlets import default

    class ThisPythonKernelManager(AsyncKernelManager):
        # IPC sockets (a private temp folder) rather than TCP on localhost: nothing listens on a port
        @default("transport")
        def _transport_default(self):
            return "ipc"

        @default("ip")
        def _ip_default(self):
            return os.path.join(tempfile.mkdtemp(prefix="benchbook-kernel-"), "kernel")

        async def _async_cleanup_resources(self, restart: bool = False) -> None:
            await super()._async_cleanup_resources(restart=restart)
            if not restart:
                shutil.rmtree(os.path.dirname(self.ip), ignore_errors=True)

        @property
        def kernel_spec(self):  # type: ignore[override]
            return KernelSpec(
                argv=[sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                display_name="benchbook (this Python)",
                language="python",
                env={"PYTHONHASHSEED": "0"},
            )

    return ThisPythonKernelManager


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


def _atomic_writes(files: Mapping[Path, bytes]) -> None:
    """Write every file to a temp file in its folder, then ``os.replace`` them all (HTML last)."""
    temps: list[tuple[str, Path]] = []
    try:
        for path, data in files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
            temps.append((tmp, path))
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, 0o644)
        for tmp, path in temps:
            os.replace(tmp, path)
    finally:
        for tmp, _ in temps:
            if os.path.exists(tmp):
                os.unlink(tmp)


def export_html(nb: Any, *, title: str) -> str:
    """Export an executed notebook with the project template (inputs hidden, nothing external)."""
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(
        template_name=TEMPLATE_NAME,
        extra_template_basedirs=[str(TEMPLATES)],
        exclude_input=True,
        exclude_input_prompt=True,
        exclude_output_prompt=True,
    )
    body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": title}})
    return outline(body)  # heading anchors and the table of contents


def render_page(
    notebook: Path,
    parameters: Mapping[str, Any],
    out_html: Path,
    *,
    title: str,
    page: str | None = None,
    timeout: int = 600,
) -> RenderResult:
    """Execute ``notebook`` with ``parameters`` and write ``out_html`` (+ ``.ipynb``, ``.values.json``).

    ``title`` is the HTML ``<title>``; it is also passed to the notebook as ``title`` when its
    parameters cell declares one and ``parameters`` does not set it. Raises :class:`RenderError`
    (exit 3) naming the page and the failing cell's error line; an ``InputError`` raised inside the
    notebook (a loader rejecting a file) is re-raised as :class:`InputError` (exit 2).
    Nothing is written unless everything succeeded.
    """
    import nbformat
    import papermill
    from papermill.exceptions import PapermillExecutionError

    notebook = Path(notebook).resolve()
    out_html = Path(out_html).resolve()
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
        nb = papermill.execute_notebook(
            str(notebook),
            None,  # papermill writes nothing; we write atomically below
            parameters=params,
            kernel_name="python3",
            progress_bar=False,
            request_save_on_cell_execute=False,
            cwd=str(notebook.parent),
            execution_timeout=timeout,
            kernel_manager_class=_kernel_manager_class(),
        )
    except PapermillExecutionError as e:
        cell = _source_cell(notebook, e.cell_index)
        line = f"{e.ename}: {_first_line(e.evalue)}"
        if e.ename in ("InputError", "InputErrors"):
            parts = _first_line(e.evalue).split(": ", 2)
            if len(parts) == 3:
                raise InputError(parts[0], parts[1], f"{parts[2]} (page {page}, {cell})") from None
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
        _atomic_writes(
            {
                ipynb_path: nbformat.writes(nb).encode("utf-8") + b"\n",
                values_path: json.dumps(values, indent=2, sort_keys=True, ensure_ascii=False).encode("utf-8") + b"\n",
                out_html: html_bytes,
            }
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
    """``campaign.json`` as a dict (only what the renderer needs; full validation lives in ingest)."""
    path = Path(campaign) / "campaign.json"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(path, None, "no campaign.json: not a campaign folder") from None
    except OSError as e:
        raise InputError(path, None, f"cannot read: {e.strerror}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(path, f"line {e.lineno}", f"not valid JSON: {e.msg}") from None
    if not isinstance(data, dict):
        raise InputError(path, "$", "expected a JSON object")
    for key, typ in (("arms", dict), ("runs", list)):
        if key in data and not isinstance(data[key], typ):
            raise InputError(path, f"$.{key}", f"expected {'an object' if typ is dict else 'an array'}")
    return data


def pages_for(manifest: Mapping[str, Any]) -> list[str]:
    """Which pages a campaign gets: ``baseline`` when it has requests/phases runs, ``ablation`` when
    any arm has role "ablation", ``pd`` when any arm has mode "pd". (``compare`` is only rendered
    when asked for with ``--page compare``.)"""
    arms = manifest.get("arms") or {}
    runs = manifest.get("runs") or []
    pages = []
    if any(isinstance(r, dict) and r.get("harness") in ("requests", "phases") for r in runs):
        pages.append("baseline")
    if any(isinstance(a, dict) and a.get("role") == "ablation" for a in arms.values()):
        pages.append("ablation")
    if any(isinstance(a, dict) and a.get("mode") == "pd" for a in arms.values()):
        pages.append("pd")
    return pages


def notebook_for(page: str, notebooks: Path | None = None) -> Path:
    if page not in PAGES:
        raise InputError(None, "--page", f"unknown page {page!r}; choose from {', '.join(PAGES)}")
    return (notebooks or NOTEBOOKS) / PAGES[page][0]


def page_title(manifest: Mapping[str, Any], campaign: Path, page: str) -> str:
    return f"{manifest.get('title') or campaign.name} — {PAGES[page][1]}"


def page_parameters(
    campaign: Path, manifest: Mapping[str, Any], page: str, notebook: Path, overrides: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Parameters for one page: ``campaign`` (absolute path) and ``title`` when the notebook
    declares them, then the overrides (from ``--params``); an override the notebook does not
    declare is an input error."""
    declared = declared_parameters(notebook)
    params: dict[str, Any] = {}
    if "campaign" in declared:
        params["campaign"] = str(Path(campaign).resolve())
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
    overrides = _merge_params(campaign_params(campaign), overrides or {})
    outcome = CampaignOutcome(campaign.name, manifest)
    wanted = list(pages) if pages is not None else [p for p in pages_for(manifest) if only is None or p in only]
    if not wanted:
        _log(f"{campaign.name}: no page applies (no requests/phases runs, no ablation or pd arms)")
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
            )
        except BenchbookError as e:
            if not keep_going:
                raise
            outcome.failed[page] = (e.exit_code, e.one_line())
            _log(f"{campaign.name}/{page}: FAILED: {e.one_line()}")
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
        done = {r.page.rsplit("/", 1)[-1] for r in o.rendered}
        for page in PAGES:
            if page in done:
                links.append(
                    {
                        "label": PAGES[page][1],
                        "href": f"{o.name}/{page}.html",
                        "status": "ok",
                        "headline": page_headline(reports / o.name / f"{page}.html"),
                    }
                )
            elif page in o.failed:
                kept = (reports / o.name / f"{page}.html").exists()
                links.append(
                    {
                        "label": PAGES[page][1],
                        "href": f"{o.name}/{page}.html" if kept else None,
                        "status": "failed",
                        "reason": o.failed[page][1],
                        "headline": page_headline(reports / o.name / f"{page}.html") if kept else "",
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
            }
        )
    css = (TEMPLATES / TEMPLATE_NAME / "page.css").read_text(encoding="utf-8")
    box = index_findings(rows, reports)
    return outline(
        env.get_template("reports_index.html.j2").render(campaigns=rows, css=css, version=__version__, box=box)
    )


def index_findings(rows: list[dict[str, Any]], reports: Path) -> str:
    """The index's findings box: the totals over every page, then one line per page that found a
    regression, a failed check or something it could not judge, or that failed to render."""
    from benchbook.pages import display as bd
    from benchbook.pages.sections import headline

    totals = {"results": 0, "regressions": 0, "failed_checks": 0, "unjudged": 0}
    lines = []
    for i, c in enumerate(rows, 1):
        for link in c["links"]:
            f = page_findings(reports / link["href"]) if link.get("href") else {}
            for k in totals:
                totals[k] += f.get(k, 0)
            where = f"campaign-{i}"
            name = f"{c['name']} / {link['label']}"
            if link["status"] == "failed":
                lines.append(bd.Finding("fail", f"{name}: the last render failed — {link['reason']}", where))
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
        choices=list(PAGES),
        help="render only this page kind (repeatable); default: the pages the campaign calls for. "
        "With --all, only campaigns that call for it get it",
    )
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
        "--compare",
        nargs="+",
        type=Path,
        metavar="FILE",
        help="render the compare page of these benchmark result files into OUT/compare.html",
    )


PARAMS_FILES = ("render.yml", "render.yaml", "render.json")


def campaign_params(campaign: Path) -> dict[str, dict[str, Any]]:
    """The campaign's own scheduled-run parameters: ``<campaign>/render.yml`` (or .yaml/.json),
    ``{page kind: {parameter: value}}``. Command-line ``--params`` override them."""
    for name in PARAMS_FILES:
        f = Path(campaign) / name
        if f.is_file():
            return _load_params(f)
    return {}


def _merge_params(
    base: Mapping[str, Mapping[str, Any]], top: Mapping[str, Mapping[str, Any]]
) -> dict[str, dict[str, Any]]:
    return {page: {**base.get(page, {}), **top.get(page, {})} for page in set(base) | set(top)}


def _load_params(path: Path | None) -> dict[str, dict[str, Any]]:
    if path is None:
        return {}
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise InputError(path, None, f"cannot read: {e.strerror}") from None
    try:
        if path.suffix in (".yaml", ".yml"):
            import yaml

            data = yaml.safe_load(text)
        else:
            data = json.loads(text)
    except Exception as e:  # noqa: BLE001 - JSON/YAML syntax error becomes an InputError
        raise InputError(path, None, f"not valid {path.suffix.lstrip('.') or 'JSON'}: {_first_line(str(e))}") from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise InputError(path, "$", "expected {page kind: {parameter: value}}")
    bad = sorted(set(data) - set(PAGES))
    if bad:
        raise InputError(path, f"$.{bad[0]}", f"unknown page kind; choose from {', '.join(PAGES)}")
    return data


def run(args: argparse.Namespace) -> int:
    from benchbook.errors import UsageError

    overrides = _load_params(args.params)
    if args.notebooks is not None and not args.notebooks.is_dir():
        raise InputError(args.notebooks, None, "notebooks folder does not exist")
    if getattr(args, "compare", None):
        if args.campaign is not None or args.data_dir is not None:
            raise UsageError("--compare takes result files; give no CAMPAIGN or --all with it")
        for f in args.compare:
            if not f.is_file():
                raise InputError(f, None, "result file does not exist")
        params = {**overrides.get("compare", {}), "files": [str(f.resolve()) for f in args.compare]}
        res = render_page(
            notebook_for("compare", args.notebooks),
            params,
            Path(args.out) / "compare.html",
            title=params.get("title") or f"Comparison of {len(args.compare)} result file(s)",
            page="compare",
        )
        _log(f"compare: wrote {res.html} ({res.bytes / 1024:.0f} KiB, {res.seconds:.1f} s)")
        return 0
    if (args.campaign is None) == (args.data_dir is None):
        raise UsageError("give either CAMPAIGN or --all DATA_DIR")
    t0 = time.perf_counter()
    if args.campaign is not None:
        outcome = render_campaign(
            args.campaign, args.out, pages=args.page, overrides=overrides, notebooks=args.notebooks
        )
        _log(f"done: {len(outcome.rendered)} page(s) in {time.perf_counter() - t0:.1f} s")
        return 0

    outcomes: list[CampaignOutcome] = []
    input_errors: list[str] = []
    campaigns = find_campaigns(args.data_dir)
    _log(f"{len(campaigns)} campaign(s) under {args.data_dir}")
    for c in campaigns:
        try:
            outcomes.append(
                render_campaign(
                    c, args.out / c.name, only=args.page, overrides=overrides, notebooks=args.notebooks, keep_going=True
                )
            )
        except InputError as e:
            input_errors.append(e.one_line())
            _log(f"{c.name}: FAILED: {e.one_line()}")
    index = Path(args.out) / "index.html"
    try:
        _atomic_writes({index: index_html(outcomes, Path(args.out)).encode("utf-8")})
    except OSError as e:
        raise RenderError("index", f"cannot write {index}: {e.strerror or e}") from None
    n = sum(len(o.rendered) for o in outcomes)
    failed = [(code, line) for o in outcomes for code, line in o.failed.values()]
    _log(f"done: {n} page(s), index {index}, {time.perf_counter() - t0:.1f} s")
    if input_errors or failed:
        lines = input_errors + [line for _, line in failed]
        print(f"benchbook render: {len(lines)} failure(s); first: {lines[0]}", file=sys.stderr)
        if input_errors or any(c == EXIT_BAD_INPUT for c, _ in failed):
            return EXIT_BAD_INPUT
        return EXIT_SOURCE if any(c == EXIT_SOURCE for c, _ in failed) else EXIT_RENDER
    return 0
