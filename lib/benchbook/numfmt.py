"""Number formats shared by the analyses (verdict sentences) and the pages: pure formatting, no judgement.

They sit below every layer so a page formats a figure without importing an analysis module
(issue 26: pages import from ``analysis`` only the analysis object and its types)."""

from __future__ import annotations

import math


def fmt_pct(fraction: float, digits: int = 1, signed: bool = False) -> str:
    """``0.0746 → '7.5%'``; with ``signed`` a leading + or − (``'+6.5%'``, ``'−8.7%'``)."""
    if math.isinf(fraction):
        return "∞"
    body = f"{abs(fraction) * 100:.{digits}f}%"
    if not signed:
        return body if fraction >= 0 else f"−{body}"
    if float(f"{abs(fraction) * 100:.{digits}f}") == 0:
        return f"±{body}"
    return ("+" if fraction > 0 else "−") + body


def fmt_ratio(r: float, digits: int = 2) -> str:
    """``1.6189 → '1.62x'``."""
    return f"{r:.{digits}f}x"
