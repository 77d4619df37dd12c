"""What a page notebook shows, as deterministic, escaped HTML — and the values it records.

Every helper returns a :class:`Block` (anything with ``_repr_html_``): leave it as a cell's last
expression, or pass it to ``IPython.display.display``. Every string that came from input is escaped
here, so a campaign title such as ``"><img src=x onerror=alert(1)>`` is shown as text, never run.
Pre-built HTML is accepted only when wrapped in :class:`markupsafe.Markup` (or a :class:`Block`).

Tables have a fixed ``id`` chosen by the notebook author, rows in the frame's order (sort in
``lib``), and fixed number formats, so the same inputs give the same bytes.

:func:`record` stores a named value in the executed notebook as a hidden output; the renderer
collects them into ``<page>.values.json`` beside the HTML. Tests assert on those values, not on
the HTML text.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import html
import math
import os
import re
import subprocess
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from markupsafe import Markup

from benchbook import findings as _findings
from benchbook.jsonfile import sha256_file, walk_files
from benchbook.numfmt import fmt_num

VALUES_MIME = "application/vnd.benchbook.values+json"

__all__ = [
    "Block",
    "Markup",
    "VALUES_MIME",
    "record",
    "table",
    "mark",
    "how_to_read",
    "provenance",
    "heading",
    "text",
    "chart",
    "collapsed",
    "BoxLine",
    "findings_box",
    "render_timestamp",
]


class Block:
    """A piece of trusted HTML built by this module; displays as HTML in Jupyter and in pages."""

    def __init__(self, html_: str):
        self.html = str(html_)

    def _repr_html_(self) -> str:
        return self.html

    def __html__(self) -> str:  # markupsafe protocol: nests inside other blocks unescaped
        return self.html

    def __str__(self) -> str:
        return self.html

    def __repr__(self) -> str:
        return f"<benchbook block, {len(self.html)} chars of HTML>"


def esc(value: Any) -> str:
    """Escape ``value`` for HTML text or a quoted attribute, unless it is Markup / a Block."""
    if hasattr(value, "__html__"):
        return value.__html__()
    return html.escape(str(value), quote=True)


# --------------------------------------------------------------------------- recorded values


def _jsonable(value: Any) -> Any:
    """Recorded values go through the one serializer the summary uses (:func:`benchbook.jsonfile.plain`)."""
    from benchbook.jsonfile import plain

    try:
        return plain(value)
    except TypeError as e:
        raise TypeError(f"record(): {e}") from None


_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")


def record(name: str, value: Any) -> None:
    """Record ``value`` under ``name`` for tests and the summary (written to ``<page>.values.json``).

    The value must be JSON-able (numbers, strings, lists, dicts, polars/pandas frames, dataclasses).
    A name may be recorded once per page; the renderer rejects duplicates.
    """
    if not _NAME_RE.match(name):
        raise ValueError(f"record(): bad name {name!r} (letters, digits, _ . -)")
    payload = {"name": name, "value": _jsonable(value)}
    short = repr(payload["value"])
    if len(short) > 80:
        short = short[:77] + "..."
    from IPython.display import display

    display({VALUES_MIME: payload, "text/plain": f"recorded {name} = {short}"}, raw=True)


# --------------------------------------------------------------------------- verdict marks

# kind -> (symbol, short label, meaning shown in "How to read this page")
MARKS: dict[str, tuple[str, str, str]] = {
    "result": (
        "▲",
        "a result",
        "the difference is larger than the measured run-to-run spread and the ranges do not overlap",
    ),
    "regression": (
        "▼",
        "regression",
        "a result in the worse direction: larger than the spread, ranges apart, and the candidate is worse",
    ),
    "noise": (
        "≈",
        "within noise — not a result",
        "the difference is smaller than the spread, or the [min–max] ranges overlap",
    ),
    "cannot": (
        "?",
        "cannot tell",
        "no verdict: the run-to-run noise could not be measured (nothing was run twice), or the runs failed "
        "a validity gate (the reason is given beside it)",
    ),
    "pass": ("✓", "check passed", "a consistency check held (e.g. engine total ≤ client total)"),
    "fail": ("✗", "check failed", "a consistency check did not hold; the figure is not trusted"),
    "excluded": ("⊘", "excluded", "a sample was left out of the statistics; the reason is listed on the page"),
    "note": ("†", "see note", "the figure carries a caveat stated beside it"),
}


#: a check's status -> its mark: one spelling everywhere a check appears (section, table, findings)
STATUS_MARK = {"pass": "pass", "warn": "note", "fail": "fail"}


def status_mark(status: str, label: str | None = None) -> Block:
    """A check's mark from its status (``✓ pass``, ``† warn``, ``✗ fail``), the same on every page."""
    return mark(STATUS_MARK[status], label or status)


