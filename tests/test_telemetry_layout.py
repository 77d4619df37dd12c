"""GPU telemetry in init's run-folder layout: an AIPerf GPU telemetry export, a DCGM scrape series
(``*_scrapes.jsonl``) or DCGM .prom scrapes beside a run's results give the same memory figures as
the same samples in an nvidia-smi CSV, and the energy of the run's window from the GPU's energy
counter (the CSV's from its power). The samples are made at test time from one seeded series,
written in each tool's units (MiB; AIPerf: GB and MJ; DCGM: MiB and mJ)."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from benchbook.commands.cli import main
from benchbook.errors import InputError
from benchbook.ingest import formats, run_layout, telemetry

TOOLS = Path(__file__).parent / "fixtures" / "tools"
AIPERF = TOOLS / "aiperf-0.13.0"
DCGM = TOOLS / "dcgm-exporter" / "dcgm_metrics.prom"
GPUS = (0, 1)
POWER_W = {0: 400.0, 1: 250.0}  # constant per GPU: the counter's rise and the power integral agree
STEP_S = 0.5


def _window() -> tuple[float, float]:
    (run,) = formats.read(AIPERF / "profile_export.jsonl")
    df = run.requests
    return float(df["start_s"].min()), float((df["start_s"] + df["e2e_s"]).max())


def _samples() -> list[dict]:
    """One sample per GPU every 0.5 s from 10 s before the requests to 10 s after: memory rising
    to a loaded level with seeded noise (whole MiB), a constant power and its energy counter."""
    rng = random.Random(28)
    t0, t1 = _window()
    start, n = float(int(t0)) - 10.0, int((t1 - t0 + 21.0) / STEP_S) + 1  # whole ms: the CSV keeps ms
    out = []
    for i in range(n):
        t = start + i * STEP_S
        for g in GPUS:
            mib = min(60000, 2000 + 3000 * i) + rng.randint(0, 512) + 100 * g
            out.append({"t": t, "gpu": g, "mib": mib, "w": POWER_W[g], "j": 5e6 + POWER_W[g] * (t - start)})
    return out


def _csv(s: list[dict]) -> str:
    import datetime as dt

    lines = ["timestamp, index, memory.used [MiB], memory.total [MiB], power.draw [W], utilization.gpu [%]"]
    for x in s:
        stamp = dt.datetime.fromtimestamp(x["t"], dt.timezone.utc).strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]
        lines.append(f"{stamp}, {x['gpu']}, {x['mib']}, 81559, {x['w']}, 50")
    return "\n".join(lines) + "\n"


def _aiperf(s: list[dict]) -> str:
    data = lambda x: {  # noqa: E731 - AIPerf's units: GB (10^9 bytes) and MJ
        "nvidia_memory_used": x["mib"] * 2**20 / 1e9,
        "nvidia_power_usage": x["w"],
        "nvidia_energy_consumption": x["j"] / 1e6,
    }
    return "".join(
        json.dumps(
            {"timestamp_ns": round(x["t"] * 1e9), "gpu_index": x["gpu"], "hostname": "h", "telemetry_data": data(x)}
        )
        + "\n"
        for x in s
    )


def _dcgm_text(rows: list[dict]) -> str:
    out = ["# TYPE DCGM_FI_DEV_FB_USED gauge", "# TYPE DCGM_FI_DEV_POWER_USAGE gauge"]
    out += [f'DCGM_FI_DEV_FB_USED{{gpu="{x["gpu"]}",Hostname="h"}} {x["mib"]}' for x in rows]
    out += [f'DCGM_FI_DEV_POWER_USAGE{{gpu="{x["gpu"]}",Hostname="h"}} {x["w"]}' for x in rows]
    out.append("# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter")
    out += [f'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{gpu="{x["gpu"]}",Hostname="h"}} {x["j"] * 1e3:.3f}' for x in rows]
    return "\n".join(out) + "\n"


def _by_time(s: list[dict]) -> list[tuple[float, list[dict]]]:
    times: dict[float, list[dict]] = {}
    for x in s:
        times.setdefault(x["t"], []).append(x)
    return sorted(times.items())


def _dcgm_series(s: list[dict]) -> str:
    return "".join(
        json.dumps({"t_start": t - 0.01, "t_end": t + 0.01, "text": _dcgm_text(rows)}) + "\n" for t, rows in _by_time(s)
    )


def _run_folder(root: Path, kind: str, s: list[dict]) -> Path:
    """arm/p1: AIPerf's records as the load point (Unix request times: a window for energy), its
    /metrics around it, events, and the GPU samples in one of the layouts."""
    run = root / kind / "p1"
    (run / "results").mkdir(parents=True)
    (run / "metrics").mkdir()
    shutil.copy(AIPERF / "profile_export.jsonl", run / "results" / "profile_export.jsonl")
    for side in ("before", "after"):
        shutil.copy(AIPERF / f"metrics_{side}.prom", run / "metrics" / f"profile_export_{side}.prom")
    t0, t1 = _window()
    events = [("server_start", int(t0) - 10.0), ("ready", int(t0) - 5.0), ("server_stop", t1 + 10.0)]
    # the runner's marker of the point (docs/checks.md "Windows", source 1): without it the DCGM layout's
    # window would be its scrape series' span (source 2), wider than the requests and than its own samples
    marker = {"event": "bench_profile_export", "t_start": t0, "t_end": t1}
    (run / "events.jsonl").write_text(
        "".join(json.dumps(x) + "\n" for x in [*({"event": e, "t": t} for e, t in events), marker])
    )
    if kind == "csv":
        (run / "gpu_samples.csv").write_text(_csv(s))
    elif kind == "aiperf":
        (run / "gpu_telemetry_export.jsonl").write_text(_aiperf(s))
    elif kind == "dcgm":  # a series per load point in metrics/, as benchbook capture writes them
        (run / "metrics" / "profile_export_scrapes.jsonl").write_text(_dcgm_series(s))
    elif kind == "dcgm-prom":  # one .prom per scrape, named with its time
        for t, rows in _by_time(s):
            (run / "metrics" / f"dcgm_{t:.3f}.prom").write_text(_dcgm_text(rows))
    return run


@pytest.fixture(scope="module")
def campaigns(tmp_path_factory):
    from benchbook.commands.summary import build

    root = tmp_path_factory.mktemp("telemetry")
    s = _samples()
    out = {}
    for kind in ("csv", "aiperf", "dcgm", "dcgm-prom"):
        run = _run_folder(root / "in", kind, s)
        camp = root / f"camp-{kind}"
        assert main(["init", "-q", str(camp), str(run.parent)]) == 0
        out[kind] = (camp, build(camp))
    return out


def test_the_run_folder_recognises_its_telemetry(tmp_path):
    s = _samples()[:8]
    for kind, name in (
        ("aiperf", "gpu_telemetry_export.jsonl"),
        ("dcgm", "profile_export_scrapes.jsonl"),
        ("dcgm-prom", "metrics"),
    ):
        run = _run_folder(tmp_path, kind, s)
        (rf,) = run_layout.run_folders(run)
        assert rf.gpu is not None and rf.gpu.name == name
    (rf,) = run_layout.run_folders(_run_folder(tmp_path, "csv", s))
    assert rf.gpu.name == "gpu_samples.csv"  # the CSV as before


def test_memory_is_the_same_from_every_layout(campaigns):
    peaks = {}
    for kind, (_camp, summary) in campaigns.items():
        (mem,) = summary["memory"]
        peaks[kind] = (mem["peak_gib"], mem.get("steady_gib"))
    s = _samples()
    assert peaks["csv"][0] == pytest.approx(max(x["mib"] for x in s) / 1024)
    for kind in ("aiperf", "dcgm", "dcgm-prom"):
        assert peaks[kind] == pytest.approx(peaks["csv"], rel=1e-9), kind


def test_energy_from_the_counter_matches_the_power_integral(campaigns):
    t0, t1 = _window()
    expected = sum(POWER_W.values()) * (t1 - t0)
    for kind, (_camp, summary) in campaigns.items():
        (e,) = summary["audit"]["energy"]
        assert e["joules"] == pytest.approx(expected, rel=1e-6), kind
        method = "power" if kind == "csv" else "counter"
        assert set(e["methods"].values()) == {method}, kind


def test_a_dcgm_scrape_without_its_time_is_refused(tmp_path):
    (tmp_path / "dcgm_metrics.prom").write_bytes(DCGM.read_bytes())
    assert telemetry.kind_of(tmp_path / "dcgm_metrics.prom") == "dcgm-prom"
    with pytest.raises(InputError, match="without its time"):
        telemetry.read_gpu_samples(tmp_path)
    bad = tmp_path / "x_scrapes.jsonl"
    bad.write_text(json.dumps({"t_start": "soon", "t_end": 1, "text": DCGM.read_text()}) + "\n")
    with pytest.raises(InputError, match=r"line 1\.t_start"):
        telemetry.read_dcgm_series(bad)


def test_validate_names_a_dcgm_series(tmp_path, capsys):
    p = tmp_path / "conc8_scrapes.jsonl"
    p.write_text(_dcgm_series(_samples()[:8]))
    assert main(["validate", str(p)]) == 0
    out = capsys.readouterr().out
    assert "DCGM-exporter scrape series" in out and "8 samples, 2 GPU(s)" in out
