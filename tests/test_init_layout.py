"""benchbook init on arm/run folders (one server process each), the real H200 campaign through init ->
summary -> the baseline page; what ran read from the engine; bad input in that layout."""

from __future__ import annotations

import csv
import json
import shutil
from argparse import Namespace
from pathlib import Path

import pytest

from benchbook.commands import init as init_cmd
from benchbook.errors import InputError
from one_page import render_one
from realdata import realdata

REPO = Path(__file__).resolve().parents[1]
H200 = realdata("vllm_h200_llama8b")
ARMS = ("serial", "batch", "eager", "noprefix")


def _init(dest: Path, *inputs: Path) -> dict:
    rc = init_cmd.run(Namespace(dir=dest, inputs=list(inputs), title=None, question=None, quiet=True))
    assert rc == 0
    return json.loads((dest / "campaign.json").read_text())


def _rate_from_file(arm: str, point: str) -> float:
    d = json.loads((H200 / arm / "results" / f"bench_{point}.json").read_text())
    return sum(d["output_lens"]) / d["duration"]


@pytest.fixture(scope="module")
def h200(tmp_path_factory):
    from benchbook.commands.summary import build

    dest = tmp_path_factory.mktemp("h200") / "campaign"
    manifest = _init(dest, *(H200 / a for a in ARMS))
    return dest, manifest, build(dest)


def test_arms_are_folders_and_runs_are_processes(h200):
    _dest, m, _s = h200
    assert list(m["arms"]) == list(ARMS)
    procs = {r["process"] for r in m["runs"]}
    assert procs == {f"{a}/1" for a in ARMS}
    points = sorted(r["point"] for r in m["runs"] if r["arm"] == "batch" and r["harness"] == "results")
    want = sorted(p.stem.removeprefix("bench_") for p in (H200 / "batch" / "results").glob("bench_*.json"))
    assert points == want
    assert {r["harness"] for r in m["runs"] if r["arm"] == "serial"} == {"results", "phases", "gpu"}


def test_what_ran_is_read_from_the_engine(h200):
    _dest, m, s = h200
    sw = {a: m["arms"][a]["server_args"] for a in ARMS}
    assert sw["serial"]["max_num_seqs"] == 1 and m["arms"]["serial"]["mode"] == "serial"
    assert sw["eager"]["enforce_eager"] is True and sw["eager"]["cudagraph_mode"] == "NONE"
    assert sw["batch"]["enforce_eager"] is False and sw["batch"]["enable_prefix_caching"] is True
    assert sw["noprefix"]["enable_prefix_caching"] is False
    assert m["arms"]["batch"]["role"] == "baseline"
    assert {m["arms"][a].get("role") for a in ("eager", "noprefix")} == {"ablation"}
    cfg = s["server_configs"]["noprefix/1"]
    assert cfg["cache"]["enable_prefix_caching"] == "False"  # the info series' label
    assert any("cache_config_info" in src for src in cfg["sources"])


def test_serial_ladder_is_flat_and_batched_rises(h200):
    _dest, _m, s = h200
    rl = s["results_ladder"]
    pts = {(p["arm"], p["point"]): p for p in rl["points"]}
    for c in (1, 2, 4, 8):
        rate = pts[("serial", f"conc{c}")]["rate_tok_s"]
        assert 195 <= rate <= 199.5
        assert rate == pytest.approx(_rate_from_file("serial", f"conc{c}"))
    assert pts[("batch", "conc64")]["rate_tok_s"] == pytest.approx(_rate_from_file("batch", "conc64"))
    assert round(pts[("batch", "conc64")]["rate_tok_s"]) == 4410
    ser = {x["arm"]: x for x in rl["serialization"]}
    assert ser["serial"]["flat"] is True and ser["batch"]["flat"] is False
    q = [x for x in rl["queueing"] if x["arm"] == "serial"]
    assert q and all(x["pure"] for x in q), [x["reason"] for x in q]
    assert not any(x["pure"] for x in rl["queueing"] if x["arm"] == "batch")


