"""inference-perf 0.7 reports written by the real tool against the real vLLM CPU engine
(tests/fixtures/tools/inference-perf-0.7.0, `python tests/make_tool_fixtures.py inference-perf`):
detected, read, and benchbook's figures from the per-request records agree with the tool's own
summary of the same run."""

import json
from pathlib import Path

import pytest

from benchbook.errors import InputError
from benchbook.ingest import formats

IP = Path(__file__).parent / "fixtures" / "tools" / "inference-perf-0.7.0"
SUMMARY = IP / "summary_lifecycle_metrics.json"
STAGE = IP / "stage_0_lifecycle_metrics.json"
PER_REQUEST = IP / "per_request_lifecycle_metrics.json"
PARTIAL = IP / "inference-perf.partial.stage_0.yaml"


def test_every_report_detected_with_its_version():
    assert formats.detect(SUMMARY) == "inference-perf-lifecycle"
    assert formats.detect(STAGE) == "inference-perf-lifecycle"
    assert formats.detect(PER_REQUEST) == "inference-perf-per-request"
    assert formats.detect(PARTIAL) == "llmd-benchmark-report"
    for p in (SUMMARY, PER_REQUEST):
        assert "inference-perf" in formats.read(p)[0].tool_version and "0.7" in formats.read(p)[0].tool_version


def test_stage_report_states_the_load():
    (st,) = formats.read(STAGE)
    assert st.config["max_concurrency"] == 4 and st.config["num_prompts"] == 30  # the config's stage
    assert st.config["window"] == "stage" and st.config["request_rate"] == float("inf")  # concurrent: no rate limit
    (whole,) = formats.read(SUMMARY)
    assert whole.config["window"] == "whole run"


def test_per_request_figures_match_the_tools_summary():
    (s,) = formats.read(SUMMARY)
    (pr,) = formats.read(PER_REQUEST)
    assert pr.requests.height == 30 and s.summary["completed"] + s.summary["failed"] == 30
    assert pr.summary["completed"] == s.summary["completed"]
    # same definitions for TTFT, E2E and pooled ITL: same numbers
    for k in ("mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms", "mean_e2el_ms", "p99_e2el_ms", "mean_itl_ms"):
        assert pr.summary[k] == pytest.approx(s.summary[k], rel=1e-9), k
    assert pr.summary["duration_s"] == pytest.approx(s.summary["duration_s"], rel=1e-9)
    # token totals: the per-request counts sum to what the tool's rates x duration give
    assert pr.summary["total_input_tokens"] == s.summary["total_input_tokens"] == 30 * 64
    assert pr.summary["total_output_tokens"] == s.summary["total_output_tokens"]
    # TPOT is the tool's per request ((last token - first token) / (n - 1), computed_metrics), as its summary
    for k in ("mean_tpot_ms", "median_tpot_ms", "p99_tpot_ms"):
        assert pr.summary[k] == pytest.approx(s.summary[k], rel=1e-9), k
    assert any("time_per_output_token" in n for n in pr.notes)
    # benchbook's definition, (e2e - ttft) / (n - 1), includes the last token's delivery: larger
    ok = pr.requests.filter(pr.requests["completion_tokens"] > 1)
    ours = ((ok["e2e_s"] - ok["ttft_s"]) / (ok["completion_tokens"] - 1)).mean() * 1000
    assert ours > s.summary["mean_tpot_ms"] and ours == pytest.approx(s.summary["mean_tpot_ms"], rel=0.05)


def test_per_request_views_use_relative_start_times():
    from benchbook.analysis import per_request

    (pr,) = formats.read(PER_REQUEST)
    v = per_request.analyse(pr, run_id="ip")
    assert v.timeline_axis == "start" and v.timeline["x"].min() == 0.0
    assert v.shares["successful"] == 30 and v.distributions["itl"].source.startswith("every gap")


def test_partial_benchmark_report_is_read():
    (br,) = formats.read(PARTIAL)
    assert br.tool_version == "llm-d Benchmark Report 0.2.1"
    (s,) = formats.read(SUMMARY)
    assert br.summary["completed"] == s.summary["completed"]
    assert br.summary["mean_ttft_ms"] == pytest.approx(s.summary["mean_ttft_ms"], rel=1e-6)
    assert any("deployment" in n for n in br.notes)  # no scenario.stack in inference-perf's slice


def test_bad_layouts_name_place_and_keys(tmp_path):
    doc = json.loads(SUMMARY.read_text())
    del doc["successes"]["count"]
    p = tmp_path / "s.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(InputError, match=r"\$\.successes.*no 'count': found keys"):
        formats.read(p)
    rows = json.loads(PER_REQUEST.read_text())
    rows[3]["start_time"] = "soon"
    q = tmp_path / "r.json"
    q.write_text(json.dumps(rows))
    with pytest.raises(InputError, match=r"\$\[3\]\.start_time"):
        formats.read(q)


