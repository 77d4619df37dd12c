"""Progress for the capture commands: how far a capture is, and about how long is left.

``capture phases`` and ``capture ladder`` know their work before they start (samples; requests over
the ladder's steps): each line they print begins with ``[done/total, elapsed, about N s left]``,
the time left estimated from the time per unit so far (for a ladder on a batched server, where the
later steps serve many requests at once, the estimate errs long). Standard library only: capture
runs in an engine's Python environment.
"""

from __future__ import annotations

import time


def fmt_s(seconds: float) -> str:
    """``42 s``, ``3 min 5 s``, ``1 h 2 min``: a duration as a person reads it."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {s % 3600 // 60} min"


class Progress:
    """``total`` units of work (``unit``: "samples", "requests"); :meth:`advance` after each."""

    def __init__(self, total: int, unit: str, clock=time.monotonic) -> None:
        self.total, self.unit, self.clock = total, unit, clock
        self.t0 = clock()
        self.done = 0

    def advance(self, k: int = 1) -> str:
        """Count ``k`` more units done; the line's prefix, ``[3/8 samples, 4 s, about 7 s left]``."""
        self.done = min(self.total, self.done + k)
        elapsed = self.clock() - self.t0
        head = f"[{self.done}/{self.total} {self.unit}, {fmt_s(elapsed)}"
        if self.done >= self.total:
            return head + ", done]"
        if self.done == 0:
            return head + "]"
        left = elapsed / self.done * (self.total - self.done)
        return head + f", about {fmt_s(left)} left]"