def test_batched_vs_serial_needs_a_spread(h200):
    from benchbook.analysis.ladder import results_ladder_analysis
    from benchbook.ingest.campaign import load_campaign

    dest, _m, s = h200
    c8 = next(
        c
        for c in s["results_ladder"]["comparisons"]
        if (c["baseline"], c["candidate"], c["concurrency"]) == ("serial", "batch", 8)
    )
    assert c8["state"] == "cannot tell" and "run twice" in c8["reason"]  # one process per arm
    assert c8["ratio"] == pytest.approx(_rate_from_file("batch", "conc8") / _rate_from_file("serial", "conc8"))
    an = results_ladder_analysis(load_campaign(dest), spread_override=0.05)
    c8 = next(
        c for c in an["comparisons"] if (c["baseline"], c["candidate"], c["concurrency"]) == ("serial", "batch", 8)
    )
    assert c8["is_result"] is True
    c1 = next(
        c for c in an["comparisons"] if (c["baseline"], c["candidate"], c["concurrency"]) == ("serial", "batch", 1)
    )
    assert c1["is_result"] is False  # one request at a time: the same rate


def test_memory_peak_per_gpu_from_the_samples(h200):
    _dest, _m, s = h200
    mem = {x["run"]: x for x in s["memory"]}
    procs = s["memory_processes"]["batch-gpu"]
    loaded = [p for p in procs if p["loaded_samples"]]
    assert {p["comm"] for p in loaded} >= {"VLLM::EngineCor", "python3"}  # engine core and API server
    assert sum(p["pss_gib"] for p in loaded) == pytest.approx(mem["batch-gpu"]["pss_sum_gib"], rel=0.02)
    for arm in ARMS:
        with open(H200 / arm / "gpu_samples.csv", newline="") as f:
            rows = list(csv.reader(f, skipinitialspace=True))
        col = rows[0].index("memory.used [MiB]")
        peak = max(float(r[col]) for r in rows[1:])
        assert mem[f"{arm}-gpu"]["peak_gib"] == pytest.approx(peak / 1024)
        assert mem[f"{arm}-gpu"]["pss_sum_gib"] is not None and mem[f"{arm}-gpu"]["shmem_gib"] is not None


def test_baseline_page_renders_the_ladder(h200, tmp_path):
    from benchbook.pipeline import plan as render

    dest, m, _s = h200
    assert render.pages_for(m) == ["baseline", "ablation", "compare"]
    res = render_one("baseline", dest, tmp_path, "h200")
    values = json.loads((tmp_path / "baseline.values.json").read_text()) if res else {}
    rl = values.get("results_ladder") or {}
    assert any(p["point"] == "conc64" for p in rl.get("points", []))
    html = (tmp_path / "baseline.html").read_text()
    assert 'id="sec-results-ladder"' in html and 'id="sec-memory"' in html
    assert {"serial-gpu", "batch-gpu"} <= {r["run"] for r in values["memory"]}
    assert values["memory_processes"]["batch-gpu"][0]["comm"] == "VLLM::EngineCor"  # the largest Pss first
    ramp = values["memory_ramp"]["batch-gpu"]
    assert ramp["points"] <= 400 and ramp["markers"] >= 10  # binned; server start, ready, each point, stop
    assert ramp["peak_gib"] == pytest.approx(next(r["peak_gib"] for r in values["memory"] if r["run"] == "batch-gpu"))


# ---- bad input and what ran, on small run folders made from the campaign's files ---------------------


def _run_folder(root: Path, arm: str, point: str = "conc1", cap_from: str | None = None) -> Path:
    root.mkdir(parents=True)
    (root / "results").mkdir()
    (root / "metrics").mkdir()
    shutil.copy(H200 / arm / "results" / f"bench_{point}.json", root / "results")
    for side in ("before", "after"):
        src = cap_from if side == "after" and cap_from else arm
        shutil.copy(H200 / src / "metrics" / f"{point}_{side}.prom", root / "metrics")
    return root


def _add_point(root: Path, arm: str, point: str) -> Path:
    shutil.copy(H200 / arm / "results" / f"bench_{point}.json", root / "results")
    for side in ("before", "after"):
        shutil.copy(H200 / arm / "metrics" / f"{point}_{side}.prom", root / "metrics")
    return root


def test_mixed_servers_in_one_run_folder_are_refused(tmp_path):
    run = _run_folder(tmp_path / "mixed", "batch", cap_from="noprefix")
    runs, todo = init_cmd.plan([run])
    with pytest.raises(InputError) as e:
        init_cmd.build(tmp_path / "out", runs, todo, None, None)
    msg = str(e.value)
    assert "conc1_before.prom" in msg and "conc1_after.prom" in msg and "enable_prefix_caching" in msg


