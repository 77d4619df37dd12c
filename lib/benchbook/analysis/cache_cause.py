"""Why a window's prompts were served from the prefix cache — found from the files, not assumed
(docs/checks.md, "Why the cache was hit").

For a results run (a load point of a server process) whose engine counted cached prompt tokens, the
cause is the first of these the figures support:

* **the tool's warm-up** — the cached tokens are about one or two of the point's prompts
  (:data:`WARMUP_PROMPTS`): ``vllm bench serve --num-warmups N`` sends the first prompt N times before
  the run, inside the captured window, so every warm-up after the first and the run's own first
  request find it cached (the H200 files: 2,048 of 18,684 prompt tokens at concurrency 1, two 1,038-token
  prompts less their partial last block);
* **prompts repeated across points** — beyond that, and an earlier point of the same server process
  (by the points' windows) sent the same prompts: both files state the same ``--seed`` (a seed the
  file records), or, where neither records one, the same prompt lengths in the same order (what one
  seed of vLLM's random dataset gives); the files' differing seeds or lengths rule it out;
* **repeats inside the run** — beyond the warm-up with no earlier point that sent the same prompts
  (the first point on its server, or every earlier one had other prompts): the point's own dataset or
  harness sent a prompt more than once;
* **a shared prefix** — less than half a prompt: the part every request shares (chat template, system
  prompt).

A point whose server process the campaign does not name (a hand-made manifest without ``process``)
gets no cause beyond the warm-up: which points its server ran before is not in the files.

A window with no cached token says whether prefix caching was on as the engine stated it
(``vllm:cache_config_info`` / the engine-config line, in the run's ``server_config``) — never a guess
that contradicts it. :func:`causes` returns one sentence per results run; ``checks.run_checks`` puts it
in the prefix-cache check, and :func:`caching` serves the phase samples' check the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

WARMUP_PROMPTS = (0.5, 2.5)  # cached tokens within this many of the point's mean prompt: the tool's warm-up


@dataclass(frozen=True)
class Point:
    run: str  # results run id
    process: str | None
    t0: float | None
    prompts: tuple[int, ...]  # prompt tokens per request, in the file's order
    seed: Any  # as the file states it, else None
    dataset: Any

    @property
    def mean_prompt(self) -> float | None:
        return sum(self.prompts) / len(self.prompts) if self.prompts else None


def caching(camp: Any, run_id: str) -> tuple[bool | None, str]:
    """(prefix caching on?, where the engine stated it) for a run of init's layout; (None, "") where no
    file states it."""
    entry = next((r for r in camp.manifest.get("runs", []) if isinstance(r, dict) and r.get("id") == run_id), None)
    sc = entry.get("server_config") if isinstance(entry, dict) else None
    if not isinstance(sc, dict):
        run = next((r for r in camp.runs if r.id == run_id), None)
        args = camp.arms.get(run.arm, {}).get("server_args") if run is not None else None
        v = args.get("enable_prefix_caching") if isinstance(args, dict) else None
        return (v, "the arm's server_args") if isinstance(v, bool) else (None, "")
    v = (sc.get("switches") or {}).get("enable_prefix_caching")
    cache = sc.get("cache") or {}
    src = (
        "vllm:cache_config_info"
        if "enable_prefix_caching" in cache
        else "the engine-config line"
        if "enable_prefix_caching" in (sc.get("engine") or {})
        else "the server's stated configuration"
    )
    return (v, src) if isinstance(v, bool) else (None, "")


def _start(rr: Any, run: Any) -> float | None:
    """When a point started, in Unix seconds: its results.json's ``started_at`` (init writes it from the
    runner's markers), else its result file's ``date`` less ``duration`` (``ingest.windows``)."""
    from benchbook.ingest.windows import result_window, unix

    t = unix(rr.doc.get("started_at"))
    if t is not None:
        return t
    w = result_window(run.config.get("date"), run.summary.get("duration_s"), str(run.source))
    return None if w is None else w.t0


def _points(camp: Any, inputs: Any) -> dict[str, Point]:

    procs = {r.get("id"): r.get("process") for r in camp.manifest.get("runs", []) if isinstance(r, dict)}
    rrs = {rr.id: rr for rr in camp.results_runs}
    per_rr: dict[str, list[Any]] = {}
    for _pid, rid, run in inputs.runs:
        per_rr.setdefault(rid, []).append(run)
    out = {}
    for rid, runs in per_rr.items():
        if len(runs) != 1 or rid not in rrs:
            continue
        run = runs[0]
        df = run.requests
        prompts: tuple[int, ...] = ()
        if df is not None and df.height and "prompt_tokens" in df.columns:
            prompts = tuple(int(x) for x in df["prompt_tokens"].to_list() if x is not None)
        params = run.config.get("params") if isinstance(run.config.get("params"), Mapping) else {}
        seed = run.config.get("seed", params.get("seed"))
        out[rid] = Point(
            rid,
            procs.get(rid),
            _start(rrs[rid], run),
            prompts,
            seed,
            run.config.get("dataset_name", params.get("dataset_name")),
        )
    return out


def _same_prompts(a: Point, b: Point) -> tuple[bool, str]:
    """Whether ``b`` sent the prompts ``a`` sent (as far as the files tell), and on what evidence."""
    if a.seed is not None and b.seed is not None:
        if str(a.seed) != str(b.seed) or str(a.dataset) != str(b.dataset):
            return False, f"another --seed ({a.seed} vs {b.seed})"
        return True, f"the same --seed ({a.seed})"
    n = min(len(a.prompts), len(b.prompts))
    if not n:
        return False, "no prompt lengths to compare"
    if a.prompts[:n] != b.prompts[:n]:
        return False, "other prompt lengths"
    return (
        True,
        "the same prompt lengths in the same order (the files record no --seed: one seed sends the same prompts)",
    )


def _k(x: float) -> str:
    return f"{x:.1f}"


def cause(point: Point, cached: float, earlier: Sequence[Point]) -> str:
    """The sentence for one results run whose engine counted ``cached`` prompt tokens from the cache."""
    mean = point.mean_prompt
    if not mean:
        return "the run's prompt lengths are not recorded, so the cause is not found"
    k = cached / mean
    lo, hi = WARMUP_PROMPTS
    if k < lo:
        return (
            f"a shared prefix: {cached:,.0f} cached tokens are {_k(k)} of this point's {mean:,.0f}-token prompts — the part "
            "every request shares (chat template, system prompt)"
        )
    if k <= hi:
        return (
            f"the tool's warm-up: {cached:,.0f} cached tokens ≈ {_k(k)} of this point's {mean:,.0f}-token prompts — a "
            "warm-up request re-sending the first prompt (vllm bench serve --num-warmups) inside the captured window"
        )
    for e in sorted(earlier, key=lambda p: -(p.t0 or 0)):
        same, how = _same_prompts(e, point)
        if same:
            return (
                f"prompts repeated across points: {cached:,.0f} cached tokens ({_k(k)} prompts) — point {e.run} ran "
                f"earlier on this server with {how}, so its prompts were in the cache"
            )
    if point.process is None:
        return (
            f"prompts this server had seen: {cached:,.0f} cached tokens ({_k(k)} prompts), beyond a warm-up — the "
            "campaign does not say which server process ran this point, so whether an earlier point of the same "
            "server sent them, or the run repeated its own, is not found"
        )
    why = "no earlier point on this server" if not earlier else "every earlier point on this server sent other prompts"
    return (
        f"repeats inside the run: {cached:,.0f} cached tokens ({_k(k)} prompts), beyond a warm-up, and {why} — "
        "the point's own dataset or harness sent a prompt more than once"
    )


def causes(camp: Any, inputs: Any, audits: Sequence[Any]) -> dict[str, str]:
    """Results run id -> why its prompts were (or were not) served from the cache (module docstring)."""
    if inputs is None:
        return {}
    pts = _points(camp, inputs)
    out: dict[str, str] = {}
    for a in audits:
        if a.kind != "results run" or a.cached_tokens is None or a.run not in pts:
            continue
        p = pts[a.run]
        if not a.cached_tokens:
            on, src = caching(camp, a.run)
            out[a.run] = (
                f"prefix caching is off ({src} states enable_prefix_caching False)"
                if on is False
                else f"no prompt of this run was found in the cache, with prefix caching on ({src})"
                if on
                else "no prompt of this run was found in the cache"
            )
            continue
        earlier = [
            q
            for q in pts.values()
            if q.run != p.run
            and q.process is not None
            and q.process == p.process
            and q.t0 is not None
            and p.t0 is not None
            and q.t0 < p.t0
        ]
        out[a.run] = cause(p, a.cached_tokens, earlier)
    return out
