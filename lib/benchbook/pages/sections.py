"""Page sections every page kind shares: the exclusions list and the provenance block; an arm's mode
and requested switches in words.

A page module passes its campaign root and what it excluded; the section records what it shows
(``exclusions``) so tests read the same rows a reader sees.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
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
    # said once: one row per reason, naming every sample it left out
    shown = fold_rows([{where: f"{r['File']}: {r[where]}", "Reason": r["Reason"]} for r in rows], where)
    return bd.Block(head + str(bd.collapsed(summary, bd.table(shown, id=id, caption=caption))))


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


def _plain(v: Any) -> str:
    return v.__html__() if hasattr(v, "__html__") else str(v)


def _html(v: Any) -> str:
    return v.__html__() if hasattr(v, "__html__") else bd.esc(str(v))


TAIL = " — "  # an explanation after the figures: "… (76.1 %) were not computed — <why>"


class Below:
    """The long lists a folded row stands for (each run it names, each run's own figures), kept out of
    the table: the row links to its list, and the lists follow the table as ``<details>``, so a row
    stays a few lines tall even with every fold opened (:func:`fold_rows` with ``below``)."""

    def __init__(self, anchor: str) -> None:
        self.anchor = anchor
        self.lists: list[tuple[str, str, str]] = []  # (id, summary, html)

    def link(self, label: str, summary: str, body: str) -> str:
        """A list under ``summary`` after the table; returns the row's link to it (``label``)."""
        ident = f"{self.anchor}-list-{len(self.lists) + 1}"
        self.lists.append((ident, summary, body))
        return f'<a class="bb-below-link" href="#{ident}">{bd.esc(label)}</a>'

    def __html__(self) -> str:
        return "".join(
            f'<details class="bb-below" id="{i}"><summary>{bd.esc(s)}</summary>{b}</details>' for i, s, b in self.lists
        )

    def __str__(self) -> str:
        return self.__html__()


def _row_title(r: dict[str, Any], *drop: str) -> str:
    """The words a row is known by (its columns but the folded ones): ``prefix cache · warn``."""
    words = [re.sub(r"<[^>]+>", "", _plain(v)).strip() for k, v in r.items() if k not in drop]
    return " · ".join(w for w in words if w)[:120]


def fold_rows(
    rows: list[dict[str, Any]],
    who: str,
    what: str | None = None,
    *,
    merge: bool = False,
    below: Below | None = None,
) -> list[dict[str, Any]]:
    """Said once: rows that differ only in ``who`` (the run or window) become one row naming each of
    them (``3: a, b, c``); then, with ``what``, rows whose ``what`` ends in the same explanation (after
    " — ") become one row stating it once, each row's own figures folded below it; with ``merge``, the
    rows left that agree in every other column (one check, one status) become one row, what several of
    them say stated once and each row's ``what`` folded below it. With ``below`` the folded lists
    leave the row for :class:`Below` (after the table) and the row links to them."""

    def key(r: dict[str, Any], *drop: str) -> tuple:
        return tuple((k, _plain(v)) for k, v in r.items() if k not in drop)

    def named_text(names: list[str]) -> str:
        return names[0] if len(names) == 1 else f"{len(names)}: " + ", ".join(names)

    def fold(r: dict[str, Any], label: str, body: str) -> str:
        """``label`` opening ``body``: in the cell, or (with ``below``) a link to it after the table."""
        if below is None:
            return f"<details><summary>{bd.esc(label)}</summary>{body}</details>"
        return below.link(label + " (below)", f"{_row_title(r, who, what or '')}: {label}", body)

    def named(r: dict[str, Any], names: list[str]) -> str | bd.Block:
        if len(names) == 1:
            return names[0]
        if len(names) <= 4:
            return f"{len(names)}: " + ", ".join(names)
        # many runs: the first three in view, every one of them folded (a row stays one line tall)
        return bd.Block(
            f"{len(names)}: {bd.esc(', '.join(names[:3]))} …"
            + fold(r, f"all {len(names)}", f"<p>{bd.esc(', '.join(names))}</p>")
        )

    # 1. the same row for several runs: one row, each run named
    groups: dict[tuple, tuple[dict[str, Any], list[str]]] = {}
    for r in rows:
        groups.setdefault(key(r, who), (r, []))[1].append(str(r[who]))
    items = list(groups.values())
    if what is not None:  # 2. one explanation after the figures: said once, each row's figures folded
        tails: dict[tuple, list[tuple[dict[str, Any], list[str]]]] = {}
        for r, names in items:
            _head, sep, tail = _plain(r.get(what, "")).rpartition(TAIL)
            tails.setdefault((key(r, who, what), tail if sep and len(tail) >= 40 else id(r)), []).append((r, names))
        items = []
        for (_, tail), grp in tails.items():
            if len(grp) == 1:
                items.append(grp[0])
                continue
            each = "".join(
                f"<li>{bd.esc(named_text(n))}: {bd.esc(_plain(r[what]).rpartition(TAIL)[0])}</li>" for r, n in grp
            )
            body = bd.Block(bd.esc(str(tail)) + fold(grp[0][0], f"each ({len(grp)})", f"<ul>{each}</ul>"))
            items.append(({**grp[0][0], what: body}, [x for _, n in grp for x in n]))
    if merge and what is not None:  # 3. one check, one status: one row, what several say said once
        same: dict[tuple, list[tuple[dict[str, Any], list[str]]]] = {}
        for r, names in items:
            same.setdefault(key(r, who, what), []).append((r, names))
        items = []
        for grp in same.values():
            if len(grp) == 1:
                items.append(grp[0])
                continue
            own, note = said_once([r for r, _ in grp], what, least=2)
            each = "".join(f"<li>{bd.esc(named_text(n))}: {_html(o[what])}</li>" for (_, n), o in zip(grp, own))
            body = bd.Block(
                (bd.esc(note) + " " if note else "")
                + fold(grp[0][0], f"{len(grp)} different results: show each", f"<ul>{each}</ul>")
            )
            names = [x for _, n in grp for x in n]
            items.append(({**grp[0][0], what: body}, [f"{len(names)} (each below)"]))
    return [_short({**r, who: named(r, names)}, what) for r, names in items]


LONG = 280  # characters of a table cell's text past which its rest folds (a row stays a few lines tall)


def _short(row: dict[str, Any], what: str | None) -> dict[str, Any]:
    """A row whose ``what`` cell runs long: its first clause in view, the whole text folded below it."""
    if what is None or what not in row:
        return row
    v = row[what]
    if hasattr(v, "__html__"):
        shown = re.sub(r"<details>.*?</details>", "", v.__html__(), flags=re.S)  # what is in view, unfolded
        text = re.sub(r"<[^>]+>", "", shown)
        if len(text) <= LONG:
            return row
    else:
        text = str(v)
        if len(text) <= LONG:
            return row
    head = text[:LONG].rsplit(" ", 1)[0]
    return {**row, what: bd.Block(f"{bd.esc(head)} …<details><summary>all of it</summary>{_html(v)}</details>")}


def clauses(text: str) -> list[str]:
    """``text`` split at "; " and " — " outside parentheses: the clauses a reason is made of."""
    out, depth, start, i = [], 0, 0, 0
    while i < len(text):
        ch = text[i]
        depth += (ch == "(") - (ch == ")")
        for sep in ("; ", " — "):
            if depth == 0 and text.startswith(sep, i):
                out.append(text[start:i])
                start = i + len(sep)
                i = start - 1
                break
        i += 1
    out.append(text[start:])
    return [c for c in (x.strip() for x in out) if c]


def said_once(rows: list[dict[str, Any]], col: str, *, least: int = 3) -> tuple[list[dict[str, Any]], str]:
    """Said once: a clause of column ``col`` (:func:`clauses`) found in ``least`` or more rows leaves
    those rows and is stated once in the note returned (``In 12 rows: …``); the rows keep the rest."""
    from collections import Counter

    split = [clauses(str(r.get(col, ""))) if not hasattr(r.get(col), "__html__") else None for r in rows]
    count = Counter(c for cs in split if cs for c in dict.fromkeys(cs))
    common = {c for c, n in count.items() if n >= least}
    if not common:
        return rows, ""
    out = []
    for r, cs in zip(rows, split):
        if cs is None:
            out.append(r)
            continue
        keep = [c for c in cs if c not in common]
        out.append({**r, col: "; ".join(keep) if keep else "(the common reason below)"})
    note = " ".join(f"In {count[c]} rows: {c}." for c in sorted(common, key=lambda c: (-count[c], c)))
    return out, note


def _split_check(row: dict[str, Any]) -> dict[str, Any]:
    """``prefix cache: batch-p1-conc8 (1 results run)`` -> Check ``prefix cache``, For ``batch-p1-conc8 …``."""
    name = str(row.get("Check", ""))
    cause, sep, subject = name.partition(": ")
    if not sep:
        return row
    out = {"Check": cause, "For": subject}
    out.update({k: v for k, v in row.items() if k != "Check"})
    return out


def checks_table(
    rows: list[dict[str, Any]], passed: Iterable[bool], *, id: str, passed_label: str = "{n} check(s) passed"
) -> bd.Block:
    """A checks table whose failing and warning rows stay in view while the passing rows fold into a
    ``<details>`` (still in the HTML, summary ``passed_label`` with ``{n}``); when every row passed,
    the whole table folds. Rows of one cause, status and words become one row naming each run
    (:func:`fold_rows`); ``{n}`` counts the checks."""
    flags = list(passed)
    # said once: the checks of one cause and status with the same words are one row naming each run
    split = [_split_check(r) for r in rows]
    good_id = f"{id}-passed" if any(not ok for ok in flags) else id
    bad_below, good_below = Below(id), Below(good_id)
    if all("For" in r and "Detail" in r for r in split):
        bad = fold_rows([r for r, ok in zip(split, flags) if not ok], "For", "Detail", merge=True, below=bad_below)
        good = fold_rows([r for r, ok in zip(split, flags) if ok], "For", "Detail", merge=True, below=good_below)
    else:  # not a table of named checks (e.g. the clamps): one row each
        bad = [r for r, ok in zip(rows, flags) if not ok]
        good = [r for r, ok in zip(rows, flags) if ok]
    out = [str(bd.table(bad, id=id)) + str(bad_below)] if bad else []
    if good:
        folded = bd.Block(str(bd.table(good, id=good_id)) + str(good_below))
        label = passed_label.format(n=len(good)) + (": show them" if bad else " (all of them): show them")
        out.append(str(bd.collapsed(label, folded)))
    return bd.Block("".join(out))


# ---- an arm in words (the baseline page's tables, its memory section) ------------------------------
def arm_mode(a: Mapping[str, Any]) -> str:
    """The arm's mode and how many requests it may run at once, in the engine's own words: ``width 8,
    budget 4096`` (the pocket engine's startup line: "batch width 8 …, prefill budget 4096"),
    ``max_num_seqs 16`` (vLLM's switch), nothing where neither is known."""
    sa = a.get("server_args", {})
    parts = [a["mode"]]
    if sa.get("max_batch_size") is not None:
        parts.append(f"width {sa['max_batch_size']}")
    elif sa.get("max_num_seqs") is not None:
        parts.append(f"max_num_seqs {sa['max_num_seqs']}")
    if sa.get("prefill_token_budget"):
        parts.append(f"budget {sa['prefill_token_budget']}")
    return ", ".join(parts)


def cli_flags(args: Mapping[str, Any]) -> str:
    """Switches as a server's command line takes them: ``--max-num-seqs 1``, a true switch bare
    (``--enforce-eager``), a false one negated (``--no-enable-prefix-caching``); "default" (the engine
    chose) is no switch at all."""
    import json

    out = []
    for k, v in args.items():
        flag = k.replace("_", "-")
        if v is True:
            out.append(f"--{flag}")
        elif v is False:
            out.append(f"--no-{flag}")
        elif v is None or v == "default":
            continue
        elif isinstance(v, (dict, list)):
            out.append(f"--{flag} '{json.dumps(v, sort_keys=True)}'")
        else:
            out.append(f"--{flag} {v}")
    return " ".join(out) or "none (the engine's defaults)"