def mark(kind: str, label: str | None = None) -> Block:
    """A verdict mark: symbol plus words (the symbol alone is never the only signal)."""
    if kind not in MARKS:
        raise ValueError(f"mark(): unknown kind {kind!r}; choose from {', '.join(MARKS)}")
    symbol, default_label, meaning = MARKS[kind]
    return Block(
        f'<span class="bb-mark bb-mark-{kind}" title="{esc(meaning)}">'
        f'<span aria-hidden="true">{symbol}</span> {esc(label or default_label)}</span>'
    )


# --------------------------------------------------------------------------- tables

_ID_OK = re.compile(r"^[a-z][a-z0-9\-]*$")
Format = str | Callable[[Any], Any]


_ZERO = re.compile(r"[-+−]?0(?:[.,]0*)?(?=$|[^0-9.,])")


def not_zero(value: Any, shown: str) -> str:
    """``shown`` — unless a non-zero number was rounded to a zero (a denormal latency as "0.00"):
    then the value with two significant digits ("4.9e-324"), what follows the number kept."""
    if isinstance(value, float) and value != 0 and math.isfinite(value):
        m = _ZERO.match(shown.strip())
        if m:
            return f"{value:.2g}" + shown.strip()[m.end() :]
    return shown


def _fmt_cell(value: Any, fmt: Format | None, float_format: str | None) -> tuple[str, bool]:
    """Return (html, is_numeric) for one cell."""
    if hasattr(value, "__html__"):
        return value.__html__(), False
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return '<span class="bb-missing">—</span>', False
    if fmt is not None:
        out = fmt(value) if callable(fmt) else fmt.format(value)
        return esc(not_zero(value, out)), isinstance(value, (int, float)) and not isinstance(value, bool)
    if isinstance(value, bool):
        return ("yes" if value else "no"), False
    if isinstance(value, int):
        return str(value), True
    if isinstance(value, float):
        shown = fmt_num(value) if float_format is None else float_format.format(value)
        return esc(not_zero(value, shown)), True
    if isinstance(value, (list, tuple)):
        return _wrap_long(", ".join(str(v) for v in value)), False
    return _wrap_long(str(value)), False


_LONG_TOKEN = re.compile(r"\S{20,}")
# where a long token may break: after the separators of names, paths and settings
# (POCKETLLM_CPP_DECODE_SPARSE_ARENA=12 -> POCKETLLM_ CPP_ ... ARENA=12; nv-action_serving_llama8B_tp1_1)
_BREAK_AFTER = re.compile(r"(?<=[_/=,:.\-+@])(?=\S)")


def _wrap_long(s: str) -> str:
    """Escaped text; a cell holding a long unbreakable run (a variable name, a file stem, a path, a
    hash) may break after its separators (``_ / = , : . - + @``), never mid-word, so one long token
    neither pushes its table past the page nor gets squeezed into a column one letter wide. A token
    without separators (a hash) breaks anywhere only when nothing else fits (``.bb-long``)."""
    if not _LONG_TOKEN.search(s):
        return esc(s)
    out = []
    for tok in re.split(r"(\s+)", s):
        pieces = _BREAK_AFTER.split(tok) if len(tok) >= 20 else [tok]
        out.append("<wbr>".join(esc(p) for p in pieces))
    return '<span class="bb-long">' + "".join(out) + "</span>"


# a figure with its range and ratio, "146.56 (93.75–199.37) (1.768x)": it may wrap between its parts
_FIGURE_PARTS = re.compile(r" (?=[(\[/±])")


