"""The measured H200 campaign (data/h200-llama8b, vLLM 0.26.0 on one H200, issue 37): its figures
recomputed here from its raw files — the result files of `vllm bench serve`, the `/metrics` scrapes
(.prom.gz, read with prometheus_client), `requests.json` of the ladder, `gpu_samples.csv` and
`events.jsonl` (read with polars) — and what `benchbook summary --json` reports checked against them.

Every expected figure is computed in this file from the files, never copied from benchbook's output;
the README's "Figures to expect" are the same readings. One summary of the campaign for the module,
no render (the README's screenshot comes from tests/test_page_layout.py).
"""

from __future__ import annotations

import functools
import gzip
import json
import re
import statistics
from pathlib import Path

import polars as pl
import pytest
from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parents[1]
CAMP = ROOT / "data" / "h200-llama8b"
RUNS = CAMP / "runs"
ARMS = ("serial", "batch", "kvlimited", "eager", "noprefix", "eager-noprefix")
INTERRUPTED = {("batch", "p2", "conc8"), ("eager-noprefix", "p1", "conc1")}  # cut by the call's time limit


# ------------------------------------------------------------------------------ the raw files


def processes() -> list[tuple[str, str]]:
    return [(a, r.name) for a in ARMS for r in sorted((RUNS / a).iterdir()) if r.is_dir() and r.name.startswith("p")]


def points(arm: str, run: str) -> list[str]:
    return sorted((p.name for p in (RUNS / arm / run).glob("conc*")), key=lambda n: int(n[4:]))


def result(arm: str, run: str, point: str) -> dict | None:
    """The point's `vllm bench serve --save-result` file, None where the point has none (interrupted)."""
    files = sorted((RUNS / arm / run / point / "results").glob("*.json"))
    return json.loads(files[0].read_text()) if files else None


def rate(r: dict) -> float:
    """Output tokens per second of the run: every request's output length over the tool's duration."""
    return sum(r["output_lens"]) / r["duration"]


def rates(arm: str, point: str) -> list[float]:
    """The point's output rate in each process of the arm that measured it."""
    out = []
    for a, run in processes():
        r = result(a, run, point) if a == arm and (RUNS / a / run / point).is_dir() else None
        if r is not None:
            out.append(rate(r))
    return out


def _text(path: Path) -> str:
    return gzip.decompress(path.read_bytes()).decode()


def samples(path: Path) -> list:
    return [s for fam in text_string_to_metric_families(_text(path)) for s in fam.samples]


@functools.cache
def _totals(path: Path) -> dict[str, float]:
    """Every sample name's value summed over its label sets, one parse per file (the tests ask a file for
    several names: parsing it again for each took most of this module's time)."""
    out: dict[str, float] = {}
    for s in samples(path):
        out[s.name] = out.get(s.name, 0.0) + s.value
    return out


@functools.cache
def _named_totals(path: Path, names: tuple[str, ...]) -> tuple[float, ...]:
    """``names``' samples summed over their label sets, parsing only their lines (a capture's periodic
    scrapes are hundreds of files; the rest of each file is other families)."""
    kept = "".join(ln for ln in _text(path).splitlines(True) if ln.startswith(names))
    out = dict.fromkeys(names, 0.0)
    for fam in text_string_to_metric_families(kept):
        for s in fam.samples:
            out[s.name] += s.value
    return tuple(out.values())


def total(path: Path, name: str) -> float:
    """A sample's value summed over its label sets (one engine: one series per finished reason …)."""
    return _totals(path).get(name, 0.0)


def delta(folder: Path, before: str, after: str, name: str) -> float:
    return total(folder / after, name) - total(folder / before, name)


def point_delta(arm: str, run: str, point: str, name: str) -> float:
    m = RUNS / arm / run / point / "metrics"
    return delta(m, "before.prom.gz", "after.prom.gz", name)


def cache_info(arm: str, run: str) -> dict:
    """The labels of vllm:cache_config_info (what the engine ran: block size, blocks, prefix caching)."""
    first = RUNS / arm / run / "phases" / "metrics" / "short-0.before.prom.gz"
    (info,) = [s.labels for s in samples(first) if s.name == "vllm:cache_config_info"]
    return info


