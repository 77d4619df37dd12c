"""analysis.checks on the real H200 campaign's own /metrics files (read in place) and on recorded pairs:
prefix-cache share per window, preemption, queueing, token accounting."""

from __future__ import annotations

import json

import pytest

from benchbook.analysis import checks
from benchbook.metrics import prometheus
from benchbook.metrics.profiles import PROFILES
from h200_campaign import H200

VLLM = PROFILES["vllm"]


def _pair(arm: str, before: str, after: str):
    return prometheus.read(H200 / arm / before), prometheus.read(H200 / arm / after)


def _phase_audits(arm: str) -> list[checks.WindowAudit]:
    doc = json.loads((H200 / arm / "phases.json").read_text())
    out = []
    for s in doc["samples"]:
        b, a = _pair(arm, s["metrics_before"], s["metrics_after"])
        out.append(
            checks.audit(
                b, a, VLLM, window=f"{arm}: {s['prompt_class']} repeat {s['round']}", kind="phase sample", run=arm
            )
        )
    return out


def test_cached_rounds_found_in_batch_phases_and_none_in_noprefix():
    batch = {a.window: a for a in _phase_audits("batch")}
    # the same prompt every round: round 0 computes it, rounds 1–3 find all but the last partial block cached
    for r in (1, 2, 3):
        long = batch[f"batch: long repeat {r}"]
        assert (long.prompt_tokens, long.cached_tokens) == (2126, 2112)
        assert long.mostly_cached and long.cache_source == "vllm:prompt_tokens_cached_total"
        assert batch[f"batch: short repeat {r}"].cached_tokens == 176
    assert not batch["batch: long repeat 0"].mostly_cached  # 160 of 2126: the chat template's prefix only
    noprefix = _phase_audits("noprefix")
    assert len(noprefix) == 8 and all(a.cached_tokens == 0 and not a.mostly_cached for a in noprefix)


def test_cache_sources_agree_where_vllm_exports_all_three():
    """prompt_tokens_cached_total, prompt_tokens_by_source{local_cache_hit} and prefix_cache_hits_total
    are three views of one count on vLLM 0.26: each alone gives the same figure."""
    b, a = _pair("batch", "metrics/phase_long_2_before.prom", "metrics/phase_long_2_after.prom")
    got = {q: checks.counter_sum(b, a, VLLM, q)[0] for q in checks.CACHE_SOURCES}
    assert set(got.values()) == {2112.0}
    assert checks.counter_sum(b, a, VLLM, "prefix_cache_queries")[0] == 2126.0


def test_later_ladder_points_are_partly_cache_hits():
    """One --seed for every point: conc2 and conc4 re-send conc1's prompts (almost all cached); conc8 sends
    32 prompts, the first 16 of them conc1's."""
    share = {}
    for p in ("conc1", "conc2", "conc4", "conc8"):
        b, a = _pair("batch", f"metrics/{p}_before.prom", f"metrics/{p}_after.prom")
        share[p] = checks.audit(b, a, VLLM, window=p, kind="ladder step").cached_share
    assert share["conc1"] < 0.15
    assert share["conc2"] > 0.98 and share["conc4"] > 0.98
    assert 0.45 < share["conc8"] < 0.6
    audits = []
    for p in ("conc1", "conc2"):
        b, a = _pair("batch", f"metrics/{p}_before.prom", f"metrics/{p}_after.prom")
        audits.append(checks.audit(b, a, VLLM, window=p, kind="results run", run=p))
    cks = {c["run"]: c for c in checks.run_checks(audits) if c["name"].startswith("prefix cache")}
    # without the campaign's files (seeds, prompt lengths, the points' order) no cause is asserted:
    # tests/test_cache_cause.py finds it ("prompts repeated across points") from them
    assert cks["conc2"]["status"] == "warn" and "reached this server before" in cks["conc2"]["detail"]
    assert "--seed" not in cks["conc2"]["detail"]
    assert cks["conc2"]["mostly_cached"] == ["conc2"]