def _figure_parts(h: str) -> str:
    """Escaped figure text split into parts that stay whole (``bb-nw``) and wrap between each other,
    so a table of many such columns fits its page instead of running off it."""
    parts = _FIGURE_PARTS.split(h)
    if len(parts) == 1 or "<" in h:
        return h
    # a range "(93.75–199.37)" may also break after its dash: the widest part sets the column's width
    dash = '–</span><wbr><span class="bb-nw">'
    return " ".join('<span class="bb-nw">' + p.replace("–", dash) + "</span>" for p in parts)


MANY_COLUMNS = 10  # a table this wide sets smaller (.bb-many) to fit the page
_PROSE_CHARS = 80  # a column whose cells run this long on average is prose: it keeps a readable width


def _prose_column(cells: list[tuple[str, bool]]) -> bool:
    """A column of plain sentences (markup such as a folded reason is laid out by its own rules)."""
    if not cells or any("<" in h and "bb-long" not in h for h, _ in cells):
        return False
    texts = [re.sub(r"<[^>]+>", "", h) for h, _ in cells]
    return sum(len(t) for t in texts) / len(texts) >= _PROSE_CHARS


def table(
    frame: Any,
    *,
    id: str,
    caption: str | None = None,
    formats: Mapping[str, Format] | None = None,
    float_format: str | None = None,
    headers: Mapping[str, str] | None = None,
    note: str | None = None,
    compact: bool = False,
) -> Block:
    """An HTML table from a polars (or pandas) frame, or a list of row dicts.

    ``id`` is fixed by the caller (lowercase, digits, dashes) and becomes ``id="bb-<id>"``.
    Cells are escaped unless they are :class:`Markup`/:class:`Block` (e.g. :func:`mark`).
    ``formats`` maps a column to a format string (``"{:.2f}"``) or a callable; other floats use
    ``float_format``, by default :func:`benchbook.numfmt.fmt_num` (at most 3 decimals and about 5
    significant digits: ``1091.4``, ``4.868``, ``0.0027`` — never ``1091.400`` or ``0.000``). Rows keep the frame's order: sort before displaying.
    ``caption`` should state prompt length, generation length and environment of the figures.
    A column whose every cell is a number, or text starting with one ("3.430 s / 12.0 tok/s"), is
    right-aligned, header included. ``compact`` marks a one-row-per-item table (folded details per row).
    """
    if not _ID_OK.match(id):
        raise ValueError(f"table(): id {id!r} must match [a-z][a-z0-9-]*")
    columns, rows = _rows(frame)
    formats = dict(formats or {})
    headers = dict(headers or {})
    unknown = set(formats) - set(columns)
    if unknown:
        raise ValueError(f"table(): formats for unknown columns {sorted(unknown)}")
    cls = "bb-table bb-compact" if compact else "bb-table"
    if len(columns) >= MANY_COLUMNS:
        cls += " bb-many"
    out = [f'<table class="{cls}" id="bb-{id}">']
    if caption:
        out.append(f"<caption>{esc(caption)}</caption>")
    body = [[_fmt_cell(v, formats.get(c), float_format) for c, v in zip(columns, row)] for row in rows]
    right = [_numeric_column([r[i] for r in rows], [b[i] for b in body]) for i in range(len(columns))]
    out.append(
        "<thead><tr>"
        + "".join(
            ('<th scope="col" class="num">' if r else '<th scope="col">') + f"{esc(headers.get(c, c))}</th>"
            for c, r in zip(columns, right)
        )
        + "</tr></thead>"
    )
    prose = [not r and not compact and _prose_column([b[i] for b in body]) for i, r in enumerate(right)]
    out.append("<tbody>")
    for cells_ in body:
        cells = []
        for (h, numeric), r, p in zip(cells_, right, prose):
            cells.append(
                f'<td class="num">{h}</td>'
                if numeric
                else (
                    f'<td class="numtext">{_figure_parts(h)}</td>'
                    if r
                    else (f'<td class="bb-prose">{h}</td>' if p else f"<td>{h}</td>")
                )
            )
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    if note:
        out.append(f'<p class="bb-table-note">{esc(note)}</p>')
    return Block(f'<div class="bb-table-wrap">{"".join(out)}</div>')


