"""enginemetrics: per-series histograms, histogram_quantile interpolation, window deltas, resets.

Expected values for the real vLLM pair are read off the files by hand (idle: every counter 0)."""

import math

import pytest

from benchbook.analysis import enginemetrics as em
from benchbook.metrics import prometheus
from benchbook.metrics.profiles import PROFILES
from realdata import realdata

REAL = realdata("prom_llm_servers")
INF = math.inf


def test_quantile_matches_histogram_quantile_by_hand():
    b = [(0.1, 2), (0.5, 6), (1.0, 10), (INF, 10)]
    assert em.quantile(0.5, b) == pytest.approx(0.1 + 0.4 * (5 - 2) / 4)  # rank 5 in (0.1, 0.5]
    assert em.quantile(0.1, b) == pytest.approx(0.0 + 0.1 * 1 / 2)  # first bucket: lower bound 0
    assert em.quantile(1.0, [(1.0, 3), (INF, 5)]) == 1.0  # rank in +Inf bucket: highest finite bound
    assert em.quantile(0.5, [(1.0, 0), (INF, 0)]) is None
    assert "linear within the bucket" in em.INTERPOLATION


TWO_RANKS = """\
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",le="1.0",model_name="m"} 1
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="m"} 2
vllm:time_to_first_token_seconds_sum{engine="0",model_name="m"} 3
vllm:time_to_first_token_seconds_count{engine="0",model_name="m"} 2
vllm:time_to_first_token_seconds_bucket{engine="1",le="1.0",model_name="m"} 4
vllm:time_to_first_token_seconds_bucket{engine="1",le="+Inf",model_name="m"} 4
vllm:time_to_first_token_seconds_sum{engine="1",model_name="m"} 2
vllm:time_to_first_token_seconds_count{engine="1",model_name="m"} 4
# TYPE vllm:request_success_total counter
vllm:request_success_total{engine="0",finished_reason="stop",model_name="m"} %s
vllm:request_success_total{engine="0",finished_reason="length",model_name="m"} 2
vllm:request_success_total{engine="0",finished_reason="abort",model_name="m"} 7
"""


def test_series_kept_apart_and_finished_reason_summed_on_purpose():
    s = prometheus.parse(TWO_RANKS % "5")
    h = em.histogram(s, PROFILES["vllm"], "ttft")
    assert {dict(k)["engine"]: (x.count, x.mean) for k, x in h.items()} == {"0": (2, 1.5), "1": (4, 0.5)}
    assert list(em.values(s, PROFILES["vllm"], "requests_success").values()) == [7.0]  # stop 5 + length 2
    assert list(em.values(s, PROFILES["vllm"], "requests_aborted").values()) == [7.0]


def test_counter_reset_reported_never_negative():
    w = em.window(prometheus.parse(TWO_RANKS % "5"), prometheus.parse(TWO_RANKS % "1"), PROFILES["vllm"])
    d = next(iter(w.counters["requests_success"].values()))
    assert d.reset and d.value is None
    assert any(c.name.startswith("counter reset: requests_success") and c.status == "fail" for c in w.checks)
    assert any(c.name == "series kept apart" for c in w.checks)
    with pytest.raises(Exception, match="name one"):
        w.engine()


def test_real_vllm_idle_loaded_window():
    idle, loaded = REAL / "er0080_metrics_vllm_0_25_1_idle.txt", REAL / "er0080_metrics_vllm_0_25_1_loaded.txt"
    if not (idle.is_file() and loaded.is_file()):
        pytest.skip(f"real captures absent under {REAL}")
    w = em.window(prometheus.read(idle), prometheus.read(loaded))
    assert w.profile.name == "vllm"
    key = (("engine", "0"), ("model_name", "opt-125m-tp2"))
    assert w.series == [key]
    c = {q: w.counters[q][key].value for q in w.counters}
    # idle: all 0; loaded: request_success_total{finished_reason="length"} 600, others 0
    assert c["requests_success"] == 600 and c["requests_aborted"] == 0
    assert c["prompt_tokens"] == 339968 and c["generation_tokens"] == 165293
    ttft = w.histograms["ttft"][key].delta
    assert ttft.count == 664 and ttft.sum == pytest.approx(88.24499082565308)
    assert ttft.mean == pytest.approx(88.24499082565308 / 664)  # 0.1329 s
    # p50: rank 332 lies in (0.1, 0.25] holding buckets 166 → 593
    assert ttft.quantile(0.5) == pytest.approx(0.1 + 0.15 * (332 - 166) / (593 - 166))
    e2e = w.histograms["e2e"][key].delta
    assert e2e.count == 600 and e2e.mean == pytest.approx(999.2306158542633 / 600)
    chk = {c.name: c for c in w.checks}["TTFT count vs E2E count"]
    assert chk.status == "warn" and chk.gap == 64
    assert "still in flight" in chk.detail and "running gauge reads 64" in chk.detail
    assert w.engine() == pytest.approx(
        {
            "generation_tokens": 165293,
            "successes": 600,
            "ttft_sum": 88.24499082565308,
            "ttft_count": 664,
            "e2e_sum": 999.2306158542633,
            "e2e_count": 600,
        }
    )