def events(arm: str, run: str) -> dict[str, float]:
    out = {}
    for line in (RUNS / arm / run / "events.jsonl").read_text().splitlines():
        e = json.loads(line)
        if "t" in e:
            out.setdefault(e["event"], e["t"])
    return out


def gpu(arm: str, run: str) -> pl.DataFrame:
    """gpu_samples.csv (nvidia-smi --format=csv: padded fields, local time = UTC on that machine) as
    Unix seconds, MiB used and watts."""
    g = pl.read_csv(RUNS / arm / run / "gpu_samples.csv", infer_schema=False)
    g = g.rename({c: c.strip() for c in g.columns})
    return g.select(
        pl.col("timestamp")
        .str.strip_chars()
        .str.strptime(pl.Datetime("us", "UTC"), "%Y/%m/%d %H:%M:%S%.f")
        .dt.epoch("us")
        .truediv(1e6)
        .alias("t"),
        pl.col("memory.used [MiB]").str.strip_chars().cast(pl.Float64).alias("mib"),
        pl.col("power.draw [W]").str.strip_chars().cast(pl.Float64).alias("w"),
    ).sort("t")


def ladder_rates(arm: str, run: str) -> dict[int, float]:
    """`capture ladder`'s aggregate rate per step n (2/4/8): completion tokens over first start → last end."""
    reqs = json.loads((RUNS / arm / run / "ladder" / "requests.json").read_text())["requests"]
    out = {}
    for n in (2, 4, 8):
        step = [r for r in reqs if r["scenario"] == "ladder" and r["n"] == n]
        out[n] = sum(r["completion_tokens"] for r in step) / (
            max(r["end"] for r in step) - min(r["start"] for r in step)
        )
    return out


def phase_split(arm: str, run: str) -> dict[tuple[str, str], list[float]]:
    """Per (prompt class, metric) the measured rounds' prefill and decode rates on the engine's clock:
    prefill = prompt tokens / Δ TTFT sum, decode = (Δ generated − 1) / (Δ E2E sum − Δ TTFT sum)."""
    folder = RUNS / arm / run / "phases"
    doc = json.loads((folder / "phases.json").read_text())
    out: dict[tuple[str, str], list[float]] = {}
    for s in doc["samples"]:
        if s["warmup"]:
            continue

        def d(name, s=s):
            return delta(folder, s["metrics_before"], s["metrics_after"], name)

        ttft = d("vllm:time_to_first_token_seconds_sum")
        e2e = d("vllm:e2e_request_latency_seconds_sum")
        out.setdefault((s["prompt_class"], "prefill_tok_s"), []).append(d("vllm:prompt_tokens_total") / ttft)
        out.setdefault((s["prompt_class"], "decode_tok_s"), []).append(
            (d("vllm:generation_tokens_total") - 1) / (e2e - ttft)
        )
    return out


def spread() -> float:
    """The largest run-to-run spread of the output rate: (max − min) / min between the processes of one
    arm at one point, over every point two processes measured."""
    out = 0.0
    for arm in ARMS:
        for point in {p for a, run in processes() if a == arm for p in points(a, run)}:
            vals = rates(arm, point)
            if len(vals) >= 2:
                out = max(out, (max(vals) - min(vals)) / min(vals))
    return out


@pytest.fixture(scope="module")
def summary() -> dict:
    from benchbook.commands.summary import build

    return build(CAMP)


# ------------------------------------------------------------------------------ the layout


