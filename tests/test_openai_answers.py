"""The shapes benchbook capture accepts from an OpenAI-compatible server (benchbook.commands.openai_answers),
and what a malformed answer does to a capture: exit 4 naming the URL and the place, never an
AttributeError, TypeError or RecursionError (issue 36, class 10). The server is tests/hostile_server.py
with canned answers; each case is its own variant of the issue's."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from benchbook.commands import openai_answers as oa
from benchbook.commands.cli import main
from benchbook.errors import EXIT_SOURCE, SourceError

sys.path.insert(0, str(Path(__file__).parent))
import hostile_server as H  # noqa: E402

URL = "http://127.0.0.1:1/v1/completions"


def test_a_well_formed_event_is_read():
    ev = oa.stream_event(
        json.dumps({"choices": [{"text": "", "delta": {"content": "hi"}, "finish_reason": None}], "usage": None}),
        URL,
        1,
    )
    assert (ev.has_text, ev.has_usage, ev.finish_reason) == (True, False, None)
    ev = oa.stream_event(
        json.dumps({"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 0}}),
        URL,
        4,
    )
    assert (ev.prompt_tokens, ev.completion_tokens, ev.has_text) == (12, 0, False)


@pytest.mark.parametrize(
    ("data", "place"),
    [
        ('{"choices": "none"}', r"stream event 2: \$\.choices is 'none', expected a list"),
        ('{"choices": [null]}', r"stream event 2: \$\.choices\[0\] is None, expected a JSON object"),
        ('{"choices": [{"delta": ["x"]}]}', r"\$\.choices\[0\]\.delta is \[\"x\"\], expected a JSON object"),
        ('{"choices": [{"delta": {"content": 5}}]}', r"\$\.choices\[0\]\.delta\.content is 5, expected text"),
        ('{"choices": [{"text": {"t": 1}}]}', r"\$\.choices\[0\]\.text is \{\"t\": 1\}, expected text"),
        ('{"usage": [3]}', r"\$\.usage is \[3\], expected a JSON object"),
        ('{"usage": {"completion_tokens": 2.5}}', r"\$\.usage\.completion_tokens is 2\.5, expected a token count"),
        ('{"usage": {"prompt_tokens": -1}}', r"\$\.usage\.prompt_tokens is -1, expected a token count"),
        ('{"usage": {"prompt_tokens": true}}', r"\$\.usage\.prompt_tokens is True, expected a token count"),
        ("[1, 2]", r"stream event 2 is \[1, 2\], expected a JSON object"),
        ('{"a": ' * 50_000 + "0" + "}" * 50_000, "stream event 2: JSON nested too deeply"),
        ("{not json", "stream event 2: not JSON"),
    ],
)
def test_a_malformed_event_is_the_servers_fault(data, place):
    with pytest.raises(SourceError, match=place) as e:
        oa.stream_event(data, URL, 2)
    assert e.value.source == URL


def test_models_and_tokenize_answers():
    assert oa.model_entries(b'{"data": [{"id": "m", "max_model_len": 8}]}', "u")[0]["id"] == "m"
    assert oa.model_entries(b'{"object": "list"}', "u") == []
    for raw, place in (
        (b'{"data": {"id": "m"}}', r"\$\.data is \{\"id\": \"m\"\}, expected a list"),
        (b'{"data": ["m"]}', r"\$\.data\[0\] is 'm', expected a JSON object"),
        (b'{"data": [{"id": 7}]}', r"\$\.data\[0\]\.id is 7, expected text"),
        (b"[" * 300_000, "nested too deeply"),
    ):
        with pytest.raises(SourceError, match=place):
            oa.model_entries(raw, "u")
    assert oa.tokenize_count(b'{"count": 31, "tokens": []}', "u") == 31
    assert oa.tokenize_count(b"<html>not here</html>", "u") is None  # a catch-all page: not counted
    with pytest.raises(SourceError, match=r"\$\.count is 'many'"):
        oa.tokenize_count(b'{"count": "many"}', "u")
    with pytest.raises(SourceError, match="nested too deeply"):
        oa.tokenize_count(b'{"c":' * 300_000, "u")


# --------------------------------------------------------------------------- through `capture phases`


@pytest.fixture
def hostile():
    with H.pair() as (server, _target):
        server.canned["/v1/models"] = H.answer(b'{"data": [{"id": "m", "max_model_len": 4096}]}')
        server.canned["/tokenize"] = H.answer(b'{"count": 3}')
        yield server


def _phases(server, tmp_path, capsys) -> tuple[int, str]:
    rc = main(
        ["capture", "phases", "--url", server.url, "--model", "m", "--max-tokens", "2", "--warmup", "0",
         "--repeats", "1", "--prompt", "short=three words here", "--retries", "1", "--out", str(tmp_path / "o")]
    )  # fmt: skip
    return rc, capsys.readouterr().err


@pytest.mark.parametrize(
    ("event", "place"),
    [
        (json.dumps({"choices": [3.5]}), r"\$\.choices\[0\] is 3\.5, expected a JSON object"),
        (json.dumps({"choices": [{"delta": "tok"}]}), r"\$\.choices\[0\]\.delta is 'tok', expected a JSON object"),
        ("[" * 150_000 + "]" * 150_000, "JSON nested too deeply"),
        (
            json.dumps({"choices": [{"text": "a", "finish_reason": "length"}], "usage": {"completion_tokens": "2"}}),
            r"\$\.usage\.completion_tokens is '2', expected a token count",
        ),
    ],
)
def test_capture_phases_with_a_malformed_stream_is_exit_4(hostile, tmp_path, capsys, event, place):
    hostile.canned["/v1/completions"] = H.sse(event)
    rc, err = _phases(hostile, tmp_path, capsys)
    assert rc == EXIT_SOURCE, err
    assert "internal error" not in err
    assert re.search(re.escape(f"{hostile.url}/v1/completions: stream event 1") + ".*" + place, err), err


def test_capture_phases_with_a_malformed_model_list_is_exit_4(hostile, tmp_path, capsys):
    hostile.canned["/v1/models"] = H.answer(b'{"data": 12}')
    rc, err = _phases(hostile, tmp_path, capsys)
    assert rc == EXIT_SOURCE and "internal error" not in err, err
    assert f"{hostile.url}/v1/models: $.data is 12, expected a list of models" in err
    assert "/v1/completions" not in hostile.hits  # refused before any request was sent


def test_prometheus_source_answering_deep_json_is_exit_4(hostile):
    """A Prometheus source whose API answer nests 120,000 objects: SourceError, not RecursionError."""
    from benchbook.metrics import promsource

    hostile.canned["/api/v1/status/buildinfo"] = H.answer(b'{"s":' * 120_000 + b"1" + b"}" * 120_000)
    with promsource.PromClient(hostile.url, timeout=5.0) as c, pytest.raises(SourceError, match="not a Prometheus API"):
        c.buildinfo()


def test_a_non_streamed_answer_is_checked_like_an_event(hostile):
    from benchbook.commands.capture_phases import stream_completion

    hostile.canned["/v1/completions"] = H.answer(
        b'{"choices": [{"text": "ok", "finish_reason": "length"}], "usage": 4}'
    )
    with pytest.raises(SourceError, match=r"the \(non-streamed\) answer: \$\.usage is 4, expected a JSON object"):
        stream_completion(hostile.url, {"prompt": "x", "max_tokens": 2}, 5.0)
    hostile.canned["/v1/completions"] = H.answer(
        b'{"choices": [{"text": "ok", "finish_reason": "length"}], "usage": {"prompt_tokens": 3, "completion_tokens": 2}}'
    )
    r = stream_completion(hostile.url, {"prompt": "x", "max_tokens": 2}, 5.0)
    assert (r.prompt_tokens, r.completion_tokens, r.finish_reason, r.events) == (3, 2, "length", 0)
