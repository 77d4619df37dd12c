"""Memory peak/steady/host figures on synthetic runs built from the seed's printed GiB values."""

import polars as pl
import pytest

from benchbook.analysis.memory import (
    PSS_NOTE,
    fmt_gib,
    loaded_window,
    memory_delta,
    memory_summaries,
    memory_table,
    steady_of,
    summarize_memory,
)
from benchbook.errors import InputError

GIB_MIB = 1024.0
GIB_KIB = 1024.0 * 1024.0
T = [0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0, 16.0]
MARKERS = [(1.0, "load_start"), (5.0, "load_end"), (7.0, "request_start"), (15.0, "stop")]
# loaded: t = 6..14 (5 samples); second half = loaded[2:] = t 10, 12, 14


def gpu_run(peak, steady, ranks=4):
    """GiB per sample: idle 0.5, loading peaks at t=4, loaded samples settle on `steady`."""
    series = [0.5, 3.0, peak, steady + 1.0, steady + 0.5, steady + 0.01, steady, steady - 0.01, 0.5]
    return [[v * GIB_MIB] * ranks for v in series]


def host():
    shmem = [0, 50, 137.1, 137.1, 137.1, 137.1, 137.1, 137.1, 0]
    avail = [997.1, 950, 860, 853.0, 853.0, 853.0, 853.0, 853.0, 997.1]
    pss = [None, None, 280, 285, 285, 285, 285, 285, None]
    to_kib = lambda xs: [None if x is None else x * GIB_KIB for x in xs]  # noqa: E731
    return to_kib(shmem), to_kib(avail), to_kib(pss)


def test_steady_is_median_of_second_half():
    assert steady_of([9.0, 9.0, 1.0, 2.0, 3.0]) == 2.0  # [1, 2, 3]
    assert steady_of([9.0, 9.0, 1.0, 3.0]) == 2.0  # [1, 3]
    assert steady_of([4.0]) == 4.0


def test_loaded_window_and_missing_markers():
    assert loaded_window(MARKERS) == (1.0, 5.0, 15.0)
    with pytest.raises(InputError, match="no 'load_end' marker"):
        loaded_window([(1.0, "load_start"), (9.0, "stop")])
    with pytest.raises(InputError, match="no 'stop' marker"):
        loaded_window([(1.0, "load_end")])


def test_summary_of_the_tuned_run():
    shmem, avail, pss = host()
    s = summarize_memory(T, gpu_run(15.57, 8.15), MARKERS, shmem_kib=shmem, mem_available_kib=avail, pss_kib_sum=pss)
    assert s.loaded_samples == 5
    assert s.peak_gib == pytest.approx((15.57,) * 4)
    assert s.steady_gib == pytest.approx((8.15,) * 4)
    assert s.shmem_loaded_gib == pytest.approx(137.1)
    assert s.mem_available_idle_gib == pytest.approx(997.1)
    assert s.mem_available_loaded_gib == pytest.approx(853.0)
    assert s.mem_available_fall_gib == pytest.approx(144.1)  # seed: 997.1 → 853.0
    assert s.host_other_gib == pytest.approx(7.0)  # anonymous and pinned beyond the arenas
    assert s.pss_sum_gib == pytest.approx(285.0)
    assert PSS_NOTE in s.notes and "not a footprint" in PSS_NOTE


def test_seed_deltas_report_the_data_not_the_prose():
    default = summarize_memory(T, gpu_run(8.19, 6.29), MARKERS)
    tuned = summarize_memory(T, gpu_run(15.57, 8.15), MARKERS)
    d = memory_delta(default, tuned)
    assert d.peak_gib == pytest.approx(7.38)
    assert fmt_gib(d.peak_gib) == "7.4 GiB"
    assert d.steady_gib == pytest.approx(1.86)  # the seed's prose says 3 GiB; the data says 1.86
    assert fmt_gib(d.steady_gib, 2) == "1.86 GiB"
    assert d.describe() == "+7.4 GiB per rank at peak, +1.9 GiB at steady"
    # width 8 on ccb339d: 17.52 − 15.90 = 1.62 ≈ 1.6 GiB per rank
    serial = summarize_memory(T, gpu_run(15.90, 9.0), MARKERS)
    batched = summarize_memory(T, gpu_run(17.52, 10.0), MARKERS)
    assert fmt_gib(memory_delta(serial, batched).peak_gib) == "1.6 GiB"


