"""Checks benchbook adds on top of ``prometheus_client``'s text parser.

``prometheus_client``'s 0.0.4 text parser is lenient: it accepts input that the reference (Go)
parser and the OpenMetrics rules reject. Most of the leniency cannot change a number benchbook
computes, but some of it can, silently:

* a **duplicate series** (same name and labels twice) overwrites the first value;
* a family split in two (metadata after its samples, repeated ``# TYPE``/``# HELP``) makes the
  type of the family ambiguous;
* a histogram whose buckets are **not cumulative**, whose ``+Inf`` bucket **differs from
  ``_count``**, or whose ``le`` is not a number is not a histogram any more — its ``_sum`` and
  ``_count`` (the quantities the phase split reads) cannot be trusted;
* a **negative counter** (or a negative histogram ``_count``/``_sum``) is not a counter: a delta
  taken from it is meaningless;
* a summary ``quantile`` that is not a number in [0, 1];
* a metric name the text format does not allow;
* a file whose **last line has no line feed** (the format requires one) is what a capture cut off
  mid-write looks like: ``…_count 12`` may really have been ``…_count 127``;
* a sample line with **tokens after its timestamp** (``x 3.14 2 3``): the reference parser says
  "spurious string after timestamp"; prometheus_client keeps the value and takes the last token as
  the timestamp, so two samples glued together by a lost line feed would silently lose one.

These checks run on the lines ``prometheus.parse`` was asked for (all families on a full parse,
only the consumed lines on the narrow path), after ``prometheus_client`` has parsed them: no values
are parsed here. The phase split's narrow path reads a histogram's ``_sum`` and ``_count`` but not
its buckets, so the bucket rules (cumulative, ``+Inf`` present and equal to ``_count``, ``le`` a
number, counts not negative) run where the buckets are read: a full parse and ``benchbook validate
CAMPAIGN`` (whole families). Without buckets a negative ``_sum`` is still rejected (only buckets
below 0 could make it valid, and a latency histogram has none). The line of an offending sample is found by re-parsing candidate lines with
``prometheus_client`` itself. ``tests/test_conformance.py`` lists, case by case, where the
reference parsers and ``prometheus_client`` disagree and which of these checks closes the gap.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from pathlib import Path

from benchbook.errors import InputError

_HIST_TYPES = ("histogram", "gaugehistogram")


def check_trailing_tokens(body: str, text: str, source: str | Path) -> None:
    """Reject a 0.0.4 sample line with more than value and timestamp after its name and labels.

    ``body`` holds the lines parsed (all of ``text``, or the narrow path's kept lines); the line
    number is found in ``text``. The label set ends at the line's last ``}`` (a value or timestamp
    holds no brace), so the tokens after it are the value, the timestamp, and nothing else."""
    for line in body.split("\n"):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        close = stripped.rfind("}")
        tail = stripped[close + 1 :].split() if close >= 0 else stripped.split()[1:]
        if len(tail) <= 2:
            continue
        at = text.find(line)
        line_no = text.count("\n", 0, at) + 1 if at >= 0 else None
        raise InputError(
            source,
            f"line {line_no}" if line_no else "-",
            f"spurious string after timestamp in {stripped[:120]!r} (as promtool says): "
            f"{len(tail) - 2} token(s) after the value and timestamp — two samples glued by a lost line feed?",
        )


def check_unterminated(text: str, source: str | Path, wanted=None) -> None:
    """Reject text whose last line is a sample line without its line feed (truncated capture).

    ``wanted(line) -> bool`` restricts the check to lines of consumed families. The OpenMetrics
    ``# EOF`` line may legitimately end the text without a line feed.
    """
    if not text or text.endswith("\n"):
        return
    last = text.rsplit("\n", 1)[-1]
    stripped = last.strip()
    if not stripped or stripped.startswith("#"):
        return
    if wanted is not None and not wanted(last):
        return
    line_no = text.count("\n") + 1
    raise InputError(
        source,
        f"line {line_no}",
        f"last line {last[:120]!r} has no line feed: the capture looks truncated (its value may be cut short)",
    )


def check_metadata(text: str, source: str | Path, wanted=None) -> None:
    """Reject a repeated ``# TYPE`` or ``# HELP`` line for one family (0.0.4 text)."""
    seen: dict[tuple[str, str], int] = {}
    for i, line in enumerate(text.split("\n"), 1):
        if not line.startswith("#"):
            continue
        parts = line.split(None, 3)
        # `# HELP name` with no text is a plain comment for the reference parser.
        if len(parts) < 4 or parts[1] not in ("TYPE", "HELP"):
            continue
        if wanted is not None and not wanted(line):
            continue
        key = (parts[1], parts[2])
        if key in seen:
            raise InputError(
                source, f"line {i}", f"second # {parts[1]} line for {parts[2]} (first at line {seen[key]})"
            )
        seen[key] = i


