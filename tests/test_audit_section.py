"""The audit section on the pages: the baseline notebook renders it from the H200-built campaign (values
recorded, findings box leading with a failed preemption check, page self-contained), the compare page's
section function formats the same audit."""

from __future__ import annotations

import json
from pathlib import Path

from benchbook.pipeline.execute import render_page
from benchbook.pipeline.offline import scan_html
from h200_campaign import build

ROOT = Path(__file__).resolve().parents[1]


def _bump(path: Path, name: str, by: float) -> None:
    lines = []
    for line in path.read_text().splitlines():
        if line.startswith(name + "{"):
            k, v = line.rsplit(" ", 1)
            line = f"{k} {float(v) + by}"
        lines.append(line)
    path.write_text("\n".join(lines) + "\n")


def test_baseline_page_shows_the_audit_and_leads_with_the_failed_check(tmp_path):
    camp = build(tmp_path, phases=("batch", "noprefix"))
    _bump(camp / "runs" / "phases-noprefix" / "metrics" / "phase_long_2_after.prom", "vllm:num_preemptions_total", 2)
    html = tmp_path / "baseline.html"
    render_page(ROOT / "notebooks" / "baseline.ipynb", {"campaign": str(camp)}, html, title="h200")
    v = json.loads(html.with_suffix(".values.json").read_text())
    au = v["audit"]
    assert au["cached_prefill"] == "exclude" and len(au["windows"]) == 16
    cached = [w for w in au["windows"] if w["cached_share"] and w["cached_share"] >= 0.5]
    assert len(cached) == 6 and {w["run"] for w in cached} == {"phases-batch"}
    assert any(lim["kind"] == "prefill ceiling" for lim in au["limits"])
    box = v["findings_box"]
    fails = [line for line in box["lines"] if line["kind"] == "fail"]
    assert box["failed_checks"] >= 1 and fails[0]["text"].startswith("preemption: 2 preemption(s) in 1 window(s)")
    assert [x["label"] for x in fails[0]["links"]] == ["phases-noprefix: long repeat 2: 2"]  # the window, linked
    text = html.read_text()
    assert 'id="sec-audit"' in text and "Distance to the physical limit" in text
    assert "left out of the prefill figures" in text
    assert scan_html(text) == []


def test_compare_section_formats_the_results_runs(tmp_path):
    from benchbook.pages import compare_page

    camp = build(tmp_path, phases=(), results=(("serial", "conc1"), ("batch", "conc2")))
    page = compare_page.load([], campaign=str(camp))
    out = str(compare_page.audit(page))
    assert "Energy" in out and "J / output token" in out
    assert "64 %" in out  # the decode floor row of serial-conc1
    assert "×0.502: cannot tell" in out  # batch vs serial J/token: one run each, no measured spread
    # the checks table (this page's own checks do not carry them): the cause, then each run it is for
    assert "<td>prefix cache</td>" in out and "batch-conc2 (1 results run):" in out
    assert compare_page._audit_failures(page) == []
