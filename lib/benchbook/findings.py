"""What analyses and loaders report besides figures: checks and exclusions.

A *check* is a named consistency test with a status (``pass``, ``warn`` or ``fail``) and a detail in
words; an *exclusion* is a sample left out of the statistics, with the file, the place and why. Both
end up as plain dicts in the summary JSON and as rows on the pages. Kept free of heavy imports so
every reader can use them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # "pass" | "warn" | "fail"
    detail: str

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class Exclusion:
    file: str
    sample: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        return {"file": self.file, "sample": self.sample, "reason": self.reason}
