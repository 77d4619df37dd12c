"""Client ↔ engine reconciliation and MLPerf-style validity gates for a :class:`BenchmarkRun`.

``reconcile(run, engine)`` compares what the benchmark client saw with the engine's own counter
deltas over the same window (a plain dict: ``generation_tokens``, ``successes``, ``ttft_sum``,
``ttft_count``, ``e2e_sum``, ``e2e_count``; seconds for sums). ``gates(run, ...)`` applies validity
thresholds. Both return a list of :class:`Check` — every check is reported, including the ones
that could not be made (status ``warn``, detail "not checked: ...").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchbook import findings

if TYPE_CHECKING:  # pragma: no cover
    from benchbook.ingest.formats import BenchmarkRun


def figure_check(
    name: str,
    status: str,
    detail: str,
    engine: float | None = None,
    client: float | None = None,
    gap: float | None = None,
    gap_rel: float | None = None,
) -> findings.Check:
    """A :class:`benchbook.findings.Check` with the figures on both sides of it: ``engine`` vs
    ``client`` (or measured vs threshold for gates), ``gap`` = engine − client, ``gap_rel`` = gap / client."""
    return findings.Check(name, status, detail, {"engine": engine, "client": client, "gap": gap, "gap_rel": gap_rel})


def _not_checked(name: str, why: str) -> findings.Check:
    return figure_check(name, "warn", f"not checked: {why}")


def _client_output_tokens(run: BenchmarkRun) -> float | None:
    if run.requests is not None and run.requests["completion_tokens"].null_count() < run.requests.height:
        return float(run.requests["completion_tokens"].sum())  # failed requests' partial tokens too
    return run.summary.get("total_output_tokens")


def reconcile(
    run: BenchmarkRun,
    engine: dict[str, float],
    *,
    tokens_pass_rel: float = 0.01,
    tokens_warn_rel: float = 0.05,
    latency_slack_rel: float = 0.02,
    latency_warn_rel: float = 0.5,
) -> list[findings.Check]:
    """Client figures against engine counter deltas.

    * generation tokens: |Δ − Σ client − warm-ups| / Σ client ≤ ``tokens_pass_rel`` passes (warm-ups:
      the engine's successes beyond the client's completed, × the client's tokens per request), ≤ ``tokens_warn_rel``
      warns (tokenizer re-counts, partial outputs of failed requests), beyond fails;
    * successes: equal passes; engine > client warns (other traffic or warm-up inside the window);
      engine < client fails (the window missed requests, or counters were reset);
    * mean TTFT / E2E: the engine's clock sits inside the client's, so engine ≤ client. Engine above
      client by more than ``latency_slack_rel`` fails; client above engine by more than
      ``latency_warn_rel`` warns (time spent outside the engine: network, queueing in a proxy).
    """
    checks: list[findings.Check] = []

    name = "generation tokens: engine Δ vs client Σ output tokens"
    client = _client_output_tokens(run)
    eng = engine.get("generation_tokens")
    if eng is None or client is None:
        checks.append(
            _not_checked(name, "engine generation_tokens delta absent" if eng is None else "client token count absent")
        )
    elif client == 0:
        st = "pass" if eng == 0 else "fail"
        checks.append(figure_check(name, st, f"engine {eng:g} vs client 0", eng, 0.0, eng, None))
    else:
        gap = eng - client
        # the tool's warm-up requests (vllm bench serve --num-warmups) finish inside the window: the
        # engine counts them, the client does not; allow their tokens at the client's tokens per request
        done, eng_done = run.summary.get("completed"), engine.get("successes")
        warmups = eng_done - done if done and eng_done is not None and eng_done > done else 0
        allowed = warmups * client / done if warmups else 0.0
        rel, off = gap / client, abs(gap - allowed) / client
        st = "pass" if off <= tokens_pass_rel else "warn" if off <= tokens_warn_rel else "fail"
        note = f"; {warmups:g} warm-up requests × {client / done:g} tokens allowed" if warmups else ""
        checks.append(
            figure_check(
                name,
                st,
                f"engine {eng:g} vs client {client:g}: gap {gap:+g} ({rel:+.2%}){note}",
                eng,
                client,
                gap,
                rel,
            )
        )

    name = "successes: engine Δ vs client completed"
    client = run.summary.get("completed")
    eng = engine.get("successes")
    if eng is None or client is None:
        checks.append(
            _not_checked(name, "engine successes delta absent" if eng is None else "client completed count absent")
        )
    else:
        gap = eng - client
        st = "pass" if gap == 0 else "warn" if gap > 0 else "fail"
        why = {"pass": "", "warn": " (engine saw more: other traffic or warm-up inside the window?)",
               "fail": " (engine saw fewer: window missed requests or counters reset)"}[st]  # fmt: skip
        rel = gap / client if client else None
        checks.append(
            figure_check(name, st, f"engine {eng:g} vs client {client:g}: gap {gap:+g}{why}", eng, client, gap, rel)
        )

    for label, key, summary_key, col in (
        ("TTFT", "ttft", "mean_ttft_ms", "ttft_s"),
        ("E2E", "e2e", "mean_e2el_ms", "e2e_s"),
    ):
        name = f"mean {label}: engine vs client"
        s, n = engine.get(f"{key}_sum"), engine.get(f"{key}_count")
        client_ms = run.summary.get(summary_key)
        if client_ms is None and run.requests is not None:
            ok = run.requests.filter(run.requests["success"])[col].drop_nulls()
            client_ms = None if ok.is_empty() else float(ok.mean()) * 1000
        if s is None or not n:
            checks.append(_not_checked(name, f"engine {key}_sum/{key}_count absent or zero count"))
            continue
        if client_ms is None or client_ms == 0:
            checks.append(_not_checked(name, f"client mean {label} absent"))
            continue
        eng_ms = s / n * 1000
        gap = eng_ms - client_ms
        rel = gap / client_ms
        if rel > latency_slack_rel:
            st, why = "fail", "engine above client: the engine's clock should sit inside the client's"
        elif -rel > latency_warn_rel:
            st, why = "warn", "large share of the client's time is spent outside the engine"
        else:
            st, why = "pass", "engine ≤ client"
        checks.append(figure_check(name, st, f"engine {eng_ms:.3f} ms vs client {client_ms:.3f} ms: gap {gap:+.3f} ms ({rel:+.2%}); {why}",
                            eng_ms, client_ms, gap, rel))  # fmt: skip
    return checks


def steady_share(run: BenchmarkRun) -> float | None:
    """Share of the run during which load was still being offered: (last start − first start) /
    (last end − first start), from the requests' ``start_s`` and ``e2e_s``; None if not recorded."""
    df = run.requests
    if df is None or df["start_s"].null_count() == df.height:
        return None
    d = df.drop_nulls("start_s")
    first, last_start = d["start_s"].min(), d["start_s"].max()
    ends = (d["start_s"] + d["e2e_s"]).drop_nulls()
    if ends.is_empty():
        return None
    span = ends.max() - first
    return None if span <= 0 else (last_start - first) / span


def gates(
    run: BenchmarkRun,
    *,
    min_duration_s: float = 60.0,
    min_completed: int = 100,
    max_error_rate: float = 0.01,
    min_steady_share: float = 0.5,
    window: tuple[float, float] | None = None,
) -> list[findings.Check]:
    """Validity gates (MLPerf-style: a run too short or too small, or with too many errors, is not a
    result). ``window`` = (start, end) seconds of the steady-state window inside the run; without it
    the share is estimated from request start times (see :func:`steady_share`)."""
    s = run.summary
    out: list[findings.Check] = []
    d = s.get("duration_s")
    if d is None:
        out.append(_not_checked("minimum duration", "the file records no duration"))
    else:
        out.append(figure_check("minimum duration", "pass" if d >= min_duration_s else "fail",
                         f"{d:.3f} s vs minimum {min_duration_s:g} s", None, d, d - min_duration_s))  # fmt: skip
    c = s.get("completed")
    if c is None:
        out.append(_not_checked("minimum completed requests", "the file records no completed count"))
    else:
        out.append(figure_check("minimum completed requests", "pass" if c >= min_completed else "fail",
                         f"{c} completed vs minimum {min_completed}", None, c, c - min_completed))  # fmt: skip
    failed = s.get("failed")
    if c is None or failed is None:
        out.append(_not_checked("maximum error rate", "completed or failed count absent"))
    elif c + failed == 0:
        out.append(figure_check("maximum error rate", "fail", "no request was sent", None, None))
    else:
        rate = failed / (c + failed)
        out.append(figure_check("maximum error rate", "pass" if rate <= max_error_rate else "fail",
                         f"{failed} of {c + failed} failed = {rate:.2%} vs maximum {max_error_rate:.2%}",
                         None, rate, rate - max_error_rate))  # fmt: skip
    if window is not None:
        if d is None or d <= 0:
            out.append(_not_checked("steady-state share", "the run's duration is unknown"))
            return out
        share = (window[1] - window[0]) / d
        how = f"window {window[0]:g}–{window[1]:g} s of {d:.3f} s"
    else:
        share = steady_share(run)
        if share is None:
            out.append(_not_checked("steady-state share", "no window given and no request start times"))
            return out
        how = "load offered from first to last request start"
    out.append(figure_check("steady-state share", "pass" if share >= min_steady_share else "fail",
                     f"{share:.1%} of the run ({how}) vs minimum {min_steady_share:.0%}",
                     None, share, share - min_steady_share))  # fmt: skip
    return out
