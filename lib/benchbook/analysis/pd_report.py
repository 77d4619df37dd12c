"""A prefill/decode-disaggregated deployment judged from what its report states (an llm-d Benchmark
Report read by :mod:`benchbook.ingest.llmd_report`): GPUs per role, per-GPU throughput, the KV
transfer held against the link, and whether the PD path was exercised at all.

Definitions (one place, tested by hand in tests/test_pd_report.py):

* **per-GPU throughput per role**: input tokens/s ÷ prefill GPUs (prefill does the input),
  output tokens/s ÷ decode GPUs (decode does the output);
* **per cluster**: output tokens/s ÷ all GPUs and total tokens/s ÷ all GPUs (what a replica-serving
  deployment of the same GPUs is compared on);
* **KV transfer per request**: bytes and seconds per request as the report states them; the
  achieved rate is bytes ÷ seconds, in GB/s (10^9 bytes). It is held against the link's rate
  (``link_gb_s``, the user's number: e.g. 50 GB/s for one 400 Gb/s NIC): a rate **above** the link
  is a failed check — the transfer metrics count more than the wire can carry (SGLang's transfer
  metrics have been seen to); without a link rate the check is not judged;
* **PD path exercised**: the prefill role's counters moved — requests ran on the prefill
  component (its observability ``running_requests`` mean > 0) or KV bytes were transferred. A PD
  stack whose prefill role shows no activity served everything on the decode pods: the figures
  are not a PD result.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from benchbook.errors import InputError
from benchbook.findings import Check, Finding, Findings

__all__ = [
    "NO_LINK",
    "PDDeployment",
    "analyse",
    "campaign_reports",
    "findings",
    "kv_link_check",
    "link_rate",
    "pd_exercised_check",
]

#: what the link check says by default: the link rate is the user's number (``link_gb_s``)
NO_LINK = "not judged without a link rate"
#: the page section the deployment figures and checks are shown in (findings link to it)
SECTION = "pd-deployment"


@dataclass
class PDDeployment:
    run_id: str
    prefill_gpus: int | None
    decode_gpus: int | None
    total_gpus: int | None
    input_tok_s: float | None
    output_tok_s: float | None
    input_tok_s_per_prefill_gpu: float | None
    output_tok_s_per_decode_gpu: float | None
    output_tok_s_per_gpu: float | None  # cluster
    total_tok_s_per_gpu: float | None  # cluster
    kv_bytes_per_request: float | None
    kv_seconds_per_request: float | None
    kv_gb_s: float | None  # achieved: bytes / seconds / 1e9
    link_gb_s: float | None
    checks: list[Check] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k not in ("checks", "notes")}
        out["checks"] = [c.as_dict() for c in self.checks]
        out["notes"] = list(self.notes)
        return out


def _div(a: float | None, b: float | None) -> float | None:
    return None if a is None or not b else a / b


def kv_link_check(kv_gb_s: float | None, link_gb_s: float | None) -> Check:
    """The achieved KV-transfer rate against the link: above it is impossible (fail)."""
    name = "KV transfer rate within the link"
    if kv_gb_s is None:
        return Check(name, "warn", "no KV-transfer bytes and time in the report: not judged", {"kv_gb_s": None})
    if link_gb_s is None:
        return Check(
            name,
            "warn",
            f"achieved {kv_gb_s:.3g} GB/s; no link rate given (link_gb_s): {NO_LINK}",
            {"kv_gb_s": kv_gb_s, "link_gb_s": None},
        )
    share = kv_gb_s / link_gb_s
    figures = {"kv_gb_s": kv_gb_s, "link_gb_s": link_gb_s, "share_of_link": share}
    if share > 1.0:
        return Check(
            name,
            "fail",
            f"achieved {kv_gb_s:.3g} GB/s is above the link's {link_gb_s:.3g} GB/s ({share:.0%}): the transfer "
            "metrics count more than the wire carries (bytes counted twice, or time measured on a part of the transfer)",
            figures,
        )
    return Check(name, "pass", f"achieved {kv_gb_s:.3g} GB/s = {share:.0%} of the {link_gb_s:.3g} GB/s link", figures)


def pd_exercised_check(
    stack: list[dict[str, Any]], observability: dict[str, dict[str, Any]], kv_bytes: float | None
) -> Check:
    """Whether the prefill role did work: its requests-running gauge moved, or KV bytes moved."""
    name = "PD path exercised"
    prefill = [c for c in stack if c.get("role") == "prefill"]
    if not prefill or not any(c.get("role") == "decode" for c in stack):
        return Check(name, "warn", "the stack states no prefill and decode roles: not a PD deployment", {})
    labels = [str(c.get("label")) for c in prefill]
    running = [
        (observability.get(lb) or {}).get("running_requests", {}).get("mean")
        for lb in labels
        if (observability.get(lb) or {}).get("running_requests")
    ]
    moved = [r for r in running if r]
    if moved or (kv_bytes is not None and kv_bytes > 0):
        why = []
        if moved:
            why.append(f"prefill running requests mean {max(moved):.3g}")
        if kv_bytes:
            why.append(f"{kv_bytes:.4g} KV bytes per request transferred")
        return Check(name, "pass", "; ".join(why), {"prefill_running_mean": max(moved) if moved else None})
    if not running and kv_bytes is None:
        return Check(name, "warn", f"no activity figures for the prefill role ({', '.join(labels)}): not judged", {})
    return Check(
        name,
        "fail",
        f"the prefill role ({', '.join(labels)}) shows no running requests and no KV transfer: requests were served "
        "without the prefill pods — not a PD result",
        {"prefill_running_mean": max(running) if running else None},
    )


def analyse(run: Any, *, run_id: str = "", link_gb_s: float | None = None) -> PDDeployment | None:
    """The PD figures and checks of one run read from a Benchmark Report (None for other formats or a
    report without prefill and decode roles)."""
    c, s = run.config, run.summary
    stack = c.get("stack") or []
    if not c.get("disaggregated") or not stack:
        return None
    params = c.get("params") or {}
    pg, dg = params.get("prefill_gpus"), params.get("decode_gpus")
    total = None if pg is None or dg is None else pg + dg
    notes: list[str] = []
    inp, out = s.get("input_throughput"), s.get("output_throughput")
    tot = s.get("total_token_throughput")
    if tot is None and inp is not None and out is not None:
        tot = inp + out
    obs = c.get("observability") or {}
    kv_b = kv_t = None
    for label, figs in sorted(obs.items()):
        b, t = figs.get("kv_transfer_bytes"), figs.get("kv_transfer_time")
        if b and t:
            if kv_b is not None:
                notes.append(f"KV-transfer figures on several components; {label}'s ignored")
                continue
            kv_b = b.get("mean")
            scale = {"s": 1.0, "ms": 1e-3}.get(str(t.get("units")))
            if scale is None:
                notes.append(f"{label}: kv_transfer_time units {t.get('units')!r} not s or ms: not read")
                kv_b = None
                continue
            kv_t = None if t.get("mean") is None else t["mean"] * scale
    if kv_b is None:
        notes.append("the report states no KV-transfer bytes and time (not fields of BR 0.2/0.2.1)")
    kv_rate = None if kv_b is None or not kv_t else kv_b / kv_t / 1e9
    checks = [
        pd_exercised_check(stack, obs, kv_b),
        kv_link_check(kv_rate, link_gb_s),
    ]
    return PDDeployment(
        run_id=run_id or run.location,
        prefill_gpus=pg,
        decode_gpus=dg,
        total_gpus=total,
        input_tok_s=inp,
        output_tok_s=out,
        input_tok_s_per_prefill_gpu=_div(inp, pg),
        output_tok_s_per_decode_gpu=_div(out, dg),
        output_tok_s_per_gpu=_div(out, total),
        total_tok_s_per_gpu=_div(tot, total),
        kv_bytes_per_request=kv_b,
        kv_seconds_per_request=kv_t,
        kv_gb_s=kv_rate,
        link_gb_s=link_gb_s,
        checks=checks,
        notes=notes,
    )


def link_rate(value: float | None, where: str = "link_gb_s") -> float | None:
    """The link rate a user set (GB/s, 10^9 bytes/s): ``None`` or 0 mean not given (the link check is
    :data:`NO_LINK`); a negative, infinite or non-number value is bad input."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value) or math.isinf(value):
        raise InputError("parameters", where, f"expected a link rate in GB/s (a number), got {value!r}")
    if value < 0:
        raise InputError("parameters", where, f"a link rate cannot be negative (got {value:g} GB/s)")
    return float(value) or None


