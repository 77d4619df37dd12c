"""The prefill/decode phase split of one streamed request, from `/metrics` counter deltas.

For one sample (a scrape before and after one request), on the engine's own clock::

    prefill_s     = Δ ttft_sum
    decode_tokens = Δ generation_tokens − 1      (the first token belongs to prefill)
    decode_s      = Δ e2e_sum − prefill_s        (includes response assembly: rates are floors)

The deltas are attributed to the request only if the TTFT count, the duration count and the success
count each moved by exactly 1. Anything else excludes the sample, with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from benchbook.metrics import prometheus
from benchbook.metrics.profiles import EngineProfile

# The quantities the split needs. Of the two histograms it reads only `_sum` and `_count`.
NEEDED = ["ttft", "e2e", "prompt_tokens", "generation_tokens", "requests_success"]
HISTOGRAM_SAMPLES = ("_sum", "_count")


@dataclass(frozen=True)
class PhaseSplit:
    prompt_tokens: float
    generated_tokens: float
    prefill_s: float
    decode_tokens: float
    decode_s: float
    engine_total_s: float
    # the success counter's delta per finished reason (vLLM: stop/length/repetition), when split so
    finished: dict[str, float] = field(default_factory=dict)

    @property
    def prefill_tok_s(self) -> float:
        return self.prompt_tokens / self.prefill_s

    @property
    def decode_tok_s(self) -> float:
        return self.decode_tokens / self.decode_s


class Excluded(Exception):
    """A sample that cannot be attributed to one request; ``reason`` says why."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def needed_names(profile: EngineProfile) -> list[str]:
    """The whole families of the quantities the split reads, histogram buckets included: what
    ``benchbook validate`` parses of each snapshot of a campaign (``Campaign.check_snapshots``),
    so a bucket defect in them is found. The split itself reads ``needed_samples``."""
    return profile.sample_names(NEEDED)


def needed_samples(profile: EngineProfile) -> list[str]:
    """The sample names the split reads, to hand ``prometheus.read``: a counter's name, a
    histogram's ``_sum`` and ``_count`` (its family's ``# TYPE``/``# HELP`` lines come with them; its
    ``_bucket`` lines are not read, so their checks run where buckets are: ``needed_names``)."""
    out: set[str] = set()
    for q in NEEDED:
        if not profile.has(q):
            continue
        ref = profile.ref(q)
        if ref.kind == "histogram":
            out.update(ref.sample(sfx) for sfx in HISTOGRAM_SAMPLES)
        else:
            out.add(ref.name)
    return sorted(out)


def _hint(labels_key: str | None) -> str:
    where = labels_key or "metrics_labels"
    return (
        f'set {where} in campaign.json to the labels of one engine (e.g. {{"model_name": …}} or '
        '{"engine": "0"}): series of different deployments or DP ranks are never added up'
    )


def _d(
    before: prometheus.Snapshot,
    after: prometheus.Snapshot,
    profile: EngineProfile,
    q: str,
    suffix: str = "",
    labels: Mapping[str, str] | None = None,
    labels_key: str | None = None,
    per: dict[str, float] | None = None,
) -> float:
    ref = profile.ref(q)
    want = {**(labels or {}), **ref.label_dict}
    if ref.sum_label is not None and not suffix:
        return _summed(before, after, ref, want, _hint(labels_key), per)
    d = prometheus.delta(before, after, ref.sample(suffix), want, _hint(labels_key))
    if d.missing:
        side = "before" if d.before is None else "after"
        raise Excluded(f"{d.describe()} missing from the {side} snapshot")
    if d.reset:
        raise Excluded(
            f"counter reset: {d.describe()} went from {d.before:g} to {d.after:g} (engine restarted?); no delta"
        )
    return d.value


def _summed(
    before: prometheus.Snapshot,
    after: prometheus.Snapshot,
    ref,
    labels: Mapping[str, str],
    hint: str,
    per: dict[str, float] | None,
) -> float:
    """Delta of a counter summed over ``ref.sum_label`` (vLLM's success counter over
    ``finished_reason``); the per-value deltas go to ``per``. A value whose series is absent on one
    side counts as 0 there (a labelled child appears at its first increment); a total that went
    down is a reset."""
    b, pb = before.total(ref.name, labels, ref.sum_label, ref.sum_values, hint)
    a, pa = after.total(ref.name, labels, ref.sum_label, ref.sum_values, hint)
    shown = f"{ref.name}{{{ref.sum_label} in {'/'.join(ref.sum_values)}}}"
    if b is None or a is None:
        side = "before" if b is None else "after"
        raise Excluded(f"{shown} missing from the {side} snapshot")
    if a < b or any(pa.get(k, 0.0) < v for k, v in pb.items()):
        raise Excluded(f"counter reset: {shown} went from {b:g} to {a:g} (engine restarted?); no delta")
    if per is not None:
        per.update({k: pa.get(k, 0.0) - pb.get(k, 0.0) for k in sorted(set(pa) | set(pb))})
    return a - b


# No phase of a served request lasts under a microsecond (engines time in microseconds or coarser):
# a shorter duration is a zero, a denormal or float noise, and a rate over it would be meaningless.
MIN_DURATION_S = 1e-6
# Engines export the process's start time (prometheus_client's process collector); when it changes
# between two snapshots the engine restarted, whatever its counters did since.
START_TIME = "process_start_time_seconds"


