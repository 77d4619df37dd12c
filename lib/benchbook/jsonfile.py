"""Reading input files — bytes, UTF-8 text, JSON — with errors that name the file, the place and the reason;
and the one conversion of computed values to plain JSON (:func:`plain`) that pages' ``values.json``
and ``benchbook summary --json`` share."""

from __future__ import annotations

import datetime as _dt
import json
import math
from collections.abc import Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from benchbook.errors import InputError


def read_bytes(path: str | Path, what: str = "file") -> bytes:
    """The file's bytes; a directory, a missing file or an unreadable one is an InputError."""
    path = Path(path)
    try:
        return path.read_bytes()
    except IsADirectoryError:
        raise InputError(path, "-", f"is a directory, expected a {what}") from None
    except FileNotFoundError:
        raise InputError(path, "-", "file not found") from None
    except OSError as e:
        raise InputError(path, "-", f"cannot read: {e.strerror or e}") from None


def read_text(path: str | Path, what: str = "text file") -> str:
    """The file as UTF-8 text; a bad byte is reported with its line and offset."""
    raw = read_bytes(path, what)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise InputError(path, f"line {line}", f"not UTF-8 (byte 0x{raw[e.start]:02x} at offset {e.start})") from None


def load_json(path: str | Path) -> Any:
    """Parse a JSON file with orjson; NaN/Infinity, truncation and bad bytes are InputErrors."""
    import orjson

    path = Path(path)
    if path.is_dir():
        raise InputError(path, "-", "is a directory, expected a JSON file")
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError(path, "-", "file not found") from None
    except OSError as e:
        raise InputError(path, "-", f"cannot read: {e.strerror or e}") from None
    if not raw.strip():
        raise InputError(path, "-", "file is empty")
    try:
        return orjson.loads(raw)
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
    """Validate against a bundled JSON Schema; the first (deepest) error names its JSON path."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match

    fmt = doc.get("format") if isinstance(doc, dict) else None
    expected = schema(schema_name)["$id"]
    if isinstance(fmt, str) and fmt != expected and fmt.split("/")[0] == expected.split("/")[0]:
        raise InputError(path, "$.format", f"unsupported version {fmt!r}; this benchbook reads {expected!r}")
    validator = Draft202012Validator(schema(schema_name))
    err = best_match(validator.iter_errors(doc))
    if err is not None:
        msg = err.message
        if len(msg) > 200:
            msg = msg[:200] + "…"
        raise InputError(path, json_path(err.absolute_path), msg)
    _check_number_range(doc, path)


_LIMIT = 2.0**63  # tables hold Int64/Float64; no time, token count or memory size comes near this


def _check_number_range(doc: Any, path: str | Path) -> None:
    """Reject numbers beyond ±2**63 (they overflow the Int64 columns the tables use)."""
    stack: list[tuple[Any, tuple]] = [(doc, ())]
    while stack:
        v, at = stack.pop()
        if isinstance(v, dict):
            stack.extend((x, at + (k,)) for k, x in v.items())
        elif isinstance(v, list):
            stack.extend((x, at + (i,)) for i, x in enumerate(v))
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