def campaign_reports(items: Iterable[tuple[str, Any]], link_gb_s: float | None = None) -> list[PDDeployment]:
    """The PD figures of every ``(run id, BenchmarkRun)`` read from a Benchmark Report that states
    prefill and decode roles, in the order given (other runs are left out: they state no roles)."""
    link = link_rate(link_gb_s)
    return [r for rid, run in items if (r := analyse(run, run_id=rid, link_gb_s=link)) is not None]


def finding_parts(reports: Iterable[PDDeployment]) -> dict[str, list]:
    """The deployment checks' findings lines: every failed check, and each check that could not be
    judged. A per-GPU figure is a figure, not a comparison: no result line."""
    failed, unjudged = [], []
    for r in reports:
        for c in r.checks:
            line = Finding("fail" if c.status == "fail" else "unjudged", f"{r.run_id}: {c.name}: {c.detail}", SECTION)
            if c.status == "fail":
                failed.append(line)
            elif c.status == "warn":
                unjudged.append(line)
    return {"failed": failed, "unjudged": unjudged}


def findings(reports: Iterable[PDDeployment], base: Findings | None = None) -> Findings:
    """The findings box lines of the deployment checks (:func:`finding_parts`) appended to ``base``
    (the PD page's own findings, when it has pd.json runs too)."""
    parts = finding_parts(reports)
    failed, unjudged = parts["failed"], parts["unjudged"]
    if base is None:
        base = Findings.build()
    return dataclasses.replace(
        base,
        lines=(
            *(x for x in base.lines if x.kind != "unjudged"),
            *failed,
            *(x for x in base.lines if x.kind == "unjudged"),
            *unjudged,
        ),
        failed_checks=base.failed_checks + len(failed),
        unjudged=base.unjudged + len(unjudged),
    )
