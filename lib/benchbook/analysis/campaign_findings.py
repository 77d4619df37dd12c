"""The campaign's findings: one list, decided once, that every page of the campaign opens with, that
``summary --json`` carries and that the index counts — so none of them can disagree.

:func:`campaign_findings` orders what could make the figures wrong before the figures:

1. **failed checks**, one line per cause (preemption, token accounting, a figure beyond its physical
   limit, a validity gate nothing stands in for, a clamp …), naming and linking the windows or runs;
2. **warnings**, one line per cause: windows served from the prefix cache (with their cached share),
   windows whose latency is mostly queueing (with the share), preemptions where allowed, runs below
   the validity gates that were judged against a spread measured between server processes, a serial
   arm whose ladder is not flat;
3. **results**, worst first, one line per decision — a comparison shown on several pages (the ladder,
   the switch ablation, the compare page carry the same verdict) is one line;
4. what was **not judged**, one line per reason.

:func:`rules` states, once, the rules those verdicts were made by (the noise rule and spread per kind
of figure, the validity gates and what they left unjudged).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from benchbook.findings import Finding, Findings, anchor
from benchbook.numfmt import fmt_pct

CampaignAnalysis = Any  # benchbook.analysis.campaign_analysis.CampaignAnalysis (it imports this module)

Where = tuple[tuple[str, str], ...]

UNRECONCILED = (
    "the engine did not generate the tokens the client's usage reports (token accounting failed), so figures "
    "made from the client's counts are not measured"
)


def miscounted(c: dict[str, Any]) -> bool:
    return c["status"] == "fail" and c["name"].startswith("token accounting")


METRIC_WORDS = {
    "output_throughput": "output tok/s",
    "request_throughput": "req/s",
    **{f"{s}_{m}_ms": f"{'p50' if s == 'median' else s} {n} ms" for s in ("median", "p99")
       for m, n in (("ttft", "TTFT"), ("tpot", "TPOT"), ("itl", "ITL"), ("e2el", "E2E"))},
}  # fmt: skip


def _where(kinds: Sequence[str], *pairs: tuple[str, str]) -> Where:
    return tuple((p, s) for p, s in pairs if p in kinds)


def _span(vals: Sequence[float]) -> str:
    lo, hi = min(vals), max(vals)
    return fmt_pct(lo) if abs(hi - lo) < 5e-4 else f"{fmt_pct(lo)}–{fmt_pct(hi)}"


# ---- checks: failed ones and warnings, one line per cause ---------------------------------------
def _window_lines(an: CampaignAnalysis, kinds: Sequence[str]) -> tuple[list[Finding], list[Finding]]:
    """(failed, warnings) from the audit's windows: prefix cache, queueing, preemption."""
    from benchbook.analysis.checks import CACHED_SHARE, QUEUE_SHARE_WARN

    au = an.audit
    if au is None or not au.windows:
        return [], []
    where = _where(kinds, ("baseline", "audit"), ("compare", "audit"))
    failed, warns = [], []
    cached = [a for a in au.windows if a.cached_share is not None and a.cached_share >= CACHED_SHARE]
    some = [a for a in au.windows if a.cached_share and a.cached_share < CACHED_SHARE]
    if cached:
        text = (
            f"prefix cache: {len(cached)} window(s) served most of their prompt tokens from the cache "
            f"({_span([a.cached_share for a in cached])} not computed)"
            + (f"; {len(some)} more served some ({_span([a.cached_share for a in some])})" if some else "")
            + " — their prefill and latency figures are not those of computed prompts"
        )
        links = _grouped_links(cached, lambda a: a.cached_share)
        warns.append(Finding("warn", text, "audit", links, where, "prefix cache"))
    queued = [a for a in au.windows if a.queue_share is not None and a.queue_share >= QUEUE_SHARE_WARN]
    if queued:
        text = (
            f"queueing: in {len(queued)} window(s) {_span([a.queue_share for a in queued])} of the end-to-end "
            "latency was waiting for a slot, not serving — latency there measures the queue"
        )
        links = _grouped_links(queued, lambda a: a.queue_share)
        warns.append(Finding("warn", text, "audit", links, where, "queueing"))
    pre = [a for a in au.windows if a.preemptions]
    if pre:
        n = sum(a.preemptions or 0 for a in pre)
        text = (
            f"preemption: {n:g} preemption(s) in {len(pre)} window(s) — the engine ran short of KV cache and "
            "recomputed requests, so latency and throughput include that work"
            + (" (allowed by parameter)" if au.allow_preemption else "")
        )
        links = tuple((f"{a.window}: {a.preemptions:g}", anchor("win", a.window)) for a in pre)
        (warns if au.allow_preemption else failed).append(
            Finding("warn" if au.allow_preemption else "fail", text, "audit", links, where, "preemption")
        )
    return failed, warns


