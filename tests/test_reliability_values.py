"""Impossible values and mixed-up inputs (issue 36, items 4–7): each reader refuses what a result file
cannot truthfully hold, naming the field (exit 2), energy from telemetry is checked before it is used,
two servers' files in one run folder are refused, and the memory ramp and the gauge chart keep one row
budget however many GPUs and runs there are. Each case is built from a real tool's fixture, changed
in one place."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from benchbook.errors import InputError
from benchbook.ingest import formats

TOOLS = Path(__file__).resolve().parent / "fixtures" / "tools"


def _refused(path: Path, where: str, says: str) -> None:
    with pytest.raises(InputError) as e:
        formats.read(path)
    assert e.value.location == where, str(e.value)
    assert says in e.value.reason, str(e.value)


# ---- 4. impossible values in the vLLM, inference-perf, SGLang and llm-d readers -------------------


@pytest.mark.parametrize(
    "key,index,value,where,says",
    [
        ("output_lens", 7, -1, "$.output_lens[7]", "(negative) is not a token count"),
        ("input_lens", 0, 2.5e9, "$.input_lens[0]", "no request holds that many"),
        ("start_times", 11, -86400.0 * 400, "$.start_times[11]", "not a start time of this run"),
    ],
)
def test_vllm_per_request_arrays(tmp_path, key, index, value, where, says):
    d = json.loads((TOOLS / "vllm-0.32.0+cpu" / "bench_serve.json").read_text())
    d[key][index] = value
    (tmp_path / "r.json").write_text(json.dumps(d))
    _refused(tmp_path / "r.json", where, says)


@pytest.mark.parametrize(
    "change,where,says",
    [
        (lambda r: r["computed_metrics"].update(output_tokens=-12), "$[4].computed_metrics.output_tokens", "negative"),
        (
            lambda r: r["computed_metrics"]["inter_token_latencies"].insert(3, None),
            "$[4].computed_metrics.inter_token_latencies[3]",
            "null is not a gap between tokens",
        ),
        (
            lambda r: r["computed_metrics"]["inter_token_latencies"].__setitem__(5, -0.02),
            "$[4].computed_metrics.inter_token_latencies[5]",
            "(negative) is not a time",
        ),
    ],
)
def test_inference_perf_per_request_records(tmp_path, change, where, says):
    d = json.loads((TOOLS / "inference-perf-0.7.0" / "per_request_lifecycle_metrics.json").read_text())
    change(d[4])
    (tmp_path / "per_request_lifecycle_metrics.json").write_text(json.dumps(d))
    _refused(tmp_path / "per_request_lifecycle_metrics.json", where, says)


@pytest.mark.parametrize(
    "change,key,says",
    [
        ({"completed": 1001}, "completed", "1001 requests completed in the window, 1000 in the whole run"),
        ({"output_throughput": -2562.5}, "output_throughput", "impossible for a steady-state figure"),
        ({"duration": 0.0}, "duration", "a steady-state window lasts more than 0 s"),
        ({"duration": 250.0}, "duration", "a 250 s steady-state window inside a 100 s run"),
        ({"window_end": 1767225600.0}, "window_end", "is not after window_start"),
    ],
)
def test_sglang_steady_state_line(tmp_path, change, key, says):
    lines = [
        json.loads(x)
        for x in (TOOLS / "sglang-benchmark-serving-0.5.23" / "steady_state.jsonl").read_text().splitlines()
    ]
    lines[-1].update(change)
    (tmp_path / "s.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    _refused(tmp_path / "s.jsonl", f"line {len(lines)}.{key}", says)


def _engine(doc, role):
    return next(c for c in doc["scenario"]["stack"] if c["standardized"].get("role") == role)["standardized"]


@pytest.mark.parametrize(
    "change,where,says",
    [
        (
            lambda d: _engine(d, "prefill")["accelerator"].update(count=0),
            "$.scenario.stack[0].standardized.accelerator.count",
            "a whole number of at least 1",
        ),
        (
            lambda d: _engine(d, "decode")["accelerator"].update(count=-4),
            "$.scenario.stack[1].standardized.accelerator.count",
            "a whole number of at least 1",
        ),
        (
            lambda d: _engine(d, "decode")["model"].update(name="mistralai/Mistral-7B-Instruct-v0.3"),
            "$.scenario.stack[1].standardized.model.name",
            "the decode component serves 'mistralai/Mistral-7B-Instruct-v0.3', the prefill component",
        ),
        (
            lambda d: d["results"]["request_performance"]["aggregate"]["requests"].update(
                failures=2300, incomplete=200
            ),
            "$.results.request_performance.aggregate.requests.failures",
            "2300 failures + 200 incomplete of 2400 requests in total: more than were sent",
        ),
    ],
)
def test_llmd_benchmark_report(tmp_path, change, where, says):
    d = yaml.safe_load((TOOLS / "llmd-benchmark-report-0.2.1" / "pd_report.yaml").read_text())
    d = copy.deepcopy(d)
    change(d)
    (tmp_path / "report.yaml").write_text(yaml.safe_dump(d))
    _refused(tmp_path / "report.yaml", where, says)


def test_the_unchanged_fixtures_still_read():
    for p in (
        TOOLS / "vllm-0.32.0+cpu" / "bench_serve.json",
        TOOLS / "inference-perf-0.7.0" / "per_request_lifecycle_metrics.json",
        TOOLS / "sglang-benchmark-serving-0.5.23" / "steady_state.jsonl",
        TOOLS / "llmd-benchmark-report-0.2.1" / "pd_report.yaml",
    ):
        assert formats.read(p)


# ---- 5. energy from telemetry: checked values, counter against power, the board limit -------------

AIPERF_TELEMETRY = TOOLS / "aiperf-0.13.0-telemetry" / "gpu_telemetry_export.jsonl"
DCGM = TOOLS / "dcgm-exporter" / "dcgm_metrics.prom"


@pytest.mark.parametrize(
    "field,value,says",
    [
        ("nvidia_power_usage", "-12.5", "-12.5 is not a possible sample value"),
        ("nvidia_energy_consumption", "-1e-3", "-0.001 is not a possible sample value"),
        ("nvidia_memory_used", "-0.5", "-0.5 is not a possible sample value"),
    ],
)
def test_aiperf_telemetry_refuses_negative_and_non_finite_values(tmp_path, field, value, says):
    from benchbook.ingest import telemetry

    lines = [json.loads(x) for x in AIPERF_TELEMETRY.read_text().splitlines()]
    lines[3]["telemetry_data"][field] = "@@"
    p = tmp_path / "gpu_telemetry_export.jsonl"
    p.write_text("".join(json.dumps(x) + "\n" for x in lines).replace('"@@"', value))
    with pytest.raises(InputError) as e:
        telemetry.read_aiperf_telemetry(p)
    assert e.value.location == f"line 4.telemetry_data.{field}" and says in e.value.reason


@pytest.mark.parametrize(
    "series,value,says",
    [
        ("DCGM_FI_DEV_POWER_USAGE", "-210.5", "-210.5 is not"),
        ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "NaN", "nan is not"),
    ],
)
def test_dcgm_scrape_refuses_negative_and_non_finite_values(series, value, says):
    import re

    from benchbook.ingest import telemetry

    text = DCGM.read_text()
    bad = re.sub(rf"^({series}\{{[^}}]*gpu=\"1\"[^}}]*\}}) \S+", rf"\g<1> {value}", text, count=1, flags=re.M)
    assert bad != text
    with pytest.raises(InputError) as e:
        telemetry.read_dcgm_text(bad, "dcgm.prom", 0.0)
    assert e.value.location.startswith(series) and "{gpu=1}" in e.value.location and says in e.value.reason


def _samples(power, counter):
    """One GPU sampled every 0.5 s for 12 s."""
    import polars as pl

    t = [2000.0 + 0.5 * i for i in range(25)]
    cols = {"t": t, "gpu": [0] * 25, "power_w": [power(x) for x in t], "energy_j": [counter(x) for x in t]}
    return pl.DataFrame(cols, schema={"t": pl.Float64, "gpu": pl.Int64, "power_w": pl.Float64, "energy_j": pl.Float64})


def test_a_counter_that_contradicts_the_power_samples_is_not_used():
    from benchbook.analysis import energy

    # the power: a steady 455 W. A counter stuck at 3.2 MJ; one that jumps 1.2 MJ in the middle; a good one.
    stuck = energy.window_energy(_samples(lambda t: 455.0, lambda t: 3.2e6), "w", 2001.0, 2011.0)
    jump = energy.window_energy(
        _samples(lambda t: 455.0, lambda t: 3.2e6 + 455 * (t - 2000) + (1.2e6 if t > 2006 else 0)), "w", 2001.0, 2011.0
    )
    good = energy.window_energy(_samples(lambda t: 455.0, lambda t: 3.2e6 + 460 * (t - 2000)), "w", 2001.0, 2011.0)
    for w in (stuck, jump):
        assert w.methods == {0: "power"} and w.joules == pytest.approx(4550.0)
        assert "so the counter is not used" in w.notes[0] and "differ by more than 25%" in w.notes[0]
    assert good.methods == {0: "counter"} and good.joules == pytest.approx(4600.0) and good.notes == ()


def test_a_mean_power_above_the_board_limit_is_refused():
    from benchbook.analysis import energy

    counter_only = _samples(lambda t: None, lambda t: 1.5e6 * (t - 2000))  # no power samples; 1.5 MW from the counter
    with pytest.raises(InputError) as e:
        energy.window_energy(
            counter_only, "w", 2001.0, 2011.0, source="gpu.json", max_power_w=700.0, limit_from="an H200"
        )
    assert (
        e.value.location == "GPU 0 [2001.000, 2011.000]"
        and "mean power 1.5e+06 W from its energy counter" in e.value.reason
    )
    huge = _samples(lambda t: 455.0 * 1e300, lambda t: None)
    with pytest.raises(InputError, match="above the 3000 W that any accelerator can draw"):
        energy.window_energy(huge, "w", 2001.0, 2011.0)  # no GPU named: the ceiling of any accelerator
    ok = energy.window_energy(_samples(lambda t: 760.0, lambda t: None), "w", 2001.0, 2011.0, max_power_w=700.0)
    assert ok.mean_w == pytest.approx(760.0)  # within the 10 % margin: limits are enforced over about a second


def test_a_campaign_whose_power_samples_exceed_the_h200_limit_is_refused(tmp_path):
    import h200_campaign
    from benchbook.analysis.campaign_analysis import analyse

    camp = h200_campaign.build(tmp_path, phases=(), results=(("batch", "conc8"),))
    csv = camp / "runs" / "batch-conc8" / "gpu_samples.csv"
    rows = csv.read_text().splitlines()
    cells = [r.split(", ") for r in rows[1:]]
    csv.write_text("\n".join([rows[0], *(", ".join([*c[:4], f"{float(c[4]) * 2:.2f}", *c[5:]]) for c in cells)]) + "\n")
    with pytest.raises(InputError) as e:
        analyse(camp)
    assert str(e.value).startswith(str(csv)) and "GPU 0" in e.value.location
    assert "NVIDIA H200 SXM" in e.value.reason and "700 W" in e.value.reason


# ---- 6. two servers' files in one run folder --------------------------------------------------------


def _run_folder(tmp_path):
    """The H200 batch process's run folder, its first two load points only (same cache config)."""
    import shutil

    from h200_campaign import H200

    skip = shutil.ignore_patterns(
        "*_scrapes.jsonl", "*rate*", "*samples.csv", "*conc4*", "*conc8*", "*conc16*", "*conc32*", "*conc64*"
    )
    run = tmp_path / "runs" / "batch" / "p1"
    shutil.copytree(H200 / "batch", run, ignore=skip)
    return run


