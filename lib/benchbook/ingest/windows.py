"""When a load point ran, in Unix time: the window energy, memory and the GPU's samples are read over.

Sources, first found wins (docs/checks.md, "Windows"):

1. **the runner's markers** — ``events.jsonl`` beside the run: ``{"event": "bench_<point>", "t_start",
   "t_end"}`` (what the H200 runner and every ``benchbook capture`` command write; ``bench_<point>/<step>``
   for a capture's steps), a ``{"event": "<name>", "t_start", "t_end"}`` line, or a pair of
   ``{"event": "<name>_start", "t"}`` / ``{"event": "<name>_end", "t"}`` lines;
2. **the capture's own times** — ``capture.json``'s ``started_at``/``ended_at`` (``capture run``: the
   command's span), else the first and last scrape of the point's scrape series (``{"t_start", "t_end",
   "text"}`` lines taken during the point: its span encloses the point, up to a scrape interval wider);
3. **the result file** — vLLM bench serve's ``date`` (``%Y%m%d-%H%M%S``, written when the run ended, to
   the second, in the host's local time, read as UTC as nvidia-smi's timestamps are) less its
   ``duration``: good to about a second.

A source that gives no window (no such marker, no time) passes to the next; none gives None. A marker's
or capture's window that also spans a tool's start-up is narrowed to the result file's own span when
that lies inside it (:func:`narrowed`).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchbook.errors import InputError


@dataclass(frozen=True)
class Window:
    t0: float  # Unix seconds
    t1: float
    source: str  # where it came from, in words ("events.jsonl: bench_conc8 t_start → t_end")

    @property
    def started_at(self) -> str:
        return iso(self.t0)

    @property
    def ended_at(self) -> str:
        return iso(self.t1)


def iso(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).isoformat().replace("+00:00", "Z")


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def event_windows(path: Path) -> dict[str, Window]:
    """Label -> window of every marker in an events file (module docstring, source 1): ``bench_<label>``
    and ``<label>`` lines with ``t_start``/``t_end``, ``<label>_start``/``<label>_end`` pairs with ``t``.
    A line that is not an object with an event name is refused naming the file and the line."""
    from benchbook.jsonfile import json_lines

    out: dict[str, Window] = {}
    starts: dict[str, float] = {}
    for n, ev in json_lines(path, "events file"):
        if not isinstance(ev, dict) or not isinstance(ev.get("event"), str):
            raise InputError(path, f"line {n}", "expected an object with an event name")
        name = ev["event"]
        if _num(ev.get("t_start")) and _num(ev.get("t_end")) and ev["t_end"] > ev["t_start"]:
            label = name.removeprefix("bench_")
            out.setdefault(
                label, Window(float(ev["t_start"]), float(ev["t_end"]), f"{path.name}: {name} t_start → t_end")
            )
        elif _num(ev.get("t")):
            m = re.match(r"^(.+)_(start|end)$", name)
            if not m:
                continue
            label, side = m.group(1).removeprefix("bench_"), m.group(2)
            if side == "start":
                starts[label] = float(ev["t"])
            elif label in starts and float(ev["t"]) > starts[label]:
                out.setdefault(
                    label, Window(starts.pop(label), float(ev["t"]), f"{path.name}: {label}_start → {label}_end")
                )
    return out


def marker_for(events: dict[str, Window], *names: str) -> Window | None:
    """The marker of a point, by its name (``conc8``) or its result file's stem (``bench_conc8``)."""
    for n in names:
        for key in (n, n.removeprefix("bench_")):
            if key in events:
                return events[key]
    return None


def capture_window(cap: Any, where: str) -> Window | None:
    """``capture.json``'s ``started_at`` → ``ended_at`` (source 2)."""
    if not isinstance(cap, dict):
        return None
    t0, t1 = unix(cap.get("started_at")), unix(cap.get("ended_at"))
    if t0 is None or t1 is None or t1 <= t0:
        return None
    return Window(t0, t1, f"{where}: started_at → ended_at")


