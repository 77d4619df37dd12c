"""The suite's own scheduling rules (tests/marks.py): which worker takes which file under ``--wait-worker``, and
the checks that keep the list of waiting files honest."""

from __future__ import annotations

from pathlib import Path

import marks

ROOT = Path(__file__).resolve().parents[1]
WAIT = sorted(marks.WAITS)


def test_the_waiting_worker_takes_only_the_waiting_files_in_run_order():
    queue = ["engine", "tests/test_page_layout.py", WAIT[1], "tests/test_summary.py", WAIT[0]]
    assert marks.pick_unit(queue, waiter=True) == WAIT[1]
    assert marks.pick_unit(["engine", "tests/test_summary.py"], waiter=True) is None  # it stops


def test_a_computing_worker_takes_the_rest_first_and_the_waiting_files_last():
    queue = [WAIT[1], "engine", WAIT[0], "tests/test_summary.py"]
    assert marks.pick_unit(queue, waiter=False) == "engine"
    assert marks.pick_unit([WAIT[1], WAIT[0]], waiter=False) == WAIT[1]  # nothing else: none is left unrun
    assert marks.pick_unit([], waiter=False) is None


def test_every_listed_file_exists_and_none_renders_browses_or_drives_an_engine():
    assert marks.waits_problems(ROOT, {f"{WAIT[0]}::test_x": set()}) == []
    got = marks.waits_problems(ROOT, {f"{WAIT[0]}::test_page": {"slow", "fresh_kernel"}, "tests/x.py::t": {"slow"}})
    assert got == [
        f"tests/marks.py WAITS lists {WAIT[0]}, but {WAIT[0]}::test_page is marked slow: the waiting worker runs "
        "no notebook, browser or engine (move the test, or the file off the list)"
    ]
    assert marks.waits_problems(ROOT / "tests", {}) == [
        f"tests/marks.py WAITS lists {f}, which does not exist" for f in WAIT
    ]