def _grouped_links(windows: Iterable[Any], share: Any) -> tuple[tuple[str, str], ...]:
    """One link per run (its windows' share range; the run's first window row), so a phase run's six
    cached rounds are one name, not six."""
    by: dict[str, list[Any]] = {}
    for a in windows:
        by.setdefault(a.run or a.window, []).append(a)
    out = []
    for run, ws in by.items():
        label = run if len(ws) == 1 and ws[0].window == run else f"{run} ({len(ws)} windows)"
        out.append((f"{label} {_span([share(a) for a in ws])}", anchor("win", ws[0].window)))
    return tuple(out)


_WINDOW_CAUSES = ("prefix cache", "queueing", "preemption")


def _check_lines(an: CampaignAnalysis, kinds: Sequence[str]) -> tuple[list[Finding], list[Finding]]:
    """(failed, warnings) from the campaign's other checks, one line per cause and status."""
    where_checks = _where(kinds, ("baseline", "checks"), ("compare", "audit"))
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for c in an.checks:
        cause = c["name"].split(":", 1)[0]
        if c["status"] in ("fail", "warn") and cause not in _WINDOW_CAUSES:
            groups.setdefault((cause, c["status"]), []).append(c)
    failed, warns = [], []
    for (cause, status), cs in groups.items():
        if cause == "serialization":  # which processes were flat and which not, in one line
            arm = {c["name"]: _arm(an, c) for c in an.checks if c["name"].startswith("serialization:")}
            arms = {arm[c["name"]] for c in cs}
            ok = [c["name"].split(": ", 1)[-1] for c in an.checks
                  if c["name"] in arm and arm[c["name"]] in arms and c["status"] == "pass"]  # fmt: skip
            who = ", ".join(c["name"].split(": ", 1)[-1] for c in cs)
            words = cs[0]["detail"].split(" — ")  # its finding, then the reason for the status (not the rest)
            text = f"serialization: {who} — {words[0]}" + (f" — {words[-1]}" if len(words) > 1 else "")
            text += f"; passed: {', '.join(ok)}" if ok else ""
            where = _where(kinds, ("baseline", "results-ladder" if an.results_ladder else "checks"))
            (failed if status == "fail" else warns).append(Finding(status, text, where[0][1] if where else "checks",
                                                                   (), where, cause))  # fmt: skip
            continue
        if len(cs) == 1:
            detail, lead = cs[0]["detail"], cause.split(" at ")[0] + ": "  # its words need not repeat its name
            text = f"{cs[0]['name']}: {detail[len(lead) :] if detail.startswith(lead) else detail}"
        else:
            names = [c["name"].split(":", 1)[-1].strip() for c in cs]
            verb = "failed" if status == "fail" else "warn"
            text = f"{cause}: {len(cs)} checks {verb} ({_names(names)}) — e.g. {cs[0]['detail']}"
        (failed if status == "fail" else warns).append(Finding(status, text, "checks", (), where_checks, cause))
    engine: dict[str, list[tuple[str, Any]]] = {}
    for run_id, checks in an.results_engine_checks:  # the compare page's engine windows, one line per check
        for c in checks:
            if c.status == "fail":
                engine.setdefault(c.name, []).append((run_id, c))
    for name, got in engine.items():
        ids = [r for r, _ in got]
        text = (
            f"{got[0][0]}: {name}: {got[0][1].detail}"
            if len(got) == 1
            else f"{name}: {len(got)} runs failed ({_names(ids)}) — e.g. {got[0][0]}: {got[0][1].detail}"
        )
        failed.append(Finding("fail", text, "compare-checks", (), _where(kinds, ("compare", "compare-checks")), name))
    for r in an.clamps:
        if r.clamped:
            text = f"{r.arm} clamped: " + "; ".join(
                f"{x['setting']} {x['requested']} requested, {x['ran']} ran" for x in r.clamps
            )
            failed.append(Finding("fail", text, "clamps", (), _where(kinds, ("baseline", "clamps")), "clamp"))
    return failed, warns


