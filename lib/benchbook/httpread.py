"""Bounded HTTP reads: every network read benchbook makes (``capture`` scrapes and streamed
completions, the Prometheus source, ``validate``'s reachability check) goes through here.

Each request has

* **one total deadline** — connect, headers and the whole body, not a timer that a server resets by
  sending a byte now and then: a watchdog shuts the socket down when the deadline passes, so even a
  server trickling one byte every 3 s is cut off on time;
* **a body size limit** — a ``Content-Length`` above it is refused before reading, an endless body
  is cut at the limit;
* **bounded decompression** — a gzip/deflate body is inflated in steps capped at the limit, so a
  gzip bomb costs at most the limit;
* **no redirect to another host** — a redirect to the same scheme, host and port is followed (at
  most :data:`MAX_REDIRECTS`); one elsewhere is refused with the reason, and nothing is sent there.

Standard library only: ``benchbook capture`` runs in an engine's Python environment and imports
this module. Failures raise :class:`HTTPReadError` (``kind``: ``connect``, ``timeout``,
``too-big``, ``redirect``, ``protocol``, ``truncated``: a body shorter than its ``Content-Length``,
a gzip/deflate stream without its end, or data after it — a second gzip member); callers turn it
into their own error with the URL.
"""

from __future__ import annotations

import http.client
import socket
import ssl
import threading
import time
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

MAX_REDIRECTS = 3
MAX_LINE_BYTES = 1 << 20  # one line of a streamed answer (an SSE event)
_BLOCK = 1 << 16


class HTTPReadError(Exception):
    """A request that did not give a usable answer; ``kind`` says why, ``reason`` in words."""

    def __init__(self, kind: str, reason: str):
        super().__init__(reason)
        self.kind = kind
        self.reason = reason


@dataclass
class Response:
    status: int
    reason: str
    headers: dict[str, str]  # names lowercased
    body: bytes
    url: str  # after same-host redirects

    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


def _origin(url: str) -> tuple[str, str, int]:
    u = urlsplit(url)
    if u.scheme not in ("http", "https") or not u.hostname:
        raise HTTPReadError("protocol", f"not an http(s) URL: {url!r}")
    return u.scheme, u.hostname.lower(), u.port or (443 if u.scheme == "https" else 80)


class _Deadline:
    """Shuts the connection's socket down when the deadline passes (a blocked read returns at once)."""

    def __init__(self, deadline: float):
        self.deadline = deadline
        self.expired = False
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()
        self._timer = threading.Timer(max(0.0, deadline - time.monotonic()), self._fire)
        self._timer.daemon = True
        self._timer.start()

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def watch(self, sock: socket.socket | None) -> None:
        with self._lock:
            self._sock = sock
            if self.expired and sock is not None:
                _shutdown(sock)

    def _fire(self) -> None:
        with self._lock:
            self.expired = True
            if self._sock is not None:
                _shutdown(self._sock)

    def cancel(self) -> None:
        self._timer.cancel()


