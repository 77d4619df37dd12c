"""Startup-line parsing and clamp detection on the seed's log lines."""

import pytest

from benchbook.analysis.clamps import detect_clamps, parse_startup_line
from benchbook.errors import InputError

CLAMPED = "[server] batch width 1 (engine declares max_slots=8, continuous_batching=no), prefill budget 0"
BATCHED = "[server] batch width 8 (engine declares max_slots=8, continuous_batching=yes), prefill budget 0"


def test_parse_the_seed_line_inside_a_log():
    log = "loading checkpoint\n[rank 0] ready\n" + CLAMPED + "\nlistening on :8000\n"
    s = parse_startup_line(log, "runs/batch/server.log")
    assert (s.batch_width, s.max_slots, s.continuous_batching, s.prefill_budget) == (1, 8, False, 0)
    assert s.line == 3 and s.text == CLAMPED


def test_parse_is_tolerant_of_spacing_case_and_spellings():
    s = parse_startup_line(
        "2026-09-14T10:00 INFO Batch Width: 8 ( engine declares max_slots = 8 , "
        "continuous_batching = TRUE ) prefill token budget 4096"
    )
    assert (s.batch_width, s.max_slots, s.continuous_batching, s.prefill_budget) == (8, 8, True, 4096)


def test_absent_line_names_the_file():
    with pytest.raises(InputError) as e:
        parse_startup_line("nothing here\n", "runs/serial/server.log")
    assert e.value.file == "runs/serial/server.log" and e.value.location == "whole file"
    assert "no startup line" in e.value.reason


def test_garbled_line_names_file_and_line():
    with pytest.raises(InputError) as e:
        parse_startup_line("ok\n[server] batch width ? (engine declares max_slots=8)\n", "server.log")
    assert str(e.value).startswith("server.log: line 2: startup line is garbled")


def test_disagreeing_startup_lines():
    with pytest.raises(InputError, match="line 2: a second startup line disagrees with line 1"):
        parse_startup_line(CLAMPED + "\n" + BATCHED + "\n", "server.log")
    assert parse_startup_line(CLAMPED + "\n" + CLAMPED).line == 1  # a repeat is fine


def test_seed_1536681_batch_arm_is_clamped_twice():
    clamps = detect_clamps({"max_batch_size": 8, "prefill_token_budget": 4096}, parse_startup_line(CLAMPED))
    assert [(c.setting, c.requested, c.ran) for c in clamps] == [
        ("max_batch_size", 8, 1),
        ("prefill_token_budget", 4096, 0),
    ]
    assert "continuous_batching=no" in clamps[0].explanation
    assert "zeroed" in clamps[1].explanation


def test_ccb339d_batched_arm_runs_width_8_but_budget_still_zeroed():
    clamps = detect_clamps({"max_batch_size": 8, "prefill_token_budget": 4096}, parse_startup_line(BATCHED))
    assert [c.setting for c in clamps] == ["prefill_token_budget"]


def test_serial_arm_asked_for_what_it_got():
    assert (
        detect_clamps(
            {"max_batch_size": 1, "prefill_token_budget": 0, "max_context": 8192}, parse_startup_line(CLAMPED)
        )
        == []
    )


def test_non_integer_server_arg():
    with pytest.raises(InputError, match="server_args.max_batch_size"):
        detect_clamps({"max_batch_size": "eight"}, parse_startup_line(CLAMPED))