def series_window(paths: list[Path]) -> Window | None:
    """The first scrape's start to the last scrape's end of a point's scrape series (source 2)."""
    from benchbook.jsonfile import json_lines

    lo = hi = None
    for p in paths:
        for _n, rec in json_lines(p, "scrape series"):
            if not isinstance(rec, dict):
                continue
            a, b = rec.get("t_start", rec.get("t")), rec.get("t_end", rec.get("t"))
            if _num(a) and _num(b):
                lo = float(a) if lo is None else min(lo, float(a))
                hi = float(b) if hi is None else max(hi, float(b))
    if lo is None or hi is None or hi <= lo:
        return None
    names = ", ".join(p.name for p in paths)
    return Window(lo, hi, f"{names}: first scrape's t_start → last scrape's t_end")


def result_window(date: Any, duration_s: Any, where: str) -> Window | None:
    """vLLM bench serve's ``date`` less its ``duration`` (source 3; ``date`` read as UTC)."""
    if not isinstance(date, str) or not _num(duration_s) or duration_s <= 0:
        return None
    m = re.match(r"^(\d{8})-(\d{6})$", date.strip())
    if not m:
        return None
    t = dt.datetime.strptime(m.group(1) + m.group(2), "%Y%m%d%H%M%S").replace(tzinfo=dt.timezone.utc).timestamp()
    return Window(
        t - float(duration_s),
        t,
        f"{where}: date {date} (to the second, local time read as UTC) less duration {float(duration_s):.3f} s",
    )


def unix(text: Any) -> float | None:
    """An ISO 8601 time as Unix seconds (UTC where it names no zone); None for anything else."""
    if not isinstance(text, str):
        return None
    try:
        t = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (t if t.tzinfo else t.replace(tzinfo=dt.timezone.utc)).timestamp()


def point_window(
    names: tuple[str, ...],
    *,
    events: dict[str, Window] | None = None,
    capture: Any = None,
    capture_where: str = "capture.json",
    series: list[Path] = (),
    results: Any = (),
) -> Window | None:
    """A load point's window from the first source that has one (module docstring), narrowed to the
    result file's own span where that lies inside it (:func:`narrowed`). ``results``: the point's
    benchmark runs (``formats.BenchmarkRun``: ``config["date"]``, ``summary["duration_s"]``), or a
    function returning them."""
    w = marker_for(events or {}, *names)
    if w is None:
        w = capture_window(capture, capture_where)
    if w is None and series:
        w = series_window(list(series))
    runs = results() if callable(results) else results
    rw = None
    if len(runs) == 1:
        b = runs[0]
        rw = result_window(b.config.get("date"), b.summary.get("duration_s"), Path(str(b.source)).name)
    if w is None:
        return rw
    return narrowed(w, rw)


def narrowed(w: Window, rw: Window | None) -> Window:
    """A marker's or capture's window narrowed to the load itself: a ``capture run`` around ``vllm bench
    serve`` spans the tool's start-up (tokenizer, dataset, warm-up) as well, 27.3 s for a 5.1-s run on
    the H200 campaign, and energy over it counts idle seconds as the load's. When the result file's own
    window (its ``date`` less ``duration``, to the second) lies inside ``w``, the window is the result's
    span, widened by the second ``date`` truncates, within ``w``; otherwise ``w`` as it is (a result
    window outside the marker is a clock or time-zone disagreement, not a narrower truth)."""
    if rw is None or rw.t1 - rw.t0 >= 0.9 * (w.t1 - w.t0) or rw.t0 < w.t0 - 1.0 or rw.t1 > w.t1 + 1.0:
        return w
    # date is truncated to the second: the end lies in [date, date + 1)
    t0, t1 = max(rw.t0, w.t0), min(rw.t1 + 1.0, w.t1)
    return Window(t0, t1, f"{rw.source}, up to 1 s later for the truncated date, inside {w.source}")
