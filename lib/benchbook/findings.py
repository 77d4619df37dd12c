"""What analyses and loaders report besides figures: checks and exclusions.

A *check* is a named consistency test with a status (``pass``, ``warn`` or ``fail``), a detail in
words and the figures it compared (``figures``: engine vs client, measured vs threshold, a ladder's
flatness, …; read as attributes too, ``check.gap``); an *exclusion* is a sample left out of the
statistics, with the file, the place and why. They are the one model for both, in every analysis
(baseline, reconciliation, Little's law, PD); they end up as plain dicts in the summary JSON
(``as_dict``: name, status, detail, then the figures) and as rows on the pages. Kept free of heavy
imports so every reader can use them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # "pass" | "warn" | "fail"
    detail: str
    figures: Mapping[str, Any] = field(default_factory=dict)

    def __getattr__(self, key: str) -> Any:  # the figures read as attributes: check.gap, check.client
        figures = self.__dict__.get("figures") or {}
        if key in figures:
            return figures[key]
        raise AttributeError(key)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "detail": self.detail, **self.figures}


@dataclass
class Exclusion:
    file: str
    sample: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        return {"file": self.file, "sample": self.sample, "reason": self.reason}
