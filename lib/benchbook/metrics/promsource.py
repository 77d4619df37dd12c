"""A run's engine metrics pulled from a Prometheus server (HTTP API) instead of capture files.

Given a server's base URL, a time window [t0, t1] (Unix seconds), equality label matchers (``job``,
``instance``, ``model`` …) and an engine profile, this module returns what the capture-file path
returns, so the analyses do not care where the numbers came from:

* :func:`fetch_window` → :class:`PromWindow` whose ``before``/``after`` are
  :class:`benchbook.metrics.prometheus.Snapshot` objects (the counter and histogram ``_sum``/``_count``/
  ``_bucket`` values at t0 and at t1, from instant queries). ``benchbook.metrics.phases.split`` and
  ``benchbook.metrics.prometheus.delta`` work on them unchanged. Labels pinned by the matchers are dropped
  from the series keys (they are the same on every series), so a snapshot of one target has exactly
  the keys of a capture file of that target; every other label is kept, so series of two instances
  or two models stay apart and ``Snapshot.get`` refuses to pick one of them blindly.
* :func:`fetch_gauges` → a polars frame of gauges over time (``query_range``), plus per-second
  rates of the token counters, for charts.
* :func:`check_source` → the problems ``benchbook validate`` should print (empty list: usable).

Edge values and counter resets
------------------------------
An instant query at t returns the last sample scraped at or before t (within the server's 5-minute
lookback). The delta of two such edge values is exact when the counter did not reset in between;
when the engine restarted inside the window the edge delta is wrong — negative if the counter ended
lower, and *plausible but wrong* if it climbed past its old value again. Edge values cannot tell.
The server can: :func:`fetch_window` also asks, per counter, ``resets(x[R])`` (how many times the
counter went down in the window) and ``increase(x[R])`` (which adds the pre-reset value back). A
series with a reset is listed in ``PromWindow.resets`` and :meth:`PromWindow.split` excludes the sample,
naming the series and quoting ``increase()``. ``increase()`` is not used as the delta itself: it
extrapolates to the range edges, so even without a reset it differs from the edge delta by up to
about one scrape interval's worth of growth; the edge delta is exact, ``increase()`` is an estimate.

Errors: an unreachable server, an HTTP error or a timeout raise ``SourceError`` (exit 4); a result
of the wrong shape or a query that returned no series raises ``InputError`` naming the query.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from benchbook.errors import InputError, SourceError
from benchbook.metrics import phases as phases_mod
from benchbook.metrics.profiles import EngineProfile, MetricRef
from benchbook.metrics.prometheus import LabelKey, Snapshot, _fmt_labels
from benchbook.metrics.source_allow import public_url

# Prometheus refuses a range query with more than this many points per series.
MAX_POINTS = 11_000
DEFAULT_TIMEOUT_S = 10.0  # one total deadline per API call (connect and whole answer)
MAX_ANSWER_BYTES = 256 * 2**20  # one API answer, decoded
_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
HISTOGRAM_SUFFIXES = ("_sum", "_count", "_bucket")

Time = float | int | datetime


# ---- small helpers ----------------------------------------------------------------------------


def _ts(t: Time) -> float:
    if isinstance(t, datetime):
        if t.tzinfo is None:
            raise InputError("<window>", "-", f"datetime {t.isoformat()} has no time zone; give UTC or Unix seconds")
        return t.timestamp()
    return float(t)


def _fmt_t(t: float) -> str:
    return f"{t:.3f}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def selector(
    name: str,
    matchers: Mapping[str, str],
    extra: Iterable[tuple[str, str]] = (),
    regex: Mapping[str, str] | None = None,
) -> str:
    """PromQL instant-vector selector ``name{k="v",…,r=~"a|b"}`` (labels sorted, values escaped).

    ``regex`` adds ``=~`` matchers (a label whose series are summed on purpose, see ``_summed``).
    """
    labels = dict(extra)
    labels.update(matchers)
    rx = dict(regex or {})
    for k in list(labels) + list(rx):
        if not _LABEL_NAME.match(k):
            raise InputError("<matchers>", k, "not a valid Prometheus label name")
    parts = [(k, f'{k}="{_escape(str(v))}"') for k, v in labels.items() if k not in rx]
    parts += [(k, f'{k}=~"{_escape(v)}"') for k, v in rx.items()]
    inner = ",".join(p for _k, p in sorted(parts))
    return f"{name}{{{inner}}}"


def _sum_regex(ref: MetricRef) -> dict[str, str]:
    """``{sum_label: "v1|v2"}`` for a quantity whose series are added up (vLLM's finished_reason)."""
    if ref.sum_label is None:
        return {}
    return {ref.sum_label: "|".join(re.escape(v) for v in ref.sum_values)}


def _summed(ref: MetricRef, expr: str) -> str:
    """``sum without(label) (expr)`` when the quantity adds up the series of one label, else expr.

    Mirrors ``enginemetrics._select``: only that label is summed away; every other label (model,
    engine rank) still keeps series apart.
    """
    return f"sum without({ref.sum_label}) ({expr})" if ref.sum_label is not None else expr


def _selects(ref: MetricRef, key: LabelKey) -> bool:
    """Whether a series (label key) is one the quantity reads: its labels, and a summed value."""
    d = dict(key)
    if any(d.get(k) != v for k, v in ref.labels):
        return False
    return ref.sum_label is None or d.get(ref.sum_label) in ref.sum_values


def sample_names(ref: MetricRef) -> list[str]:
    """The sample names one profile quantity stands for (a histogram has three)."""
    if ref.kind == "histogram":
        return [ref.name + s for s in HISTOGRAM_SUFFIXES]
    return [ref.name]


def _family(ref: MetricRef) -> str:
    # The family name prometheus_client's parser gives, so Snapshot.types looks the same.
    if ref.kind == "counter" and ref.name.endswith("_total"):
        return ref.name[: -len("_total")]
    return ref.name


def choose_step(t0: float, t1: float, step: float | None = None) -> float:
    """A range-query step that keeps every series under the server's 11,000-point limit.

    ``step`` is a wish (default: span/1000, at least 1 s); it is raised, to a whole millisecond,
    when the span would otherwise need more than 11,000 points.
    """
    span = t1 - t0
    want = step if step is not None else max(1.0, span / 1000)
    if want <= 0:
        raise InputError("<window>", "step", f"step {want:g} s is not positive")
    floor = math.ceil(span / (MAX_POINTS - 1) * 1000) / 1000 if span > 0 else 0.0
    return max(want, floor, 0.001)


# ---- the HTTP client --------------------------------------------------------------------------


class PromClient:
    """Thin client of the Prometheus HTTP API (``/api/v1/…``) that turns failures into our errors.

    Each call is bounded (:mod:`benchbook.httpread`): ``timeout`` is one total deadline for connect
    and the whole answer, the answer is at most :data:`MAX_ANSWER_BYTES` (decoded; a gzip bomb is cut
    there), and a redirect to another host or port is refused, so no query is sent anywhere but the
    configured server. ``transport`` (an ``httpx`` transport) replaces the network in unit tests."""

    def __init__(self, url: str, timeout: float = DEFAULT_TIMEOUT_S, transport: Any = None):
        if not url.startswith(("http://", "https://")):
            raise InputError("<prometheus>", "url", f"{url!r} is not an http:// or https:// URL")
        self.url = url.rstrip("/")
        self.name = public_url(url)
        self.timeout = timeout
        self.queries: list[str] = []  # every query sent, in order (for provenance)
        self._http = None
        if transport is not None:
            import httpx

            self._http = httpx.Client(timeout=timeout, transport=transport, follow_redirects=False)

    def close(self) -> None:
        if self._http is not None:
            self._http.close()

    def __enter__(self) -> PromClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _send(self, path: str, data: dict[str, Any] | None) -> tuple[int, str, bytes]:
        """(status, content type, body) of one API call; HTTPReadError on a failure of the exchange."""
        from urllib.parse import urlencode

        from benchbook import httpread

        url = f"{self.url}{path}"
        if self._http is not None:  # a test double
            resp = self._http.get(url) if data is None else self._http.post(url, data=data)
            return resp.status_code, resp.headers.get("content-type", ""), resp.content
        if data is None:
            r = httpread.request("GET", url, timeout_s=self.timeout, max_bytes=MAX_ANSWER_BYTES)
        else:
            r = httpread.request(
                "POST",
                url,
                timeout_s=self.timeout,
                max_bytes=MAX_ANSWER_BYTES,
                body=urlencode(data, doseq=True).encode(),
                headers={"Content-Type": "application/x-www-form-urlencoded"},
            )
        return r.status, r.headers.get("content-type", ""), r.body

    def _call(self, path: str, what: str, data: dict[str, Any] | None) -> Any:
        """POST ``data`` as a form (GET when None) to an API path; the answer's ``data`` member."""
        import json

        from benchbook.httpread import HTTPReadError

        try:
            status, ctype, raw = self._send(path, data)
        except HTTPReadError as e:
            if e.kind == "timeout":
                raise SourceError(self.name, f"no answer within {self.timeout:g} s to {what}") from None
            if e.kind == "connect":
                raise SourceError(self.name, f"cannot reach the server ({e.reason}) while sending {what}") from None
            raise SourceError(self.name, f"{e.reason} (while sending {what})") from None
        except Exception as e:  # noqa: BLE001 - the test double's transport errors
            import httpx

            if isinstance(e, httpx.TimeoutException):
                raise SourceError(self.name, f"no answer within {self.timeout:g} s to {what}") from None
            if isinstance(e, httpx.HTTPError):
                raise SourceError(
                    self.name, f"cannot reach the server ({type(e).__name__}: {e}) while sending {what}"
                ) from None
            raise
        try:
            body = json.loads(raw)
        except (ValueError, RecursionError):  # not JSON, or nested past what the parser follows
            body = None
        # An answer's text is never quoted (it goes onto pages and the index): a source may be a
        # service that is not Prometheus, and what it answers is not ours to publish.
        shape = f"{_content_type(ctype)}, {len(raw)} bytes; its text is not quoted"
        if not isinstance(body, dict) or body.get("status") not in ("success", "error"):
            hint = "is this the server's base URL?"
            if 300 <= status < 400:
                hint = "a redirect was not followed; give the URL it points to"
            raise SourceError(self.name, f"HTTP {status} to {what}: not a Prometheus API answer ({shape}); {hint}")
        if body["status"] != "success" or status >= 400:
            kind = body.get("errorType")
            kind = f"Prometheus error {kind}" if kind in ERROR_TYPES else "an error"
            raise SourceError(
                self.name, f"HTTP {status} to {what}: {kind} ({shape}: send the query to the server to read it)"
            )
        return body.get("data")

    def query(self, expr: str, at: float) -> list[dict[str, Any]]:
        """Instant query; returns the vector's elements (``metric``, ``value``)."""
        what = f"query {expr!r} at {_fmt_t(at)}"
        self.queries.append(f"{expr} @ {_fmt_t(at)}")
        data = self._call("/api/v1/query", what, {"query": expr, "time": _fmt_t(at), "timeout": f"{self.timeout:g}s"})
        return _result(self.name, what, data, "vector")

    def query_range(self, expr: str, start: float, end: float, step: float) -> list[dict[str, Any]]:
        """Range query; returns the matrix's elements (``metric``, ``values``)."""
        what = f"query_range {expr!r} over [{_fmt_t(start)}, {_fmt_t(end)}] step {step:g}s"
        self.queries.append(f"{expr} [{_fmt_t(start)}, {_fmt_t(end)}] step {step:g}s")
        data = self._call(
            "/api/v1/query_range",
            what,
            {
                "query": expr,
                "start": _fmt_t(start),
                "end": _fmt_t(end),
                "step": f"{step:g}",
                "timeout": f"{self.timeout:g}s",
            },
        )
        return _result(self.name, what, data, "matrix")

    def series(self, match: str, start: float | None = None, end: float | None = None) -> list[dict[str, str]]:
        """Label sets of the series matching ``match`` (anywhere in [start, end], default all time)."""
        what = f"series lookup {match!r}"
        form: dict[str, Any] = {"match[]": [match]}
        if start is not None:
            form["start"] = _fmt_t(start)
        if end is not None:
            form["end"] = _fmt_t(end)
        data = self._call("/api/v1/series", what, form)
        if not isinstance(data, list):
            raise InputError(self.name, what, f"expected a list of label sets, got {type(data).__name__}")
        return data

    def buildinfo(self) -> dict[str, Any]:
        data = self._call("/api/v1/status/buildinfo", "a build-info request", None)
        return data if isinstance(data, dict) else {}


#: Prometheus's API error types and result types: the only words of an answer a message repeats
ERROR_TYPES = ("timeout", "canceled", "execution", "bad_data", "internal", "unavailable", "not_found", "not_acceptable")
RESULT_TYPES = ("vector", "matrix", "scalar", "string")


def _content_type(ctype: str) -> str:
    """The answer's media type for a message (``application/json``), never anything a server chose freely."""
    t = ctype.split(";")[0].strip().lower()
    return (
        t
        if re.fullmatch(r"[a-z0-9.+-]{1,40}/[a-z0-9.+-]{1,60}", t)
        else "no content type"
        if not t
        else "a content type"
    )


def _result(source: str, what: str, data: Any, kind: str) -> list[dict[str, Any]]:
    if not isinstance(data, dict) or data.get("resultType") != kind or not isinstance(data.get("result"), list):
        got = data.get("resultType") if isinstance(data, dict) else None
        got = repr(got) if got in RESULT_TYPES else "another shape (not quoted)"
        raise InputError(source, what, f"expected a {kind} result, got {got}")
    key = "value" if kind == "vector" else "values"
    for i, el in enumerate(data["result"]):
        if not isinstance(el, dict) or not isinstance(el.get("metric"), dict) or key not in el:
            raise InputError(source, what, f"malformed {kind} element {i}: expected {{metric, {key}}} (not quoted)")
    return data["result"]


def _value(source: str, what: str, pair: Any) -> tuple[float, float]:
    try:
        t, v = pair
        return float(t), float(v)
    except (TypeError, ValueError):
        raise InputError(source, what, 'malformed sample, expected [time, "value"] (not quoted)') from None


# ---- windows: snapshots at t0 and t1 -----------------------------------------------------------


@dataclass(frozen=True)
class Reset:
    """A counter that went down inside the window (the engine restarted, most likely)."""

    name: str
    labels: LabelKey
    resets: int
    edge_delta: float | None  # after − before from the edge values
    increase: float | None  # the server's increase() over the window (reset-corrected, extrapolated)

    def describe(self) -> str:
        inc = f"{self.increase:g}" if self.increase is not None else "n/a"
        edge = f"{self.edge_delta:g}" if self.edge_delta is not None else "n/a"
        return (
            f"counter reset inside the window: {self.name}{_fmt_labels(self.labels)} went down {self.resets} time(s) "
            f"(engine restarted?); the edge delta {edge} is not this window's figure (increase() estimates {inc})"
        )


@dataclass
class PromWindow:
    """Engine counters of one time window, shaped like two capture files."""

    source: str
    matchers: dict[str, str]
    t0: float
    t1: float
    before: Snapshot
    after: Snapshot
    increases: dict[str, dict[LabelKey, float]] = field(default_factory=dict)
    resets: list[Reset] = field(default_factory=list)
    queries: list[str] = field(default_factory=list)

    def reset_of(
        self, name: str, labels: Mapping[str, str] | None = None, ref: MetricRef | None = None
    ) -> Reset | None:
        """The first reset of ``name`` whose labels include ``labels`` (and that ``ref`` reads)."""
        want = (labels or {}).items()
        for r in self.resets:
            if r.name == name and all(item in r.labels for item in want) and (ref is None or _selects(ref, r.labels)):
                return r
        return None

    def check_resets(self, profile: EngineProfile, quantities: Iterable[str]) -> None:
        """Raise ``phases.Excluded`` if a series of these quantities reset inside the window."""
        for q in quantities:
            ref = profile.ref(q)
            for name in sample_names(ref):
                r = self.reset_of(name, ref.label_dict, ref)
                if r is not None:
                    raise phases_mod.Excluded(r.describe())

    def split(
        self,
        profile: EngineProfile,
        client_total_s: float | None = None,
        first_event_s: float | None = None,
        labels: Mapping[str, str] | None = None,
        labels_key: str | None = None,
    ) -> phases_mod.PhaseSplit:
        """``phases.split`` of this window, excluding it first if a needed counter reset inside it."""
        self.check_resets(profile, phases_mod.NEEDED)
        return phases_mod.split(self.before, self.after, profile, client_total_s, first_event_s, labels, labels_key)


def _key(metric: Mapping[str, str], pinned: Mapping[str, str]) -> LabelKey:
    return tuple(sorted((k, v) for k, v in metric.items() if k != "__name__" and k not in pinned))


def _vector(
    client: PromClient, expr: str, at: float, pinned: Mapping[str, str], required: bool, hint: str
) -> dict[LabelKey, float]:
    what = f"query {expr!r} at {_fmt_t(at)}"
    out: dict[LabelKey, float] = {}
    for el in client.query(expr, at):
        key = _key(el["metric"], pinned)
        if key in out:
            raise InputError(client.name, what, f"two series with the same labels {_fmt_labels(key)}")
        out[key] = _value(client.name, what, el["value"])[1]
    if required and not out:
        raise InputError(client.name, what, f"returned no series; {hint}")
    return out


def fetch_window(
    url: str,
    t0: Time,
    t1: Time,
    matchers: Mapping[str, str],
    profile: EngineProfile,
    quantities: Iterable[str] = tuple(phases_mod.NEEDED),
    timeout: float = DEFAULT_TIMEOUT_S,
    client: PromClient | None = None,
) -> PromWindow:
    """Counter and histogram values of ``quantities`` at t0 and t1, as two Snapshots.

    Every series of every needed sample name must exist at both edges; a query that returns
    nothing raises InputError naming it. Counters also get ``resets()`` and ``increase()`` over the
    window, measured from the last scrape at or before t0 (see the module docstring).
    """
    t0, t1 = _ts(t0), _ts(t1)
    if not t1 > t0:
        raise InputError("<window>", "-", f"window end {_fmt_t(t1)} is not after its start {_fmt_t(t0)}")
    own = client is None
    client = client or PromClient(url, timeout)
    try:
        return _fetch_window(client, t0, t1, dict(matchers), profile, list(quantities))
    finally:
        if own:
            client.close()


def _fetch_window(
    client: PromClient, t0: float, t1: float, matchers: dict[str, str], profile: EngineProfile, quantities: list[str]
) -> PromWindow:
    first = len(client.queries)
    before = Snapshot(source=f"{client.name} @ {_fmt_t(t0)}")
    after = Snapshot(source=f"{client.name} @ {_fmt_t(t1)}")
    win = PromWindow(client.name, matchers, t0, t1, before, after)
    hint = (
        f"no series named so with labels {matchers} had a sample in the 5 minutes up to that time; "
        "check the job/instance/model matchers and that the server scraped the engine then"
    )
    done: set[str] = set()
    for q in quantities:
        ref = profile.ref(q)
        for snap in (before, after):
            snap.types[_family(ref)] = ref.kind
        for name in sample_names(ref):
            if name in done:  # one family can carry several quantities (tokens by type)
                continue
            done.add(name)
            sel = selector(name, matchers)
            before.values[name] = _vector(client, sel, t0, matchers, True, hint)
            after.values[name] = _vector(client, sel, t1, matchers, True, hint)
            if ref.kind == "gauge":
                continue
            # Range for resets()/increase(): from the scrape that gave the t0 value up to t1.
            stamps = _vector(client, f"timestamp({sel})", t0, matchers, True, hint)
            start = min(stamps.values())
            rng = max(1, math.ceil((t1 - start) * 1000) + 1)
            resets = _vector(client, f"resets({sel}[{rng}ms])", t1, matchers, False, hint)
            incs = _vector(client, f"increase({sel}[{rng}ms])", t1, matchers, False, hint)
            win.increases[name] = incs
            for key, n in sorted(resets.items()):
                b, a = before.values[name].get(key), after.values[name].get(key)
                went_down = b is not None and a is not None and a < b
                if n > 0 or went_down:
                    win.resets.append(
                        Reset(name, key, max(int(n), 1), None if b is None or a is None else a - b, incs.get(key))
                    )
    for q in quantities:  # the series a quantity selects by label (type="prompt") must be there too
        ref = profile.ref(q)
        if not ref.labels and ref.sum_label is None:
            continue
        for snap, at in ((before, t0), (after, t1)):
            if not any(_selects(ref, k) for k in snap.series(ref.name)):
                want = _fmt_labels(ref.labels) if ref.labels else "{}"
                if ref.sum_label is not None:
                    want += f" and {ref.sum_label} in {'/'.join(ref.sum_values)}"
                raise InputError(
                    client.name,
                    f"query {selector(ref.name, matchers)!r} at {_fmt_t(at)}",
                    f"has no series with {want} (needed for {q}); "
                    f"it returned {', '.join(_fmt_labels(k) for k in snap.series(ref.name)) or 'nothing'}",
                )
    win.queries = client.queries[first:]
    return win


# ---- gauges over time -------------------------------------------------------------------------

GAUGE_SCHEMA = {"quantity": "String", "metric": "String", "series": "String", "t": "Float64", "value": "Float64"}
RATE_QUANTITIES = ("prompt_tokens", "generation_tokens")


def fetch_gauges(
    url: str,
    t0: Time,
    t1: Time,
    matchers: Mapping[str, str],
    profile: EngineProfile,
    quantities: Iterable[str] | None = None,
    step: float | None = None,
    rate_window: float | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    client: PromClient | None = None,
):
    """Gauges (running, waiting, KV-cache usage …) and token rates over [t0, t1], one row per point.

    Columns: quantity, metric, series (the labels not pinned by the matchers, ``{k="v",…}``),
    t (Unix seconds), value. Token counters become ``<quantity>_rate`` rows, per second, from
    ``rate(x[rate_window])`` (default: 4 × step, at least 4 s — it must span two scrapes).
    The step is raised as needed to stay under the server's 11,000 points per series. Quantities
    the profile lacks are skipped; a quantity with no series in the window is skipped too (a chart
    of nothing) and, if every one is empty, InputError names the queries.
    """
    import polars as pl

    t0, t1 = _ts(t0), _ts(t1)
    if not t1 > t0:
        raise InputError("<window>", "-", f"window end {_fmt_t(t1)} is not after its start {_fmt_t(t0)}")
    st = choose_step(t0, t1, step)
    rw = rate_window if rate_window is not None else max(4 * st, 4.0)
    if quantities is None:
        quantities = [q for q, r in profile.quantities.items() if r.kind == "gauge"] + list(RATE_QUANTITIES)
    own = client is None
    client = client or PromClient(url, timeout)
    rows: list[dict[str, Any]] = []
    asked: list[str] = []
    try:
        for q in quantities:
            if not profile.has(q):
                continue
            ref = profile.ref(q)
            sel = selector(ref.name, matchers, ref.labels, _sum_regex(ref))
            if ref.kind == "gauge":
                expr, label = _summed(ref, sel), q
            elif ref.kind == "counter":  # rate per series first, then the sum (a reset stays per series)
                expr, label = _summed(ref, f"rate({sel}[{math.ceil(rw * 1000)}ms])"), f"{q}_rate"
            else:
                continue  # histograms are not charted as time series here
            asked.append(expr)
            what = f"query_range {expr!r}"
            for el in client.query_range(expr, t0, t1, st):
                series = _fmt_labels(_key(el["metric"], matchers))
                for pair in el["values"]:
                    t, v = _value(client.name, what, pair)
                    rows.append({"quantity": label, "metric": ref.name, "series": series, "t": t, "value": v})
    finally:
        if own:
            client.close()
    if asked and not rows:
        raise InputError(
            client.name,
            "; ".join(asked),
            f"returned no series over [{_fmt_t(t0)}, {_fmt_t(t1)}]; check the matchers {dict(matchers)}",
        )
    schema = {k: getattr(pl, v) for k, v in GAUGE_SCHEMA.items()}
    return pl.DataFrame(rows, schema=schema).sort(["quantity", "series", "t"])


# ---- validate ---------------------------------------------------------------------------------


def check_source(
    url: str,
    matchers: Mapping[str, str],
    profile: EngineProfile,
    quantities: Iterable[str] = tuple(phases_mod.NEEDED),
    start: Time | None = None,
    end: Time | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    client: PromClient | None = None,
) -> list[str]:
    """Problems that would stop benchbook from using this source; an empty list means usable.

    Checks that the server answers and that every sample name the quantities need has at least one
    series with these labels (in [start, end] if given, else anywhere in the server's storage).
    """
    problems: list[str] = []
    own = client is None
    try:
        client = client or PromClient(url, timeout)
    except InputError as e:
        return [str(e)]
    try:
        client.buildinfo()
        s = _ts(start) if start is not None else None
        e = _ts(end) if end is not None else None
        for q in quantities:
            if not profile.has(q):
                problems.append(f"profile {profile.name}: {q}: this engine profile has no metric for {q!r}")
                continue
            ref = profile.ref(q)
            for name in sample_names(ref):
                sel = selector(name, matchers, ref.labels if ref.kind != "histogram" else (), _sum_regex(ref))
                if not client.series(sel, s, e):
                    problems.append(f"{client.name}: {sel}: no such series on the server (needed for {q})")
    except (SourceError, InputError) as err:
        problems.append(str(err))
    finally:
        if own:
            client.close()
    return problems


# ---- freezing a window into capture files -----------------------------------------------------


def _bucket_order(item: tuple[LabelKey, float]) -> tuple:
    """Series in label order, except that buckets of one series go by their ``le`` as a number."""
    key = item[0]
    rest = tuple(kv for kv in key if kv[0] != "le")
    le = dict(key).get("le")
    try:
        bound = float(le) if le is not None else -math.inf
    except ValueError:
        bound = math.inf
    return (rest, bound, key)


def to_exposition(snap: Snapshot) -> str:
    """A Snapshot as Prometheus text exposition (0.0.4), written by prometheus_client.

    A Prometheus server keeps data for its retention time only (15 days by default); writing the
    fetched windows next to the campaign as ordinary capture files keeps the report reproducible
    from files alone. ``prometheus.parse`` of the result gives back the same values.
    """
    from prometheus_client import generate_latest
    from prometheus_client.metrics_core import Metric
    from prometheus_client.registry import CollectorRegistry

    families: dict[str, Metric] = {}
    order: list[str] = []
    for name in sorted(snap.values):
        fam_name, kind = name, "untyped"
        for fam, k in snap.types.items():
            if k == "histogram" and name in (fam + s for s in HISTOGRAM_SUFFIXES):
                fam_name, kind = fam, k
            elif k in ("counter", "gauge") and name in (fam, fam + "_total"):
                fam_name, kind = fam, k
        if fam_name not in families:
            families[fam_name] = Metric(fam_name, f"{fam_name} from {snap.source}", kind)
            order.append(fam_name)
        for key, v in sorted(snap.values[name].items(), key=_bucket_order):
            families[fam_name].add_sample(name, dict(key), v)

    class _Frozen:
        def collect(self):
            return [families[f] for f in order]

    reg = CollectorRegistry(auto_describe=False)
    reg.register(_Frozen())
    return generate_latest(reg).decode("utf-8")


def write_captures(win: PromWindow, before_path, after_path) -> None:
    """Write ``win.before``/``win.after`` as capture files (atomically: temp file, then rename)."""
    import os
    from pathlib import Path

    for snap, path in ((win.before, Path(before_path)), (win.after, Path(after_path))):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(f"# benchbook: {snap.source}\n" + to_exposition(snap), encoding="utf-8")
        os.replace(tmp, path)
