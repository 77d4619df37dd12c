"""The PD page's view of the campaign's analysis: :class:`Page` (what :func:`load` found), and the
look-ups and small formatters every PD section uses (a cell's median and source, a number with its
source mark, a status mark, runs in display order, a run's load, the figures' context).

The sections are in :mod:`benchbook.pages.pd_page` (opening, checks, marks, caveats, provenance),
:mod:`benchbook.pages.pd_measures` (lifecycle, throughput, comparisons, Little's law, acceptance) and
:mod:`benchbook.pages.pd_seam` (the batch seam and the admission simulator); ``notebooks/pd.ipynb``
calls them through ``pd_page``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from benchbook.analysis.disaggregation import SEAM_BATCHES as _SEAM_BATCHES
from benchbook.analysis.disaggregation import PDAnalysis
from benchbook.analysis.pd_report import PDDeployment
from benchbook.analysis.verdict import State
from benchbook.errors import InputError
from benchbook.ingest.pd_runs import PDCampaign
from benchbook.numfmt import fmt_num
from benchbook.pages import display as bd

SEAM_BATCHES = _SEAM_BATCHES
# a verdict's mark on this page, from its typed state (never from its words)
STATE_MARK = {
    State.IMPROVEMENT: "result",
    State.REGRESSION: "result",
    State.WITHIN_NOISE: "noise",
    State.SAME_WITHIN_MARGIN: "noise",
    State.CANNOT_TELL: "noise",
    State.NOT_COMPARABLE: "fail",
}
SOURCE_MARK = {
    "recorded": ("pass", "recorded"),
    "derived": ("note", "derived"),
    "approximate": ("note", "approximate"),
    "reported": ("note", "reported"),
}


@dataclass
class Page:
    camp: PDCampaign | None  # None: no pd.json runs (a campaign of Benchmark Reports)
    report: PDAnalysis | None
    baseline_arm: str
    min_window_s: float
    min_window_requests: float | None
    title: str
    notes: list[str] = field(default_factory=list)
    # PD deployments stated by Benchmark Reports (CampaignAnalysis.pd_deployment) and the link rate
    deployment: list[PDDeployment] = field(default_factory=list)
    link_gb_s: float | None = None
    analysis: Any = None  # the campaign's CampaignAnalysis
    whole: Any = None  # the loaded Campaign


def empty(page: Page) -> bool:
    """No pd.json runs: the sections built on the benchmark tool's PD summaries are left out."""
    return page.report is None


def load(
    campaign: str,
    *,
    baseline_arm: str = "",
    min_window_s: float = 60.0,
    min_window_requests: float = -1,
    title: str = "",
    link_gb_s: float = 0.0,
) -> Page:
    """Load a PD campaign and compute everything the page shows. ``min_window_requests`` < 0 means
    "more than the run's concurrency"; an empty ``baseline_arm`` uses the manifest's baseline role;
    ``link_gb_s`` is the KV-transfer link rate in GB/s (0: not judged without a link rate)."""
    from benchbook.analysis.campaign_analysis import analyse
    from benchbook.ingest.campaign import load_campaign

    whole = load_campaign(campaign)  # loaded once: its PD part, the analysis and the page share it
    if min_window_s <= 0:
        raise InputError("parameters", "min_window_s", f"must be positive (got {min_window_s})")
    if not whole.is_pd:  # no pd.json runs: the PD deployments its Benchmark Reports state, if any
        an = analyse(whole, link_gb_s=link_gb_s)  # checks the link rate (pd_report.link_rate)
        if not an.pd_deployment:
            raise InputError(
                whole.root / "campaign.json",
                "$.arms",
                "not a PD campaign: no arm with mode 'pd' and no Benchmark Report stating prefill and decode roles",
            )
        return Page(
            None, None, "", float(min_window_s), None, title or whole.title,
            deployment=an.pd_deployment, link_gb_s=an.link_gb_s, analysis=an, whole=whole,
        )  # fmt: skip
    camp = whole.pd
    base = baseline_arm or camp.baseline_arm()
    if base not in camp.arms:
        raise InputError("parameters", "baseline_arm", f"unknown arm {base!r}; choose from {', '.join(camp.arms)}")
    mwr = None if min_window_requests is None or min_window_requests < 0 else float(min_window_requests)
    opts = {"min_window_s": float(min_window_s), "min_window_requests": mwr, "baseline_arm": base}
    an = analyse(whole, pd_options=opts, link_gb_s=link_gb_s)  # the campaign's one analysis
    return Page(
        camp, an.pd, base, float(min_window_s), mwr, title or camp.title,
        deployment=an.pd_deployment, link_gb_s=an.link_gb_s, analysis=an, whole=whole,
    )  # fmt: skip


# ---- helpers -------------------------------------------------------------------------------------
def cell(page: Page, run: str, window: str, key: str) -> dict | None:
    for c in page.report.cells:
        if c["run"] == run and c["window"] == window and c["key"] == key:
            return c
    return None


def val(page: Page, run: str, window: str, key: str) -> float | None:
    c = cell(page, run, window, key)
    return None if c is None else c["median"]


def src(page: Page, run: str, window: str, key: str) -> str | None:
    c = cell(page, run, window, key)
    return None if c is None else c["source"]


def pd_num(v: float) -> str:
    """A PD figure as it was recorded: up to 4 decimals (the seed prints 2.5975 × 42.9285), never more
    digits than the source had (166.24, not 166.2400; an approximate 23, not 23.0000; numfmt.fmt_num)."""
    return fmt_num(v, 4, sig=7, trim=True)


def num(v: float | None, fmt: str, src: str | None = None) -> Any:
    """A number with its source mark when it is not a recorded value (``fmt``: a format string, ``{pd}``
    for :func:`pd_num`)."""
    if v is None:
        return None
    s = fmt.replace("{pd}", pd_num(v)) if "{pd}" in fmt else fmt.format(v)
    if src and src != "recorded":
        kind, label = SOURCE_MARK[src]
        return bd.Block(f"{bd.esc(s)} {bd.mark(kind, label)}")
    return s


def status_mark(status: str) -> bd.Block:
    return bd.mark({"pass": "pass", "warn": "note", "fail": "fail"}[status], status)


def runs_by_purpose(page: Page):
    return sorted(page.camp.runs, key=lambda r: (-(r.load.get("requests") or 0), r.arm))


def load_text(page: Page, r) -> str:
    ld = r.load
    parts = [
        f"{ld['requests']} requests" if ld.get("requests") is not None else None,
        f"C{ld['concurrency']}" if ld.get("concurrency") is not None else None,
        f"{ld['request_rate']:g} req/s" if ld.get("request_rate") is not None else None,
    ]
    return ", ".join(p for p in parts if p) or "load not recorded"


def ctx(page: Page) -> str:
    pcs = sorted({r.load.get("prompt_class") for r in page.camp.runs if r.load.get("prompt_class")})
    toks = ", ".join(f"{page.camp.prompt_tokens(p)}" for p in pcs) or "?"
    cards = sorted({a.cards for a in page.camp.arms.values()})
    return (
        f"prompt {toks} tokens, {page.camp.generation_tokens or '?'} generated tokens, "
        f"{'/'.join(map(str, cards))} cards (P + D), environment "
        f"{', '.join(sorted({a.environment for a in page.camp.arms.values()}))}"
    )
