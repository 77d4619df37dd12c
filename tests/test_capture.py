"""`benchbook capture` against a tiny local HTTP server (a unit-test aid: tests/test_engine_capture.py runs
the same commands against a real vLLM engine)."""

from __future__ import annotations

import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from benchbook.commands.capture_run import result_dirs_from_command
from benchbook.commands.scrape import metrics_url
from benchbook.errors import InputError
from benchbook.jsonfile import validate

METRICS = """# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 0.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 0.0
# HELP vllm:prompt_tokens_total Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="m"} 0.0
"""


class _Handler(http.server.BaseHTTPRequestHandler):
    routes: dict[str, tuple[int, str, str]] = {}

    def do_GET(self):  # noqa: N802 - http.server's name
        code, ctype, body = self.routes.get(self.path, (404, "text/plain", "not found"))
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *a):
        pass


@pytest.fixture(scope="module")
def server():
    _Handler.routes = {
        "/metrics": (200, "text/plain; version=0.0.4", METRICS),
        "/page": (200, "text/html", "<!doctype html><html><body>hello</body></html>"),
        "/json": (200, "application/json", '{"object": "list"}'),
        "/broken": (500, "text/plain", "boom"),
    }
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def _bb(*args: str, timeout: float = 60, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "benchbook.commands.cli", *args], capture_output=True, text=True, timeout=timeout, **kw
    )


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_metrics_url_completes_a_bare_server_url():
    assert metrics_url("http://127.0.0.1:8000") == "http://127.0.0.1:8000/metrics"
    assert metrics_url("http://h:1/custom/metrics") == "http://h:1/custom/metrics"
    with pytest.raises(InputError, match="not an http"):
        metrics_url("127.0.0.1:8000")


def test_result_dirs_are_read_from_the_commands_options():
    cmd = ["vllm", "bench", "serve", "--result-dir", "out", "--save-result"]
    assert result_dirs_from_command(cmd) == ["out"]
    assert result_dirs_from_command(["guidellm", "--output-path=a/b.json"]) == ["a/b.json"]
    assert result_dirs_from_command(["x"]) == []


def test_unreachable_server_is_exit_4_with_the_url_and_no_folder(tmp_path):
    url = f"http://127.0.0.1:{_closed_port()}"
    r = _bb("capture", "run", "--metrics", url, "--retries", "2", "--out", str(tmp_path / "r"), "--", "true")
    assert r.returncode == 4, r.stderr
    assert f"{url}/metrics: cannot connect" in r.stderr and "after 2 attempts" in r.stderr
    assert not (tmp_path / "r").exists()
    r = _bb("capture", "phases", "--url", url, "--model", "m", "--retries", "1", "--out", str(tmp_path / "p"))
    assert r.returncode == 4 and "cannot connect" in r.stderr


@pytest.mark.parametrize("path, what", [("/page", "answered HTML"), ("/json", "answered JSON")])
def test_an_endpoint_that_is_not_prometheus_text_is_exit_2(server, tmp_path, path, what):
    r = _bb("capture", "run", "--metrics", server + path, "--out", str(tmp_path / "r"), "--", "true")
    assert r.returncode == 2, r.stderr
    assert f"{server}{path}: -: {what}, not Prometheus text exposition" in r.stderr
    assert "Traceback" not in r.stderr


def test_http_errors_are_retried_then_exit_4(server, tmp_path):
    r = _bb(
        "capture", "run", "--metrics", server + "/broken", "--retries", "2", "--out", str(tmp_path / "r"), "--", "true"
    )
    assert r.returncode == 4 and "HTTP 500 after 2 attempts" in r.stderr
    r = _bb("capture", "run", "--metrics", server + "/nothing", "--out", str(tmp_path / "r"), "--", "true")
    assert r.returncode == 4 and "HTTP 404" in r.stderr


