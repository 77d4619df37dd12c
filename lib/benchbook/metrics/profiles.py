"""Engine profiles: which `/metrics` names carry which common quantity.

Analyses ask for quantities (``ttft``, ``generation_tokens`` …), never for literal metric names, so
one analysis serves every engine. A histogram quantity names the family's base name (``_sum``,
``_count`` and ``_bucket`` are appended); a counter or gauge names the sample name and, where one
family carries several quantities, the labels that select it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from benchbook.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    from benchbook.metrics.prometheus import Snapshot


@dataclass(frozen=True)
class MetricRef:
    name: str  # sample name (counter/gauge) or base name (histogram)
    kind: str  # "histogram" | "counter" | "gauge"
    labels: tuple[tuple[str, str], ...] = ()
    # One label whose series are added up ON PURPOSE (vLLM's request_success_total is split by
    # finished_reason): the series whose ``sum_label`` value is in ``sum_values`` are summed, every
    # other label (model, engine rank) still keeps series apart. Empty: nothing is summed.
    sum_label: str | None = None
    sum_values: tuple[str, ...] = ()

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


def _csum(name: str, label: str, *values: str) -> MetricRef:
    return MetricRef(name, "counter", (), label, tuple(values))


def _vllm_like(prefix: str) -> dict[str, MetricRef]:
    """vLLM V1 names (vllm/v1/metrics/loggers.py); labels model_name and engine (DP rank)."""
    p = prefix
    return {
        "ttft": _h(f"{p}time_to_first_token_seconds"),
        "e2e": _h(f"{p}e2e_request_latency_seconds"),
        "queue": _h(f"{p}request_queue_time_seconds"),
        "prefill": _h(f"{p}request_prefill_time_seconds"),
        "decode": _h(f"{p}request_decode_time_seconds"),
        "itl": _h(f"{p}inter_token_latency_seconds"),
        "prompt_tokens": _c(f"{p}prompt_tokens_total"),
        "generation_tokens": _c(f"{p}generation_tokens_total"),
        # request_success_total counts every finished request, split by finished_reason.
        "requests_success": _csum(f"{p}request_success_total", "finished_reason", "stop", "length", "repetition"),
        "requests_aborted": _csum(f"{p}request_success_total", "finished_reason", "abort"),
        "requests_error": _csum(f"{p}request_success_total", "finished_reason", "error"),
        "running": _g(f"{p}num_requests_running"),
        "waiting": _g(f"{p}num_requests_waiting"),
        "kv_cache_usage": _g(f"{p}kv_cache_usage_perc"),  # fraction 0–1 (V0 called it gpu_cache_usage_perc)
        # what could make a figure lie (analysis/checks.py, docs/checks.md): prompt tokens served from the
        # prefix cache, preemptions; the engine's own cost estimate (vLLM 0.26+, where enabled)
        "prompt_tokens_cached": _c(f"{p}prompt_tokens_cached_total"),
        "prompt_tokens_cache_hit": _c(f"{p}prompt_tokens_by_source_total", source="local_cache_hit"),
        "prefix_cache_hits": _c(f"{p}prefix_cache_hits_total"),  # tokens
        "prefix_cache_queries": _c(f"{p}prefix_cache_queries_total"),  # tokens
        "preemptions": _c(f"{p}num_preemptions_total"),
        "estimated_flops": _c(f"{p}estimated_flops_per_gpu_total"),
        "estimated_read_bytes": _c(f"{p}estimated_read_bytes_per_gpu_total"),
    }


# Common quantities:
#   ttft, e2e, queue, prefill, decode           histograms (seconds)
#   prompt_tokens, generation_tokens            counters
#   requests_success, requests_aborted          counters
#   running, waiting, kv_cache_usage            gauges (kv_cache_usage a fraction 0–1)
#   itl, requests_error                         where the engine has them
#   prompt_tokens_cached, prompt_tokens_cache_hit, prefix_cache_hits, prefix_cache_queries,
#   preemptions, estimated_flops, estimated_read_bytes
#                                               counters, where the engine has them (docs/checks.md);
#                                               an engine without one is "not measured", never zero
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
    "vllm": EngineProfile("vllm", "vLLM V1 /metrics (vllm:* names; labels model_name, engine)", _vllm_like("vllm:")),
    "vllm-unprefixed": EngineProfile(
        "vllm-unprefixed",
        "vLLM-compatible servers exposing vLLM's metric names without the vllm: prefix",
        _vllm_like(""),
    ),
    "sglang": EngineProfile(
        "sglang",
        "SGLang /metrics (sglang:* names, python/sglang/srt/metrics/collector.py; labels model_name, tp_rank, dp_rank)",
        {
            "ttft": _h("sglang:time_to_first_token_seconds"),
            "e2e": _h("sglang:e2e_request_latency_seconds"),
            "queue": _h("sglang:queue_time_seconds"),
            "itl": _h("sglang:inter_token_latency_seconds"),
            "prompt_tokens": _c("sglang:prompt_tokens_total"),
            "generation_tokens": _c("sglang:generation_tokens_total"),
            "requests_success": _c("sglang:num_requests_total"),  # finished requests
            "requests_aborted": _c("sglang:num_aborted_requests_total"),
            "running": _g("sglang:num_running_reqs"),
            "waiting": _g("sglang:num_queue_reqs"),
            "kv_cache_usage": _g("sglang:token_usage"),  # fraction of KV token slots in use
            "prompt_tokens_cached": _c("sglang:cached_tokens_total"),  # prompt tokens served from the radix cache
        },
    ),
    "tgi": EngineProfile(
        "tgi",
        "Hugging Face text-generation-inference router /metrics (tgi_* names); no TTFT histogram",
        {
            "e2e": _h("tgi_request_duration"),
            "queue": _h("tgi_request_queue_duration"),
            "decode": _h("tgi_request_inference_duration"),
            "itl": _h("tgi_request_mean_time_per_token_duration"),
            # token totals are the _sum of the per-request length histograms (a counter)
            "prompt_tokens": _c("tgi_request_input_length_sum"),
            "generation_tokens": _c("tgi_request_generated_tokens_sum"),
            "requests_success": _c("tgi_request_success"),
            "requests_error": _c("tgi_request_failure"),
            "waiting": _g("tgi_queue_size"),
            "running": _g("tgi_batch_current_size"),
        },
    ),
}


def _present(names: set[str], ref: MetricRef) -> bool:
    return (ref.name + "_count" in names) if ref.kind == "histogram" else ref.name in names


def detect_profile(snapshot: Snapshot) -> EngineProfile:
    """The profile whose metric names the snapshot carries most of.

    Counts, per profile, the quantities whose sample name (``_count`` for a histogram) occurs in the
    snapshot. Raises InputError when no profile matches any name, or when two profiles tie.
    """
    names = set(snapshot.values)
    scores = sorted(
        ((sum(_present(names, r) for r in prof.quantities.values()), name) for name, prof in PROFILES.items()),
        key=lambda t: (-t[0], t[1]),
    )
    best, name = scores[0]
    if best == 0:
        raise InputError(
            snapshot.source, "-", f"no engine profile matches its metric names; known: {', '.join(sorted(PROFILES))}"
        )
    if len(scores) > 1 and scores[1][0] == best:
        raise InputError(
            snapshot.source,
            "-",
            f"engine profiles {name} and {scores[1][1]} match equally ({best} quantities); name one",
        )
    return PROFILES[name]


def get_profile(name: str) -> EngineProfile:
    try:
        return PROFILES[name]
    except KeyError:
        raise InputError(
            "campaign.json",
            "$.engine.profile",
            f"unknown engine profile {name!r}; known: {', '.join(sorted(PROFILES))}",
        ) from None
