"""Prometheus text exposition: parsing snapshots and taking deltas between two of them.

Parsing is done by ``prometheus_client``'s maintained parser. For speed, a snapshot can be parsed
for a few sample names only: the other lines are skipped *before* the parser sees them. Names are
prefixes of sample names, so a consumer can ask for exactly the samples it reads: the phase split
asks for a histogram's ``_sum`` and ``_count`` (with the family's ``# TYPE``/``# HELP`` lines) and
never for its ``_bucket`` lines, which are most of a snapshot's kept lines otherwise. Every line the
narrow path keeps contains one of the wanted names (or, for a metadata line, the family of one), so
the kept lines are found with ``str.find`` (no per-line work on the skipped lines, no regular
expressions) and then each candidate line gets the same string-prefix test as a line-by-line scan;
the kept lines are still parsed by ``prometheus_client``, and benchbook's extra checks
(``exposition_checks``) run on those kept lines only — so a rule about lines that were not kept
(bucket validity: cumulative, ``+Inf`` equal to ``_count``, ``+Inf`` present) is checked where the
buckets are read: a full parse (``benchbook validate FILE``, ``enginemetrics``) and ``benchbook
validate CAMPAIGN``, which parses each snapshot's whole consumed families
(``Campaign.check_snapshots``). ``tests/test_prometheus.py`` and ``tests/test_prometheus_narrow.py``
check the narrow path against a full parse.
"""

from __future__ import annotations

import functools
import math
import re
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from benchbook.errors import InputError

LabelKey = tuple[tuple[str, str], ...]


def _label_key(labels: Mapping[str, str]) -> LabelKey:
    return tuple(sorted(labels.items()))


@dataclass
class Snapshot:
    """One scrape: sample values keyed by sample name and label set, plus family types."""

    source: str
    values: dict[str, dict[LabelKey, float]] = field(default_factory=dict)
    types: dict[str, str] = field(default_factory=dict)  # family name -> type

    def series(self, name: str) -> dict[LabelKey, float]:
        return self.values.get(name, {})

    def get(self, name: str, labels: Mapping[str, str] | None = None, hint: str | None = None) -> float | None:
        """Value of the one series of ``name`` whose labels include ``labels``.

        Returns None if no series matches. Raises InputError if several series match, because
        summing them blindly (e.g. across engine ranks or models) would be silently wrong; ``hint``
        says where to name the label that tells them apart.
        """
        matches = self.match(name, labels)
        if not matches:
            return None
        if len(matches) > 1:
            raise self._several(name, labels, matches, hint)
        return next(iter(matches.values()))

    def _several(self, name, labels, matches, hint) -> InputError:
        shown = ", ".join(_fmt_labels(k) for k in list(matches)[:4])
        return InputError(
            self.source,
            name,
            f"{len(matches)} series match {_fmt_labels(_label_key(labels or {}))} ({shown}); "
            + (hint or "name the label that tells them apart"),
        )

    def total(
        self,
        name: str,
        labels: Mapping[str, str] | None,
        sum_label: str,
        sum_values: Iterable[str],
        hint: str | None = None,
    ) -> tuple[float | None, dict[str, float]]:
        """The sum over ``sum_label`` (restricted to ``sum_values``) of the series of ``name`` whose
        labels include ``labels``, and the value per ``sum_label`` value.

        Only ``sum_label`` is added up (what the counter means: vLLM's success counter split by
        ``finished_reason``); series that still differ in another label (``model_name``, ``engine``:
        separate deployments or DP ranks) raise InputError naming them, as ``get`` does.
        """
        want = set(sum_values)
        groups: dict[LabelKey, dict[str, float]] = {}
        for key, v in self.match(name, labels).items():
            d = dict(key)
            reason = d.pop(sum_label, None)
            if reason not in want:
                continue
            groups.setdefault(_label_key(d), {})[reason] = v
        if not groups:
            return None, {}
        if len(groups) > 1:
            raise self._several(name, labels, {k: 0.0 for k in groups}, hint)
        per = dict(sorted(next(iter(groups.values())).items()))
        return sum(per.values()), per

    def match(self, name: str, labels: Mapping[str, str] | None = None) -> dict[LabelKey, float]:
        want = (labels or {}).items()
        return {k: v for k, v in self.series(name).items() if all((lk, lv) in k for lk, lv in want)}


