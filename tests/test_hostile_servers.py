"""Hostile servers (issue 30, classes 5 and 6): servers on 127.0.0.1 that answer slowly, endlessly, with a gzip
bomb, with a redirect elsewhere or with a stream that never ends a line. Each runs in threads of this process,
ends every connection by itself after LIFETIME_S, and is shut down by its fixture. Before benchbook.httpread,
the scrape's timer reset on every byte, bodies had no limit and the Prometheus client followed redirects anywhere.

Most of these tests' time is spent waiting on a deadline: conftest runs this file on the worker that takes
the files which wait (tests/marks.py ``WAITS``). Hostile text in the pages is tests/test_hostile.py.
"""

from __future__ import annotations

import time

import pytest

import hostile_server
from benchbook.errors import SourceError
from hostile_server import _bomb


@pytest.fixture
def hostile():
    with hostile_server.pair() as both:
        yield both


def _scrape(url: str, timeout_s: float = 2.0, **kw):
    from benchbook.commands.scrape import MetricsEndpoint

    return MetricsEndpoint(url, timeout_s=timeout_s, retries=1, **kw).fetch()


@pytest.mark.parametrize("path", ["/trickle", "/trickle-headers"])
def test_scrape_deadline_covers_the_whole_answer(hostile, path):
    """`capture run --scrape-timeout 5` against a byte every 3 s hung > 100 s (the timer reset per byte)."""
    server, _ = hostile
    t0 = time.monotonic()
    with pytest.raises(SourceError, match="no answer within 2 s"):
        _scrape(server.url + path)
    assert time.monotonic() - t0 < hostile_server.LIFETIME_S / 2  # not the server's own end of the answer


def test_scrape_endless_body_is_cut_at_the_limit(hostile):
    server, _ = hostile
    with pytest.raises(SourceError, match="above the 1048576-byte limit"):
        _scrape(server.url + "/endless", timeout_s=10, max_bytes=1 << 20)
    with pytest.raises(SourceError, match="answer of 1099511627776 bytes"):
        _scrape(server.url + "/huge-length", timeout_s=10)


def test_scrape_gzip_bomb_is_bounded(hostile):
    import resource

    server, _ = hostile
    _bomb()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(SourceError, match="inflating past the 1048576-byte limit"):
        _scrape(server.url + "/bomb", timeout_s=10, max_bytes=1 << 20)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 32 << 10  # KiB: far below 64 MiB


def test_scrape_redirect_to_another_port_is_refused(hostile):
    server, target = hostile
    with pytest.raises(SourceError, match=f"redirect to http://127.0.0.1:{target.port}.*refused"):
        _scrape(server.url + "/redirect")
    assert target.hits == []
    assert "x_total 1" in _scrape(server.url + "/same-host-redirect").text  # same host and port: followed


def test_phases_stream_without_a_line_feed(hostile):
    """`capture phases --request-timeout 5` with a stream that never sent a newline hung."""
    from benchbook.commands.capture_phases import stream_completion

    server, _ = hostile
    t0 = time.monotonic()
    with pytest.raises(SourceError, match="did not finish within 2 s"):
        stream_completion(server.url, {"prompt": "x"}, 2.0)
    assert time.monotonic() - t0 < hostile_server.LIFETIME_S / 2  # not the server's own end of the answer
    with pytest.raises(SourceError, match="a line of more than 1048576 bytes"):
        stream_completion(server.url + "/flood", {"prompt": "x"}, 10.0)


def test_prometheus_source_deadline_and_redirect(hostile):
    """A slow Prometheus source hung `validate` > 90 s; a 302 elsewhere was followed, and the queries sent there."""
    from benchbook.metrics import promsource
    from benchbook.metrics.profiles import get_profile

    server, target = hostile
    t0 = time.monotonic()
    with promsource.PromClient(server.url, timeout=2.0) as c, pytest.raises(SourceError, match="no answer within 2 s"):
        c.buildinfo()
    assert time.monotonic() - t0 < hostile_server.LIFETIME_S / 2  # not the server's own end of the answer
    problems = promsource.check_source(server.url + "/redirect", {"job": "x"}, get_profile("pocket"), timeout=2.0)
    assert len(problems) == 1 and "refused" in problems[0], problems
    assert target.hits == []