def test_what_was_measured_and_what_was_interrupted(summary):
    """Eight server processes; two sweep points interrupted by the device call's time limit: their
    capture.json says so and names no result file, and they are no load point; every other point's
    capture completed with one result file of exactly the requests it asked for."""
    assert processes() == [
        ("serial", "p1"),
        ("serial", "p2"),
        ("batch", "p1"),
        ("batch", "p2"),
        ("kvlimited", "p1"),
        ("eager", "p1"),
        ("noprefix", "p1"),
        ("eager-noprefix", "p1"),
    ]
    measured = set()
    for arm, run in processes():
        for point in points(arm, run):
            cap = json.loads((RUNS / arm / run / point / "capture.json").read_text())
            r = result(arm, run, point)
            if (arm, run, point) in INTERRUPTED:
                assert cap["complete"] is False and cap["result_files"] == [] and r is None
                continue
            assert cap["complete"] is True and r is not None
            assert r["completed"] == r["num_prompts"] and r["failed"] == 0
            measured.add((f"{arm}/{run}", point))
        ran_to_the_end = "run_done" in events(arm, run)
        assert ran_to_the_end == (not any(x[:2] == (arm, run) for x in INTERRUPTED))
    assert len(measured) == 22
    m = json.loads((CAMP / "campaign.json").read_text())
    assert m["provenance"] == "measured" and m["order"] == 1
    assert {(e["process"], e["point"]) for e in m["runs"] if e["harness"] == "results"} == measured
    assert {(p["process"], p["point"]) for p in summary["results_ladder"]["points"]} == measured
    for arm, run, point in INTERRUPTED:
        name = "eager+noprefix" if arm == "eager-noprefix" else arm
        assert any(f"run {name}/{run}: load point {point} was interrupted" in t for t in m["todo"])


def test_every_file_under_1_mb_and_the_campaign_under_20_mb():
    files = [p for p in CAMP.rglob("*") if p.is_file()]
    assert max(p.stat().st_size for p in files) < 1_000_000
    assert sum(p.stat().st_size for p in files) < 20_000_000
    assert not list(CAMP.rglob("*.prom"))  # the scrapes are kept compressed (.prom.gz)


# ------------------------------------------------------------------------------ serial and batched


def test_serial_is_flat_across_its_queued_steps_within_the_spread_of_its_processes(summary):
    """One request at a time (--max-num-seqs 1): the rate at concurrency 2/4/8 of each serial process
    stays within the run-to-run spread of the campaign's processes; batch's does not."""
    s = spread()
    rl = summary["results_ladder"]
    assert rl["spread"]["spread"] == pytest.approx(s, rel=1e-9)
    rows = {r["process"]: r for r in rl["serialization"]}
    for run in ("p1", "p2"):
        by = {c: rate(result("serial", run, f"conc{c}")) for c in (1, 2, 4, 8)}
        queued = [by[c] for c in (2, 4, 8)]
        assert (max(queued) - min(queued)) / min(queued) <= s
        row = rows[f"serial/{run}"]
        assert row["flat"] is True and row["tolerance"] == pytest.approx(s, rel=1e-9)
        assert {int(k): v for k, v in row["rates"].items()} == pytest.approx(by, rel=1e-9)
        lad = ladder_rates("serial", run)  # capture ladder: the same with its own requests
        assert (max(lad.values()) - min(lad.values())) / min(lad.values()) <= s
    for run in ("p1", "p2"):
        by = {c: rate(result("batch", run, f"conc{c}")) for c in (2, 4)}
        assert by[4] / by[2] - 1 > s and rows[f"batch/{run}"]["flat"] is False


def test_batched_beats_serial_beyond_noise_with_its_two_processes_as_repeats(summary):
    """batch vs serial at concurrency 2/4/8: the medians of the processes' rates, ranges apart and
    beyond the spread (at 8 batch has one process: batch/p2's point was interrupted); not at 1."""
    s = spread()
    rows = {
        c["concurrency"]: c
        for c in summary["results_ladder"]["comparisons"]
        if (c["baseline"], c["candidate"], c["metric"]) == ("serial", "batch", "output_tok_s")
    }
    for c in (1, 2, 4, 8):
        ser, bat = rates("serial", f"conc{c}"), rates("batch", f"conc{c}")
        assert len(ser) == 2 and len(bat) == (1 if c == 8 else 2)
        ratio = statistics.median(bat) / statistics.median(ser)
        row = rows[c]
        assert row["baseline_median"] == pytest.approx(statistics.median(ser), rel=1e-9)
        assert row["candidate_median"] == pytest.approx(statistics.median(bat), rel=1e-9)
        assert row["ratio"] == pytest.approx(ratio, rel=1e-9)
        assert (row["baseline_n"], row["candidate_n"]) == (len(ser), len(bat))
        beyond = min(bat) > max(ser) and ratio - 1 > s
        assert row["is_result"] is beyond and beyond is (c > 1)
    assert rows[8]["ratio"] > 5  # 1217.8 / 204.4 tok/s


