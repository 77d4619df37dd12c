"""The prompts capture sends: fitted to the served context or refused with advice, distinct per
request by default, and a server's error quoted whole (tests/fake_openai.py; the real engine:
tests/test_engine_capture.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import fake_openai
from benchbook.commands.capture_prompts import (
    default_prompts,
    distinct,
    fit_prompts,
    new_nonce,
    quote_error,
    served_model,
)
from benchbook.errors import InputError


def _bb(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "benchbook.commands.cli", *args], capture_output=True, text=True, timeout=60
    )


def test_default_prompts_are_cut_to_the_context_and_the_users_are_refused():
    with fake_openai.serving(max_model_len=1000) as (url, _st):
        assert served_model(url, "m").max_model_len == 1000
        assert served_model(url, "other").max_model_len is None
        prompts, sm, facts = fit_prompts(url, "m", default_prompts(), max_tokens=32, default_classes={"short", "long"})
        # two tokens a word on this server: 1024 words = 2048 tokens > 1000 - 32 - 24
        assert facts["short"] == {"tokens_counted": 256}
        n = facts["long"]["tokens_counted"]
        assert n == len(fake_openai.tokens(prompts["long"])) and 0.9 * 944 <= n <= 944
        assert "cut from 1024 to" in facts["long"]["fitted"] and sm.tokenize is True
        with pytest.raises(InputError) as e:
            fit_prompts(url, "m", {"long": "w " * 600}, max_tokens=32)
        assert (
            "1200 prompt tokens + 32 generated (+24 for the distinct prefix) exceed the model's context of 1000"
            in str(e.value)
        )
        assert "--prompt long=@" in str(e.value)
        with pytest.raises(InputError, match="no room for a prompt"):
            fit_prompts(url, "m", {"short": "hi"}, max_tokens=2000)


def test_a_server_that_says_nothing_of_its_context_gets_the_prompts_as_they_are():
    with fake_openai.serving() as (url, _st):
        prompts, sm, facts = fit_prompts(url + "/nothing-here", "m", {"long": "w " * 5000}, max_tokens=32)
    assert prompts == {"long": "w " * 5000} and sm.max_model_len is None and facts["long"]["tokens_counted"] is None


def test_distinct_prefixes_differ_from_the_first_character_on():
    a, b = new_nonce(), new_nonce()
    assert a != b and len(a) == 8
    p1, x1 = distinct("text", a, "short-1")
    p2, _ = distinct("text", a, "short-2")
    assert p1 == x1 + "text" and p1 != p2 and p1.startswith("[benchbook ")


def test_a_server_error_is_quoted_whole_with_the_advice():
    body = json.dumps({"error": {"message": "This model's maximum context length is 2048 tokens. However, your "
                                 "request has 2335 input tokens.", "type": "BadRequestError", "param": None}})  # fmt: skip
    msg = quote_error(400, body)
    assert msg.startswith("HTTP 400: {") and '"param": null}}' in msg and "--prompt long=@" in msg
    assert quote_error(404, '{"detail":\n "no"}') == 'HTTP 404: {"detail": "no"}'


def test_a_prompt_too_long_is_refused_before_sending_and_the_servers_400_is_quoted_whole(tmp_path):
    with fake_openai.serving(max_model_len=100) as (url, st):
        r = _bb("capture", "phases", "--url", url, "--model", "m", "--prompt", "long=" + "w " * 80,
                "--repeats", "1", "--warmup", "0", "--out", str(tmp_path / "o"))  # fmt: skip
        assert st.bodies == []  # nothing sent
    assert r.returncode == 2 and "160 prompt tokens + 32 generated" in r.stderr and "--prompt long=@" in r.stderr
    assert not (tmp_path / "o").exists()
    from benchbook.commands.capture_phases import stream_completion

    with fake_openai.serving(max_model_len=100) as (url, st), pytest.raises(InputError) as e:
        stream_completion(url, {"model": "m", "prompt": "w " * 80, "max_tokens": 4, "stream": True}, 10)
    whole = 'Please reduce the length of the input messages.", "type": "BadRequestError", "param": null, "code": 400}}'
    assert whole in e.value.reason and "--prompt long=@" in e.value.reason
