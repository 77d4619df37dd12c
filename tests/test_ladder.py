"""Ladder walls, rates, serialization/queueing checks and batching amortization on seed figures."""

import polars as pl
import pytest

from benchbook.analysis.ladder import (
    QueueShape,
    aggregate_rate,
    amortization,
    compare_queue_shape,
    flatness,
    group_wall,
    ladder_table,
    queue_shape,
    queueing,
)
from benchbook.analysis.stats import fmt_ratio, run_spread
from benchbook.errors import InputError

SPREAD = run_spread([3.430, 3.686])


def _req(run, scenario, n, index, start, end, tokens=32):
    return {
        "run": run,
        "arm": "serial",
        "scenario": scenario,
        "n": n,
        "index": index,
        "prompt_class": "short",
        "start": start,
        "end": end,
        "prompt_tokens": 120,
        "completion_tokens": tokens,
        "finish_reason": "length",
        "stream": False,
    }


def test_ladder_table_walls_rates_and_latencies():
    rows = [
        _req("serial", "warmup", 1, 0, 0.0, 12.4),
        _req("serial", "single", 1, 0, 100.0, 111.922),
        _req("serial", "ladder", 2, 0, 200.0, 211.9),
        _req("serial", "ladder", 2, 1, 200.5, 223.8),
    ]
    t = ladder_table(pl.DataFrame(rows))
    assert t["scenario"].to_list() == ["ladder", "single"]  # warm-up dropped, sorted
    single = t.filter(pl.col("scenario") == "single").row(0, named=True)
    assert single["wall_s"] == pytest.approx(11.922)
    assert round(single["rate_tok_s"], 3) == 2.684  # the seed's serial single-request rate
    lad = t.filter(pl.col("scenario") == "ladder").row(0, named=True)
    assert lad["requests"] == 2 and lad["tokens"] == 64
    assert lad["wall_s"] == pytest.approx(23.8)  # max(end) − min(start)
    assert lad["rate_tok_s"] == pytest.approx(64 / 23.8)
    assert lad["mean_latency_s"] == pytest.approx((11.9 + 23.3) / 2)
    assert lad["worst_latency_s"] == pytest.approx(23.3)
    assert lad["best_latency_s"] == pytest.approx(11.9)
    assert t.columns[:4] == ["arm", "run", "scenario", "n"]


def test_ladder_table_rejects_missing_columns_and_bad_walls():
    with pytest.raises(InputError, match="lacks column"):
        ladder_table(pl.DataFrame({"run": ["a"]}))
    with pytest.raises(InputError, match="not positive"):
        ladder_table(pl.DataFrame([_req("r", "single", 1, 0, 5.0, 5.0)]))


@pytest.mark.parametrize(
    "wall,n,printed",
    [(42.927, 8, 5.964), (27.624, 4, 4.634), (16.581, 2, 3.860), (69.495, 8, 3.684), (34.760, 4, 3.682)],
)
def test_aggregate_rate_matches_ccb339d_table(wall, n, printed):
    assert round(aggregate_rate([32] * n, [0.0] * n, [wall] * n), 3) == printed


def test_group_wall():
    assert group_wall([1.0, 2.0], [5.0, 4.0]) == 4.0
    with pytest.raises(InputError):
        group_wall([1.0], [1.0, 2.0])


def test_flatness_serial_row_is_flat_batched_is_not():
    serial = flatness({1: 2.684, 2: 2.686, 4: 2.686, 8: 2.686}, SPREAD)
    assert serial.flat and "serialization" in serial.reason
    assert serial.differences[8] == pytest.approx(0.002 / 2.684)
    ccb_serial = flatness({1: 3.697, 2: 3.609, 4: 3.682, 8: 3.684}, SPREAD)
    assert ccb_serial.flat  # 3.609 vs 3.697 is 2.4 %
    batched = flatness({1: 3.564, 2: 3.860, 4: 4.634, 8: 5.964}, SPREAD)
    assert not batched.flat
    assert "3.860 (n=2) to 5.964 (n=8)" in batched.reason and "54.5% apart" in batched.reason
    assert "67.3%" in batched.reason  # the single request, shown beside the steps


