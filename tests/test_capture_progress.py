"""capture_progress: how far a capture is and about how long is left — the line prefix of
``capture phases`` and ``capture ladder`` (issue 38: the capture commands gave no ETA)."""

from __future__ import annotations

import re

from benchbook.commands.capture_progress import Progress, fmt_s


def test_progress_says_how_far_and_how_long_is_left():
    t = [0.0]
    p = Progress(8, "samples", clock=lambda: t[0])
    t[0] = 2.0
    assert p.advance() == "[1/8 samples, 2 s, about 14 s left]"
    t[0] = 5.0
    assert p.advance(3) == "[4/8 samples, 5 s, about 5 s left]"
    t[0] = 130.0
    assert p.advance(9) == "[8/8 samples, 2 min 10 s, done]"
    assert fmt_s(59.6) == "1 min 0 s" and fmt_s(3725) == "1 h 2 min" and fmt_s(-1) == "0 s"


def test_capture_ladder_and_phases_print_the_time_left(tmp_path, capsys):
    import fake_openai
    from benchbook.commands.cli import main

    with fake_openai.serving(serial=True, token_s=0.001) as (url, _st):
        argv = ["capture", "ladder", "--url", url, "--model", "m", "--concurrency", "1,2", "--max-tokens", "4"]
        assert main([*argv, "--out", str(tmp_path / "ladder")]) == 0
        out = capsys.readouterr().out
        # warm-up 1 + single 1 + n=2: 4 requests
        assert re.search(r"\[1/4 requests, \d+ s, about \d+ s left\] warmup-0", out), out
        assert "[4/4 requests" in out and "done]" in out
        argv = ["capture", "phases", "--url", url, "--model", "m", "--repeats", "1", "--max-tokens", "4"]
        assert main([*argv, "--out", str(tmp_path / "phases")]) == 0
        out = capsys.readouterr().out
        assert "[1/4 samples" in out and "[4/4 samples" in out  # 2 classes x (1 warm-up + 1)
