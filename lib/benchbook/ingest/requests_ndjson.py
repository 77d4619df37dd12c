"""``runs/<id>/requests.ndjson``: the whole-request records of a run at scale (data/README.md).

One JSON object per line: the fields of a ``requests.json`` record plus ``round`` (repetition of
the harness protocol, 0-based; a group is ``(round, scenario, n)``), optional ``ttft`` (seconds
from ``start`` to the first token) and optional ``itl`` (inter-token latencies, seconds).

The file is read by ``polars.scan_ndjson`` with an explicit schema, in one query with the checks
(vectorised expressions over the whole table, no Python loop per record) and the derived columns;
missing fields come from the columns' null counts. Only when a check fails is the file scanned
line by line, to name the first bad record as ``line N``; the lines are counted (to check that
row k is line k + 1, polars skipping blank lines) only when some record is excluded. Records that are valid input but
unusable (end before or equal to start; fewer completion tokens than the budget outside warm-up)
are *marked*, not removed: the table keeps them with ``excluded = true`` and the exclusions list
says which line and why, so a caller that needs only usable rows filters them out (cheaply, on the
columns it reads) and nothing disappears silently.
"""

from __future__ import annotations

import functools
from pathlib import Path

from benchbook.errors import InputError
from benchbook.jsonfile import MAX_FILE_BYTES, control_chars, open_regular
from benchbook.metrics.phases import MIN_DURATION_S

REQUIRED = ("round", "scenario", "n", "index", "prompt_class", "start", "end", "prompt_tokens",
            "completion_tokens", "finish_reason")  # fmt: skip
SCENARIOS = ("warmup", "single", "ladder", "interleave")


def schema(with_itl: bool):
    import polars as pl

    s = {
        "round": pl.Int64,
        "scenario": pl.String,
        "n": pl.Int64,
        "index": pl.Int64,
        "prompt_class": pl.String,
        "start": pl.Float64,
        "end": pl.Float64,
        "prompt_tokens": pl.Int64,
        "completion_tokens": pl.Int64,
        "finish_reason": pl.String,
        "stream": pl.Boolean,
        "ttft": pl.Float64,
    }
    if with_itl:
        s["itl"] = pl.List(pl.Float64)
    return s


def _bad_line(path: Path, reason_for):
    """Scan the file line by line (slow path, only after a failure) for the first bad record."""
    import orjson

    with open_regular(path, "request log") as f:
        for no, line in enumerate(f, 1):
            if not line.strip():
                return InputError(path, f"line {no}", "blank line: every line must hold one request record")
            try:
                rec = orjson.loads(line)
            except orjson.JSONDecodeError as e:
                return InputError(path, f"line {no}", f"not valid JSON: {e}")
            reason = reason_for(rec)
            if reason:
                return InputError(path, f"line {no}", reason)
    return None


def read_requests_ndjson(
    path: str | Path, generation_tokens: int | None = None, prompt_classes=None, itl: bool | None = None
):
    """Read ``requests.ndjson`` into a polars DataFrame, checked; returns ``(table, exclusions)``.

    ``table`` has one row per line, in file order: the record fields (``stream`` and ``ttft`` null
    where absent), ``latency`` (``end − start``), ``excluded`` (bool) and, when read, ``itl``.
    ``exclusions`` are ``(f"line {N}", reason)`` for the rows marked ``excluded``. Bad input raises
    InputError naming the file, ``line N`` and the reason. ``itl``: read the ``itl`` lists (default:
    if the first line has one; ``False`` skips them, which is cheaper).
    """
    import polars as pl

    path = Path(path)
    # a regular file within the size limit before polars reads it; nesting is bounded by polars' own
    # parser (a deeper line is "DepthLimitExceeded", then named by line below), and fields outside
    # the schema are dropped
    with open_regular(path, "request log", MAX_FILE_BYTES) as f:
        if itl is None:
            itl = b'"itl"' in f.readline()
    classes = set(prompt_classes or ())
    budget = generation_tokens or 0
    bad, unusable = _expressions(tuple(sorted(classes)), budget)
    # One query: the read, the checks and the derived columns in a single collect (every collect
    # has a fixed cost, a visible share of a 10k-record read). ``_bad`` is dropped below (no copy).
    try:
        df = (
            pl.scan_ndjson(path, schema=schema(itl))
            .with_columns(
                latency=pl.col("end") - pl.col("start"),
                excluded=unusable,
                _bad=bad,
            )
            .collect()
        )
    except (pl.exceptions.ComputeError, pl.exceptions.PolarsError) as e:
        err = _bad_line(path, lambda rec: _record_problem(rec, classes, itl))
        if err is not None:
            raise err from None
        raise InputError(path, "-", f"not valid NDJSON request records: {str(e).splitlines()[0]}") from None
    if df.height == 0:
        raise InputError(path, "-", "no request records")
    # Series and numpy calls from here on: no further query (DataFrame.select/drop and
    # Series.arg_true would each be one).
    col = df.get_column
    if df.drop_in_place("_bad").any() or any(col(c).null_count() for c in REQUIRED):
        err = _bad_line(path, lambda rec: _record_problem(rec, classes, itl))
        raise err or InputError(path, "-", "invalid request record")
    exclusions = []
    excluded = col("excluded")
    if excluded.any():
        import numpy as np

        # polars skips blank lines, so row k is line k + 1 only in a file without them; exclusions
        # name lines, so that is checked (one pass over the bytes, only when there are exclusions)
        if _line_count(path) != df.height:
            err = _bad_line(path, lambda rec: _record_problem(rec, classes, itl))
            raise err or InputError(path, "-", "blank lines between request records")
        idx = np.flatnonzero(excluded.to_numpy())
        starts, ends, tokens = (col(c).to_numpy()[idx].tolist() for c in ("start", "end", "completion_tokens"))
        reasons = col("finish_reason")
        for k, s, e, c in zip(idx.tolist(), starts, ends, tokens):
            if e < s:
                why = f"end {e} precedes start {s}"
            elif e == s:
                why = f"end {e} equals start {s}: zero latency"
            elif e - s < MIN_DURATION_S:
                why = f"latency {e - s:g} s (start {s}, end {e}) is below {MIN_DURATION_S:g} s: no rate can be taken from it"
            else:
                why = f"{c} of {budget} tokens generated (finish_reason {reasons[k]!r}): did not reach its budget"
            exclusions.append((f"line {k + 1}", why))
    return df, exclusions


