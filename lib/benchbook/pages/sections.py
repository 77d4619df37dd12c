"""Page sections every page kind shares: the exclusions list and the provenance block.

A page module passes its campaign root and what it excluded; the section records what it shows
(``exclusions``) so tests read the same rows a reader sees.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

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
    if not rows:
        return bd.Block(f"<h2>Exclusions</h2><p>{bd.esc(none)}</p>")
    return bd.Block("<h2>Exclusions</h2>" + str(bd.table(rows, id=id, caption=caption)))


def provenance(
    inputs: Iterable[Path], parameters: Mapping[str, Any], readme: Path | None = None, root: Path | None = None
) -> bd.Block:
    """The provenance block over the campaign's input files (and its README, which says where they
    came from), named relative to the campaign folder ``root``."""
    files = set(inputs)
    if readme is not None and readme.is_file():
        files.add(readme)
    return bd.provenance(inputs=sorted(files), parameters=dict(parameters), root=root)
