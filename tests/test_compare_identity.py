"""Identity separates deployment from load (issue 23) and cannot merge two models (issue 30, classes
1, 2, 3, 9): the shared H200 campaign (vLLM 0.26, `vllm bench serve --metadata arm=<arm>`) through
`render --compare` with labels and through `init`, and the hostile look-alikes.

Figures by hand from ../shared/realdata/vllm_h200_llama8b/*/results/bench_conc8.json:
batch output_throughput 1319.18 tok/s, serial 199.34 tok/s -> 6.618x; serial at concurrency 1, 2, 4, 8:
195.0, 198.6, 198.4, 199.3 tok/s (flat: +1.8 %, -0.1 %, +0.4 %) while median E2E doubles each step.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchbook.analysis import identity as ident
from benchbook.analysis import resultset as rset
from benchbook.errors import InputError
from benchbook.ingest import formats
from realdata import realdata

REPO = Path(__file__).resolve().parents[1]
H200 = realdata("vllm_h200_llama8b")
ARMS = ("batch", "eager", "noprefix", "serial")
LABELS = [f"{a}/results/*.json={a}" for a in ARMS]


def h200_files() -> list[Path]:
    if not H200.is_dir():
        if os.environ.get("CI") == "true":
            pytest.fail(f"{H200} missing: CI must have ../shared beside the clone")
        pytest.skip(f"{H200} not present")
    return sorted(H200.glob("*/results/bench_*.json"))


@pytest.fixture(scope="module")
def h200_runs():
    """Every run of the four arms, read once: (id, run) as build(runs=…) takes them."""
    return [(f"{f.parent.parent.name}/{f.stem}", r) for f in h200_files() for r in formats.read(f)]


def _key(e: rset.Entry) -> tuple[str, str]:
    return e.run.config["params"]["arm"], Path(e.run.source).stem


def _partition(rs: rset.ResultSet) -> list[list[tuple[str, str]]]:
    return sorted(sorted(_key(e) for e in c.entries) for c in rs.configs)


def _curves(rs: rset.ResultSet) -> list[tuple]:
    return sorted(
        (
            sorted({_key(rs.entry(r)) for p in sw.points for r in p.runs}),
            [(p.load_shown, p.n, p.output_tok_s, p.saturated, p.valid) for p in sw.points],
            sw.saturation,
        )
        for sw in rs.sweeps
    )


# ---- issue 23: the H200 campaign ------------------------------------------------------------------


def test_h200_arms_are_four_configurations_each_one_curve_over_concurrency():
    rs = rset.build(h200_files(), labels=LABELS, preset="smoke")
    assert [c.label for c in rs.configs] == list(ARMS)
    # the load is not the configuration: every concurrency of an arm is in it
    assert {c.label: [p.shown for p in c.points] for c in rs.configs}["serial"] == [
        "concurrency 1", "concurrency 2", "concurrency 4", "concurrency 8"]  # fmt: skip
    conc = [sw for sw in rs.sweeps if sw.axis == "max concurrency"]
    assert [sw.configuration for sw in conc] == list(ARMS)  # one concurrency curve per arm
    # batch also ran two request rates at concurrency 256: its own (rate) curve, not mixed in
    (rate,) = [sw for sw in rs.sweeps if sw.axis == "request rate"]
    assert rate.configuration == "batch" and [p.load_shown for p in rate.points] == ["8", "32"]
    # the arm is deployment, never the swept parameter
    assert {p.kind for p in rs.pairings} == {"verdicts"}
    serial = next(p for p in rs.pairings if p.other == "serial")
    assert serial.loads == ["concurrency 1", "concurrency 2", "concurrency 4", "concurrency 8"]
    assert "arm (batch vs serial)" in serial.reason


def test_h200_serial_is_flat_and_saturates_at_2_batch_does_not():
    rs = rset.build(h200_files(), labels=LABELS, preset="smoke")
    curve = {sw.configuration: sw for sw in rs.sweeps if sw.axis == "max concurrency"}
    s = curve["serial"]
    tok = [p.output_tok_s for p in s.points]
    assert max(tok) / min(tok) - 1 < 0.03  # flat within 3 %: one request at a time
    assert s.saturation == "2" and [p.saturated for p in s.points] == [False, True, True, True]
    assert "within" not in s.points[1].saturation_why and "noise band 5%" in s.points[1].saturation_why
    assert curve["batch"].saturation is None  # 195 -> 4410 tok/s, every step beyond noise
    assert any(f.kind == "saturation" and f.text.startswith("smoke: curve serial: saturated at") for f in rs.findings)


def test_h200_headline_batch_vs_serial_at_matched_concurrency():
    rs = rset.build(h200_files(), labels=LABELS, preset="smoke")
    h = next(h for h in rs.headlines if {h["faster"], h["slower"]} == {"batch", "serial"})
    b8 = json.loads((H200 / "batch/results/bench_conc8.json").read_text())["output_throughput"]
    s8 = json.loads((H200 / "serial/results/bench_conc8.json").read_text())["output_throughput"]
    assert (h["faster"], h["load"], h["n"]) == ("batch", "concurrency 8", [1, 1])
    assert h["ratio"] == pytest.approx(b8 / s8)
    # one run per side: the noise is unknown, so the page says "cannot tell", with the ratio
    assert h["text"] == f"batch vs serial at concurrency 8: {b8 / s8:.3g}× output tok/s (cannot tell, n=1 vs 1)"
    assert rs.findings[0].kind == "headline" or any(f.text == "smoke: " + h["text"] for f in rs.findings)


def test_h200_default_gates_are_one_line_per_gate_and_no_saturation_is_claimed():
    rs = rset.build(h200_files(), labels=LABELS)
    durations = [e.get("duration_s") for e in rs.entries]
    fails = [f.text for f in rs.findings if f.kind == "fail"]
    assert fails[0] == (f"minimum duration 60 s: 19 of 19 runs shorter ({min(durations):.1f}–{max(durations):.1f} s)")
    assert fails[0] == "minimum duration 60 s: 19 of 19 runs shorter (2.7–32.2 s)"
    small = [e.id for e in rs.entries if e.get("completed") < 100]
    assert len(fails) == 2 and fails[1].startswith(f"minimum completed requests 100: {len(small)} of 19 runs")
    assert all(sw.saturation is None for sw in rs.sweeps)
    assert not any(f.kind == "saturation" for f in rs.findings)
    assert rs.preset == "" and not any(f.text.startswith("smoke") for f in rs.findings)
    # the box the analysis counts (what the headline, the index and summary --json say) holds the same
    # two gate lines, not one line per run and gate (it said "32 failed checks" beside two lines)
    from benchbook.analysis.campaign_analysis import results_findings

    box = results_findings(rs)
    assert box.failed_checks == 2 and [x.text for x in box.lines if x.kind == "fail"] == fails


def test_h200_compare_and_init_give_the_same_configurations_and_curves(tmp_path):
    from benchbook.analysis.campaign_analysis import analyse

    files = h200_files()
    cmp_ = rset.build(files, labels=LABELS, preset="smoke")
    from benchbook.commands.cli import main

    camp = tmp_path / "h200"
    assert main(["init", str(camp), *(str(H200 / a / "results") for a in ARMS)]) == 0
    manifest = json.loads((camp / "campaign.json").read_text())
    assert len(manifest["arms"]) == 4  # one arm per server, not one per concurrency
    init_ = analyse(camp, results_options={"preset": "smoke"}).results
    assert _partition(init_) == _partition(cmp_)
    assert _curves(init_) == _curves(cmp_)
    assert [h["ratio"] for h in init_.headlines] == [h["ratio"] for h in cmp_.headlines]


@settings(max_examples=20, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    pick=st.integers(0, 10_000),
    eps=st.lists(st.floats(0.001, 0.075).flatmap(lambda x: st.sampled_from([x, -x])), min_size=3, max_size=3),
)
def test_a_repeat_within_the_runs_spread_never_flips_saturation(h200_runs, pick, eps):
    """Copy one point as a second run with its figures and per-request times perturbed by 0.1–7.5 %
    either way (7.5 %: the run-to-run spread the seeds measured, 3.430 vs 3.686; never 0, which would
    be the same run read twice): saturation stays where it was."""
    arms = {rid: rid.split("/")[0] for rid, _ in h200_runs}
    files = [str(H200 / "batch/results/bench_conc1.json")]
    before = rset.build(files, runs=h200_runs, arms=arms, preset="smoke")
    rid, run = h200_runs[pick % len(h200_runs)]
    twin = copy.copy(run)
    tput, lat, dur = (1 + e for e in eps)
    twin.summary = dict(run.summary)
    for k, v in run.summary.items():
        if isinstance(v, (int, float)) and not isinstance(v, bool) and k not in formats.SUMMARY_KEYS[1:5]:
            twin.summary[k] = v * (tput if "throughput" in k or "goodput" in k else lat if k.endswith("_ms") else dur)
    import polars as pl

    twin.requests = run.requests.with_columns(pl.col("ttft_s") * lat, pl.col("e2e_s") * lat)
    after = rset.build(files, runs=[*h200_runs, (rid + "-repeat", twin)], arms={**arms, rid + "-repeat": arms[rid]},
                       preset="smoke")  # fmt: skip
    assert not after.duplicates  # a repeat, not the same run read twice
    assert {sw.series: sw.saturation for sw in after.sweeps} == {sw.series: sw.saturation for sw in before.sweeps}
    (pt,) = [p for c in after.configs for p in c.points if rid in [e.id for e in p.entries]]
    assert [e.id for e in pt.entries] == [rid, rid + "-repeat"]


def test_vllm_026_detailed_layout_is_named_by_its_keys_and_feeds_per_request_views():
    from benchbook.analysis import per_request

    (r,) = formats.read(h200_files()[0])
    assert r.tool_version == (
        "vllm bench serve: layout with per-request input_lens, output_lens, ttfts, itls, start_times, errors "
        "(before vLLM 0.30, no latencies/queue_times; seen in 0.25.1 and 0.26.0)"
    )
    v = per_request.analyse(r, run_id="batch/bench_conc1")
    assert v is not None and v.distributions["ttft"].n == 16 and v.timeline_axis == "start"


# ---- issue 30, class 1: two models are never one configuration -----------------------------------


def _variant(tmp_path: Path, name: str, scale: float = 1.0, **changes) -> Path:
    """serial/bench_conc1.json with ``changes``; ``scale`` ≠ 1 multiplies its per-request TTFTs (another
    run: identical per-request records are the same run read twice)."""
    h200_files()
    src = json.loads((H200 / "serial/results/bench_conc1.json").read_text())
    d = {**src, "ttfts": [t * scale for t in src["ttfts"]], **changes}
    p = tmp_path / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(d))
    return p


def test_two_checkpoints_with_one_last_component_are_two_configurations(tmp_path):
    a = _variant(tmp_path, "a.json", model_id="/mnt/ckpt/sft-run-A/final", tokenizer_id="/mnt/ckpt/sft-run-A/final")
    b = _variant(tmp_path, "b.json", 0.5, model_id="/mnt/ckpt/dpo-run-B/final",
                 tokenizer_id="/mnt/ckpt/dpo-run-B/final", output_throughput=398.0, duration=5.2)  # fmt: skip
    rs = rset.build([a, b])
    assert [c.label for c in rs.configs] == ["sft-run-A/final", "dpo-run-B/final"]  # shortest that tells them apart
    assert all(len(c.entries) == 1 for c in rs.configs)  # not "2 runs … repeats"
    assert rs.pairings[0].kind == "not comparable" and "/mnt/ckpt/dpo-run-B/final" in rs.pairings[0].reason
    assert ident.short_names(["llama8b-random"]) == ["llama8b-random"]


def test_init_puts_two_checkpoints_in_two_arms(tmp_path):
    a = _variant(tmp_path / "in", "a.json", model_id="/mnt/ckpt/sft-run-A/final")
    b = _variant(tmp_path / "in", "b.json", 0.5, model_id="/mnt/ckpt/dpo-run-B/final", duration=5.2)
    from benchbook.commands.cli import main

    assert main(["init", str(tmp_path / "camp"), str(a), str(b)]) == 0
    runs = json.loads((tmp_path / "camp" / "campaign.json").read_text())["runs"]
    assert len({r["arm"] for r in runs}) == 2


# ---- class 2: duplicates are the same run, never merely "both failed" ----------------------------


def test_two_all_failed_runs_of_different_models_are_not_duplicates(tmp_path):
    failed = {"completed": 0, "failed": 16, "total_input_tokens": 0, "total_output_tokens": 0,
              "request_throughput": 0.0, "output_throughput": 0.0, "total_token_throughput": 0.0, "duration": 1.0,
              "ttfts": [0.0] * 16, "itls": [[]] * 16, "errors": ["refused"] * 16}  # fmt: skip
    a = _variant(tmp_path, "a.json", model_id="model-a", max_concurrency=1, **failed)
    b = _variant(tmp_path, "b.json", model_id="model-b", max_concurrency=8, **failed)
    rs = rset.build([a, b])
    assert rs.duplicates == [] and len(rs.entries) == 2
    # the same failed run of one model read twice is still one run... only when its identity agrees
    c = _variant(tmp_path, "c.json", model_id="model-a", max_concurrency=1, **failed)
    assert rset.build([a, c]).duplicates == []  # all-zero figures and no records: not evidence
    same = _variant(tmp_path, "same.json")
    again = _variant(tmp_path, "again.json")
    (d,) = rset.build([same, again]).duplicates
    assert d["files"] == ["same.json", "again.json"]


# ---- class 3: --label takes the path as given and refuses one that matches nothing ----------------


def test_labels_by_path_not_basename(tmp_path):
    a = _variant(tmp_path, "lab/a/result.json")
    b = _variant(tmp_path, "lab/b/result.json", 1.1, output_throughput=250.0, duration=8.0)
    rs = rset.build([a, b], labels=[f"{a}=eager", f"{b}=graphs"])
    assert [c.label for c in rs.configs] == ["eager", "graphs"]
    rs = rset.build([a, b], labels=["lab/a/result.json=eager", "lab/b/result.json=graphs"])
    assert [c.label for c in rs.configs] == ["eager", "graphs"]
    with pytest.raises(InputError, match="matches none of the files"):
        rset.build([a, b], labels=["typo.json=x"])


def test_cli_label_that_matches_no_file_is_exit_2(tmp_path):
    a = _variant(tmp_path, "lab/a/result.json")
    env = {**os.environ, "PYTHONPATH": str(REPO / "lib")}
    out = subprocess.run([str(REPO / ".venv/bin/benchbook"), "render", "--compare", str(a), "--label",
                          "typo.json=x", "--out", str(tmp_path / "out")], env=env, capture_output=True, text=True)  # fmt: skip
    assert out.returncode == 2 and "'typo.json' matches none of the 1 compared files" in out.stderr


# ---- class 9: look-alike labels, bidi controls, machine paths ------------------------------------


def test_invisible_and_bidi_characters_are_removed_before_identity(tmp_path):
    a = _variant(tmp_path, "a.json")
    b = _variant(tmp_path, "b.json", 1.1, output_throughput=250.0, duration=8.0)
    rs = rset.build([a, b], labels=["a.json=eager", "b.json=eager\u200b"])
    assert [c.label for c in rs.configs] == ["eager"] and len(rs.configs[0].entries) == 2
    c = _variant(tmp_path, "c.json", model_id="evil\u202eredaeh-tset")
    (e,) = rset.build([c]).entries
    assert e.identity.fields["model"].shown == "evilredaeh-tset" and e.config == "evilredaeh-tset"
    assert ident.clean_text("cafe\u0301") == "café"


def test_inputs_that_share_only_the_root_are_shown_without_machine_folders():
    assert rset.shown_paths(["/tmp/x/alice-secret-project/runs/a.json", "/var/tmp/z/b.json"]) == ["a.json", "b.json"]
    assert rset.shown_paths(["/data/p/runs/a.json", "/data/p/other/a.json"]) == ["runs/a.json", "other/a.json"]


def test_render_compare_under_two_roots_names_no_machine_folder(tmp_path):
    a = _variant(tmp_path, "alice-secret-project/runs/a.json")
    other = Path("/dev/shm") if Path("/dev/shm").is_dir() and os.access("/dev/shm", os.W_OK) else None
    if other is None or Path(os.path.commonpath([a, other])) != Path("/"):
        pytest.skip("needs a writable folder on another top-level tree")
    b = other / f"benchbook-test-{os.getpid()}" / "b.json"
    b.parent.mkdir(exist_ok=True)
    try:
        b.write_text(a.read_text())
        out = subprocess.run([str(REPO / ".venv/bin/benchbook"), "render", "--compare", str(a), str(b),
                              "--out", str(tmp_path / "out")], env={**os.environ, "PYTHONPATH": str(REPO / "lib")},
                             capture_output=True, text=True)  # fmt: skip
        assert out.returncode == 0, out.stderr[-2000:]
        html = (tmp_path / "out" / "compare.html").read_text()
        assert "alice-secret-project" not in html and "benchbook-test-" not in html and tmp_path.name not in html
    finally:
        b.unlink(missing_ok=True)
        b.parent.rmdir()
