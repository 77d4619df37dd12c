"""One page of a campaign rendered as ``benchbook render`` renders it: the page kind's notebook, the
campaign as its parameter, the kernel in notebooks/ (the tests that read one page's HTML and values)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def render_one(kind: str, campaign: Path, out_dir: Path, title: str) -> Any:
    """``out_dir/<kind>.html`` (and its ``.values.json``) of ``campaign``; returns render_page's result."""
    from benchbook.pipeline import plan as render
    from benchbook.pipeline.execute import render_page

    return render_page(
        render.notebook_for(kind),
        {"campaign": str(campaign)},
        out_dir / f"{kind}.html",
        title=title,
        page=kind,
        cwd=ROOT / "notebooks",
    )
