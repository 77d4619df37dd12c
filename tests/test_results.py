"""Results runs (harness "results"): the campaign format, the compare page rendered from a campaign
by `render --all`, and reconciliation against the engine window with the model checked first."""

import json
import shutil
from pathlib import Path

import pytest

from benchbook.analysis import results
from benchbook.commands.cli import main
from benchbook.errors import InputError
from benchbook.ingest.campaign import load_campaign
from benchbook.pipeline.offline import scan
from benchbook.pipeline.plan import pages_for

FIX = Path(__file__).resolve().parent / "fixtures"
CAPS = FIX / "vllm_captures"
BUNDLED = Path(__file__).resolve().parents[1] / "data" / "er0080-opt125m"
BENCH = FIX / "realdata" / "vllm_bench_serving" / "er0080_bench_serve_v0.25.1.json"  # 8 requests, facebook/opt-125m

# A vLLM bench result for the one request of one_request.prom (hand-written, served model name):
# 1 completed, 32 output tokens, mean TTFT 60 ms (engine 50 ms), mean E2E 500 ms (engine 450 ms).
ONE = {
    "date": "20260816-170000",
    "backend": "vllm",
    "model_id": "opt-125m-tp2",
    "tokenizer_id": "facebook/opt-125m",
    "num_prompts": 1,
    "request_rate": "inf",
    "max_concurrency": 1,
    "duration": 0.5,
    "completed": 1,
    "failed": 0,
    "total_input_tokens": 100,
    "total_output_tokens": 32,
    "request_throughput": 2.0,
    "output_throughput": 64.0,
    "total_token_throughput": 264.0,
    "mean_ttft_ms": 60.0,
    "median_ttft_ms": 60.0,
    "p99_ttft_ms": 60.0,
    "mean_tpot_ms": 14.0,
    "median_tpot_ms": 14.0,
    "p99_tpot_ms": 14.0,
    "mean_itl_ms": 14.0,
    "median_itl_ms": 14.0,
    "p99_itl_ms": 14.0,
    "mean_e2el_ms": 500.0,
    "median_e2el_ms": 500.0,
    "p99_e2el_ms": 500.0,
}


def make_campaign(root: Path, runs: dict[str, tuple[Path | dict, str | None, str | None]], **extra) -> Path:
    """A results-only campaign: run id -> (bench file or document, before capture, after capture)."""
    entries = []
    for rid, (bench, before, after) in runs.items():
        d = root / "runs" / rid
        d.mkdir(parents=True)
        if isinstance(bench, dict):
            (d / "bench.json").write_text(json.dumps(bench))
        else:
            shutil.copyfile(bench, d / "bench.json")
        doc = {"format": "benchbook.results/1", "files": ["bench.json"]}
        if before:
            (d / "metrics").mkdir()
            shutil.copyfile(CAPS / before, d / "metrics" / "before.prom")
            shutil.copyfile(CAPS / after, d / "metrics" / "after.prom")
            doc |= {"metrics_before": "metrics/before.prom", "metrics_after": "metrics/after.prom"}
        (d / "results.json").write_text(json.dumps(doc))
        entries.append({"id": rid, "harness": "results", "path": f"runs/{rid}"})
    manifest = {
        "format": "benchbook.campaign/1",
        "title": "results campaign",
        "question": "does the engine agree with the client?",
        "date": "2026-08-16",
        "provenance": "measured",
        "runs": entries,
        **extra,
    }
    (root / "campaign.json").write_text(json.dumps(manifest))
    return root


def engine_checks(camp: Path) -> dict[str, dict[str, str]]:
    inputs = results.campaign_inputs(camp)
    return {rid: {c.name: c.status for c in checks} for rid, checks in inputs.engine_checks()}


def test_results_only_manifest_needs_no_engine_arms_or_environments(tmp_path):
    camp = load_campaign(make_campaign(tmp_path / "c", {"bench": (BENCH, None, None)}))
    (rr,) = camp.results_runs
    assert rr.files == [tmp_path / "c" / "runs" / "bench" / "bench.json"] and not rr.has_engine
    assert camp.run("bench").arm == "bench"  # its own configuration
    assert pages_for(camp.manifest) == ["compare"]


