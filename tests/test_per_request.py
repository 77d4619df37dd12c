"""analysis.per_request: hand-checkable cases for the in-flight count, the saturation rule, the
percentiles/ECDF, outcome shares and sampling; the realdata files that carry per-request records."""

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from benchbook.analysis import per_request as pr
from benchbook.ingest import formats
from benchbook.ingest.formats import BenchmarkRun, requests_frame
from realdata import realdata

ROOT = Path(__file__).resolve().parents[1]
REAL = realdata()
FIX = ROOT / "tests" / "fixtures" / "realdata"


def _run(rows: dict, fmt: str = "vllm-bench-serve") -> BenchmarkRun:
    return BenchmarkRun("x.json", fmt, {}, {}, requests_frame(rows))


def test_in_flight_counts_itself_and_overlaps():
    # A [0, 10), B [1, 3), C [2, 4), D [5, 6): at D's start only A is still running.
    start = np.array([0.0, 1.0, 2.0, 5.0])
    end = np.array([10.0, 3.0, 4.0, 6.0])
    assert pr.in_flight_at_start(start, end).tolist() == [1, 2, 3, 2]


def test_a_request_that_ends_exactly_when_another_starts_is_not_in_flight():
    assert pr.in_flight_at_start(np.array([0.0, 1.0]), np.array([1.0, 2.0])).tolist() == [1, 1]


def _queue(n: int, service: float, gap: float):
    """n requests arriving every ``gap`` s to a one-at-a-time server taking ``service`` s each."""
    start = np.arange(n) * gap
    done, t = [], 0.0
    for s in start:
        t = max(t, s) + service
        done.append(t)
    e2e = np.array(done) - start
    ttft = e2e - service * 0.9
    return start, e2e, ttft


def test_overloaded_queue_is_saturated():
    start, e2e, ttft = _queue(40, service=1.0, gap=0.5)  # arrivals twice as fast as service
    s = pr.saturation(start, e2e, ttft)
    assert s.status == "saturated", s.detail
    assert [b["n"] for b in s.bins] == [10, 10, 10, 10]
    fl = [b["in_flight"] for b in s.bins]
    assert fl == sorted(fl) and fl[-1] > fl[0]


def test_underloaded_queue_is_not_saturated():
    start, e2e, ttft = _queue(40, service=0.5, gap=1.0)  # each request done before the next arrives
    s = pr.saturation(start, e2e, ttft)
    assert s.status == "not saturated"
    assert "in-flight count does not keep rising" in s.detail
    assert {b["in_flight"] for b in s.bins} == {1.0}


def test_too_few_requests_are_not_judged():
    start, e2e, ttft = _queue(19, service=1.0, gap=0.5)
    s = pr.saturation(start, e2e, ttft)
    assert s.status == "not judged" and "needs 20" in s.detail


def test_percentiles_ecdf_shares_and_tpot_definition():
    rows = {
        "index": [0, 1, 2, 3, 4],
        "start_s": [0.0, 0.1, 0.2, 0.3, 0.4],
        "ttft_s": [0.1, 0.2, 0.3, 0.4, None],
        "e2e_s": [1.1, 1.2, 1.3, 2.4, None],
        "completion_tokens": [11, 11, 11, 1, None],
        "success": [True, True, True, True, False],
        "error": [None, None, None, None, "incomplete: cut off"],
    }
    v = pr.analyse(_run(rows), run_id="r", config="c")
    assert v.shares == {"successful": 4, "incomplete": 1, "errored": 0}
    ttft = v.distributions["ttft"]
    assert ttft.n == 4 and ttft.percentiles_ms[50] == pytest.approx(250.0)  # linear interpolation
    assert ttft.percentiles_ms[99] == pytest.approx(100 + 0.99 * 3 * 100)
    assert ttft.ecdf == [(pytest.approx(100.0), 0.25), (pytest.approx(200.0), 0.5), (pytest.approx(300.0), 0.75),
                         (pytest.approx(400.0), 1.0)]  # fmt: skip
    # TPOT excludes the first token: (1.1 − 0.1) / 10 = 100 ms; the 1-token request has no TPOT
    tpot = v.distributions["tpot"]
    assert tpot.n == 3 and tpot.percentiles_ms[50] == pytest.approx(100.0)
    assert "itl" not in v.distributions  # neither chunk gaps nor a per-request mean in the file
    assert v.timeline_axis == "start" and v.timeline.height == 5
    assert v.saturation.status == "not judged"


def test_large_runs_are_sampled_deterministically():
    n = 5000
    rng = np.random.default_rng(0)
    ttft = rng.gamma(2.0, 0.05, n)
    rows = {
        "index": list(range(n)),
        "start_s": list(np.arange(n) * 0.01),
        "ttft_s": list(ttft),
        "e2e_s": list(ttft + 1.0),
        "completion_tokens": [101] * n,
        "success": [True] * n,
    }
    v = pr.analyse(_run(rows))
    d = v.distributions["ttft"]
    assert d.sampled and len(d.ecdf) == pr.ECDF_POINTS + 1 and d.n == n
    assert d.ecdf[-1] == (pytest.approx(ttft.max() * 1000), 1.0)
    assert v.timeline_step == 5 and v.timeline.height == 1000
    assert any("every 5th request" in note for note in v.notes)
    again = pr.analyse(_run(rows))
    assert again.timeline.equals(v.timeline) and again.distributions["ttft"].ecdf == d.ecdf


def test_no_records_no_views():
    assert pr.analyse(BenchmarkRun("x", "vllm-bench-serve", {}, {}, None)) is None


def test_every_format_family_has_definitions():
    for f in formats.FORMATS:
        if f.name in ("vllm-nightly-table", "genai-perf-analyze"):
            continue  # no per-request records in those files
        assert pr.definitions_for(f.name) is not None, f.name


@pytest.mark.parametrize(
    "path, n, sat",
    [
        (FIX / "aiperf_genai_perf/aiperf_run1_profile_export.jsonl", 100, "saturated"),
        (FIX / "llmperf/groq_70b_individual_responses.json", 150, "not judged"),
        # 1.1 MB: read from the shared realdata folder, as tests/test_compare_page.py does
        (REAL / "vllm_bench_serving/serving_meta-llama-Llama-3.3-70B-Instruct_tp8_pp1_sharegpt_qps_inf.json", 200,
         "not judged"),
    ],
)  # fmt: skip
def test_realdata_records(path, n, sat):
    (run,) = formats.read(path)
    v = pr.analyse(run)
    assert v.total == n and sum(v.shares.values()) == n
    assert v.saturation.status == sat
    # the per-request TTFT mean matches the tool's own summary where the summary is over the same records
    ok = run.requests.filter(pl.col("success"))
    assert v.distributions["ttft"].mean_ms == pytest.approx(float(ok["ttft_s"].mean()) * 1000)
