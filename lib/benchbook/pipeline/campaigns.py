"""Render one campaign's pages, one after another, and say what happened (:class:`CampaignOutcome`).

``benchbook render CAMPAIGN`` runs :func:`render_campaign`; ``render --all`` plans and runs many
campaigns on workers (:mod:`benchbook.pipeline.schedule`) and reports them with the same outcome type,
which the index (:mod:`benchbook.pipeline.index`) reads.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchbook.errors import (
    EXIT_BAD_INPUT,
    EXIT_RENDER,
    EXIT_SOURCE,
    BenchbookError,
    InputError,
    RenderError,
    first_line,
)
from benchbook.pipeline import writes
from benchbook.pipeline.params import campaign_params, check_overrides, merge_params, page_parameters, params_file
from benchbook.pipeline.plan import notebook_for, page_title, pages_for, read_manifest

if TYPE_CHECKING:  # pragma: no cover - execute (papermill, nbconvert) is imported when a page renders
    from benchbook.pipeline.execute import RenderResult


def stderr_log(msg: str) -> None:
    """The default progress and error line of a render: ``benchbook render: ...`` on stderr."""
    print(f"benchbook render: {msg}", file=sys.stderr, flush=True)


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
    if isinstance(exc, BenchbookError):
        code, line = exc.exit_code, exc.one_line()
    else:
        code, line = EXIT_RENDER, f"{campaign.name}: render failed: {type(exc).__name__}: {first_line(str(exc))}"
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
    log: Callable[[str], None] = stderr_log,
    error: Callable[[str], None] = stderr_log,
) -> CampaignOutcome:
    """Render a campaign's pages into ``out_dir/<page>.html``.

    ``pages`` forces those page kinds; otherwise the pages the manifest calls for (``pages_for``),
    restricted to ``only`` when given. A page chosen from the manifest whose notebook does not exist
    yet is skipped with a message. Without ``keep_going`` the first failure is raised. Progress goes
    to ``log``, failures kept with ``keep_going`` to ``error``."""
    from benchbook.pipeline.execute import render_page

    campaign = Path(campaign)
    if not campaign.is_dir():
        raise InputError(campaign, None, "campaign folder does not exist")
    manifest = read_manifest(campaign)
    own = campaign_params(campaign)
    check_overrides(own, str(params_file(campaign)))
    overrides = merge_params(own, overrides or {})
    outcome = CampaignOutcome(campaign.name, manifest)
    writes.clean_folder(out_dir)  # what a killed render of this campaign left behind
    wanted = (
        list(pages) if pages is not None else [p for p in pages_for(manifest, campaign) if only is None or p in only]
    )
    if not wanted:
        log(f"{campaign.name}: no page applies (no requests/phases/results runs, no ablation or pd arms)")
    for page in wanted:
        nb = notebook_for(page, notebooks)
        if not nb.is_file():
            if pages is None:  # chosen from the manifest: the page notebook is not written yet
                log(f"{campaign.name}/{page}: skipped, {nb} does not exist yet")
                outcome.skipped.append(page)
                continue
            err = RenderError(f"{campaign.name}/{page}", f"asked for with --page but {nb} does not exist")
            if not keep_going:
                raise err
            outcome.failed[page] = (err.exit_code, err.one_line())
            continue
        log(f"{campaign.name}/{page}: rendering {nb.name} ...")
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
            error(f"{campaign.name}/{page}: FAILED: {e.one_line()}")
            continue
        outcome.rendered.append(res)
        log(f"{campaign.name}/{page}: wrote {res.html} ({res.bytes / 1024:.0f} KiB, {res.seconds:.1f} s)")
    return outcome