def _fmt_labels(key: LabelKey) -> str:
    return "{" + ",".join(f'{k}="{v}"' for k, v in key) + "}"


# A wanted name with one of these endings also keeps its family's ``# TYPE``/``# HELP`` lines (the
# family is the name without the ending): a histogram or summary can be read for its ``_sum`` and
# ``_count`` alone, typed as it is declared, without its ``_bucket`` lines.
_SAMPLE_SUFFIXES = ("_sum", "_count", "_bucket")


@functools.lru_cache(maxsize=64)
def _meta_families(prefixes: tuple[str, ...]) -> frozenset[str]:
    """Families whose metadata lines are kept for the sample names in ``prefixes``."""
    return frozenset(
        p[: -len(sfx)] for p in prefixes for sfx in _SAMPLE_SUFFIXES if p.endswith(sfx) and len(p) > len(sfx)
    )


def _om_prefixes(prefixes: tuple[str, ...]) -> tuple[str, ...]:
    """OpenMetrics: a ``_sum``/``_count``/``_bucket`` name keeps its whole family.

    prometheus_client's OpenMetrics parser checks a histogram's buckets itself (it rejects a
    histogram with ``_sum``/``_count`` and no ``+Inf`` bucket), so the buckets cannot be left out.
    """
    out = []
    for p in prefixes:
        for sfx in _SAMPLE_SUFFIXES:
            if p.endswith(sfx) and len(p) > len(sfx):
                p = p[: -len(sfx)]
                break
        if p not in out:
            out.append(p)
    return tuple(out)


def _wanted_line(line: str, prefixes: tuple[str, ...], openmetrics: bool = False) -> bool:
    if line.startswith("#"):
        if openmetrics and line == "# EOF":
            return True
        parts = line.split(None, 3)
        if len(parts) >= 3 and parts[1] in ("TYPE", "HELP", "UNIT"):
            # OpenMetrics names a counter family without its `_total`: keep `# TYPE a counter`
            # when `a_total` is wanted.
            return (
                parts[2].startswith(prefixes)
                or parts[2] in _meta_families(prefixes)
                or (openmetrics and any(p.startswith(parts[2]) for p in prefixes))
            )
        return False
    return line.startswith(prefixes)