def test_gpu_samples_in_an_unknown_layout_name_their_columns(tmp_path):
    run = _run_folder(tmp_path / "r", "serial")
    (run / "gpu_samples.csv").write_text("time,mem_used\n1,2\n")
    with pytest.raises(InputError) as e:
        init_cmd.plan([run])
    assert "time" in str(e.value) and "mem_used" in str(e.value)


def test_a_clamp_and_runs_that_differ_in_what_ran(tmp_path):
    arm = tmp_path / "wide"
    _run_folder(arm / "p1", "serial", "conc8")
    log = (
        "INFO non-default args: {'model': 'm', 'max_num_seqs': 8}\n"
        "INFO Engine 000: Avg prompt throughput: 1.0 tokens/s, Running: 1 reqs, Waiting: 7 reqs\n"
    )
    (arm / "p1" / "server.log").write_text(log)
    _run_folder(arm / "p2", "noprefix", "conc8")
    m = _init(tmp_path / "camp", arm)
    todo = "\n".join(m["todo"])
    assert "max_num_seqs 8 requested, 1 ran" in todo
    assert "wide/p1 and wide/p2 differ in what ran" in todo and "enable_prefix_caching" in todo
    assert {r["process"] for r in m["runs"]} == {"wide/p1", "wide/p2"}


def test_arms_that_do_not_differ_in_what_ran(tmp_path):
    _run_folder(tmp_path / "a", "batch")
    _run_folder(tmp_path / "b", "batch", "conc8")
    m = _init(tmp_path / "camp", tmp_path / "a", tmp_path / "b")
    assert any("arms a and b do not differ in what ran" in t for t in m["todo"])


def test_switch_ablation_each_switch_alone_and_the_missing_pair(h200):
    _dest, _m, s = h200
    sa = s["switch_ablation"]
    assert sa["baseline_arm"] == "batch" and sa["arms"] == ["eager", "noprefix"]
    assert sa["switches"] == {
        "eager": {"cudagraph_mode": "NONE", "enforce_eager": "True"},
        "noprefix": {"enable_prefix_caching": "False"},
    }
    rows = {(r["arm"], r["metric"], r["context"]): r for r in sa["rows"]}
    tpot = rows[("eager", "median TPOT", "concurrency 1")]
    files = [json.loads((H200 / a / "results" / "bench_conc1.json").read_text()) for a in ("batch", "eager")]
    assert tpot["ratio"] == pytest.approx(files[1]["median_tpot_ms"] / files[0]["median_tpot_ms"])
    assert round(tpot["ratio"], 1) == 2.7  # the README's "2.7x the graphs arm"
    assert all(r["state"] == "cannot tell" and not r["is_result"] for r in sa["rows"])  # one process per arm
    (inter,) = sa["interactions"]
    assert inter["measured"] is False and "not measured" in inter["finding"]


def test_ablation_page_renders_the_switches(h200, tmp_path):

    dest, _m, _s = h200
    render_one("ablation", dest, tmp_path, "h200")
    values = json.loads((tmp_path / "ablation.values.json").read_text())
    assert values["baseline_arm"] == "batch" and values["arms"] == ["batch", "eager", "noprefix"]
    assert [i["measured"] for i in values["interactions"]] == [False]
    html = (tmp_path / "ablation.html").read_text()
    assert "not measured" in html and 'id="sec-interactions"' in html


def test_capture_ladder_and_phases_folders_in_a_run(tmp_path):
    mini = Path(__file__).resolve().parent / "fixtures" / "mini" / "runs"
    run = tmp_path / "out" / "serial" / "p1"
    shutil.copytree(mini / "req-serial", run / "ladder")
    shutil.copytree(mini / "phases-serial", run / "phases")
    m = _init(tmp_path / "camp", tmp_path / "out")
    assert {(r["id"], r["harness"], r["process"]) for r in m["runs"]} == {
        ("serial-ladder", "requests", "serial/p1"),
        ("serial-phases", "phases", "serial/p1"),
    }
    assert m["prompt_classes"] == {"short": {"tokens": 16}, "long": {"tokens": 64}}  # as the engine counted
    assert m["arms"]["serial"]["server_args"] == {"max_num_seqs": 1}  # the pocket line: batch width 1
    assert m["arms"]["serial"]["mode"] == "serial"
    assert any("batch width 1 ran, the engine declares max_slots=8" in t for t in m["todo"])


