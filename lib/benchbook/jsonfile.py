"""Reading input files — bytes, UTF-8 text, JSON, YAML — with errors that name the file, the place
and the reason, and with the input limits (docs/bad-input.md) enforced before anything is parsed:

- file size (:data:`MAX_FILE_BYTES`; callers pass a smaller ``limit`` for manifests and parameter files);
- JSON nesting depth (:data:`MAX_DEPTH`), found by a vectorized scan of the bytes, so neither the
  parser nor anything after it (schema validation, pages) meets a nesting bomb;
- duplicate keys in a JSON object or YAML mapping (the last value would win silently);
- YAML aliases (``*ref``): refused, so an alias-expansion bomb costs nothing.

It also holds the one conversion of computed values to plain JSON (:func:`plain`) that pages'
``values.json`` and ``benchbook summary --json`` share.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import os
import re
import stat
from collections.abc import Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from benchbook.errors import InputError
from benchbook.reads import resolved

MAX_FILE_BYTES = 2**30  # 1 GiB: any input file (a campaign's request log is the big one)
MAX_MANIFEST_BYTES = 16 * 2**20  # campaign.json
MAX_PARAMS_BYTES = 2**20  # render.yml / --params
MAX_METRICS_BYTES = 256 * 2**20  # one /metrics snapshot (a large engine's is a few MB)
MAX_LOG_BYTES = 256 * 2**20  # server.log, a prefill scheduler log, any *.log of a run
MAX_SMI_Q_BYTES = 16 * 2**20  # nvidia-smi -q output (8 GPUs: about 60 KB)
MAX_LLMD_YAML_BYTES = 4 * 2**20  # a YAML result file (an llm-d benchmark report is a few KB)
MAX_DEPTH = 64  # JSON/YAML nesting; benchbook's own formats need 6, other tools' under 12
MAX_FOLDER_DEPTH = 32  # folders below a campaign or an init input; benchbook's deepest layout needs 6

_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
)


def special_kind(mode: int) -> str | None:
    """What a non-regular file is ("a FIFO (named pipe)", "a socket" …), or None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    return next((what for test, what in _KINDS if test(mode)), "not a regular file")


def _refuse_special(path: Path, mode: int, what: str) -> None:
    kind = special_kind(mode)
    if kind is None:
        return
    if stat.S_ISDIR(mode):
        raise InputError(path, "-", f"is a directory, expected a {what}")
    raise InputError(path, "-", f"is {kind}, not a regular file: benchbook reads only regular files (nothing was read)")


