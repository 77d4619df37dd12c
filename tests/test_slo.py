"""SLO attainment, goodput and the highest load meeting an SLO.

The Llama-3.3-70B rate sweep (request rate 1, 4, 16, inf; ../shared/realdata) is checked against
values computed here with the standard library from each file's per-request arrays, the way vLLM's
``--goodput`` counts a request: TTFT = ``ttfts[i]``, TPOT = ``sum(itls[i]) / (output_lens[i] − 1)``
(0 for a one-token answer), E2E = TTFT + ``sum(itls[i])``, a request with an error is never good.
"""

from __future__ import annotations

import json
import math

import pytest

from benchbook.analysis import resultset as rset
from benchbook.analysis import slo as S
from benchbook.errors import InputError
from benchbook.ingest import formats
from test_identity import DEEPSEEK, LLAMA, PD, shared

SLO = {"ttft_ms": 250, "tpot_ms": 30, "attainment": 0.9}


def _by_hand(path, ttft_ms, tpot_ms):
    d = json.loads(path.read_text())
    good = good_tokens = 0
    for t, gaps, n, err in zip(d["ttfts"], d["itls"], d["output_lens"], d["errors"]):
        if err:
            continue
        tpot = math.fsum(gaps) / (n - 1) if n > 1 else 0.0
        if t * 1000 <= ttft_ms and tpot * 1000 <= tpot_ms:
            good += 1
            good_tokens += n
    return good, len(d["ttfts"]), good_tokens, d["duration"], d["request_throughput"]


def test_llama_sweep_highest_rate_meeting_the_slo_matches_the_hand_computation():
    files = [shared(LLAMA.format(q)) for q in ("01", "04", "16", "inf")]
    rs = rset.build(files, slo=SLO)
    hand = [_by_hand(f, SLO["ttft_ms"], SLO["tpot_ms"]) for f in files]
    att = [g / n for g, n, *_ in hand]
    for e, (g, n, tok, dur, _) in zip(rs.entries, hand):
        r = rs.slo_runs[e.id]
        assert (r.good, r.sent) == (g, n)
        assert r.request_goodput == pytest.approx(g / dur) and r.token_goodput == pytest.approx(tok / dur)
    # the last rate meeting 90 % and the first missing it, then linear in the achieved request rate
    meets = [a >= 0.9 for a in att]
    k = meets.index(False)
    assert k > 0 and all(meets[:k])
    m0, m1 = att[k - 1] - 0.9, att[k] - 0.9
    x0, x1 = hand[k - 1][4], hand[k][4]
    expected = x0 + (x1 - x0) * m0 / (m0 - m1)
    (sw,) = rs.sweeps
    ((series, h),) = rs.slo_highest
    assert series == sw.series and h.status == "interpolated"
    assert h.achieved_req_s == pytest.approx(expected)
    rates = [1.0, 4.0, 16.0, math.inf]
    assert h.offered == pytest.approx(rates[k - 1] + (rates[k] - rates[k - 1]) * m0 / (m0 - m1))
    assert "interpolated between request rate" in h.text


def test_met_at_every_load_and_at_none():
    files = [shared(LLAMA.format(q)) for q in ("01", "04")]
    rs = rset.build(files, slo={"e2el_ms": 60_000})
    assert rs.slo_highest[0][1].status == "every" and "met at every load tested" in rs.slo_highest[0][1].text
    rs = rset.build(files, slo={"ttft_ms": 1})
    assert rs.slo_highest[0][1].status == "none" and rs.slo_highest[0][1].text.startswith("met at none")


def test_without_records_attainment_is_unknown_and_only_percentiles_are_checked():
    (run,) = formats.read(PD[0])  # SGLang summary line: P99 TTFT 34890.156685337424 ms, no per-request arrays
    r = S.evaluate(run, S.parse({"ttft_ms": 40_000, "percentile": 99}))
    assert r.attainment is None and r.records is False and r.meets is True
    assert r.percentile_source == "the file's summary" and r.percentiles == {"ttft_ms": 34890.156685337424}
    assert r.why.startswith("attainment unknown (the file has no per-request records)")
    # an attainment target: a P99 beyond its limit proves the 99 % target missed ...
    r = S.evaluate(run, S.parse({"ttft_ms": 30_000, "attainment": 0.99}))
    assert r.meets is False and "more than 1% of requests miss it" in r.why
    # ... but P99s within their limits cannot prove the limits held together
    r = S.evaluate(run, S.parse({"ttft_ms": 40_000, "tpot_ms": 20, "attainment": 0.99}))
    assert r.meets is None and "limits must hold together" in r.why


@pytest.mark.parametrize(
    ("value", "where"),
    [
        ({"ttft": 100}, "slo.ttft"),
        ({"ttft_ms": -1}, "slo.ttft_ms"),
        ({"ttft_ms": 100, "percentile": 99, "attainment": 0.9}, "slo"),
        ({"percentile": 99}, "slo"),
        ({"ttft_ms": 100, "attainment": 1.5}, "slo.attainment"),
    ],
)
def test_bad_slo_names_the_key(value, where):
    with pytest.raises(InputError) as e:
        S.parse(value)
    assert e.value.file == "parameters" and e.value.location == where


def test_default_target_is_99_percent_attainment():
    s = S.parse({"tpot_ms": 50})
    assert s.attainment == 0.99 and s.percentile is None and s.target_pct == 99
    assert s.describe() == "TPOT ≤ 50 ms for at least 99% of requests"


def test_itl_limit_is_each_requests_largest_gap_and_a_one_token_answer_meets_it():
    # DeepSeek-V2.5 at rate inf: 38 of its 200 answers are one token long (no gaps at all)
    path = shared(DEEPSEEK)
    d = json.loads(path.read_text())
    limit = 50.0
    good = sum(1 for gaps, err in zip(d["itls"], d["errors"]) if not err and max(gaps, default=0.0) * 1000 <= limit)
    assert sum(1 for n in d["output_lens"] if n == 1) == 38
    (run,) = formats.read(path)
    r = S.evaluate(run, S.parse({"itl_ms": limit, "attainment": 0.5}))
    assert (r.good, r.sent) == (good, 200)
