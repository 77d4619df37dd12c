"""The prompts ``benchbook capture phases`` and ``capture ladder`` send.

* Prompt classes: ``--prompt NAME=TEXT`` / ``NAME=@FILE``, else the defaults (``short`` 128 words,
  ``long`` 1024 words of plain English).
* The served model's context: ``GET /v1/models`` gives ``max_model_len`` (vLLM, SGLang); where the
  server counts tokens (``POST /tokenize``, vLLM and SGLang), each prompt is counted before anything
  is measured. A default prompt longer than the context minus the generation budget is cut to fit
  (and ``capture.json`` says so); a prompt the user gave is refused with the numbers and the advice
  ``--prompt long=@FILE``. A server without either endpoint gets the prompts as they are.
* Distinct prompts: by default every measured request's prompt starts with a prefix of its own
  (``[benchbook <nonce> <tag>]``), so no request can be served from an engine's prefix cache of an
  earlier one — the prefill measured is a prefill (issue 24). ``--same-prompt`` sends the text
  unchanged every time (the seeds' harness; on a prefix-caching server later rounds are then mostly
  cache hits, which the page reports).
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from benchbook import httpread
from benchbook.commands import openai_answers
from benchbook.errors import InputError

_WORDS = (
    "the engine serves one request at a time while the harness reads its counters before and after "
    "each streamed completion so that prefill and decode can be told apart on the engine clock"
).split()
PREFIX_ROOM = 24  # tokens kept free for the distinct prefix when a default prompt is fitted
ADVICE = (
    "give a shorter prompt of your own, e.g. --prompt long=@long.txt (a file of fewer tokens), "
    "or start the server with a longer context (vLLM: --max-model-len)"
)


def default_prompts() -> dict[str, str]:
    """``short``: 128 words, ``long``: 1024 words of plain English (the seeds used 128 and 1600; a
    long prompt that does not fit the served context is cut to fit, see :func:`fit_prompts`)."""
    return {"short": words(128), "long": words(1024)}


def words(n: int) -> str:
    return " ".join(_WORDS[i % len(_WORDS)] for i in range(n))


def parse_prompt(spec: str) -> tuple[str, str]:
    """``NAME=TEXT`` or ``NAME=@FILE`` -> (name, text)."""
    name, sep, value = spec.partition("=")
    if not sep or not name or not value:
        raise InputError("--prompt", spec[:60], "expected NAME=TEXT or NAME=@FILE (e.g. short='Tell me a story')")
    if not name.replace("-", "").replace("_", "").isalnum():
        raise InputError("--prompt", name, "a prompt class name is letters, digits, - and _")
    if value.startswith("@"):
        from benchbook.jsonfile import read_text

        value = read_text(value[1:], "prompt file")
    return name, value


def new_nonce() -> str:
    """8 hex digits, new for every capture: a prompt of this capture never matches one of an earlier one."""
    return os.urandom(4).hex()


def distinct(text: str, nonce: str, tag: str) -> tuple[str, str]:
    """(prompt, prefix): ``text`` behind a prefix unique to this capture and request. The prefix comes
    first, so the first cache block already differs and nothing after it can hit the prefix cache."""
    prefix = f"[benchbook {nonce} {tag}] "
    return prefix + text, prefix


@dataclass
class ServedModel:
    """What the server says about the model: its context length and whether it counts tokens."""

    max_model_len: int | None = None
    source: str | None = None  # where max_model_len came from
    tokenize: bool = False  # POST /tokenize answered
    notes: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "max_model_len": self.max_model_len,
            "max_model_len_source": self.source,
            "tokenize_endpoint": self.tokenize,
            **({"notes": self.notes} if self.notes else {}),
        }


MAX_ANSWER_BYTES = 16 * 2**20  # /v1/models, /tokenize answers


def served_model(base: str, model: str, timeout_s: float = 10.0) -> ServedModel:
    """``max_model_len`` of ``model`` from ``GET /v1/models`` (None, with a note, where it is not said).
    One deadline for the whole answer and a size limit (:mod:`benchbook.httpread`)."""
    sm = ServedModel()
    try:
        r = httpread.request("GET", base + "/v1/models", timeout_s=timeout_s, max_bytes=MAX_ANSWER_BYTES)
    except httpread.HTTPReadError as e:
        sm.notes.append(f"/v1/models: {e.reason}")
        return sm
    if r.status != 200:
        sm.notes.append(f"/v1/models: HTTP {r.status}")
        return sm
    for m in openai_answers.model_entries(r.body, base + "/v1/models"):  # a malformed answer: exit 4
        if m.get("id") == model:
            n = m.get("max_model_len")
            if isinstance(n, int) and n > 0:
                sm.max_model_len, sm.source = n, "/v1/models max_model_len"
            else:
                sm.notes.append("/v1/models names the model without max_model_len")
            return sm
    sm.notes.append(f"/v1/models does not list {model!r}")
    return sm


def count_tokens(base: str, model: str, text: str, timeout_s: float = 30.0) -> int | None:
    """The server's own token count of ``text`` as a completion prompt (``POST /tokenize``), or None."""
    try:
        r = httpread.request(
            "POST",
            base + "/tokenize",
            timeout_s=timeout_s,
            max_bytes=MAX_ANSWER_BYTES,
            body=json.dumps({"model": model, "prompt": text}).encode(),
            headers={"Content-Type": "application/json"},
        )
    except httpread.HTTPReadError:
        return None
    if r.status != 200:
        return None
    return openai_answers.tokenize_count(r.body, base + "/tokenize")  # a malformed answer: exit 4


