"""``benchbook capture ladder``: the seeds' concurrency harness against any OpenAI-compatible server.

Steps, one after the other, each bracketed by a ``/metrics`` scrape before and after:

1. ``warmup`` (``--warmup`` single requests, marked and discarded by the pages);
2. ``single``: one request alone (concurrency 1);
3. ``ladder``: for each k > 1 of ``--concurrency`` (default 1,2,4,8), k streamed requests sent at once;
4. ``interleave`` (``--interleave``): a ``long`` request, and ``--interleave-delay`` seconds later a
   ``short`` one — how long a short request waits behind a long prefill.

Every request is a streamed ``POST /v1/completions`` (``temperature`` 0, ``stream_options.include_usage``).
The client times its start, first token (the first stream event carrying text), and end on its
monotonic clock, counted from the capture's start. The result is a ``requests`` run in the campaign
format (``requests.json``, benchbook.requests/1, read by the baseline page's ladder exactly like the
seeds' runs), ``requests.ndjson`` with the same records plus ``round`` and ``ttft``, the scrapes under
``metrics/<step>.{before,after}.prom``, and ``capture.json``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Collection
from typing import Any

import httpx

from benchbook.commands.capture_folder import RunFolder, dump_json, utc
from benchbook.commands.capture_memory import MemorySampling
from benchbook.commands.capture_phases import REQUEST_TIMEOUT_S, StreamResult, stream_completion
from benchbook.commands.capture_progress import Progress
from benchbook.commands.capture_prompts import capture_header, distinct, fit_prompts, new_nonce, prompts_note
from benchbook.commands.scrape import SETTLE_TIMEOUT_S, MetricsEndpoint, settle_note, settled_after
from benchbook.errors import InputError

INTERLEAVE_DELAY_S = 0.5  # the seeds' harness sent the short request 0.5 s into the long one


def parse_concurrency(spec: str) -> list[int]:
    """``1,2,4,8`` -> [1, 2, 4, 8] (sorted, distinct, each >= 1)."""
    try:
        ks = sorted({int(x) for x in spec.split(",") if x.strip()})
    except ValueError:
        raise InputError("--concurrency", spec, "expected integers separated by commas, e.g. 1,2,4,8") from None
    if not ks or ks[0] < 1:
        raise InputError("--concurrency", spec, "each concurrency must be at least 1")
    return ks


def steps(concurrency: list[int], warmup: int, interleave: bool) -> list[tuple[str, str, list[str]]]:
    """``(step name, scenario, prompt class per request)`` in the order sent."""
    out: list[tuple[str, str, list[str]]] = [(f"warmup-{i}", "warmup", ["short"]) for i in range(warmup)]
    out.append(("single", "single", ["short"]))
    out += [(f"ladder-{k}", "ladder", ["short"] * k) for k in concurrency if k > 1]
    if interleave:
        out.append(("interleave", "interleave", ["long", "short"]))
    return out


def capture_ladder(
    *,
    url: str,
    model: str,
    out: str,
    arguments: dict[str, Any],
    prompts: dict[str, str],
    concurrency: list[int],
    interleave: bool = False,
    interleave_delay_s: float = INTERLEAVE_DELAY_S,
    warmup: int = 1,
    max_tokens: int = 32,
    ignore_eos: bool = False,
    metrics: str | None = None,
    request_timeout_s: float = REQUEST_TIMEOUT_S,
    scrape_timeout_s: float = 10.0,
    retries: int = 3,
    same_prompt: bool = False,
    default_classes: Collection[str] = (),
    arm: str | None = None,
    run: str | None = None,
    point: str | None = None,
    server_pid: int | None = None,
    compress: bool = False,
    settle_s: float = SETTLE_TIMEOUT_S,
    log: Callable[[str], None] = print,
) -> RunFolder:
    need = {"short"} | ({"long"} if interleave else set())
    if not need <= set(prompts):
        raise InputError("--prompt", ", ".join(sorted(prompts)), f"the ladder needs prompt classes {sorted(need)}")
    if warmup < 0 or max_tokens < 1 or interleave_delay_s < 0:
        raise InputError("arguments", "-", "need --warmup >= 0, --max-tokens >= 1 and --interleave-delay >= 0")
    base = str(httpx.URL(url)).rstrip("/")
    endpoint = MetricsEndpoint(metrics or base + "/metrics", timeout_s=scrape_timeout_s, retries=retries)
    first, _snap, profile, why = endpoint.first()  # unreachable / not Prometheus: fail before creating the folder
    try:
        prompts, served, fitted = fit_prompts(
            base,
            model,
            {k: prompts[k] for k in sorted(need)},
            max_tokens=max_tokens,
            default_classes=default_classes,
        )
        folder = RunFolder(out, "ladder", arguments, arm=arm, run=run, point=point, compress=compress)
        folder.server_facts(endpoint.url)  # GET /version (and SGLang's server info) beside the run
    except BaseException:
        endpoint.close()
        raise
    where = folder.doc.get("layout")
    run_id = f"{where['arm']}-{where['run']}-{where['point']}" if where else folder.path.name
    nonce = new_nonce()
    plan = steps(concurrency, warmup, interleave)
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
                note=prompts_note(same_prompt, nonce, "<step>-<index>", "the same text for every request of a class"),
            ),
            "generation_tokens": max_tokens,
            "concurrency": concurrency,
            "warmup_requests": warmup,
            "interleave": {"delay_s": interleave_delay_s} if interleave else None,
            "request": {"endpoint": "/v1/completions", "stream": True, "temperature": 0.0, "ignore_eos": ignore_eos},
            "clock": "start/end/first token: seconds on the client's monotonic clock from t0_unix",
            "t0_unix": round(first.unix_s, 6),
            "files": {
                "requests": "requests.json (benchbook.requests/1), requests.ndjson (+ round, ttft)",
                "metrics": f"metrics/<step>.before{folder.prom} / .after{folder.prom}",
            },
            "steps": [],
        }
    )
    records: list[dict[str, Any]] = []
    nd_lines: list[str] = []
    requests_doc = {"format": "benchbook.requests/1", "run": run_id, "requests": records}
    folder.write("requests.json", dump_json(requests_doc))
    sampling = MemorySampling(folder.run_dir, server_pid).start()
    folder.save()
    log(
        f"capture ladder: {endpoint.url} ({profile.name if profile else 'no known engine profile: ' + str(why)}); "
        f"steps {', '.join(s[0] for s in plan)} -> {folder.path}"
    )
    t0_mono = first.mono_s
    progress = Progress(sum(len(c) for _n, _s, c in plan), "requests")  # how far, about how long is left
    stopped = None
    try:
        for name, scenario, classes in plan:
            before = endpoint.fetch()
            b_snap = endpoint.check(before)
            metrics_before = folder.write_metrics(f"metrics/{name}.before", before.text)
            texts, prefixes = [], []
            for i, cls in enumerate(classes):
                t, p = (prompts[cls], None) if same_prompt else distinct(prompts[cls], nonce, f"{name}-{i}")
                texts.append(t)
                prefixes.append(p)
            delays = [0.0, interleave_delay_s] if scenario == "interleave" else [0.0] * len(classes)
            results = _send_together(base, model, texts, delays, max_tokens, ignore_eos, request_timeout_s, name)
            # the engine counts a finished request a moment after its last byte: wait (bounded) for all n
            after, _a_snap, settle = settled_after(endpoint, b_snap, profile, len(classes), settle_s)
            if settle_note(name, settle):
                log(settle_note(name, settle))
            metrics_after = folder.write_metrics(f"metrics/{name}.after", after.text)
            n = len(classes)
            step_recs = []
            for i, (cls, res) in enumerate(zip(classes, results)):
                rec = {
                    "scenario": scenario,
                    "n": n,
                    "index": i,
                    "prompt_class": cls,
                    "start": round(res.start_mono - t0_mono, 6),
                    "end": round(res.start_mono - t0_mono + res.client_total_s, 6),
                    "prompt_tokens": res.prompt_tokens if res.prompt_tokens is not None else 0,
                    "completion_tokens": res.completion_tokens if res.completion_tokens is not None else 0,
                    "finish_reason": res.finish_reason or "unknown",
                    "stream": True,
                }
                step_recs.append((rec, res))
                records.append(rec)
                c = doc["prompt_classes"][cls]
                if res.prompt_tokens is not None and c["tokens"] is None:
                    c["tokens"] = res.prompt_tokens
            for rec, res in step_recs:
                line = {"round": 0, **rec}
                if res.first_token_s is not None:
                    line["ttft"] = round(res.first_token_s, 6)
                nd_lines.append(json.dumps(line))
            folder.mark(
                f"{folder.point_name}/{name}",
                min(res.start_unix for res in results),
                max(res.start_unix + res.client_total_s for res in results),
                kind="ladder",
                scenario=scenario,
                requests=n,
            )
            folder.write("requests.json", dump_json(requests_doc))
            folder.write("requests.ndjson", "\n".join(nd_lines) + "\n")
            doc["steps"].append(
                {
                    "step": name,
                    "scenario": scenario,
                    "n": n,
                    "metrics_before": metrics_before,
                    "metrics_after": metrics_after,
                    "before_at": utc(before.unix_s),
                    "after_at": utc(after.unix_s),
                    "settle": settle,
                    "requests": [
                        {
                            "index": r["index"],
                            "prompt_class": r["prompt_class"],
                            "start_at": utc(res.start_unix),
                            "first_token_s": None if res.first_token_s is None else round(res.first_token_s, 6),
                            "prompt_prefix": prefixes[r["index"]],
                            "usage_missing": res.prompt_tokens is None or res.completion_tokens is None,
                        }
                        for r, res in step_recs
                    ],
                }
            )
            folder.save()
            wall = max(r["end"] for r, _ in step_recs) - min(r["start"] for r, _ in step_recs)
            toks = sum(r["completion_tokens"] for r, _ in step_recs)
            log(
                f"  {progress.advance(n)} {name}: {n} request{'s' * (n > 1)}, wall {wall:.3f} s, {toks} tokens, "
                f"{toks / wall if wall > 0 else float('nan'):.1f} tok/s; latencies "
                + ", ".join(f"{r['end'] - r['start']:.3f}" for r, _ in step_recs)
            )
    except KeyboardInterrupt:
        stopped = f"interrupted (Ctrl-C) after {len(doc['steps'])} of {len(plan)} steps"
        raise
    except Exception as e:
        stopped = f"stopped by an error after {len(doc['steps'])} of {len(plan)} steps: {e}"
        raise
    finally:
        endpoint.close()
        doc["memory_samples"] = sampling.stop()
        folder.finish(stopped, time.time())
    return folder


def _send_together(
    base: str,
    model: str,
    texts: list[str],
    delays: list[float],
    max_tokens: int,
    ignore_eos: bool,
    timeout_s: float,
    step: str = "step",
) -> list[StreamResult]:
    """Send the requests at once (request i ``delays[i]`` seconds after the first); the results in order.
    Any request's failure fails the step (a partial step would not be a concurrency-k measurement)."""
    results: list[StreamResult | None] = [None] * len(texts)
    errors: list[BaseException | None] = [None] * len(texts)
    go = threading.Event()
    t_go = [0.0]

    def one(i: int) -> None:
        go.wait()
        wait = t_go[0] + delays[i] - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        body: dict[str, Any] = {
            "model": model,
            "prompt": texts[i],
            "max_tokens": max_tokens,
            "temperature": 0.0,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if ignore_eos:
            body["ignore_eos"] = True
        try:
            results[i] = stream_completion(base, body, timeout_s, f"{step} request {i}")
        except BaseException as e:  # noqa: BLE001 - handed to the main thread, re-raised there
            errors[i] = e

    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(len(texts))]
    for t in threads:
        t.start()
    t_go[0] = time.monotonic()
    go.set()
    for t in threads:
        t.join()
    for e in errors:
        if e is not None:
            raise e
    return [r for r in results if r is not None]
