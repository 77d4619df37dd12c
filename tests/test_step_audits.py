"""The engine reconciles the client: each ladder step's and phase sample's tokens — the server's usage
— against the engine's Δ generation and prompt tokens between its own before/after scrapes. A server
whose usage says 100x what the engine generated fails the check, and the figures made from it are not
headlined as measured. Real shapes: the H200 phase harness's files (copied into tmp_path) and `capture
ladder` folders written by benchbook's own capture against tests/fake_openai.py."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from argparse import Namespace
from pathlib import Path

import fake_openai
import h200_arms
from benchbook.commands import init as init_cmd
from benchbook.commands.summary import build


def _init(dest: Path, *inputs: Path) -> dict:
    assert init_cmd.run(Namespace(dir=dest, inputs=list(inputs), title=None, question=None, quiet=True)) == 0
    return build(dest)


def _token_checks(s: dict) -> dict[str, dict]:
    return {c["run"]: c for c in s["checks"] if c["name"].startswith("token accounting:")}


def _phases_arm(root: Path, name: str, factor: int = 1) -> Path:
    """The H200 batch arm's phase harness files (phases.json with each sample's usage, and its captures),
    with every sample's usage.completion_tokens multiplied by ``factor``."""
    a = root / name
    (a / "metrics").mkdir(parents=True)
    for f in ("server.log", "version.json"):
        shutil.copyfile(h200_arms.H200 / "batch" / f, a / f)
    doc = json.loads((h200_arms.H200 / "batch" / "phases.json").read_text())
    for s in doc["samples"]:
        for k in ("metrics_before", "metrics_after"):
            shutil.copyfile(h200_arms.H200 / "batch" / s[k], a / s[k])
        s["usage"]["completion_tokens"] *= factor
    (a / "phases.json").write_text(json.dumps(doc))
    return a


def test_the_h200_phase_samples_reconcile(tmp_path):
    checks = _token_checks(_init(tmp_path / "camp", _phases_arm(tmp_path, "batch")))
    (c,) = checks.values()
    assert c["status"] == "pass" and "every window's engine counts cover the client's" in c["detail"]


def test_a_server_reporting_100x_its_tokens_fails(tmp_path):
    s = _init(tmp_path / "camp", _phases_arm(tmp_path, "batch", factor=100))
    (c,) = _token_checks(s).values()
    assert c["status"] == "fail"
    assert "the client's usage reports 3200 completion tokens, the engine generated 32" in c["detail"]
    assert "100.0× as many" in c["detail"] and "not measured" in c["detail"]


def _bb(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "benchbook.commands.cli", *args], capture_output=True, text=True, timeout=120
    )


# the fake servers' time a token: 16 tokens (160 ms) a request, so that a request's time is the server's own and not
# the host's (at 2 ms a token, 32-ms requests, a stall on a busy host spread one process's ladder rates from the
# other's so far that batching's gain over serial was "cannot tell" once in five runs)
TOKEN_S = 0.01


def _ladder(out: Path, arm: str, **server) -> Path:
    for run in ("p1", "p2"):  # two server processes per arm: repeats, so the ladder gets verdicts
        with fake_openai.serving(token_s=TOKEN_S, **server) as (url, _st):
            r = _bb(
                "capture", "ladder", "--url", url, "--model", "m", "--concurrency", "1,2,4", "--warmup", "1",
                "--max-tokens", "16", "--ignore-eos", "--out", str(out), "--arm", arm, "--run", run,
            )  # fmt: skip
            assert r.returncode == 0, r.stderr
    return out / arm


def _inflate(folder: Path, factor: int) -> None:
    """The ladder's records as a server whose usage over-reports would have left them (within
    --max-tokens: capture refuses more): completion tokens x ``factor`` in requests.json/.ndjson."""
    for f in folder.rglob("requests.json"):
        d = json.loads(f.read_text())
        for q in d["requests"]:
            q["completion_tokens"] *= factor
        f.write_text(json.dumps(d))
    for f in folder.rglob("requests.ndjson"):
        lines = [json.loads(x) for x in f.read_text().splitlines() if x.strip()]
        for q in lines:
            q["completion_tokens"] *= factor
        f.write_text("".join(json.dumps(q) + "\n" for q in lines))


def test_each_ladder_step_against_its_scrapes(tmp_path):
    out = tmp_path / "caps"
    _ladder(out, "serial", serial=True)
    batch = _ladder(out, "batch")
    s = _init(tmp_path / "camp", out)
    steps = [w for w in s["audit"]["windows"] if w["kind"] == "ladder step"]
    assert {w["window"].split(": ")[1] for w in steps if w["run"].startswith("batch")} == {
        "warmup-0",
        "single",
        "ladder-2",
        "ladder-4",
    }
    four = next(w for w in steps if w["window"].endswith("ladder-4") and w["run"].startswith("batch"))
    assert four["generation_tokens"] == 64 and four["client"]["received"] == 64
    assert all(c["status"] == "pass" for c in _token_checks(s).values())
    # honest: batching's ladder rates are results (two processes per arm give the spread)
    assert any(x["kind"] in ("regression", "improvement") for x in s["findings"]["baseline"]["lines"])
    # the batched process's usage says 100x what it generated: its token accounting fails, and its ladder
    # figures are not headlined
    _inflate(batch, 100)
    s2 = _init(tmp_path / "camp2", out)
    bad = _token_checks(s2)
    fails = [c for c in bad.values() if c["status"] == "fail"]
    assert len(fails) == 2 and all(c["run"].startswith("batch") and "100.0× as many" in c["detail"] for c in fails)
    f = s2["findings"]["baseline"]
    texts = [x["text"] for x in f["lines"]]
    assert not any(x["kind"] in ("regression", "improvement") for x in f["lines"])
    assert any("token accounting" in t for t in texts)
    assert any("not measured" in x["text"] for x in f["lines"] if x["kind"] == "unjudged")  # the figures left