_LEADING_NUMBER = re.compile(r"^[-+−]?[0-9][0-9,.]*(?:[ x%]|$)")


def _number_like(s: str) -> bool:
    """Text that reads as a figure: it starts with a number and is mostly digits ("11.922 s / 2.684
    tok/s", "46.5 [46.2–46.7]", "8.19 GiB"), not prose that happens to ("640 requests, C128")."""
    chars = [c for c in s if not c.isspace()]
    return bool(_LEADING_NUMBER.match(s)) and sum(c.isdigit() for c in chars) >= 0.4 * len(chars)


def _numeric_column(values: list[Any], cells: list[tuple[str, bool]]) -> bool:
    """True when every present cell of a column is a number or text that starts with a number."""
    seen = False
    for v, (_h, numeric) in zip(values, cells):
        if v is None or v == "" or (isinstance(v, float) and math.isnan(v)):
            continue
        if hasattr(v, "__html__"):
            return False
        if not (numeric or (isinstance(v, str) and _number_like(v))):
            return False
        seen = True
    return seen


def _rows(frame: Any) -> tuple[list[str], list[list[Any]]]:
    mod = type(frame).__module__
    if mod.startswith("polars"):
        return list(frame.columns), [list(r) for r in frame.iter_rows()]
    if mod.startswith("pandas"):
        return [str(c) for c in frame.columns], [list(r) for r in frame.itertuples(index=False, name=None)]
    if isinstance(frame, list):
        columns: list[str] = []
        for r in frame:
            for k in r:
                if k not in columns:
                    columns.append(k)
        return columns, [[r.get(c) for c in columns] for r in frame]
    raise TypeError(f"table(): expected a polars/pandas frame or a list of dicts, got {type(frame).__name__}")


# --------------------------------------------------------------------------- text


def heading(text_: str, level: int = 2, *, id: str | None = None) -> Block:
    """A heading whose text may come from input (escaped). ``id`` (``[a-z][a-z0-9-]*``) becomes
    ``id="sec-<id>"``, the anchor the findings box links to; headings without one get an id from
    their text when the page is exported (:mod:`benchbook.pipeline.outline`)."""
    if level not in range(1, 7):
        raise ValueError("heading(): level must be 1..6")
    if id is not None and not _ID_OK.match(id):
        raise ValueError(f"heading(): id {id!r} must match [a-z][a-z0-9-]*")
    attr = f' id="sec-{id}"' if id else ""
    return Block(f"<h{level}{attr}>{esc(text_)}</h{level}>")


def collapsed(summary: str, body: Any, *, open: bool = False, id: str | None = None) -> Block:
    """Long, low-value detail folded into ``<details>``: still in the HTML (and printed), one click
    away. ``summary`` is escaped; ``body`` must be a Block/Markup. Failures are never folded
    (``open=True`` shows them unfolded)."""
    if id is not None and not _ID_OK.match(id):
        raise ValueError(f"collapsed(): id {id!r} must match [a-z][a-z0-9-]*")
    attr = (f' id="bb-{id}"' if id else "") + (" open" if open else "")
    return Block(f'<details class="bb-collapsed"{attr}><summary>{esc(summary)}</summary>{esc(body)}</details>')


def text(template: str, /, **values: Any) -> Block:
    """A paragraph: ``template`` is trusted, ``values`` (from input) are escaped then substituted.

    ``text("Campaign {title} measured on {date}.", title=c.title, date=c.date)``
    """
    safe = {k: Markup(esc(v)) for k, v in values.items()}
    return Block(f"<p>{esc(template).format(**safe)}</p>")


class InteractiveChart(Block):
    """A chart that JupyterLab draws with Altair's own interactivity (its Vega-Lite renderer: tooltips,
    pan and zoom) while a rendered page shows the same chart as static SVG: the output carries both
    the Vega-Lite spec and the HTML figure, and the page template takes the HTML."""

    def __init__(self, html_: str, spec: dict[str, Any]):
        super().__init__(html_)
        self.spec = spec

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        from benchbook.pages.charts import VEGALITE_MIME

        return {VEGALITE_MIME: self.spec, "text/html": self.html}