def check_metadata_lines(lines: Iterable[tuple[int, str]], text: str, source: str | Path) -> None:
    """``check_metadata`` on the kept lines of the narrow path: ``(offset in text, line)`` pairs.

    Same rule and message; the line number is counted in ``text`` only when a line is rejected.
    """
    seen: dict[tuple[str, str], int] = {}
    for off, line in lines:
        if not line.startswith("#"):
            continue
        parts = line.split(None, 3)
        if len(parts) < 4 or parts[1] not in ("TYPE", "HELP"):
            continue
        key = (parts[1], parts[2])
        if key in seen:
            first = text.count("\n", 0, seen[key]) + 1
            raise InputError(
                source,
                f"line {text.count(chr(10), 0, off) + 1}",
                f"second # {parts[1]} line for {parts[2]} (first at line {first})",
            )
        seen[key] = off


def check_families(families: Iterable, text: str, source: str | Path, openmetrics: bool = False) -> None:
    """Semantic checks on parsed families; raises InputError naming the line of the offence."""
    from prometheus_client.validation import METRIC_NAME_RE

    families = list(families)
    by_name: dict[str, list] = {}
    for fam in families:
        for s in fam.samples:
            by_name.setdefault(s.name, []).append(s)
    declared_sample: dict = {}
    declared: dict[str, str] = {}  # family -> type, once it has had samples
    seen_series: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    valid_names: set[str] = set()
    for fam in families:
        # prometheus_client starts a new family when samples of one family resume after another
        # family's lines; the reference parser merges them, so that alone is no error. A family
        # that comes back *with a declared type* had its # TYPE after its samples.
        if fam.name in declared and fam.type not in ("unknown", "untyped"):
            raise InputError(
                source,
                _type_line(text, fam.name) or _where(text, declared_sample.get(fam.name), openmetrics),
                f"# TYPE {fam.type} for {fam.name} comes after samples of {fam.name} "
                f"(first at {_where(text, declared_sample.get(fam.name), openmetrics)})",
            )
        if fam.samples:
            declared.setdefault(fam.name, fam.type)
            declared_sample.setdefault(fam.name, fam.samples[0])
        for s in fam.samples:
            if s.name not in valid_names:
                if not METRIC_NAME_RE.match(s.name):
                    raise InputError(source, _where(text, s, openmetrics), f"invalid metric name {s.name!r}")
                valid_names.add(s.name)
            lab = s.labels
            key = (s.name, tuple(sorted(lab.items())) if len(lab) > 1 else tuple(lab.items()))
            if key in seen_series:
                raise InputError(
                    source,
                    _where(text, s, openmetrics, nth=2),
                    f"duplicate series {_describe(s)}: the same name and labels appear twice, "
                    "so it is not clear which value is the real one",
                )
            seen_series.add(key)
        if fam.type == "counter":
            for s in fam.samples:
                if s.name.endswith("_created"):
                    continue
                if s.value < 0:  # NaN is accepted by the reference parser; delta() rejects it where used
                    raise InputError(
                        source,
                        _where(text, s, openmetrics),
                        f"counter {_describe(s)} has value {s.value:g}; a counter is never negative",
                    )
        elif fam.type in _HIST_TYPES:
            _check_histogram(fam, by_name, text, source, openmetrics)
        elif fam.type == "summary":
            for s in fam.samples:
                if "quantile" in s.labels:
                    # The reference 0.0.4 parser accepts any number here (even -12.34);
                    # OpenMetrics' [0, 1] rule is enforced by its own parser.
                    if _as_float(s.labels["quantile"]) is None:
                        raise InputError(
                            source,
                            _where(text, s, openmetrics),
                            f"summary {_describe(s)}: quantile {s.labels['quantile']!r} is not a number",
                        )
                elif s.name.endswith("_count") and (math.isnan(s.value) or s.value < 0):
                    raise InputError(
                        source, _where(text, s, openmetrics), f"summary {_describe(s)} has a negative count {s.value:g}"
                    )