def _gate_lines(an: CampaignAnalysis, kinds: Sequence[str]) -> tuple[list[Finding], list[Finding]]:
    """Runs below the validity gates: a warning where they were judged against a spread measured
    between server processes, a failed check for the runs nothing stands in for."""
    from benchbook.analysis.gates import gate_lines

    rs = an.results
    if rs is None:
        return [], []
    ok_ids = stand_ins(rs)
    where = _where(kinds, ("compare", "compare-checks"))
    failed, below = [], []
    for _name, text, caught in gate_lines(rs):
        ok = [e for e in caught if e in ok_ids]
        if ok and len(ok) == len(caught):
            below.append(text)
        elif ok:
            below.append(f"{text} — {len(ok)} of them")
            failed.append(Finding("fail", f"{text} — {len(caught) - len(ok)} of them not judged", "compare-checks",
                                  (), where, "validity gates"))  # fmt: skip
        else:
            failed.append(Finding("fail", text, "compare-checks", (), where, "validity gates"))
    warns = (
        [
            Finding(
                "warn",
                f"below the gates: {'; '.join(below)} — judged anyway: two or more server processes "
                "measured the spread at their loads",
                "compare-checks",
                (),
                where,
                "validity gates",
            )  # fmt: skip
        ]
        if below
        else []
    )
    return failed, warns


def stand_ins(rs: Any) -> set[str]:
    """Runs below the gates that a spread measured between server processes stands in for: judged in
    a verdict, or repeated in two or more processes at their own load."""
    judged = {e for v in rs.verdicts for e in v.below_gates}
    for c in rs.configs:
        for p in c.points:
            rep = rs.repeated(p)
            judged |= {
                e.id for e in p.entries if rep and rs.usable(e, rep) and any(g.status == "fail" for g in e.gates)
            }
    return judged


def _names(ids: Sequence[str], n: int = 6) -> str:
    return ", ".join(ids[:n]) + (" …" if len(ids) > n else "")


def _arm(an: CampaignAnalysis, c: dict[str, Any]) -> str | None:
    if c.get("arm"):
        return c["arm"]
    run = c.get("run")
    return next((r.arm for r in an.camp.runs if r.id == run), None)


