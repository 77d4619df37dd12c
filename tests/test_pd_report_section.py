"""The compare page's PD deployment section (pages.pd_report_section): formats what
analysis.pd_report decided; the rendered page records the same figures."""

import json
from pathlib import Path

from benchbook.analysis.pd_report import campaign_reports
from benchbook.commands.cli import main
from benchbook.ingest import formats
from benchbook.pages import pd_report_section

BR = Path(__file__).parent / "fixtures" / "tools" / "llmd-benchmark-report-0.2.1" / "pd_report.yaml"
SGL = Path(__file__).parent / "fixtures" / "tools" / "sglang-benchmark-serving-0.5.23" / "steady_state.jsonl"


def test_section_tables_and_checks():
    runs = [("br", formats.read(BR)[0]), ("sgl", formats.read(SGL)[0])]
    html = str(pd_report_section.section(campaign_reports(runs, 25.0), link_gb_s=25.0))
    assert 'id="bb-pd-deployment"' in html and 'id="bb-pd-deployment-checks"' in html
    assert "4 + 4 = 8" in html and "5,000" in html and "1,250" in html and "131.1 MB in 4.00 ms" in html
    assert "above the link" in html  # 32.8 GB/s over a 25 GB/s link: a failed check, shown
    assert (
        str(pd_report_section.section(campaign_reports([("sgl", formats.read(SGL)[0])]))) == ""
    )  # no PD report: no section


def test_compare_page_records_the_pd_figures(tmp_path):
    import yaml

    doc = yaml.safe_load(BR.read_text())
    doc["version"], doc["results"]["energy"] = "0.3", {"joules": 1}
    doc["run"]["uid"] = "another-run"  # not the same run read twice (that would count once)
    doc["results"]["request_performance"]["aggregate"]["latency"]["time_to_first_token"]["mean"] = 0.26
    newer = tmp_path / "newer" / "br.yaml"
    newer.parent.mkdir()
    newer.write_text(yaml.safe_dump(doc))
    out = tmp_path / "out"
    assert main(["render", "--compare", str(BR), str(SGL), str(newer), "--out", str(out)]) == 0
    values = json.loads((out / "compare.values.json").read_text())
    r, r_newer = values["pd_report"]
    assert r_newer["prefill_gpus"] == 4  # the newer report is read where its keys match ...
    html = (out / "compare.html").read_text()
    assert (
        "Benchmark Report 0.3 (newer than known 0.2.1" in html and "Not read: $.results.energy" in html
    )  # ... and says so
    assert (r["prefill_gpus"], r["decode_gpus"], r["output_tok_s_per_decode_gpu"]) == (4, 4, 1250.0)
    assert {c["name"]: c["status"] for c in r["checks"]} == {
        "PD path exercised": "pass",
        "KV transfer rate within the link": "warn",  # no link rate given on the page
    }
    assert 'id="bb-pd-deployment"' in html
