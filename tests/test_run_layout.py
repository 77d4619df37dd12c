"""Arm and run folders as they lie on disk (ingest.run_layout)."""

from __future__ import annotations

import json

from benchbook.ingest import gpu_runs, run_layout
from realdata import realdata

H200 = realdata("vllm_h200_llama8b")


def test_the_h200_arm_folder_is_one_run_with_paired_points():
    assert run_layout.classify(H200 / "batch") == "run"
    (rf,) = run_layout.run_folders(H200 / "batch")
    assert (rf.arm, rf.run) == ("batch", "1")
    pts = {p.name: p for p in rf.points}
    assert pts["conc8"].before.name == "conc8_before.prom" and pts["conc8"].after.name == "conc8_after.prom"
    assert [x.name for x in pts["conc8"].extra] == ["conc8_scrapes.jsonl"]
    assert "conc1" in pts and pts["conc1"].after.name == "conc1_after.prom"  # conc1 is not conc16's prefix
    assert rf.gpu.name == "gpu_samples.csv" and rf.host.name == "host_samples.csv" and rf.phases is not None


def test_stem_pairing_with_the_result_files_own_name(tmp_path):
    res = [tmp_path / "bench_conc2.json", tmp_path / "bench_conc16.json"]
    caps = [tmp_path / n for n in ("bench_conc16_before.prom", "bench_conc2_after.prom", "bench_conc2_before.prom")]
    pts = {p.name: p for p in run_layout._pair(res, caps)}
    assert pts["conc2"].before.name == "bench_conc2_before.prom" and pts["conc2"].after.name == "bench_conc2_after.prom"
    assert pts["conc16"].before.name == "bench_conc16_before.prom" and pts["conc16"].after is None


def test_arm_folder_of_run_folders_and_capture_layout(tmp_path):
    for run in ("r1", "r2"):
        pt = tmp_path / "out" / "batch" / run / "conc8"
        pt.mkdir(parents=True)
        (pt / "capture.json").write_text(json.dumps({"kind": "run", "result_files": []}))
    assert run_layout.classify(tmp_path / "out" / "batch" / "r1") == "run"
    assert run_layout.classify(tmp_path / "out" / "batch") == "arm"
    assert run_layout.classify(tmp_path / "out") == "arms"
    rfs = run_layout.run_folders(tmp_path / "out")
    assert [(r.arm, r.run, [p.name for p in r.point_folders]) for r in rfs] == [
        ("batch", "r1", ["conc8"]),
        ("batch", "r2", ["conc8"]),
    ]


def test_events_become_memory_markers():
    m = gpu_runs.event_markers(H200 / "serial" / "events.jsonl")
    events = [e for _t, e, _l in m]
    assert events[0] == "load_start" and "load_end" in events and events.count("stop") == 1
    assert ("request_start", "conc8") in {(e, label) for _t, e, label in m}


def test_the_harness_phases_file_in_benchbook_format():
    doc, classes, gen = run_layout.harness_phases(H200 / "serial" / "phases.json", "../../")
    assert classes == {"short": {"tokens": 183, "words": 128}, "long": {"tokens": 2126, "words": 1600}}
    assert gen == 32
    s0 = doc["samples"][0]
    assert s0["repeat"] == 0 and s0["warmup"] is True and s0["metrics_before"].startswith("../../metrics/")
    assert all("first_event_s" not in s for s in doc["samples"])  # a first token, not a role chunk


def test_a_gpu_run_naming_a_file_outside_the_campaign_is_refused(tmp_path):
    import pytest

    from benchbook.errors import InputError
    from benchbook.ingest.campaign import Run

    camp_root = tmp_path / "camp"
    run_dir = camp_root / "runs" / "a" / "1" / "benchbook" / "gpu"
    run_dir.mkdir(parents=True)
    (tmp_path / "outside.csv").write_text("timestamp, index, memory.used [MiB]\n")
    (run_dir / "gpu.json").write_text(json.dumps({"gpu_samples": "../../../../../../outside.csv"}))

    class Camp:
        root = camp_root

    with pytest.raises(InputError) as e:
        gpu_runs.input_files(Camp, Run("a-gpu", "a", "gpu", run_dir))
    assert "outside.csv" in str(e.value)


def test_a_folder_of_run_folders_is_one_arm_not_a_run():
    # the campaign's root holds four process folders: one arm of four runs as laid out (init's todo then
    # says the runs differ in what ran), never one run whose "load points" are whole processes
    assert run_layout.classify(H200) == "arm"
    assert [r.run for r in run_layout.run_folders(H200)] == ["batch", "eager", "noprefix", "serial"]
