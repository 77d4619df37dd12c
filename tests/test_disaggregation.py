"""PD analyses: the seed's figures from the bundled transcription, synthetic campaigns, bad input."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from benchbook.analysis.disaggregation import (
    INVALID_WINDOW,
    UNREPLICATED,
    acceptance_length,
    analyse,
    gain,
    lifecycle,
    per_card,
    window_validity,
)
from benchbook.errors import InputError
from benchbook.ingest.pd_runs import SummaryWindow, load_pd_campaign, parse_prefill_log, summary_table

BUNDLED = Path(__file__).resolve().parents[1] / "data" / "pd-prefill-cap"


@pytest.fixture(scope="module")
def seed():
    return analyse(BUNDLED)


# ------------------------------------------------------------------ formulas, by hand


def test_formulas():
    assert per_card(2659.84, 16) == pytest.approx(166.24)
    assert gain(216.5483, 166.24) * 100 == pytest.approx(30.26, abs=0.005)
    assert acceptance_length(655360, 114009) == pytest.approx(5.7483, abs=5e-5)
    assert acceptance_length(655360, 113988) == pytest.approx(5.7494, abs=5e-5)
    lc = lifecycle(34.0264, 42.9285)
    assert lc["ttft_share"] == pytest.approx(0.792630, abs=1e-6)  # 34.0264 / 42.9285
    assert lc["generating_s"] == pytest.approx(8.9021)
    with pytest.raises(ValueError):
        per_card(1.0, 0)


# ------------------------------------------------------------------ the bundled seed figures


def test_per_card_whole_and_gain(seed):
    assert seed.cell("cap1-n640", "output_tok_s_per_card", "whole")["median"] == pytest.approx(166.24)
    assert seed.cell("cap2-n640", "output_tok_s_per_card", "whole")["median"] == pytest.approx(216.5483)
    c = seed.comparison("output_tok_s_per_card", "whole", "640 requests")
    assert c["change_pct"] == pytest.approx(30.26, abs=0.005)
    assert (c["baseline"], c["candidate"]) == ("cap1", "cap2")
    assert c["verdict"] == UNREPLICATED  # one run per arm: never a bare ratio
    assert "derived" in c["reason"]


def test_native_gain_and_cap2_native(seed):
    assert seed.cell("cap2-n640", "output_tok_s_per_card", "native")["median"] == pytest.approx(236.8268)
    c = seed.comparison("output_tok_s_per_card", "native", "640 requests")
    assert c["change_pct"] == pytest.approx(32.27, abs=0.005)
    # cap1 native is derived from the published percentage, and is marked so
    assert seed.cell("cap1-n640", "output_tok_s_per_card", "native")["source"] == "derived"


def test_littles_law_products(seed):
    assert seed.cell("cap1-n640", "littles_lambda_w", "whole")["median"] == pytest.approx(111.507, abs=5e-4)
    assert seed.cell("cap2-n640", "littles_lambda_w", "whole")["median"] == pytest.approx(110.859, abs=1.5e-3)
    chk = seed.check("Little's law: cap1-n640 whole")
    assert chk["status"] == "warn" and "111.507" in chk["detail"] and "limit 128" in chk["detail"]
    # the seed records no Concurrency: nothing independent to hold λ × W against — not judged, not a pass
    assert "not judged: no concurrency measured apart from λ and W" in chk["detail"]


def test_acceptance_lengths(seed):
    assert seed.cell("cap1-n640", "acceptance_length", "whole")["median"] == pytest.approx(5.7483, abs=5e-5)
    assert seed.cell("cap2-n640", "acceptance_length", "whole")["median"] == pytest.approx(5.7494, abs=5e-5)
    assert seed.check("acceptance length: cap1-n640")["status"] == "pass"


def test_lifecycle_cells(seed):
    share = seed.cell("cap1-n640", "ttft_share", "whole")
    assert share["median"] == pytest.approx(34.0264 / 42.9285)
    assert share["source"] == "recorded"
    assert seed.cell("cap1-n640", "mean_ttft_s", "whole")["median"] == pytest.approx(34.0264)
    assert seed.cell("cap1-n640", "mean_e2e_s", "whole")["median"] == pytest.approx(42.9285)
    assert seed.cell("cap1-n640", "request_rate", "whole")["median"] == pytest.approx(2.5975)
    # cap2's TTFT is printed only as "about 23 s": the share inherits that mark
    assert seed.cell("cap2-n640", "ttft_share", "whole")["source"] == "approximate"


def test_cells_state_prompt_generation_environment(seed):
    c = seed.cell("cap1-n640", "output_tok_s_per_card", "whole")
    assert (c["prompt_tokens"], c["generated_tokens"], c["environment"], c["n"]) == (16388, 1024, "default", 1)
    assert c["unit"] == "token/s/card"
    assert c["min"] == c["max"] == c["median"]


def test_320_screen(seed):
    assert seed.cell("cap1-n320", "output_tok_s_per_card", "whole")["median"] == pytest.approx(158.8958)
    assert seed.cell("cap2-n320", "output_tok_s_per_card", "whole")["median"] == pytest.approx(199.4288)
    assert seed.cell("cap2-n320", "output_tok_s_per_card", "native")["median"] == pytest.approx(239.9814)
    c = seed.comparison("output_tok_s_per_card", "whole", "320 requests")
    assert c["change_pct"] == pytest.approx(25.51, abs=0.005)
    chk = seed.check("native window validity: cap2-n320")
    assert chk["status"] == "fail" and "50.67 s is shorter than 60 s" in chk["detail"]
    # the 640 native windows pass on the published "over 60 s, over 128 requests" statement
    ok = seed.check("native window validity: cap1-n640")
    assert ok["status"] == "pass" and "published lower bound" in ok["detail"]


def test_screen_and_confirmation_never_compared(seed):
    for c in seed.comparisons:
        assert ("320 requests" in c["context"]) != ("640 requests" in c["context"])
    assert len([c for c in seed.comparisons if "320 requests" in c["context"]]) == 1  # whole only


def test_reported_batch_counts_are_labelled(seed):
    (bc,) = seed.batch_composition
    assert bc["kind"] == "reported counts (no log lines)"
    assert (bc["reports"], bc["multi_request_batches"], bc["single_request_tail_batches"]) == (458, 217, 0)


def test_caveats_are_decided_by_the_analysis(seed):
    """The PD page's "Caveats from the inputs" come from the analysis (disaggregation.caveats), one
    sentence per thing the bundled inputs lack or state loosely."""
    cav = seed.caveats
    assert cav[0] == "Provenance is 'transcribed': the figures were not measured by this tool."
    assert "Prefill batch counts are reported counts, no log lines: cap2-n320: 458 reports, 217 multi-request." in cav
    assert "One run per arm and load: every gain is unreplicated and the run-to-run spread is unmeasured." in cav
    assert [c for c in cav if c.startswith("cap2-n320's native window fails the window rule")]
    assert sum("passes only on a published lower bound" in c for c in cav) == 2
    assert "10 figure(s) are derived and 2 approximate" in " ".join(cav)


def test_admission_table(seed):
    rows = {(r["requests"], r["max_requests"]): r for r in seed.admission}
    assert rows[(320, 1)]["batches"] == 960 and rows[(320, 1)]["arms"] == "cap1"
    assert rows[(320, 2)]["batches"] == 645 and rows[(320, 2)]["arms"] == "cap2"
    assert rows[(640, 1)]["batches"] == 1920


def test_summary_table_marks_sources():
    camp = load_pd_campaign(BUNDLED)
    df = summary_table(camp)
    row = df.filter((df["run"] == "cap2-n320") & (df["metric"] == "Benchmark Duration"))
    assert row["value"].to_list() == [50670.0] and row["source"].to_list() == ["approximate"]
    assert camp.arms["cap1"].cards == 16 and camp.arms["cap1"].chunk_size == 8192


def test_report_is_json_serialisable_and_deterministic(seed):
    a = json.dumps(seed.as_dict(), sort_keys=True)
    assert a == json.dumps(analyse(BUNDLED).as_dict(), sort_keys=True)


# ------------------------------------------------------------------ window validity


def _w(duration_ms=None, n=None, **kw):
    common = {}
    if duration_ms is not None:
        common["Benchmark Duration"] = duration_ms
    if n is not None:
        common["Success Requests"] = n
    return SummaryWindow("native", {}, common, **kw)


def test_window_validity_thresholds():
    assert window_validity(_w(61000, 129), 128).status == "pass"
    assert window_validity(_w(60000, 129), 128).status == "pass"  # at least 60 s
    assert window_validity(_w(61000, 128), 128).status == "fail"  # must be MORE than C
    assert window_validity(_w(50670, 200), 128).status == "fail"
    assert window_validity(_w(None, 200), 128).status == "warn"
    # thresholds are parameters
    assert window_validity(_w(50670, 200), 128, min_duration_s=45).status == "pass"
    assert window_validity(_w(61000, 100), 128, min_requests=64).status == "pass"


# ------------------------------------------------------------------ synthetic campaigns

MANIFEST = {
    "format": "benchbook.campaign/1",
    "kind": "pd",
    "title": "synthetic PD",
    "question": "q?",
    "date": "2026-01-01",
    "provenance": "synthetic",
    "engine": {"name": "sglang", "profile": "sglang"},
    "environments": {"default": {"variables": {}}},
    "prompt_classes": {"p": {"tokens": 300}},
    "generation_tokens": 4,
    "arms": {
        "a": {
            "mode": "pd",
            "environment": "default",
            "role": "baseline",
            "prefill_cards": 1,
            "decode_cards": 1,
            "scheduler": {"global_chunked_prefill_size": 512, "dp": 2, "page_size": 128, "prefill_max_requests": 1},
        },
    },
    "runs": [
        {
            "id": "r1",
            "arm": "a",
            "harness": "pd",
            "path": "runs/r1",
            "load": {"requests": 4, "concurrency": 4, "prompt_class": "p"},
        }
    ],
}
# r0 0..10 ok, r1 2..6 ok, r2 4..12 ok, r3 5..7 failed; in flight: 24 s of busy time over 12 s = 2.0
RECORDS = [
    {"start": 0, "first_token": 4, "end": 10, "success": True, "output_tokens": 4},
    {"start": 2, "first_token": 3, "end": 6, "success": True, "output_tokens": 4},
    {"start": 4, "first_token": 8, "end": 12, "success": True, "output_tokens": 4},
    {"start": 5, "first_token": None, "end": 7, "success": False},
]
SUMMARY = {
    "format": "benchbook.pd/1",
    "run": "r1",
    "windows": {
        "whole": {
            "metrics": {"E2EL": {"Average": 22000 / 3, "N": 3}, "TTFT": {"Average": 3000, "N": 3}},
            "common": {
                "Benchmark Duration": 12000,
                "Total Requests": 4,
                "Failed Requests": 1,
                "Success Requests": 3,
                "Concurrency": 22 / 12,
                "Max Concurrency": 4,
                "Request Throughput": 0.25,
                "Total Generated Tokens": 12,
                "Output Token Throughput": 1.0,
            },
        }
    },
    "requests": "pd_requests.json",
    "prefill_log": "prefill.log",
}
LOG = """\
[2026-01-01 00:00:00 DP0 TP0] Prefill batch. #new-seq: 1, #new-token: 256, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 3
[2026-01-01 00:00:01 DP1 TP0] Prefill batch. #new-seq: 2, #new-token: 300, #cached-token: 0, #queue-req: 1
[2026-01-01 00:00:01 DP0 TP0] Decode batch. #running-req: 2, #token: 600
[2026-01-01 00:00:02] Prefill batch, #new-seq: 1, #new-token: 44, #cached-token: 0, input throughput (token/s): 12.5
[2026-01-01 00:00:03 DP0 TP0] Prefill batch. #new-token: 9
"""


def make_campaign(tmp_path, manifest=None, summary=None, records=None, log=LOG):
    root = tmp_path / "camp"
    run = root / "runs" / "r1"
    run.mkdir(parents=True)
    (root / "campaign.json").write_text(json.dumps(manifest or MANIFEST))
    (run / "pd.json").write_text(json.dumps(summary or SUMMARY))
    (run / "pd_requests.json").write_text(
        json.dumps({"format": "benchbook.pd_requests/1", "requests": records or RECORDS})
    )
    (run / "prefill.log").write_text(log)
    return root


def test_synthetic_records_in_flight_by_hand(tmp_path):
    rep = analyse(make_campaign(tmp_path))
    measured = [c for c in rep.cells if c["metric"].startswith("time-weighted in-flight")]
    assert measured[0]["median"] == pytest.approx(2.0)
    # the summary's λW = 0.25 × 22/3 = 1.8333 agrees with its own Concurrency (λ × W by construction:
    # not judged)...
    assert rep.check("Little's law: r1 whole")["status"] == "warn"
    # ...but the failed request held a slot: measured 2.0 vs 1.8333, gap 8.3 % -> warn
    chk = rep.check("Little's law, measured: r1 whole")
    assert chk["status"] == "warn" and "L = 2.000" in chk["detail"]
    assert any(e["sample"] == "$.requests[3]" and "failed request" in e["reason"] for e in rep.exclusions)
    # lifecycle from records: TTFT (4 + 1 + 4) / 3 = 3, E2E 22/3
    share = [c for c in rep.cells if c["key"] == "ttft_share" and c["window"] == "records"][0]
    assert share["median"] == pytest.approx(3 / (22 / 3))


def test_littles_law_violation_in_inputs_fails(tmp_path):
    bad = copy.deepcopy(SUMMARY)
    bad["windows"]["whole"]["common"]["Concurrency"] = 3.0  # λW is 1.8333: not one window's figures
    rep = analyse(make_campaign(tmp_path, summary=bad))
    chk = rep.check("Little's law: r1 whole")
    assert chk["status"] == "fail" and "gap 38.89 %" in chk["detail"]


def test_records_contradicting_summary_fail(tmp_path):
    recs = copy.deepcopy(RECORDS)
    recs[0]["end"] = 12  # r0 now 0..12: busy 26 s / 12 s = 2.1667 vs summary λW 1.8333 (gap 15.4 %)
    rep = analyse(make_campaign(tmp_path, records=recs))
    assert rep.check("Little's law, measured: r1 whole")["status"] == "fail"


def test_batch_composition_from_log(tmp_path):
    rep = analyse(make_campaign(tmp_path))
    (bc,) = rep.batch_composition
    assert bc["kind"] == "counted from log lines"
    assert bc["reports"] == 3
    assert bc["requests_per_batch"] == {1: 2, 2: 1}
    assert bc["multi_request_batches"] == 1
    assert bc["tail_only_batches"] == 1  # 44 < 128
    assert bc["single_request_tail_batches"] == 1
    assert any(e["sample"] == "line 5" and "#new-seq" in e["reason"] for e in rep.exclusions)


def test_parse_prefill_log_tolerant():
    df, excl = parse_prefill_log(LOG)
    assert df["line"].to_list() == [1, 2, 4]
    assert df["dp"].to_list() == [0, 1, None]
    assert df["new_token"].to_list() == [256, 300, 44]
    assert "queue_req=3" in df["fields"][0]
    assert [e.sample for e in excl] == ["line 5"]


def test_synthetic_admission_uses_arm_settings(tmp_path):
    rep = analyse(make_campaign(tmp_path))
    row = [r for r in rep.admission if r["arms"] == "a"][0]
    # chunk 512/2 = 256, page 128, cap 1: 300 -> 256 + 44, four prompts -> 8 batches
    assert (row["chunk_size"], row["batches"], row["tail_only_batches"]) == (256, 8, 4)


# ------------------------------------------------------------------ bad input names file and path


def _expect(tmp_path, where, fragment, **kw):
    with pytest.raises(InputError) as e:
        analyse(make_campaign(tmp_path, **kw))
    assert e.value.location == where, str(e.value)
    assert fragment in e.value.reason, str(e.value)
    return e.value


def test_missing_card_counts(tmp_path):
    m = copy.deepcopy(MANIFEST)
    del m["arms"]["a"]["decode_cards"]
    err = _expect(tmp_path, "$.arms.a", "decode_cards", manifest=m)
    assert err.file.endswith("campaign.json")


def test_dp_does_not_divide_chunk(tmp_path):
    m = copy.deepcopy(MANIFEST)
    m["arms"]["a"]["scheduler"]["dp"] = 3
    _expect(tmp_path, "$.arms.a.scheduler.global_chunked_prefill_size", "not divisible by dp 3", manifest=m)


def test_bad_summary_value(tmp_path):
    s = copy.deepcopy(SUMMARY)
    s["windows"]["whole"]["metrics"]["TTFT"]["Average"] = "fast"
    err = _expect(tmp_path, "$.windows.whole.metrics.TTFT.Average", "is not of type 'number'", summary=s)
    assert err.file.endswith("pd.json")


def test_min_above_max(tmp_path):
    s = copy.deepcopy(SUMMARY)
    s["windows"]["whole"]["metrics"]["TTFT"].update({"Min": 5000, "Max": 4000})
    _expect(tmp_path, "$.windows.whole.metrics.TTFT", "Min 5000 exceeds Max 4000", summary=s)


def test_unknown_window_and_version(tmp_path):
    s = copy.deepcopy(SUMMARY)
    s["windows"]["stable"] = s["windows"]["whole"]
    _expect(tmp_path, "$.windows", "stable", summary=s)


def test_unsupported_version(tmp_path):
    s = copy.deepcopy(SUMMARY)
    s["format"] = "benchbook.pd/2"
    _expect(tmp_path, "$.format", "unsupported version", summary=s)


def test_derived_annotation_must_point_at_a_value(tmp_path):
    s = copy.deepcopy(SUMMARY)
    s["derived"] = {"$.windows.native.common.Concurrency": "made up"}
    _expect(tmp_path, "$.windows.native.common.Concurrency", "no value at that JSON path", summary=s)


def test_bad_record(tmp_path):
    recs = copy.deepcopy(RECORDS)
    recs[1]["first_token"] = 9  # after its end (6)
    err = _expect(tmp_path, "$.requests[1].first_token", "outside [start 2.0, end 6.0]", records=recs)
    assert err.file.endswith("pd_requests.json")


def test_not_a_pd_campaign(tmp_path):
    m = copy.deepcopy(MANIFEST)
    del m["kind"]
    m["arms"]["a"]["mode"] = "batch"
    _expect(tmp_path, "$.kind", "not a PD campaign", manifest=m)


def test_short_native_window_makes_comparison_not_a_result(tmp_path):
    m = copy.deepcopy(MANIFEST)
    m["arms"]["b"] = copy.deepcopy(m["arms"]["a"]) | {"role": "candidate"}
    m["runs"].append(m["runs"][0] | {"id": "r2", "arm": "b", "path": "runs/r2"})
    s = copy.deepcopy(SUMMARY)
    s["windows"]["native"] = {
        "common": {
            "Benchmark Duration": 30000,
            "Success Requests": 10,
            "Max Concurrency": 4,
            "Output Token Throughput": 1.0,
        }
    }
    root = make_campaign(tmp_path, manifest=m, summary=s)
    (root / "runs" / "r2").mkdir()
    s2 = copy.deepcopy(s)
    s2["windows"]["native"]["common"]["Output Token Throughput"] = 1.5
    del s2["requests"], s2["prefill_log"]
    (root / "runs" / "r2" / "pd.json").write_text(json.dumps(s2))
    rep = analyse(root)
    c = rep.comparison("output_tok_s_per_card", "native")
    assert c["change_pct"] == pytest.approx(50.0)
    assert c["verdict"] == INVALID_WINDOW and "30.00 s is shorter than 60 s" in c["reason"]
    assert rep.comparison("output_tok_s_per_card", "whole")["verdict"] == UNREPLICATED
    # a supplied noise threshold turns n=1 comparisons into verdicts (and says it was supplied)
    rep2 = analyse(root, noise_pct=5)
    assert rep2.comparison("output_tok_s_per_card", "whole")["verdict"] == "within noise — not a result"


def test_bundled_derived_values_recompute():
    import runpy

    ns = runpy.run_path(str(BUNDLED / "check.py"))
    assert ns["main"]() == 0


def test_the_batch_seam_is_replayed_by_the_analysis_and_in_the_summary():
    """The admission simulation behind the PD page's seam picture runs in the analysis, and
    ``summary --json`` carries it (it used to run inside the page)."""
    from benchbook.commands.summary import build

    seam = build(BUNDLED)["pd"]["seam"]
    assert seam["cut"] == "8192 + 8192 + 4" and seam["prompt_tokens"] == 16388
    cap1, cap2 = seam["sequences"]["cap1"], seam["sequences"]["cap2"]
    assert [p["new_tokens"] for p in cap1[2]] == [4]  # at cap 1 the tail runs alone
    assert [(p["request"], p["new_tokens"]) for p in cap2[2]] == [("A", 4), ("B", 8064)]  # 8192 − one 128 page


def test_pages_read_typed_judgements_not_their_words():
    """No page module decides anything from a verdict's or a check's words."""
    import re

    pages = Path(__file__).resolve().parents[1] / "lib" / "benchbook" / "pages"
    bad = re.compile(r"""\[["'](verdict|name)["']\]\.(startswith|split)|in \w+\[["']verdict["']\]""")
    hits = [(p.name, m.group(0)) for p in pages.glob("*.py") for m in bad.finditer(p.read_text())]
    assert hits == []
