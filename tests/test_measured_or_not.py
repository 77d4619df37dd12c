"""Measured or not said: host memory from host_samples.csv alone when no GPU was sampled (the interleave:
tests/test_interleave.py); Little's law from the engine's own time in flight where the scrapes are too
coarse, and not passed without an independent concurrency."""

from __future__ import annotations

import json

import pytest

from one_page import render_one


def test_host_memory_on_its_own_when_no_gpu_was_sampled(tmp_path):
    """A process captured on a host without nvidia-smi: its host_samples.csv (the H200 batch/ arm's own,
    Rss/Pss per server process once a second) still gives a memory section, the GPU 'not measured', and
    the explore notebook charts the host's figures instead of 'No memory runs'."""
    import h200_arms
    from benchbook.commands import init as init_cmd
    from benchbook.commands.summary import build
    from benchbook.pages import explore

    a = h200_arms.arm(tmp_path, "batch", ("conc1",))
    (a / "gpu_samples.csv").unlink()
    from argparse import Namespace

    dest = tmp_path / "camp"
    assert init_cmd.run(Namespace(dir=dest, inputs=[a], title=None, question=None, quiet=True)) == 0
    s = build(dest)
    (h,) = s["host_memory"].values()
    assert h["gpu"].startswith("not measured") and h["loaded_samples"] > 100
    # the summed Pss while loaded (ready … server_stop), recomputed here from the CSV with the csv module
    import csv
    import statistics

    ev = {e["event"]: e for e in map(json.loads, (a / "events.jsonl").read_text().splitlines())}
    per_t: dict[float, float] = {}
    with (a / "host_samples.csv").open() as f:
        for row in csv.DictReader(f):
            t = float(row["t"])
            if ev["ready"]["t"] <= t <= ev["server_stop"]["t"] and row["pss_kB"]:
                per_t[t] = per_t.get(t, 0.0) + float(row["pss_kB"])
    assert h["pss_sum_gib"] == pytest.approx(statistics.median(per_t.values()) / 2**20, rel=1e-6)
    assert h["pss_sum_peak_gib"] >= h["pss_sum_gib"]
    # the sampler started with the server: no idle sample before server_start, so no MemAvailable fall
    assert h["mem_available_fall_gib"] is None and h["shmem_gib"] is not None
    assert s["audit"]["energy"] == []  # no power samples: no joules, and nothing breaks
    t = explore.load(str(dest))
    block = str(explore.memory_chart(t))
    assert "No memory" not in block and "summed Pss" in block

    render_one("baseline", dest, tmp_path, "host only")
    html = (tmp_path / "baseline.html").read_text()
    assert 'id="sec-memory"' in html and "not measured (no GPU samples)" in html
    assert "Host memory per process" in html  # each server process's Pss and Rss


def test_littles_law_from_the_engines_own_time_where_the_scrapes_are_too_coarse(tmp_path):
    """The H200 runner scraped once a second; at concurrency 1 a request takes 0.66 s, so the gauges can
    miss whole requests. L then comes from the engine's own E2E histogram — Δ sum of its requests'
    latencies over the window — and the check says the engine finished 18 requests (the tool's two
    warm-ups) where the client's file counts 16."""
    from argparse import Namespace

    import h200_arms
    from benchbook.commands import init as init_cmd
    from benchbook.commands.summary import build
    from benchbook.metrics import prometheus

    a = h200_arms.arm(tmp_path, "batch", ("conc1", "conc8"))
    dest = tmp_path / "camp"
    assert init_cmd.run(Namespace(dir=dest, inputs=[a], title=None, question=None, quiet=True)) == 0
    s = build(dest)
    checks = {c["run"]: c for c in s["results"]["checks"] if c["name"].startswith("Little's law")}
    c1 = checks["batch-conc1"]
    assert "the engine's own time in flight" in c1["detail"] and "longer than W" in c1["detail"]
    assert "the engine finished 18 requests in the window, the client's file 16" in c1["detail"]

    def e2e_sum(p):
        snap = prometheus.read(p, ["vllm:e2e_request_latency_seconds"])
        return sum(snap.series("vllm:e2e_request_latency_seconds_sum").values())

    delta = e2e_sum(a / "metrics" / "conc1_after.prom") - e2e_sum(a / "metrics" / "conc1_before.prom")
    assert f"Δ vllm:e2e_request_latency_seconds_sum {delta:.4g} s over 18 requests" in c1["detail"]
