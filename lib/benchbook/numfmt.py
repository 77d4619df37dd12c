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


def fmt_num(v: float, decimals: int = 3, sig: int = 5, trim: bool = False) -> str:
    """A figure with the precision it can carry — the pages' one number format for a measured value:

    * at most ``decimals`` decimals, and no more than about ``sig`` significant digits: a large value
      drops decimals (``1091.356 → '1091.4'``, ``552.137 → '552.14'``; ``4.8683 → '4.868'`` and
      ``11.78 → '11.780'`` as the seed pages print them);
    * a small non-zero value keeps two significant digits instead of rounding to zero
      (``0.0027 → '0.0027'``: never ``0.000`` for a value that is not zero);
    * ``trim`` drops the trailing zeros of a figure recorded with fewer digits than ``decimals``
      (a transcribed ``166.24`` is ``'166.24'``, not ``'166.2400'``; ``23.0 → '23'``).

    Integers are shown as integers; NaN and infinities as ``nan``/``∞``."""
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        return str(v)
    if not math.isfinite(v):
        return "nan" if math.isnan(v) else ("∞" if v > 0 else "−∞")
    if v == 0:
        return "0" if trim else f"{0:.{decimals}f}"
    mag = math.floor(math.log10(abs(v)))
    d = max(0, min(decimals, sig - 1 - mag))
    if mag < 0:
        d = max(d, 1 - mag)  # two significant digits at least
    out = f"{v:.{d}f}"
    if float(out) == 0:  # rounding would show zero: the value's own two digits
        out = f"{v:.{1 - mag}f}"
    if trim and "." in out:
        out = out.rstrip("0").rstrip(".")
    return out
