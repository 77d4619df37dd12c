"""analysis.audit through the campaign's one analysis, summary --json and the pages, on a campaign built at
test time from the shared H200 campaign's files (tests/h200_campaign.py)."""

from __future__ import annotations

import json

import polars as pl
import pytest

from benchbook.analysis.campaign_analysis import analyse
from benchbook.errors import InputError
from h200_campaign import H200, build

RESULTS = (("serial", "conc1"), ("batch", "conc1"), ("batch", "conc2"))


@pytest.fixture(scope="module")
def camp_dir(tmp_path_factory):
    return build(tmp_path_factory.mktemp("h200"), phases=("batch", "noprefix"), results=RESULTS)


def _prefill(an, arm):
    pc = an.phase_cells
    return pc.filter((pl.col("arm") == arm) & (pl.col("metric") == "prefill_tok_s"))


def test_cached_phase_samples_leave_the_prefill_figures(camp_dir):
    an = analyse(camp_dir)
    assert _prefill(an, "batch").height == 0  # every measured round of batch/ was served from the cache
    assert _prefill(an, "noprefix").height == 2  # short and long, computed every round
    decode = an.phase_cells.filter((pl.col("arm") == "batch") & (pl.col("metric") == "decode_tok_s"))
    assert decode.height == 2 and set(decode["n"].to_list()) == {3}  # the decode figures stay
    cached = [e for e in an.exclusions() if e["reason"].startswith("cached prefill")]
    assert len(cached) == 6 and all("phases-batch" in e["sample"] for e in cached)
    assert any("2112 of 2126 prompt tokens (99.3 %)" in e["reason"] for e in cached)
    # the interval rate of 1e6 tok/s the cached rounds gave is gone: only noprefix has one
    assert [r.arm for r in an.interval_rates] == ["noprefix"]
    kept = analyse(camp_dir, cached_prefill="keep")
    assert _prefill(kept, "batch").height == 2 and kept.audit.cached_prefill == "keep"
    long = {a: _prefill(kept, a).filter(pl.col("prompt_class") == "long")["median"][0] for a in ("batch", "noprefix")}
    assert long["batch"] > 1.5 * long["noprefix"]
    # kept, the cached long prefill (~80k tok/s) is beyond the H200's dense-bf16 ceiling for 7.47 B parameters
    # (~66k tok/s): the limit check fails, as a figure no hardware allows must
    (beyond,) = [lim for lim in kept.audit.limits if lim.beyond]
    assert beyond.kind == "prefill ceiling" and beyond.arm == "batch" and "long" in beyond.what
    assert any(c["status"] == "fail" and c["name"].startswith("prefill ceiling: batch") for c in kept.checks)
    with pytest.raises(InputError, match="cached_prefill"):
        analyse(camp_dir, cached_prefill="maybe")


def test_campaign_checks_name_cache_limits_and_energy(camp_dir):
    an = analyse(camp_dir)
    by = {c["name"]: c for c in an.checks}
    cache = by["prefix cache: phases-batch (8 phase samples)"]
    assert cache["status"] == "warn" and "same prompt text every round" in cache["detail"]
    assert by["prefix cache: phases-noprefix (8 phase samples)"]["status"] == "pass"
    assert by["prefix cache: batch-conc2 (1 results run)"]["cached_share"] > 0.98
    # a hand-made campaign names no server process: the cause beyond the warm-up is not asserted
    assert "is not found" in by["prefix cache: batch-conc2 (1 results run)"]["detail"]
    assert "--seed" not in by["prefix cache: batch-conc2 (1 results run)"]["detail"]
    assert all(c["status"] == "pass" for n, c in by.items() if n.startswith(("preemption", "token accounting")))
    floor = by["decode floor: serial-conc1: median TPOT at concurrency 1"]
    assert floor["status"] == "pass" and floor["share"] == pytest.approx(0.64, abs=0.01)
    # the phase split's decode rate of noprefix at batch 1 is below the floor too (a floor: engine time incl. assembly)
    dec = [lim for lim in an.audit.limits if lim.kind == "decode floor" and lim.arm == "noprefix"]
    assert dec and all(0.3 < lim.share < 1 for lim in dec)
    pre = [lim for lim in an.audit.limits if lim.kind == "prefill ceiling"]
    assert {lim.arm for lim in pre} == {"noprefix"} and all(lim.share < 1 for lim in pre)
    e = {w.window: w for w in an.audit.energy}
    assert set(e) == {"serial-conc1", "batch-conc1", "batch-conc2"}
    assert 2.3 < e["serial-conc1"].j_per_token < 2.8  # engine tokens over the capture span (warm-ups included)
    assert e["batch-conc2"].j_per_token < 0.6 * e["batch-conc1"].j_per_token
    assert e["serial-conc1"].idle_w and e["serial-conc1"].idle_w < e["serial-conc1"].mean_w
    (cmp_,) = an.audit.energy_comparisons
    assert cmp_["baseline"] == "serial-results" and cmp_["candidate"] == "batch-results"


