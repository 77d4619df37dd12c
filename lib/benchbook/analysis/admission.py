"""Chunked-prefill admission simulator (``benchbook prefill-sim``).

Replays how a prefill scheduler (SGLang's ``PrefillAdder`` path, as the PD seed describes it) packs a
FCFS queue of prompts into prefill batches:

* the per-batch token budget is the per-DP chunk: ``global_chunked_prefill_size / dp``;
* the request currently being chunked goes first;
* a request (or a chunked request's remainder) that fits the remaining budget is admitted whole and
  charged its length rounded *up* to whole pages;
* one that does not fit is cut to the largest whole number of pages that fits, becomes the chunked
  request, and ends the batch;
* at most ``max_requests`` requests per batch (the chunked request counts); first come, first served.

Because the budget is always a whole number of pages, "fits" is the same whether judged on the raw
length or on its page-rounded charge.

16388 tokens with chunk 8192, page 128: ``8192 + 8192 + 4``. 320 such prompts: 960 batches at cap 1,
645 at cap 2. Only the standard library is imported here (the CLI imports this module eagerly).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

from benchbook.errors import InputError, UsageError

__all__ = [
    "Batch",
    "SimResult",
    "per_dp_chunk",
    "simulate",
    "batch_counts_by_cap",
    "read_lengths",
    "add_arguments",
    "run",
]


@dataclass(frozen=True)
class Batch:
    """One prefill batch: ``parts`` is ``[(request index, new tokens), ...]`` in admission order."""

    parts: tuple[tuple[int, int], ...]

    @property
    def new_tokens(self) -> int:
        return sum(n for _, n in self.parts)

    @property
    def requests(self) -> int:
        return len(self.parts)


@dataclass(frozen=True)
class SimResult:
    """The batch sequence and the counts the seed reports."""

    chunk_size: int
    page_size: int
    max_requests: int
    lengths: tuple[int, ...]
    batches: tuple[Batch, ...] = field(repr=False)

    @property
    def batch_count(self) -> int:
        return len(self.batches)

    @property
    def tail_only_batches(self) -> int:
        """Batches whose new tokens are less than one page (e.g. a lone 4-token tail)."""
        return sum(1 for b in self.batches if b.new_tokens < self.page_size)

    @property
    def multi_request_batches(self) -> int:
        """Batches holding two or more requests."""
        return sum(1 for b in self.batches if b.requests >= 2)

    @property
    def requests_per_batch(self) -> dict[int, int]:
        """Histogram: number of requests in a batch -> number of such batches."""
        hist: dict[int, int] = {}
        for b in self.batches:
            hist[b.requests] = hist.get(b.requests, 0) + 1
        return dict(sorted(hist.items()))

    def sequence(self) -> list[list[list[int]]]:
        """Per batch, the list of ``[request index, new tokens]`` (JSON-ready)."""
        return [[[i, n] for i, n in b.parts] for b in self.batches]

    def to_json(self) -> dict:
        return {
            "batches": self.batch_count,
            "sequence": self.sequence(),
            "tail_only_batches": self.tail_only_batches,
            "multi_request_batches": self.multi_request_batches,
        }


def per_dp_chunk(global_chunk_size: int, dp: int) -> int:
    """The per-DP-instance chunk: ``global / dp`` (131072 at DP16 -> 8192). Must divide exactly."""
    if global_chunk_size <= 0 or dp <= 0:
        raise UsageError(f"global chunk size and DP degree must be positive (got {global_chunk_size}, {dp})")
    if global_chunk_size % dp:
        raise UsageError(f"global chunk size {global_chunk_size} is not divisible by DP degree {dp}")
    return global_chunk_size // dp


def _check_settings(chunk_size: int, page_size: int, max_requests: int) -> None:
    for name, v in (("chunk size", chunk_size), ("page size", page_size), ("max requests", max_requests)):
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            raise UsageError(f"{name} must be a positive integer (got {v!r})")
    if chunk_size % page_size:
        raise UsageError(f"chunk size {chunk_size} is not a multiple of page size {page_size}")


def simulate(lengths, chunk_size: int, page_size: int, max_requests: int) -> SimResult:
    """Pack prompts of ``lengths`` tokens (FCFS) into prefill batches; see the module docstring."""
    _check_settings(chunk_size, page_size, max_requests)
    lengths = tuple(int(x) for x in lengths)
    for i, n in enumerate(lengths):
        if n <= 0:
            raise UsageError(f"prompt length of request {i} must be positive (got {n})")

    def pages(n: int) -> int:  # n rounded up to whole pages, in tokens
        return -(-n // page_size) * page_size

    batches: list[Batch] = []
    nxt = 0  # next queued request
    chunked: tuple[int, int] | None = None  # (request index, remaining tokens)
    while chunked is not None or nxt < len(lengths):
        budget = chunk_size
        parts: list[tuple[int, int]] = []
        if chunked is not None:  # the request being chunked goes first
            queue_head = [chunked]
            chunked = None
        else:
            queue_head = []
        while len(parts) < max_requests and budget > 0:
            if queue_head:
                idx, remaining = queue_head.pop()
            elif nxt < len(lengths):
                idx, remaining = nxt, lengths[nxt]
                nxt += 1
            else:
                break
            charge = pages(remaining)
            if charge <= budget:  # fits: admitted whole, charged whole pages
                parts.append((idx, remaining))
                budget -= charge
                continue
            cut = budget // page_size * page_size  # > 0: budget is a positive whole number of pages
            parts.append((idx, cut))
            chunked = (idx, remaining - cut)
            break  # the chunked request ends the batch
        batches.append(Batch(tuple(parts)))
    return SimResult(chunk_size, page_size, max_requests, lengths, tuple(batches))


def batch_counts_by_cap(lengths, chunk_size: int, page_size: int, caps=(1, 2, 3, 4)) -> list[dict]:
    """One row per cap: ``{"max_requests", "batches", "tail_only_batches", "multi_request_batches",
    "new_tokens"}`` — the table the PD page shows (320 x 16388: 960 at cap 1, 645 at cap 2)."""
    rows = []
    for cap in caps:
        r = simulate(lengths, chunk_size, page_size, cap)
        rows.append(
            {
                "max_requests": cap,
                "batches": r.batch_count,
                "tail_only_batches": r.tail_only_batches,
                "multi_request_batches": r.multi_request_batches,
                "new_tokens": sum(b.new_tokens for b in r.batches),
            }
        )
    return rows


def read_lengths(path: str | Path) -> list[int]:
    """Prompt lengths, one positive integer a line; blank lines and ``#`` comments are skipped."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise InputError(p, None, f"cannot read lengths file: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise InputError(p, None, f"not UTF-8 text: {e.reason}") from None
    out: list[int] = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        try:
            n = int(line)
        except ValueError:
            raise InputError(p, f"line {lineno}", f"expected a prompt length (integer), got {line!r}") from None
        if n <= 0:
            raise InputError(p, f"line {lineno}", f"prompt length must be positive, got {n}")
        out.append(n)
    if not out:
        raise InputError(p, None, "no prompt lengths in file")
    return out


