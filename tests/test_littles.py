"""Little's law: implied concurrency, time-weighted in-flight count from records, check statuses."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchbook.analysis import littles

# Hand-checkable records: (start, end, success)
#   r0 0..10 ok, r1 2..6 ok, r2 4..12 ok, r3 5..7 FAILED
STARTS = [0.0, 2.0, 4.0, 5.0]
ENDS = [10.0, 6.0, 12.0, 7.0]
OK = [True, True, True, False]


def test_seed_products():
    assert littles.implied_concurrency(2.5975, 42.9285) == pytest.approx(111.507, abs=5e-4)
    assert littles.implied_concurrency(3.3836, 32.7640) == pytest.approx(110.859, abs=1.5e-3)


def test_in_flight_whole_span_by_hand():
    # busy time 10 + 4 + 8 + 2 = 24 over [0, 12] -> 2.0
    assert littles.time_weighted_in_flight(STARTS, ENDS) == pytest.approx(2.0)


def test_in_flight_sub_window_by_hand():
    # [2, 8]: r0 6, r1 4, r2 4, r3 2 -> 16 / 6
    assert littles.time_weighted_in_flight(STARTS, ENDS, 2, 8) == pytest.approx(16 / 6)


def test_records_window_by_hand():
    rw = littles.records_window(STARTS, ENDS, OK)
    assert (rw.t0, rw.t1, rw.completions) == (0.0, 12.0, 3)
    assert rw.completion_rate == pytest.approx(3 / 12)
    assert rw.mean_e2e_s == pytest.approx(22 / 3)  # (10 + 4 + 8) / 3
    assert rw.implied == pytest.approx(22 / 12)  # 1.8333: the failed request's slot time is missing
    assert rw.in_flight == pytest.approx(2.0)


def test_check_statuses():
    # failed request held a slot: L = 2.0 vs λW = 1.8333, gap 8.3 % -> warn (2 % < gap ≤ 10 %)
    c = littles.check(3 / 12, 22 / 3, 2.0)
    assert c.gap == pytest.approx((2.0 - 22 / 12) / 2.0)
    assert c.status == "warn"
    assert littles.check(2.5975, 42.9285, 111.5).status == "pass"
    assert littles.check(2.5975, 42.9285, 60.0).status == "fail"
    # over the client's concurrency cap: impossible in one window
    over = littles.check(3.0, 50.0, None, limit=128)
    assert over.status == "fail" and "exceeds the concurrency limit 128" in over.detail
    # within the cap but no L measured: nothing independent to hold λ × W against — not judged, not a pass
    under = littles.check(2.5975, 42.9285, None, limit=128)
    assert under.status == "warn" and "not judged: no concurrency measured apart from λ and W" in under.detail


def test_check_detail_names_the_figures():
    d = littles.check(2.5975, 42.9285).detail
    assert "2.5975 req/s × 42.9285 s = 111.507" in d
    assert "not an independent measurement" in d


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 100), st.floats(0.01, 50)), min_size=1, max_size=20))
def test_whole_span_records_satisfy_littles_law_exactly(reqs):
    # With every request inside the window and all successful, L = λW identically.
    starts = [s for s, _ in reqs]
    ends = [s + d for s, d in reqs]
    rw = littles.records_window(starts, ends, [True] * len(reqs))
    assert rw.in_flight == pytest.approx(rw.implied, rel=1e-9)