def fit_prompts(
    base: str,
    model: str,
    prompts: dict[str, str],
    *,
    max_tokens: int,
    default_classes: Collection[str] = (),
    room: int = PREFIX_ROOM,
) -> tuple[dict[str, str], ServedModel, dict[str, dict[str, Any]]]:
    """The prompts to send, the served model, and per class what was found (``tokens``, ``fitted``).

    Each prompt must leave ``max_tokens`` (+ ``room`` for the distinct prefix) inside the context.
    Default prompts (``default_classes``) are cut (whole words) to fit; prompts the user gave are refused, naming the class,
    its tokens, the context and the advice."""
    sm = served_model(base, model)
    out, facts = {}, {}
    for name, text in prompts.items():
        n = count_tokens(base, model, text)
        if n is not None:
            sm.tokenize = True
        fact: dict[str, Any] = {"tokens_counted": n}
        limit = None if sm.max_model_len is None else sm.max_model_len - max_tokens - room
        if n is not None and limit is not None and n > limit:
            if limit < 1:
                raise InputError(
                    "--max-tokens",
                    str(max_tokens),
                    f"the model's context is {sm.max_model_len} tokens ({sm.source}): no room for a prompt "
                    f"beside {max_tokens} generated tokens",
                )
            if name not in default_classes:
                raise InputError(
                    "--prompt",
                    name,
                    f"{n} prompt tokens + {max_tokens} generated (+{room} for the distinct prefix) exceed the "
                    f"model's context of {sm.max_model_len} tokens ({sm.source}); {ADVICE}",
                )
            words_ = text.split()
            cut = words_
            for _ in range(6):  # shrink by the measured ratio until the server's count fits
                keep = max(1, int(len(cut) * limit / max(n, 1) * 0.98))
                cut = cut[:keep]
                n = count_tokens(base, model, " ".join(cut))
                if n is None or n <= limit:
                    break
            if n is None or n > limit:
                raise InputError("--prompt", name, f"could not fit the default prompt into {limit} tokens; {ADVICE}")
            text = " ".join(cut)
            fact.update(
                {
                    "tokens_counted": n,
                    "fitted": f"cut from {len(words_)} to {len(cut)} words ({n} tokens) to fit the model's context "
                    f"of {sm.max_model_len} tokens with {max_tokens} generated",
                }
            )
        out[name] = text
        facts[name] = fact
    return out, sm, facts


def quote_error(status: int, body: str, *, prompt_advice: bool = True) -> str:
    """A server's error answer, whole (one line: newlines folded), with advice where it may be the prompt."""
    text = " ".join(body.split())
    msg = f"HTTP {status}: {text or '(empty answer)'}"
    low = text.lower()
    if (
        prompt_advice
        and status == 400
        and ("context" in low or "too long" in low or "maximum" in low or "token" in low)
    ):
        msg += f" — if the prompt is too long for the served model: {ADVICE}"
    return msg


def prompts_note(same_prompt: bool, nonce: str, unit: str, same_how: str) -> dict[str, Any]:
    """capture.json's ``prompts``: whether every request's prompt was distinct, and how. ``unit``
    names a request in the prefix (``<class>-<round>``, ``<step>-<index>``); ``same_how`` says what
    ``--same-prompt`` sent."""
    if same_prompt:
        return {"distinct": False, "how": f"--same-prompt: {same_how}"}
    return {
        "distinct": True,
        "nonce": nonce,
        "how": f"each request's prompt starts with its own prefix '[benchbook {nonce} {unit}] ' "
        "(recorded per request as prompt_prefix), so none can be served from the prefix cache of another",
    }


def capture_header(
    *,
    started_unix: float,
    base: str,
    model: str,
    metrics_url: str,
    served: ServedModel,
    profile: Any,
    profile_note: Any,
    prompts: dict[str, str],
    fitted: dict[str, dict[str, Any]],
    note: dict[str, Any],
) -> dict[str, Any]:
    """The part of capture.json that ``capture phases`` and ``capture ladder`` share: when, which
    server and model (its context length as found), the engine's /metrics profile, the prompt
    classes sent (words, the fit to the context) and how the prompts were made distinct."""
    from benchbook.commands.capture_folder import utc

    return {
        "started_at": utc(started_unix),
        "server": {"url": base, "model": model, "metrics_url": metrics_url, **served.as_json()},
        "engine_profile": profile.name if profile else None,
        "engine_profile_note": profile_note,
        "prompt_classes": {
            name: {"words": len(text.split()), "tokens": None, **fitted[name]} for name, text in prompts.items()
        },
        "prompts": note,
    }
