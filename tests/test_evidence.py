"""Evidence in the row (analysis/evidence.py): the engine's figures over a set of windows, gathered and
phrased beside the baseline's, computed by hand here; the H200 KV-starved arm's rows carry them end to
end in tests/test_what_ran.py and the CPU engine's in tests/test_engine_capture.py."""

from __future__ import annotations

import pytest

from benchbook.analysis import evidence
from benchbook.analysis.checks import WindowAudit


def _w(**kw) -> WindowAudit:
    return WindowAudit(window=kw.pop("window", "w"), kind="results run", **kw)


def test_gather_sums_preemptions_and_pools_the_cache_share():
    ws = [
        _w(preemptions=40.0, cached_tokens=100.0, prompt_tokens=1000.0, queue_s=1.0, e2e_s=10.0, kv_usage_max=0.7),
        _w(preemptions=4.0, cached_tokens=300.0, prompt_tokens=1000.0, queue_s=3.0, e2e_s=10.0, kv_usage_max=1.0),
    ]
    e = evidence.gather(ws, ["max_num_seqs 8 requested, 1 ran"])
    assert e.windows == 2 and e.preemptions == 44
    assert e.cached_share == pytest.approx(400 / 2000)  # over all prompt tokens, not a mean of shares
    assert e.queue_share == pytest.approx(0.3) and e.kv_usage_max == 1.0  # the largest
    assert e.clamps == ("max_num_seqs 8 requested, 1 ran",)


def test_not_measured_is_left_out_never_zero():
    e = evidence.gather([_w()])  # an engine that exports none of it
    assert (e.preemptions, e.cached_share, e.queue_share, e.kv_usage_max) == (None, None, None, None)
    assert evidence.phrase(e, None, "batch") == []


def test_the_phrase_puts_the_baseline_beside_each_figure():
    cand = evidence.RowEvidence(windows=1, preemptions=44, cached_share=0.5, queue_share=0.004, kv_usage_max=1.0)
    base = evidence.RowEvidence(windows=1, preemptions=0, cached_share=0.5, queue_share=0.002, kv_usage_max=0.078)
    text = evidence.row_evidence("KV cache 8,752 vs 930,192 tokens", cand, base, "batch")
    assert text == (
        "KV cache 8,752 vs 930,192 tokens; 44 preemptions (batch 0); KV cache usage peak 100 % (batch 7.8 %); "
        "prefix cache 50 % of prompt tokens (batch 50 %)"
    )  # both queue shares under 1 %: not worth a word
    one = evidence.RowEvidence(windows=1, preemptions=1)
    assert evidence.phrase(one, None, "batch") == ["1 preemption"]
