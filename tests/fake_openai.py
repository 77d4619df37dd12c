"""A small OpenAI-compatible server for the capture unit tests (tests/test_engine_capture.py runs the
same commands against a real vLLM engine): streamed ``/v1/completions``, ``/v1/models`` with
``max_model_len``, ``/tokenize`` (two tokens a word), and vLLM-named counters on ``/metrics`` that
move with every request, including ``vllm:prefix_cache_hits_total`` for prompts seen before (whole
16-token blocks of a shared beginning, as vLLM counts them)."""

from __future__ import annotations

import contextlib
import http.server
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

BLOCK = 16


def tokens(text: str) -> list[str]:
    return [p for w in text.split() for p in (w, "·")]


@dataclass
class State:
    max_model_len: int = 2048
    token_s: float = 0.002
    serial: bool = False  # one request at a time (a lock), like --max-num-seqs 1
    count_delay_s: float = 0.0  # the counters move this long after a stream's last byte (a busy engine)
    usage_factor: int = 1  # usage.completion_tokens reported as this many times what was generated (a liar)
    non_stream: bool = False  # answer one JSON object, as for stream: false
    counters: dict[str, float] = field(default_factory=dict)
    seen: list[list[str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    serve: threading.Lock = field(default_factory=threading.Lock)
    bodies: list[dict] = field(default_factory=list)

    def add(self, k: str, v: float) -> None:
        with self.lock:
            self.counters[k] = self.counters.get(k, 0.0) + v

    def metrics(self) -> str:
        c = self.counters
        out = []
        for name, kind in (
            ("vllm:num_requests_running", "gauge"),
            ("vllm:num_requests_waiting", "gauge"),
            ("vllm:prompt_tokens_total", "counter"),
            ("vllm:generation_tokens_total", "counter"),
            ("vllm:prefix_cache_queries_total", "counter"),
            ("vllm:prefix_cache_hits_total", "counter"),
        ):
            out.append(f"# TYPE {name} {kind}")
            out.append(f'{name}{{engine="0",model_name="m"}} {c.get(name, 0.0)}')
        out.append("# TYPE vllm:request_success_total counter")
        out.append(
            f'vllm:request_success_total{{engine="0",finished_reason="length",model_name="m"}} {c.get("ok", 0.0)}'
        )
        return "\n".join(out) + "\n"

    def cache_hits(self, toks: list[str]) -> int:
        best = 0
        with self.lock:
            for old in self.seen:
                n = 0
                for a, b in zip(old, toks):
                    if a != b:
                        break
                    n += 1
                best = max(best, n)
            self.seen.append(toks)
        return min(best, len(toks) - 1) // BLOCK * BLOCK


class _Handler(http.server.BaseHTTPRequestHandler):
    state: State
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def _send(self, code: int, body: str, ctype: str = "application/json") -> None:
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):  # noqa: N802
        if self.path == "/metrics":
            self._send(200, self.state.metrics(), "text/plain; version=0.0.4")
        elif self.path == "/v1/models":
            models = [{"id": "m", "object": "model", "max_model_len": self.state.max_model_len}]
            self._send(200, json.dumps({"object": "list", "data": models}))
        elif self.path == "/version":  # vLLM's answer's shape
            self._send(200, json.dumps({"version": "0.0.0+fake"}))
        else:
            self._send(404, '{"detail": "Not Found"}')

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path == "/tokenize":
            self._send(
                200, json.dumps({"count": len(tokens(body["prompt"])), "max_model_len": self.state.max_model_len})
            )
            return
        if self.path != "/v1/completions":
            self._send(404, '{"detail": "Not Found"}')
            return
        st = self.state
        st.bodies.append(body)
        if body.get("model") != "m":
            self._send(404, json.dumps({"error": {"message": f"The model `{body.get('model')}` does not exist."}}))
            return
        toks = tokens(body["prompt"])
        n_out = body["max_tokens"]
        if len(toks) + n_out > st.max_model_len:
            msg = (
                f"This model's maximum context length is {st.max_model_len} tokens. However, your request has "
                f"{len(toks)} input tokens. Please reduce the length of the input messages."
            )
            err = {"error": {"message": msg, "type": "BadRequestError", "param": None, "code": 400}}
            self._send(400, json.dumps(err))
            return
        if st.non_stream:
            usage = {"prompt_tokens": len(toks), "completion_tokens": n_out * st.usage_factor}
            choice = {"index": 0, "text": " t" * n_out, "finish_reason": "length"}
            self._send(200, json.dumps({"object": "text_completion", "choices": [choice], "usage": usage}))
            st.add("ok", 1)
            return
        with st.serve if st.serial else contextlib.nullcontext():
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            st.add("vllm:num_requests_running", 1)
            hits = st.cache_hits(toks)
            for i in range(n_out):
                time.sleep(st.token_s)
                chunk = {"choices": [{"index": 0, "text": " t", "finish_reason": "length" if i == n_out - 1 else None}]}
                self._chunk(f"data: {json.dumps(chunk)}\n\n")
            usage = {"prompt_tokens": len(toks), "completion_tokens": n_out * st.usage_factor}
            usage["total_tokens"] = len(toks) + usage["completion_tokens"]
            self._chunk(f"data: {json.dumps({'choices': [], 'usage': usage})}\n\n")
            self._chunk("data: [DONE]\n\n")
            self._chunk("")

            def count() -> None:
                st.add("vllm:num_requests_running", -1)
                st.add("vllm:prompt_tokens_total", len(toks))
                st.add("vllm:generation_tokens_total", n_out)
                st.add("vllm:prefix_cache_queries_total", len(toks))
                st.add("vllm:prefix_cache_hits_total", hits)
                st.add("ok", 1)

            if st.count_delay_s:
                late = threading.Timer(st.count_delay_s, count)
                late.daemon = True  # a count still pending when the test ends does not hold the worker's exit
                late.start()
            else:
                count()

    def _chunk(self, s: str) -> None:
        data = s.encode()
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


class _Server(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):  # a client hanging up is not the test's business
        pass


@contextlib.contextmanager
def serving(**kw) -> Iterator[tuple[str, State]]:
    st = State(**kw)
    handler = type("H", (_Handler,), {"state": st})
    srv = _Server(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}", st
    finally:
        srv.shutdown()
        srv.server_close()
