"""`benchbook init DIR FILE…`: a campaign from result files and capture folders, valid and renderable
without editing, raw files copied byte for byte."""

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

from benchbook.commands.cli import main
from benchbook.errors import EXIT_BAD_INPUT

FIX = Path(__file__).resolve().parent / "fixtures"
CAPS = FIX / "vllm_captures"
VLLM = FIX / "realdata" / "vllm_bench_serving"
BENCH = VLLM / "er0080_bench_serve_v0.25.1.json"
SGLANG = FIX / "realdata" / "sglang_bench_serving" / "agg_n100_in512_out128_c32.jsonl"


def sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def capture_run_folder(root: Path) -> Path:
    """A folder shaped as `benchbook capture run` writes it (capture.json kind "run")."""
    (root / "metrics").mkdir(parents=True)
    (root / "results").mkdir()
    shutil.copyfile(BENCH, root / "results" / "bench.json")
    shutil.copyfile(CAPS / "idle.prom", root / "metrics" / "before.prom")
    shutil.copyfile(CAPS / "one_request.prom", root / "metrics" / "during-0001.prom")
    shutil.copyfile(CAPS / "loaded.prom", root / "metrics" / "after.prom")
    cap = {
        "format": "benchbook.capture/1",
        "kind": "run",
        "complete": True,
        "stopped": None,
        "started_at": "2026-08-16T16:08:50.000Z",
        "host": {"hostname": "bench-host", "cpu_count": 2, "gpu_memory": "not sampled (nvidia-smi not found)"},
        "command": {"argv": ["vllm", "bench", "serve", "--save-result"], "exit_status": 0},
        "snapshots": [
            {"file": "metrics/before.prom", "phase": "before", "unix_s": 1755360530.0},
            {"file": "metrics/during-0001.prom", "phase": "during", "unix_s": 1755360531.0},
            {"file": "metrics/after.prom", "phase": "after", "unix_s": 1755360532.0},
        ],
        "result_files": [{"file": "results/bench.json"}],
    }
    (root / "capture.json").write_text(json.dumps(cap))
    return root


def test_init_from_a_capture_run_and_loose_files_then_render(tmp_path, capsys):
    cap = capture_run_folder(tmp_path / "in" / "conc2")
    repeats = [VLLM / "er0080_sweep_maxnumseqs4_conc2_run0.json", VLLM / "er0080_sweep_maxnumseqs4_conc2_run1.json"]
    before = {p: sha(p) for p in [*cap.rglob("*.json"), *cap.rglob("*.prom"), *repeats, SGLANG] if p.is_file()}
    camp = tmp_path / "camp"
    assert main(["init", str(camp), str(cap), *map(str, repeats), str(SGLANG)]) == 0
    out = capsys.readouterr().out
    assert "is valid" in out
    m = json.loads((camp / "campaign.json").read_text())
    # what the files say
    assert m["date"] == "2026-08-16" and m["engine"] == {"name": "vllm", "profile": "vllm"}
    assert m["host"]["hostname"] == "bench-host" and m["provenance"] == "measured"
    assert [r["id"] for r in m["runs"]] == [
        "conc2",
        "er0080_sweep_maxnumseqs4_conc2_run0",
        "er0080_sweep_maxnumseqs4_conc2_run1",
        "agg_n100_in512_out128_c32",
    ]
    # arms follow the compare page's identity: the two sweep repeats (backend openai, max_num_seqs 4) are one
    # configuration; the bench serve run of the same short name (backend vllm) is another, and its label says
    # what differs; SGLang's run is a third
    arms = {r["id"]: r["arm"] for r in m["runs"]}
    run0, run1 = (f"er0080_sweep_maxnumseqs4_conc2_run{i}" for i in (0, 1))
    assert arms[run0] == arms[run1] and len({arms["conc2"], arms[run0], arms["agg_n100_in512_out128_c32"]}) == 3
    # an arm is a server configuration, not a load: its label names no rate, concurrency or prompt count
    assert m["arms"][arms["conc2"]]["label"] == "opt-125m"
    assert m["arms"][arms[run0]]["label"] == "opt-125m (backend openai, max_num_seqs 4)"
    # what a person must decide, marked
    assert m["question"].startswith("TODO:") and any(t.startswith("question:") for t in m["todo"])
    assert any("treated as repeats" in t for t in m["todo"])
    # the capture's snapshots: before/after are the window; every timed scrape is a snapshot
    rj = json.loads((camp / "runs" / "conc2" / "results.json").read_text())
    assert rj["metrics_before"] == "metrics/before.prom" and rj["metrics_after"] == "metrics/after.prom"
    assert [(s["file"], s["unix_s"]) for s in rj["snapshots"]] == [
        ("metrics/before.prom", 1755360530.0),
        ("metrics/during-0001.prom", 1755360531.0),
        ("metrics/after.prom", 1755360532.0),
    ]
    assert rj["command"][:3] == ["vllm", "bench", "serve"]
    # raw files unchanged, copies identical
    assert {p: sha(p) for p in before} == before
    assert sha(camp / "runs" / "conc2" / "results" / "bench.json") == sha(BENCH)
    assert sha(camp / "runs" / "agg_n100_in512_out128_c32" / SGLANG.name) == sha(SGLANG)
    assert sha(BENCH) in (camp / "README.md").read_text()
    # renders without editing: the compare page with the reconciliation
    assert main(["render", str(camp), "--out", str(tmp_path / "out")]) == 0
    v = json.loads((tmp_path / "out" / "compare.values.json").read_text())
    assert len(v["runs"]) == 4 and v["todo"] == m["todo"]
    engine = {c["name"]: c["status"] for c in v["checks"] if c["kind"] == "engine" and c["run"] == "conc2"}
    assert engine["model: engine series vs client model"] == "fail"  # opt-125m-tp2's window vs facebook/opt-125m