def counter_families(text: str) -> list[str]:
    """The families a snapshot declares as counters (``# TYPE name counter``), plus
    :data:`START_TIME`: what :func:`restart` compares (handed to the parser as its ``names``)."""
    out = {START_TIME}
    for line in text.split("\n"):
        if line.startswith("# TYPE ") and line.rstrip("\r").endswith(" counter"):
            parts = line.split()
            if len(parts) == 4:
                out.add(parts[2])
    return sorted(out)


def restart(before: prometheus.Snapshot, after: prometheus.Snapshot) -> str | None:
    """Why the engine restarted between two snapshots, or None: its ``process_start_time_seconds``
    changed, or any counter (every counter family, not only those the split reads) went down or got
    a new ``_created`` time. A restarted engine's counters may have grown past their old values by
    the second snapshot, so a delta taken over the restart is not one request's."""

    def is_counter(name: str) -> bool:
        for suffix in ("_total", "_created", ""):
            if name.endswith(suffix) and before.types.get(name[: len(name) - len(suffix)]) == "counter":
                return True
        return False

    for name in sorted(set(before.values) & set(after.values)):
        b, a = before.values[name], after.values[name]
        if name == START_TIME:
            for key in sorted(set(b) & set(a)):
                if a[key] != b[key]:
                    return f"engine restarted between the snapshots: {START_TIME} went from {b[key]:g} to {a[key]:g}"
            continue
        if not is_counter(name):
            continue
        for key in sorted(set(b) & set(a)):
            moved = a[key] != b[key] if name.endswith("_created") else a[key] < b[key]
            if moved:
                shown = prometheus.Delta(name, key, b[key], a[key]).describe().removesuffix("{}")
                return f"engine restarted between the snapshots: counter {shown} went from {b[key]:g} to {a[key]:g}"
    return None


def split(
    before: prometheus.Snapshot,
    after: prometheus.Snapshot,
    profile: EngineProfile,
    client_total_s: float | None = None,
    first_event_s: float | None = None,
    labels: Mapping[str, str] | None = None,
    labels_key: str | None = None,
) -> PhaseSplit:
    """Phase split of one sample; raises Excluded with the reason when it cannot be attributed.

    ``labels`` (the run's ``metrics_labels``) pick one engine's series when a capture holds several
    (models, DP ranks); ``labels_key`` is where campaign.json sets them, named when they are needed.
    A counter split by a label the profile sums on purpose (``finished_reason``) is summed, and its
    per-value deltas are kept in ``PhaseSplit.finished``.
    """
    kw = {"labels": labels, "labels_key": labels_key}
    finished: dict[str, float] = {}
    moved = {
        "TTFT count": _d(before, after, profile, "ttft", "_count", **kw),
        "duration count": _d(before, after, profile, "e2e", "_count", **kw),
        "success count": _d(before, after, profile, "requests_success", per=finished, **kw),
    }
    off = {k: v for k, v in moved.items() if v != 1}
    if off:
        detail = ", ".join(f"{k} moved by {v:g}" for k, v in off.items())
        raise Excluded(f"not attributable to one request: {detail} (each must move by exactly 1)")
    prefill_s = _d(before, after, profile, "ttft", "_sum", **kw)
    total_s = _d(before, after, profile, "e2e", "_sum", **kw)
    gen = _d(before, after, profile, "generation_tokens", **kw)
    ptok = _d(before, after, profile, "prompt_tokens", **kw)
    if total_s <= prefill_s:
        raise Excluded(
            f"duration {total_s:.4f} s does not exceed TTFT {prefill_s:.4f} s: this path records no "
            "first-token instant (non-streamed handler), so there is no phase split"
        )
    if prefill_s <= 0:
        raise Excluded(f"TTFT delta {prefill_s:g} s is not positive")
    for what, secs in (("TTFT delta", prefill_s), ("decode time (duration − TTFT)", total_s - prefill_s)):
        if secs < MIN_DURATION_S:  # zero, denormal, float noise: a rate from it would be meaningless
            raise Excluded(f"{what} {secs:g} s is below {MIN_DURATION_S:g} s: no rate can be taken from it")
    if gen < 2:
        raise Excluded(f"generation tokens moved by {gen:g}; need at least 2 for a decode phase")
    if ptok <= 0:
        raise Excluded(f"prompt tokens moved by {ptok:g}; no prefill to measure")
    if client_total_s is not None and total_s > client_total_s:
        raise Excluded(
            f"engine total {total_s:.4f} s exceeds client total {client_total_s:.4f} s: the engine cannot "
            "finish after the client, so the deltas are not this request's"
        )
    if first_event_s is not None and first_event_s >= prefill_s:
        raise Excluded(
            f"first stream event at {first_event_s:.4f} s is not before TTFT {prefill_s:.4f} s: the stream "
            "cannot delimit the phases on this path"
        )
    return PhaseSplit(
        prompt_tokens=ptok,
        generated_tokens=gen,
        prefill_s=prefill_s,
        decode_tokens=gen - 1,
        decode_s=total_s - prefill_s,
        engine_total_s=total_s,
        finished={k: v for k, v in finished.items() if v},
    )