def test_another_models_window_is_not_comparable(tmp_path):
    # The bug: 600 opt-125m-tp2 requests "passed" mean TTFT against 8 facebook/opt-125m requests.
    camp = make_campaign(tmp_path / "c", {"c2": (BENCH, "idle.prom", "loaded.prom")})
    st = engine_checks(camp)["c2"]
    assert st[results.MODEL_CHECK] == "fail"
    assert {st[n] for n in results.RECONCILE_CHECKS} == {"warn"}  # not checked, never "pass"
    (model,) = [
        c for _, cs in results.campaign_inputs(camp).engine_checks() for c in cs if c.name == results.MODEL_CHECK
    ]
    assert "'facebook/opt-125m'" in model.detail and "'opt-125m-tp2'" in model.detail
    assert "$.runs[0].metrics_labels" in model.detail  # where to say it is the same deployment


def test_matching_model_reconciles_every_figure(tmp_path):
    camp = make_campaign(tmp_path / "c", {"one": (ONE, "idle.prom", "one_request.prom")})
    inputs = results.campaign_inputs(camp)
    ((rid, checks),) = inputs.engine_checks()
    by = {c.name: c for c in checks}
    assert rid == "one" and by[results.MODEL_CHECK].status == "pass"
    assert by["successes: engine Δ vs client completed"].engine == 1
    assert by["generation tokens: engine Δ vs client Σ output tokens"].engine == 32
    assert by["mean TTFT: engine vs client"].engine == pytest.approx(50.0)  # ms, engine ≤ client 60 ms
    assert by["mean E2E: engine vs client"].engine == pytest.approx(450.0)
    assert {c.status for c in checks if c.name in results.RECONCILE_CHECKS} == {"pass"}


def test_two_deployments_stay_apart_and_metrics_labels_picks_one(tmp_path):
    bench = dict(ONE)
    camp = make_campaign(tmp_path / "a", {"one": (bench, "two_models_idle.prom", "two_models_one_request.prom")})
    st = engine_checks(camp)["one"]
    assert st[results.MODEL_CHECK] == "pass"  # the client's model names one of the two series
    assert st["successes: engine Δ vs client completed"] == "pass"  # opt-350m's counters not added
    # A served-model alias: the client says facebook/opt-125m; metrics_labels says which series it is.
    bench = dict(ONE, model_id="facebook/opt-125m")
    camp = make_campaign(tmp_path / "b", {"one": (bench, "two_models_idle.prom", "two_models_one_request.prom")})
    assert engine_checks(camp)["one"][results.MODEL_CHECK] == "fail"
    m = json.loads((camp / "campaign.json").read_text())
    m["runs"][0]["metrics_labels"] = {"model_name": "opt-125m-tp2"}
    (camp / "campaign.json").write_text(json.dumps(m))
    st = engine_checks(camp)["one"]
    assert st[results.MODEL_CHECK] == "pass" and st["mean TTFT: engine vs client"] == "pass"


def test_results_paths_stay_inside_the_run_folder(tmp_path):
    camp = make_campaign(tmp_path / "c", {"bench": (BENCH, None, None)})
    doc = {"format": "benchbook.results/1", "files": ["../../../outside.json", "/etc/passwd", "missing.json"]}
    (camp / "runs" / "bench" / "results.json").write_text(json.dumps(doc))
    with pytest.raises(InputError) as e:
        load_campaign(camp).results_runs
    text = str(e.value)
    assert "$.files[0]" in text and "leads outside the campaign folder" in text
    assert "$.files[1]" in text and "is an absolute path" in text
    assert "$.files[2]" in text and "does not exist" in text  # all three at once


def test_render_all_renders_a_results_campaign(tmp_path, open_page):
    data = tmp_path / "data"
    make_campaign(
        data / "mine",
        {"c2": (BENCH, "idle.prom", "loaded.prom"), "one": (ONE, "idle.prom", "one_request.prom")},
        todo=["question: say what this campaign answers"],
    )
    shutil.copytree(BUNDLED, data / BUNDLED.name)
    out = tmp_path / "reports"
    assert main(["render", "--all", str(data), "--out", str(out)]) == 0
    # the bundled results campaign: two configurations, the sweep's repeats measure the spread
    b = json.loads((out / BUNDLED.name / "compare.values.json").read_text())
    assert b["repeats"] == {
        "opt-125m, rate inf, concurrency 2, 8 prompts (bench serve)": 1,
        "opt-125m, rate inf, concurrency 2, 8 prompts (sweep, --max-num-seqs 4)": 2,
    }
    # judged at their matched load; every run is shorter than the 60 s gate, so no noise is measured
    assert b["verdicts"] and b["spreads"] == {} and {v["load"] for v in b["verdicts"]} == {"concurrency 2"}
    st = {c["name"]: c["status"] for c in b["checks"] if c["kind"] == "engine"}
    assert st[results.MODEL_CHECK] == "fail"  # opt-125m-tp2's scrapes are not this bench's window
    page = out / "mine" / "compare.html"
    assert scan([page]) == []
    v = json.loads(page.with_suffix(".values.json").read_text())
    assert v["title"] == "results campaign — comparison"
    assert [r["id"] for r in v["runs"]] == ["c2", "one"]
    st = {(c["run"], c["name"]): c["status"] for c in v["checks"] if c["kind"] == "engine"}
    assert st[("c2", results.MODEL_CHECK)] == "fail" and st[("one", results.MODEL_CHECK)] == "pass"
    assert st[("one", "mean TTFT: engine vs client")] == "pass"
    assert v["todo"] == ["question: say what this campaign answers"]
    assert "mine/compare.html" in (out / "index.html").read_text()
    report = open_page(page, table_ids=["bb-compare-checks", "bb-compare-runs"], screenshot="results-campaign.png")
    assert report.ok, report.problems()