def test_two_processes_of_an_arm_give_the_spread_verdicts_use(tmp_path):
    """A second serial process (here the first one's files with every duration and request time 2 %
    longer: a repeat built for the test — with its requests unchanged it would be a copy, counted once)
    gives a 2 % run-to-run spread; batched vs serial at concurrency 8 is then a result, at concurrency 1
    (one request at a time on both) it is not."""
    from benchbook.analysis.ladder import results_ladder_analysis
    from benchbook.ingest.campaign import load_campaign

    _add_point(_run_folder(tmp_path / "serial" / "p1", "serial", "conc1"), "serial", "conc8")
    shutil.copytree(tmp_path / "serial" / "p1", tmp_path / "serial" / "p2")
    for p in (tmp_path / "serial" / "p2" / "results").glob("*.json"):
        d = json.loads(p.read_text())
        d["duration"] *= 1.02
        d["ttfts"] = [t * 1.02 for t in d["ttfts"]]
        d["itls"] = [[t * 1.02 for t in row] for row in d["itls"]]
        p.write_text(json.dumps(d))
    _add_point(_run_folder(tmp_path / "batch", "batch", "conc1"), "batch", "conc8")
    m = _init(tmp_path / "camp", tmp_path / "serial", tmp_path / "batch")
    assert {r["process"] for r in m["runs"]} == {"serial/p1", "serial/p2", "batch/1"}
    an = results_ladder_analysis(load_campaign(tmp_path / "camp"))
    assert an["spread"]["spread"] == pytest.approx(0.02)
    verdicts = {c["concurrency"]: c for c in an["comparisons"]}
    assert verdicts[8]["is_result"] is True and verdicts[8]["baseline_n"] == 2
    assert verdicts[1]["is_result"] is False


