"""benchbook.metrics.promsource without a Prometheus server: queries, limits and every failure message.

The HTTP failures are produced by httpx.MockTransport or by sockets on 127.0.0.1; the tests against a
real server are in test_promsource_server.py.
"""

from __future__ import annotations

import json
import socket
from datetime import datetime

import httpx
import pytest

from benchbook.errors import EXIT_SOURCE, InputError, SourceError
from benchbook.metrics import promsource
from benchbook.metrics.profiles import get_profile

POCKET = get_profile("pocket")
M = {"job": "engine", "instance": "a:8000"}


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _mock(handler) -> promsource.PromClient:
    return promsource.PromClient("http://prom.test:9090", timeout=1.0, transport=httpx.MockTransport(handler))


def _vector(*els) -> dict:
    return {"status": "success", "data": {"resultType": "vector", "result": list(els)}}


# ---- PromQL and limits ------------------------------------------------------------------------


def test_selector_sorts_and_escapes_labels():
    sel = promsource.selector("pocket_tokens_total", {"model": 'a"b\\c', "job": "x"}, [("type", "prompt")])
    assert sel == 'pocket_tokens_total{job="x",model="a\\"b\\\\c",type="prompt"}'


def test_selector_rejects_a_bad_label_name():
    with pytest.raises(InputError, match="not a valid Prometheus label name"):
        promsource.selector("x", {"bad-name": "v"})


@pytest.mark.parametrize("span", [60.0, 3600.0, 2 * 86400.0, 30 * 86400.0])
def test_step_keeps_every_series_under_11000_points(span):
    step = promsource.choose_step(0.0, span, 1.0)
    assert step >= 1.0
    assert int(span / step) + 1 <= promsource.MAX_POINTS


def test_step_default_is_about_1000_points_and_at_least_one_second():
    assert promsource.choose_step(0.0, 60.0) == 1.0
    assert promsource.choose_step(0.0, 10_000.0) == 10.0


def test_sample_names_of_a_histogram_are_sum_count_bucket():
    assert promsource.sample_names(POCKET.ref("ttft")) == [
        "pocket_ttft_seconds_sum",
        "pocket_ttft_seconds_count",
        "pocket_ttft_seconds_bucket",
    ]
    assert promsource.sample_names(POCKET.ref("prompt_tokens")) == ["pocket_tokens_total"]


# ---- windows: argument checks -----------------------------------------------------------------


def test_window_end_must_follow_start():
    with pytest.raises(InputError, match="is not after its start"):
        promsource.fetch_window("http://127.0.0.1:1", 10, 10, M, POCKET)


def test_naive_datetime_is_refused():
    with pytest.raises(InputError, match="no time zone"):
        promsource.fetch_window("http://127.0.0.1:1", datetime(2024, 1, 1), datetime(2024, 1, 2), M, POCKET)


def test_url_must_be_http():
    with pytest.raises(InputError, match="not an http"):
        promsource.PromClient("127.0.0.1:9090")


# ---- failures: SourceError (exit 4) -----------------------------------------------------------


def test_unreachable_server_is_a_source_error():
    url = f"http://127.0.0.1:{_closed_port()}"
    with pytest.raises(SourceError, match="cannot reach the server") as e:
        promsource.fetch_window(url, 0, 10, M, POCKET, timeout=2.0)
    assert e.value.exit_code == EXIT_SOURCE
    assert e.value.source == url
    assert "pocket_ttft_seconds_sum" in str(e.value)  # says which query it was sending


def test_password_in_url_never_reaches_a_message():
    url = f"http://reader:s3cret@127.0.0.1:{_closed_port()}"
    with pytest.raises(SourceError) as e:
        promsource.fetch_window(url, 0, 10, M, POCKET, timeout=2.0)
    assert "s3cret" not in str(e.value)
    assert "127.0.0.1" in str(e.value)


def test_silent_server_times_out_with_a_clear_message():
    # A socket that accepts connections (kernel backlog) but never answers.
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(4)
        url = f"http://127.0.0.1:{srv.getsockname()[1]}"
        with pytest.raises(SourceError, match=r"no answer within 0\.3 s to query"):
            promsource.fetch_window(url, 0, 10, M, POCKET, timeout=0.3)


def test_http_error_without_api_body_says_it_is_not_prometheus():
    """Status, content type and size — never the answer's text (issue 36: it went onto the index)."""
    client = _mock(lambda req: httpx.Response(502, text="<html>Bad Gateway</html>"))
    with pytest.raises(SourceError, match=r"HTTP 502 .*not a Prometheus API answer \(text/plain, 24 bytes") as e:
        promsource.fetch_window("", 0, 10, M, POCKET, client=client)
    assert "Bad Gateway" not in str(e.value)