def test_init_from_a_plain_folder_orders_captures_by_counters(tmp_path):
    src = tmp_path / "plain"
    src.mkdir()
    shutil.copyfile(BENCH, src / "bench.json")
    shutil.copyfile(CAPS / "loaded.prom", src / "a.prom")  # names say nothing: counters do
    shutil.copyfile(CAPS / "idle.prom", src / "b.prom")
    camp = tmp_path / "camp"
    assert main(["init", "-q", str(camp), str(src)]) == 0
    rj = json.loads((camp / "runs" / "plain" / "results.json").read_text())
    assert rj["metrics_before"] == "b.prom" and rj["metrics_after"] == "a.prom"


def test_init_from_a_phases_folder_renders_the_baseline_page(tmp_path):
    src = shutil.copytree(FIX / "mini" / "runs" / "phases-serial", tmp_path / "phases-run")
    camp = tmp_path / "camp"
    r = subprocess.run(
        [sys.executable, "-m", "benchbook.commands.cli", "init", str(camp), str(src)], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr
    m = json.loads((camp / "campaign.json").read_text())
    # tokens as the engine counted them for one request (mini's manifest says 16/64 and 8)
    assert m["prompt_classes"] == {"short": {"tokens": 16}, "long": {"tokens": 64}}
    assert m["generation_tokens"] == 8 and m["engine"]["profile"] == "pocket"
    assert any(t.startswith("generation_tokens:") for t in m["todo"])
    assert m["runs"] == [{"id": "phases-run", "harness": "phases", "path": "runs/phases-run", "arm": "phases-run"}]
    assert main(["render", str(camp), "--out", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "baseline.html").is_file()


def test_init_refuses_a_non_empty_folder_and_unknown_files(tmp_path, capsys):
    camp = tmp_path / "camp"
    camp.mkdir()
    (camp / "keep.txt").write_text("mine")
    assert main(["init", str(camp), str(BENCH)]) == EXIT_BAD_INPUT
    assert "exists and is not empty" in capsys.readouterr().err
    assert (camp / "keep.txt").read_text() == "mine" and not (camp / "campaign.json").exists()
    junk = tmp_path / "notes.json"
    junk.write_text('{"hello": 1}')
    assert main(["init", str(tmp_path / "new"), str(junk)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert str(junk) in err and "Traceback" not in err
    # loose captures beside two result files: which run they belong to is not guessed
    assert main(["init", str(tmp_path / "new2"), str(BENCH), str(VLLM / "er0080_sweep_maxnumseqs4_conc2_run0.json"),
                 str(CAPS / "idle.prom"), str(CAPS / "loaded.prom")]) == EXIT_BAD_INPUT  # fmt: skip
    assert "cannot tell which run they belong to" in capsys.readouterr().err


def test_init_reads_phase_samples_with_the_campaign_reader_a_capture_outside_the_folder_is_refused(tmp_path, capsys):
    """init counts the prompt tokens through the campaign's one phase-sample reader
    (ingest.campaign.capture_sample_snapshots): a snapshot named outside the phases folder is bad
    input naming phases.json and the sample, not read from wherever it points (issue 26)."""
    src = shutil.copytree(FIX / "mini" / "runs" / "phases-serial", tmp_path / "phases-run")
    shutil.copyfile(src / "metrics" / "s0.prom", tmp_path / "outside.prom")
    doc = json.loads((src / "phases.json").read_text())
    doc["samples"][0]["metrics_before"] = "../outside.prom"
    (src / "phases.json").write_text(json.dumps(doc))
    camp = tmp_path / "camp"
    assert main(["init", "-q", str(camp), str(src)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "phases.json" in err and "$.samples[0].metrics_before" in err and "Traceback" not in err
    assert not (camp / "campaign.json").exists()
