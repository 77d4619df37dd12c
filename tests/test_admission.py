"""Prefill admission simulator: the seed's figures, hand-worked sequences, CLI behaviour."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchbook.analysis.admission import batch_counts_by_cap, per_dp_chunk, read_lengths, simulate
from benchbook.commands.cli import main
from benchbook.errors import InputError, UsageError

SEED = dict(chunk_size=8192, page_size=128)


def test_one_16388_prompt_is_8192_8192_4():
    r = simulate([16388], max_requests=1, **SEED)
    assert r.sequence() == [[[0, 8192]], [[0, 8192]], [[0, 4]]]
    assert r.tail_only_batches == 1  # 4 < one 128-token page


def test_320_prompts_960_batches_at_cap1_645_at_cap2():
    assert simulate([16388] * 320, max_requests=1, **SEED).batch_count == 960
    assert simulate([16388] * 320, max_requests=2, **SEED).batch_count == 645


def test_cap2_sequence_begins_as_the_seed_prints_it():
    seq = simulate([16388] * 320, max_requests=2, **SEED).sequence()
    # A 8192 / A 8192 / A 4 + B 8064 / B 8192 / B 132 + C 7936 / C 8192 / C 260 + D 7808
    assert seq[:7] == [
        [[0, 8192]],
        [[0, 8192]],
        [[0, 4], [1, 8064]],  # A's 4 tokens are charged one page: 8192 - 128 = 8064
        [[1, 8192]],
        [[1, 132], [2, 7936]],  # 16388 - 8064 - 8192 = 132, charged two pages: 8192 - 256
        [[2, 8192]],
        [[2, 260], [3, 7808]],  # 260 -> three pages: 8192 - 384
    ]


def test_cap1_has_a_tail_only_batch_per_request_cap2_none():
    cap1 = simulate([16388] * 320, max_requests=1, **SEED)
    cap2 = simulate([16388] * 320, max_requests=2, **SEED)
    assert (cap1.tail_only_batches, cap1.multi_request_batches) == (320, 0)
    assert cap2.tail_only_batches == 0
    # By hand: request k's first piece is 8192 - 128k and its tail 4 + 128k, so the tail of the 64th
    # request (4 + 128*63 = 8068, charged 8192) fills a batch alone and the pattern restarts:
    # 320 = 5 cycles of 64 requests, each with 63 two-request batches and 129 batches in all.
    assert cap2.multi_request_batches == 5 * 63 == 315
    assert cap2.batch_count == 5 * 129
    assert cap2.sequence()[128] == [[63, 8068]]
    assert cap2.sequence()[129] == [[64, 8192]]
    assert cap2.requests_per_batch == {1: 645 - cap2.multi_request_batches, 2: cap2.multi_request_batches}


def test_tokens_are_conserved():
    r = simulate([16388] * 320, max_requests=2, **SEED)
    assert sum(b.new_tokens for b in r.batches) == 16388 * 320


def test_global_chunk_131072_at_dp16_is_8192():
    assert per_dp_chunk(131072, 16) == 8192
    with pytest.raises(UsageError, match="not divisible"):
        per_dp_chunk(131072, 3)


def test_batch_counts_across_caps():
    rows = batch_counts_by_cap([16388] * 320, 8192, 128)
    assert [(r["max_requests"], r["batches"]) for r in rows] == [(1, 960), (2, 645), (3, 645), (4, 645)]
    assert all(r["new_tokens"] == 16388 * 320 for r in rows)


def test_short_prompts_fill_up_to_cap():
    # chunk 512, page 128: 100 -> 128 charged, 100 -> 128, 100 -> 128 (cap 3 reached), then the rest
    r = simulate([100, 100, 100, 100], chunk_size=512, page_size=128, max_requests=3)
    assert r.sequence() == [[[0, 100], [1, 100], [2, 100]], [[3, 100]]]
    assert r.tail_only_batches == 1


def test_exact_fit_leaves_no_room_and_next_waits():
    r = simulate([256, 300], chunk_size=256, page_size=128, max_requests=4)
    assert r.sequence() == [[[0, 256]], [[1, 256]], [[1, 44]]]


def test_bad_settings_rejected():
    with pytest.raises(UsageError, match="multiple of page size"):
        simulate([10], chunk_size=100, page_size=128, max_requests=1)
    with pytest.raises(UsageError, match="positive"):
        simulate([10], chunk_size=128, page_size=128, max_requests=0)
    with pytest.raises(UsageError, match="request 1"):
        simulate([10, 0], chunk_size=128, page_size=128, max_requests=1)


@settings(max_examples=60, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 5000), min_size=1, max_size=25),
    pages=st.integers(1, 16),
    page=st.sampled_from([1, 16, 64, 128]),
    cap=st.integers(1, 4),
)
def test_invariants(lengths, pages, page, cap):
    chunk = pages * page
    r = simulate(lengths, chunk, page, cap)
    got = [0] * len(lengths)
    order = []
    for b in r.batches:
        assert 1 <= b.requests <= cap
        charged = sum(-(-n // page) * page for _, n in b.parts)
        assert charged <= chunk  # never over budget (cuts are whole pages)
        for i, n in b.parts:
            got[i] += n
            if not order or order[-1] != i:
                order.append(i)
    assert got == list(lengths)  # every token prefilled exactly once
    assert order == list(range(len(lengths)))  # FCFS


def test_read_lengths(tmp_path):
    f = tmp_path / "l.txt"
    f.write_text("# prompts\n16388\n\n100  # short\n")
    assert read_lengths(f) == [16388, 100]
    f.write_text("16388\nabc\n")
    with pytest.raises(InputError) as e:
        read_lengths(f)
    assert e.value.location == "line 2"


# ------------------------------------------------------------------------------------------ CLI

ARGS = ["prefill-sim", "--page-size", "128"]


def test_cli_json(capsys):
    rc = main(
        ARGS
        + [
            "--prompt-tokens",
            "16388",
            "--requests",
            "320",
            "--global-chunk-size",
            "131072",
            "--dp",
            "16",
            "--max-requests",
            "2",
            "--json",
        ]
    )
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"batches", "sequence", "tail_only_batches", "multi_request_batches"}
    assert out["batches"] == 645
    assert out["sequence"][2] == [[0, 4], [1, 8064]]
    assert out["tail_only_batches"] == 0


def test_cli_text(capsys):
    rc = main(ARGS + ["--prompt-tokens", "16388", "--requests", "1", "--chunk-size", "8192", "--max-requests", "1"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "batches: 3\n" in out
    assert "tail-only batches (new tokens < 128): 1" in out
    assert "multi-request batches: 0" in out
    assert "3: [0, 4]" in out


def test_cli_lengths_file(tmp_path, capsys):
    f = tmp_path / "lengths.txt"
    f.write_text("16388\n16388\n")
    rc = main(ARGS + ["--lengths-file", str(f), "--chunk-size", "8192", "--max-requests", "1", "--json"])
    assert rc == 0
    assert json.loads(capsys.readouterr().out)["batches"] == 6


@pytest.mark.parametrize(
    "extra, message",
    [
        (
            ["--prompt-tokens", "0", "--requests", "3", "--chunk-size", "8192", "--max-requests", "1"],
            "--prompt-tokens must be a positive",
        ),
        (
            ["--prompt-tokens", "10", "--requests", "-3", "--chunk-size", "8192", "--max-requests", "1"],
            "--requests must be a positive",
        ),
        (
            ["--prompt-tokens", "10", "--requests", "3", "--chunk-size", "8000", "--max-requests", "1"],
            "not a multiple of page size",
        ),
        (
            [
                "--prompt-tokens",
                "10",
                "--requests",
                "3",
                "--global-chunk-size",
                "131072",
                "--dp",
                "5",
                "--max-requests",
                "1",
            ],
            "not divisible",
        ),
        (
            [
                "--prompt-tokens",
                "10",
                "--requests",
                "3",
                "--chunk-size",
                "8192",
                "--dp",
                "16",
                "--global-chunk-size",
                "131072",
                "--max-requests",
                "1",
            ],
            "not both",
        ),
        (["--prompt-tokens", "10", "--requests", "3", "--max-requests", "1"], "chunk budget"),
        (["--chunk-size", "8192", "--max-requests", "1"], "give the prompts"),
        (
            [
                "--prompt-tokens",
                "10",
                "--requests",
                "3",
                "--lengths-file",
                "x",
                "--chunk-size",
                "8192",
                "--max-requests",
                "1",
            ],
            "not both",
        ),
        (["--prompt-tokens", "10", "--chunk-size", "8192", "--max-requests", "1"], "go together"),
        (
            ["--prompt-tokens", "10", "--requests", "3", "--chunk-size", "8192", "--max-requests", "zero"],
            "--max-requests must be",
        ),
        (["--prompt-tokens", "10", "--requests", "3", "--chunk-size", "8192"], "--max-requests is required"),
    ],
)
def test_cli_bad_arguments_exit_2(capsys, extra, message):
    assert main(ARGS + extra) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_cli_bad_lengths_file_names_the_line(tmp_path, capsys):
    f = tmp_path / "lengths.txt"
    f.write_text("16388\n\n-4\n")
    assert main(ARGS + ["--lengths-file", str(f), "--chunk-size", "8192", "--max-requests", "1"]) == 2
    err = capsys.readouterr().err
    assert f"{f}: line 3: prompt length must be positive" in err


def test_cli_missing_lengths_file(tmp_path, capsys):
    missing = tmp_path / "nope.txt"
    assert main(ARGS + ["--lengths-file", str(missing), "--chunk-size", "8192", "--max-requests", "1"]) == 2
    assert "cannot read lengths file" in capsys.readouterr().err
