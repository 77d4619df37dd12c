"""``benchbook prefill-sim``: the chunked-prefill admission simulator
(:mod:`benchbook.analysis.admission`) from the command line, as text or one JSON object.

Only the standard library and the simulator are imported (the CLI stays fast).
"""

from __future__ import annotations

import json
import sys

from benchbook.analysis import admission
from benchbook.errors import UsageError


def add_arguments(parser) -> None:
    parser.epilog = (
        "Example (the PD campaign in data/pd-prefill-cap: 320 prompts of 16388 tokens): "
        "benchbook prefill-sim --prompt-tokens 16388 --requests 320 "
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
        lengths = admission.read_lengths(args.lengths_file)
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
        chunk = admission.per_dp_chunk(g, d)
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
    result = admission.simulate(lengths, chunk, page, cap)
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
