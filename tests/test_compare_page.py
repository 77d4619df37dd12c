"""Compare page, rendered offline via `benchbook render --compare` and opened in headless Chromium;
values asserted from `compare.values.json` (what the page recorded), not from the HTML text.

* the Llama-3.3-70B rate sweep (1, 4, 16, inf) with an SLO, beside DeepSeek-V2.5 (not comparable);
* the SGLang PD set told apart by tag, pd_local beside it, not comparable;
* two repeated nv-action runs (spread measured), and an engine window reconciled against one run.
"""

import json
import re

import pytest

from benchbook.commands.cli import main
from benchbook.pipeline.offline import scan
from test_identity import DEEPSEEK, ER, LLAMA, PD, PD_LOCAL, shared

NV = [ER / "nv-action_serving_llama8B_tp1_1.json", ER / "nv-action_serving_llama8B_tp1_2.json"]


def _render(tmp_path, files, params=None, extra=()):
    out = tmp_path / "compare"
    args = ["render", "--compare", *map(str, files), "--out", str(out), *extra]
    if params is not None:
        p = tmp_path / "params.json"
        p.write_text(json.dumps({"compare": params}))
        args += ["--params", str(p)]
    assert main(args) == 0
    assert scan([out / "compare.html"]) == []
    return out, json.loads((out / "compare.values.json").read_text())


def test_llama70b_rate_sweep_with_an_slo_beside_deepseek(tmp_path, open_page):
    # copies beside a benchbook-compare.yml that says what the files do not: the GPU count (tp8_pp1 in the names)
    files = []
    for src in [*(shared(LLAMA.format(q)) for q in ("01", "04", "16", "inf")), shared(DEEPSEEK)]:
        files.append(tmp_path / src.name)
        files[-1].write_bytes(src.read_bytes())
    (tmp_path / "benchbook-compare.yml").write_text("files:\n  'serving_meta-llama-*': {gpus: 8}\n")
    slo = {"ttft_ms": 250, "tpot_ms": 30, "attainment": 0.9}
    # the 31.6 s and 23.8 s runs at 16 and inf pass a 20 s gate: saturation is judged on every point
    out, v = _render(tmp_path, files, {"slo": slo, "min_duration_s": 20})
    # one configuration per model: the offered rate is the curve's axis, not a configuration
    assert v["configurations"] == ["Llama-3.3-70B-Instruct", "DeepSeek-V2.5"]
    assert v["loads"]["Llama-3.3-70B-Instruct"] == {f"request rate {q}": 1 for q in ("1", "4", "16", "inf")}
    assert [p["kind"] for p in v["pairings"]] == ["not comparable"]
    assert v["verdicts"] == []  # a curve is not "candidate vs baseline", and DeepSeek is not judged
    (nc,) = v["not_comparable"]
    assert nc["other"] == "DeepSeek-V2.5" and nc["reason"].startswith("not comparable: model differs — model (")
    (sw,) = v["sweeps"]
    assert sw["axis"] == "request rate" and sw["saturation"] == "16"
    assert [(p["load"], p["saturated"], p["valid"], p["n"]) for p in sw["points"]] == [
        ("1", False, True, 1), ("4", False, True, 1), ("16", True, True, 1), ("inf", True, True, 1)
    ]  # fmt: skip
    assert [p["achieved_req_s"] for p in sw["points"]][2:] == pytest.approx([6.333249923861803, 8.398304797910107])
    assert {p["gpus"] for p in sw["points"]} == {8}  # from the user's file: the frontier is drawn
    assert v["identities"][0]["identity"]["gpus"] == "8"
    html = (out / "compare.html").read_text(encoding="utf-8")
    assert "benchbook-compare.yml" in html and str(tmp_path) not in html  # overrides named, no machine path
    (h,) = v["slo"]["highest"]
    assert h["status"] == "interpolated" and 3.175 < h["achieved_req_s"] < 6.333  # between rate 4 and 16
    kinds = [f["kind"] for f in v["findings"]]
    assert {"not comparable", "saturation", "slo"} <= set(kinds)
    report = open_page(
        out / "compare.html",
        table_ids=[
            "bb-compare-configurations",
            "bb-compare-pairings",
            "bb-compare-runs",
            "bb-compare-sweep-0",
            "bb-compare-slo",
            "bb-compare-slo-highest",
            "bb-compare-not-comparable",
            "bb-compare-checks",
            "bb-provenance-summary",
        ],  # fmt: skip
        screenshot="compare-sweep.png",
    )
    assert report.ok, report.problems()
    # latency vs throughput, offered vs achieved, per-GPU frontier; per-request distributions and time course
    assert report.requests == [] and report.charts == 5


