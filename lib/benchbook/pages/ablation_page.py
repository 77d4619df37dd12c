"""The ablation page (``notebooks/ablation.ipynb``): :func:`load` reads the campaign's analysis and
picks the page kind — the server-switch ablation (:mod:`benchbook.pages.switch_ablation_page`) when
the campaign is in init's arm/run layout with arms that differ by server switches, else the
environment ablation (:mod:`benchbook.pages.environment_ablation_page`). Each section the notebook
calls is formatted by the module of its page's kind; the exclusions and the provenance are the same
for both.
"""

from __future__ import annotations

from typing import Any

from benchbook.analysis.ablation import DEFAULT_METRICS  # noqa: F401  (the notebook's default, documented here)
from benchbook.pages import display as bd
from benchbook.pages import environment_ablation_page, sections, switch_ablation_page
from benchbook.pages.environment_ablation_page import Page
from benchbook.pages.switch_ablation_page import SwitchPage


# ---- loading ------------------------------------------------------------------------------------
def load(
    campaign: str,
    *,
    baseline_arm: str = "",
    arms: list[str] | None = None,
    metrics: list[str] | None = None,
    rule: str = "seed",
    title: str = "",
) -> Page | SwitchPage:
    """Load a campaign and read its ablation (:func:`benchbook.analysis.ablation.campaign_ablation`).
    ``baseline_arm`` "" = the arm with role baseline; ``arms`` empty = the role-baseline arm and every
    ablation arm, in manifest order."""
    from benchbook.analysis.campaign_analysis import analyse

    an = analyse(campaign, rule=rule)  # checks the rule name, then loads the campaign
    camp = an.camp
    sa = an.server_switch_ablation()  # init's arm/run layout: arms that differ by server switches
    if sa is not None:
        return SwitchPage(camp, title or camp.title, sa, an)
    ab = an.ablation_of(baseline_arm=baseline_arm, arms=arms, metrics=metrics)
    return Page(camp, title or camp.title, an.noise, ab, an)


def _kind(page: Page | SwitchPage):
    """The module that formats this page's kind."""
    return switch_ablation_page if isinstance(page, SwitchPage) else environment_ablation_page


def header(page: Page | SwitchPage) -> bd.Block:
    """The title, the question, what the ablation compares and the findings box."""
    return _kind(page).header(page)


def how_to_read(page: Page | SwitchPage) -> bd.Block:
    """How to read this page: n per cell, warm-up, the noise rule, the marks."""
    return _kind(page).how_to_read(page)


def switches(page: Page | SwitchPage) -> bd.Block:
    """What each arm switches against the baseline arm."""
    return _kind(page).switches(page)


def ablation_table(page: Page | SwitchPage) -> bd.Block:
    """Every arm against the baseline, figure by figure, with its verdict."""
    return _kind(page).ablation_table(page)


def range_charts(page: Page | SwitchPage) -> bd.Block:
    """Each cell's median and range per arm (the environment ablation only)."""
    return _kind(page).range_charts(page)


def interactions(page: Page | SwitchPage) -> bd.Block:
    """Which combinations interact, in words the analysis decided."""
    return _kind(page).interactions(page)


def phase_findings(page: Page | SwitchPage) -> bd.Block:
    """Which switches buy which phase (the environment ablation only)."""
    return _kind(page).phase_findings(page)


def spread(page: Page | SwitchPage) -> bd.Block:
    """The spread within each cell (the environment ablation only)."""
    return _kind(page).spread(page)


# ---- closing ------------------------------------------------------------------------------------
def exclusions(page: Page | SwitchPage) -> bd.Block:
    files = {str(r.file) for a in page.all_arms for r in page.camp.runs_of("phases", a)}
    an = page.analysis if isinstance(page, SwitchPage) else page.campaign  # the campaign's analysis
    return sections.exclusions(
        page.camp.root,
        ((e.file, e.sample, e.reason) for e in an.excluded() if e.file in files),
        caption="Every phase sample of these arms left out of the statistics, with the reason.",
    )


def provenance(page: Page | SwitchPage, parameters: dict[str, Any]) -> bd.Block:
    return sections.provenance(page.camp.input_files(), parameters, root=page.camp.root)