def _shutdown(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


class _Exchange:
    """One request on its own connection, the response's headers read; the body still to read."""

    def __init__(
        self,
        method: str,
        url: str,
        body: bytes | None,
        headers: Mapping[str, str] | None,
        timeout_s: float,
        max_bytes: int,
    ):
        self.timeout_s = timeout_s
        self.max_bytes = max_bytes
        self.dl = _Deadline(time.monotonic() + timeout_s)
        self.conn: http.client.HTTPConnection | None = None
        try:
            self._open(method, url, body, dict(headers or {}))
        except BaseException:
            self.close()
            raise

    def _open(self, method: str, url: str, body: bytes | None, headers: dict[str, str]) -> None:
        origin = _origin(url)
        for _ in range(MAX_REDIRECTS + 1):
            resp = self._send(method, url, body, headers)
            if resp.status not in (301, 302, 303, 307, 308):
                self.resp, self.url = resp, url
                return
            loc = resp.getheader("Location")
            if not loc:
                raise HTTPReadError("protocol", f"HTTP {resp.status} redirect without a Location header")
            target = urljoin(url, loc)
            try:
                same = _origin(target) == origin
            except HTTPReadError:
                same = False
            if not same:
                raise HTTPReadError(
                    "redirect",
                    f"HTTP {resp.status} redirect to {_public(target)}: another host or port, refused "
                    "(only a redirect to the same scheme, host and port is followed; give the final URL)",
                )
            if resp.status not in (307, 308):
                method, body = "GET", None
            self.conn.close()
            url = target
        raise HTTPReadError("redirect", f"more than {MAX_REDIRECTS} redirects")

    def _send(self, method: str, url: str, body: bytes | None, headers: dict[str, str]):
        u = urlsplit(url)
        left = self.dl.left()
        if left <= 0:
            raise self._timeout()
        cls = http.client.HTTPSConnection if u.scheme == "https" else http.client.HTTPConnection
        kw = {"context": ssl.create_default_context()} if u.scheme == "https" else {}
        self.conn = cls(u.hostname, u.port, timeout=left, **kw)
        path = (u.path or "/") + (f"?{u.query}" if u.query else "")
        try:
            self.conn.connect()
            self.dl.watch(self.conn.sock)
            self.conn.request(method, path, body=body, headers={"Accept-Encoding": "gzip, deflate", **headers})
            return self.conn.getresponse()
        except TimeoutError:
            raise self._timeout() from None
        except (OSError, http.client.HTTPException) as e:
            if self.dl.expired:
                raise self._timeout() from None
            raise HTTPReadError("connect", f"{type(e).__name__}: {e or 'no detail'}") from None

    def _timeout(self) -> HTTPReadError:
        return HTTPReadError("timeout", f"no complete answer within {self.timeout_s:g} s (connect and whole body)")

    def chunks(self) -> Iterator[bytes]:
        """The body, decoded (gzip/deflate, bounded), in pieces; at most ``max_bytes`` in all."""
        enc = (self.resp.getheader("Content-Encoding") or "identity").strip().lower()
        length = self.resp.getheader("Content-Length")
        if enc == "identity" and length and length.isdigit() and int(length) > self.max_bytes:
            raise HTTPReadError("too-big", f"answer of {int(length)} bytes, above the {self.max_bytes}-byte limit")
        inflate = None
        if enc in ("gzip", "x-gzip", "deflate"):
            inflate = zlib.decompressobj(47 if enc != "deflate" else zlib.MAX_WBITS)
        elif enc != "identity":
            raise HTTPReadError("protocol", f"unsupported Content-Encoding {enc!r}")
        total = 0
        while True:
            try:
                raw = self.resp.read1(_BLOCK)
            except TimeoutError:
                raise self._timeout() from None
            except (OSError, http.client.HTTPException) as e:
                if self.dl.expired:
                    raise self._timeout() from None
                if isinstance(e, http.client.IncompleteRead):  # a chunked body without its last chunk
                    raise HTTPReadError("truncated", "answer cut short: the chunked body ended early") from None
                raise HTTPReadError("connect", f"connection lost while reading: {type(e).__name__}: {e}") from None
            if not raw:  # the end, or the watchdog's shutdown
                if self.dl.expired:
                    raise self._timeout()
                self._check_whole(inflate, enc, total)
                return
            if self.dl.expired or self.dl.left() <= 0:
                raise self._timeout()
            if inflate is not None:
                try:
                    data = inflate.decompress(raw, self.max_bytes - total + 1)
                except zlib.error as e:
                    raise HTTPReadError("protocol", f"corrupt {enc} body: {e}") from None
                if inflate.unconsumed_tail:
                    raise HTTPReadError(
                        "too-big", f"{enc} body inflating past the {self.max_bytes}-byte limit (a compression bomb?)"
                    )
                if inflate.unused_data:  # bytes after the end of the compressed stream
                    raise HTTPReadError(
                        "truncated",
                        f"{enc} body goes on {len(inflate.unused_data)} bytes past its end (a second gzip member?): "
                        "read as one member it would be cut short",
                    )
            else:
                data = raw
            total += len(data)
            if total > self.max_bytes:
                raise HTTPReadError("too-big", f"answer above the {self.max_bytes}-byte limit")
            if data:
                yield data

    def _check_whole(self, inflate, enc: str, total: int) -> None:
        """At the end of the body: all the bytes its ``Content-Length`` promised, and a compressed body
        that reached its own end (else the answer was cut short: ``truncated``, retried by a scrape)."""
        left = self.resp.length  # http.client counts down what Content-Length still promises
        if left:
            raise HTTPReadError(
                "truncated", f"answer cut short: the connection closed {left} bytes before its Content-Length"
            )
        if inflate is not None and not inflate.eof:
            raise HTTPReadError(
                "truncated", f"{enc} body cut short: it ends before its end of stream ({total} bytes inflated)"
            )

    def close(self) -> None:
        self.dl.cancel()
        if self.conn is not None:
            self.conn.close()


def _public(url: str) -> str:
    u = urlsplit(url)
    if u.username or u.password:
        u = u._replace(netloc=u.hostname + (f":{u.port}" if u.port else ""))
    return u.geturl()


def request(
    method: str,
    url: str,
    *,
    timeout_s: float,
    max_bytes: int,
    body: bytes | None = None,
    headers: Mapping[str, str] | None = None,
) -> Response:
    """One request, its whole answer read within ``timeout_s`` (total) and ``max_bytes`` (decoded)."""
    ex = _Exchange(method, url, body, headers, timeout_s, max_bytes)
    try:
        data = b"".join(ex.chunks())
        return Response(ex.resp.status, ex.resp.reason, {k.lower(): v for k, v in ex.resp.getheaders()}, data, ex.url)
    finally:
        ex.close()


class Stream:
    """A streamed answer read line by line (server-sent events): the whole stream within the
    deadline, each line at most ``max_line_bytes`` (a stream that never sends a newline is cut)."""

    def __init__(self, ex: _Exchange, max_line_bytes: int):
        self._ex = ex
        self.status = ex.resp.status
        self.reason = ex.resp.reason
        self.max_line_bytes = max_line_bytes

    def read(self) -> bytes:
        return b"".join(self._ex.chunks())

    def lines(self) -> Iterator[str]:
        buf = b""
        for chunk in self._ex.chunks():
            buf += chunk
            *done, buf = buf.split(b"\n")
            for line in done:
                yield line.rstrip(b"\r").decode("utf-8", "replace")
            if len(buf) > self.max_line_bytes:
                raise HTTPReadError("too-big", f"a line of more than {self.max_line_bytes} bytes without a line feed")
        if buf:
            yield buf.rstrip(b"\r").decode("utf-8", "replace")

    def close(self) -> None:
        self._ex.close()

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def stream(
    method: str,
    url: str,
    *,
    timeout_s: float,
    max_bytes: int,
    body: bytes | None = None,
    headers: Mapping[str, str] | None = None,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> Stream:
    """A request whose answer is read as it arrives (:class:`Stream`); use as a context manager."""
    return Stream(_Exchange(method, url, body, headers, timeout_s, max_bytes), max_line_bytes)