# ---- results and what was not judged, one line per decision -------------------------------------
def _comparison_lines(
    an: CampaignAnalysis, kinds: Sequence[str], extra: Sequence[tuple] = ()
) -> tuple[list, list[Finding]]:
    """Results (grouped per pair and direction) and what was not judged, from every comparison the
    campaign's pages show; ``extra``: (direction, speedup, "C vs B, figure: N.NNx (±P%)…", page,
    section) of the sub-analyses' results — the one a comparison above already states is not a second
    decision, only another page that shows it."""
    from benchbook.analysis import baseline as bl

    results: dict[tuple, tuple[str, float, Finding]] = {}
    not_judged: dict[tuple, list[str]] = {}
    where_of: dict[tuple, list[tuple[str, str]]] = {}
    text_of: dict[tuple, str] = {}

    def add(key, page, section, direction, speedup, text, is_result, unjudged_why=None):
        if page in kinds:
            where_of.setdefault(key, [])
            if (page, section) not in where_of[key]:
                where_of[key].append((page, section))
        text_of.setdefault(key, text)
        if is_result:
            results.setdefault(key, (direction, speedup, text))
        elif unjudged_why is not None:
            not_judged.setdefault(key, [unjudged_why])

    main = set(an.main_arms())
    runs = {r.id: r.arm for r in an.camp.runs}
    # an arm whose engine did not generate the tokens its client reports: its figures are not measured
    unmeasured = {runs.get(c["run"]) for c in an.checks if c.get("run") and miscounted(c)}
    for c in an.comparisons:
        if c["baseline"] not in main or c["candidate"] not in main:
            continue
        key = (c["baseline"], c["candidate"], c["metric"], c["prompt_class"], c.get("concurrency"))
        name = bl.METRIC_NAMES.get(c["metric"], c["metric"])
        text = (
            f"{c['candidate']} vs {c['baseline']}, {name} ({c['context']}): {c['ratio']:.2f}x ({c['change_pct']:+.1f}%)"
        )
        if c["is_result"] and {c["baseline"], c["candidate"]} & unmeasured:
            add(key, "baseline", "comparisons", None, 1.0, text, False, UNRECONCILED)
            continue
        add(key, "baseline", "comparisons", c.get("direction"), c.get("speedup") or 1.0, text, c["is_result"],
            c["reason"] if c.get("speedup") is None else None)  # fmt: skip
    rl = an.results_ladder or {}
    for c in rl.get("comparisons", []):
        key = (c["baseline"], c["candidate"], "output_throughput", int(c["concurrency"]))
        text = f"{c['candidate']} vs {c['baseline']}, output tok/s at concurrency {c['concurrency']}: {c['ratio']:.2f}x"
        add(key, "baseline", "results-ladder", c["direction"], c["speedup"], text, c["is_result"],
            c["reason"] if c.get("state") == "cannot tell" or c["verdict"] == "no verdict" else None)  # fmt: skip
    sa = an.switch_ablation
    if sa is not None:
        look = {"output tok/s": "output_throughput", "median TPOT": "median_tpot_ms"}
        for r in sa.rows:
            conc = r["context"].removeprefix("concurrency ")
            if r["metric"] in look and conc.isdigit():
                key = (sa.baseline_arm, r["arm"], look[r["metric"]], int(conc))
            else:
                key = ("switch", sa.baseline_arm, r["arm"], r["metric"], r["context"])
            text = (
                f"{r['arm']} ({r['switches']}) vs {sa.baseline_arm}, {r['metric']} ({r['context']}): {r['ratio']:.2f}x"
            )
            if r["is_result"] and {sa.baseline_arm, r["arm"]} & unmeasured:
                add(key, "ablation", "ablation", None, 1.0, text, False, UNRECONCILED)
                continue
            add(key, "ablation", "ablation", r["direction"], r["speedup"], text, r["is_result"],
                r["reason"] if r["verdict"] in ("no verdict", "cannot tell") else None)  # fmt: skip
    rs = an.results
    if rs is not None:
        arm_of = {an.camp.arm_label(a): a for a in an.camp.arms}
        for (b, c, metric, conc), v in rs.verdict_lookup(arm_of).items():
            _result_row(add, (b, c, metric, conc), v, f"concurrency {conc}")
        closed = {id(v) for v in rs.verdict_lookup(arm_of).values()}
        for v in rs.verdicts:
            if id(v) not in closed:
                _result_row(add, (v.baseline, v.candidate, v.metric, v.load), v, v.load)
    for direction, speedup, text, page, section in extra:
        pair = text.split(", ", 1)[0].split(" (")[0]
        c, _, b = pair.partition(" vs ")
        tok = re.search(r"\d+\.\d+x \([+−-]?\d+\.\d%\)", text)
        tok_s = tok.group(0).replace("−", "-") if tok else None
        same = [k for k, r in results.items() if (k[0], k[1]) == (b, c) and tok_s and tok_s in r[2].replace("−", "-")]
        key = same[0] if same else ("sub", b, c, text)
        add(key, page, section, direction, speedup, text, True)
    found = _grouped_results({k: r for k, r in results.items() if where_of.get(k)}, where_of)
    by_pair: dict[tuple[str, str], list[tuple]] = {}
    for k in not_judged:
        if where_of.get(k):
            by_pair.setdefault((k[0], k[1]) if k[0] != "switch" else (k[1], k[2]), []).append(k)
    unjudged = []
    for (b, c), ks in by_pair.items():
        why = _short(not_judged[ks[0]][0])
        what = ", ".join(text_of[k].split(", ", 1)[-1].split(":")[0] for k in ks[:4]) + (" …" if len(ks) > 4 else "")
        wh = tuple(dict.fromkeys(w for k in ks for w in where_of[k]))
        unjudged.append(Finding("unjudged", f"{c} vs {b}: {len(ks)} figure(s) not judged ({what}) — {why}",
                                _first(list(wh)), (), wh))  # fmt: skip
    return found, unjudged