def test_flatness_judges_the_queued_steps_the_single_request_is_shown():
    """A serial engine whose lone request pays its HTTP/client overhead without a queued request to
    overlap it (the real vLLM CPU engine: n=1 5-35 % below the queued steps) is still serialized: the
    seeds' rule is the aggregate rate flat across the 2/4/8 ladder."""
    cpu = flatness({1: 100.0, 2: 120.0, 4: 121.0, 8: 120.5}, 0.05)
    assert cpu.flat and "n=2/4/8 are within 0.8%" in cpu.reason and "100.000 is 21.0%" in cpu.reason
    growing = flatness({1: 100.0, 2: 120.0, 4: 180.0}, 0.05)
    assert not growing.flat
    # one queued step: it is held against the single request
    assert not flatness({1: 100.0, 2: 120.0}, 0.05).flat
    assert flatness({1: 100.0, 2: 102.0}, 0.05).flat
    with pytest.raises(InputError, match="n=1"):
        flatness({2: 1.0, 4: 1.0}, SPREAD)


def test_queueing_serial_n8_is_pure_serialization():
    offsets = [95.3, 11.9, 23.8, 35.7, 47.6, 59.6, 71.5, 83.4]  # any order
    q = queueing(11.922, offsets)
    assert q.pure
    assert q.offsets[0] == 11.9 and q.expected[-1] == pytest.approx(95.376)
    assert max(q.errors) == pytest.approx(0.022 / 11.922)  # completion 1 is the farthest off
    assert "pure queueing" in q.reason


def test_queueing_batched_is_not():
    q = queueing(8.656, [42.7, 42.8, 42.8, 42.9, 42.9, 42.9, 42.92, 42.925])
    assert not q.pure and q.reason.startswith("not pure queueing: completion 1 at 42.700 s")


def test_queue_shape_and_comparison_seed_n8():
    s = queue_shape([10.0, 20.0, 30.0, 40.0])
    assert (s.n, s.mean, s.worst, s.best) == (4, 25.0, 40.0, 10.0)
    serial = QueueShape(8, 39.113, 69.490, 8.690)
    batched = QueueShape(8, 42.830, 42.925, 42.700)
    text = compare_queue_shape(serial, batched)
    assert "worst latency 69.490 → 42.925 s" in text and "mean 39.113 → 42.830 s" in text
    assert "a lower ceiling, a higher average, a higher floor" in text


def test_amortization_seed_n8():
    a = amortization(8.656, 42.927, 8, 69.495)
    assert round(a.step_cost_n, 3) == 1.341  # 42.927 / 32 = 1.34147 (the seed prints 1.342)
    assert round(a.step_cost_1, 3) == 0.271  # 8.656 / 32 = 0.2705
    assert round(a.single_row_steps, 2) == 4.96
    # the data: effective width 8 / 4.959 = 1.613 (the seed prints 1.62, the speedup's value)
    assert a.effective_width == pytest.approx(8 * 8.656 / 42.927)
    assert round(a.effective_width, 2) == 1.61
    assert fmt_ratio(a.speedup) == "1.62x"  # 69.495 / 42.927
    assert a.agree  # 0.36 % apart: serial at n=8 is 69.495 vs 8 × 8.656 = 69.248
    assert "agrees" in a.explanation


def test_amortization_flags_disagreement_and_explains():
    a = amortization(8.656, 42.927, 8, 80.0)
    assert not a.agree
    assert "DISAGREES" in a.explanation
    assert "not 8 × 8.656 = 69.248 s" in a.explanation and "slower than pure queueing" in a.explanation


def test_amortization_without_serial_wall():
    a = amortization(8.656, 42.927, 8)
    assert a.speedup is None and a.agree is None
    with pytest.raises(InputError, match="positive"):
        amortization(0.0, 42.927, 8)
