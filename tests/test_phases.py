"""The phase split from counter deltas, and every reason a sample is excluded."""

import pytest

from benchbook.metrics import phases, prometheus
from benchbook.metrics.profiles import get_profile

POCKET = get_profile("pocket")


def snap(ttft_sum, ttft_n, dur_sum, dur_n, ptok, gtok, ok, name="s"):
    text = f"""\
# TYPE pocket_ttft_seconds histogram
pocket_ttft_seconds_bucket{{le="+Inf"}} {ttft_n}
pocket_ttft_seconds_sum {ttft_sum}
pocket_ttft_seconds_count {ttft_n}
# TYPE pocket_request_duration_seconds histogram
pocket_request_duration_seconds_bucket{{le="+Inf"}} {dur_n}
pocket_request_duration_seconds_sum {dur_sum}
pocket_request_duration_seconds_count {dur_n}
# TYPE pocket_tokens_total counter
pocket_tokens_total{{type="prompt"}} {ptok}
pocket_tokens_total{{type="generation"}} {gtok}
# TYPE pocket_requests_total counter
pocket_requests_total{{status="success"}} {ok}
"""
    return prometheus.parse(text, name)


BEFORE = snap(10.0, 5, 40.0, 5, 600, 160, 5)


def test_seed_tuned_short_sample():
    # One tuned short-prompt sample of the seed: TTFT 2.699 s, decode 31 tokens at 5.248 tok/s.
    after = snap(10.0 + 2.699, 6, 40.0 + 2.699 + 31 / 5.248, 6, 720, 192, 6)
    sp = phases.split(BEFORE, after, POCKET, client_total_s=8.607)
    assert sp.prompt_tokens == 120 and sp.generated_tokens == 32 and sp.decode_tokens == 31
    assert round(sp.prefill_s, 3) == 2.699
    assert round(sp.prefill_tok_s, 1) == 44.5
    assert round(sp.decode_tok_s, 3) == 5.248
    assert round(sp.engine_total_s, 3) == 8.606


@pytest.mark.parametrize(
    "after, reason",
    [
        (
            snap(15.0, 7, 56.0, 7, 840, 224, 7),
            "TTFT count moved by 2, duration count moved by 2, success count moved by 2",
        ),
        (snap(12.0, 6, 48.0, 6, 720, 192, 5), "success count moved by 0"),
        (
            snap(12.0, 6, 48.0, 6, 720, 192, 4),
            'counter reset: pocket_requests_total{status="success"} went from 5 to 4',
        ),
        (snap(18.8588, 6, 48.8587, 6, 720, 192, 6), "does not exceed TTFT"),
        (snap(12.0, 6, 48.0, 6, 720, 161, 6), "need at least 2"),
    ],
)
def test_exclusions(after, reason):
    with pytest.raises(phases.Excluded) as e:
        phases.split(BEFORE, after, POCKET, client_total_s=100.0)
    assert reason in e.value.reason


def test_engine_total_after_client_is_excluded():
    after = snap(12.7, 6, 48.6, 6, 720, 192, 6)
    with pytest.raises(phases.Excluded, match="exceeds client total"):
        phases.split(BEFORE, after, POCKET, client_total_s=8.5)


def test_missing_family_is_excluded():
    after = prometheus.parse('pocket_tokens_total{type="prompt"} 5\n', "a")
    with pytest.raises(phases.Excluded, match="missing from the after snapshot"):
        phases.split(BEFORE, after, POCKET)
