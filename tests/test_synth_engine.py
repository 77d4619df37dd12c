"""The timing model and the synthetic engine of `benchbook synth` (commands/synth_engine.py): the
figures docs/bench.md documents, the scheduling of one group, and the /metrics counters."""

from __future__ import annotations

import random

import pytest

from benchbook.commands.synth_engine import (
    GENERATION_TOKENS,
    Model,
    PocketEngine,
    prefill_s,
    seeded_rng,
    simulate_group,
    single_service_s,
    step_s,
)
from benchbook.metrics.prometheus import parse


def test_documented_figures_of_the_model():
    m = Model()
    assert prefill_s(m, 120) == pytest.approx(2.45 + 120 / 540)
    assert step_s(m, 120) == pytest.approx(0.185 + 1.4e-5 * 120)
    assert step_s(m, 120, 8) == pytest.approx(step_s(m, 120) * 3.73)
    assert single_service_s(m, 120) == pytest.approx(8.4633, abs=1e-4)  # docs/bench.md
    assert single_service_s(m, 1446) == pytest.approx(11.4943, abs=1e-4)


def test_a_serial_group_completes_at_k_times_single():
    m = Model()
    single = single_service_s(m, 120)
    out = simulate_group(m, [(0.0, 120, GENERATION_TOKENS, 1.0)] * 4, 1, None)
    assert [end for _a, _f, end, _i in out] == pytest.approx([k * single for k in (1, 2, 3, 4)])
    assert all(len(itl) == GENERATION_TOKENS - 1 for *_x, itl in out)


def test_a_width_8_group_shares_its_decode_steps():
    m = Model()
    out = simulate_group(m, [(0.0, 120, GENERATION_TOKENS, 1.0)] * 8, 8, None)
    expect = 8 * prefill_s(m, 120) + (GENERATION_TOKENS - 1) * step_s(m, 120, 8) + m.assembly_s
    assert {round(end, 9) for _a, _f, end, _i in out} == {round(expect, 9)}


def test_seeded_streams_repeat_and_differ_by_part():
    assert seeded_rng(3, "serial-1", "requests").random() == seeded_rng(3, "serial-1", "requests").random()
    assert seeded_rng(3, "serial-1", "requests").random() != seeded_rng(3, "serial-2", "requests").random()


def test_engine_counters_render_as_metrics_text():
    eng = PocketEngine(random.Random(0))
    before = parse(eng.text(0))
    eng.request(120, 32, 2.67, [0.19] * 31, 0.004)
    after = parse(eng.text(1))
    ok = {"status": "success"}
    assert after.get("pocket_requests_total", ok) - before.get("pocket_requests_total", ok) == 1
    assert after.get("pocket_tokens_total", {"type": "generation"}) == 32
    assert after.get("pocket_requests_running") == 1
    assert after.get("pocket_ttft_seconds_count") == 1 and after.get("pocket_ttft_seconds_sum") == 2.67
