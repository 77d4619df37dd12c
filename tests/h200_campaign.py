"""A benchbook campaign built at test time (in tmp_path) from the shared H200 campaign's own files.

The shared folder ``../shared/realdata/vllm_h200_llama8b`` is read in place; the few files a campaign
must hold inside its own folder (the phase captures, a results file and its captures, a server log,
``nvidia_smi_q.txt``, ``gpu_samples.csv``) are copied into ``tmp_path`` by the test, never into the
repository. Phase samples keep their rounds (round 0 the warm-up), client times and token counts.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from realdata import realdata

ROOT = Path(__file__).resolve().parents[1]
H200 = realdata("vllm_h200_llama8b")


def _iso(t: float) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(t, dt.timezone.utc).isoformat()


def _copy(src: Path, dst: Path) -> str:
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)
    return dst.name


def _phases_run(arm: str, run_dir: Path) -> None:
    doc = json.loads((H200 / arm / "phases.json").read_text())
    samples = []
    for s in doc["samples"]:
        for k in ("metrics_before", "metrics_after"):
            _copy(H200 / arm / s[k], run_dir / s[k])
        samples.append(
            {
                "prompt_class": s["prompt_class"],
                "repeat": s["round"],
                "warmup": s["warmup"],
                "client_total_s": s["client_total_s"],
                # no first_event_s: the client's first content event of this harness comes after the
                # engine's TTFT, which the split rejects as a path without a first-token instant
                "prompt_tokens": s["usage"]["prompt_tokens"],
                "completion_tokens": s["usage"]["completion_tokens"],
                "max_tokens": s["max_tokens"],
                "finish_reason": s["finish_reason"],
                "metrics_before": s["metrics_before"],
                "metrics_after": s["metrics_after"],
            }
        )
    (run_dir / "phases.json").write_text(json.dumps({"format": "benchbook.phases/1", "samples": samples}))
    _copy(H200 / arm / "server.log", run_dir / "vllm.log")  # not server.log: no benchbook startup line


def _results_run(arm: str, point: str, run_dir: Path, with_power: bool) -> None:
    _copy(H200 / arm / "results" / f"bench_{point}.json", run_dir / f"bench_{point}.json")
    for side in ("before", "after"):
        _copy(H200 / arm / "metrics" / f"{point}_{side}.prom", run_dir / f"{point}_{side}.prom")
    ev = {e["event"]: e for e in map(json.loads, (H200 / arm / "events.jsonl").read_text().splitlines())}
    span = ev[f"bench_{point}"]
    doc = {
        "started_at": _iso(span["t_start"]),
        "ended_at": _iso(span["t_end"]),
        "format": "benchbook.results/1",
        "files": [f"bench_{point}.json"],
        "metrics_before": f"{point}_before.prom",
        "metrics_after": f"{point}_after.prom",
    }
    (run_dir / "results.json").write_text(json.dumps(doc))
    _copy(H200 / arm / "server.log", run_dir / "vllm.log")  # not server.log: no benchbook startup line
    if with_power:
        _copy(H200 / arm / "gpu_samples.csv", run_dir / "gpu_samples.csv")


def build(
    tmp: Path, *, phases: tuple[str, ...] = ("batch", "noprefix"), results: tuple[tuple[str, str], ...] = ()
) -> Path:
    """A campaign folder under ``tmp``: a phases run per arm in ``phases`` and a results run per
    (arm, ladder point) in ``results`` (with the arm's gpu_samples.csv beside it)."""
    camp = tmp / "h200"
    camp.mkdir()
    _copy(H200 / "nvidia_smi_q.txt", camp / "nvidia_smi_q.txt")
    runs, arms = [], {}
    for arm in phases:
        _phases_run(arm, camp / "runs" / f"phases-{arm}")
        runs.append({"id": f"phases-{arm}", "arm": arm, "harness": "phases", "path": f"runs/phases-{arm}"})
        arms[arm] = {"label": arm, "mode": "serial" if arm == "serial" else "batch", "environment": "default"}
    for arm, point in results:
        rid = f"{arm}-{point}"
        _results_run(arm, point, camp / "runs" / rid, with_power=True)
        runs.append({"id": rid, "arm": f"{arm}-results", "harness": "results", "path": f"runs/{rid}"})
        arms[f"{arm}-results"] = {"label": f"{arm} (vllm bench serve)", "mode": "results"}
    manifest = {
        "format": "benchbook.campaign/1",
        "title": "H200 llama8b-random (built from shared/realdata at test time)",
        "question": "what could make these figures lie?",
        "date": "2026-12-01",
        "provenance": "measured",
        "engine": {"name": "vllm", "profile": "vllm"},
        "environments": {"default": {"description": "defaults", "variables": {}}},
        "prompt_classes": {"short": {"words": 128, "tokens": 183}, "long": {"words": 1600, "tokens": 2126}},
        "generation_tokens": 32,
        "arms": arms,
        "runs": runs,
    }
    (camp / "campaign.json").write_text(json.dumps(manifest, indent=1))
    return camp