def test_capture_run_records_the_command_snapshots_and_result_files(server, tmp_path):
    res = tmp_path / "res"
    script = (
        f"import os, time; os.makedirs({str(res)!r}, exist_ok=True); time.sleep(1.2); "
        f"open(os.path.join({str(res)!r}, 'bench.json'), 'w').write('{{\"ok\": 1}}'); print('bench done')"
    )
    out = tmp_path / "run"
    r = _bb(
        "capture",
        "run",
        "--metrics",
        server,
        "--every",
        "0.3",
        "--out",
        str(out),
        "--",
        sys.executable,
        "-c",
        script,
        "--result-dir",
        str(res),
    )
    assert r.returncode == 0, r.stderr
    assert "bench done" in r.stdout
    cap = json.loads((out / "capture.json").read_text())
    validate(cap, "capture", out / "capture.json")
    assert cap["complete"] is True and cap["stopped"] is None
    assert cap["engine_profile"] == "vllm"
    assert cap["command"]["exit_status"] == 0 and cap["command"]["argv"][0] == sys.executable
    phases = [s["phase"] for s in cap["snapshots"]]
    assert phases[0] == "before" and phases[-1] == "after" and phases.count("during") >= 2
    assert all((out / s["file"]).read_text() == METRICS for s in cap["snapshots"])
    times = [s["unix_s"] for s in cap["snapshots"]]
    assert times == sorted(times)
    (rf,) = cap["result_files"]
    assert rf["file"] == "results/bench.json" and (out / rf["file"]).read_text() == '{"ok": 1}'
    assert (out / "command.log").read_text().strip() == "bench done"
    assert cap["host"]["gpu_memory"].startswith("not sampled") or "gpus" in cap["host"]["gpu_memory"]


def test_a_failed_command_is_recorded_and_its_status_returned(server, tmp_path):
    out = tmp_path / "run"
    r = _bb("capture", "run", "--metrics", server, "--out", str(out), "--", sys.executable, "-c", "raise SystemExit(3)")
    assert r.returncode == 3
    cap = json.loads((out / "capture.json").read_text())
    assert cap["complete"] is False and "exit status 3" in cap["stopped"]
    assert cap["command"]["exit_status"] == 3


def test_an_existing_nonempty_out_folder_is_refused(server, tmp_path):
    (tmp_path / "x.txt").write_text("mine")
    r = _bb("capture", "run", "--metrics", server, "--out", str(tmp_path), "--", "true")
    assert r.returncode == 2 and "not empty" in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.txt"]


def test_ctrl_c_leaves_a_valid_partial_run_marked_incomplete(server, tmp_path):
    out = tmp_path / "run"
    marker = tmp_path / "child.pid"
    script = f"import os, time; open({str(marker)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "benchbook.commands.cli",
            "capture",
            "run",
            "--metrics",
            server,
            "--every",
            "0.2",
            "--out",
            str(out),
            "--",
            sys.executable,
            "-c",
            script,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.6)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 130, err
    cap = json.loads((out / "capture.json").read_text())
    validate(cap, "capture", out / "capture.json")
    assert cap["complete"] is False and "Ctrl-C" in cap["stopped"]
    assert cap["command"]["exit_status"] is not None  # the command was stopped and waited for
    child = int(marker.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)
    assert [s["phase"] for s in cap["snapshots"]][-1] == "after"


def test_time_limit_stops_the_command(server, tmp_path):
    out = tmp_path / "run"
    r = _bb(
        "capture",
        "run",
        "--metrics",
        server,
        "--every",
        "0.2",
        "--time-limit",
        "1",
        "--out",
        str(out),
        "--",
        "sleep",
        "30",
    )
    cap = json.loads((out / "capture.json").read_text())
    assert cap["complete"] is False and "time limit of 1 s" in cap["stopped"]
    # stopped by the limit's SIGTERM (`sleep 30` ending on its own has no signal), not before the limit
    assert cap["command"]["signal"] == "SIGTERM" and cap["command"]["duration_s"] >= 1
    assert r.returncode == 143  # as a shell reports a command ended by SIGTERM


def test_prompt_classes_come_from_text_or_a_file(tmp_path):
    from benchbook.commands.capture_phases import default_prompts, parse_prompt

    (tmp_path / "long.txt").write_text("many words here")
    assert parse_prompt("short=Tell me") == ("short", "Tell me")
    assert parse_prompt(f"long=@{tmp_path / 'long.txt'}") == ("long", "many words here")
    with pytest.raises(InputError, match="NAME=TEXT"):
        parse_prompt("no-equals-sign")
    with pytest.raises(InputError, match="letters, digits"):
        parse_prompt("a b=text")
    assert {k: len(v.split()) for k, v in default_prompts().items()} == {"short": 128, "long": 1024}


