"""`benchbook capture sweep`: one `capture run` per load point, the value substituted into the command.

Against the small OpenAI-compatible server (tests/fake_openai.py) with a stand-in benchmark client
(tests/sweep_bench.py), and once against the real vLLM CPU engine with `vllm bench serve`
(tests/engine.py), followed by `benchbook init` on what it wrote."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

import fake_openai
from benchbook.commands.capture_sweep import evaluate, parse_values, plan, substitute
from benchbook.errors import InputError
from benchbook.jsonfile import validate

BENCH = str(Path(__file__).with_name("sweep_bench.py"))


def _bb(*args: str, timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "benchbook.commands.cli", *args], capture_output=True, text=True, timeout=timeout, **kw
    )


def _bench(res: Path, *extra: str) -> list[str]:
    return [
        sys.executable, BENCH, "--base-url", "{url}", "--num-prompts", "{num_prompts}",
        "--max-concurrency", "{concurrency}", "--result-dir", str(res),
        "--result-filename", "bench_conc{concurrency}.json", *extra,
    ]  # fmt: skip


def test_placeholders_arithmetic_and_what_is_left_alone():
    env = {"concurrency": 16, "index": 2, "point": "conc16", "url": "http://h:1", "num_prompts": 64}
    assert substitute("--max-concurrency={concurrency}", env, "a") == "--max-concurrency=16"
    assert substitute("{4*concurrency}", env, "a") == "64"
    assert substitute("{max(32, concurrency // 4)}", env, "a") == "32"
    assert substitute("{ceil(concurrency / 3)}", env, "a") == "6"
    assert substitute("bench_conc{concurrency}.json", env, "a") == "bench_conc16.json"
    assert substitute("{point}-{index}", env, "a") == "conc16-2"
    assert substitute("{url}/v1", env, "a") == "http://h:1/v1"
    # JSON and other braces are not placeholders
    assert substitute('{"temperature": 0, "x": {"y": 1}}', env, "a") == '{"temperature": 0, "x": {"y": 1}}'
    assert substitute("{5}", env, "a") == "{5}"
    assert substitute("{concurrency / 32}", env, "a") == "0.5"
    rate = {"rate": math.inf, "index": 0, "point": "rateinf", "url": "u"}
    assert substitute("--request-rate {rate}", rate, "a") == "--request-rate inf"
    assert evaluate("min(200, 30*rate)", rate, "x") == 200
    for bad, msg in (
        ("{concurrency}", "unknown name 'concurrency'"),
        ("{rate ** 2}", "only"),
        ("{__import__(os)}", "only"),
        ("{url*2}", "is text"),
        ("{int(rate)}", "cannot be computed"),
    ):
        with pytest.raises(InputError, match=msg.replace("*", r"\*")):
            substitute(bad, rate, "arg")


def test_points_are_planned_and_checked_before_anything_runs():
    assert parse_values("--concurrency", "1,4,16,64") == [1, 4, 16, 64]
    assert parse_values("--rate", "2, 8.5 ,inf") == [2.0, 8.5, math.inf]
    for opt, bad in (("--concurrency", "0,2"), ("--concurrency", "1.5"), ("--rate", "2,2"), ("--rate", "x"),
                     ("--rate", "-1"), ("--concurrency", "")):  # fmt: skip
        with pytest.raises(InputError, match=opt):
            parse_values(opt, bad)
    pts = plan(variable="rate", values=[2.0, 8.5, math.inf], point_prefix="rate", command=["b", "--n", "{num_prompts}"],
               results=["res/{point}"], num_prompts_expr="min(100, 10*rate)", url="u")  # fmt: skip
    assert [(p["point"], p["num_prompts"], p["argv"][-1], p["results"]) for p in pts] == [
        ("rate2", 20, "20", ["res/rate2"]),
        ("rate8.5", 85, "85", ["res/rate8.5"]),
        ("rateinf", 100, "100", ["res/rateinf"]),
    ]
    with pytest.raises(InputError, match="whole number"):
        plan(variable="rate", values=[math.inf], point_prefix="rate", command=["b"], results=[],
             num_prompts_expr="30*rate", url="u")  # fmt: skip


def test_sweep_runs_each_point_as_a_capture_run_and_init_reads_the_layout(tmp_path):
    root, res = tmp_path / "caps", tmp_path / "res"
    # an engine that counts each request 0.3 s after its last byte: the point's after scrape waits for it
    with fake_openai.serving(count_delay_s=0.3) as (url, st):
        r = _bb(
            "capture", "sweep", "--url", url, "--arm", "batch", "--run", "p1", "--out", str(root),
            "--every", "0.2", "--concurrency", "1,4", "--num-prompts-per-point", "max(3, 2*concurrency)",
            "--", *_bench(res),
        )  # fmt: skip
        assert r.returncode == 0, r.stderr + r.stdout
        assert len(st.bodies) == 3 + 8
    run = root / "batch" / "p1"
    assert sorted(p.name for p in run.iterdir()) == [
        "conc1",
        "conc4",
        "events.jsonl",
        "host_samples.csv",
        "sweep.json",
        "version.json",  # the server's GET /version (capture.json's server_facts)
    ]
    sweep = json.loads((run / "sweep.json").read_text())
    validate(sweep, "capture", run / "sweep.json")
    assert sweep["kind"] == "sweep" and sweep["complete"] is True and sweep["stopped"] is None
    assert sweep["sweep"]["values"] == [1, 4] and sweep["sweep"]["variable"] == "concurrency"
    assert [(p["point"], p["status"], p["num_prompts"]) for p in sweep["points"]] == [
        ("conc1", "done", 3),
        ("conc4", "done", 8),
    ]
    for p, n, c in ((sweep["points"][0], 3, 1), (sweep["points"][1], 8, 4)):
        cap = json.loads((run / p["folder"] / "capture.json").read_text())
        validate(cap, "capture", run / p["folder"] / "capture.json")
        assert cap["kind"] == "run" and cap["complete"] is True and cap["layout"]["folder"] == f"batch/p1/conc{c}"
        argv = cap["command"]["argv"]
        assert argv[argv.index("--max-concurrency") + 1] == str(c) and argv[argv.index("--base-url") + 1] == url
        assert argv[argv.index("--result-filename") + 1] == f"bench_conc{c}.json"
        # each point copies its own result file, not the earlier points' in the same --result-dir
        assert [f["file"] for f in cap["result_files"]] == [f"results/bench_conc{c}.json"]
        s = p["summary"]
        assert s["completed"] == n and s["result_file"] == f"results/bench_conc{c}.json"
        assert s["engine"] == {"requests": n, "generation_tokens": 4 * n}
        assert cap["settle"]["expected"] == n and cap["settle"]["counted"] == n and not cap["settle"]["timed_out"]
    assert "capture sweep: point 2 of 2: conc4" in r.stdout and "ETA" in r.stdout
    lines = r.stdout.splitlines()
    tail = lines[lines.index("capture sweep: every point done") + 1 :]
    assert [t.split()[:2] for t in tail] == [["conc1", "done"], ["conc4", "done"]]
    assert "3 requests" in tail[0] and "output tok/s" in tail[0] and "engine: 3 requests finished" in tail[0]
    # init reads the run folder as it lies: one results run per point, each with its engine window
    r = _bb("init", str(tmp_path / "camp"), str(root))
    assert r.returncode == 0, r.stderr[-3000:] + r.stdout[-3000:]
    manifest = json.loads((tmp_path / "camp" / "campaign.json").read_text())
    got = sorted((x["point"], x["harness"]) for x in manifest["runs"] if x["harness"] == "results")
    assert got == [("conc1", "results"), ("conc4", "results")]
    # the sweep's host_samples.csv is the process's gpu run (gpu/gpu.json, docs/init.md): no results.json
    assert {x["harness"] for x in manifest["runs"]} == {"results", "gpu"}
    for x in (x for x in manifest["runs"] if x["harness"] == "results"):
        doc = json.loads((tmp_path / "camp" / x["path"] / "results.json").read_text())
        assert doc["metrics_before"].endswith("before.prom") and doc["metrics_after"].endswith("after.prom")


def test_a_failed_point_stops_the_sweep_and_says_what_did_not_run(tmp_path):
    root, res = tmp_path / "caps", tmp_path / "res"
    with fake_openai.serving() as (url, _st):
        r = _bb(
            "capture", "sweep", "--url", url, "--arm", "a", "--run", "p1", "--out", str(root), "--every", "0.5",
            "--concurrency", "1,4,16", "--num-prompts", "concurrency", "--", *_bench(res, "--fail-at", "4"),
        )  # fmt: skip
    assert r.returncode == 3, r.stderr + r.stdout
    run = root / "a" / "p1"
    sweep = json.loads((run / "sweep.json").read_text())
    validate(sweep, "capture", run / "sweep.json")
    assert sweep["complete"] is False
    assert [(p["point"], p["status"]) for p in sweep["points"]] == [
        ("conc1", "done"),
        ("conc4", "failed"),
        ("conc16", "not run"),
    ]
    assert "point conc4 (2 of 3) failed" in sweep["stopped"] and "exit status 3" in sweep["stopped"]
    assert sweep["stopped"].endswith("not run: conc16")
    assert sweep["points"][1]["exit_status"] == 3
    assert not (run / "conc16").exists()
    cap = json.loads((run / "conc4" / "capture.json").read_text())
    assert cap["complete"] is False and "failing on purpose" in (run / "conc4" / "command.log").read_text()
    assert "stopped: point conc4" in r.stdout and "not run" in r.stdout.splitlines()[-1]


def test_a_rate_sweep_names_its_points_rate_r(tmp_path):
    root, res = tmp_path / "caps", tmp_path / "res"
    with fake_openai.serving() as (url, st):
        r = _bb(
            "capture", "sweep", "--url", url, "--arm", "a", "--run", "p1", "--out", str(root), "--every", "0.5",
            "--rate", "2,inf", "--num-prompts", "2", "--",
            sys.executable, BENCH, "--base-url", "{url}", "--num-prompts", "{num_prompts}", "--request-rate", "{rate}",
            "--result-dir", str(res), "--result-filename", "bench_{point}.json",
        )  # fmt: skip
        assert r.returncode == 0, r.stderr + r.stdout
    run = root / "a" / "p1"
    assert sorted(p.name for p in run.iterdir()) == [
        "events.jsonl",
        "host_samples.csv",
        "rate2",
        "rateinf",
        "sweep.json",
        "version.json",
    ]
    sweep = json.loads((run / "sweep.json").read_text())
    assert sweep["sweep"]["values"] == [2, "inf"] and [p["value"] for p in sweep["points"]] == [2, "inf"]
    cap = json.loads((run / "rateinf" / "capture.json").read_text())
    assert cap["command"]["argv"][cap["command"]["argv"].index("--request-rate") + 1] == "inf"
    assert [f["file"] for f in cap["result_files"]] == ["results/bench_rateinf.json"]


def test_bad_sweeps_are_refused_before_anything_is_sent(tmp_path):
    with fake_openai.serving() as (url, st):
        base = ["capture", "sweep", "--url", url, "--arm", "a", "--run", "p1", "--out", str(tmp_path / "o")]
        for args, msg in (
            (["--concurrency", "1,2", "--", "echo", "{rate}"], "unknown name 'rate'"),
            (["--concurrency", "1,2", "--", "echo", "{num_prompts}"], "unknown name 'num_prompts'"),
            (["--concurrency", "1,x", "--", "echo"], "--concurrency"),
            (["--concurrency", "1", "--rate", "2", "--", "echo"], "not allowed with"),
            (["--concurrency", "1", "--", "no-such-benchmark-tool"], "not found on PATH"),
            (["--concurrency", "1"], "no benchmark command"),
            (["--concurrency", "1", "--point-prefix", "a/b", "--", "echo"], "a folder name"),
        ):
            r = _bb(*base, *args)
            assert r.returncode == 2 and msg in r.stderr, (args, r.stderr)
        assert st.bodies == [] and not (tmp_path / "o").exists()
        (tmp_path / "o" / "a" / "p1" / "conc2").mkdir(parents=True)
        (tmp_path / "o" / "a" / "p1" / "conc2" / "x").write_text("mine")
        r = _bb(*base, "--concurrency", "1,2", "--", "echo")
        assert r.returncode == 2 and "conc2: -: the point folder exists and is not empty" in r.stderr
        assert not (tmp_path / "o" / "a" / "p1" / "conc1").exists()


# ---- against the real vLLM CPU engine: `vllm bench serve` at each point (tests/engine.py) ----


def test_sweep_around_vllm_bench_serve_on_the_cpu_engine(tmp_path, batched_engine):
    """`capture sweep` run by the engine venv's Python around `vllm bench serve` on the run's batched engine."""
    import engine as eng

    root, res = tmp_path / "caps", tmp_path / "res"
    e = batched_engine
    env = {**eng.engine_env(), "PYTHONPATH": str(eng.ROOT / "lib")}
    r = subprocess.run(
        [
            str(eng.PYTHON), "-m", "benchbook", "capture", "sweep", "--url", e.url, "--arm", "default",
            "--run", "p1", "--out", str(root), "--every", "0.5", "--concurrency", "1,2",
            "--num-prompts-per-point", "2*concurrency", "--server-pid", str(e.pid or 1), "--",
            "vllm", "bench", "serve", "--backend", "vllm", "--base-url", "{url}", "--model", e.model,
            "--tokenizer", str(e.model_dir), "--dataset-name", "random", "--random-input-len", "16",
            "--random-output-len", "4", "--ignore-eos", "--num-prompts", "{num_prompts}",
            "--max-concurrency", "{concurrency}", "--seed", "{index}", "--save-result",
            "--result-dir", str(res), "--result-filename", "bench_conc{concurrency}.json",
        ],
        capture_output=True, text=True, timeout=1500, env=env, preexec_fn=eng.prioritized(),  # ahead, like the engine
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:] + r.stdout[-3000:]
    run = root / "default" / "p1"
    sweep = json.loads((run / "sweep.json").read_text())
    validate(sweep, "capture", run / "sweep.json")
    assert sweep["complete"] is True and [p["status"] for p in sweep["points"]] == ["done", "done"]
    for p, c in zip(sweep["points"], (1, 2)):
        s = p["summary"]
        assert s["tool"] == "vllm bench serve" and s["completed"] == 2 * c and s["output_throughput"] > 0
        # the engine finished the point's requests (and vllm bench serve's own test request, when it sends one)
        assert s["engine"]["requests"] in (2 * c, 2 * c + 1), s
        cap = json.loads((run / p["folder"] / "capture.json").read_text())
        assert [f["file"] for f in cap["result_files"]] == [f"results/bench_conc{c}.json"]
    print("\n" + "\n".join(r.stdout.splitlines()[-3:]), file=sys.stderr)
    r = _bb("init", str(tmp_path / "camp"), str(root), timeout=600)
    assert r.returncode == 0, r.stderr[-3000:] + r.stdout[-3000:]
    manifest = json.loads((tmp_path / "camp" / "campaign.json").read_text())
    assert sorted(x["point"] for x in manifest["runs"] if x["harness"] == "results") == ["conc1", "conc2"]