def chart(ch: Any, *, caption: str | None = None, id: str | None = None, interactive: bool = False) -> Block:
    """An Altair chart as inline SVG in a ``<figure>`` (see :mod:`benchbook.pages.charts`).

    ``interactive``: in JupyterLab the chart is live (add ``.interactive()`` and tooltips to it);
    the rendered page still shows the static SVG (:class:`InteractiveChart`)."""
    from benchbook.pages.charts import spec, to_svg

    if id is not None and not _ID_OK.match(id):
        raise ValueError(f"chart(): id {id!r} must match [a-z][a-z0-9-]*")
    svg = to_svg(ch, id_prefix=f"bb-{id}" if id else None)
    attr = f' id="bb-{id}"' if id else ""
    cap = f"<figcaption>{esc(caption)}</figcaption>" if caption else ""
    html_ = f'<figure class="bb-chart"{attr}>{svg}{cap}</figure>'
    return InteractiveChart(html_, spec(ch)) if interactive else Block(html_)


# --------------------------------------------------------------------------- how to read


def how_to_read(
    *,
    n_per_cell: str,
    warmup: str,
    noise_rule: str,
    marks: Iterable[str] = ("result", "noise", "excluded"),
    extra: Iterable[str] = (),
) -> Block:
    """The "How to read this page" block every page opens with.

    ``n_per_cell``: e.g. "3 runs per cell (median [min–max], n=3)"; ``warmup``: what was discarded;
    ``noise_rule``: the rule deciding "within noise"; ``marks``: which verdict marks appear.
    """
    items = [
        f"<li><strong>n per cell:</strong> {esc(n_per_cell)}</li>",
        f"<li><strong>Warm-up:</strong> {esc(warmup)}</li>",
        f"<li><strong>Noise rule:</strong> {esc(noise_rule)}</li>",
    ]
    items += [f"<li>{esc(e)}</li>" for e in extra]
    mark_rows = "".join(f"<li>{mark(k)} — {esc(MARKS[k][2])}</li>" for k in marks)
    # folded below the findings box and the contents: results first, the legend one click away
    return Block(
        '<details class="bb-how-to-read" id="bb-how-to-read"><summary>How to read this page '
        '<span class="bb-hint">(n per cell, warm-up, the noise rule, the verdict marks)</span></summary>'
        f'<ul>{"".join(items)}</ul><p>Verdict marks:</p><ul class="bb-marks">{mark_rows}</ul></details>'
    )


# --------------------------------------------------------------------------- findings box

# kind -> (mark kind, label); FINDING_ORDER is the box's order (benchbook.findings.FINDING_KINDS):
# failed checks first, then warnings by cause, then results worst first, then what was not judged
FINDING_KINDS: dict[str, tuple[str, str]] = {
    "fail": ("fail", "check failed"),
    "warn": ("note", "warning"),
    "regression": ("regression", "regression"),
    "improvement": ("result", "improvement"),
    "result": ("result", "a result"),
    "unjudged": ("note", "not judged"),
}
FINDING_ORDER = tuple(FINDING_KINDS)

# the exporter replaces this with the page's table of contents (benchbook.pipeline.outline)
TOC_PLACEHOLDER = '<nav class="bb-toc" id="bb-toc" aria-label="Contents"></nav>'

BoxLine = _findings.Finding  # the one finding type (kind, text, section, links, where); its ids are checked
Finding = BoxLine


def _href(section: str, where: tuple[tuple[str, str], ...], page: str) -> str:
    """``#sec-x`` for the section on this page (``where`` names this page, or names no page), else the
    first page that shows it: ``compare.html#sec-x``. A row anchor (``win-…``) is linked as it is."""

    def target(sec: str) -> str:
        t = sec if sec.startswith("win-") else f"sec-{sec}"
        if not _ID_OK.match(t):
            raise ValueError(f"Finding: section {sec!r} must match [a-z][a-z0-9-]*")
        return t

    if not where or not page:
        return f"#{target(section)}"
    here = [sec for p, sec in where if p == page]
    if here:
        return f"#{target(section if section.startswith('win-') else here[0])}"
    return f"{where[0][0]}.html#{target(section if section.startswith('win-') else where[0][1])}"


