"""The shape of what an OpenAI-compatible server answers ``benchbook capture``: a streamed
``/v1/completions`` event, ``GET /v1/models``, ``POST /tokenize``.

A server is outside benchbook's control, so every answer is checked before a value is taken from it:
JSON at all (and not nested beyond what the parser can follow: a line of 200,000 ``[`` is a
RecursionError in ``json``), objects where objects belong, text where text belongs, token counts
that are whole non-negative numbers. Anything else is the server's fault: :class:`SourceError`
(exit 4) naming the URL and the place (``event 3: $.choices[0].delta``), never an AttributeError
or TypeError from deep inside the capture.

Standard library only: capture runs in an engine's Python environment.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from benchbook.errors import SourceError


def _short(v: Any) -> str:
    s = repr(v) if not isinstance(v, (list, dict)) else json.dumps(v)[:60]
    return s if len(s) <= 60 else s[:57] + "..."


def loads(raw: bytes | str, url: str, where: str) -> Any:
    """``raw`` parsed as JSON; not JSON, or nested deeper than the parser follows, is the server's
    fault (:class:`SourceError` naming ``url`` and ``where``)."""
    try:
        return json.loads(raw)
    except RecursionError:
        raise SourceError(url, f"{where}: JSON nested too deeply to read (a broken or hostile server?)") from None
    except ValueError as e:
        text = raw[:120].decode("utf-8", "replace") if isinstance(raw, bytes) else raw[:120]
        raise SourceError(url, f"{where}: not JSON ({e.__class__.__name__}: {e}): {text!r}") from None


def loads_if_json(raw: bytes | str, url: str, where: str) -> Any:
    """``raw`` parsed as JSON, or None when it is not JSON at all (a page that is no answer of this
    kind); JSON nested deeper than the parser follows is still the server's fault."""
    try:
        return json.loads(raw)
    except ValueError:
        return None
    except RecursionError:
        raise SourceError(url, f"{where}: JSON nested too deeply to read (a broken or hostile server?)") from None


def _object(v: Any, url: str, where: str) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise SourceError(url, f"{where} is {_short(v)}, expected a JSON object")
    return v


def _text(v: Any, url: str, where: str) -> str | None:
    if v is not None and not isinstance(v, str):
        raise SourceError(url, f"{where} is {_short(v)}, expected text")
    return v


def token_count(v: Any, url: str, where: str) -> int | None:
    """A token count from an answer: a whole number >= 0, or None where the server gave none."""
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise SourceError(url, f"{where} is {_short(v)}, expected a token count (a whole number >= 0)")
    return v


@dataclass
class Event:
    """What one stream event says: its usage counts (None where absent), whether a choice carries
    generated text, and the last finish reason it names."""

    prompt_tokens: int | None
    completion_tokens: int | None
    has_usage: bool
    has_text: bool
    finish_reason: str | None


def stream_event(data: str, url: str, n: int) -> Event:
    """One ``data:`` line of a streamed completion (the ``n``-th event), checked."""
    where = f"stream event {n}"
    return completion(loads(data, url, where), url, where)


def completion(chunk: Any, url: str, where: str) -> Event:
    """A completion object (a stream event, or a whole non-streamed answer) already parsed, checked."""
    chunk = _object(chunk, url, where)
    usage = chunk.get("usage")
    prompt = completion = None
    if usage is not None:
        usage = _object(usage, url, f"{where}: $.usage")
        prompt = token_count(usage.get("prompt_tokens"), url, f"{where}: $.usage.prompt_tokens")
        completion = token_count(usage.get("completion_tokens"), url, f"{where}: $.usage.completion_tokens")
    choices = chunk.get("choices")
    if choices is None:
        choices = []
    if not isinstance(choices, list):
        raise SourceError(url, f"{where}: $.choices is {_short(choices)}, expected a list")
    has_text, finish = False, None
    for i, ch in enumerate(choices):
        at = f"{where}: $.choices[{i}]"
        ch = _object(ch, url, at)
        text = _text(ch.get("text"), url, f"{at}.text")
        delta = ch.get("delta")
        content = None
        if delta is not None:
            content = _text(_object(delta, url, f"{at}.delta").get("content"), url, f"{at}.delta.content")
        has_text = has_text or bool(text) or bool(content)
        finish = _text(ch.get("finish_reason"), url, f"{at}.finish_reason") or finish
    return Event(prompt, completion, bool(usage), has_text, finish)


def model_entries(raw: bytes, url: str) -> list[dict[str, Any]]:
    """``GET /v1/models``' ``data``: a list of model objects (``id`` text where given)."""
    doc = _object(loads(raw, url, "$"), url, "$")
    data = doc.get("data")
    if data is None:
        return []
    if not isinstance(data, list):
        raise SourceError(url, f"$.data is {_short(data)}, expected a list of models")
    for i, m in enumerate(data):
        _object(m, url, f"$.data[{i}]")
        _text(m.get("id"), url, f"$.data[{i}].id")
    return data


def tokenize_count(raw: bytes, url: str) -> int | None:
    """``POST /tokenize``'s ``count``; None where the answer has none or is not JSON at all (a server
    without the endpoint behind a catch-all page: the count is recorded as not known). JSON that is
    not an object, too deep, or a count that is not a whole number >= 0 is the server's fault."""
    doc = loads_if_json(raw, url, "$")
    if doc is None:
        return None
    doc = _object(doc, url, "$")
    return token_count(doc.get("count"), url, "$.count")