# ----------------------------------------------------------------------------------------- CLI


def add_arguments(parser) -> None:
    parser.epilog = (
        "Example (the PD seed): benchbook prefill-sim --prompt-tokens 16388 --requests 320 "
        "--global-chunk-size 131072 --dp 16 --page-size 128 --max-requests 2"
    )
    g = parser.add_argument_group("prompts (one of)")
    g.add_argument("--prompt-tokens", metavar="N", help="length of every prompt (with --requests)")
    g.add_argument("--requests", metavar="M", help="number of prompts of --prompt-tokens each")
    g.add_argument("--lengths-file", metavar="F", help="prompt lengths, one integer a line (FCFS order)")
    c = parser.add_argument_group("chunk budget (one of)")
    c.add_argument("--chunk-size", metavar="C", help="per-DP chunk (token budget per prefill batch)")
    c.add_argument("--global-chunk-size", metavar="G", help="global --chunked-prefill-size (with --dp)")
    c.add_argument("--dp", metavar="D", help="data-parallel degree; per-DP chunk = G / D")
    parser.add_argument("--page-size", metavar="P", required=False, help="KV page size in tokens")
    parser.add_argument("--max-requests", metavar="K", required=False, help="max requests per prefill batch")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def _pos_int(value, flag: str) -> int:
    try:
        n = int(str(value).strip())
    except ValueError:
        raise UsageError(f"{flag} must be a positive integer (got {value!r})") from None
    if n <= 0:
        raise UsageError(f"{flag} must be a positive integer (got {n})")
    return n


