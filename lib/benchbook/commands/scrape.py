"""Scraping an engine's ``/metrics`` for ``benchbook capture``: bounded retries, time limits, a check
that the answer is Prometheus text, and the raw bytes kept exactly as received.

Failures the user can act on become benchbook errors: the server cannot be reached, times out or
answers an HTTP error after the retries -> :class:`SourceError` (exit 4); it answers 200 with
something that is not Prometheus text exposition (an HTML page, JSON, an empty body) ->
:class:`InputError` naming the URL (exit 2: the URL given is wrong).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

import httpx

from benchbook import httpread
from benchbook.errors import InputError, SourceError
from benchbook.metrics import prometheus
from benchbook.metrics.profiles import EngineProfile, detect_profile

SETTLE_TIMEOUT_S = 5.0  # --settle-timeout: the longest wait for the engine to count a step's requests
SETTLE_POLL_S = 0.1  # between the after scrapes of that wait
RETRIES = 3  # attempts per scrape
BACKOFF_S = 0.5  # sleep before the 2nd attempt, doubled for each further one
TIMEOUT_S = 10.0  # connect + whole body, per attempt
MAX_SCRAPE_BYTES = 256 * 2**20  # one /metrics answer, decoded (the capture-file limit, jsonfile.MAX_METRICS_BYTES)
_FIRST_SAMPLE = re.compile(r"^[ \t]*([^#\s])", re.M)  # the first line that is not blank or a comment
_NAME_START = re.compile(r"[a-zA-Z_:]")  # a metric name's first character


@dataclass(frozen=True)
class Scrape:
    """One successful GET of /metrics."""

    text: str
    unix_s: float  # wall clock at the middle of the request: the server wrote the text between sending and answer
    mono_s: float  # time.monotonic() at the same instant
    elapsed_s: float  # request duration (last attempt)
    attempts: int


def metrics_url(url: str) -> str:
    """``http://host:port`` -> ``http://host:port/metrics``; a URL with a path is kept as given."""
    u = httpx.URL(url)
    if u.scheme not in ("http", "https") or not u.host:
        raise InputError(url, "-", "not an http(s) URL (expected e.g. http://127.0.0.1:8000/metrics)")
    return str(u.copy_with(path="/metrics")) if u.path in ("", "/") else str(u)


def server_root(url: str) -> str:
    """``http://host:port/metrics`` -> ``http://host:port``: the server's root, for its other endpoints
    (the inverse of :func:`metrics_url`)."""
    return str(httpx.URL(url).copy_with(path="/", query=None, fragment=None)).rstrip("/")


class MetricsEndpoint:
    """GET ``url`` with at most ``retries`` attempts of ``timeout_s`` each (connect and whole body:
    :mod:`benchbook.httpread`), backing off between them; an answer above ``max_bytes`` (decoded),
    a redirect to another host or port, and a gzip bomb are refused."""

    def __init__(
        self,
        url: str,
        *,
        timeout_s: float = TIMEOUT_S,
        retries: int = RETRIES,
        backoff_s: float = BACKOFF_S,
        max_bytes: int = MAX_SCRAPE_BYTES,
    ):
        if retries < 1:
            raise ValueError("retries must be >= 1")
        self.url = metrics_url(url)
        self.timeout_s = timeout_s
        self.retries = retries
        self.backoff_s = backoff_s
        self.max_bytes = max_bytes

    def close(self) -> None:
        pass  # one connection per scrape, closed with it

    def fetch(self) -> Scrape:
        """One scrape, retried on connection errors, time-outs and 5xx answers; the text is not checked."""
        last = ""
        for attempt in range(1, self.retries + 1):
            if attempt > 1:
                time.sleep(self.backoff_s * 2 ** (attempt - 2))
            t0 = time.monotonic()
            try:
                r = httpread.request(
                    "GET",
                    self.url,
                    timeout_s=self.timeout_s,
                    max_bytes=self.max_bytes,
                    headers={"Accept": "text/plain;version=0.0.4"},
                )
            except httpread.HTTPReadError as e:
                if e.kind in ("timeout", "connect", "truncated"):
                    last = {"timeout": f"no answer within {self.timeout_s:g} s", "truncated": str(e)}.get(
                        e.kind, f"cannot connect ({e})"
                    )
                    continue
                raise SourceError(self.url, e.reason) from None  # too big, a redirect elsewhere: retrying won't help
            t1 = time.monotonic()
            if r.status >= 500:
                last = f"HTTP {r.status}"
                continue
            if r.status != 200:  # 4xx: retrying will not help
                raise SourceError(self.url, f"HTTP {r.status} {r.reason}: is this the /metrics endpoint?")
            # a busy server answers late: stamping the answer's arrival would date every busy-time value
            # later than it was read, shortening busy stretches; the midpoint halves that error
            mid = (t1 - t0) / 2
            return Scrape(r.text(), time.time() - mid, t1 - mid, t1 - t0, attempt)
        hint = "" if last.startswith(("answer cut short", "gzip", "deflate")) else "; is the server up?"
        raise SourceError(self.url, f"{last} after {self.retries} attempt{'s' * (self.retries > 1)}{hint}")

    def check(self, scrape: Scrape) -> prometheus.Snapshot:
        """Parse the whole text with benchbook's reader (prometheus_client + its checks)."""
        if not scrape.text.strip():
            raise InputError(self.url, "-", "empty answer: not Prometheus text exposition (no samples)")
        head = scrape.text.lstrip()[:1]
        if head in ("<", "{", "["):
            kind = "HTML" if head == "<" else "JSON"
            raise InputError(
                self.url, "-", f"answered {kind}, not Prometheus text exposition: is this the /metrics endpoint?"
            )
        try:
            snap = prometheus.parse(scrape.text, self.url)
        except InputError as e:
            raise InputError(self.url, e.location, f"not Prometheus text exposition: {e.reason}") from None
        if not snap.values:
            raise InputError(self.url, "-", "Prometheus text without a single sample")
        return snap

    def check_light(self, scrape: Scrape) -> None:
        """The cheap check of a periodic scrape (``capture run --every``): it looks like Prometheus
        text at its start (not empty, not an HTML page or JSON, a first sample line that starts like a
        metric name) and ends with a line feed (not cut off) — reading its first 4 KB and last byte,
        not parsing it: a 44 MB /metrics parsed at every interval took minutes and a gigabyte. The
        scrapes that bracket the window are parsed whole (:meth:`check`); ``validate`` parses the rest."""
        text = scrape.text
        head = text[:4096].lstrip()
        if not head:
            raise InputError(self.url, "-", "empty answer: not Prometheus text exposition (no samples)")
        if head[:1] in ("<", "{", "["):
            kind = "HTML" if head[:1] == "<" else "JSON"
            raise InputError(
                self.url, "-", f"answered {kind}, not Prometheus text exposition: is this the /metrics endpoint?"
            )
        first = _FIRST_SAMPLE.search(text)
        if first is None:
            raise InputError(self.url, "-", "Prometheus text without a single sample")
        if not _NAME_START.match(first.group(1)):
            shown = text[first.start(1) : first.start(1) + 40]
            raise InputError(self.url, "-", f"not Prometheus text exposition: its first sample line starts {shown!r}")
        if not text.endswith("\n"):
            raise InputError(self.url, "-", "the answer's last line has no line feed: cut off?")

    def check_fetch(self) -> Scrape:
        """A scrape whose text passed :meth:`check`."""
        s = self.fetch()
        self.check(s)
        return s

    def first(self) -> tuple[Scrape, prometheus.Snapshot, EngineProfile | None, str | None]:
        """The first scrape of a capture: fetched, checked, and its engine profile detected (None with
        the reason when no profile matches: the capture still records the text)."""
        s = self.fetch()
        snap = self.check(s)
        try:
            return s, snap, detect_profile(snap), None
        except InputError as e:
            return s, snap, None, e.reason