def findings_box(
    findings: Iterable[BoxLine],
    *,
    headline: str,
    empty: str = "Nothing to report.",
    page: str = "",
    rules: Iterable[str] = (),
) -> Block:
    """The box every page opens with, right after its title and question: ``headline`` (the counts),
    the campaign's rules (``rules``: how every verdict was made, stated once here), one linked line per
    finding in the given order — a line of one cause links each window it covers —, then the table of
    contents (filled from the page's headings at export, see :mod:`benchbook.pipeline.outline`).
    ``page``: the page kind the box is on (a finding whose section is on another page links there)."""
    items = []
    for f in findings:
        links = ""
        if f.links:
            links = (
                ' <span class="bb-finding-links">('
                + ", ".join(f'<a href="{_href(sec, f.where, page)}">{esc(label)}</a>' for label, sec in f.links)
                + ")</span>"
            )
        items.append(
            f'<li class="bb-finding bb-finding-{f.kind}">{mark(FINDING_KINDS[f.kind][0], FINDING_KINDS[f.kind][1])} '
            f'<a href="{_href(f.section, f.where, page)}">{esc(f.text)}</a>{links}</li>'
        )
    body = f"<ul>{''.join(items)}</ul>" if items else f"<p>{esc(empty)}</p>"
    rule_text = " ".join(esc(r) for r in rules)
    rules_html = f'<p class="bb-rules" id="bb-rules"><strong>Rules:</strong> {rule_text}</p>' if rule_text else ""
    return Block(
        '<section class="bb-findings" id="bb-findings">'
        f'<h2 id="sec-findings">Findings</h2><p class="bb-headline">{esc(headline)}</p>{rules_html}{body}</section>'
        + TOC_PLACEHOLDER
    )


# --------------------------------------------------------------------------- provenance

PACKAGES = (
    "polars",
    "numpy",
    "scipy",
    "altair",
    "vl-convert-python",
    "papermill",
    "nbconvert",
    "nbclient",
    "prometheus_client",
)


def render_timestamp() -> str:
    """UTC render time, or ``SOURCE_DATE_EPOCH`` when set (reproducible builds)."""
    sde = os.environ.get("SOURCE_DATE_EPOCH")
    if sde:
        t = _dt.datetime.fromtimestamp(int(sde), tz=_dt.timezone.utc)
    else:
        t = _dt.datetime.now(tz=_dt.timezone.utc).replace(microsecond=0)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def git_sha() -> str:
    """The git commit of the benchbook checkout (``BENCHBOOK_GIT_SHA`` overrides, e.g. for tarballs)."""
    env = os.environ.get("BENCHBOOK_GIT_SHA")
    if env:
        return env
    root = Path(__file__).resolve().parents[3]
    try:
        sha = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        if sha.returncode != 0:
            return "unknown (not a git checkout)"
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no", "--", "lib", "notebooks"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        return sha.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown (git unavailable)"


def package_versions(names: Iterable[str] = PACKAGES) -> dict[str, str]:
    import platform
    from importlib import metadata

    from benchbook import __version__

    out = {"python": platform.python_version(), "benchbook": __version__}
    for n in sorted(names):
        try:
            out[n] = metadata.version(n)
        except metadata.PackageNotFoundError:
            out[n] = "not installed"
    return out


def _display_path(p: str | Path, root: Path | None) -> str:
    """A path as a page shows it: ``<root name>/<path inside root>``, never the machine's absolute
    path (the same campaign rendered from two folders gives the same page)."""
    if root is None:
        return Path(p).name
    try:
        rel = Path(p).resolve().relative_to(root.resolve())
    except ValueError:
        return Path(p).name
    return str(Path(root.name) / rel) if rel.parts else root.name