def open_regular(path: str | Path, what: str = "file", limit: int = MAX_FILE_BYTES):
    """A binary file object of ``path`` after checking, before anything is read, that it is a regular
    file (a FIFO, a device or a socket is refused with the reason and never opened for reading: a
    FIFO would block, a device would never end) and at most ``limit`` bytes. The check is made by
    ``stat`` before opening and again by ``fstat`` on what was opened (``O_NONBLOCK``, so a FIFO
    swapped in between cannot block the open)."""
    path = Path(path)
    try:
        _refuse_special(path, os.stat(path).st_mode, what)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise InputError(path, "-", "file not found") from None
    except NotADirectoryError:
        raise InputError(path, "-", "file not found (a part of the path is not a folder)") from None
    except OSError as e:
        raise InputError(path, "-", f"cannot read: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        _refuse_special(path, st.st_mode, what)
        if st.st_size > limit:
            raise InputError(
                path,
                "-",
                f"file is {st.st_size} bytes, above the {limit}-byte limit for this input (docs/bad-input.md)",
            )
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def walk(root: str | Path, limit: int = MAX_FOLDER_DEPTH):
    """``(dirpath, dirnames, filenames)`` for ``root`` and every folder below it, top-down and sorted,
    like ``os.walk`` (symlinks are listed, never followed; an unreadable folder is skipped) but with
    a stack instead of recursion, and a folder more than ``limit`` levels below ``root`` is bad input
    (a folder 1,000 deep would otherwise end in a RecursionError, or a path too long to open).
    ``dirnames`` may be pruned in place, as with ``os.walk``."""
    top = os.fspath(root)
    stack = [(top, 0)]
    while stack:
        dirpath, depth = stack.pop()
        try:
            with os.scandir(dirpath) as it:
                entries = list(it)
        except OSError:
            continue
        dirnames, filenames = [], []
        for e in entries:
            try:
                is_dir = e.is_dir()  # a symlink to a folder is listed with the folders, as os.walk does
            except OSError:
                is_dir = False
            (dirnames if is_dir else filenames).append(e.name)
        dirnames.sort()
        filenames.sort()
        yield dirpath, dirnames, filenames
        subs = [d for d in dirnames if not os.path.islink(os.path.join(dirpath, d))]
        if subs and depth + 1 > limit:
            deep = os.path.join(dirpath, subs[0])
            raise InputError(
                deep,
                "-",
                f"folder nested more than {limit} levels below {top} (the limit for a campaign or an input "
                "folder, docs/bad-input.md): nothing below it was read",
            )
        stack.extend((os.path.join(dirpath, d), depth + 1) for d in reversed(subs))


def walk_files(root: str | Path, limit: int = MAX_FOLDER_DEPTH) -> list[Path]:
    """Every non-folder entry below ``root`` (files, symlinks, special files), sorted by path, found by
    :func:`walk` (so depth-bounded)."""
    return sorted(Path(d, f) for d, _, files in walk(root, limit) for f in files)


def sha256_file(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes, read in 1 MiB blocks (provenance, copies checked after writing)."""
    h = hashlib.sha256()
    with open_regular(path, limit=2**62) as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_bytes(path: str | Path, what: str = "file", limit: int = MAX_FILE_BYTES) -> bytes:
    """The file's bytes; a directory, a missing file, an unreadable one, a FIFO/device/socket or one
    above ``limit`` is an InputError (:func:`open_regular`)."""
    path = Path(path)
    with open_regular(path, what, limit) as fh:
        try:
            data = fh.read(min(limit, os.fstat(fh.fileno()).st_size) + 1)
            if len(data) <= limit:
                data += fh.read(limit + 1 - len(data))  # a file that grew since fstat: read on to the limit
        except OSError as e:
            raise InputError(path, "-", f"cannot read: {e.strerror or e}") from None
    if len(data) > limit:  # it grew while being read
        raise InputError(path, "-", f"file is above the {limit}-byte limit for this input")
    if is_gzip_name(path):
        return gunzip(data, path, limit)
    return data


# --------------------------------------------------------------------------- gzip-compressed inputs
# A file whose name ends in .gz (``before.prom.gz``, ``conc8_scrapes.jsonl.gz``: what ``benchbook capture
# --compress`` writes) is read as its decompressed bytes everywhere :func:`read_bytes` is used, held to
# the same limit as the plain file (the limit bounds the decompressed size: a gzip bomb costs at most
# the limit), its name read without the .gz (``plain_suffix``).

GZIP_MAGIC = b"\x1f\x8b"


def is_gzip_name(path: str | Path) -> bool:
    return Path(path).name.lower().endswith(".gz")


def plain_name(path: str | Path) -> str:
    """The file's name without a trailing ``.gz`` (``before.prom.gz`` -> ``before.prom``)."""
    name = Path(path).name
    return name[:-3] if name.lower().endswith(".gz") else name


def plain_suffix(path: str | Path) -> str:
    """The suffix the file's content has, lower case: ``.prom`` for ``before.prom`` and ``before.prom.gz``."""
    return Path(plain_name(path)).suffix.lower()


def gunzip(raw: bytes, path: str | Path, limit: int = MAX_FILE_BYTES, *, head: bool = False) -> bytes:
    """``raw`` (gzip, one or more members) decompressed, at most ``limit`` bytes; bad input naming
    ``path`` when it is not gzip, is truncated, has trailing bytes or decompresses beyond ``limit``.
    ``head``: the first ``limit`` bytes only (a file's beginning, to recognise it), no bomb or
    truncation check."""
    import zlib

    path = Path(path)
    if raw[:2] != GZIP_MAGIC:
        raise InputError(path, "-", "named .gz but not gzip data (no gzip header)")
    out = bytearray()
    data = raw
    while True:
        d = zlib.decompressobj(wbits=31)
        try:
            out += d.decompress(data, limit + 1 - len(out))
        except zlib.error as e:
            raise InputError(path, "-", f"not valid gzip data: {e}") from None
        if len(out) > limit or d.unconsumed_tail:
            if head:
                return bytes(out[:limit])
            raise InputError(
                path, "-", f"decompresses to more than the {limit}-byte limit for this input (docs/bad-input.md)"
            )
        if not d.eof:
            if head:
                return bytes(out)
            raise InputError(path, "-", f"truncated gzip data: the stream ends after {len(raw)} bytes, unfinished")
        data = d.unused_data
        if not data:
            return bytes(out)
        if data[:2] != GZIP_MAGIC:
            if head:
                return bytes(out)
            raise InputError(path, "-", f"{len(data)} bytes after the end of the gzip data that are not gzip")


def read_head(path: str | Path, n: int, what: str = "file") -> bytes:
    """The first ``n`` bytes of a file's content (decompressed for a ``.gz`` name), to recognise a
    file by what it holds; a FIFO or device is refused unread (:func:`open_regular`); a ``.gz`` that is
    not gzip, or whose beginning is corrupt, is bad input naming the file."""
    with open_regular(path, what, 2**62) as fh:
        if not is_gzip_name(path):
            return fh.read(n)
        raw = b""
        while True:
            more = fh.read(1 << 20)
            raw += more
            out = gunzip(raw, path, n, head=True)
            if len(out) >= n or not more:
                return out


def gzip_bytes(data: bytes) -> bytes:
    """Deterministic gzip: the same bytes for the same data (header mtime 0, no file name)."""
    import gzip

    return gzip.compress(data, compresslevel=6, mtime=0)


def read_text(path: str | Path, what: str = "text file", limit: int = MAX_FILE_BYTES) -> str:
    """The file as UTF-8 text; a bad byte is reported with its line and offset."""
    raw = read_bytes(path, what, limit)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise InputError(path, f"line {line}", f"not UTF-8 (byte 0x{raw[e.start]:02x} at offset {e.start})") from None


def json_lines(path: str | Path, what: str = "JSON Lines file", limit: int = MAX_FILE_BYTES):
    """``(line number, record)`` for every non-blank line of a JSON Lines file, read within the input
    limits; a line that is not JSON is an InputError naming the file and the line."""
    import orjson

    for n, line in enumerate(read_bytes(path, what, limit).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield n, orjson.loads(line)
        except orjson.JSONDecodeError as e:
            raise InputError(path, f"line {n}", f"not valid JSON: {e}") from None


def _line_col(raw: bytes, pos: int) -> str:
    line = raw[:pos].count(b"\n") + 1
    col = pos - (raw.rfind(b"\n", 0, pos) + 1) + 1
    return f"line {line} column {col}"


_ESCAPED_QUOTES = re.compile(rb'\\+"')


_QUOTE, _OPEN, _CLOSE, _COLON = 1, 2, 3, 4


@cache
def _classes():
    import numpy as np

    lut = np.zeros(256, dtype=np.int8)
    lut[ord('"')] = _QUOTE
    lut[[ord("["), ord("{")]] = _OPEN
    lut[[ord("]"), ord("}")]] = _CLOSE
    lut[ord(":")] = _COLON
    return lut


_WINDOW = 4 << 20  # bytes scanned at a time: the scan's own memory stays a few windows, whatever the file


@cache
def _class_table() -> bytes:
    return bytes(_classes().astype("uint8").tolist())


def scan_json(raw: bytes, limit: int = MAX_DEPTH) -> tuple[int, int, int]:
    """``(deepest nesting, offset where it first exceeds limit, keys)`` of JSON text, without parsing
    it: brackets and colons outside strings, vectorized (numpy over the structural bytes only), in
    windows of :data:`_WINDOW` bytes carrying the string/depth state across (so a 200 MB result
    file costs a few windows of memory, not a class byte per file byte). ``keys`` counts every key
    as written, so a parsed document holding fewer has a duplicate key."""
    import numpy as np

    table = _class_table()
    view = memoryview(raw)
    deepest, over, keys, depth, in_string = 0, -1, 0, 0, 0
    has_escapes = b"\\" in raw
    for a in range(0, len(raw), _WINDOW):
        b = min(len(raw), a + _WINDOW)
        codes = np.frombuffer(bytes(view[a:b]).translate(table), dtype=np.int8)
        pos = np.flatnonzero(codes)
        del codes
        if has_escapes:  # drop quotes escaped by an odd run of backslashes (a run may start before a)
            start = a
            while start > 0 and raw[start - 1] == 0x5C:
                start -= 1
            escaped = [
                m.end() - 1 - a
                for m in _ESCAPED_QUOTES.finditer(raw, start, b)
                if (m.end() - 1 - m.start()) % 2 == 1 and m.end() - 1 >= a
            ]
            if escaped:
                pos = np.setdiff1d(pos, np.asarray(escaped, dtype=pos.dtype), assume_unique=True)
        ch = np.frombuffer(bytes(view[a:b]), dtype=np.uint8)[pos]
        ch = _classes()[ch]
        quote = ch == _QUOTE
        # outside a string: an even number of quotes before it (itself excluded), counting the carry
        outside = ((np.cumsum(quote) + in_string) & 1) == quote
        in_string = (in_string + int(np.count_nonzero(quote))) & 1
        keep = outside & ~quote
        ch, pos = ch[keep], pos[keep]
        keys += int(np.count_nonzero(ch == _COLON))
        step = (ch == _OPEN).astype(np.int64) - (ch == _CLOSE)
        if not len(step):
            continue
        d = np.cumsum(step) + depth
        depth = int(d[-1])
        top = int(d.max())
        if top > limit and over < 0:
            over = a + int(pos[int(np.argmax(d > limit))])
        deepest = max(deepest, top)
    return deepest, over, keys


# --------------------------------------------------------------------------- streaming one big JSON object

STREAM_BYTES = 32 << 20  # a result file above this is parsed member by member (formats.load)
_BATCH = 4 << 20  # bytes of array elements parsed at a time
_COMMA = 5


class NotOneObject(Exception):
    """The text is not one JSON object (e.g. JSON Lines): the caller reads it the other way."""


@cache
def _stream_table() -> bytes:
    lut = _classes().copy()
    lut[ord(",")] = _COMMA
    return bytes(lut.astype("uint8").tolist())


def stream_object(
    path: str | Path,
    *,
    loads,
    limit: int = MAX_FILE_BYTES,
    batch_hook=None,
    join=None,
) -> dict:
    """A file holding one JSON object, parsed member by member without holding the file: the bytes
    are read in :data:`_WINDOW` pieces and scanned (strings, escapes and depth carried across), each
    top-level member is parsed on its own with ``loads``, and an array member in batches of about
    :data:`_BATCH` bytes of elements, each batch handed to ``batch_hook(key, elements)`` (which may
    make it compact: a polars Series instead of Python lists) and the batches to ``join(key, parts)``.
    Peak memory: a window, a batch and what the hooks keep — not the file.

    The input limits hold as for :func:`load_json`: regular file, ``limit`` bytes, nesting
    :data:`MAX_DEPTH`, duplicate keys (in every object). Raises :class:`NotOneObject` when the text
    is not one object (something follows it: JSON Lines), InputError (with line and column) when it
    is not JSON."""
    import numpy as np

    path = Path(path)
    table = _stream_table()
    lut = _classes().copy()
    lut[ord(",")] = _COMMA
    out: dict[str, Any] = {}
    parts: list[Any] = []
    data = bytearray()
    base = depth = in_string = trailing_bs = 0
    state, key, key_start, value_start, is_array = "start", None, 0, 0, False
    batch_start = last_comma = 0

    def piece(a: int, b: int) -> bytes:
        return bytes(data[a - base : b - base])

    def parse(a: int, b: int, wrap: bool = False) -> Any:
        raw = piece(a, b)
        text = b"[" + raw + b"]" if wrap else raw
        try:
            doc = loads(text)
        except ValueError as e:
            at = a + max(0, int(getattr(e, "pos", 0) or 0) - (1 if wrap else 0))
            msg = getattr(e, "msg", str(e))
            raise InputError(path, _line_col_file(path, at), f"not valid JSON: {msg}") from None
        keys = scan_json(text)[2]
        if _count_keys(doc) != keys:
            at, dup = _first_duplicate(text)
            m = re.match(r"\$\[(\d+)\](.*)", at) if wrap else None
            at = f"[{int(m[1]) + done[0]}]{m[2]}" if m else at[1:]
            raise InputError(path, f"$.{key}{at}", f"key {dup!r} appears twice in this object (which value is meant?)")
        return doc

    done = [0]  # elements of the current array member parsed so far

    def flush(a: int, b: int) -> None:
        if piece(a, b).strip():
            elements = parse(a, b, wrap=True)
            done[0] += len(elements)
            parts.append(batch_hook(key, elements) if batch_hook else elements)

    def finish() -> Any:
        if join is not None:
            return join(key, parts)
        return [x for p in parts for x in p]

    with open_regular(path, "JSON file", limit) as fh:
        while True:
            win = fh.read(_WINDOW)
            if not win:
                break
            off = base + len(data)
            data += win
            codes = np.frombuffer(win.translate(table), dtype=np.int8)
            pos = np.flatnonzero(codes)
            del codes
            if b"\\" in win or trailing_bs:
                escaped = []
                for m in _ESCAPED_QUOTES.finditer(win):
                    run = m.end() - 1 - m.start() + (trailing_bs if m.start() == 0 else 0)
                    if run % 2 == 1:
                        escaped.append(m.end() - 1)
                if win[:1] == b'"' and trailing_bs % 2 == 1:
                    escaped.append(0)
                if escaped:
                    pos = np.setdiff1d(pos, np.asarray(sorted(set(escaped)), dtype=pos.dtype), assume_unique=True)
            stripped = win.rstrip(b"\\")
            trailing_bs = (len(win) - len(stripped)) + (trailing_bs if not stripped else 0)
            ch = lut[np.frombuffer(win, dtype=np.uint8)[pos]]
            quote = ch == _QUOTE
            outside = ((np.cumsum(quote) + in_string) & 1) == quote
            in_string = (in_string + int(np.count_nonzero(quote))) & 1
            keep = outside & ~quote
            ch, pos = ch[keep], pos[keep]
            step = (ch == _OPEN).astype(np.int64) - (ch == _CLOSE)
            after = np.cumsum(step) + depth
            before = after - step
            if len(after):
                depth = int(after[-1])
                if int(after.min()) < 0:
                    at = off + int(pos[int(np.argmax(after < 0))])
                    raise InputError(path, _line_col_file(path, at), "not valid JSON: a bracket closes nothing")
                if int(after.max()) > MAX_DEPTH:
                    at = off + int(pos[int(np.argmax(after > MAX_DEPTH))])
                    raise InputError(
                        path,
                        _line_col_file(path, at),
                        f"nested deeper than {MAX_DEPTH} levels (the limit is passed here)",
                    )
            sel = (
                ((ch == _OPEN) & (before <= 1))
                | ((ch == _CLOSE) & (after <= 1))
                | ((ch == _COLON) & (before == 1))
                | ((ch == _COMMA) & ((before == 1) | (before == 2)))
            )
            if state == "end" and win.strip():  # something after the object: JSON Lines?
                raise NotOneObject
            for p_rel, c, db in zip(pos[sel].tolist(), ch[sel].tolist(), before[sel].tolist()):
                p = off + p_rel
                if state == "end":
                    raise NotOneObject
                if state == "start":
                    if c != _OPEN or win[p_rel] != ord("{") or piece(0, p).strip():
                        raise NotOneObject
                    state, key_start = "key", p + 1
                elif c == _COLON and db == 1:
                    if state != "key":
                        raise InputError(path, _line_col_file(path, p), "not valid JSON: unexpected ':'")
                    k = parse(key_start, p)
                    if not isinstance(k, str):
                        raise InputError(
                            path, _line_col_file(path, key_start), "not valid JSON: a key must be a string"
                        )
                    if k in out or k == key:
                        raise InputError(path, "$", f"key {k!r} appears twice in this object (which value is meant?)")
                    key, value_start, is_array, state = k, p + 1, False, "value"
                elif c == _OPEN and db == 1:
                    if state == "value" and data[p - base] == ord("[") and not piece(value_start, p).strip():
                        is_array, batch_start, last_comma, parts, done[0] = True, p + 1, 0, [], 0
                elif c == _COMMA and db == 2:
                    if is_array:
                        last_comma = p
                elif c == _CLOSE and db == 2:
                    if is_array:
                        flush(batch_start, p)
                        out[key] = finish()
                        is_array, parts, state = False, [], "after"
                elif c == _COMMA and db == 1:
                    if state == "value":
                        out[key] = parse(value_start, p)
                    elif state != "after":
                        raise InputError(path, _line_col_file(path, p), "not valid JSON: unexpected ','")
                    state, key_start = "key", p + 1
                elif c == _CLOSE and db == 1:
                    if state == "value":
                        out[key] = parse(value_start, p)
                    elif state == "key" and (out or piece(key_start, p).strip()):
                        raise InputError(path, _line_col_file(path, p), "not valid JSON: a trailing comma")
                    state = "end"
                    if win[p_rel + 1 :].strip():
                        raise NotOneObject
            if is_array and last_comma > batch_start and last_comma - batch_start > _BATCH:
                flush(batch_start, last_comma)
                batch_start = last_comma + 1
            # keep only what a pending member still needs
            keep_from = {
                "key": key_start,
                "value": batch_start if is_array else value_start,
            }.get(state, off + len(win))
            if state == "start":
                keep_from = base
            if keep_from > base:
                del data[: keep_from - base]
                base = keep_from
    if state == "start":
        raise NotOneObject
    if state != "end":
        raise InputError(
            path, _line_col_file(path, base + len(data)), "not valid JSON: the file ends inside the object (truncated?)"
        )
    return out


def _line_col_file(path: Path, pos: int) -> str:
    """``line L column C`` of byte offset ``pos`` of a file, counted in blocks (only on an error)."""
    line, col_start, done = 1, 0, 0
    with open_regular(path, "file", 2**62) as fh:
        while done < pos:
            block = fh.read(min(1 << 20, pos - done))
            if not block:
                break
            n = block.count(b"\n")
            if n:
                line += n
                col_start = done + block.rfind(b"\n") + 1
            done += len(block)
    return f"line {line} column {pos - col_start + 1}"


def _count_keys(doc: Any) -> int:
    """Keys in a parsed document, counted by walking its objects and lists (a list of numbers costs
    a type check per item, nothing is re-serialized)."""
    n = 0
    stack = [doc] if type(doc) in (dict, list) else []
    containers = (dict, list)
    while stack:
        v = stack.pop()
        if type(v) is dict:
            n += len(v)
            stack.extend(x for x in v.values() if type(x) in containers)
        else:
            stack.extend(x for x in v if type(x) in containers)
    return n


class _Pairs(dict):
    dup: str | None = None


def _first_duplicate(raw: bytes) -> tuple[str, str]:
    """(JSON path of the object, key) of the first duplicate key (the slow, exact pass)."""

    def hook(pairs):
        d = _Pairs()
        for k, v in pairs:
            if k in d and d.dup is None:
                d.dup = k
            d[k] = v
        return d

    doc = json.loads(raw, object_pairs_hook=hook)
    stack: list[tuple[Any, tuple]] = [(doc, ())]
    while stack:
        v, at = stack.pop(0)
        if isinstance(v, _Pairs) and v.dup is not None:
            return json_path(at), v.dup
        if isinstance(v, dict):
            stack.extend((x, at + (k,)) for k, x in v.items())
        elif isinstance(v, list):
            stack.extend((x, at + (i,)) for i, x in enumerate(v))
    return "$", "?"


def check_json_limits(raw: bytes, path: str | Path) -> int:
    """Refuse JSON nested deeper than :data:`MAX_DEPTH` (before parsing); returns the key count."""
    depth, at, keys = scan_json(raw)
    if depth > MAX_DEPTH:
        raise InputError(
            path, _line_col(raw, at), f"nested {depth} levels deep (the limit, {MAX_DEPTH}, is passed here)"
        )
    return keys


def load_json(path: str | Path, limit: int = MAX_FILE_BYTES) -> Any:
    """Parse a JSON file with orjson; NaN/Infinity, truncation, bad bytes, nesting deeper than
    :data:`MAX_DEPTH`, duplicate keys and files above ``limit`` bytes are InputErrors."""
    path = Path(path)
    if path.is_dir():
        raise InputError(path, "-", "is a directory, expected a JSON file")
    return parse_json(read_bytes(path, "JSON file", limit), path)


def parse_json(raw: bytes, path: str | Path) -> Any:
    """:func:`load_json` on bytes already read (``path`` names them in errors)."""
    import orjson

    if not raw.strip():
        raise InputError(path, "-", "file is empty")
    keys = check_json_limits(raw, path)
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        if "UTF-8" in str(e):  # orjson reports position 0 for bad bytes: find them ourselves
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as u:
                line = raw[: u.start].count(b"\n") + 1
                col = u.start - (raw.rfind(b"\n", 0, u.start) + 1) + 1
                raise InputError(
                    path, f"line {line} column {col}", f"not UTF-8 (byte 0x{raw[u.start]:02x} at offset {u.start})"
                ) from None
        pos = getattr(e, "pos", None)
        if pos is not None:
            line = raw[:pos].count(b"\n") + 1
            col = pos - (raw.rfind(b"\n", 0, pos) + 1) + 1
            where = f"line {line} column {col}"
        else:
            where = "-"
        msg = getattr(e, "msg", str(e))
        if b"NaN" in raw or b"Infinity" in raw:
            msg += " (NaN and Infinity are not JSON numbers)"
        raise InputError(path, where, f"not valid JSON: {msg}") from None
    check_duplicate_keys(raw, doc, keys, path)
    return doc


def check_duplicate_keys(raw: bytes, doc: Any, keys: int, path: str | Path) -> None:
    """A duplicate key is bad input: the parsed ``doc`` holds fewer keys than the text writes
    (``keys`` from :func:`check_json_limits`); the slow exact pass then names it."""
    if _count_keys(doc) != keys:
        at, key = _first_duplicate(raw)
        raise InputError(path, at, f"key {key!r} appears twice in this object (which value is meant?)")


@cache
def _yaml_base():
    """PyYAML's safe loader with libyaml's C parser where PyYAML was built with it (the scanning and
    parsing, most of the time, in C: about 3.5x faster than the pure-Python loader on a 1 MB
    report) and PyYAML's Python composer, so the checks of :func:`load_yaml` (aliases, depth,
    duplicate keys) still see every node; the pure-Python SafeLoader otherwise."""
    import yaml

    try:
        from yaml._yaml import CParser
    except ImportError:
        return yaml.SafeLoader
    from yaml.composer import Composer
    from yaml.constructor import SafeConstructor
    from yaml.resolver import Resolver

    class Base(CParser, SafeConstructor, Resolver):
        def __init__(self, stream):
            CParser.__init__(self, stream)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)
            self.anchors = {}

        get_single_node = Composer.get_single_node
        compose_document = Composer.compose_document
        compose_node = Composer.compose_node
        compose_scalar_node = Composer.compose_scalar_node
        compose_sequence_node = Composer.compose_sequence_node
        compose_mapping_node = Composer.compose_mapping_node

    return Base


def load_yaml(path: str | Path, limit: int = MAX_PARAMS_BYTES) -> Any:
    """Parse a YAML file safely: no aliases (expansion bombs), no duplicate keys, nesting at most
    :data:`MAX_DEPTH`, size at most ``limit`` (checked before anything is read)."""
    import yaml

    class Loader(_yaml_base()):
        def compose_node(self, parent, index):
            if self.check_event(yaml.AliasEvent):
                mark = self.peek_event().start_mark
                raise yaml.MarkedYAMLError(None, None, "aliases (*name) are not allowed", mark)
            if self.depth > MAX_DEPTH:
                raise yaml.MarkedYAMLError(
                    None, None, f"nested deeper than {MAX_DEPTH} levels", self.peek_event().start_mark
                )
            self.depth += 1
            try:
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

        def construct_mapping(self, node, deep=False):
            seen: set = set()
            for k, _ in node.value:
                key = self.construct_object(k, deep=True)
                if isinstance(key, (str, int, float, bool)) and key in seen:
                    raise yaml.MarkedYAMLError(None, None, f"key {key!r} appears twice", k.start_mark)
                seen.add(key) if isinstance(key, (str, int, float, bool)) else None
            return super().construct_mapping(node, deep=deep)

    path = Path(path)
    text = read_text(path, "YAML file", limit)
    loader = Loader(text)
    loader.depth = 0
    try:
        return loader.get_single_data()
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"line {mark.line + 1} column {mark.column + 1}" if mark else "-"
        raise InputError(path, where, f"not valid YAML: {e.problem or e.context}") from None
    except yaml.YAMLError as e:
        raise InputError(
            path, "-", f"not valid YAML: {str(e).splitlines()[0] if str(e) else type(e).__name__}"
        ) from None
    finally:
        loader.dispose()


@cache
def schema(name: str) -> dict:
    text = resources.files("benchbook").joinpath("schemas", f"{name}.json").read_text("utf-8")
    return json.loads(text)


def json_path(parts) -> str:
    out = "$"
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


def validate(doc: Any, schema_name: str, path: str | Path) -> None:
    """Validate against a bundled JSON Schema and report *every* problem at once.

    One problem raises ``InputError``; several raise ``InputErrors`` (``benchbook validate`` prints one
    ``file: $.path: reason`` line each). The most relevant error (jsonschema's ``best_match``) comes
    first, the rest follow in document order; each reason says how to fix it where the schema can
    tell (the key to add, the values allowed, the key to remove).
    """
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match

    from benchbook.errors import InputErrors

    fmt = doc.get("format") if isinstance(doc, dict) else None
    expected = schema(schema_name)["$id"]
    if isinstance(fmt, str) and fmt != expected and fmt.split("/")[0] == expected.split("/")[0]:
        raise InputError(path, "$.format", f"unsupported version {fmt!r}; this benchbook reads {expected!r}")
    validator = Draft202012Validator(schema(schema_name))
    errors = list(validator.iter_errors(doc))
    if errors:
        best = best_match(errors)
        rest = sorted((e for e in errors if e is not best), key=lambda e: (_path_key(e.absolute_path), e.message))
        problems: list[InputError] = []
        seen: set[tuple[str, str]] = set()
        for e in [best, *rest]:
            where, why = json_path(e.absolute_path), _explain(e)
            if (where, why) not in seen:
                seen.add((where, why))
                problems.append(InputError(path, where, why))
        raise problems[0] if len(problems) == 1 else InputErrors(problems)
    _check_values(doc, path)


def _path_key(parts) -> list[tuple[int, str]]:
    return [(0, f"{p:09d}") if isinstance(p, int) else (1, str(p)) for p in parts]


def _explain(e) -> str:
    """jsonschema's message, shortened, plus how to fix it when the schema says."""
    msg = e.message if len(e.message) <= 200 else e.message[:200] + "…"
    kind = e.validator
    if kind == "required":
        missing = [k for k in e.validator_value if isinstance(e.instance, dict) and k not in e.instance]
        descr = [(e.schema.get("properties", {}).get(k) or {}).get("description") for k in missing]
        hint = "; ".join(f"add {k!r}" + (f" ({d})" if d else "") for k, d in zip(missing, descr, strict=True))
        if "else" in e.schema_path:  # campaign.json: keys results-only campaigns may leave out
            hint += (
                " — needed because not every run is a results run"
                if not e.absolute_path
                else " — needed unless the run's harness is 'results'"
            )
        return f"{msg}: {hint}" if hint else msg
    if kind == "enum":
        return f"{msg}; use one of: {', '.join(repr(v) for v in e.validator_value)}"
    if kind == "const":
        return f"{msg}; expected {e.validator_value!r}"
    if kind == "additionalProperties":
        allowed = sorted(e.schema.get("properties", {}))
        return f"{msg}: remove it or fix its spelling" + (f" (known keys: {', '.join(allowed)})" if allowed else "")
    if kind == "pattern" and e.validator_value == "^[0-9]{4}-[0-9]{2}-[0-9]{2}$":
        return f"{_short(e.instance)} is not a date: write it as YYYY-MM-DD"
    if kind is False or msg.startswith("False schema"):
        return "not allowed here: give either window or the capture files (metrics_before/metrics_after), not both"
    if kind in ("minItems", "minLength", "minProperties"):
        return f"{msg}: it must not be empty"
    return msg


def _short(v: Any) -> str:
    r = repr(v)
    return r if len(r) <= 60 else r[:57] + "…"


_LIMIT = 2.0**63  # tables hold Int64/Float64; no time, token count or memory size comes near this


# fields holding an id or a name (shown in tables, chart labels, element ids, terminal lines): no
# control character at all; other strings (descriptions, notes) may hold tabs and line breaks only
NAME_FIELDS = frozenset(
    {"id", "run", "arm", "label", "title", "name", "environment", "prompt_class", "harness", "scenario", "profile"}
    | {"reference_arm", "baseline", "candidate", "series", "role", "mode", "finish_reason", "format"}
)
_ANY_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_TEXT_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _control_error(path: str | Path, at: tuple, s: str, what: str) -> InputError:
    ch = (_ANY_CONTROL.search(s) or _TEXT_CONTROL.search(s)).group()
    return InputError(path, json_path(at), f"{what} contains the control character \\x{ord(ch):02x}")


def _check_values(doc: Any, path: str | Path) -> None:
    """Reject numbers beyond ±2**63 (they overflow the Int64 columns the tables use) and control
    characters in names (any C0 character or DEL in a key or a name field; in other text, any but
    tab, line feed and carriage return): a NUL in an arm name would reach a chart renderer."""
    stack: list[tuple[Any, tuple, bool]] = [(doc, (), False)]
    while stack:
        v, at, is_name = stack.pop()
        if isinstance(v, dict):
            for k, x in v.items():
                if _ANY_CONTROL.search(k):
                    raise _control_error(path, at + (k,), k, "key")
                stack.append((x, at + (k,), k in NAME_FIELDS))
        elif isinstance(v, list):
            stack.extend((x, at + (i,), is_name) for i, x in enumerate(v))
        elif isinstance(v, str):
            if (_ANY_CONTROL if is_name else _TEXT_CONTROL).search(v):
                raise _control_error(path, at, v, "name" if is_name else "text")
        elif isinstance(v, (int, float)) and not isinstance(v, bool) and not -_LIMIT <= v < _LIMIT:
            raise InputError(path, json_path(at), f"number {v} is out of range (beyond ±2**63)")


# --------------------------------------------------------------------------- computed values -> JSON


def plain(value: Any) -> Any:
    """``value`` as plain JSON types, deterministically: the one serializer for pages' recorded
    values (``<page>.values.json``) and ``benchbook summary --json``.

    Floats are written as computed (Python's shortest round-trip form; rounding is the page's
    display business, never the record's); NaN and ±infinity become ``null`` (JSON has no such
    numbers; a figure that cannot be computed is absent, never a string). Mappings keep their
    order with string keys, tuples become lists, sets sorted lists, dates ISO strings; polars frames
    become lists of row objects, series lists; numpy values their Python equivalents; dataclasses
    their fields (or their ``as_dict()`` when they define one).
    """
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(plain(v) for v in value)
    if isinstance(value, (_dt.date, _dt.datetime)):
        return value.isoformat()
    if isinstance(value, Path):
        return str(value)
    mod = type(value).__module__
    if mod.startswith("polars"):
        if hasattr(value, "to_dicts"):  # DataFrame
            return [plain(r) for r in value.to_dicts()]
        if hasattr(value, "to_list"):  # Series
            return [plain(v) for v in value.to_list()]
    if mod.startswith("numpy") and hasattr(value, "tolist"):
        return plain(value.tolist())
    if hasattr(value, "as_dict") and callable(value.as_dict):
        return plain(value.as_dict())
    if hasattr(value, "__dataclass_fields__"):
        import dataclasses

        return plain({f.name: getattr(value, f.name) for f in dataclasses.fields(value)})
    raise TypeError(f"cannot store a {type(value).__name__} as JSON")


# --------------------------------------------------------------------------- containment

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def control_chars(s: str) -> str | None:
    """The first C0 control character (or DEL) in ``s``, escaped (``\\x00``), or None."""
    m = _CONTROL.search(s)
    return None if m is None else repr(m.group())[1:-1]


def inside(
    root: str | Path,
    path: str | Path,
    named_by: str | Path,
    location: str,
    what: str = "file",
    shown: str | None = None,
) -> Path:
    """``path`` (a file or folder a campaign reads), checked to resolve — after following every
    symlink — inside the campaign folder ``root``; else bad input naming the document and the place
    that referred to it. Nothing is read. Returns ``path`` unchanged."""
    root_real = resolved(root)
    real = resolved(path)
    if real != root_real and not real.is_relative_to(root_real):
        lexical = Path(os.path.normpath(Path(path).absolute()))
        out_by_name = not lexical.is_relative_to(Path(os.path.normpath(Path(root).absolute())))
        how = "leads outside" if out_by_name else "is a symlink out of"
        raise InputError(
            named_by,
            location,
            f"{what} {shown or repr(str(path))} {how} the campaign folder: a campaign reads only its own files",
        )
    return Path(path)


def join_inside(
    root: str | Path, base: str | Path, rel: Any, named_by: str | Path, location: str, what: str = "file"
) -> Path:
    """``base / rel`` for a path a campaign's document names (a run ``path``, a snapshot name …):
    ``rel`` must be a relative path without control characters that stays, after symlinks, inside
    ``root`` (:func:`inside`). An absolute path or a ``../`` leaving the folder is bad input."""
    if not isinstance(rel, str) or not rel:
        raise InputError(named_by, location, f"{what} must be a non-empty relative path, got {rel!r}")
    bad = control_chars(rel)
    if bad is not None:
        raise InputError(named_by, location, f"{what} {rel!r} contains the control character {bad}")
    if os.path.isabs(rel):
        raise InputError(
            named_by, location, f"{what} {rel!r} is an absolute path: name files relative to the campaign folder"
        )
    return inside(root, Path(base) / rel, named_by, location, what, repr(rel))