def test_one_answer_the_compare_page_judges_batch_vs_serial_as_the_baseline_page_does(summary):
    """The processes of an arm are its repeats on every page (CONVENTIONS: one campaign, one answer):
    the result files' configurations are the arms, and batch vs serial at concurrency 8 is the result
    the results ladder finds."""
    res = summary["results"]
    assert sorted(res["configurations"]) == sorted(["serial", "batch", "kvlimited", "eager", "noprefix"])
    ladder = next(
        c
        for c in summary["results_ladder"]["comparisons"]
        if (c["baseline"], c["candidate"], c["concurrency"]) == ("serial", "batch", 8)
    )
    verdict = next(
        v
        for v in res["verdicts"]
        if (v["baseline"], v["candidate"], v["load"], v["metric"])
        == ("serial", "batch", "concurrency 8", "output_throughput")
    )
    assert verdict["is_result"] is ladder["is_result"] is True


# ------------------------------------------------------------------------------ the ablation


def _ablation_row(summary, arm: str, metric: str, context: str) -> dict:
    return next(
        r for r in summary["switch_ablation"]["rows"] if (r["arm"], r["metric"], r["context"]) == (arm, metric, context)
    )


def test_cuda_graphs_off_quadruples_the_time_per_token_at_concurrency_1(summary):
    """--enforce-eager: at concurrency 1 the median TPOT is about 4× batch's and the output rate a
    quarter (50 against 200 tok/s); the phase split's decode rate falls as much."""
    eager = result("eager", "p1", "conc1")
    batch = [result("batch", run, "conc1") for run in ("p1", "p2")]
    tpot_b = statistics.median(r["median_tpot_ms"] for r in batch)
    rate_b = statistics.median(rate(r) for r in batch)
    assert eager["median_tpot_ms"] / tpot_b > 3.5 and rate(eager) / rate_b < 0.3
    row = _ablation_row(summary, "eager", "median TPOT", "concurrency 1")
    assert row["candidate_median"] == pytest.approx(eager["median_tpot_ms"], rel=1e-9)
    assert row["baseline_median"] == pytest.approx(tpot_b, rel=1e-9)
    assert row["is_result"] is True and row["direction"] == "regression"
    row = _ablation_row(summary, "eager", "output tok/s", "concurrency 1")
    assert row["candidate_median"] == pytest.approx(rate(eager), rel=1e-9)
    assert row["is_result"] is True and row["direction"] == "regression"
    decode = statistics.median(phase_split("eager", "p1")[("long", "decode_tok_s")])
    for run in ("p1", "p2"):
        assert decode / statistics.median(phase_split("batch", run)[("long", "decode_tok_s")]) < 0.35


def test_the_phase_split_is_the_engine_counters_of_each_process(summary):
    """Every phases cell (prefill and decode rates per process and prompt class) is the median of the
    three measured rounds' counter deltas."""
    cells = {(c["run"], c["prompt_class"], c["metric"]): c for c in summary["cells"]}
    for arm, run in processes():
        rid = f"{arm}-{run}-phases" if arm in ("serial", "batch") else f"{arm}-phases"
        for (klass, metric), vals in phase_split(arm, run).items():
            cell = cells[(rid, klass, metric)]
            assert cell["n"] == len(vals) == 3
            assert cell["median"] == pytest.approx(statistics.median(vals), rel=1e-9)
            assert (cell["min"], cell["max"]) == pytest.approx((min(vals), max(vals)), rel=1e-9)


def test_the_ablation_baseline_holds_both_batch_processes(summary):
    """The batched baseline arm has two processes: its phase figures in the ablation are both
    processes' rounds (their spread is the noise the ablation's verdicts need), not the first alone."""
    both = [statistics.median(phase_split("batch", run)[("long", "decode_tok_s")]) for run in ("p1", "p2")]
    row = _ablation_row(summary, "eager", "decode tok/s", "long prompt (1194 tokens), 128 generated")
    assert row["baseline_min"] <= min(both) and row["baseline_max"] >= max(both)