def _settings(args) -> tuple[list[int], int, int, int, str]:
    has_fixed = args.prompt_tokens is not None or args.requests is not None
    if has_fixed and args.lengths_file is not None:
        raise UsageError("give either --prompt-tokens/--requests or --lengths-file, not both")
    if has_fixed:
        if args.prompt_tokens is None or args.requests is None:
            raise UsageError("--prompt-tokens and --requests go together")
        lengths = [_pos_int(args.prompt_tokens, "--prompt-tokens")] * _pos_int(args.requests, "--requests")
    elif args.lengths_file is not None:
        lengths = read_lengths(args.lengths_file)
    else:
        raise UsageError("give the prompts: --prompt-tokens N --requests M, or --lengths-file F")

    has_global = args.global_chunk_size is not None or args.dp is not None
    if has_global and args.chunk_size is not None:
        raise UsageError("give either --chunk-size or --global-chunk-size/--dp, not both")
    if has_global:
        if args.global_chunk_size is None or args.dp is None:
            raise UsageError("--global-chunk-size and --dp go together")
        g = _pos_int(args.global_chunk_size, "--global-chunk-size")
        d = _pos_int(args.dp, "--dp")
        chunk = per_dp_chunk(g, d)
        origin = f"global {g} / DP {d}"
    elif args.chunk_size is not None:
        chunk = _pos_int(args.chunk_size, "--chunk-size")
        origin = "per DP"
    else:
        raise UsageError("give the chunk budget: --chunk-size C, or --global-chunk-size G --dp D")

    if args.page_size is None:
        raise UsageError("--page-size is required")
    if args.max_requests is None:
        raise UsageError("--max-requests is required")
    page = _pos_int(args.page_size, "--page-size")
    cap = _pos_int(args.max_requests, "--max-requests")
    if chunk % page:
        raise UsageError(f"chunk size {chunk} is not a multiple of page size {page}")
    return lengths, chunk, page, cap, origin


def run(args) -> int:
    lengths, chunk, page, cap, origin = _settings(args)
    result = simulate(lengths, chunk, page, cap)
    if args.json:
        text = json.dumps(result.to_json(), separators=(",", ":")) + "\n"
    else:
        hist = ", ".join(f"{k} request{'s' if k > 1 else ''}: {v}" for k, v in result.requests_per_batch.items())
        lines = [
            f"prompts: {len(lengths)} (total {sum(lengths)} tokens)",
            f"chunk: {chunk} tokens ({origin}), page: {page} tokens, max requests per batch: {cap}",
            f"batches: {result.batch_count}",
            f"tail-only batches (new tokens < {page}): {result.tail_only_batches}",
            f"multi-request batches: {result.multi_request_batches}",
            f"batches by request count: {hist}",
            "sequence (batch: [request index, new tokens] ...):",
        ]
        width = len(str(result.batch_count))
        for k, b in enumerate(result.batches, start=1):
            lines.append(f"  {k:>{width}}: " + " ".join(f"[{i}, {n}]" for i, n in b.parts))
        text = "\n".join(lines) + "\n"
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:  # `benchbook prefill-sim ... | head`: the reader left, not an error
        import os

        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return 0