def test_a_killed_capture_does_not_leave_the_benchmark_running(server, tmp_path):
    out, marker = tmp_path / "run", tmp_path / "child.pid"
    script = f"import os, time; open({str(marker)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    p = subprocess.Popen(
        [sys.executable, "-m", "benchbook.commands.cli", "capture", "run", "--metrics", server, "--out", str(out), "--",
         sys.executable, "-c", script],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    p.kill()  # SIGKILL: benchbook cannot clean up, the kernel tells the child
    p.wait()
    child = int(marker.read_text())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)
    cap = json.loads((out / "capture.json").read_text())
    assert cap["complete"] is False and "killed before it could say why" in cap["stopped"]


# What an engine's own Python environment lacks: capture must not import any of it (issue 22).
NOT_ON_AN_ENGINE_HOST = (
    "polars", "numpy", "orjson", "altair", "jupyter", "jupyter_client", "jupyter_core", "papermill", "pandas",
    "pyarrow", "scipy", "nbformat", "nbconvert", "ipykernel", "vl_convert", "yaml",
)  # fmt: skip

BLOCKER = f"""
import sys
BLOCKED = {NOT_ON_AN_ENGINE_HOST!r}
class _Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"blocked for the test: {{name}} is not on an engine host")
        return None
sys.meta_path.insert(0, _Blocker())
"""


def test_capture_imports_nothing_an_engine_environment_lacks(server, tmp_path):
    """`python -m benchbook capture phases|ladder|run|sweep` with the analysis/notebook stack unimportable (a
    meta-path blocker in sitecustomize), against the small OpenAI-compatible server."""
    import fake_openai

    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(BLOCKER)
    lib = str(Path(__file__).resolve().parents[1] / "lib")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), lib])}

    def bb(*args):
        return subprocess.run(
            [sys.executable, "-m", "benchbook", "capture", *args], capture_output=True, text=True, env=env, timeout=60
        )

    probe = subprocess.run([sys.executable, "-c", "import polars"], capture_output=True, text=True, env=env)
    assert probe.returncode == 1 and "blocked for the test" in probe.stderr  # the blocker works
    with fake_openai.serving() as (url, _st):
        common = ["--url", url, "--model", "m", "--max-tokens", "2", "--warmup", "0", "--arm", "a", "--run", "p1"]
        r = bb("phases", *common, "--repeats", "1", "--out", str(tmp_path / "o"))
        assert r.returncode == 0, r.stderr
        r = bb("ladder", *common, "--concurrency", "1,2", "--interleave", "--out", str(tmp_path / "o"))
        assert r.returncode == 0, r.stderr
        r = bb("run", "--metrics", url, "--every", "0.2", "--arm", "a", "--run", "p1", "--point", "c1",
               "--out", str(tmp_path / "o"), "--", sys.executable, "-c", "import time; time.sleep(0.5)")  # fmt: skip
        assert r.returncode == 0, r.stderr
        r = bb("sweep", "--url", url, "--every", "0.2", "--arm", "a", "--run", "p1", "--concurrency", "1,2",
               "--point-prefix", "s", "--out", str(tmp_path / "o"), "--",
               sys.executable, "-c", "import sys, time; time.sleep(0.3 * int(sys.argv[1]))", "{concurrency}")  # fmt: skip
        assert r.returncode == 0, r.stderr
        assert "every point done" in r.stdout
    run = tmp_path / "o" / "a" / "p1"
    assert sorted(p.name for p in run.iterdir()) == [
        "c1",
        "events.jsonl",
        "host_samples.csv",
        "ladder",
        "phases",
        "s1",
        "s2",
        "sweep.json",
        "version.json",  # the server's GET /version, saved once for the process
    ]
    validate(json.loads((run / "sweep.json").read_text()), "capture", run / "sweep.json")
    for point in ("c1", "ladder", "phases", "s1", "s2"):
        cap = json.loads((run / point / "capture.json").read_text())
        validate(cap, "capture", run / point / "capture.json")
        assert cap["complete"] is True and cap["layout"]["folder"] == f"a/p1/{point}"