def test_sglang_pd_set_by_tag_and_pd_local_not_comparable(tmp_path, open_page):
    out, v = _render(tmp_path, [*PD, PD_LOCAL], {"min_duration_s": 30})
    assert v["repeats"] == {c: 1 for c in v["configurations"]} and len(v["configurations"]) == 5
    assert [i["identity"]["tag"] for i in v["identities"][:4]] == [p.stem for p in PD]
    assert {x["state"] for x in v["verdicts"]} == {"cannot"}  # 0.6 % apart, but no repeats: no yardstick
    assert v["spreads"] == {}
    local = v["configurations"][4]
    assert not [x for x in v["verdicts"] if local in (x["baseline"], x["candidate"])]
    assert v["not_comparable"][0]["reason"].startswith("not comparable: dataset differs")
    cannot = [f for f in v["findings"] if f["kind"] == "cannot"]
    assert len(cannot) == 3 and all("cannot tell" in f["text"] for f in cannot)
    assert [r["id"] for r in v["runs"]] == [p.stem for p in PD] + ["pd_local"]  # no "…line 1"
    report = open_page(
        out / "compare.html",
        table_ids=["bb-compare-configurations", "bb-compare-cannot-tell", "bb-compare-not-comparable"],
        screenshot="compare-sglang-pd.png",
    )
    assert report.ok, report.problems()


def test_nv_action_repeats_measure_spread_and_duplicates_count_once(tmp_path, open_page):
    summary = ER / "er0080_sweep_maxnumseqs4_conc2_summary.json"
    files = [*NV, ER / "er0080_sweep_maxnumseqs4_conc2_run0.json", summary]
    out, v = _render(tmp_path, files)
    assert v["repeats"] == {"Meta-Llama-3-8B-Instruct": 2, "opt-125m": 2}
    # median TTFT 103.90021465718746 and 105.73590826243162 ms: spread = 105.7359/103.9002 − 1
    nv = v["identities"][0]["spreads"]
    assert nv["median_ttft_ms"] == pytest.approx(105.73590826243162 / 103.90021465718746 - 1)
    assert "output_throughput" not in nv  # reduced schema: no throughput recorded
    assert [d["files"] for d in v["duplicates"]] == [
        ["er0080_sweep_maxnumseqs4_conc2_run0.json", "er0080_sweep_maxnumseqs4_conc2_summary.json ($[0])"]
    ]
    assert [p["kind"] for p in v["pairings"]] == ["not comparable"]  # 8B vs opt-125m
    assert v["verdicts"] == [] and v["sweeps"] == []
    report = open_page(out / "compare.html", table_ids=["bb-compare-duplicates", "bb-compare-latency"])
    assert report.ok, report.problems()


def test_labels_on_the_command_line_split_repeats(tmp_path):
    out, v = _render(tmp_path, NV, extra=["--label", f"{NV[0].name}=eager", "--label", f"{NV[1].name}=graphs"])
    assert v["configurations"] == ["eager", "graphs"]
    (p,) = v["pairings"]
    assert p["kind"] == "verdicts" and "label (user) (eager vs graphs)" in p["reason"]
    assert {x["state"] for x in v["verdicts"]} == {"cannot"}
    assert main(["render", "--label", "x=y", "--out", str(tmp_path / "o"), str(tmp_path)]) == 2  # needs --compare


def test_reconciliation_with_an_engine_window(tmp_path):
    # The er0080 bench file (8 completed) against the same repository's idle/loaded vLLM scrapes (600
    # finished): not the same window, so reconciliation must say so rather than pass.
    bench = ER / "er0080_bench_serve_v0.25.1.json"
    caps = ER.parents[1] / "vllm_captures"  # copies of the real scrapes
    idle, loaded = caps / "idle.prom", caps / "loaded.prom"
    out, v = _render(tmp_path, [bench], {"engine_before": str(idle.resolve()), "engine_after": str(loaded.resolve())})
    st = {c["name"]: c["status"] for c in v["checks"] if c.get("kind") == "engine"}
    # The window's only series serves opt-125m-tp2, the bench ran facebook/opt-125m: not comparable.
    # Before the model check, mean TTFT "passed" (engine 133 ms ≤ client 216 ms) on another model's counters.
    assert st["model: engine series vs client model"] == "fail"
    for name in (
        "successes: engine Δ vs client completed",
        "generation tokens: engine Δ vs client Σ output tokens",
        "mean TTFT: engine vs client",
        "mean E2E: engine vs client",
    ):
        assert st[name] == "warn", name  # not checked: listed as not comparable, never passed
    assert st["TTFT count vs E2E count"] == "warn"  # 664 first tokens, 600 finished: requests in flight
    # engine-check rows print their status like gate rows: "✗ fail", never a bare "fail"
    html = (out / "compare.html").read_text(encoding="utf-8")
    table = html[html.index('id="bb-compare-checks"') :]
    row = re.search(r"<tr><td>(?:(?!</td>).)*</td><td>model: engine series vs client model</td><td>(.*?)</td>", table)
    assert row and "✗" in row.group(1) and "bb-mark-fail" in row.group(1)


def test_bad_slo_and_bad_overrides_are_bad_input(tmp_path, capsys):
    bad = tmp_path / "p.json"
    bad.write_text(json.dumps({"compare": {"slo": {"ttft": 100}}}))
    assert main(["render", "--compare", str(NV[0]), "--params", str(bad), "--out", str(tmp_path / "a")]) == 2
    assert "parameters: slo.ttft: unknown key" in capsys.readouterr().err
    (tmp_path / "d").mkdir()
    f = tmp_path / "d" / NV[0].name
    f.write_bytes(NV[0].read_bytes())
    (tmp_path / "d" / "benchbook-compare.yml").write_text("files: [not, a, mapping]\n")
    assert main(["render", "--compare", str(f), "--out", str(tmp_path / "b")]) == 2
    assert "benchbook-compare.yml: $: expected {files:" in capsys.readouterr().err