def _kept_lines(text: str, prefixes: tuple[str, ...], openmetrics: bool = False) -> tuple[str, list[tuple[int, str]]]:
    """The kept text of the narrow path and its comment lines as ``(offset, line)`` pairs.

    The kept text is every line of ``text`` that ``_wanted_line`` keeps, in file order, each
    followed by a line feed: exactly ``"\\n".join(ln for ln in text.split("\\n") if _wanted_line(ln, …)) + "\\n"``.
    In 0.0.4 text a kept line always contains one of ``prefixes`` (a sample line starts with one, a
    ``# TYPE``/``# HELP`` line names a family that starts with one), so only lines holding an
    occurrence found by ``str.find`` are looked at; every other line is skipped without Python-level
    work. A line that *starts* with a prefix is a kept sample line; any other line holding one (a
    comment, a label value) gets the per-line test. Families are contiguous, so after one kept line
    the next one is tried first with ``startswith``. OpenMetrics text (kept lines may be ``# EOF`` or
    a family named without its ``_total``) is scanned line by line.

    A metadata line kept for a family of ``_meta_families`` (``# TYPE h histogram`` when
    ``h_sum`` is wanted) holds the family name after whitespace, in a comment line: each
    occurrence of the name is looked at only if its line starts with ``#``; an occurrence in a
    sample line skips the run of sample lines up to the next comment line (``h_bucket`` lines).
    """
    if openmetrics:
        lines, comments, pos = [], [], 0
        for ln in text.split("\n"):
            if _wanted_line(ln, prefixes, True):
                lines.append(ln)
                if ln.startswith("#"):
                    comments.append((pos, ln))
            pos += len(ln) + 1
        return "\n".join(lines) + "\n", comments
    n = len(text)
    spans: dict[int, int] = {}  # line start -> line end (exclusive)
    comments: list[tuple[int, str]] = []
    find, rfind, startswith = text.find, text.rfind, text.startswith
    for p in prefixes:
        if not p:
            continue
        i = find(p)
        while i != -1:
            e = find("\n", i)
            if e == -1:
                e = n
            if i == 0 or text[i - 1] == "\n":
                if p[0] != "#":  # starts with a wanted name: a kept sample line
                    # the family's samples usually run up to the next comment line: take them as
                    # one block if every line of it starts with the name (two str.count calls)
                    j = find("\n#", e)
                    if j == -1:
                        j = n - 1 if text.endswith("\n") else n
                    if j > e:
                        block = text[i:j]
                        if block.count("\n") == block.count("\n" + p):
                            spans[i] = max(spans.get(i, -1), j)
                            if j >= n - 1:
                                break
                            i = find(p, j + 1)
                            continue
                    spans[i] = max(spans.get(i, -1), e)
                elif _wanted_line(text[i:e], prefixes):
                    spans[i] = e
                    comments.append((i, text[i:e]))
            else:
                s = rfind("\n", 0, i) + 1
                if s not in spans:
                    ln = text[s:e]
                    if _wanted_line(ln, prefixes):
                        spans[s] = e
                        if ln.startswith("#"):
                            comments.append((s, ln))
            if e >= n:
                break
            # families are contiguous: the next line usually starts with the same name
            i = e + 1 if startswith(p, e + 1) else find(p, e + 1)
    for f in _meta_families(prefixes):
        if f.startswith(prefixes):
            continue  # its metadata lines hold a wanted prefix: found above
        i = find(f)
        while i != -1:
            s = rfind("\n", 0, i) + 1
            if text.startswith("#", s):
                e = find("\n", i)
                if e == -1:
                    e = n
                if s not in spans:
                    ln = text[s:e]
                    if _wanted_line(ln, prefixes):
                        spans[s] = e
                        comments.append((s, ln))
                if e >= n:
                    break
                i = find(f, e + 1)
            else:  # a sample line: no kept metadata line before the next comment line
                j = find("\n#", i)
                if j == -1:
                    break
                i = find(f, j + 1)
    if not spans:
        return "\n", comments
    # adjacent kept lines are copied as one slice
    parts = []
    run_s = run_e = -2
    for s in sorted(spans):  # union of whole-line spans (a block may hold another name's lines)
        if s <= run_e + 1:
            run_e = max(run_e, spans[s])
        else:
            if run_s >= 0:
                parts.append(text[run_s:run_e])
            run_s, run_e = s, spans[s]
    parts.append(text[run_s:run_e])
    comments.sort()
    return "\n".join(parts) + "\n", comments


def is_openmetrics(text: str) -> bool:
    """OpenMetrics text ends with a `# EOF` line; 0.0.4 text has none (see docs/bad-input.md)."""
    return "# EOF" in text and any(ln == "# EOF" for ln in text.split("\n"))