def _server_metrics_doc():
    """summary_prometheus_metrics.json as inference-perf 0.7.0's summarize_prometheus_metrics writes it
    (from its source: no Prometheus server ran here), vLLM histograms in seconds."""

    def h(mean):
        return {"mean": mean, "median": mean * 0.9, "p90": mean * 1.5, "p99": mean * 2}

    return {
        "benchmark_time_seconds": 0.0,
        "load_summary": {},
        "failures": {},
        "successes": {
            "count": 30,
            "rate": 1.8,
            "prompt_len": {"mean": 64.0, "rate": 115.2},
            "output_len": {"mean": 32.0, "rate": 57.6},
            "queue_len": {"mean": 0.4},
            "request_latency": h(2.0),
            "time_to_first_token": h(0.2),
            "time_per_output_token": h(0.05),
            "kv_cache_usage_percentage": h(0.01),
            "num_preemptions_total": {"mean": 0},
            "prefix_cache_hit_percent": {"mean": 0.0},
            "inter_token_latency": h(0.05),
            "num_requests_running": {"mean": 3.6},
            "request_queue_time": h(0.01),
            "request_inference_time": h(1.99),
            "request_prefill_time": h(0.15),
            "request_decode_time": h(1.84),
            "request_success_count": 30,
        },
    }


def test_server_metrics_report_is_not_a_client_report(tmp_path):
    p = tmp_path / "summary_prometheus_metrics.json"
    p.write_text(json.dumps(_server_metrics_doc()))
    assert formats.detect(p) == "inference-perf-server-metrics"  # same outer keys as a lifecycle report
    (r,) = formats.read(p)
    s = r.summary
    assert (s["completed"], s["request_throughput"]) == (30, 1.8)
    assert s["mean_prefill_ms"] == pytest.approx(150.0) and s["mean_decode_ms"] == pytest.approx(1840.0)
    assert s["p99_queue_ms"] == pytest.approx(20.0) and s["mean_ttft_ms"] == pytest.approx(200.0)
    assert s["duration_s"] is None and "engine-side" in r.notes[0]
    assert r.tool_version.startswith("inference-perf server metrics")


def test_identity_matches_vllm_bench_serve_of_the_same_shape():
    """model, lengths and concurrency come from config.yaml beside the report, so inference-perf's run
    and `vllm bench serve`'s run of the same load shape against the same engine agree on them."""
    from benchbook.analysis import identity

    ip = identity.read_identity(formats.read(STAGE)[0])
    vl = identity.read_identity(formats.read(IP.parent / "vllm-0.32.0+cpu" / "bench_serve.json")[0])
    differ = {d.key for d in identity.differences(ip, vl)}
    assert not differ & {"model", "input_len", "output_len", "max_concurrency", "request_rate", "num_prompts"}, differ
    assert ip.get("model").value == "tiny-llama"


def test_one_runs_reports_are_one_run(tmp_path):
    """The summary, stage, per-request reports and the Benchmark Report slice of one inference-perf run
    agree in identity and figures: one duplicate set, the per-request copy kept (it has the records).
    Before: the slice's uid was a configuration label and its duration the wall time (72.466 s against
    the rates' 70.73 s), the per-request TPOT benchbook's own: 4 runs in 2 configurations."""
    from benchbook.analysis import identity as ident

    runs = [formats.read(p)[0] for p in (PARTIAL, PER_REQUEST, STAGE, SUMMARY)]
    (dup,) = ident.find_duplicates(runs)
    assert dup.members == [0, 1, 2, 3] and dup.kept == 1
    br = runs[0]
    assert br.config["model"] == "tiny-llama" and br.config["random_output_len"] == 32  # from config.yaml beside
    assert br.summary["duration_s"] == pytest.approx(runs[3].summary["duration_s"], rel=1e-9)
    assert any("72.466 s" in n for n in br.notes)  # the wall time it did not use, said


def test_init_on_an_output_folder_makes_one_run_and_the_compare_page(tmp_path, capsys):
    import shutil

    from benchbook.commands.cli import main
    from benchbook.pipeline.campaigns import render_campaign

    folder = tmp_path / "ip"
    shutil.copytree(IP, folder)
    camp = tmp_path / "camp"
    assert main(["init", "-q", str(camp), str(folder)]) == 0
    manifest = json.loads((camp / "campaign.json").read_text())
    assert len(manifest["arms"]) == 1 and len(manifest["runs"]) == 1
    assert not any("configurations" in t for t in manifest["todo"])
    res = render_campaign(camp, tmp_path / "out", pages=["compare"])
    assert res.rendered and not res.failed
    v = json.loads((tmp_path / "out" / "compare.values.json").read_text())
    (dup,) = v["duplicates"]
    assert len(dup["files"]) == 4 and len(v["runs"]) == 1
    # bad input in the folder: exit 2, one line naming the file, the place and the reason
    doc = json.loads(SUMMARY.read_text())
    doc["successes"] = 5
    (folder / "summary_lifecycle_metrics.json").write_text(json.dumps(doc))
    capsys.readouterr()
    assert main(["init", "-q", str(tmp_path / "bad"), str(folder)]) == 2
    err = capsys.readouterr().err
    assert "summary_lifecycle_metrics.json" in err and "$.successes" in err and "expected an object" in err
    assert not (tmp_path / "bad").exists()