def test_every_capture_appends_its_steps_markers_to_the_run_folders_events(tmp_path):
    """phases (a line per round), ladder (per step), run (its command), sweep (its points' runs): appended
    to OUT/ARM/RUN/events.jsonl in the runner's format, which init reads as memory markers."""
    import fake_openai
    from benchbook.ingest import run_layout
    from benchbook.ingest.gpu_runs import event_markers

    root = tmp_path / "o"
    run = root / "a" / "p1"
    run.mkdir(parents=True)
    (run / "events.jsonl").write_text('{"event": "server_start", "t": 1.5}\n')  # the user's own line stays
    with fake_openai.serving() as (url, _st):
        common = ["--url", url, "--model", "m", "--max-tokens", "2", "--arm", "a", "--run", "p1", "--out", str(root)]
        for args in (
            ["phases", *common, "--repeats", "2", "--warmup", "1"],
            ["ladder", *common, "--concurrency", "1,2", "--warmup", "0", "--interleave", "--interleave-delay", "0.1"],
            ["run", "--metrics", url, "--every", "0.2", "--arm", "a", "--run", "p1", "--point", "c1", "--out",
             str(root), "--", sys.executable, "-c", "import time; time.sleep(0.3)"],
            ["sweep", "--url", url, "--every", "0.2", "--arm", "a", "--run", "p1", "--out", str(root),
             "--concurrency", "1,2", "--", sys.executable, "-c", "import time; time.sleep(0.2)"],
        ):  # fmt: skip
            t0 = time.time()
            r = _bb("capture", *args)
            assert r.returncode == 0, r.stderr
    lines = [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines()]
    assert lines[0] == {"event": "server_start", "t": 1.5}
    got = [(x["event"], x.get("kind")) for x in lines[1:]]
    assert got == [
        ("bench_phases/round-0", "phases"),
        ("bench_phases/round-1", "phases"),
        ("bench_phases/round-2", "phases"),
        ("bench_ladder/single", "ladder"),
        ("bench_ladder/ladder-2", "ladder"),
        ("bench_ladder/interleave", "ladder"),
        ("bench_c1", "run"),
        ("bench_conc1", "run"),
        ("bench_conc2", "run"),
    ]
    assert [x["warmup"] for x in lines[1:4]] == [True, False, False] and lines[1]["requests"] == 2
    assert (
        lines[5]["requests"] == 2 and lines[5]["scenario"] == "ladder" and lines[5]["event"] == "bench_ladder/ladder-2"
    )
    for x in lines[1:]:
        assert 1.7e9 < x["t_start"] <= x["t_end"] < time.time()
    starts = [x["t_start"] for x in lines[1:]]
    assert starts == sorted(starts) and lines[-1]["t_start"] >= t0
    # a ladder step's marker spans its requests (their client times, on the capture's clock from t0_unix)
    cap = json.loads((run / "ladder" / "capture.json").read_text())
    assert cap["markers"] == {"file": "../events.jsonl", "lines": 3}
    reqs = json.loads((run / "ladder" / "requests.json").read_text())["requests"]
    two = [q for q in reqs if q["scenario"] == "ladder"]
    t0 = cap["t0_unix"]
    assert lines[5]["t_start"] == pytest.approx(t0 + min(q["start"] for q in two), abs=0.01)
    assert lines[5]["t_end"] == pytest.approx(t0 + max(q["end"] for q in two), abs=0.01)
    cap = json.loads((run / "c1" / "capture.json").read_text())
    validate(cap, "capture", run / "c1" / "capture.json")
    assert cap["markers"]["lines"] == 1 and lines[7]["exit_status"] == 0
    # init's reader: each marker a request_start/request_end pair labelled with the step
    rf = run_layout.read_run_folder(run, "a", "p1")
    assert rf.events == run / "events.jsonl"
    marks = event_markers(rf.events)
    assert marks[0] == (1.5, "load_start", None)
    labels = [lab for _t, e, lab in marks if e == "request_start"]
    assert labels == [x["event"].removeprefix("bench_") for x in lines[1:]]
    assert len([m for m in marks if m[1] == "request_end"]) == len(lines) - 1
