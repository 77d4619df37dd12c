"""The real captures the tests read in place: ``../shared/realdata`` beside the repository root.

CI (and every helper's worktree) has the shared folder beside the clone; the bundled fixtures under
tests/fixtures/realdata are small copies. :func:`realdata` is the one place that path is built.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REALDATA = ROOT.parent / "shared" / "realdata"


def realdata(*parts: str) -> Path:
    """``../shared/realdata/<parts…>`` relative to the repository root (whether or not it exists)."""
    return REALDATA.joinpath(*parts)