def _init(tmp_path, capsys):
    from benchbook.commands.cli import main

    rc = main(["init", str(tmp_path / "camp"), str(tmp_path / "runs" / "batch"), "-q"])
    return rc, capsys.readouterr().err


def test_a_second_process_start_in_one_run_folder_is_two_servers(tmp_path, capsys):
    run = _run_folder(tmp_path)
    p = run / "metrics" / "conc2_before.prom"
    text = p.read_text()
    assert "process_start_time_seconds 1.79611400455e+09" in text
    p.write_text(
        text.replace("process_start_time_seconds 1.79611400455e+09", "process_start_time_seconds 1.7961152e+09")
    )
    rc, err = _init(tmp_path, capsys)
    assert rc == 2
    assert "conc2_before.prom: -: states process_start_time_seconds 1796115200.000, another process start" in err
    assert "conc1_after.prom: these files come from two server processes" in err
    assert not (tmp_path / "camp").exists()


def test_a_second_served_model_in_one_run_folder_is_two_servers(tmp_path, capsys):
    run = _run_folder(tmp_path)
    for side in ("before", "after"):  # the captures of conc2 serve another model; its cache config agrees
        p = run / "metrics" / f"conc2_{side}.prom"
        p.write_text(p.read_text().replace('model_name="llama8b-random"', 'model_name="mixtral-8x7b"'))
    rc, err = _init(tmp_path, capsys)
    assert rc == 2 and "serves model 'mixtral-8x7b', another model ('llama8b-random')" in err, err