def test_prometheus_error_type_is_named_its_text_is_not_quoted():
    body = {"status": "error", "errorType": "execution", "error": "query timed out in expression evaluation"}
    client = _mock(lambda req: httpx.Response(503, json=body))
    with pytest.raises(SourceError, match="HTTP 503 to query .*Prometheus error execution") as e:
        promsource.fetch_window("", 0, 10, M, POCKET, client=client)
    assert "timed out in expression" not in str(e.value)


# ---- failures: InputError naming the query ----------------------------------------------------


def test_empty_result_names_the_query():
    client = _mock(lambda req: httpx.Response(200, json=_vector()))
    with pytest.raises(InputError) as e:
        promsource.fetch_window("", 100, 110, M, POCKET, client=client)
    assert e.value.location == 'query \'pocket_ttft_seconds_sum{instance="a:8000",job="engine"}\' at 100.000'
    assert "returned no series" in e.value.reason


def test_wrong_result_type_names_the_query():
    body = {"status": "success", "data": {"resultType": "matrix", "result": []}}
    client = _mock(lambda req: httpx.Response(200, json=body))
    with pytest.raises(InputError, match="expected a vector result, got 'matrix'") as e:
        promsource.fetch_window("", 100, 110, M, POCKET, client=client)
    assert "pocket_ttft_seconds_sum" in e.value.location


def test_malformed_sample_names_the_query():
    el = {"metric": {"__name__": "pocket_ttft_seconds_sum"}, "value": [100, "not-a-number"]}
    client = _mock(lambda req: httpx.Response(200, json=_vector(el)))
    with pytest.raises(InputError, match="malformed sample"):
        promsource.fetch_window("", 100, 110, M, POCKET, client=client)


def test_missing_label_selected_series_is_named():
    """pocket_tokens_total exists, but only type="prompt": generation_tokens cannot be had."""

    def handler(req: httpx.Request) -> httpx.Response:
        q = httpx.QueryParams(req.content.decode())["query"]
        if q.startswith(("resets(", "increase(")):
            return httpx.Response(200, json=_vector())
        if q.startswith("timestamp("):
            return httpx.Response(200, json=_vector({"metric": {}, "value": [100, "99"]}))
        labels = {"type": "prompt"} if q.startswith("pocket_tokens_total") else {}
        return httpx.Response(
            200, json=_vector({"metric": {"__name__": q.split("{")[0], **M, **labels}, "value": [100, "1"]})
        )

    with pytest.raises(InputError, match=r'has no series with \{type="generation"\} \(needed for generation_tokens\)'):
        promsource.fetch_window(
            "", 100, 110, M, POCKET, client=_mock(handler), quantities=["prompt_tokens", "generation_tokens"]
        )


def test_check_source_reports_unreachable_as_a_problem():
    url = f"http://127.0.0.1:{_closed_port()}"
    problems = promsource.check_source(url, M, POCKET, timeout=2.0)
    assert len(problems) == 1 and "cannot reach the server" in problems[0]


def test_check_source_reports_a_quantity_the_profile_lacks():
    def handler(req):
        if req.url.path.endswith("buildinfo"):
            return httpx.Response(200, json={"status": "success", "data": {"version": "2.42.0"}})
        return httpx.Response(200, json={"status": "success", "data": [{"__name__": "x"}]})

    problems = promsource.check_source("", M, POCKET, quantities=["ttft", "kv_cache_usage"], client=_mock(handler))
    assert problems == ["profile pocket: kv_cache_usage: this engine profile has no metric for 'kv_cache_usage'"]


def test_queries_are_recorded_for_provenance():
    client = _mock(lambda req: httpx.Response(200, json=_vector()))
    with pytest.raises(InputError):
        promsource.fetch_window("", 100, 110, M, POCKET, client=client)
    assert client.queries == ['pocket_ttft_seconds_sum{instance="a:8000",job="engine"} @ 100.000']
    json.dumps(client.queries)


# ---- freezing windows into capture files ------------------------------------------------------

FIX = __import__("pathlib").Path(__file__).parent / "fixtures" / "promsource"


@pytest.mark.parametrize("name", sorted(p.name for p in FIX.glob("*.prom")))
def test_exposition_round_trips_through_the_parser(name):
    from benchbook.metrics import prometheus

    snap = prometheus.read(FIX / name)
    back = prometheus.parse(promsource.to_exposition(snap), "frozen")
    assert back.values == snap.values
    assert back.types == snap.types


def test_exposition_lists_buckets_in_le_order():
    from benchbook.metrics import prometheus

    text = promsource.to_exposition(prometheus.read(FIX / "s0-idle.prom"))
    les = [ln.split('le="')[1].split('"')[0] for ln in text.splitlines() if ln.startswith("pocket_ttft_seconds_bucket")]
    assert les == ["0.1", "1.0", "+Inf"]
