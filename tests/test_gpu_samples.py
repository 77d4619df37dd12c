"""nvidia-smi and host sample files: the real H200 campaign's files and hand-made edge cases."""

import pytest

from benchbook.errors import InputError
from benchbook.ingest import gpu_samples
from realdata import realdata

H200 = realdata("vllm_h200_llama8b")


def test_reads_the_h200_campaigns_nvidia_smi_samples():
    df = gpu_samples.read_gpu_csv(H200 / "batch" / "gpu_samples.csv")
    assert df.columns == gpu_samples.GPU_COLUMNS
    assert df["gpu"].unique().to_list() == [0]
    assert df["memory_total_mib"].unique().to_list() == [143771.0]
    # the load ramp: 0 MiB before the server starts, >100 GiB once weights and KV cache are in
    assert df["memory_used_mib"][0] == 0.0
    assert df["memory_used_mib"].max() > 100 * 1024
    # 0.5-s samples, Unix seconds (the README: measured 2026-12-01 08:30–08:50 UTC)
    assert 1796113800 <= df["t"][0] <= 1796115000
    step = df["t"].diff().drop_nulls().median()
    assert 0.45 <= step <= 0.55
    assert df["power_w"].min() > 50


def test_reads_the_h200_host_samples():
    host = gpu_samples.read_host_csv(H200 / "batch" / "host_samples.csv")
    by_t = gpu_samples.host_by_time(host)
    assert by_t.height < host.height  # several processes per sample
    assert by_t["mem_available_kib"].min() > 0
    assert by_t["pss_kib_sum"].max() > 1e6  # the server processes hold GiBs


def test_units_and_missing_values(tmp_path):
    p = tmp_path / "g.csv"
    p.write_text(
        "timestamp, index, memory.used [MiB], power.draw [W], utilization.gpu [%]\n"
        "2026/12/01 00:00:00.000, 0, 100 MiB, 80.50 W, 3 %\n"
        "2026/12/01 00:00:00.000, 1, 200 MiB, [N/A], 4 %\n"
    )
    df = gpu_samples.read_gpu_csv(p)
    assert df["memory_used_mib"].to_list() == [100.0, 200.0]
    assert df["power_w"].to_list() == [80.5, None]
    assert df["t"][0] == 1796083200.0
    g, h, m = gpu_samples.memory_frames(df, None, [(1796083200.0, "load_end", None)], run="r", arm="a")
    assert g["rank"].to_list() == [0, 1] and h.height == 0 and m["event"].to_list() == ["load_end"]


def test_unknown_layout_names_the_columns_it_saw(tmp_path):
    p = tmp_path / "g.csv"
    p.write_text("time,gpu_mem\n1,2\n")
    with pytest.raises(InputError) as e:
        gpu_samples.read_gpu_csv(p)
    assert "time, gpu_mem" in str(e.value) and "g.csv" in str(e.value)


def test_impossible_values_are_refused_with_the_place(tmp_path):
    p = tmp_path / "g.csv"
    p.write_text("timestamp, index, memory.used [MiB]\n2026/12/01 00:00:00.000, 0, -5\n")
    with pytest.raises(InputError) as e:
        gpu_samples.read_gpu_csv(p)
    assert "line 2" in str(e.value) and "memory.used" in str(e.value)