def test_summary_json_carries_the_audit(camp_dir, capsys):
    from benchbook.commands.cli import main

    assert main(["summary", str(camp_dir), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    au = doc["audit"]
    assert au["cached_prefill"] == "exclude" and len(au["windows"]) == 16 + 3
    assert {lim["kind"] for lim in au["limits"]} == {"decode floor", "prefill ceiling"}
    assert all(w["j_per_token"] for w in au["energy"])
    assert any(c["name"].startswith("decode floor") for c in doc["checks"])


def _bump(path, name, by):
    lines = []
    for line in path.read_text().splitlines():
        if line.startswith(name + "{"):
            k, v = line.rsplit(" ", 1)
            line = f"{k} {float(v) + by}"
        lines.append(line)
    path.write_text("\n".join(lines) + "\n")


def test_preemption_is_a_failed_check_the_findings_box_leads_with(tmp_path):
    """A recorded pair: the real conc1 capture with 5 preemptions added to its after-scrape."""
    camp = build(tmp_path, phases=("noprefix",), results=(("batch", "conc1"),))
    _bump(camp / "runs" / "batch-conc1" / "conc1_after.prom", "vllm:num_preemptions_total", 5)
    an = analyse(camp)
    (c,) = [c for c in an.checks if c["name"].startswith("preemption: batch-conc1")]
    assert c["status"] == "fail" and c["preemptions"] == 5
    allowed = analyse(camp, allow_preemption=True)
    (c,) = [c for c in allowed.checks if c["name"].startswith("preemption: batch-conc1")]
    assert c["status"] == "warn"
    from benchbook.pages import compare_page

    page = compare_page.load([], campaign=str(camp))
    fails = compare_page._audit_failures(page)
    assert fails and "5 preemption(s)" in fails[0].text and fails[0].anchor == "sec-audit"
    # the analysis' box (what summary --json and the index read) leads with it too, and counts it
    box = page.findings_box
    assert box.lines[0].kind == "fail" and "5 preemption(s)" in box.lines[0].text and box.failed_checks >= 1
    assert an.findings["compare"].as_dict() == box.as_dict()


def _summary(capsys, *argv):
    from benchbook.commands.cli import main

    assert main(["summary", *map(str, argv), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_summary_takes_the_audits_options(tmp_path, camp_dir, capsys):
    """summary --allow-preemption and --cached-prefill keep decide what the page parameters decide."""
    camp = build(tmp_path, phases=("noprefix",), results=(("batch", "conc1"),))
    _bump(camp / "runs" / "batch-conc1" / "conc1_after.prom", "vllm:num_preemptions_total", 5)
    status = {
        opt: next(
            c["status"] for c in _summary(capsys, camp, *opt)["checks"] if c["name"].startswith("preemption: batch")
        )
        for opt in ((), ("--allow-preemption",))
    }
    assert status == {(): "fail", ("--allow-preemption",): "warn"}
    kept = _summary(capsys, camp_dir, "--cached-prefill", "keep")
    assert kept["audit"]["cached_prefill"] == "keep"
    prefill = {(c["arm"], c["prompt_class"]) for c in kept["cells"] if c.get("metric") == "prefill_tok_s"}
    assert ("batch", "long") in prefill  # excluded by default (test_cached_phase_samples_leave_the_prefill_figures)
    assert ("batch", "long") not in {
        (c["arm"], c["prompt_class"]) for c in _summary(capsys, camp_dir)["cells"] if c.get("metric") == "prefill_tok_s"
    }


def test_no_counters_no_samples_is_not_measured():
    from pathlib import Path

    an = analyse(Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "mini")
    au = an.audit
    assert au.windows and all(a.cached_tokens is None and a.preemptions is None for a in au.windows)
    assert au.energy == [] and au.energy_notes[0].startswith("energy not measured")
    assert au.limits == [] and au.limit_notes
    assert not [c for c in an.checks if c["name"].startswith(("prefix cache", "preemption"))]


def test_h200_shared_files_are_read_in_place():
    assert (H200 / "batch" / "phases.json").is_file()  # CI has ../shared beside the clone


def test_the_engines_own_cost_estimate_against_the_gpu(tmp_path):
    """vLLM 0.26's estimated_read_bytes/flops counters (0 in the shared files: not enabled there), set on a
    recorded pair: a plausible read rate passes, one beyond 4.8 TB/s fails."""
    camp = build(tmp_path, phases=(), results=(("serial", "conc1"), ("batch", "conc1")))
    # serial conc1 spans 12.9 s: 2304 decode steps × 14.94 GB ≈ 34.4 TB read is ~2.7 TB/s
    _bump(camp / "runs" / "serial-conc1" / "conc1_after.prom", "vllm:estimated_read_bytes_per_gpu_total", 34.4e12)
    _bump(camp / "runs" / "batch-conc1" / "conc1_after.prom", "vllm:estimated_read_bytes_per_gpu_total", 100e12)
    an = analyse(camp)
    bw = {lim.run: lim for lim in an.audit.limits if lim.kind == "memory bandwidth"}
    assert bw["serial-conc1"].share == pytest.approx(34.4e12 / bw["serial-conc1"].inputs["seconds"] / 4.8e12)
    assert 0.5 < bw["serial-conc1"].share < 0.6 and not bw["serial-conc1"].beyond
    assert bw["batch-conc1"].beyond
    by = {c["name"]: c["status"] for c in an.checks}
    assert by["memory bandwidth: batch-conc1: engine-estimated bytes read per second"] == "fail"


def test_a_symlinked_sample_file_out_of_the_campaign_is_bad_input(tmp_path):
    camp = build(tmp_path, phases=(), results=(("batch", "conc1"),))
    own = camp / "runs" / "batch-conc1" / "gpu_samples.csv"
    own.unlink()
    own.symlink_to(H200 / "batch" / "gpu_samples.csv")
    with pytest.raises(InputError, match="symlink out of the campaign folder"):
        analyse(camp)


def test_a_short_count_in_a_results_run_leads_the_findings(tmp_path):
    """The real conc1 file with the settings --metadata would record, one request cut short."""
    camp = build(tmp_path, phases=("noprefix",), results=(("batch", "conc1"),))
    path = camp / "runs" / "batch-conc1" / "bench_conc1.json"
    doc = json.loads(path.read_text())
    doc.update(random_output_len="128", ignore_eos="true")
    path.write_text(json.dumps(doc))
    (c,) = [c for c in analyse(camp).checks if c["name"].startswith("short count")]
    assert c["status"] == "pass" and c["requests"] == 16
    doc["output_lens"][2] = 100
    path.write_text(json.dumps(doc))
    an = analyse(camp)
    (c,) = [c for c in an.checks if c["name"].startswith("short count")]
    assert c["status"] == "fail" and c["run"] == "batch-conc1" and "request 2 got 100" in c["detail"]
    first = an.findings["compare"].lines[0]
    assert first.kind == "fail" and first.text.startswith("short count: batch-conc1")
