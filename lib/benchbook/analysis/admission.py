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
645 at cap 2. Only the standard library is imported here (``benchbook prefill-sim``,
:mod:`benchbook.commands.prefill_sim`, imports this module eagerly).
"""

from __future__ import annotations

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
