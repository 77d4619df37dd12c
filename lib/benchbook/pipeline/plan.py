"""Page planning: which pages a campaign gets, from which notebook, under which title.

The page registry (:data:`PAGES`), the manifest as the renderer reads it, and the campaign folders
under a data folder. Nothing here executes a notebook (:mod:`benchbook.pipeline.execute`) or decides
a page's parameters (:mod:`benchbook.pipeline.params`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchbook.errors import InputError

ROOT = Path(__file__).resolve().parents[3]
# the checkout's notebooks/; an installed (non-editable) package ships them as benchbook/notebooks/
NOTEBOOKS = ROOT / "notebooks" if (ROOT / "notebooks").is_dir() else Path(__file__).resolve().parents[1] / "notebooks"

# page kind -> (notebook file name, label shown in titles and on the index)
PAGES: dict[str, tuple[str, str]] = {
    "baseline": ("baseline.ipynb", "baseline"),
    "ablation": ("ablation.ipynb", "ablation"),
    "pd": ("pd.ipynb", "prefill/decode disaggregation"),
    "compare": ("compare.ipynb", "comparison"),
}


def read_manifest(campaign: Path) -> dict[str, Any]:
    """``campaign.json`` as a dict, read by the one manifest reader
    (:func:`benchbook.ingest.campaign.open_manifest`; only what the renderer needs is checked here,
    full validation happens when a page loads the campaign)."""
    from benchbook.ingest.campaign import open_manifest

    return open_manifest(campaign, schema=False)[2]


def pages_for(manifest: Mapping[str, Any], campaign: Path | None = None) -> list[str]:
    """Which pages a campaign gets: ``baseline`` when it has requests/phases runs, ``ablation`` when
    any arm has role "ablation", ``pd`` when any arm has mode "pd", ``compare`` when it has results
    runs (benchmark-tool result files; the page reads them from the campaign). Given the campaign
    folder, results runs read from llm-d Benchmark Reports that state prefill and decode roles get
    the PD page too (:func:`states_pd_roles`; the analysis decides the same, ``page_kinds``)."""
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
    if any(isinstance(a, dict) and a.get("mode") == "pd" for a in arms.values()) or (
        campaign is not None and states_pd_roles(campaign, runs)
    ):
        pages.append("pd")
    if any(isinstance(r, dict) and r.get("harness") == "results" for r in runs):
        pages.append("compare")
    return pages


def states_pd_roles(campaign: Path, runs: list[Any]) -> bool:
    """Whether a results run of ``campaign`` was read from a Benchmark Report stating prefill and
    decode GPUs (a PD deployment): only those runs' files are read, and an unreadable one says no
    here (loading the campaign reports it)."""
    from benchbook.ingest import formats
    from benchbook.jsonfile import load_json

    for r in runs:
        if not (isinstance(r, dict) and r.get("harness") == "results" and isinstance(r.get("path"), str)):
            continue
        folder = Path(campaign) / r["path"]
        try:
            doc = load_json(folder / "results.json")
            if not isinstance(doc, dict) or doc.get("tool") != "llmd-benchmark-report":
                continue
            for name in doc.get("files") or []:
                for run in formats.read(folder / name):
                    params = run.config.get("params") or {}
                    if params.get("prefill_gpus") and params.get("decode_gpus"):
                        return True
        except (InputError, OSError, TypeError, AttributeError):
            continue
    return False


def notebook_for(page: str, notebooks: Path | None = None) -> Path:
    if page not in PAGES:
        raise InputError(None, "--page", f"unknown page {page!r}; choose from {', '.join(PAGES)}")
    return (notebooks or NOTEBOOKS) / PAGES[page][0]


def page_title(manifest: Mapping[str, Any], campaign: Path, page: str) -> str:
    return f"{manifest.get('title') or campaign.name} — {PAGES[page][1]}"


def campaign_order(manifest: Mapping[str, Any]) -> tuple[int, int]:
    """A campaign's place in ``render --all`` and on the index: campaigns whose ``campaign.json`` has
    an integer ``order`` come first, lowest first; the rest after them (by name in ``render --all``,
    newest first on the index)."""
    order = manifest.get("order") if isinstance(manifest, Mapping) else None
    if isinstance(order, int) and not isinstance(order, bool):
        return (0, order)
    return (1, 0)


def in_render_order(campaigns: list[Path]) -> list[Path]:
    """``campaigns`` (:func:`find_campaigns`' folders) with those that state an ``order`` first
    (:func:`campaign_order`), the rest by name. Read after the no-op check, so a render that changes
    nothing parses no manifest; a campaign.json that cannot be read sorts with the unordered (its
    failure is that campaign's, reported when it is planned)."""

    def key(folder: Path) -> tuple[int, int, str]:
        try:
            return (*campaign_order(read_manifest(folder)), folder.name)
        except Exception:  # noqa: BLE001 - any failure here is the campaign's, reported by its plan
            return (1, 0, folder.name)

    return sorted(campaigns, key=key)


#: ``benchbook init DIR``'s folder while it builds (``.DIR.init-<pid>@<host>.<random>``, or an older
#: init's ``.DIR.init-<random>``): never a campaign, even once its campaign.json is written
INIT_TEMP = re.compile(r"^\.(?P<dir>.+)\.init-(?:(?P<pid>\d+)@(?P<host>.+)\.)?[A-Za-z0-9_]+$")


def find_campaigns(data_dir: Path) -> list[Path]:
    """Every folder directly under ``data_dir`` holding a ``campaign.json``, sorted by name; a folder
    ``init`` is building (or a killed one left, :data:`INIT_TEMP`) is not one."""
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise InputError(data_dir, None, "data folder does not exist")
    return sorted(
        (p for p in data_dir.iterdir() if (p / "campaign.json").is_file() and not INIT_TEMP.match(p.name)),
        key=lambda p: p.name,
    )