def test_peak_is_per_rank_and_over_all_samples():
    rows = [[512.0, 600.0], [1024.0, 4096.0], [2048.0, 1024.0], [100.0, 100.0]]
    s = summarize_memory([0.0, 1.0, 2.0, 3.0], rows, [(0.5, "load_end"), (2.5, "stop")])
    assert s.peak_gib == (2.0, 4.0)
    assert s.steady_gib == (2.0, 1.0)  # loaded = t 1, 2; second half = t 2
    assert s.peak_max_gib == 4.0
    assert s.mem_available_fall_gib is None and s.pss_sum_gib is None


def test_no_idle_samples_is_noted_not_guessed():
    _, avail, _ = host()
    s = summarize_memory(T, gpu_run(8.0, 6.0), [(5.0, "load_end"), (15.0, "stop")], mem_available_kib=avail)
    assert s.mem_available_fall_gib is None
    assert any("no idle samples" in n for n in s.notes)


def test_bad_shapes():
    with pytest.raises(InputError, match="same, non-zero number of ranks"):
        summarize_memory([0.0, 1.0], [[1.0, 2.0], [1.0]], MARKERS)
    with pytest.raises(InputError, match="no samples between"):
        summarize_memory([0.0], [[1.0]], [(5.0, "load_end"), (6.0, "stop")])


def test_frames_from_the_loader():
    shmem, avail, pss = host()
    gpu_rows, host_rows, marker_rows = [], [], []
    for run, (peak, steady) in {"memory-default": (8.19, 6.29), "memory-tuned": (15.57, 8.15)}.items():
        for t, row in zip(T, gpu_run(peak, steady, ranks=2)):
            for rank, v in enumerate(row):
                gpu_rows.append({"run": run, "arm": run, "t": t, "rank": rank, "gpu_used_mib": v})
        for i, t in enumerate(T):
            host_rows.append(
                {
                    "run": run,
                    "arm": run,
                    "t": t,
                    "shmem_kib": shmem[i],
                    "mem_available_kib": avail[i],
                    "pss_kib_sum": pss[i],
                }
            )
        for t, e in MARKERS:
            marker_rows.append({"run": run, "arm": run, "t": t, "event": e, "label": None})
    sums = memory_summaries(pl.DataFrame(gpu_rows), pl.DataFrame(host_rows), pl.DataFrame(marker_rows))
    assert sorted(sums) == ["memory-default", "memory-tuned"]
    assert sums["memory-tuned"].peak_gib == pytest.approx((15.57, 15.57))
    table = memory_table(sums)
    assert table["run"].to_list() == ["memory-default", "memory-tuned"]
    assert table["steady_gib"].to_list() == pytest.approx([6.29, 8.15])
    assert table["mem_available_fall_gib"].to_list() == pytest.approx([144.1, 144.1])


def test_load_ramp_bins_keep_the_peak():
    import polars as pl

    from benchbook.analysis.memory import load_ramp

    n = 1000
    gpu = pl.DataFrame(
        {
            "run": ["r"] * n,
            "arm": ["a"] * n,
            "t": [100.0 + i * 0.5 for i in range(n)],
            "rank": [0] * n,
            "gpu_used_mib": [1024.0 * (50 if i == 333 else 1) for i in range(n)],
        }
    )
    markers = pl.DataFrame(
        {
            "run": ["r", "r"],
            "arm": ["a", "a"],
            "t": [100.0, 150.0],
            "event": ["load_start", "load_end"],
            "label": [None, None],
        }
    )
    samples, marks = load_ramp(gpu, markers, "r", max_points=100)
    assert samples.height <= 101 and samples["gib"].max() == 50.0  # the one-sample spike survives binning
    assert marks["t_s"].to_list() == [0.0, 50.0] and marks["label"].to_list() == ["load_start", "load_end"]


def test_process_footprints_while_loaded():
    import polars as pl

    from benchbook.analysis.memory import process_footprints

    gib = 1024 * 1024
    host = pl.DataFrame(
        {
            "t": [0.0, 1.0, 2.0, 3.0, 0.5],
            "pid": [1, 1, 1, 1, 9],
            "comm": ["api", "api", "api", "api", "cc1"],
            "rss_kib": [1.0 * gib, 2.0 * gib, 4.0 * gib, 3.0 * gib, 0.5 * gib],
            "pss_kib": [1.0 * gib, 1.0 * gib, 3.0 * gib, 2.0 * gib, 0.5 * gib],
        }
    )
    api, cc1 = process_footprints(host, load_end=1.0, stop=3.0)
    assert (api["comm"], api["pss_gib"], api["rss_gib"], api["peak_rss_gib"], api["loaded_samples"]) == (
        "api",
        2.0,
        3.0,
        4.0,
        3,
    )
    assert cc1["loaded_samples"] == 0 and cc1["pss_gib"] is None and cc1["peak_rss_gib"] == 0.5