def input_root(inputs: Iterable[str | Path]) -> Path | None:
    """The folder the inputs share (their common parent), which the provenance names paths from."""
    dirs = [str(Path(i).resolve() if Path(i).is_dir() else Path(i).resolve().parent) for i in inputs]
    return Path(os.path.commonpath(dirs)) if dirs else None


def _display_value(v: Any, root: Path | None) -> Any:
    """A parameter as the provenance shows it: absolute paths made relative like the input files."""
    if isinstance(v, str) and os.path.isabs(v):
        return _display_path(v, root)
    if isinstance(v, (list, tuple)):
        return [_display_value(x, root) for x in v]
    return v


def file_hashes(inputs: Iterable[str | Path], root: Path | None = None) -> list[tuple[str, str, int]]:
    """(path, sha256, bytes) of every file under ``inputs`` (folders walked), sorted by path; paths
    are shown from ``root`` (default: the inputs' common folder)."""
    inputs = list(inputs)
    root = root if root is not None else input_root(inputs)
    files: set[Path] = set()
    for i in inputs:
        p = Path(i)
        if p.is_dir():
            files.update(
                f
                for f in walk_files(p)
                if f.is_file() and not any(part.startswith(".") for part in f.relative_to(p).parts)
            )
        elif p.is_file():
            files.add(p)
        else:
            raise FileNotFoundError(f"provenance(): input {p} does not exist")
    out = []
    for f in sorted(files, key=lambda f: _display_path(f, root)):
        out.append((_display_path(f, root), sha256_file(f), f.stat().st_size))
    return out


def provenance(
    *, inputs: Iterable[str | Path] = (), parameters: Mapping[str, Any] | None = None, root: str | Path | None = None
) -> Block:
    """The provenance block: benchbook version + git SHA, input file hashes, parameters, packages,
    render timestamp (the only time-dependent text on a page; fixed by ``SOURCE_DATE_EPOCH``).

    Files and path parameters are named from ``root`` (the campaign folder; default: the inputs'
    common folder) as ``<folder name>/<path>``: no absolute path of the rendering machine."""
    versions = package_versions()
    inputs = list(inputs)
    root = Path(root) if root is not None else input_root(inputs)
    hashes = file_hashes(inputs, root)
    combined = hashlib.sha256("".join(f"{p}\0{h}\n" for p, h, _ in hashes).encode()).hexdigest()
    params = {k: _display_value(v, root) for k, v in (parameters or {}).items()}
    param_rows = "".join(
        f'<tr><th scope="row">{esc(k)}</th><td><code>{esc(repr(params[k]))}</code></td></tr>' for k in sorted(params)
    )
    pkg_rows = "".join(f'<tr><th scope="row">{esc(k)}</th><td>{esc(v)}</td></tr>' for k, v in versions.items())
    file_rows = "".join(
        f'<tr><td><code>{esc(p)}</code></td><td class="num">{n}</td><td><code>{h}</code></td></tr>'
        for p, h, n in hashes
    )
    return Block(
        '<section class="bb-provenance" id="bb-provenance"><h2>Provenance</h2>'
        '<table class="bb-table bb-kv" id="bb-provenance-summary"><tbody>'
        f'<tr><th scope="row">benchbook</th><td>{esc(versions["benchbook"])} (git {esc(git_sha())})</td></tr>'
        f'<tr><th scope="row">rendered</th><td><span class="bb-timestamp">{esc(render_timestamp())}</span></td></tr>'
        f'<tr><th scope="row">inputs</th><td>{len(hashes)} files, combined sha256 <code>{combined}</code></td></tr>'
        "</tbody></table>"
        '<details><summary>Parameters</summary><table class="bb-table bb-kv" id="bb-provenance-parameters"><tbody>'
        f"{param_rows}</tbody></table></details>"
        '<details><summary>Input files (sha256)</summary><table class="bb-table" id="bb-provenance-files">'
        '<thead><tr><th scope="col">file</th><th scope="col">bytes</th><th scope="col">sha256</th></tr></thead>'
        f"<tbody>{file_rows}</tbody></table></details>"
        '<details><summary>Package versions</summary><table class="bb-table bb-kv" id="bb-provenance-packages"><tbody>'
        f"{pkg_rows}</tbody></table></details></section>"
    )