def test_waiting_and_queue_share_from_the_scrape_series():
    b, a = _pair("batch", "metrics/rate32_before.prom", "metrics/rate32_after.prom")
    lines = (H200 / "batch" / "metrics" / "rate32_scrapes.jsonl").read_text().splitlines()
    scrapes = [prometheus.parse(json.loads(x)["text"], "scrape", checks.audit_names(VLLM)) for x in lines]
    au = checks.audit(b, a, VLLM, window="rate32", kind="ladder step", scrapes=scrapes)
    assert au.waiting_points == len(lines) and au.waiting_max == 6
    assert 0 < au.waiting_mean < au.waiting_max
    assert au.queue_share == pytest.approx(au.queue_s / au.e2e_s) and 0 < au.queue_share < checks.QUEUE_SHARE_WARN
    assert au.preemptions == 0


def _bump(text: str, name: str, by: float) -> str:
    out = []
    for line in text.splitlines():
        if line.startswith(name + "{"):
            k, v = line.rsplit(" ", 1)
            line = f"{k} {float(v) + by}"
        out.append(line)
    return "\n".join(out) + "\n"


def test_preemptions_fail_unless_allowed():
    """A recorded pair whose after-scrape counts 3 preemptions more (the real file with one counter moved)."""
    text = (H200 / "batch" / "metrics" / "conc64_after.prom").read_text()
    b = prometheus.parse(text, "before")
    a = prometheus.parse(_bump(text, "vllm:num_preemptions_total", 3), "after")
    au = checks.audit(b, a, VLLM, window="starved", kind="results run", run="starved")
    assert au.preemptions == 3
    (c,) = [c for c in checks.run_checks([au]) if c["name"].startswith("preemption")]
    assert c["status"] == "fail" and "3 preemption(s)" in c["detail"]
    (c,) = [c for c in checks.run_checks([au], allow_preemption=True) if c["name"].startswith("preemption")]
    assert c["status"] == "warn"


def test_a_short_count_fails_naming_the_request():
    b, a = _pair("batch", "metrics/phase_short_1_before.prom", "metrics/phase_short_1_after.prom")
    sample = {"prompt_class": "short", "repeat": 1, "completion_tokens": 20, "prompt_tokens": 183}
    au = checks.audit(
        b, a, VLLM, window="b: short repeat 1", kind="phase sample", run="b", client=checks._phase_client(sample, 32)
    )
    (c,) = [c for c in checks.run_checks([au]) if c["name"].startswith("token accounting")]
    assert c["status"] == "fail" and "short repeat 1" in c["detail"] and c["short"] == ["short repeat 1"]
    ok = checks._phase_client({**sample, "completion_tokens": 32}, 32)
    au = checks.audit(b, a, VLLM, window="b: short repeat 1", kind="phase sample", run="b", client=ok)
    (c,) = [c for c in checks.run_checks([au]) if c["name"].startswith("token accounting")]
    assert c["status"] == "pass"


def test_engine_counting_fewer_tokens_than_the_client_fails():
    b, a = _pair("batch", "metrics/phase_short_1_before.prom", "metrics/phase_short_1_after.prom")
    au = checks.audit(b, a, VLLM, window="w", kind="results run", run="w", client={"received": 64.0})
    assert au.generation_tokens == 32
    assert checks.token_check(au).status == "fail"


def test_engines_without_a_cache_counter_are_not_measured():
    b, a = _pair("batch", "metrics/phase_short_1_before.prom", "metrics/phase_short_1_after.prom")
    au = checks.audit(b, a, PROFILES["tgi"], window="w", kind="phase sample")
    assert au.cached_tokens is None and au.cached_share is None and au.cache_source.startswith("not measured")
    assert au.preemptions is None and checks.run_checks([au]) == []