def _grouped_results(results: dict[tuple, tuple[str, float, str]], where_of: dict) -> list:
    """One line per compared pair and direction (``eager vs batch: 19 regressions — …``), its figures
    worst first; counted once per decision. Results shown on no page are left to the summary."""
    groups: dict[tuple, list[tuple[tuple, tuple[str, float, str]]]] = {}
    for k, r in results.items():
        pair = (k[1], k[2]) if k[0] in ("switch", "sub") else (k[0], k[1])
        worse = r[0] == "regression"
        groups.setdefault((*pair, worse), []).append((k, r))
    out = []
    for (b, c, worse), items in groups.items():
        # the throughput figures first (what a comparison of servers is about), then worst first
        items.sort(key=lambda kr: (kr[0][2] not in _RATES, kr[1][1] if worse else -kr[1][1]))
        figs = [r[2].split(", ", 1)[-1] for _, r in items]
        tails = {f.rpartition(" — ")[2] for f in figs if " — " in f}
        common = next(iter(tails)) if len(tails) == 1 and all(" — " in f for f in figs) and len(figs) > 1 else ""
        if common:  # what every figure of the line says is said once, at its end
            figs = [f.rpartition(" — ")[0] for f in figs]
        n = len(items)
        word = (
            ("regression" if worse else "improvement")
            if all(r[0] in ("regression", "improvement") for _, r in items)
            else "result"
        )
        text = (
            f"{c} vs {b}: "
            + (figs[0] if n == 1 else f"{n} {word}s — " + figs[0] + "; …")
            + (f" — {common}" if common else "")
        )
        wh = tuple(dict.fromkeys(w for k, _ in items for w in where_of[k]))
        direction = "regression" if worse else items[0][1][0]
        out.append((direction, items[0][1][1], Finding("result", text, _first(list(wh)), (), wh), n))
    return out


def _result_row(add, key, v, load: str) -> None:
    j = v.judgement
    speedup = j.ratio if v.higher_is_better else 1 / j.ratio
    text = f"{v.candidate} vs {v.baseline}, {METRIC_WORDS.get(v.metric, v.metric)} at {load}: {j.ratio:.3g}x"
    add(key, "compare", "compare-verdicts", j.direction, speedup, text, j.is_result,
        j.why if j.state == "cannot" else None)  # fmt: skip


def _first(where: Sequence[tuple[str, str]] | None) -> str:
    return where[0][1] if where else "findings"


def _short(why: str) -> str:
    """A reason without its figures' detail: what makes a group of rows one line."""
    why = why.split("; no rank test")[0]
    if why.startswith("cannot tell — "):
        why = "cannot tell: " + why.split(": ", 1)[-1]
    return why


def _sub_parts(an: CampaignAnalysis, kinds: Sequence[str]) -> dict[str, list]:
    """The environment ablation's and the PD analyses' own lines, placed on their page."""
    from benchbook.analysis import pd_report

    out: dict[str, list] = {"results": [], "failed": [], "unjudged": []}

    def place(parts: dict[str, list], page: str) -> None:
        for r in parts.get("results", []):  # decided with the campaign's other results (one line per pair)
            out["results"].append((r[0], r[1], r[2], page, r[3]))
        for k in ("failed", "unjudged"):
            for x in parts.get(k, []):
                t, sec = (x.text, x.section) if isinstance(x, Finding) else x
                out[k].append(Finding(k if k == "unjudged" else "fail", t, sec, (), _where(kinds, (page, sec))))

    if an.ablation is not None and "ablation" in kinds:
        place(an.ablation.finding_parts(), "ablation")
    if an.pd is not None:
        place(an.pd.finding_parts(), "pd")
    if an.pd_deployment:
        page = "pd" if "pd" in kinds else "compare"
        place(pd_report.finding_parts(an.pd_deployment), page)
    return out