# Memo: the text parsed (the kept lines of the wanted families, or the whole text) -> parsed values
# and types. One process parses the same captures again and again: `benchbook init` then its
# validation, a kernel rendering a campaign's baseline and compare pages, the test suite analysing a
# campaign in many tests (measured: 22,147 of 24,224 narrow parses in tests/test_h200_campaign.py and
# test_verdict_swap.py repeated a parse, 9.7 of their 12.2 s; a whole vLLM capture of 440 samples takes
# 0.1 s to parse, and the analysis and the validation of one campaign each read every results run's
# before/after pair whole). Consecutive scrapes around phase samples usually hold the same lines for
# the families the split reads (they move only when a request finishes), so the snapshot after one
# sample is, for these families, the one before the next. The key is the exact text parsed and the
# path taken (narrow or whole: their checks differ), and only a text that parsed and passed every
# check is stored, so a hit gives exactly what parsing it again would (the whole-text check that
# depends on more than the kept lines, the final line feed, still runs). Least recently used first
# out, within three bounds: entries, samples and characters of text held (after one analysis of the
# H200 campaign, data/h200-llama8b, it holds 555 texts, 43 of them whole captures: 43,891 samples, 5.7
# million characters, 32.7 MiB by tracemalloc; a second analysis in the process took 2.4 s instead of 3.8).
MEMO = True
_MEMO: OrderedDict[tuple[str, bool, bool], tuple[dict[str, dict[LabelKey, float]], dict[str, str]]] = OrderedDict()
_MEMO_MAX = 4096  # entries
_MEMO_SAMPLES_MAX = 200_000  # samples, over every entry
_MEMO_CHARS_MAX = 64 << 20  # characters of the texts held as keys
_memo_samples = [0]
_memo_chars = [0]


def _samples(entry: tuple[dict[str, dict[LabelKey, float]], dict[str, str]]) -> int:
    return sum(len(v) for v in entry[0].values())


def _memo_put(key: tuple[str, bool, bool], snap: Snapshot) -> None:
    entry = ({k: dict(v) for k, v in snap.values.items()}, dict(snap.types))
    size, chars = _samples(entry), len(key[0])
    if size > _MEMO_SAMPLES_MAX or chars > _MEMO_CHARS_MAX:
        return
    if key in _MEMO:
        _memo_drop(key)
    while _MEMO and (
        len(_MEMO) >= _MEMO_MAX
        or _memo_samples[0] + size > _MEMO_SAMPLES_MAX
        or _memo_chars[0] + chars > _MEMO_CHARS_MAX
    ):
        _memo_drop(next(iter(_MEMO)))  # least recently used first
    _MEMO[key] = entry
    _memo_samples[0] += size
    _memo_chars[0] += chars


def _memo_drop(key: tuple[str, bool, bool]) -> None:
    _memo_samples[0] -= _samples(_MEMO.pop(key))
    _memo_chars[0] -= len(key[0])


def memo_clear() -> None:
    """Empty the parse memo (tests; a long-lived process that wants its memory back)."""
    _MEMO.clear()
    _memo_samples[0] = 0
    _memo_chars[0] = 0


def _snapshot(source: str, values: dict[str, dict[LabelKey, float]], types: dict[str, str]) -> Snapshot:
    return Snapshot(source=source, values={k: dict(v) for k, v in values.items()}, types=dict(types))


