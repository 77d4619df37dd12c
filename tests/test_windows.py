"""Markers and energy: every load point's window in Unix time (the runner's events.jsonl, the captures'
own times, the result file's date and duration) and its joules per output token from the GPU's power
samples, on the real H200 campaign's files (copied into tmp_path by tests/h200_arms.py)."""

from __future__ import annotations

import csv
import datetime as dt
import json
import shutil
from argparse import Namespace
from pathlib import Path

import pytest

import h200_arms
from benchbook.commands import init as init_cmd
from benchbook.ingest import windows
from one_page import render_one

H200 = h200_arms.H200
POINTS = ("conc1", "conc8", "conc64")


def _init(dest: Path, *inputs: Path) -> dict:
    assert init_cmd.run(Namespace(dir=dest, inputs=list(inputs), title=None, question=None, quiet=True)) == 0
    return json.loads((dest / "campaign.json").read_text())


def _events(arm: str) -> dict[str, dict]:
    return {e["event"]: e for e in map(json.loads, (H200 / arm / "events.jsonl").read_text().splitlines())}


def _power(path: Path) -> list[tuple[float, float]]:
    """(Unix s, W) of an nvidia-smi CSV, read here with the csv module (the timestamp is UTC)."""
    out = []
    with path.open() as f:
        rows = csv.reader(f)
        next(rows)
        for r in rows:
            t = dt.datetime.strptime(r[0].strip(), "%Y/%m/%d %H:%M:%S.%f").replace(tzinfo=dt.timezone.utc)
            out.append((t.timestamp(), float(r[4])))
    return out


def _trapezoid(pts: list[tuple[float, float]], t0: float, t1: float) -> float:
    def at(t: float) -> float:
        for (ta, pa), (tb, pb) in zip(pts, pts[1:]):
            if ta <= t <= tb:
                return pa + (pb - pa) * (t - ta) / (tb - ta)
        raise AssertionError(t)

    inner = [(t0, at(t0)), *((t, p) for t, p in pts if t0 < t < t1), (t1, at(t1))]
    return sum((b[0] - a[0]) * (a[1] + b[1]) / 2 for a, b in zip(inner, inner[1:]))


def test_the_runners_markers_both_shapes():
    w = windows.event_windows(H200 / "batch" / "events.jsonl")
    ev = _events("batch")
    assert (w["conc8"].t0, w["conc8"].t1) == (ev["bench_conc8"]["t_start"], ev["bench_conc8"]["t_end"])
    assert w["conc8"].source == "events.jsonl: bench_conc8 t_start → t_end"
    # {"event": "<name>_start", "t"} / {"event": "<name>_end", "t"} pairs
    assert (w["phase"].t0, w["phase"].t1) == (ev["phase_start"]["t"], ev["phase_end"]["t"])
    assert (w["ladder"].t0, w["ladder"].t1) == (ev["ladder_start"]["t"], ev["ladder_end"]["t"])
    assert windows.marker_for(w, "bench_conc64") == w["conc64"]  # by the result file's stem too


def test_a_capture_steps_markers(tmp_path):
    p = tmp_path / "events.jsonl"
    p.write_text(
        '{"event": "server_start", "t": 100.0}\n'
        '{"event": "bench_ladder/ladder-4", "t_start": 110.5, "t_end": 112.25, "kind": "ladder"}\n'
        '{"event": "bench_conc16", "t_start": 120.0, "t_end": 130.0, "kind": "run", "exit_status": 0}\n'
    )
    w = windows.event_windows(p)
    assert (w["ladder/ladder-4"].t0, w["ladder/ladder-4"].t1) == (110.5, 112.25) and w["conc16"].t1 == 130.0
    p.write_text('{"event": "x", "t": 1}\n[1, 2]\n')
    from benchbook.errors import InputError

    with pytest.raises(InputError, match="line 2"):
        windows.event_windows(p)


def test_the_result_files_date_and_duration_agree_with_the_marker():
    """vllm bench serve's date (to the second, written as the run ended) less its duration: within about
    a second of the runner's marker, which also holds the tool's start-up and warm-up requests."""
    d = json.loads((H200 / "batch" / "results" / "bench_conc64.json").read_text())
    w = windows.result_window(d["date"], d["duration"], "bench_conc64.json")
    ev = _events("batch")["bench_conc64"]
    assert abs(w.t1 - ev["t_end"]) < 1.5 and ev["t_start"] < w.t0 < ev["t_end"]
    assert "local time read as UTC" in w.source


@pytest.fixture(scope="module")
def camp(tmp_path_factory):
    from benchbook.commands.summary import build

    root = tmp_path_factory.mktemp("energy")
    batch = h200_arms.arm(root, "batch", POINTS)
    serial = h200_arms.arm(root, "serial", ("conc1", "conc8"))
    # a process whose runner wrote no events: its windows come from the scrape series, then the date
    nodates = h200_arms.arm(root, "noprefix", ("conc1", "conc8"))
    (nodates / "events.jsonl").unlink()
    (nodates / "metrics" / "conc8_scrapes.jsonl").unlink()
    dest = root / "camp"
    _init(dest, serial, batch, nodates)
    return dest, build(dest)


