"""`benchbook capture ladder` against a small OpenAI-compatible server (tests/fake_openai.py; the real
vLLM engine runs it in tests/test_engine_capture.py): the steps, the canonical requests files, the
OUT/ARM/RUN/POINT layout, and the baseline analysis reading the result unchanged."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import fake_openai
from benchbook.commands.capture_ladder import parse_concurrency, steps
from benchbook.errors import InputError
from benchbook.jsonfile import validate


def _bb(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "benchbook.commands.cli", *args], capture_output=True, text=True, timeout=timeout
    )


def campaign_from_ladder(folder: Path, camp: Path, arm: str = "serial", mode: str = "serial") -> Path:
    """A one-run campaign around a `capture ladder` folder, written by hand (what `benchbook init`
    writes from it, minus the scaffolding), to read the folder with benchbook's own loader."""
    cap = json.loads((folder / "capture.json").read_text())
    shutil.copytree(folder, camp / "runs" / "r1")
    manifest = {
        "format": "benchbook.campaign/1",
        "title": "ladder capture",
        "question": "does the ladder read back?",
        "date": cap["started_at"][:10],
        "provenance": "measured",
        "engine": {"name": "vllm", "profile": cap["engine_profile"] or "vllm"},
        "environments": {"default": {"variables": {}}},
        "prompt_classes": {k: {"tokens": v["tokens"]} for k, v in cap["prompt_classes"].items()},
        "generation_tokens": cap["generation_tokens"],
        "arms": {arm: {"label": arm, "mode": mode, "environment": "default"}},
        "runs": [{"id": "r1", "arm": arm, "harness": "requests", "path": "runs/r1"}],
    }
    (camp / "campaign.json").write_text(json.dumps(manifest, indent=1))
    return camp


def test_concurrency_and_steps():
    assert parse_concurrency("8,1,2,4,2") == [1, 2, 4, 8]
    for bad in ("0,2", "a,b", ""):
        with pytest.raises(InputError, match="--concurrency"):
            parse_concurrency(bad)
    assert [(n, s, len(c)) for n, s, c in steps([1, 2, 4], 1, True)] == [
        ("warmup-0", "warmup", 1),
        ("single", "single", 1),
        ("ladder-2", "ladder", 2),
        ("ladder-4", "ladder", 4),
        ("interleave", "interleave", 2),
    ]


SERIAL_TOKEN_S = 0.01  # the fake serial server's time a token: 8 tokens (80 ms) a request


