"""Page sections every page kind shares: the exclusions list and the provenance block.

A page module passes its campaign root and what it excluded; the section records what it shows
(``exclusions``) so tests read the same rows a reader sees.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from benchbook import findings as _findings
from benchbook.pages import display as bd


def slug(s: str | None) -> str:
    """An id fragment from a name: ASCII letters and digits, dashes elsewhere, starting with a letter
    (table and chart ids must match [a-z][a-z0-9-]*; "é".isalnum() is true, hence ASCII only)."""
    out = "".join(ch if ch.isascii() and ch.isalnum() else "-" for ch in (s or "all").lower()).strip("-")
    return out if out and out[0].isalpha() else f"s-{out or 'all'}"


def rel_path(root: Path, f: str | Path) -> str:
    """``f`` relative to the campaign root when it lies inside it, else its name (a page never shows
    an absolute path of the machine that rendered it)."""
    try:
        return str(Path(f).resolve().relative_to(Path(root).resolve()))
    except ValueError:
        return Path(f).name


def exclusions(
    root: Path,
    excluded: Iterable[tuple[str, str, str]],
    *,
    id: str = "exclusions",
    caption: str = "Every sample left out of the statistics, with the reason. Nothing is dropped silently.",
    none: str = "No sample was excluded.",
    where: str = "Sample",
) -> bd.Block:
    """The exclusions table: one row per distinct (file, sample, reason), in the order found."""
    seen, rows = set(), []
    for file, sample, reason in excluded:
        if (file, sample, reason) in seen:
            continue
        seen.add((file, sample, reason))
        rows.append({"File": rel_path(root, file), where: sample, "Reason": reason})
    bd.record("exclusions", rows)
    head = str(bd.heading("Exclusions", id="exclusions"))
    if not rows:
        return bd.Block(f"{head}<p>{bd.esc(none)}</p>")
    reasons = len({r["Reason"] for r in rows})
    summary = f"{len(rows)} excluded, {reasons} distinct reason{'s' * (reasons != 1)}: show the list"
    return bd.Block(head + str(bd.collapsed(summary, bd.table(rows, id=id, caption=caption))))


def scope(sc: Mapping[str, Any]) -> bd.Block:
    """The manifest's scope: what the result covers and what it does not, side by side."""
    if not sc:
        return bd.Block("")

    def li(xs: Iterable[str]) -> str:
        return "".join(f"<li>{bd.esc(x)}</li>" for x in xs)

    return bd.Block(
        str(bd.heading("Scope", id="scope"))
        + '<div class="bb-cols bb-scope"><div><p><strong>The measured path</strong></p><ul>'
        + li(sc.get("measured", []))
        + "</ul></div><div><p><strong>Outside this result</strong></p><ul>"
        + li(sc.get("outside", []))
        + "</ul></div></div>"
    )


def provenance(
    inputs: Iterable[Path], parameters: Mapping[str, Any], readme: Path | None = None, root: Path | None = None
) -> bd.Block:
    """The provenance block over the campaign's input files (and its README, which says where they
    came from), named relative to the campaign folder ``root``."""
    files = set(inputs)
    if readme is not None and readme.is_file():
        files.add(readme)
    return bd.provenance(inputs=sorted(files), parameters=dict(parameters), root=root)


# --------------------------------------------------------------------------- findings box

MAX_RESULT_LINES = _findings.MAX_RESULT_LINES
headline = _findings.headline  # the index and older callers use it from here


def findings(
    *,
    results: Iterable[tuple[str, float, str, str]] = (),
    failed: Iterable[tuple[str, str]] = (),
    unjudged: Iterable[tuple[str, str]] = (),
    results_section: str | None = None,
) -> bd.Block:
    """The findings box from lines a caller selected (kept for callers; the campaign pages format the
    analysis' own box with :func:`findings_box`)."""
    box = _findings.Findings.build(results=results, failed=failed, unjudged=unjudged, results_section=results_section)
    return findings_box(box)


def findings_box(box: _findings.Findings, page: str = "") -> bd.Block:
    """Format a findings box the analysis decided (:class:`benchbook.findings.Findings`) on page kind
    ``page``: its rules, then its lines; records ``findings_box`` (its counts and lines, the summary's
    ``findings`` entry) and ``headline``."""
    bd.record("headline", box.headline)
    bd.record("findings_box", {k: v for k, v in box.as_dict().items() if k != "headline"})
    return bd.findings_box(box.lines, headline=box.headline, page=page, rules=box.rules)


def comparison_findings(
    comparisons: Iterable[Mapping[str, Any]], name: Callable[[Mapping[str, Any]], str], section: str
) -> tuple[list[tuple[str, float, str, str]], list[tuple[str, str]]]:
    """Results and unjudged lines from comparison rows (``is_result``, ``verdict``, ``speedup``,
    ``change_pct``, ``reason``, as :func:`benchbook.analysis.baseline.comparisons` returns them)."""
    results, why_not = [], {}
    for c in comparisons:
        if c["is_result"]:
            direction = c["direction"]  # typed by the analysis; never read back out of the verdict's words
            results.append(
                (direction, c["speedup"], f"{name(c)}: {c['ratio']:.2f}x ({c['change_pct']:+.1f}%)", section)
            )
        elif c.get("speedup") is None:  # no verdict possible (e.g. no measured spread): one line per reason
            why_not.setdefault(c["reason"], []).append(c)
    unjudged = [
        (f"{len(cs)} comparison{'s' * (len(cs) != 1)} without a verdict: {reason}", section)
        for reason, cs in why_not.items()
    ]
    return results, unjudged


def checks_table(
    rows: list[dict[str, Any]], passed: Iterable[bool], *, id: str, passed_label: str = "{n} check(s) passed"
) -> bd.Block:
    """A checks table whose failing and warning rows stay in view while the passing rows fold into a
    ``<details>`` (still in the HTML, summary ``passed_label`` with ``{n}``); when every row passed,
    the whole table folds."""
    flags = list(passed)
    bad = [r for r, ok in zip(rows, flags) if not ok]
    good = [r for r, ok in zip(rows, flags) if ok]
    out = [str(bd.table(bad, id=id))] if bad else []
    if good:
        folded = bd.table(good, id=f"{id}-passed" if bad else id)
        label = passed_label.format(n=len(good)) + (": show them" if bad else " (all of them): show them")
        out.append(str(bd.collapsed(label, folded)))
    return bd.Block("".join(out))
