"""``benchbook summary --csv``: the per-point table a GuideLLM or AIPerf user opens in a spreadsheet —
one row per benchmark run for a campaign of result files, one row per figure otherwise."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from benchbook.commands.cli import main

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ROOT / "tests" / "fixtures" / "tools"


def _csv(capsys, campaign: Path) -> list[dict[str, str]]:
    assert main(["summary", str(campaign), "--csv"]) == 0
    out = capsys.readouterr().out
    return list(csv.DictReader(io.StringIO(out)))


def test_a_results_campaign_gives_a_row_per_benchmark_run(capsys):
    camp = ROOT / "data" / "er0080-opt125m"
    rows = _csv(capsys, camp)
    assert [r["run"] for r in rows] == ["bench-serve", "sweep-run0", "sweep-run1"]  # the duplicate counted once
    raw = json.loads((camp / "runs" / "bench-serve" / "er0080_bench_serve_v0.25.1.json").read_text())
    row = rows[0]
    assert float(row["output_throughput"]) == raw["output_throughput"]  # unrounded, as the file says
    assert float(row["median_ttft_ms"]) == raw["median_ttft_ms"] and float(row["p99_tpot_ms"]) == raw["p99_tpot_ms"]
    assert int(row["completed"]) == raw["completed"] and row["request_rate"] == "inf"
    assert row["max_concurrency"] == "2" and row["load"] == "concurrency 2"
    # 8 requests in 1.5 s: shown, never judged, and the spreadsheet says why
    assert row["valid"] == "False" and "minimum duration" in row["failed_gates"]
    assert row["mean_e2el_ms"] == ""  # the file does not state it: empty, not 0


def test_a_tool_file_brought_in_by_init(tmp_path, capsys):
    camp = tmp_path / "aiperf"
    assert main(["init", "-q", str(camp), str(TOOLS / "aiperf-0.13.0" / "profile_export_aiperf.json")]) == 0
    (row,) = _csv(capsys, camp)
    assert row["format"].startswith("aiperf") and float(row["output_throughput"]) > 0
    s = json.loads((camp / "campaign.json").read_text())
    assert row["run"] == s["runs"][0]["id"]


def test_a_campaign_without_result_files_gives_its_cells(capsys):
    camp = ROOT / "data" / "dsv4-163"
    rows = _csv(capsys, camp)
    assert main(["summary", str(camp), "--json"]) == 0
    cells = json.loads(capsys.readouterr().out)["cells"]
    assert len(rows) == len(cells)
    first = rows[0]
    assert (first["arm"], first["metric"], first["prompt_class"]) == (cells[0]["arm"], cells[0]["metric"], "short")
    assert float(first["median"]) == cells[0]["median"] and int(first["n"]) == cells[0]["n"]
    ladder = next(r for r in rows if r["metric"] == "ladder_tok_s")
    assert ladder["concurrency"] in {"2", "4", "8"}


def test_csv_and_json_are_one_or_the_other(capsys):
    import pytest

    with pytest.raises(SystemExit) as e:
        main(["summary", str(ROOT / "data" / "er0080-opt125m"), "--csv", "--json"])
    assert e.value.code == 2
    assert main(["summary", str(ROOT / "data" / "no-such-campaign"), "--csv"]) == 2
    assert "no such campaign folder" in capsys.readouterr().err