def test_ladder_writes_the_canonical_requests_run_in_the_arm_run_layout(tmp_path):
    from benchbook.analysis.baseline import whole_request_cells
    from benchbook.ingest.campaign import load_campaign

    with fake_openai.serving(serial=True, token_s=SERIAL_TOKEN_S) as (url, st):
        r = _bb(
            "capture", "ladder", "--url", url, "--model", "m", "--concurrency", "1,2,4", "--interleave",
            "--max-tokens", "8", "--arm", "serial", "--run", "p1", "--out", str(tmp_path / "caps"),
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
    folder = tmp_path / "caps" / "serial" / "p1" / "ladder"
    cap = json.loads((folder / "capture.json").read_text())
    validate(cap, "capture", folder / "capture.json")
    assert cap["kind"] == "ladder" and cap["complete"] is True
    assert cap["layout"] == {
        "root": str(tmp_path / "caps"),
        "arm": "serial",
        "run": "p1",
        "point": "ladder",
        "run_folder": "serial/p1",
        "folder": "serial/p1/ladder",
    }
    # the server's own version, saved beside the run where init reads it; a missing endpoint is only noted
    assert json.loads((folder.parent / "version.json").read_text()) == {"version": "0.0.0+fake"}
    assert cap["server_facts"] == {
        "version.json": "GET /version: saved as ../version.json",
        "server_info.json": "GET /get_server_info: HTTP 404 (not served)",
    }
    from benchbook.ingest import run_layout, server_config

    rf = run_layout.read_run_folder(folder.parent, "serial", "p1")  # what init reads of the process
    assert rf.versions == [folder.parent / "version.json"]
    assert server_config.read_server_config([], [], versions=rf.versions).version == "0.0.0+fake"
    doc = json.loads((folder / "requests.json").read_text())
    validate(doc, "requests", folder / "requests.json")
    got = [(q["scenario"], q["n"], q["index"], q["prompt_class"]) for q in doc["requests"]]
    assert got == [
        ("warmup", 1, 0, "short"),
        ("single", 1, 0, "short"),
        ("ladder", 2, 0, "short"),
        ("ladder", 2, 1, "short"),
        ("ladder", 4, 0, "short"),
        ("ladder", 4, 1, "short"),
        ("ladder", 4, 2, "short"),
        ("ladder", 4, 3, "short"),
        ("interleave", 2, 0, "long"),
        ("interleave", 2, 1, "short"),
    ]
    assert all(q["completion_tokens"] == 8 and q["finish_reason"] == "length" and q["stream"] for q in doc["requests"])
    assert all(0 <= q["start"] < q["end"] for q in doc["requests"])
    # a serial server serves the step's four requests one after the other, each for its 8 tokens of token_s, all
    # between the first send and the last byte: the step spans at least their sum on any host (a busy one only
    # adds), where a server serving them at once would take about one request's time. (Was: the ends' spread
    # against the single request's time, which a stall of the single request on a busy host broke: 0.083 s
    # against 0.112 s)
    four = [q for q in doc["requests"] if q["n"] == 4 and q["scenario"] == "ladder"]
    assert max(q["end"] for q in four) - min(q["start"] for q in four) >= 4 * 8 * SERIAL_TOKEN_S
    # the interleave's short request starts --interleave-delay after the long one
    long_, short = (q for q in doc["requests"] if q["scenario"] == "interleave")
    assert 0.45 < short["start"] - long_["start"] < 0.7
    # requests.ndjson: the same records with round 0 and the first token
    nd = [json.loads(x) for x in (folder / "requests.ndjson").read_text().splitlines()]
    assert [{k: v for k, v in x.items() if k not in ("round", "ttft")} for x in nd] == doc["requests"]
    assert all(x["round"] == 0 and 0 < x["ttft"] < x["end"] - x["start"] for x in nd)
    # /metrics before and after every step, each step's requests counted in its window
    assert [s["step"] for s in cap["steps"]] == ["warmup-0", "single", "ladder-2", "ladder-4", "interleave"]
    for s in cap["steps"]:
        before, after = (folder / s["metrics_before"]).read_text(), (folder / s["metrics_after"]).read_text()
        ok = [
            float(t.split()[-1])
            for t in (before, after)
            for t in t.splitlines()
            if t.startswith("vllm:request_success")
        ]
        assert ok[1] - ok[0] == s["n"], s["step"]
    # distinct prompts by default: every request its own prefix, so no cache hit in the whole ladder
    prefixes = [q["prompt_prefix"] for s in cap["steps"] for q in s["requests"]]
    assert len(set(prefixes)) == len(prefixes) == 10 and cap["prompts"]["distinct"] is True
    assert st.counters.get("vllm:prefix_cache_hits_total", 0) == 0
    # host memory sampled into the *run* folder (no nvidia-smi on this host's PATH: said so)
    assert (tmp_path / "caps" / "serial" / "p1" / "host_samples.csv").is_file()
    # the baseline analysis reads the folder unchanged: single, ladder and interleave rows
    camp = load_campaign(campaign_from_ladder(folder, tmp_path / "camp"))
    cells = whole_request_cells(camp)
    metrics = {(m, n) for m, n in cells.select("metric", "concurrency").iter_rows()}
    assert {("single_tok_s", 1), ("ladder_tok_s", 2), ("ladder_tok_s", 4)} <= metrics
    # the long request (8 tokens at 3 ms) ended long before the short one started 0.5 s later: the
    # interleave did not overlap, so it is not measured (analysis.interleave), never a figure
    from benchbook.analysis import interleave

    assert ("interleave_short_latency_s", 2) not in metrics
    assert [n.split(":")[0] for n in interleave.not_measured(camp)] == ["r1"]
    rate4 = cells.filter((cells["metric"] == "ladder_tok_s") & (cells["concurrency"] == 4))["median"].item()
    reqs4 = [q for q in doc["requests"] if q["scenario"] == "ladder" and q["n"] == 4]
    wall4 = max(q["end"] for q in reqs4) - min(q["start"] for q in reqs4)
    assert rate4 == pytest.approx(32 / wall4)


def test_same_prompt_is_the_seeds_behaviour_and_is_recorded(tmp_path):
    with fake_openai.serving() as (url, st):
        r = _bb(
            "capture", "ladder", "--url", url, "--model", "m", "--concurrency", "1", "--warmup", "1",
            "--max-tokens", "2", "--same-prompt", "--prompt", "short=" + "word " * 40, "--out", str(tmp_path / "o"),
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
        assert st.bodies[0]["prompt"] == st.bodies[1]["prompt"] == "word " * 40
        assert st.counters["vllm:prefix_cache_hits_total"] == 64  # the second request: 4 whole blocks cached
    cap = json.loads((tmp_path / "o" / "capture.json").read_text())
    assert cap["prompts"]["distinct"] is False and "--same-prompt" in cap["prompts"]["how"]
    assert "layout" not in cap


def test_layout_options_are_checked_before_anything_is_sent(tmp_path):
    with fake_openai.serving() as (url, st):
        for args, msg in (
            (["--arm", "a"], "give both --arm NAME and --run NAME"),
            (["--point", "p"], "--point needs --arm and --run"),
            (["--arm", "a/b", "--run", "r"], "a folder name"),
        ):
            r = _bb("capture", "ladder", "--url", url, "--model", "m", "--out", str(tmp_path / "o"), *args)
            assert r.returncode == 2 and msg in r.stderr, r.stderr
        assert st.bodies == []
        r = _bb(
            "capture", "run", "--metrics", url, "--arm", "a", "--run", "r", "--out", str(tmp_path / "o"), "--", "true"
        )
        assert r.returncode == 2 and "needs --point NAME" in r.stderr


def test_the_after_scrape_waits_until_the_engine_counted_the_steps_requests(tmp_path):
    """An engine that counts a finished request 1 s after its last byte (a busy host: issue 34): every
    step's window still holds exactly its requests, and capture.json says how long each wait took (1 s,
    so that a first scrape slowed by a loaded host still comes before the count)."""
    with fake_openai.serving(count_delay_s=1.0) as (url, _st):
        r = _bb(
            "capture", "ladder", "--url", url, "--model", "m", "--concurrency", "1,2,4", "--warmup", "0",
            "--max-tokens", "2", "--out", str(tmp_path / "o"),
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
    folder = tmp_path / "o"
    cap = json.loads((folder / "capture.json").read_text())
    validate(cap, "capture", folder / "capture.json")
    for s in cap["steps"]:
        ok = [
            float(t.split()[-1])
            for f in (s["metrics_before"], s["metrics_after"])
            for t in (folder / f).read_text().splitlines()
            if t.startswith("vllm:request_success")
        ]
        assert ok[1] - ok[0] == s["n"], s["step"]
        st = s["settle"]
        assert st["expected"] == s["n"] and st["counted"] == s["n"] and st["timed_out"] is False
        assert 0.2 < st["waited_s"] < 5 and st["scrapes"] >= 2 and st["timeout_s"] == 5


def test_a_settle_wait_that_times_out_is_said_not_fatal(tmp_path):
    """The counts land 5 s after each request, the wait gives up after 0.3 s. A wait that timed out
    says it waited at least its time-out, even when one scrape alone took longer (a loaded host: the
    first scrape was once the only one, and the wait said 0.0 s)."""
    with fake_openai.serving(count_delay_s=5.0) as (url, _st):
        r = _bb(
            "capture", "ladder", "--url", url, "--model", "m", "--concurrency", "1,2", "--warmup", "0",
            "--max-tokens", "2", "--settle-timeout", "0.3", "--out", str(tmp_path / "o"),
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
    cap = json.loads((tmp_path / "o" / "capture.json").read_text())
    assert cap["complete"] is True
    st = cap["steps"][0]["settle"]
    assert st["timed_out"] is True and st["expected"] == 1 and st["counted"] == 0 and st["timeout_s"] == 0.3
    assert 0.3 <= st["waited_s"] < 5
    assert "single: the engine counted 0 of 1 requests within 0.3 s (--settle-timeout)" in r.stdout


@pytest.mark.parametrize("non_stream", [False, True], ids=["streamed", "non-streamed"])
def test_completion_tokens_above_max_tokens_are_refused_naming_the_url_and_the_step(tmp_path, non_stream):
    """A server whose usage says 100x the tokens it generated (issue 34: a 51,674 tok/s ladder with
    --max-tokens 16): refused where the answer is read, exit 4, the folder kept and marked incomplete."""
    with fake_openai.serving(usage_factor=100, non_stream=non_stream) as (url, _st):
        r = _bb(
            "capture", "ladder", "--url", url, "--model", "m", "--concurrency", "1,2", "--warmup", "0",
            "--max-tokens", "16", "--out", str(tmp_path / "o"),
        )  # fmt: skip
        assert r.returncode == 4, r.stderr
        assert f"{url}/v1/completions" in r.stderr and "single request 0" in r.stderr
        assert "usage.completion_tokens is 1600, above the request's max_tokens 16" in r.stderr
        cap = json.loads((tmp_path / "o" / "capture.json").read_text())
        assert cap["complete"] is False and "above the request's max_tokens" in cap["stopped"] and cap["steps"] == []
        r = _bb(
            "capture", "phases", "--url", url, "--model", "m", "--repeats", "1", "--warmup", "0",
            "--max-tokens", "16", "--out", str(tmp_path / "p"),
        )  # fmt: skip
        assert r.returncode == 4 and "round 0: the answer's usage.completion_tokens is 1600" in r.stderr, r.stderr
    with fake_openai.serving(non_stream=non_stream) as (url, _st):  # an honest server passes
        r = _bb(
            "capture", "ladder", "--url", url, "--model", "m", "--concurrency", "1", "--warmup", "0",
            "--max-tokens", "16", "--out", str(tmp_path / "h"),
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "h" / "requests.json").read_text())
    assert [q["completion_tokens"] for q in doc["requests"]] == [16]
