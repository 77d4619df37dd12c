"""``benchbook capture phases``: the seeds' phase harness against any OpenAI-compatible server.

For each round and each prompt class, one streamed ``/v1/completions`` request at a time, with the
engine's ``/metrics`` scraped immediately before and after it. The client records when the request
was sent, when the first stream event arrived and when the stream ended (monotonic clock).
``phases.json``'s ``first_event_s`` is a first event that carries no text yet (a role chunk, as the
seeds' server sends); where the first event already carries generated text (vLLM's
``/v1/completions``) it marks a first token, not such an event, so its time is kept in
``capture.json`` only (``first_event_has_text``). The
result is a ``phases`` run (``phases.json`` + ``metrics/<class>-<repeat>.{before,after}.prom``) in
the campaign format, read by the baseline page exactly like the seeds' runs, plus ``capture.json``.

Every request's prompt starts with a prefix of its own (``capture_prompts.distinct``), so no measured
prefill is served from the engine's prefix cache; ``--same-prompt`` sends the same text every round
(the seeds' harness). Default prompts are cut to the served model's context before anything is sent.
Memory is sampled meanwhile into the run folder (``capture_memory``).

An engine may update its counters a moment after the last byte of the stream (vLLM records stats
after handing the output to the HTTP layer), so the *after* scrape is repeated, for at most
``settle_s`` (``--settle-timeout``), until the success counter has moved (``scrape.settled_after``);
the attribution checks (each count moved by
exactly one) are left to the analysis, as for any phases run.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

import httpx

from benchbook import httpread
from benchbook.analysis import enginemetrics
from benchbook.commands import openai_answers
from benchbook.commands.capture_folder import RunFolder, dump_json, utc
from benchbook.commands.capture_memory import MemorySampling
from benchbook.commands.capture_progress import Progress
from benchbook.commands.capture_prompts import (
    capture_header,
    default_prompts,
    distinct,
    fit_prompts,
    new_nonce,
    parse_prompt,
    prompts_note,
    quote_error,
)
from benchbook.commands.scrape import SETTLE_TIMEOUT_S, MetricsEndpoint, settle_note, settled_after
from benchbook.errors import InputError, SourceError
from benchbook.metrics import prometheus
from benchbook.metrics.profiles import EngineProfile

REQUEST_TIMEOUT_S = 300.0
MAX_STREAM_BYTES = 256 * 2**20  # one streamed completion's events

__all__ = ["capture_phases", "default_prompts", "parse_prompt", "stream_completion"]


@dataclass
class StreamResult:
    start_unix: float
    client_total_s: float
    first_event_s: float | None
    first_event_has_text: bool  # the first event already carries generated text: it is a first token
    prompt_tokens: int | None
    completion_tokens: int | None
    finish_reason: str | None
    events: int
    start_mono: float = 0.0  # time.monotonic() just before the request was sent
    first_token_s: float | None = None  # first event carrying generated text, from start


def check_usage(url: str, step: str, body: dict[str, Any], usage: dict[str, Any]) -> None:
    """The client's word checked where it is received: an answer whose ``usage.completion_tokens``
    exceeds the request's ``max_tokens`` cannot be what the server generated (a server reporting 100x
    the tokens turned a ladder into 51,674 tok/s: issue 34) — refused (SourceError, exit 4)."""
    n, cap = usage.get("completion_tokens"), body.get("max_tokens")
    if isinstance(n, (int, float)) and not isinstance(n, bool) and isinstance(cap, int) and n > cap:
        raise SourceError(
            url,
            f"{step}: the answer's usage.completion_tokens is {n:g}, above the request's max_tokens {cap}: the "
            "server's usage is not what it generated, so no figure of this capture can rest on it (refused)",
        )


def stream_completion(base_url: str, body: dict[str, Any], timeout_s: float, step: str = "request") -> StreamResult:
    """One streamed completion; times on the monotonic clock from just before the request is sent.
    ``timeout_s`` bounds the whole request (connect, every event, the end of the stream), and a line
    without a line feed is cut at :data:`benchbook.httpread.MAX_LINE_BYTES`. A server that answers one
    JSON object instead of a stream (non-streamed) has its ``usage`` and finish reason read from it.
    Completion tokens above ``max_tokens`` are refused (:func:`check_usage`; ``step`` names where)."""
    url = base_url.rstrip("/") + "/v1/completions"
    start_unix = time.time()
    t0 = time.monotonic()
    first = None
    first_text = None
    first_has_text = False
    usage: dict[str, Any] = {}
    finish = None
    events = 0
    payload = json.dumps(body).encode()
    try:
        with httpread.stream(
            "POST",
            url,
            timeout_s=timeout_s,
            max_bytes=MAX_STREAM_BYTES,
            body=payload,
            headers={"Content-Type": "application/json", "Accept": "text/event-stream"},
        ) as r:
            if r.status != 200:
                try:
                    detail = r.read().decode(errors="replace")
                except httpread.HTTPReadError as e:
                    detail = f"(body not read: {e.reason})"
                msg = "/v1/completions answered " + quote_error(r.status, detail)
                if 400 <= r.status < 500:  # the request is wrong (model name, options): bad input
                    raise InputError(url, "-", msg)
                raise SourceError(url, msg)
            plain: list[str] = []  # a non-streamed answer: one JSON object, no data: lines
            for line in r.lines():
                if not line.startswith("data:"):
                    if events == 0 and line.strip():
                        plain.append(line)
                    continue
                now = time.monotonic()
                if first is None:
                    first = now
                data = line[5:].strip()
                if data == "[DONE]":
                    break
                events += 1
                ev = openai_answers.stream_event(data, url, events)  # checked: exit 4 naming the place
                if ev.has_usage:
                    usage = {"prompt_tokens": ev.prompt_tokens, "completion_tokens": ev.completion_tokens}
                if ev.has_text:
                    if events == 1:
                        first_has_text = True
                    if first_text is None:
                        first_text = now
                finish = ev.finish_reason or finish
            if events == 0 and plain:  # not JSON: no usage to read; JSON: checked like an event
                where = "the (non-streamed) answer"
                whole = openai_answers.loads_if_json("\n".join(plain), url, where)
                if whole is not None:
                    ev = openai_answers.completion(whole, url, where)
                    usage = {"prompt_tokens": ev.prompt_tokens, "completion_tokens": ev.completion_tokens}
                    finish = ev.finish_reason
    except httpread.HTTPReadError as e:
        if e.kind == "timeout":
            raise SourceError(
                url, f"the streamed request did not finish within {timeout_s:g} s (--request-timeout)"
            ) from None
        raise SourceError(url, f"request failed: {e.reason}") from None
    end = time.monotonic()
    check_usage(url, step, body, usage)
    return StreamResult(
        start_unix,
        end - t0,
        None if first is None else first - t0,
        first_has_text,
        usage.get("prompt_tokens"),
        usage.get("completion_tokens"),
        finish,
        events,
        t0,
        None if first_text is None else first_text - t0,
    )


def attribution(before: prometheus.Snapshot, after: prometheus.Snapshot, profile: EngineProfile | None) -> str:
    """One line: the engine-clock split of this sample, or why it cannot be attributed (for the console;
    the page decides from the files)."""
    if profile is None:
        return "no engine profile: split left to the analysis"
    try:
        w = enginemetrics.window(before, after, profile)
        e = w.engine()
    except InputError as err:
        return f"not attributable: {err.reason}"
    moved = {k: e.get(k) for k in ("ttft_count", "e2e_count", "successes")}
    off = {k: v for k, v in moved.items() if v != 1}
    if off:
        return "not attributable: " + ", ".join(f"{k} moved by {v if v is None else f'{v:g}'}" for k, v in off.items())
    return f"engine prefill {e['ttft_sum']:.4f} s, decode {e['e2e_sum'] - e['ttft_sum']:.4f} s"


def capture_phases(
    *,
    url: str,
    model: str,
    out: str,
    arguments: dict[str, Any],
    prompts: dict[str, str],
    repeats: int = 3,
    warmup: int = 1,
    max_tokens: int = 32,
    metrics: str | None = None,
    ignore_eos: bool = False,
    request_timeout_s: float = REQUEST_TIMEOUT_S,
    scrape_timeout_s: float = 10.0,
    retries: int = 3,
    settle_s: float = SETTLE_TIMEOUT_S,
    same_prompt: bool = False,
    default_classes: Collection[str] = (),
    arm: str | None = None,
    run: str | None = None,
    point: str | None = None,
    server_pid: int | None = None,
    compress: bool = False,
    log: Callable[[str], None] = print,
) -> RunFolder:
    """Run the harness; returns the folder (``doc["complete"]`` says whether every sample was taken).

    Every request's prompt starts with a prefix of its own unless ``same_prompt`` (capture_prompts);
    ``default_classes``: the classes whose text is benchbook's default, which may be cut to the context."""
    if repeats < 1 or warmup < 0 or max_tokens < 2:
        raise InputError(
            "arguments", "-", "need --repeats >= 1, --warmup >= 0 and --max-tokens >= 2 (a decode phase needs 2 tokens)"
        )
    base = str(httpx.URL(url)).rstrip("/")
    endpoint = MetricsEndpoint(metrics or base + "/metrics", timeout_s=scrape_timeout_s, retries=retries)
    first, snap, profile, why = endpoint.first()  # unreachable / not Prometheus: fail before creating the folder
    try:  # the context length: a prompt that cannot fit is refused before the folder exists
        prompts, served, fitted = fit_prompts(
            base, model, prompts, max_tokens=max_tokens, default_classes=default_classes
        )
    except BaseException:
        endpoint.close()
        raise
    folder = RunFolder(out, "phases", arguments, arm=arm, run=run, point=point, compress=compress)
    folder.server_facts(endpoint.url)  # GET /version (and SGLang's server info) beside the run
    where = folder.doc.get("layout")
    run_id = f"{where['arm']}-{where['run']}-{where['point']}" if where else folder.path.name
    nonce = new_nonce()
    doc = folder.doc
    doc.update(
        {
            **capture_header(
                started_unix=first.unix_s,
                base=base,
                model=model,
                metrics_url=endpoint.url,
                served=served,
                profile=profile,
                profile_note=why,
                prompts=prompts,
                fitted=fitted,
                note=prompts_note(
                    same_prompt,
                    nonce,
                    "<class>-<round>",
                    "the same text every round (the seeds' harness); on a prefix-caching server the later rounds "
                    "are mostly served from the cache",
                ),
            ),
            "generation_tokens": max_tokens,
            "warmup_rounds": warmup,
            "repeats": repeats,
            "request": {"endpoint": "/v1/completions", "stream": True, "temperature": 0.0, "ignore_eos": ignore_eos},
            "files": {
                "phases": "phases.json",
                "metrics": f"metrics/<class>-<repeat>.before{folder.prom} / .after{folder.prom}",
            },
            "samples": [],
        }
    )
    phases = {
        "format": "benchbook.phases/1",
        "run": run_id,
        "warmup_rounds": warmup,
        "distinct_prompts": not same_prompt,
        "samples": [],
    }
    folder.write("phases.json", dump_json(phases))
    sampling = MemorySampling(folder.run_dir, server_pid).start()
    folder.save()
    log(
        f"capture phases: {endpoint.url} ({profile.name if profile else 'no known engine profile: ' + str(why)}); "
        f"{len(prompts)} prompt classes x {warmup + repeats} rounds ({warmup} warm-up) -> {folder.path}"
    )
    total = (warmup + repeats) * len(prompts)
    progress = Progress(total, "samples")  # each line: how far, and about how long is left
    stopped = None
    try:
        for rnd in range(warmup + repeats):
            spans: list[tuple[float, float]] = []
            for name, text in prompts.items():
                prefix = None
                if not same_prompt:
                    text, prefix = distinct(prompts[name], nonce, f"{name}-{rnd}")
                body: dict[str, Any] = {
                    "model": model,
                    "prompt": text,
                    "max_tokens": max_tokens,
                    "temperature": 0.0,
                    "stream": True,
                    "stream_options": {"include_usage": True},
                }
                if ignore_eos:
                    body["ignore_eos"] = True
                stem = f"metrics/{name}-{rnd}"
                before = endpoint.fetch()
                b_snap = endpoint.check(before)
                res = stream_completion(base, body, request_timeout_s, f"{name} round {rnd}")
                spans.append((res.start_unix, res.start_unix + res.client_total_s))
                after, a_snap, settle = settled_after(endpoint, b_snap, profile, 1, settle_s)
                if settle_note(f"{name} #{rnd}", settle):
                    log(settle_note(f"{name} #{rnd}", settle))
                metrics_before = folder.write_metrics(f"{stem}.before", before.text)
                metrics_after = folder.write_metrics(f"{stem}.after", after.text)
                sample: dict[str, Any] = {
                    "prompt_class": name,
                    "repeat": rnd,
                    "warmup": rnd < warmup,
                    "client_total_s": round(res.client_total_s, 6),
                }
                if res.first_event_s is not None and not res.first_event_has_text:
                    # phases.json's first_event_s is an event *before* the first token (a role chunk); a
                    # stream whose first event carries text has none (capture.json keeps the time anyway)
                    sample["first_event_s"] = round(res.first_event_s, 6)
                sample["metrics_before"] = metrics_before
                sample["metrics_after"] = metrics_after
                if prefix is not None:
                    sample["prompt_prefix"] = prefix
                phases["samples"].append(sample)
                folder.write("phases.json", dump_json(phases))
                cls = doc["prompt_classes"][name]
                if res.prompt_tokens is not None and cls["tokens"] is None:
                    cls["tokens"] = res.prompt_tokens  # the first answer's (with its prefix, when distinct)
                doc["samples"].append(
                    {
                        "prompt_class": name,
                        "repeat": rnd,
                        "warmup": rnd < warmup,
                        "start": utc(res.start_unix),
                        "client_total_s": round(res.client_total_s, 6),
                        "first_event_s": None if res.first_event_s is None else round(res.first_event_s, 6),
                        "first_event_has_text": res.first_event_has_text,
                        "prompt_tokens": res.prompt_tokens,
                        "completion_tokens": res.completion_tokens,
                        "finish_reason": res.finish_reason,
                        "stream_events": res.events,
                        "before_at": utc(before.unix_s),
                        "after_at": utc(after.unix_s),
                        "after_scrapes": settle["scrapes"],
                        "settle": settle,
                        "prompt_prefix": prefix,
                    }
                )
                folder.save()
                fe = "-" if res.first_event_s is None else f"{res.first_event_s:.4f}"
                log(
                    f"  {progress.advance()} {name} #{rnd}{' (warm-up)' if rnd < warmup else ''}: client {res.client_total_s:.4f} s, "
                    f"first event {fe} s, {res.prompt_tokens} prompt + {res.completion_tokens} completion tokens "
                    f"({res.finish_reason}); {attribution(b_snap, a_snap, profile)}"
                )
            folder.mark(
                f"{folder.point_name}/round-{rnd}",
                spans[0][0],
                spans[-1][1],
                kind="phases",
                warmup=rnd < warmup,
                requests=len(spans),
            )
            folder.save()
    except KeyboardInterrupt:
        stopped = f"interrupted (Ctrl-C) after {len(phases['samples'])} of {total} samples"
        raise
    except Exception as e:
        stopped = f"stopped by an error after {len(phases['samples'])} of {total} samples: {e}"
        raise
    finally:
        endpoint.close()
        doc["memory_samples"] = sampling.stop()
        folder.finish(stopped, time.time())
    return folder