def test_a_starved_kv_cache_preempts_and_loses_throughput_at_64(summary):
    """--gpu-memory-utilization 0.12: a KV cache of 1,113 blocks of 16 tokens, fewer than 64 requests
    of ~1,166 tokens need; at concurrency 64 the engine's vllm:num_preemptions_total rose 30 times and
    the output rate is 0.57× batch's; at concurrency 1 nothing changes."""
    kv, base = cache_info("kvlimited", "p1"), cache_info("batch", "p1")
    tokens = int(kv["num_gpu_blocks"]) * int(kv["block_size"])
    assert tokens == 17_808 and int(base["num_gpu_blocks"]) * int(base["block_size"]) > 900_000
    assert (kv["gpu_memory_utilization"], base["gpu_memory_utilization"]) == ("0.12", "0.92")
    r64 = result("kvlimited", "p1", "conc64")
    need = 64 * (r64["total_input_tokens"] + r64["total_output_tokens"]) / r64["completed"]
    assert need > tokens
    pre = {
        (a, run, p): point_delta(a, run, p, "vllm:num_preemptions_total")
        for a, run in processes()
        for p in points(a, run)
        if (a, run, p) not in INTERRUPTED
    }
    assert pre[("kvlimited", "p1", "conc64")] == 30
    assert all(v == 0 for k, v in pre.items() if k != ("kvlimited", "p1", "conc64"))
    ratio = rate(r64) / rate(result("batch", "p1", "conc64"))
    assert 0.5 < ratio < 0.6
    cmp = next(
        c
        for c in summary["results_ladder"]["comparisons"]
        if (c["baseline"], c["candidate"], c["concurrency"]) == ("batch", "kvlimited", 64)
    )
    assert cmp["ratio"] == pytest.approx(ratio, rel=1e-9)
    # one 10-s run per arm at 64 (batch's second process was cut before it): below the duration gate with no
    # repeat to stand in for it, so the 0.57x is shown, not judged -- the same on every page (issue 33)
    assert cmp["is_result"] is False and "neither arm was run twice at concurrency 64" in cmp["reason"]
    # the engine's counters, as the summary reads them: one check per results run, failed where it preempted
    checks = {
        c["run"]: c for c in summary["checks"] if c["name"].startswith("preemption:") and c["kind"] == "results run"
    }
    windows = {w["window"]: w for w in summary["audit"]["windows"] if w["kind"] == "results run"}
    assert len(checks) == len(pre) == 22
    for (a, run, p), v in pre.items():
        rid = f"{a}-{run}-{p}" if a in ("serial", "batch") else f"{a}-{p}"
        assert checks[rid]["preemptions"] == windows[rid]["preemptions"] == v
        assert checks[rid]["status"] == ("fail" if v else "pass")
    # the ablation row says what the arm changed and carries the preemptions behind its figure
    row = _ablation_row(summary, "kvlimited", "output tok/s", "concurrency 64")
    # (its verdict is not asserted: the switch ablation still judges it without the campaign's gates, where the
    # results ladder above says "cannot tell" -- a disagreement issue 33 has left open)
    assert row["candidate_median"] == pytest.approx(rate(r64), rel=1e-9)
    assert "gpu_memory_utilization" in row["switches"]
    assert "30 preemption" in json.dumps(row)


# ------------------------------------------------------------------------------ memory, cache, energy


def test_memory_peak_per_process_from_the_gpu_samples(summary):
    """The highest memory.used between the server's ready and its stop, per process: ~128–132 GiB
    with the default --gpu-memory-utilization 0.92, 19 GiB with 0.12."""
    mem = {m["run"]: m for m in summary["memory"]}
    peaks = {}
    for arm, run in processes():
        ev = events(arm, run)
        loaded = gpu(arm, run).filter(pl.col("t").is_between(ev["ready"], ev["server_stop"]))
        peaks[arm, run] = loaded["mib"].max() / 1024
        rid = f"{arm}-{run}-gpu" if arm in ("serial", "batch") else f"{arm}-gpu"
        assert mem[rid]["peak_gib"] == pytest.approx(peaks[arm, run], rel=1e-9)
        assert mem[rid]["loaded_samples"] == loaded.height
    assert all(128 < v < 132 for k, v in peaks.items() if k[0] != "kvlimited")
    assert 18 < peaks["kvlimited", "p1"] < 20