def campaign_findings(an: CampaignAnalysis) -> Findings:
    """The one findings list of the campaign (see the module docstring)."""
    kinds = an.page_kinds()
    wf, ww = _window_lines(an, kinds)
    cf, cw = _check_lines(an, kinds)
    gf, gw = _gate_lines(an, kinds)
    sub = _sub_parts(an, kinds)
    results, unjudged = _comparison_lines(an, kinds, sub["results"])
    rs = an.results
    if rs is not None:
        where = _where(kinds, ("compare", "compare-sweeps"))
        unjudged += [Finding("unjudged", f"curve {sw.series}: {'; '.join(sw.notes)}", "compare-sweeps", (), where)
                     for sw in rs.sweeps if sw.saturation is None and sw.notes]  # fmt: skip
        unjudged += [
            Finding(
                "unjudged",
                f"{p.other} vs {p.reference}: {p.kind} — {p.reason}",
                "compare-pairings",
                (),
                _where(kinds, ("compare", "compare-pairings")),
            )  # fmt: skip
            for p in rs.pairings
            if p.kind in ("no verdict", "not comparable")
        ]
    from benchbook.analysis import copies, interleave

    base = _where(kinds, ("baseline", "comparisons"))
    unjudged += [
        Finding("unjudged", n, "comparisons", (), base) for n in interleave.not_measured(an.camp, an.main_arms())
    ]
    ex = _where(kinds, ("baseline", "exclusions"), ("compare", "compare-duplicates"))
    unjudged += [Finding("unjudged", line, "exclusions", (), ex) for line in copies.lines(an.copies)]
    sa = an.switch_ablation
    if sa is not None and "ablation" in kinds:
        unjudged += [Finding("unjudged", i["finding"], "interactions", (), (("ablation", "interactions"),))
                     for i in sa.interactions if not i["measured"]]  # fmt: skip
    excluded = [e for e in an.excluded() if not e.reason.startswith("warm-up round")]
    if excluded:
        unjudged.append(
            Finding(
                "unjudged",
                f"{len(excluded)} sample(s) excluded from the statistics besides warm-up rounds; reasons listed",
                "exclusions",
                (),
                _where(kinds, ("baseline", "exclusions")),
            )  # fmt: skip
        )
    return Findings.build(
        failed=[*wf, *cf, *gf, *sub["failed"]],
        warnings=[*ww, *gw, *cw],
        results=results,
        unjudged=[*unjudged, *sub["unjudged"]],
        rules=rules(an),
    )


# ---- files compared outside a campaign ------------------------------------------------------------
def result_set_findings(rs: Any, audit: Any = None) -> Findings:
    """The compare page's findings box from its result set: failed validity gates first, the verdicts
    that are results (worst first: regressions, then by the size of the ratio), and what could not be
    judged (per compared pair, and pairings without a verdict) — the lines the result set's own
    findings list holds, counted the way every other page counts them. ``audit``: the campaign's audit;
    its failed checks (preemption, a short count, a figure beyond its limit) lead the box."""
    from benchbook.analysis.gates import gate_lines

    failed = [
        (f"{c['name']}: {c['detail']}", "audit") for c in (audit.all_checks() if audit else []) if c["status"] == "fail"
    ]
    # one line per failed validity gate with the runs it caught, as the page shows them (issue 23)
    smoke = "smoke: " if rs.preset == "smoke" else ""
    failed += [(smoke + line, "compare-checks") for line in [text for _, text, _ in gate_lines(rs)]]
    results = []
    for v in rs.verdicts:
        j = v.judgement
        if j.is_result:
            text = f"{v.candidate} vs {v.baseline}: {v.metric} {j.ratio:.3g}x, a result ({j.direction})"
            better = j.ratio if v.higher_is_better else 1 / j.ratio
            results.append((j.direction, better, text, "compare-verdicts"))
    cannot: dict[tuple[str, str], list[str]] = {}
    for v in rs.verdicts:
        if v.judgement.state == "cannot":
            cannot.setdefault((v.candidate, v.baseline), []).append(v.judgement.why.split("; no rank test")[0])
    unjudged = [
        (f"{c} vs {b}: cannot tell ({len(whys)} metrics) — {whys[0]}", "compare-verdicts")
        for (c, b), whys in cannot.items()
    ]
    unjudged += [
        (f"{p.other} vs {p.reference}: no verdict — {p.reason}", "compare-pairings")
        for p in rs.pairings
        if p.kind == "no verdict"
    ]
    return Findings.build(results=results, failed=failed, unjudged=unjudged, results_section="compare-verdicts")


