"""Hostile HTTP servers on 127.0.0.1 for the bounded-read tests (tests/test_hostile.py,
tests/test_httpread.py, tests/test_openai_answers.py): slow, endless, a gzip bomb, a redirect
elsewhere, a stream that never ends a line, answers cut short (a body below its Content-Length, a
gzip stream without its end, two gzip members), and any canned answer a test sets in ``canned``
(path -> the raw bytes sent, then the connection closed). Each runs in threads of the test process, ends every connection by itself after LIFETIME_S,
and is shut down by its fixture (``close``)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import zlib

LIFETIME_S = 20.0  # a client that is not bounded by its own deadline waits this long (tests compare with it)


class Hostile:
    """One listening socket; each connection's request path picks a behaviour."""

    def __init__(self, other_port: int | None = None):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)  # before the thread starts: a server stopped at once closes it under the thread
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.other_port = other_port
        self.hits: list[str] = []
        self.canned: dict[str, bytes] = {}  # path -> raw response bytes (status line, headers, body)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        end = time.monotonic() + LIFETIME_S
        try:
            conn.settimeout(LIFETIME_S)
            head = b""
            while b"\r\n\r\n" not in head:
                got = conn.recv(65536)
                if not got:
                    return
                head += got
            path = head.split(b" ", 2)[1].decode()
            # read the request's body too: closing with unread bytes would reset the connection (RST), and
            # a client would see "connection lost" instead of the answer it was sent
            length = next(
                (int(ln.split(b":", 1)[1]) for ln in head.split(b"\r\n") if ln.lower().startswith(b"content-length:")),
                0,
            )
            body = head.split(b"\r\n\r\n", 1)[1]
            while len(body) < length:
                got = conn.recv(65536)
                if not got:
                    break
                body += got
            self.hits.append(path)
            if path in self.canned:
                conn.sendall(self.canned[path])
                return
            behaviour = getattr(self, "_" + path.strip("/").split("/")[0].replace("-", "_"), self._ok)
            behaviour(conn, end)
        except OSError:
            pass  # the client went away: what a bounded client does
        finally:
            conn.close()

    def _alive(self, end: float) -> bool:
        return not self.stop.is_set() and time.monotonic() < end

    def _ok(self, conn, end):
        body = b"# TYPE x counter\nx_total 1\n"
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))

    def _trickle(self, conn, end):  # a byte every 0.5 s: no single read ever waits long
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n")
        while self._alive(end):
            conn.sendall(b"x")
            time.sleep(0.5)

    def _trickle_headers(self, conn, end):
        for b in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"y" * 1000:
            if not self._alive(end):
                return
            conn.sendall(bytes([b]))
            time.sleep(0.5)

    def _endless(self, conn, end):
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n")
        block = b"x_total 1\n" * 6554
        while self._alive(end):
            conn.sendall(block)

    def _huge_length(self, conn, end):
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1099511627776\r\n\r\nx_total 1\n")

    def _bomb(self, conn, end):
        body = _bomb()
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(body) + body)

    def _redirect(self, conn, end):
        loc = f"http://127.0.0.1:{self.other_port}/api/v1/status/buildinfo"
        conn.sendall(f"HTTP/1.1 302 Found\r\nLocation: {loc}\r\nContent-Length: 0\r\n\r\n".encode())

    def _same_host_redirect(self, conn, end):
        conn.sendall(b"HTTP/1.1 307 Temporary Redirect\r\nLocation: /ok\r\nContent-Length: 0\r\n\r\n")

    def _v1(self, conn, end):  # /v1/completions: a stream that never sends a line feed
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: ")
        while self._alive(end):
            conn.sendall(b"x")
            time.sleep(0.2)

    def _flood(self, conn, end):  # /flood/v1/completions: fast, and still no line feed
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: ")
        while self._alive(end):
            conn.sendall(b"x" * 65536)

    def _short_body(self, conn, end):  # Content-Length promises more than is sent
        body = METRICS_TEXT
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body) + 37, body))

    def _short_chunked(self, conn, end):  # a chunked body that ends without its last (0-size) chunk
        body = METRICS_TEXT
        conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n" % (len(body), body))

    def _gzip_cut(self, conn, end):  # a gzip stream missing its last bytes (no end, no CRC), length honest
        z = gzip_bytes(METRICS_TEXT)[:-9]
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(z) + z)

    def _gzip_two(self, conn, end):  # two gzip members: a reader that stops after the first loses half
        z = gzip_bytes(METRICS_TEXT) + gzip_bytes(b'# TYPE y counter\ny_total{n="2"} 2\n')
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(z) + z)

    def _slow_metrics(self, conn, end):  # a whole, valid answer, 0.4 s late (a server busy writing 44 MB)
        time.sleep(0.4)
        self._ok(conn, end)

    def _api(self, conn, end):  # /api/v1/...: a Prometheus that answers a byte every 0.5 s
        self._trickle(conn, end)

    def close(self) -> None:
        self.stop.set()
        self.sock.close()
        self.thread.join(timeout=5)


METRICS_TEXT = b'# TYPE x counter\nx_total{n="1"} 1\n# TYPE z gauge\nz 3\n'


def gzip_bytes(data: bytes) -> bytes:
    z = zlib.compressobj(6, zlib.DEFLATED, 31)
    return z.compress(data) + z.flush()


def answer(body: bytes, content_type: str = "application/json", status: str = "200 OK") -> bytes:
    """A whole HTTP/1.1 answer with its Content-Length (for ``Hostile.canned``)."""
    head = f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n\r\n"
    return head.encode() + body


def sse(*events: str) -> bytes:
    """A streamed completion: each event a ``data:`` line, then ``data: [DONE]``."""
    body = "".join(f"data: {e}\n\n" for e in (*events, "[DONE]")).encode()
    return answer(body, "text/event-stream")


_BOMB: list[bytes] = []


def _bomb() -> bytes:
    """64 MiB of zeros, gzip-compressed (about 64 KiB)."""
    if not _BOMB:
        z = zlib.compressobj(9, zlib.DEFLATED, 31)  # gzip framing, fed 1 MiB at a time
        zeros = bytes(1 << 20)
        _BOMB.append(b"".join(z.compress(zeros) for _ in range(64)) + z.flush())
    return _BOMB[0]


@contextlib.contextmanager
def pair():
    """``(server, target)``: a hostile server, and a second one that its ``/redirect`` points to
    (``target.hits`` shows whether anything reached it). Both are closed on exit."""
    target = Hostile()
    server = Hostile(other_port=target.port)
    try:
        yield server, target
    finally:
        server.close()
        target.close()