@functools.lru_cache(maxsize=16)
def _expressions(classes: tuple[str, ...], budget: int):
    """The value checks as one boolean expression (any failed) and the ``unusable`` expression.

    Built once per (prompt classes, budget): building them is a visible share of a 10k-record read.
    Missing fields are not in here: the reader takes them from the columns' null counts (kept by
    polars, no pass over the rows).
    """
    import polars as pl

    checks = [
        ~pl.col("scenario").is_in(SCENARIOS),
        pl.col("n") < 1,
        pl.col("index") < 0,
        pl.col("round") < 0,
        pl.col("prompt_tokens") < 0,
        pl.col("completion_tokens") < 0,
    ]
    if classes:
        checks.append(~pl.col("prompt_class").is_in(list(classes)))
    checks.extend(pl.col(c).str.contains(r"[\x00-\x1f\x7f]") for c in ("prompt_class", "finish_reason"))
    unusable = (
        (pl.col("end") - pl.col("start") < MIN_DURATION_S)
        | (pl.col("end") <= pl.col("start"))
        | ((pl.col("completion_tokens") < budget) & (pl.col("scenario") != "warmup"))
    )
    return pl.any_horizontal(checks), unusable


def _line_count(path: Path) -> int:
    """Lines in the file (a last line without its line feed counts).

    Read in 256 KiB pieces into one buffer, line feeds counted by numpy (about 5x ``bytes.count``).
    """
    import numpy as np

    size = 1 << 18
    buf = bytearray(size)
    view, eq = np.frombuffer(buf, np.uint8), np.empty(size, bool)
    n, last = 0, 10
    with open_regular(path, "request log") as f:
        while k := f.readinto(buf):
            np.equal(view[:k], 10, out=eq[:k])
            n += int(np.count_nonzero(eq[:k]))
            last = buf[k - 1]
    return n + (last != 10)


def _record_problem(rec, classes=frozenset(), itl: bool = True) -> str | None:
    if not isinstance(rec, dict):
        return "a request record must be a JSON object"
    for k in REQUIRED:
        if rec.get(k) is None:
            return f"missing field {k!r}"
    if rec["scenario"] not in SCENARIOS:
        return f"scenario {rec['scenario']!r} is not one of {', '.join(SCENARIOS)}"
    for k, lo in (("round", 0), ("n", 1), ("index", 0), ("prompt_tokens", 0), ("completion_tokens", 0)):
        if not isinstance(rec[k], int) or isinstance(rec[k], bool) or rec[k] < lo:
            return f"{k} must be an integer >= {lo} (got {rec[k]!r})"
    for k in ("start", "end", "ttft"):
        if k in rec and rec[k] is not None and (isinstance(rec[k], bool) or not isinstance(rec[k], (int, float))):
            return f"{k} must be a number (got {rec[k]!r})"
    for k in ("scenario", "prompt_class", "finish_reason"):
        if not isinstance(rec[k], str):
            return f"{k} must be a string (got {rec[k]!r})"
        if control_chars(rec[k]) is not None:
            return f"{k} contains the control character {control_chars(rec[k])}"
    if "stream" in rec and rec["stream"] is not None and not isinstance(rec["stream"], bool):
        return f"stream must be true or false (got {rec['stream']!r})"
    if classes and rec["prompt_class"] not in classes:
        return f"unknown prompt class {rec['prompt_class']!r}"
    if (
        itl
        and "itl" in rec
        and not (
            isinstance(rec["itl"], list)
            and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in rec["itl"])
        )
    ):
        return "itl must be a list of numbers"
    return None
