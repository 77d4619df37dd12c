"""The per-point table: one row per load point, the table a GuideLLM or AIPerf user opens in a
spreadsheet (``benchbook summary CAMPAIGN --csv``; docs/summary.md).

For a campaign with results runs (other tools' result files, init's load points) a row is one
benchmark run — one configuration at one load, counted once however many files carried it — with
what the file reports: the load, the counts, the duration, the throughputs, the latency statistics,
and whether it passed the validity gates. Without results runs (the phase harness, the concurrency
ladder, PD runs) a row is one of the campaign's cells: a figure of one arm at one prompt class or
concurrency, with its median, [min–max] and n — the figures ``summary --json`` carries as ``cells``.
Values are the analysis's own, unrounded; an empty field is a figure the file does not state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from benchbook.analysis.campaign_analysis import CampaignAnalysis

LATENCY = ("ttft", "tpot", "itl", "e2el")
RUN_COLUMNS: tuple[str, ...] = (
    "configuration",
    "run",
    "format",
    "load",
    "request_rate",
    "max_concurrency",
    "completed",
    "failed",
    "duration_s",
    "total_input_tokens",
    "total_output_tokens",
    "output_throughput",
    "request_throughput",
    "total_token_throughput",
    *(f"{st}_{m}_ms" for m in LATENCY for st in ("mean", "median", "p99")),
    "valid",
    "failed_gates",
)
CELL_COLUMNS: tuple[str, ...] = (
    "arm",
    "run",
    "environment",
    "metric",
    "unit",
    "prompt_class",
    "prompt_tokens",
    "generated_tokens",
    "concurrency",
    "window",
    "median",
    "min",
    "max",
    "n",
)


def _rate(v: Any) -> Any:
    return "inf" if isinstance(v, float) and v == float("inf") else v


def point_table(an: CampaignAnalysis) -> tuple[tuple[str, ...], list[dict[str, Any]]]:
    """(columns, rows) of the campaign's per-point table (see the module docstring)."""
    rs = an.results
    if rs is not None and rs.entries:
        rows = []
        for e in rs.entries:
            c = e.run.config
            failed = [g.name for g in e.gates if g.status == "fail"]
            rows.append(
                {
                    "configuration": e.config,
                    "run": e.id,
                    "format": e.run.format,
                    "load": e.load,
                    "request_rate": _rate(c.get("request_rate")),
                    "max_concurrency": c.get("max_concurrency"),
                    **{k: e.get(k) for k in RUN_COLUMNS[6:-2]},
                    "valid": not failed,
                    "failed_gates": "; ".join(failed),
                }
            )
        return RUN_COLUMNS, rows
    cells = an.as_dict().get("cells") or []
    return CELL_COLUMNS, [{k: c.get(k) for k in CELL_COLUMNS} for c in cells]


def write_csv(an: CampaignAnalysis, out) -> int:
    """The per-point table as CSV (RFC 4180, a header row) on the text stream ``out``; the row count."""
    import csv

    columns, rows = point_table(an)
    w = csv.DictWriter(out, fieldnames=list(columns), extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: "" if v is None else v for k, v in r.items()})
    return len(rows)