def test_summary_json_carries_the_reconciliation_and_todo(tmp_path, capsys):
    camp = make_campaign(tmp_path / "c", {"c2": (BENCH, "idle.prom", "loaded.prom")}, todo=["scope: say it"])
    assert main(["summary", str(camp), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    st = {(c["run"], c["kind"], c["name"]): c["status"] for c in s["results"]["checks"]}
    assert st[("c2", "engine", results.MODEL_CHECK)] == "fail" and s["todo"] == ["scope: say it"]
    assert st[("c2", "gate", "minimum completed requests")] == "fail"  # 8 requests
    assert s["results"]["configurations"] and s["checks"] == []  # the engine checks are the results set's


def _snapshot(path: Path, running: float, waiting: float) -> None:
    text = (CAPS / "idle.prom").read_text()
    for name, v in (("running", running), ("waiting", waiting)):
        line = f'vllm:num_requests_{name}{{engine="0",model_name="opt-125m-tp2"}} '
        assert line + "0.0" in text
        text = text.replace(line + "0.0", line + repr(float(v)))
    path.write_text(text)


@pytest.mark.parametrize(("values", "status"), [([(1, 0), (0, 1), (1, 0)], "pass"), ([(2, 1), (3, 0), (2, 1)], "fail")])
def test_littles_law_from_periodic_snapshots(tmp_path, values, status):
    # ONE: 1 request completed, mean E2E 0.5 s. Snapshots at t = 100, 100.25, 100.5 s span 0.5 s, so
    # λ × W = (1 / 0.5 s) × 0.5 s = 1.0 in flight by the client's figures. The engine's own running +
    # waiting, time-averaged over the snapshots: 1.0 (pass) or 3.0 (fail).
    camp = make_campaign(tmp_path / "c", {"one": (ONE, "idle.prom", "one_request.prom")})
    run = camp / "runs" / "one"
    snaps = []
    for i, (r, w) in enumerate(values):
        _snapshot(run / "metrics" / f"during-{i}.prom", r, w)
        snaps.append({"file": f"metrics/during-{i}.prom", "unix_s": 100.0 + i / 4})
    doc = json.loads((run / "results.json").read_text()) | {"snapshots": snaps}
    (run / "results.json").write_text(json.dumps(doc))
    ((_, checks),) = results.campaign_inputs(camp).engine_checks()
    (little,) = [c for c in checks if c.name == results.LITTLE_CHECK]
    assert little.status == status
    assert little.client == pytest.approx(1.0)  # λ × W
    assert little.engine == pytest.approx(sum(r + w for r, w in values) / len(values))  # equal steps: the mean
    assert "time-averaged over 3 snapshots (0.5 s, largest gap 0.25 s)" in little.detail


def test_an_incomplete_capture_is_listed_once(tmp_path):
    camp = make_campaign(tmp_path / "c", {"r": (BENCH, None, None)})
    doc = json.loads((camp / "runs" / "r" / "results.json").read_text()) | {"complete": False}
    (camp / "runs" / "r" / "results.json").write_text(json.dumps(doc))
    assert results.campaign_inputs(camp).open_items() == [
        "run r: its capture stopped before the end (results.json complete: false)"
    ]
    m = json.loads((camp / "campaign.json").read_text()) | {"todo": ["run r: its capture did not complete (Ctrl-C)"]}
    (camp / "campaign.json").write_text(json.dumps(m))
    assert results.campaign_inputs(camp).open_items() == ["run r: its capture did not complete (Ctrl-C)"]
