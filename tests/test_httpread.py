"""benchbook.httpread on its own: what a well-behaved server gets (same-host redirects followed with
the method kept for 307, gzip decoded, Content-Length honoured) and each bound with its reason. The
hostile servers are in tests/hostile_server.py; tests/test_hostile.py drives the commands with them."""

from __future__ import annotations

import time

import pytest

import hostile_server
from benchbook import httpread


@pytest.fixture
def servers():
    with hostile_server.pair() as both:
        yield both


def test_a_plain_answer_and_a_same_host_redirect(servers):
    server, _ = servers
    r = httpread.request("GET", server.url + "/ok", timeout_s=5, max_bytes=1000)
    assert (r.status, r.body) == (200, b"# TYPE x counter\nx_total 1\n")
    r = httpread.request("POST", server.url + "/same-host-redirect", timeout_s=5, max_bytes=1000, body=b"a=1")
    assert r.status == 200 and r.url.endswith("/ok") and server.hits[-2:] == ["/same-host-redirect", "/ok"]


@pytest.mark.parametrize(
    "path, kind, reason",
    [
        ("/trickle", "timeout", "within 1.5 s"),
        ("/trickle-headers", "timeout", "within 1.5 s"),
        ("/endless", "too-big", "above the 100000-byte limit"),
        ("/huge-length", "too-big", "answer of 1099511627776 bytes"),
        ("/bomb", "too-big", "inflating past the 100000-byte limit"),
        ("/redirect", "redirect", "another host or port, refused"),
    ],
)
def test_each_bound_says_why(servers, path, kind, reason):
    server, target = servers
    t0 = time.monotonic()
    with pytest.raises(httpread.HTTPReadError) as e:
        httpread.request("GET", server.url + path, timeout_s=1.5, max_bytes=100_000)
    assert e.value.kind == kind and reason in e.value.reason
    assert time.monotonic() - t0 < hostile_server.LIFETIME_S / 2  # the deadline, not the server's own end
    assert target.hits == []


def test_nothing_listening_is_a_connect_error():
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with pytest.raises(httpread.HTTPReadError) as e:
        httpread.request("GET", f"http://127.0.0.1:{port}/", timeout_s=2, max_bytes=10)
    assert e.value.kind == "connect"


def test_stream_lines_and_the_line_limit(servers):
    server, _ = servers
    with httpread.stream("GET", server.url + "/ok", timeout_s=5, max_bytes=1000) as s:
        assert list(s.lines()) == ["# TYPE x counter", "x_total 1"]
    with (
        httpread.stream("GET", server.url + "/flood", timeout_s=5, max_bytes=1 << 30, max_line_bytes=1 << 16) as s,
        pytest.raises(httpread.HTTPReadError, match="a line of more than 65536 bytes"),
    ):
        list(s.lines())