def test_prefix_cache_noprefix_phases_against_batch_phases(summary):
    """The phases send a distinct prompt every round: with prefix caching on (batch) the engine looked
    every prompt up and found nothing (Δ vllm:prefix_cache_hits_total 0), with it off (noprefix) it
    looked nothing up; so the two arms' prefill figures measure the same uncached prefill and differ
    within noise. In the sweep, prefix caching served a few prompt tokens at batch/p1 conc64, none
    with it off."""
    for arm, run in processes():
        on = cache_info(arm, run)["enable_prefix_caching"] == "True"
        assert on is ("noprefix" not in arm)
        folder = RUNS / arm / run / "phases"
        doc = json.loads((folder / "phases.json").read_text())
        measured = [s for s in doc["samples"] if not s["warmup"]]
        hits = sum(
            delta(folder, s["metrics_before"], s["metrics_after"], "vllm:prefix_cache_hits_total") for s in measured
        )
        queries = sum(
            delta(folder, s["metrics_before"], s["metrics_after"], "vllm:prefix_cache_queries_total") for s in measured
        )
        assert hits == 0 and (queries > 0) is on
    windows = {w["window"]: w for w in summary["audit"]["windows"]}
    assert all(w["cached_tokens"] == 0 for w in windows.values() if w["kind"] == "phase sample")
    for klass in ("short", "long"):
        ctx = next(
            r["context"] for r in summary["switch_ablation"]["rows"] if r["context"].startswith(f"{klass} prompt")
        )
        assert _ablation_row(summary, "noprefix", "prefill tok/s", ctx)["is_result"] is False
    cached = {
        (a, p): point_delta(a, run, p, "vllm:prompt_tokens_cached_total")
        for a, run in [("batch", "p1"), ("noprefix", "p1")]
        for p in ("conc1", "conc64")
    }
    assert cached[("noprefix", "conc64")] == cached[("noprefix", "conc1")] == cached[("batch", "conc1")] == 0
    assert 0 < cached[("batch", "conc64")] < 0.01 * result("batch", "p1", "conc64")["total_input_tokens"]
    assert windows["batch-p1-conc64"]["cached_tokens"] == cached[("batch", "conc64")]
    assert windows["noprefix-conc64"]["cached_tokens"] == 0


def test_the_prefix_cache_warning_names_a_cause_the_files_allow(summary):
    """Every sweep point here has a seed of its own (--seed {concurrency}: 1, 2, 4, 8, 64, as each
    point's capture.json records), so the warning on batch/p1 conc64 must not blame one --seed sent
    to every point."""
    seeds = []
    for point in points("batch", "p1"):
        argv = json.loads((RUNS / "batch" / "p1" / point / "capture.json").read_text())["command"]["argv"]
        seeds.append(argv[argv.index("--seed") + 1])
    assert seeds == ["1", "2", "4", "8", "64"]
    (warn,) = [c for c in summary["checks"] if c["name"].startswith("prefix cache: batch-p1-conc64")]
    assert "passes one --seed to every point" not in warn["detail"]


def serving(arm: str, run: str, point: str) -> tuple[float, float]:
    """When the engine served the point's requests, as the capture's timed scrapes bound it: the last
    scrape before vllm:prompt_tokens_total moved, the first where vllm:request_success_total reached
    its final value (Unix seconds)."""
    folder = RUNS / arm / run / point
    cap = json.loads((folder / "capture.json").read_text())
    names = ("vllm:prompt_tokens_total", "vllm:request_success_total")
    snaps = [(s["unix_s"], *_named_totals(folder / s["file"], names)) for s in cap["snapshots"]]
    p0, done = snaps[0][1], snaps[-1][2]
    return max(t for t, p, _ in snaps if p == p0), min(t for t, _, n in snaps if n == done)