def finished_requests(snap: prometheus.Snapshot, profile: EngineProfile | None) -> float | None:
    """The engine's own finished-request count (vLLM ``vllm:request_success_total`` summed over its
    labels, SGLang ``sglang:num_requests_total``, … — the profile's ``requests_success``), or None
    when the profile has none."""
    from benchbook.analysis import enginemetrics

    if profile is None or not profile.has("requests_success"):
        return None
    return sum(enginemetrics.values(snap, profile, "requests_success").values())


def settled_after(
    endpoint: MetricsEndpoint,
    before: prometheus.Snapshot,
    profile: EngineProfile | None,
    expected: int | None,
    timeout_s: float = SETTLE_TIMEOUT_S,
    poll_s: float = SETTLE_POLL_S,
) -> tuple[Scrape, prometheus.Snapshot, dict]:
    """A step's *after* scrape, taken once the engine has counted the step's ``expected`` requests:
    an engine counts a finished request a moment after the stream's last byte (vLLM records its stats
    after handing the output to the HTTP layer; on a busy host much later), and a count that lands
    after the scrape belongs to the wrong window. /metrics is scraped every ``poll_s`` until the
    finished-request counter has grown by ``expected`` since ``before``, for at most ``timeout_s``;
    then the last scrape is taken as it is. Without a counter (no profile, or none with one) or a
    known count, one scrape. Returns (scrape, snapshot, what happened: ``expected``, ``counted``,
    ``waited_s``, ``scrapes``, ``timed_out``, ``timeout_s``) — a time-out is said, never fatal."""
    t0 = time.monotonic()
    want = finished_requests(before, profile) if expected else None
    scrapes = 0
    while True:
        scrapes += 1
        s = endpoint.fetch()
        snap = endpoint.check(s)
        counted = None if want is None else (finished_requests(snap, profile) or 0.0) - want
        done = counted is None or counted >= expected
        waited = time.monotonic() - t0  # to this scrape's answer: a wait that timed out waited >= timeout_s
        if done or waited >= timeout_s:
            info = {
                "expected": expected,
                "counted": counted,
                "waited_s": round(waited, 3),
                "scrapes": scrapes,
                "timed_out": not done,
                "timeout_s": timeout_s,
            }
            if want is None:
                info["note"] = (
                    "no wait: the number of requests is not known"
                    if not expected
                    else "no wait: the engine profile has no finished-request counter"
                )
            return s, snap, info
        time.sleep(poll_s)


def settle_note(step: str, info: dict) -> str | None:
    """The console line of a settle wait that timed out (None when it did not)."""
    if not info.get("timed_out"):
        return None
    return (
        f"  {step}: the engine counted {info['counted']:g} of {info['expected']} requests within "
        f"{info['timeout_s']:g} s (--settle-timeout); the after scrape was taken anyway (capture.json: settle)"
    )