def test_every_point_gets_its_window(camp):
    dest, _s = camp
    doc = json.loads((dest / "runs/batch/1/benchbook/conc8/results.json").read_text())
    ev = _events("batch")["bench_conc8"]
    # the marker also spans vllm bench serve's start-up: the window is the result's own span inside it
    d = json.loads((H200 / "batch" / "results" / "bench_conc8.json").read_text())
    rw = windows.result_window(d["date"], d["duration"], "bench_conc8.json")
    t0, t1 = windows.unix(doc["started_at"]), windows.unix(doc["ended_at"])
    assert t0 == pytest.approx(max(rw.t0, ev["t_start"]), abs=1e-5)
    assert t1 == pytest.approx(min(rw.t1 + 1, ev["t_end"]), abs=1e-5)
    assert ev["t_start"] - 1e-5 <= t0 < t1 <= ev["t_end"] + 1e-5 and t1 - t0 < ev["t_end"] - ev["t_start"]
    assert doc["window_source"].endswith("inside events.jsonl: bench_conc8 t_start → t_end")
    assert doc["window_source"].startswith("bench_conc8.json: date ")
    no1 = json.loads((dest / "runs/noprefix/1/benchbook/conc1/results.json").read_text())
    assert "inside conc1_scrapes.jsonl: first scrape's t_start" in no1["window_source"]  # narrowed to the load
    no8 = json.loads((dest / "runs/noprefix/1/benchbook/conc8/results.json").read_text())
    assert no8["window_source"].startswith("bench_conc8.json: date 20261201-")


def test_joules_per_token_for_every_sampled_point(camp):
    """Each point's joules are the trapezoid integral of its process's power.draw over its marker's window
    (recomputed here from the CSV), divided by the tokens the engine counted over the point."""
    _dest, s = camp
    energy = {e["window"]: e for e in s["audit"]["energy"]}
    assert set(energy) == {f"batch-{p}" for p in POINTS} | {
        "serial-conc1",
        "serial-conc8",
        "noprefix-conc1",
        "noprefix-conc8",
    }
    assert all(e["j_per_token"] is not None for e in energy.values())
    pts = _power(H200 / "batch" / "gpu_samples.csv")
    doc = json.loads((_dest / "runs/batch/1/benchbook/conc64/results.json").read_text())
    t0, t1 = windows.unix(doc["started_at"]), windows.unix(doc["ended_at"])  # the load's own span
    e = energy["batch-conc64"]
    assert e["joules"] == pytest.approx(_trapezoid(pts, t0, t1), rel=1e-6)  # ISO times keep microseconds
    win = next(w for w in s["audit"]["windows"] if w["window"] == "batch-conc64")
    assert e["j_per_token"] == pytest.approx(e["joules"] / win["generation_tokens"])
    assert e["j_per_request"] == pytest.approx(e["joules"] / win["requests"])
    assert e["interval_s"] == pytest.approx(0.5, abs=0.01)
    assert e["method"] == "the trapezoid integral of power.draw over the window, sampled every 0.50 s"
    assert 80 < e["idle_w"] < e["mean_w"]  # the GPU loaded and waiting, stated apart
    assert not any("no window in Unix time" in n for n in s["audit"]["energy_notes"])
    # batching spends less energy per token at matched load, point by point
    rows = {(c["candidate"], c["point"]): c for c in s["audit"]["energy_comparisons"]}
    assert rows[("batch", "conc8")]["baseline"] == "serial" and rows[("batch", "conc8")]["ratio"] < 0.5


def test_the_pages_show_joules_per_token(camp, tmp_path):

    dest, s = camp
    pts = {p["run"]: p for p in s["results_ladder"]["points"]}
    assert pts["batch-conc8"]["j_per_token"] == pytest.approx(
        next(e["j_per_token"] for e in s["audit"]["energy"] if e["window"] == "batch-conc8")
    )
    render_one("baseline", dest, tmp_path, "energy")
    html = (tmp_path / "baseline.html").read_text()
    assert "J / output token" in html and f"{pts['batch-conc8']['j_per_token']:.3f}" in html
    assert "sampled every 0.50 s" in html and "not measured — no window in Unix time" not in html


def test_no_samples_no_joules(tmp_path):
    from benchbook.commands.summary import build

    a = h200_arms.arm(tmp_path, "batch", ("conc1",))
    (a / "gpu_samples.csv").unlink()
    shutil.rmtree(a / "metrics")
    (a / "metrics").mkdir()
    s = build(tmp_path / "camp") if _init(tmp_path / "camp", a) else None
    assert s["audit"]["energy"] == [] and s["results_ladder"]["points"][0]["j_per_token"] is None


def test_a_marker_narrows_to_the_loads_own_span_only_when_it_holds_it():
    """capture run's marker spans vllm bench serve's start-up too; the result's date less duration, inside
    it, is the load. A result window outside the marker (a host clock in another zone) leaves it alone."""
    marker = windows.Window(1000.0, 1027.3, "events.jsonl: bench_conc1 t_start → t_end")
    inside = windows.Window(1020.0, 1025.1, "bench_conc1.json: date …")
    w = windows.narrowed(marker, inside)
    assert (w.t0, w.t1) == (1020.0, 1026.1) and w.source.endswith("inside " + marker.source)
    assert windows.narrowed(marker, windows.Window(1026.0, 1027.0 + 3600, "b")) == marker  # an hour off
    assert windows.narrowed(marker, windows.Window(1000.5, 1027.0, "b")) == marker  # no narrower
    assert windows.narrowed(marker, None) == marker