def _joules(g: pl.DataFrame, t0: float, t1: float) -> float:
    """The trapezoid integral of power over [t0, t1], the power at the ends interpolated."""
    ts, ws = g["t"].to_list(), g["w"].to_list()

    def at(t):
        i = next(i for i in range(1, len(ts)) if ts[i] >= t)
        return ws[i - 1] + (ws[i] - ws[i - 1]) * (t - ts[i - 1]) / (ts[i] - ts[i - 1])

    pts = [(t0, at(t0)), *[(t, w) for t, w in zip(ts, ws) if t0 < t < t1], (t1, at(t1))]
    return sum((b[0] - a[0]) * (a[1] + b[1]) / 2 for a, b in zip(pts, pts[1:]))


def test_energy_per_token_where_power_was_sampled(summary):
    """nvidia-smi sampled power.draw every 0.5 s through every process, so every sweep point's energy
    is measured: the integral of the power over the time the engine served the point's requests, over
    the output tokens of its result file. That time is bounded by the capture's 1-s scrapes: from the
    last scrape before the engine counted a prompt token to the first with every request finished —
    not the whole capture, whose first 15–30 s are `vllm bench serve` starting (serial conc1: a 27 s
    capture around a 5.1 s benchmark). Batching spends less energy per token: batch/p1 at 64 against 1."""
    energy = {e["window"]: e for e in summary["audit"]["energy"]}
    per_token = {}
    for arm, run in processes():
        g = gpu(arm, run)
        assert g["w"].null_count() == 0 and g["w"].max() > 100
        for point in points(arm, run):
            if (arm, run, point) in INTERRUPTED:
                continue
            rid = f"{arm}-{run}-{point}" if arm in ("serial", "batch") else f"{arm}-{point}"
            e = energy[rid]
            r = result(arm, run, point)
            first, last = serving(arm, run, point)
            assert last - first <= r["duration"] + 2.0  # the scrapes bound the benchmark to a second or so
            assert first - 1.0 <= e["t0"] < e["t1"] <= last + 1.0 and e["t1"] - e["t0"] >= 0.9 * r["duration"]
            assert e["joules"] == pytest.approx(_joules(g, e["t0"], e["t1"]), rel=1e-6)
            assert e["output_tokens"] == sum(r["output_lens"])
            per_token[rid] = e["joules"] / sum(r["output_lens"])
            assert e["j_per_token"] == pytest.approx(per_token[rid], rel=1e-9)
    assert per_token["batch-p1-conc64"] < per_token["batch-p1-conc1"] / 5


def test_the_campaigns_todo_says_what_each_arm_changed():
    """campaign.json's todo is what today's init says of these files: each ablation arm's difference from
    the baseline in its own units, and never that kvlimited ran what batch ran (the measuring session's
    init said so, before it read the KV cache's capacity)."""
    todo = json.loads((CAMP / "campaign.json").read_text())["todo"]
    assert not any("do not differ in what ran" in t for t in todo)
    (kv,) = [t for t in todo if t.startswith("arm kvlimited vs the baseline batch:")]
    assert "KV cache 17,808 vs 933,520 tokens" in kv and "gpu_memory_utilization 0.12 vs 0.92" in kv
    assert {t.split(" vs the baseline")[0] for t in todo if " vs the baseline batch: " in t} == {
        "arm eager",
        "arm eager-noprefix",
        "arm kvlimited",
        "arm noprefix",
    }


def test_the_compare_pages_todo_is_one_line_above_the_findings_with_its_items_folded():
    """Eight open items (four interrupted load points, four arm differences to confirm) were one
    ten-line paragraph between the title and the findings; now one line, each item a list entry."""
    import html as html_mod

    from benchbook.pages import compare_page

    todo = json.loads((CAMP / "campaign.json").read_text())["todo"]
    page = compare_page.load([], campaign=str(CAMP))
    head = str(compare_page.header(page))
    assert len(todo) == 8 and page.todo == todo
    summary = '<details class="bb-collapsed" id="bb-todo"><summary>Still to decide (campaign.json todo): 8 items'
    assert head.count(summary) == 1 and head.split("</h1>", 1)[1].startswith(summary)  # the findings follow the header
    items = [
        html_mod.unescape(x) for x in re.findall(r"<li>(.*?)</li>", head.split(summary, 1)[1].split("</details>")[0])
    ]
    assert items == todo