# ---- the rules, stated once ---------------------------------------------------------------------
#: each rule in a line for the findings box (the reading guide gives each in full: verdict.RULE_TEXT)
RULE_SHORT = {
    "seed": "a result needs disjoint [min–max] ranges and a difference beyond the spread",
    "strict": "a result needs disjoint ranges and a difference beyond max(2 %, 2 × the spread)",
    "small-n": "a result needs every pairwise difference between the runs to agree in sign and exceed the spread",
}


def rules(an: CampaignAnalysis) -> tuple[str, ...]:
    """How every verdict of the campaign was made, one short sentence per kind of figure, generated
    from what it holds: the rule and the spread it was held against, the validity gates and what they
    left unjudged."""
    from benchbook.analysis import stats

    out = []
    phase = [c for c in an.comparisons if c.get("prompt_class") and c["metric"] in _PHASE]
    kinds = [k for k, on in (("phase figures", bool(phase)), ("ablation", an.ablation is not None)) if on]
    if kinds:
        pn = an.phase_noise or an.noise
        sp = an.phase_spread
        where = (
            f"between the server processes of {pn.arm}" if pn is not None and pn.prompt_class is not None
            else f"between {' and '.join(pn.runs)}" if pn is not None else ""
        )  # fmt: skip
        out.append(
            f"{', '.join(kinds).capitalize()}: {RULE_SHORT.get(an.rule, an.rule)}"
            + (
                f" ({fmt_pct(sp)}, {where})."
                if sp is not None
                else "; no arm was run twice, so none was measured and nothing is called a result."
            )  # fmt: skip
        )
    rs = an.results
    if rs is not None and rs.verdicts:
        spreads = [s for d in rs.spreads.values() for s in d.values()]
        procs = sorted(set(rs.processes.values()))
        n_max = max((len(p.entries) for c in rs.configs for p in c.points), default=1)
        out.append(
            "Result files at matched load: "
            + RULE_SHORT["small-n"]
            + (f" (≥ {stats.MIN_N_FOR_TEST} runs a side: a rank test)" if n_max >= stats.MIN_N_FOR_TEST else "")
            + (
                f" ({_span(spreads)} at the loads, measured between the runs of one arm"
                + (f", {len(procs)} server processes" if procs else "")
                + ")."
                if spreads
                else "; no configuration was repeated at a load, so none was measured."
            )
        )
        g = rs.gates
        if g is not None:
            n_fail = sum(1 for e in rs.entries if any(x.status == "fail" for x in e.gates))
            judged = stand_ins(rs)
            line = f"Validity gates ({g.source}): {g.describe()}"
            if n_fail:
                line += f"; {n_fail} of {len(rs.entries)} runs are below them"
                if judged:
                    line += (
                        f", {len(judged)} judged anyway: two or more server processes measured the spread at their load"
                    )
                if n_fail > len(judged):
                    line += f"; {n_fail - len(judged)} shown but not judged"
            else:
                line += f"; all {len(rs.entries)} runs pass them"
            out.append(line + ".")
    return tuple(out)


_PHASE = ("prefill_tok_s", "decode_tok_s", "prefill_s", "engine_total_s")
_RATES = ("output_throughput", "request_throughput", "ladder_tok_s", "decode_tok_s", "prefill_tok_s", "output tok/s")