def parse(text: str, source: str | Path = "<metrics>", names: Iterable[str] | None = None) -> Snapshot:
    """Parse exposition text with prometheus_client, then apply benchbook's own checks.

    Text holding a `# EOF` line is OpenMetrics and goes to prometheus_client's OpenMetrics parser;
    anything else is text format 0.0.4. ``names``: if given, only samples whose names start with one
    of these are parsed and checked, with the metadata lines of their families: a family name keeps
    the whole family (``"pocket_ttft_seconds"``: buckets, ``_sum``, ``_count``); a name ending in
    ``_sum``, ``_count`` or ``_bucket`` keeps those samples and the family's ``# TYPE``/``# HELP``
    lines (``"pocket_ttft_seconds_sum"``). On OpenMetrics text such a name keeps its whole family
    (its parser checks the buckets itself). The checks of ``exposition_checks`` run on the parsed
    lines. Errors name the file and line.
    """
    from benchbook.metrics import exposition_checks as checks

    source = str(source)
    if "\r\n" in text:  # CRLF line endings are read as LF (docs/bad-input.md), OpenMetrics included
        text = text.replace("\r\n", "\n")
    om = is_openmetrics(text)
    if om:
        from prometheus_client.openmetrics.parser import text_string_to_metric_families
    else:
        from prometheus_client.parser import text_fd_to_metric_families
    wanted = None
    if names is not None:
        prefixes = _om_prefixes(tuple(names)) if om else tuple(names)

        def wanted(ln: str) -> bool:
            return _wanted_line(ln, prefixes, om)

        body, kept_comments = _kept_lines(text, prefixes, om)
    else:
        body = text
    checks.check_unterminated(text, source, wanted)
    memo_key = None
    if MEMO:
        memo_key = (body, om, names is None)
        hit = _MEMO.get(memo_key)
        if hit is not None:
            _MEMO.move_to_end(memo_key)
            return _snapshot(source, *hit)
    if not om:  # the OpenMetrics parser enforces metadata placement and trailing tokens itself
        if names is None:
            checks.check_metadata(text, source)
        else:
            checks.check_metadata_lines(kept_comments, text, source)
        checks.check_trailing_tokens(body, text, source)
    read = [0]  # lines the text parser has taken: it fails on the line it is reading
    try:
        if om:
            families = list(text_string_to_metric_families(body))
        else:
            families = list(text_fd_to_metric_families(_counted_lines(body, read)))
    except Exception as e:  # noqa: BLE001 - any failure of the third-party parser means it rejected the text
        if not om and names is None:  # body is the text: the failing line is the one being read
            line_no, line = read[0], body.split("\n", read[0])[read[0] - 1] if read[0] else None
        else:
            line_no, line = _locate_error(text, om, str(e))
        where = f"line {line_no}" if line_no else "-"
        shown = f" in {line[:120]!r}" if line else ""
        kind = "OpenMetrics text" if om else "Prometheus text exposition"
        raise InputError(source, where, f"not valid {kind}{shown}: {type(e).__name__ if not str(e) else e}") from None
    checks.check_families(families, text, source, om)
    snap = Snapshot(source=source)
    for fam in families:
        if fam.type != "unknown" or fam.name not in snap.types:  # resumed samples keep the declared type
            snap.types[fam.name] = fam.type
        values = snap.values
        for s in fam.samples:
            lab = s.labels
            key = tuple(sorted(lab.items())) if len(lab) > 1 else tuple(lab.items())
            series = values.get(s.name)
            if series is None:
                series = values[s.name] = {}
            series[key] = float(s.value)
    if memo_key is not None:
        _memo_put(memo_key, snap)
    return snap


def _counted_lines(text: str, read: list[int]):
    """The lines of ``text`` (as ``StringIO`` gives them to prometheus_client), counting in ``read[0]``."""
    import io

    for read[0], line in enumerate(io.StringIO(text), 1):  # noqa: B007 - the count is the output
        yield line


def _locate_error(text: str, openmetrics: bool = False, message: str | None = None) -> tuple[int | None, str | None]:
    """Find the first line at which the full parser fails (bisection over prefixes).

    With ``message`` (the full parse's error), a prefix counts as failing only when it fails with
    that same error: an OpenMetrics prefix that ends inside a histogram fails as an incomplete
    family one line before the real fault (a bad exemplar), which must not be blamed."""
    if openmetrics:
        from prometheus_client.openmetrics.parser import text_string_to_metric_families
    else:
        from prometheus_client.parser import text_string_to_metric_families

    if not openmetrics:  # one pass: the text parser fails on the line it is reading (no bisection,
        # which parsed up to 18 prefixes: 78 s for a 12 MB capture whose last line is bad)
        from prometheus_client.parser import text_fd_to_metric_families

        read = [0]
        try:
            for _ in text_fd_to_metric_families(_counted_lines(text, read)):
                pass
        except Exception as e:  # noqa: BLE001 - any parser failure
            if message is None or str(e) == message:
                return read[0], text.split("\n", read[0])[read[0] - 1]
    lines = text.split("\n")

    def fails(k: int) -> bool:
        head = lines[:k]
        body = "\n".join(head) + "\n"
        if openmetrics and "# EOF" not in head:
            body += "# EOF\n"  # a prefix of OpenMetrics text lacks its terminator
        try:
            list(text_string_to_metric_families(body))
            return False
        except Exception as e:  # noqa: BLE001 - any parser failure counts as "fails" here
            return message is None or str(e) == message

    if message is not None and not fails(len(lines)):
        message = None  # the whole text fails differently once cut to lines: any failure counts
    if not fails(len(lines)):
        # The prefixes all parse (e.g. OpenMetrics text without `# EOF`): blame the last line.
        last = len(lines) - 1 if len(lines) > 1 and lines[-1] == "" else len(lines)
        return (last, lines[last - 1]) if last >= 1 else (None, None)
    lo, hi = 0, len(lines)  # fails(hi) is True; fails(lo) is False
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fails(mid):
            hi = mid
        else:
            lo = mid
    return hi, lines[hi - 1]


