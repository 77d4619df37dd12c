"""Configuration identity, duplicates and comparability on the real result files.

Small files are copied into tests/fixtures/realdata; the ~1 MB vLLM files with per-request arrays are
read from ../shared/realdata (CI has it beside the clone). Expected groupings were read off the files
by hand: the SGLang PD topology is only in each line's ``tag``; pd_local has another dataset
(sharegpt), 200 prompts and concurrency 200.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from benchbook.analysis import identity as ident
from benchbook.analysis import resultset as rset
from benchbook.errors import InputError
from benchbook.ingest import formats
from realdata import realdata

HERE = Path(__file__).parent
FIX = HERE / "fixtures" / "realdata"
SHARED = realdata()
PD = [FIX / "sglang_bench_serving" / f"pd_1p{k}d_n100_in2048_out512_c128.jsonl" for k in (1, 2, 4, 8)]
PD_LOCAL = FIX / "sglang_bench_serving" / "pd_local.jsonl"
ER = FIX / "vllm_bench_serving"
LLAMA = "vllm_bench_serving/serving_meta-llama-Llama-3.3-70B-Instruct_tp8_pp1_sharegpt_qps_{}.json"
DEEPSEEK = "vllm_bench_serving/serving_deepseek-ai-DeepSeek-V2.5_tp8_pp2_ib_sharegpt_qps_inf.json"


def shared(rel: str) -> Path:
    p = SHARED / rel
    if not p.exists():
        if os.environ.get("CI") == "true":
            pytest.fail(f"real file {rel} missing at {SHARED}: CI must have ../shared beside the clone")
        pytest.skip(f"large real file {rel} not present at {SHARED}")
    return p


def test_sglang_pd_set_is_four_configurations_told_apart_by_tag_and_pd_local_is_not_comparable():
    rs = rset.build([*PD, PD_LOCAL])
    assert len(rs.entries) == 5 and len(rs.configs) == 5  # nothing is a repeat of anything
    tags = [c.identity.fields["tag"].shown for c in rs.configs[:4]]
    assert tags == [p.stem for p in PD]
    assert "tag" not in rs.configs[4].identity.fields  # pd_local writes "tag": null
    # the four PD configurations differ in their tag only: verdicts, but no configuration was run
    # twice, so every verdict is "cannot tell"
    kinds = {p.other: p.kind for p in rs.pairings}
    assert [kinds[c.label] for c in rs.configs[1:4]] == ["verdicts"] * 3
    for c in rs.configs[1:4]:
        p = next(p for p in rs.pairings if p.other == c.label)
        assert p.reason.endswith(f"differs in tag ({PD[0].stem} vs {c.identity.fields['tag'].shown})")
    assert rs.verdicts and {v.judgement.state for v in rs.verdicts} == {"cannot"}
    assert rs.spreads == {}  # no load of any configuration was repeated
    # pd_local: another dataset, shown beside them, never judged
    local = rs.configs[4].label
    assert kinds[local] == "not comparable"
    reason = next(p.reason for p in rs.pairings if p.other == local)
    assert reason.startswith("not comparable: dataset differs") and "dataset (random vs sharegpt)" in reason
    assert "requests (counted)" not in reason  # the prompt count is the run's size at its load, not its dataset
    assert not [v for v in rs.verdicts if local in (v.baseline, v.candidate)]
    assert any(f.kind == "not comparable" and local in f.text for f in rs.findings)


def test_sglang_run_ids_keep_their_name():
    rs = rset.build(PD[:1])
    assert [e.id for e in rs.entries] == ["pd_1p1d_n100_in2048_out512_c128"]  # was "…_c128line 1"
    rs = rset.build([ER / "er0080_sweep_maxnumseqs4_conc2_summary.json"])
    assert [e.id for e in rs.entries] == [
        "er0080_sweep_maxnumseqs4_conc2_summary:$[0]",
        "er0080_sweep_maxnumseqs4_conc2_summary:$[1]",
    ]


def test_guidellm_json_and_yaml_are_one_run():
    files = [FIX / "guidellm" / "benchmarks_stripped.json", FIX / "guidellm" / "benchmarks_stripped.yaml"]
    rs = rset.build(files)
    assert len(rs.entries) == 1 and len(rs.configs) == 1
    (d,) = rs.duplicates
    assert d["files"] == ["benchmarks_stripped.json ($.benchmarks[0])", "benchmarks_stripped.yaml ($.benchmarks[0])"]
    assert d["why"].startswith("the same ")  # every shared run-level figure agrees
    assert rs.verdicts == [] and rs.spreads == {}  # one run read twice is not a repeat: no 0.0 % spread


def test_aiperf_json_csv_and_jsonl_are_one_run():
    a = FIX / "aiperf_genai_perf"
    files = [a / "aiperf_run1_profile_export_aiperf.json", a / "aiperf_run1_profile_export_aiperf.csv",
             a / "aiperf_run1_profile_export.jsonl"]  # fmt: skip
    rs = rset.build(files)
    assert len(rs.entries) == 1
    (e,) = rs.entries
    assert e.run.format == "aiperf-aggregate"  # the copy that names model and concurrency is kept
    assert e.identity.fields["model"].shown == "openai/gpt-oss-20b"
    assert sorted(e.carried_by) == sorted(f.name for f in files)
    (d,) = rs.duplicates
    assert len(d["files"]) == 3 and d["why"].startswith("the same ")


def test_er0080_sweep_run0_run1_and_summary_are_two_runs_repeating_one_configuration():
    files = [ER / f"er0080_sweep_maxnumseqs4_conc2_{n}.json" for n in ("run0", "run1", "summary")]
    rs = rset.build(files)
    assert [e.id for e in rs.entries] == ["er0080_sweep_maxnumseqs4_conc2_run0", "er0080_sweep_maxnumseqs4_conc2_run1"]
    (c,) = rs.configs
    assert len(c.entries) == 2 and c.why.endswith("repeats at concurrency 2 (n=2)")
    assert [len(p.entries) for p in c.points] == [2]
    assert c.identity.fields["param:max_num_seqs"].shown == "4"  # the swept server parameter is identity
    assert [d["files"] for d in rs.duplicates] == [
        ["er0080_sweep_maxnumseqs4_conc2_run0.json", "er0080_sweep_maxnumseqs4_conc2_summary.json ($[0])"],
        ["er0080_sweep_maxnumseqs4_conc2_run1.json", "er0080_sweep_maxnumseqs4_conc2_summary.json ($[1])"],
    ]


def test_vllm_bench_serve_and_sweep_run_differ_in_backend_and_parameter():
    rs = rset.build([ER / "er0080_bench_serve_v0.25.1.json", ER / "er0080_sweep_maxnumseqs4_conc2_run0.json"])
    assert len(rs.configs) == 2
    (p,) = rs.pairings
    assert (
        p.kind == "verdicts"
        and "backend (vllm vs openai)" in p.reason
        and "max_num_seqs (not recorded vs 4)" in p.reason
    )


def test_llama_vs_deepseek_not_comparable():
    rs = rset.build([shared(LLAMA.format("inf")), shared(DEEPSEEK)])
    (p,) = rs.pairings
    assert p.kind == "not comparable"
    assert p.reason.startswith(
        "not comparable: model differs — model (meta-llama/Llama-3.3-70B-Instruct vs deepseek-ai/DeepSeek-V2.5)"
    )
    assert "input length" not in p.reason  # 213.3 vs 236.0 tokens per prompt: two tokenizers, not two datasets
    assert rs.verdicts == [] and rs.sweeps == []


def test_nightly_table_rows_are_the_sweep_files_read_again():
    rows = FIX / "vllm_bench_serving" / "tp8_pp1_benchmark_results_summary.json"
    sweep = [shared(LLAMA.format(q)) for q in ("01", "04", "16", "inf")]
    rs = rset.build([*sweep, rows])
    assert len(rs.entries) == 4 and len(rs.duplicates) == 4
    assert all(d["kept"].startswith("serving_meta-llama") for d in rs.duplicates)  # the richer copy


def test_labels_and_groups_override_what_the_files_say(tmp_path):
    nv = [ER / "nv-action_serving_llama8B_tp1_1.json", ER / "nv-action_serving_llama8B_tp1_2.json"]
    assert len(rset.build(nv).configs) == 1  # the files agree: repeats
    rs = rset.build(nv, labels=["nv-action_serving_llama8B_tp1_1.json=eager", "*tp1_2.json=graphs"])
    assert [c.label for c in rs.configs] == ["eager", "graphs"]
    assert rs.configs[0].identity.fields["user_label"].source == "user"
    # a benchbook-compare.yml beside the files: declare two different SGLang deployments one configuration
    for p in PD[:2]:
        (tmp_path / p.name).write_bytes(p.read_bytes())
    (tmp_path / "benchbook-compare.yml").write_text("files:\n  'pd_1p*': {group: pd, gpus: 2}\n")
    rs = rset.build([tmp_path / p.name for p in PD[:2]])
    (c,) = rs.configs
    assert c.why.startswith("declared one configuration by the user (group 'pd')")
    assert [e.gpus for e in c.entries] == [2, 2]
    assert rs.overrides == [str(tmp_path / "benchbook-compare.yml")]


def test_bad_overrides_name_file_and_place(tmp_path):
    f = tmp_path / "r.jsonl"
    f.write_bytes(PD[0].read_bytes())
    (tmp_path / "benchbook-compare.yml").write_text("files:\n  r.jsonl: {colour: blue}\n")
    with pytest.raises(InputError) as e:
        rset.build([f])
    assert e.value.location == "$.files.r.jsonl.colour" and "unknown field" in e.value.reason
    with pytest.raises(InputError, match="expected FILE=LABEL"):
        ident.load_overrides([PD[0]], ["no-equals-sign"])


def test_a_field_recorded_for_one_run_only_disagrees():
    (a,) = formats.read(PD[0])
    (b,) = formats.read(PD_LOCAL)
    ia, ib = ident.read_identity(a), ident.read_identity(b)
    tag = next(d for d in ident.differences(ia, ib) if d.key == "tag")
    assert (tag.a, tag.b) == (PD[0].stem, "not recorded")
    assert not ident.same_configuration(ia, ib)
    assert ident.same_configuration(ia, ident.read_identity(a))


def test_two_deployments_swept_over_two_rates_are_two_curves_judged_at_matched_load(tmp_path):
    import json

    src = json.loads((ER / "er0080_bench_serve_v0.25.1.json").read_text())
    files = []
    for k, (label, rate) in enumerate([("A", 1.0), ("A", 4.0), ("B", 1.0), ("B", 4.0)]):
        d = {**src, "label": label, "request_rate": rate, "duration": 1.5 + k, "output_throughput": 80.0 + k}
        files.append(tmp_path / f"{label}{rate:g}.json")
        files[-1].write_text(json.dumps(d))
    rs = rset.build(files)
    # a configuration is the server (here its label), not the load: two configurations, each a curve
    assert [c.label for c in rs.configs] == ["A", "B"]
    assert [p.shown for p in rs.configs[0].points] == ["request rate 1", "request rate 4"]
    assert [(p.reference, p.other, p.kind, p.loads) for p in rs.pairings] == [
        ("A", "B", "verdicts", ["request rate 1", "request rate 4"])
    ]
    assert [[p.run_id for p in sw.points] for sw in rs.sweeps] == [["A1", "A4"], ["B1", "B4"]]
    assert [sw.configuration for sw in rs.sweeps] == ["A", "B"]
    assert {(v.baseline, v.candidate, v.load) for v in rs.verdicts} == {
        ("A", "B", "request rate 1"),
        ("A", "B", "request rate 4"),
    }
