"""GPU telemetry readers: AIPerf's GPU telemetry export and DCGM-exporter scrapes, in the frame of
nvidia-smi CSV (benchbook.ingest.gpu_samples), figures checked by hand against the fixtures."""

from pathlib import Path

import pytest

from benchbook.errors import InputError
from benchbook.ingest import gpu_samples, telemetry

TOOLS = Path(__file__).parent / "fixtures" / "tools"
AIPERF = TOOLS / "aiperf-0.13.0-telemetry" / "gpu_telemetry_export.jsonl"
DCGM = TOOLS / "dcgm-exporter" / "dcgm_metrics.prom"


def test_same_columns_as_nvidia_smi():
    assert telemetry.TELEMETRY_COLUMNS[: len(gpu_samples.GPU_COLUMNS)] == gpu_samples.GPU_COLUMNS
    for df in (telemetry.read_aiperf_telemetry(AIPERF), telemetry.read_dcgm(DCGM, [1767225600.0])):
        assert df.columns == telemetry.TELEMETRY_COLUMNS


def test_aiperf_units_become_mib_watts_joules():
    df = telemetry.read_aiperf_telemetry(AIPERF)
    assert df.height == 6 and df["gpu"].to_list() == [0, 1, 0, 1, 0, 1]
    assert df["t"].to_list()[:2] == [1767225600.0, 1767225600.0] and df["t"].max() == 1767225602.0
    first = df.row(0, named=True)
    # 73.40032 GB (= 10.48576 x 7) is 70000 MiB: AIPerf scaled DCGM's MiB by 1.048576e-3
    assert first["memory_used_mib"] == pytest.approx(70000.0)
    assert first["power_w"] == 300.0 and first["energy_j"] == pytest.approx(1.0e6)  # 1 MJ
    assert first["util_gpu_pct"] == 50.0 and first["temp_c"] == 45.0 and first["host"] == "node-a"
    last = df.row(5, named=True)
    assert last["memory_used_mib"] == pytest.approx(90000.0) and last["power_w"] == 501.0
    # energy counter: 0.0008 MJ in 2 s = 400 W, the mean power drawn (300 -> 500 W)
    assert last["energy_j"] - df.row(1, named=True)["energy_j"] == pytest.approx(800.0)


def test_aiperf_older_field_names(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text(
        '{"timestamp_ns": 2000000000, "gpu_index": 0, "gpu_uuid": "u", "telemetry_data": '
        '{"gpu_power_usage": 250.5, "gpu_memory_used": 1.048576, "energy_consumption": 0.5}}\n'
    )
    row = telemetry.read_aiperf_telemetry(p).row(0, named=True)
    assert (row["t"], row["power_w"], row["energy_j"]) == (2.0, 250.5, 500000.0)
    assert row["memory_used_mib"] == pytest.approx(1000.0)


def test_aiperf_unknown_layout_names_the_keys(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text('{"timestamp_ns": 1, "gpu_index": 0, "telemetry_data": {}}\n{"ts": 1, "gpu": 0}\n')
    with pytest.raises(InputError) as e:
        telemetry.read_aiperf_telemetry(p)
    assert "line 2" in str(e.value) and "['gpu', 'ts']" in str(e.value)


def test_dcgm_scrape():
    df = telemetry.read_dcgm(DCGM, [1767225600.0])
    assert df["gpu"].to_list() == [0, 1]
    g0 = df.row(0, named=True)
    assert g0["memory_used_mib"] == 76493.0 and g0["memory_total_mib"] == 76493.0 + 4511.0
    assert g0["power_w"] == 512.25 and g0["energy_j"] == pytest.approx(9876543.21)  # mJ -> J
    assert (g0["clock_sm_mhz"], g0["clock_mem_mhz"], g0["util_gpu_pct"], g0["util_mem_pct"]) == (1980, 2619, 97, 61)
    assert g0["t"] == 1767225600.0 and g0["host"] == "node-a"
    assert df.row(1, named=True)["memory_used_mib"] == 0.0


def test_dcgm_series_of_scrapes_and_no_time(tmp_path):
    df = telemetry.read_dcgm([DCGM, DCGM], [10.0, 11.0])
    assert df.height == 4 and df["t"].to_list() == [10.0, 10.0, 11.0, 11.0]
    assert telemetry.read_dcgm(DCGM)["t"].null_count() == 2  # a scrape has no time of its own


def test_dcgm_not_a_dcgm_scrape(tmp_path):
    p = tmp_path / "m.prom"
    p.write_text("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 1\n")
    with pytest.raises(InputError, match="no DCGM GPU series"):
        telemetry.read_dcgm(p)
    q = tmp_path / "n.prom"
    q.write_text('DCGM_FI_DEV_FB_USED{UUID="x"} 5\n')
    with pytest.raises(InputError, match="without a 'gpu' label"):
        telemetry.read_dcgm(q)


def test_validate_names_the_layout(capsys, tmp_path):
    from benchbook.commands.cli import main

    assert main(["validate", str(AIPERF)]) == 0
    assert "AIPerf GPU telemetry export (0.13 layout" in capsys.readouterr().out
    assert main(["validate", str(DCGM)]) == 0
    out = capsys.readouterr().out
    assert "DCGM-exporter scrape" in out and "2 GPU(s)" in out and "energy_j" in out
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"timestamp_ns": "soon", "gpu_index": 0, "telemetry_data": {}}\n')
    assert main(["validate", str(bad)]) == 2
    assert "line 1.timestamp_ns" in capsys.readouterr().err


def test_telemetry_becomes_the_campaigns_memory_tables():
    """Either source lays out as Campaign.memory's GPU table, like nvidia-smi CSV, so memory analyses
    (peak and steady per rank) read it unchanged."""
    gpu, host, markers = gpu_samples.memory_frames(telemetry.read_aiperf_telemetry(AIPERF), run="r1", arm="a")
    assert gpu.columns == ["run", "arm", "t", "rank", "gpu_used_mib"] and gpu.height == 6
    import polars as pl

    first = gpu.group_by("rank").agg(pl.col("gpu_used_mib").first()).sort("rank")
    assert first["gpu_used_mib"].to_list() == pytest.approx([70000.0, 70000.0])
    assert gpu["gpu_used_mib"].max() == pytest.approx(90000.0)
    g2, _, _ = gpu_samples.memory_frames(telemetry.read_dcgm(DCGM, [5.0]))
    assert g2["gpu_used_mib"].to_list() == [76493.0, 0.0] and host.height == 0 and markers.height == 0