def test_result_files_naming_two_models_in_one_run_folder_are_two_servers(tmp_path, capsys):
    run = _run_folder(tmp_path)
    r = run / "results" / "bench_conc2.json"
    d = json.loads(r.read_text())
    d["model_id"] = "gemma-2-9b"
    r.write_text(json.dumps(d))
    rc, err = _init(tmp_path, capsys)
    assert rc == 2 and "bench_conc2.json: -: names model 'gemma-2-9b', another model ('llama8b-random')" in err, err
    assert "bench_conc1.json" in err


def test_one_server_with_a_path_and_a_served_name_is_one_server(tmp_path, capsys):
    run = _run_folder(tmp_path)
    r = run / "results" / "bench_conc2.json"
    d = json.loads(r.read_text())
    d["model_id"] = "/models/llama8b-random/"  # the same model named by its path
    r.write_text(json.dumps(d))
    rc, err = _init(tmp_path, capsys)
    assert rc == 0, err


# ---- 7. one row budget across ranks and runs: the memory ramp and the gauge chart --------------------

MINI = Path(__file__).resolve().parent / "fixtures" / "mini"
HEADER = "timestamp, index, memory.used [MiB], memory.total [MiB], power.draw [W], utilization.gpu [%]"


def _gpu_runs(camp: Path, runs: int, gpus: int, samples: int) -> None:
    """``runs`` gpu runs of the batch arm beside the hand-made campaign, each ``gpus`` GPUs sampled
    ``samples`` times at 0.5 s (a load ramp to 60 GiB, then steady), with its events."""
    import datetime as dt

    m = json.loads((camp / "campaign.json").read_text())
    t0 = 1767225600.0
    for k in range(runs):
        folder = camp / "runs" / f"gpu-{k}"
        folder.mkdir(parents=True)
        rows = [HEADER]
        for i in range(samples):
            t = t0 + 0.5 * i
            stamp = dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]
            for g in range(gpus):
                used = min(61440, 300 * i) + 7 * g + k
                rows.append(f"{stamp}, {g}, {used}, 143771, {120 + g + (i % 7)}.5, {min(99, i)}")
        (folder / "gpu_samples.csv").write_text("\n".join(rows) + "\n")
        events = [
            {"event": "server_start", "t": t0 + 1},
            {"event": "ready", "t": t0 + 0.5 * samples / 3},
            {"event": "server_stop", "t": t0 + 0.5 * (samples - 2)},
        ]
        (folder / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
        (folder / "gpu.json").write_text(json.dumps({"gpu_samples": "gpu_samples.csv", "events": "events.jsonl"}))
        m["runs"].append({"id": f"gpu-{k}", "arm": "batch", "harness": "gpu", "path": f"runs/gpu-{k}"})
    (camp / "campaign.json").write_text(json.dumps(m))


def test_the_memory_ramp_of_16_gpus_in_several_runs_stays_inside_one_row_budget(tmp_path):
    """16 GPUs × 4 server processes × 900 samples (57,600 samples): the baseline page renders, and the
    ramp chart's data — every run and rank together — stays inside charts.ROW_BUDGET."""
    import shutil

    from benchbook.pages import charts
    from benchbook.pipeline.campaigns import render_campaign

    camp = tmp_path / "mini"
    shutil.copytree(MINI, camp)
    _gpu_runs(camp, runs=4, gpus=16, samples=900)
    res = render_campaign(camp, tmp_path / "out", pages=["baseline"])
    assert res.rendered and not res.failed, res
    values = json.loads((tmp_path / "out" / "baseline.values.json").read_text())
    ramp = values["memory_ramp"]
    assert sorted(ramp) == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
    rows = sum(r["points"] + r["markers"] for r in ramp.values())
    assert rows <= charts.ROW_BUDGET, ramp
    assert all(r["points"] >= 16 * 10 for r in ramp.values())  # every rank kept, at least 10 points each
    assert all(r["peak_gib"] == pytest.approx((61440 + 7 * 15 + int(k[-1])) / 1024) for k, r in ramp.items())


def test_ramps_of_many_gpus_in_many_runs_fold_ranks_into_their_extremes():
    """16 GPUs × 30 runs would be 480 lines: too many for 10 points each in 4000 rows — each run's
    ranks become two lines, the largest and the smallest GPU at each time, and the peak stays."""
    import polars as pl

    from benchbook.analysis.memory import load_ramps

    rows = [
        {"run": f"r{k}", "t": float(i), "rank": g, "gpu_used_mib": float(1000 * g + 10 * i + k)}
        for k in range(30)
        for i in range(500)
        for g in range(16)
    ]
    gpu = pl.DataFrame(rows)
    markers = pl.DataFrame(
        {"run": ["r0"], "t": [3.0], "event": ["load_end"], "label": [None]}, schema_overrides={"label": pl.String}
    )
    ramps = load_ramps(gpu, markers, [f"r{k}" for k in range(30)], 4000)
    total = sum(s.height + m.height for s, m in ramps.values())
    assert total <= 4000
    s0, m0 = ramps["r0"]
    assert set(s0["rank"]) == {"largest of 16 GPUs", "smallest of 16 GPUs"} and m0.height == 1
    assert s0["gib"].max() == pytest.approx((15000 + 10 * 499) / 1024)  # the peak of the largest GPU kept
    few = load_ramps(gpu, markers, ["r0", "r1"], 4000)  # 32 lines: every rank drawn
    assert set(few["r0"][0]["rank"]) == set(range(16)) and sum(s.height for s, _ in few.values()) <= 4000


def test_the_gauge_chart_of_many_runs_is_binned_into_the_budget(capsys):
    """The Prometheus gauge section: 12 runs × 5 gauges × 1,500 points (90,000 rows) rendered inside the
    row budget, each point its bin's largest value."""
    from types import SimpleNamespace

    import polars as pl

    from benchbook.analysis.engine_gauges import EngineGauges
    from benchbook.pages import baseline_page, charts

    qs = ["running", "waiting", "kv_cache_usage", "prompt_tokens_rate", "generation_tokens_rate"]
    frame = pl.DataFrame(
        [
            {"run": f"run-{k}", "quantity": q, "t": 1e9 + s, "s": float(s), "value": float((s * (k + 1)) % 97)}
            for k in range(12)
            for q in qs
            for s in range(1500)
        ]
    )
    eg = EngineGauges(
        frame, [{"run": f"run-{k}", "t0": 1e9, "t1": 1e9 + 1499} for k in range(12)], [], ["http://p:9090"]
    )
    page = SimpleNamespace(arms=["a"], analysis=SimpleNamespace(engine_gauges=lambda arms: eg))
    html = str(baseline_page.engine_gauges(page))
    out = capsys.readouterr().out
    import re

    rows = int(re.search(r"recorded engine_gauges_rows = (\d+)", out).group(1))
    assert rows <= charts.ROW_BUDGET and "<svg" in html and "largest value of its bin" in html
