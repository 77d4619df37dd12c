"""The PD deployment section: for every run read from a Benchmark Report that states prefill and
decode roles, the GPUs per role, per-GPU throughput per role and per cluster, the KV transfer
against the link and whether the PD path was exercised — as :mod:`benchbook.analysis.pd_report`
decided them. Formats only.

``section(items, link_gb_s=None)`` takes ``(run_id, BenchmarkRun)`` pairs (the compare page passes
its runs) and returns one display Block, empty when no run is a PD report; ``block(reports,
link_gb_s)`` formats reports the campaign's analysis already made (the PD page passes
``CampaignAnalysis.pd_deployment``).
"""

from __future__ import annotations

from benchbook.analysis.pd_report import NO_LINK, SECTION, PDDeployment
from benchbook.pages import display as bd

__all__ = ["block", "section"]


def _n(v: float | None, fmt: str = "{:,.0f}") -> str:
    return "—" if v is None else fmt.format(v)


def section(reports: list[PDDeployment], link_gb_s: float | None = None) -> bd.Block:
    """The PD deployment section of reports the analysis made (``ResultSet.pd_deployment``), recorded."""
    bd.record("pd_report", [r.as_dict() for r in reports])
    return block(reports, link_gb_s)


def block(reports: list[PDDeployment], link_gb_s: float | None = None, *, level: int = 2) -> bd.Block:
    """The deployment table and its checks for reports already made (empty without one)."""
    if not reports:
        return bd.Block("")
    rows = [
        {
            "Run": r.run_id,
            "GPUs prefill + decode": f"{_n(r.prefill_gpus)} + {_n(r.decode_gpus)} = {_n(r.total_gpus)}",
            "Input tok/s per prefill GPU": _n(r.input_tok_s_per_prefill_gpu),
            "Output tok/s per decode GPU": _n(r.output_tok_s_per_decode_gpu),
            "Output tok/s per GPU (cluster)": _n(r.output_tok_s_per_gpu),
            "Total tok/s per GPU (cluster)": _n(r.total_tok_s_per_gpu),
            "KV per request": "—"
            if r.kv_bytes_per_request is None
            else f"{r.kv_bytes_per_request / 1e6:,.1f} MB in {_n(r.kv_seconds_per_request and r.kv_seconds_per_request * 1e3, '{:,.2f}')} ms",
            "KV rate GB/s": _n(r.kv_gb_s, "{:,.2f}"),
        }
        for r in reports
    ]
    checks = [
        {
            "Run": r.run_id,
            "Check": c.name,
            "Status": bd.mark({"pass": "pass", "warn": "note", "fail": "fail"}[c.status], c.status),
            "Detail": c.detail,
        }
        for r in reports
        for c in r.checks
    ]
    link = f"{link_gb_s:g} GB/s" if link_gb_s else f"not given ({NO_LINK}: set link_gb_s)"
    body = str(
        bd.table(
            rows,
            id="pd-deployment",
            caption=(
                "Prefill/decode deployment as the Benchmark Report states it: per-GPU throughput per role is input "
                "tokens/s ÷ prefill GPUs and output tokens/s ÷ decode GPUs; per cluster divides by all GPUs. KV "
                "transfer per request and its rate (bytes ÷ seconds) as the report states them."
            ),
        )
    ) + str(bd.table(checks, id="pd-deployment-checks", caption=f"PD checks. Link rate: {link}."))
    h = f"h{level}"
    return bd.Block(f'<section id="{SECTION}"><{h}>PD deployment (Benchmark Report)</{h}>{body}</section>')
