"""Shared pytest fixtures. Keep this file small: add a fixture, don't add logic."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# every chart built under test (in this process, render workers and kernels) is validated by Altair
os.environ["BENCHBOOK_VALIDATE_CHARTS"] = "1"
sys.path.insert(0, str(Path(__file__).resolve().parent))  # tests/browser.py importable as `browser`


@pytest.fixture(scope="session")
def chromium():
    """A headless Debian Chromium for browser tests (skips when /usr/bin/chromium is absent)."""
    import browser

    if not browser.chromium_available():
        pytest.skip(f"{browser.CHROMIUM} not found: install Debian's chromium (make browser-deps) to run browser tests")
    with browser.launch() as b:
        yield b


@pytest.fixture
def open_page(chromium):
    """``open_page(path, table_ids=[...], screenshot="name.png") -> browser.PageReport`` (network blocked)."""
    import browser

    def _open(path, **kw):
        return browser.open_page(chromium, path, **kw)

    return _open


@pytest.fixture(scope="session")
def smoke_notebook() -> Path:
    """notebooks/_smoke.ipynb: a tiny parameterized page notebook (table, chart, recorded values)."""
    return ROOT / "notebooks" / "_smoke.ipynb"