def test_a_folder_without_result_files_names_the_formats(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.md").write_text("nothing here")
    with pytest.raises(InputError) as e:
        init_cmd.plan([tmp_path / "empty"])
    assert "no result file in this folder" in str(e.value) and "vllm-bench-serve" in str(e.value)


def test_ladder_folders_of_two_arms_serial_judged_against_batched_with_the_processes_spread(tmp_path):
    """`capture ladder --arm A --run R` folders of a serial arm (two processes: the second the first's
    requests with every time 2 % later, a repeat built for the test) and a batched arm: init puts the
    serial arm first and pairs it with the batched one (each arm has an environment of its own, so the
    page's default pairing would find no pair); the ladder verdicts use the two processes' 2 % spread."""
    from benchbook.commands.summary import build

    mini = Path(__file__).resolve().parent / "fixtures" / "mini" / "runs"
    out = tmp_path / "caps"
    shutil.copytree(mini / "req-serial", out / "serial" / "p1" / "ladder")
    shutil.copytree(mini / "req-serial", out / "serial" / "p2" / "ladder")
    shutil.copytree(mini / "req-batch", out / "batch" / "p1" / "ladder")
    p2 = out / "serial" / "p2" / "ladder" / "requests.json"
    doc = json.loads(p2.read_text())
    for r in doc["requests"]:
        r["start"], r["end"] = r["start"] * 1.02, r["end"] * 1.02
    p2.write_text(json.dumps(doc))
    m = _init(tmp_path / "camp", out / "batch", out / "serial")  # the order given does not decide the roles
    assert [(a, v["mode"]) for a, v in m["arms"].items()] == [("serial", "serial"), ("batch", "batch")]
    assert [(c["baseline"], c["candidate"]) for c in m["comparisons"]] == [("serial", "batch")]
    s = build(tmp_path / "camp")
    assert s["noise"]["runs"] == ["serial-p1-ladder", "serial-p2-ladder"]
    assert s["noise"]["spread"] == pytest.approx(0.02)
    flat = {c["run"]: c["flat"] for c in s["checks"] if c["kind"] == "serialization"}
    assert flat == {"serial-p1-ladder": True, "serial-p2-ladder": True, "batch-ladder": False}
    cmp = {c["concurrency"]: c for c in s["comparisons"] if c["metric"] in ("single_tok_s", "ladder_tok_s")}
    assert cmp[4]["threshold"] == pytest.approx(0.02) and cmp[4]["state"] == "improvement", cmp[4]
    assert cmp[4]["candidate_median"] == pytest.approx(4 * 8 / 3)  # batch: 4 × 8 tokens in 3 s
    assert cmp[1]["state"] == "within noise", cmp[1]  # one request alone: the same 4 tok/s on both


def test_a_ladder_capture_json_names_the_model_and_a_second_generation_length_is_a_todo(tmp_path):
    mini = Path(__file__).resolve().parent / "fixtures" / "mini" / "runs"
    run = tmp_path / "out" / "serial" / "p1"
    shutil.copytree(mini / "req-serial", run / "ladder")
    shutil.copytree(mini / "phases-serial", run / "phases")
    cap = {
        "format": "benchbook.capture/1",
        "kind": "ladder",
        "complete": True,
        "server": {"model": "/models/toy-7b"},
        "prompt_classes": {"short": {"words": 12, "tokens": 17}},
        "generation_tokens": 32,
    }
    (run / "ladder" / "capture.json").write_text(json.dumps(cap))
    m = _init(tmp_path / "camp", tmp_path / "out")
    assert m["title"].startswith("toy-7b: capture ladder") and m["checkpoint"] == {"path": "/models/toy-7b"}
    assert m["generation_tokens"] == 8  # the phases' own, as the engine counted them
    assert any(t.startswith("generation_tokens: the captures asked for different --max-tokens") for t in m["todo"])


def test_the_pairs_the_baseline_page_judges_are_written(h200):
    """Each arm has an environment of its own, so without `comparisons` the baseline page paired none."""
    _dest, m, s = h200
    assert list(m["arms"])[0] == "serial"
    assert [(c["baseline"], c["candidate"], c["why"]) for c in m["comparisons"]] == [
        ("serial", "batch", "batch batches requests; serial serves them one at a time"),
        ("batch", "eager", "batch with cudagraph_mode NONE, enforce_eager True"),
        ("batch", "noprefix", "batch with enable_prefix_caching False"),
    ]
    pairs = {(c["baseline"], c["candidate"]) for c in s["comparisons"]}
    assert pairs == {("serial", "batch"), ("batch", "eager"), ("batch", "noprefix")}
    # one process per arm: no spread, so none is a result, and each says why
    assert not any(c["is_result"] for c in s["comparisons"])


def test_an_interrupted_load_point_is_copied_and_said_not_read(tmp_path):
    """A sweep cut short by a time limit (SIGTERM before the point's command wrote its result file):
    the point's capture.json says ``complete: false`` and names no result file, sweep.json says the
    sweep did not complete. init copies the folder with the process's, reads the points that finished,
    and says in ``todo`` which point was cut and what the sweep had done — instead of refusing the
    process. A point folder without a result file whose capture does not say it was interrupted is
    still refused."""
    run = _run_folder(tmp_path / "batch" / "p1", "batch", "conc1")
    cut = run / "conc8"
    (cut / "metrics").mkdir(parents=True)
    shutil.copy(H200 / "batch" / "metrics" / "conc8_before.prom", cut / "metrics" / "before.prom")
    stopped = "capture in progress (or killed before it could say why)"
    cap = {"format": "benchbook.capture/1", "kind": "run", "complete": False, "stopped": stopped}
    cap["started_at"] = "2026-12-01T22:03:28.890Z"
    cap["snapshots"] = [{"file": "metrics/before.prom", "phase": "before", "unix_s": 1.0}]
    cap["result_files"] = []
    (cut / "capture.json").write_text(json.dumps(cap))
    (cut / "command.log").write_text("")
    points = [{"point": "conc1", "status": "done"}, {"point": "conc8", "status": "running"}]
    sweep = {"format": "benchbook.capture/1", "kind": "sweep", "complete": False, "stopped": "killed", "points": points}
    (run / "sweep.json").write_text(json.dumps(sweep))
    m = _init(tmp_path / "camp", tmp_path / "batch")
    assert [r.get("point") for r in m["runs"] if r["harness"] == "results"] == ["conc1"]
    assert m["date"] == "2026-12-01"  # the capture folder's started_at (the files' mtimes are today's)
    todo = "\n".join(m["todo"])
    assert "run batch/p1: load point conc8 was interrupted before its result file was written" in todo
    assert (
        stopped in todo
        and "run batch/p1: its sweep did not complete (sweep.json: killed): conc1 done, conc8 running" in todo
    )
    copied = tmp_path / "camp" / "runs" / "batch" / "p1" / "conc8"
    assert (copied / "capture.json").read_bytes() == (cut / "capture.json").read_bytes()  # kept, byte for byte
    cap["complete"] = True  # a finished capture without a result file: nothing says why, refused as before
    (cut / "capture.json").write_text(json.dumps(cap))
    with pytest.raises(InputError) as e:
        _init(tmp_path / "camp2", tmp_path / "batch")
    assert "a load-point folder without a result file" in str(e.value)