def test_sglang_cached_tokens():
    text = (
        "# TYPE sglang:prompt_tokens_total counter\n"
        'sglang:prompt_tokens_total{model_name="m"} {p}\n'
        "# TYPE sglang:cached_tokens_total counter\n"
        'sglang:cached_tokens_total{model_name="m"} {c}\n'
    )
    b = prometheus.parse(text.replace("{p}", "100").replace("{c}", "10"), "b")
    a = prometheus.parse(text.replace("{p}", "1100").replace("{c}", "610"), "a")
    au = checks.audit(b, a, PROFILES["sglang"], window="w", kind="results run")
    assert au.cached_share == pytest.approx(0.6) and au.cache_source == "sglang:cached_tokens_total"
    assert au.preemptions is None  # SGLang exports no preemption counter


# ---- short count: a results run whose file states its output length and ignore_eos ----------------
def _stating(src, dst, **metadata):
    """A copy of a real result file with keys as ``vllm bench serve --metadata K=V`` writes them (the
    H200 runs were made with --random-output-len 128 --ignore-eos, which the file itself does not keep)."""
    doc = json.loads(src.read_text())
    doc.update(metadata)
    dst.write_text(json.dumps(doc))
    return doc


def _inputs(*paths):
    from types import SimpleNamespace

    from benchbook.ingest.formats import read

    return SimpleNamespace(runs=[(p.stem, p.stem, run) for p in paths for run in read(p)])


def test_every_h200_result_file_stating_its_length_passes_the_short_count(tmp_path):
    files = sorted(H200.glob("*/results/bench_*.json"))
    assert {f.parent.parent.name for f in files} == {"serial", "batch", "eager", "noprefix"} and len(files) == 19
    copies = []
    for f in files:
        dst = tmp_path / f"{f.parent.parent.name}-{f.stem}.json"
        _stating(f, dst, random_output_len="128", ignore_eos="true")
        copies.append(dst)
    found = checks.short_count_checks(_inputs(*copies))
    assert [c["run"] for c in found] == [p.stem for p in copies]
    assert all(c["status"] == "pass" and c["asked"] == 128 and c["received_min"] == 128 for c in found)
    # the files as they are state neither the length nor ignore_eos: nothing to test, no check
    assert checks.short_count_checks(_inputs(*files[:3])) == []


def test_a_request_that_received_fewer_tokens_is_a_failed_short_count_naming_the_run(tmp_path):
    dst = tmp_path / "batch-conc8.json"
    doc = json.loads((H200 / "batch" / "results" / "bench_conc8.json").read_text())
    doc["output_lens"][5] = 97  # one request stopped early
    (tmp_path / "src.json").write_text(json.dumps(doc))
    _stating(tmp_path / "src.json", dst, random_output_len="128", ignore_eos="true")
    (c,) = checks.short_count_checks(_inputs(dst))
    assert c["status"] == "fail" and c["name"] == "short count: batch-conc8" and c["short"] == [5]
    assert "1 of 32 requests of batch-conc8" in c["detail"] and "request 5 got 97" in c["detail"]
    # without ignore_eos an EOS may end a request early: not a failure, no check
    _stating(tmp_path / "src.json", dst, random_output_len="128")
    assert checks.short_count_checks(_inputs(dst)) == []


def test_stated_output_length_reads_the_files_settings():
    assert checks.stated_output_length({"params": {"random_output_len": "128", "ignore_eos": "True"}})[:2] == (128, 128)
    assert checks.stated_output_length({"ignore_eos": True, "params": {"output_len": 64}})[:2] == (64, 64)
    ranged = {"ignore_eos": True, "params": {"random_output_len": 128, "random_range_ratio": 0.5}}
    assert checks.stated_output_length(ranged)[:2] == (128, 64)  # vLLM draws each length from [64, 192]
    assert checks.stated_output_length({"params": {"random_output_len": 128}}) is None  # no ignore_eos
    assert checks.stated_output_length({"ignore_eos": "false", "params": {"random_output_len": 128}}) is None
    other = {"ignore_eos": True, "params": {"dataset_name": "sharegpt", "random_output_len": 128}}
    assert checks.stated_output_length(other) is None  # another dataset's default, not what was asked