def _check_histogram(fam, by_name: dict[str, list], text: str, source, openmetrics: bool) -> None:
    groups: dict[tuple, dict] = {}
    base = fam.name
    # Samples of the family wherever they are (prometheus_client splits a family whose lines
    # resume after another family's; their names still say where they belong).
    names = [base + sfx for sfx in ("_bucket", "_gbucket", "_count", "_gcount", "_sum", "_gsum")]
    bucket_names = (base + "_bucket", base + "_gbucket")
    for s in (x for n in names for x in by_name.get(n, ())):
        lab = s.labels
        if len(lab) == 0 or (len(lab) == 1 and "le" in lab):
            rest = ()
        else:
            rest = tuple(sorted((k, v) for k, v in lab.items() if k != "le"))
        g = groups.get(rest)
        if g is None:
            g = groups[rest] = {"buckets": [], "count": None, "sum": None}
        if s.name in bucket_names:
            le = _as_float(s.labels.get("le"))
            if le is None or math.isnan(le):
                raise InputError(
                    source,
                    _where(text, s, openmetrics),
                    f"histogram bucket {_describe(s)}: le {s.labels.get('le')!r} is not a number",
                )
            g["buckets"].append((le, s))
        elif s.name in (base + "_count", base + "_gcount"):
            g["count"] = s
        elif s.name in (base + "_sum", base + "_gsum"):
            g["sum"] = s
    for g in groups.values():
        for s in [b for _, b in g["buckets"]] + ([g["count"]] if g["count"] else []):
            if math.isnan(s.value) or s.value < 0:
                raise InputError(
                    source,
                    _where(text, s, openmetrics),
                    f"histogram {_describe(s)} has value {s.value:g}; bucket counts and _count are never negative",
                )
        buckets = sorted(g["buckets"], key=lambda b: b[0])
        negative_le = any(le < 0 for le, _ in buckets)
        if g["sum"] is not None and not negative_le and (math.isnan(g["sum"].value) or g["sum"].value < 0):
            raise InputError(
                source,
                _where(text, g["sum"], openmetrics),
                f"histogram {_describe(g['sum'])} is {g['sum'].value:g} although no bucket is below 0",
            )
        prev = None
        for le, s in buckets:
            if prev is not None and s.value < prev[1].value:
                raise InputError(
                    source,
                    _where(text, s, openmetrics),
                    f"histogram buckets not cumulative: {_describe(s)} = {s.value:g} is below "
                    f"le={prev[1].labels.get('le')!r} = {prev[1].value:g}",
                )
            prev = (le, s)
        if not buckets:
            continue
        top_le, top = buckets[-1]
        if not math.isinf(top_le):
            raise InputError(
                source,
                _where(text, top, openmetrics),
                f'histogram {base}{_fmt(dict(_rest(top)))} has no le="+Inf" bucket',
            )
        if g["count"] is not None and g["count"].value != top.value:
            raise InputError(
                source,
                _where(text, g["count"], openmetrics),
                f"histogram {_describe(g['count'])} = {g['count'].value:g} but its +Inf bucket is {top.value:g}; "
                "they must be equal",
            )


def _rest(s) -> list[tuple[str, str]]:
    return sorted((k, v) for k, v in s.labels.items() if k != "le")


def _as_float(v: str | None) -> float | None:
    if v is None:
        return None
    try:
        return float(v)
    except ValueError:
        return None


def _fmt(labels: Mapping[str, str]) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"


def _describe(s) -> str:
    return f"{s.name}{_fmt(s.labels)}"


def _where(text: str, sample, openmetrics: bool, nth: int = 1) -> str:
    """``line N`` of the nth line holding this sample (found by re-parsing candidate lines)."""
    if sample is None:
        return "-"
    n = 0
    for i, line in enumerate(text.split("\n"), 1):
        if line.startswith("#") or not line.startswith(sample.name):
            continue
        if _line_is(line, sample, openmetrics):
            n += 1
            if n == nth:
                return f"line {i}"
    return _describe(sample)


def _line_is(line: str, sample, openmetrics: bool) -> bool:
    try:
        if openmetrics:
            from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse

            fams = list(parse(line + "\n# EOF\n"))
        else:
            from prometheus_client.parser import text_string_to_metric_families as parse

            fams = list(parse(line + "\n"))
    except Exception:  # noqa: BLE001 - a line that does not parse alone is not the one we look for
        return False
    return any(s.name == sample.name and s.labels == sample.labels for f in fams for s in f.samples)


def _type_line(text: str, name: str) -> str | None:
    """``line N`` of the last ``# TYPE name …`` line."""
    found = None
    for i, line in enumerate(text.split("\n"), 1):
        if line.startswith("#"):
            parts = line.split(None, 3)
            if len(parts) >= 3 and parts[1] == "TYPE" and parts[2] == name:
                found = f"line {i}"
    return found
