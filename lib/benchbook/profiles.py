"""Engine profiles: which `/metrics` names carry which common quantity.

Analyses ask for quantities (``ttft``, ``generation_tokens`` …), never for literal metric names, so
one analysis serves every engine. A histogram quantity names the family's base name (``_sum``,
``_count`` and ``_bucket`` are appended); a counter or gauge names the sample name and, where one
family carries several quantities, the labels that select it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .errors import InputError


@dataclass(frozen=True)
class MetricRef:
    name: str  # sample name (counter/gauge) or base name (histogram)
    kind: str  # "histogram" | "counter" | "gauge"
    labels: tuple[tuple[str, str], ...] = ()

    @property
    def label_dict(self) -> dict[str, str]:
        return dict(self.labels)

    def sample(self, suffix: str = "") -> str:
        return self.name + suffix


@dataclass(frozen=True)
class EngineProfile:
    name: str
    description: str
    quantities: dict[str, MetricRef] = field(default_factory=dict)

    def ref(self, quantity: str) -> MetricRef:
        try:
            return self.quantities[quantity]
        except KeyError:
            raise InputError(
                f"profile {self.name}", quantity, f"this engine profile has no metric for {quantity!r}"
            ) from None

    def has(self, quantity: str) -> bool:
        return quantity in self.quantities

    def sample_names(self, quantities: list[str]) -> list[str]:
        """Sample-name prefixes to hand the parser when only these quantities are needed."""
        return sorted({self.quantities[q].name for q in quantities if q in self.quantities})


def _h(name: str) -> MetricRef:
    return MetricRef(name, "histogram")


def _c(name: str, **labels: str) -> MetricRef:
    return MetricRef(name, "counter", tuple(sorted(labels.items())))


def _g(name: str, **labels: str) -> MetricRef:
    return MetricRef(name, "gauge", tuple(sorted(labels.items())))


# Common quantities:
#   ttft, e2e, queue, prefill, decode           histograms (seconds)
#   prompt_tokens, generation_tokens            counters
#   requests_success, requests_aborted          counters
#   running, waiting, kv_cache_usage            gauges
PROFILES: dict[str, EngineProfile] = {
    "pocket": EngineProfile(
        "pocket",
        "pocketllm_engine --serve (cpp_engine/core/metrics.cpp)",
        {
            "ttft": _h("pocket_ttft_seconds"),
            "e2e": _h("pocket_request_duration_seconds"),
            "prompt_tokens": _c("pocket_tokens_total", type="prompt"),
            "generation_tokens": _c("pocket_tokens_total", type="generation"),
            "requests_success": _c("pocket_requests_total", status="success"),
            "requests_error": _c("pocket_requests_total", status="error"),
            "running": _g("pocket_requests_running"),
            "waiting": _g("pocket_requests_waiting"),
        },
    ),
}


def get_profile(name: str) -> EngineProfile:
    try:
        return PROFILES[name]
    except KeyError:
        raise InputError(
            "campaign.json", "$.engine.profile", f"unknown engine profile {name!r}; known: {', '.join(sorted(PROFILES))}"
        ) from None