_FIRST_SAMPLE = re.compile(r"^[ \t]*([^#\s])", re.M)  # the first line that is not blank or a comment
_NAME_START = re.compile(r"[a-zA-Z_:]")  # a metric name's first character


def read_capture(path: str | Path) -> str:
    """A `/metrics` capture file's text: not empty, UTF-8; a ``.gz`` name (``before.prom.gz``) is read
    decompressed, within the same limit (jsonfile.read_bytes); gzip data under a plain name (a compressed
    scrape saved as-is) is refused. Read once per analysis (:mod:`benchbook.reads`)."""
    from benchbook.reads import cached

    return cached("capture", path, lambda: _read_capture(Path(path)))


def _read_capture(path: Path) -> str:
    from benchbook.jsonfile import MAX_METRICS_BYTES, read_bytes

    raw = read_bytes(path, "/metrics text file", MAX_METRICS_BYTES)
    if raw[:2] == b"\x1f\x8b":
        raise InputError(path, "-", "this is gzip-compressed data, not /metrics text: decompress it (gunzip) first")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise InputError(path, f"line {line}", f"not UTF-8 (byte 0x{raw[e.start]:02x} at offset {e.start})") from None
    if not text.strip():
        raise InputError(path, "-", "empty /metrics capture: no samples (did the scrape fail?)")
    # what a capture must look like before any family is picked out of it, so a campaign (whose
    # split parses a few families) rejects what a full parse of the file rejects
    first = _FIRST_SAMPLE.search(text)
    if first is None:
        parse(text, path)  # a faulty metadata line is named first (cheap: there are no samples)
        raise InputError(path, "-", "holds only comments and blank lines: no samples (did the scrape fail?)")
    if not _NAME_START.match(first.group(1)):
        line_no = text.count("\n", 0, first.start(1)) + 1
        end = text.find("\n", first.start(1))
        shown = text[first.start(1) : end if end >= 0 else len(text)][:120]
        what = (
            "an HTML page (an error page saved as the scrape?)"
            if shown.lstrip().startswith("<")
            else "not /metrics text"
        )
        raise InputError(path, f"line {line_no}", f"{what}: {shown!r}")
    return text


def read(path: str | Path, names: Iterable[str] | None = None) -> Snapshot:
    """Read and parse a `/metrics` capture file."""
    return parse(read_capture(path), Path(path), names)


@dataclass(frozen=True)
class Delta:
    """after − before of one series; ``reset`` when the counter went down."""

    name: str
    labels: LabelKey
    before: float | None
    after: float | None

    @property
    def missing(self) -> bool:
        return self.before is None or self.after is None

    @property
    def reset(self) -> bool:
        return not self.missing and self.after < self.before

    @property
    def value(self) -> float:
        if self.missing:
            raise ValueError(f"{self.name}: missing in one snapshot")
        if self.reset:
            raise ValueError(f"{self.name}: counter reset, no delta")
        return self.after - self.before

    def describe(self) -> str:
        return f"{self.name}{_fmt_labels(self.labels)}"


def delta(
    before: Snapshot, after: Snapshot, name: str, labels: Mapping[str, str] | None = None, hint: str | None = None
) -> Delta:
    b = before.get(name, labels, hint)
    a = after.get(name, labels, hint)
    for v, snap in ((b, before), (a, after)):
        if v is not None and (math.isnan(v) or math.isinf(v)):
            raise InputError(snap.source, name, f"value {v} is not a finite counter value")
    return Delta(name, _label_key(labels or {}), b, a)
