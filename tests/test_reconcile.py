"""Client ↔ engine reconciliation checks and validity gates, on real files with hand-made engine deltas."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchbook.analysis import reconcile as R
from benchbook.ingest import formats as F
from realdata import realdata

HERE = Path(__file__).parent
VLLM = HERE / "fixtures" / "realdata" / "vllm_bench_serving"
SHARED = realdata()


def run(name: str) -> F.BenchmarkRun:
    (r,) = F.read(VLLM / name)
    return r


def by_name(checks):
    return {c.name.split(":")[0]: c for c in checks}


# er0080_bench_serve_v0.25.1.json: 8 completed, 128 output tokens, mean TTFT 215.53594200008774 ms
SERVE = "er0080_bench_serve_v0.25.1.json"


@pytest.mark.parametrize(
    "gen,status,rel",
    [(128, "pass", 0.0), (130, "warn", 2 / 128), (140, "fail", 12 / 128)],  # +1.5625 %, +9.375 %
)
def test_generation_tokens(gen, status, rel):
    c = by_name(R.reconcile(run(SERVE), {"generation_tokens": gen}))["generation tokens"]
    assert c.status == status and c.client == 128 and c.gap == gen - 128
    assert c.gap_rel == pytest.approx(rel)


@pytest.mark.parametrize("succ,status", [(8, "pass"), (9, "warn"), (7, "fail")])
def test_successes(succ, status):
    c = by_name(R.reconcile(run(SERVE), {"successes": succ}))["successes"]
    assert c.status == status and c.gap == succ - 8


@pytest.mark.parametrize(
    "ttft_sum,status",
    # 1.6/8 = 200 ms (−7.2 %: pass), 2.0/8 = 250 ms (+16 %: engine above client, fail),
    # 0.8/8 = 100 ms (−53.6 %: more than half the client's TTFT outside the engine, warn)
    [(1.6, "pass"), (2.0, "fail"), (0.8, "warn")],
)
def test_mean_ttft(ttft_sum, status):
    c = by_name(R.reconcile(run(SERVE), {"ttft_sum": ttft_sum, "ttft_count": 8}))["mean TTFT"]
    assert c.status == status
    assert c.engine == pytest.approx(ttft_sum / 8 * 1000)
    assert c.gap == pytest.approx(ttft_sum / 8 * 1000 - 215.53594200008774)


def test_mean_e2e_and_unchecked_items_are_reported():
    # sweep run 0: client mean E2E 340.3411977451469 ms; engine 2.6 s / 8 = 325 ms → −4.5 %: pass
    checks = by_name(R.reconcile(run("er0080_sweep_maxnumseqs4_conc2_run0.json"), {"e2e_sum": 2.6, "e2e_count": 8}))
    assert checks["mean E2E"].status == "pass"
    assert checks["mean E2E"].gap_rel == pytest.approx(325 / 340.3411977451469 - 1)
    # nothing silently skipped: the three checks without engine data say so
    assert len(checks) == 4
    assert all(c.status == "warn" and c.detail.startswith("not checked") for k, c in checks.items() if k != "mean E2E")


def test_gates_on_a_good_run_with_a_window():
    p = SHARED / "vllm_bench_serving" / "serving_meta-llama-Llama-3.3-70B-Instruct_tp8_pp1_sharegpt_qps_01.json"
    if not p.exists():
        pytest.skip(f"{p} not present (CI has ../shared beside the clone)")
    (r,) = F.read(p)
    g = by_name(R.gates(r, window=(10.0, 190.0)))
    assert g["minimum duration"].status == "pass"  # 205.2 s ≥ 60 s
    assert g["minimum completed requests"].status == "pass"  # 200 ≥ 100
    assert g["maximum error rate"].status == "pass" and g["maximum error rate"].client == 0.0
    # 180 s / 205.21942114800004 s = 0.87711
    assert g["steady-state share"].client == pytest.approx(180 / 205.21942114800004)
    assert g["steady-state share"].status == "pass"
    # without a window or request start times the share cannot be checked — and says so
    assert by_name(R.gates(r))["steady-state share"].detail.startswith("not checked")


def test_gates_thresholds_are_parameters():
    r = run(SERVE)  # 1.544 s, 8 completed, 0 failed
    g = by_name(R.gates(r))
    assert g["minimum duration"].status == "fail" and g["minimum completed requests"].status == "fail"
    g = by_name(R.gates(r, min_duration_s=1.0, min_completed=8))
    assert g["minimum duration"].status == "pass" and g["minimum completed requests"].status == "pass"


def test_all_failed_run_fails_the_error_gate():
    g = by_name(R.gates(run("er0080_bench_serve_all_requests_failed_v0.25.1.json")))
    assert g["maximum error rate"].status == "fail" and g["maximum error rate"].client == 1.0  # 8 of 8


def test_aiperf_burst_has_almost_no_steady_state():
    p = SHARED / "aiperf_genai_perf" / "aiperf_run1_profile_export.jsonl"
    if not p.exists():
        pytest.skip(f"{p} not present (CI has ../shared beside the clone)")
    (r,) = F.read(p)
    # all 100 requests start within 0.0204739 s (…419.154569 → …419.1750429); last response at
    # …428.472358: share = 0.0204739 / 9.317789 = 0.2197 %
    assert R.steady_share(r) == pytest.approx(0.0021973, rel=1e-3)
    g = by_name(R.gates(r))
    assert g["steady-state share"].status == "fail"
    assert g["maximum error rate"].client == pytest.approx(0.11)  # 11 of 100
