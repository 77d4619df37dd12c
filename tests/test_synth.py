"""`benchbook synth`: deterministic, loadable, marked synthetic, and its timing model as documented."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchbook.commands.cli import main
from benchbook.commands.synth import (
    GENERATION_TOKENS,
    ROUND0,
    Model,
    prefill_s,
    read_requests_ndjson,
    single_service_s,
    step_s,
    synthesize,
)
from benchbook.errors import InputError
from benchbook.ingest.campaign import load_campaign


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("kind", ["serial", "batch", "pd"])
def test_same_seed_gives_identical_bytes_and_another_seed_differs(tmp_path, kind):
    args = dict(kind=kind, runs=2, requests=40, snapshots=4, itl=True)
    a = _tree(synthesize(tmp_path / "a", seed=7, **args))
    b = _tree(synthesize(tmp_path / "b", seed=7, **args))
    c = _tree(synthesize(tmp_path / "c", seed=8, **args))
    assert a == b
    assert a.keys() == c.keys()
    assert a != c
    # the seed changes the measurements, not only the manifest
    differing = {k for k in a if a[k] != c[k]}
    assert differing - {"campaign.json", "README.md"}


@pytest.mark.parametrize("kind", ["serial", "batch", "pd"])
def test_loads_validates_and_says_synthetic(tmp_path, kind, capsys):
    root = synthesize(tmp_path / "c", kind=kind, runs=2, requests=ROUND0, seed=1, snapshots=6)
    camp = load_campaign(root)
    assert camp.manifest["provenance"] == "synthetic"
    assert "not a measurement" in (root / "README.md").read_text()
    if kind != "pd":
        assert camp.requests.height == 2 * ROUND0 * len(camp.arms)
        assert camp.phase_samples.height > 0
        gpu, host, markers = camp.memory
        assert gpu.height > 0 and markers.height > 0
        assert all("SYNTHETIC" in camp.server_log_text(r) for r in camp.runs)
    assert main(["validate", str(root)]) == 0
    assert "provenance synthetic" in capsys.readouterr().out


def test_serial_ladder_completes_at_k_times_single(tmp_path):
    m = Model()
    root = synthesize(tmp_path / "c", kind="serial", runs=1, seed=3, noise=0, snapshots=0)
    df = load_campaign(root).requests
    single = single_service_s(m, 120)
    one = df.filter(df["scenario"] == "single")
    assert one["latency"][0] == pytest.approx(single, abs=2e-6)
    ladder = df.filter((df["scenario"] == "ladder") & (df["n"] == 8)).sort("index")
    for k, lat in enumerate(ladder["latency"], start=1):
        assert lat == pytest.approx(k * single, abs=k * 2e-6)
    # the aggregate rate is flat across n: pure serialization
    for n in (2, 4, 8):
        g = df.filter((df["scenario"] == "ladder") & (df["n"] == n))
        wall = g["end"].max() - g["start"].min()
        assert n * GENERATION_TOKENS / wall == pytest.approx(GENERATION_TOKENS / single, rel=1e-5)


def test_batch_group_shares_steps_and_finishes_together(tmp_path):
    m = Model()
    root = synthesize(tmp_path / "c", kind="batch", runs=1, seed=3, noise=0, snapshots=0)
    df = load_campaign(root).requests
    g = df.filter((df["arm"] == "batch") & (df["scenario"] == "ladder") & (df["n"] == 8))
    expect = 8 * prefill_s(m, 120) + (GENERATION_TOKENS - 1) * step_s(m, 120, 8) + m.assembly_s
    assert g["latency"].min() == pytest.approx(expect, abs=1e-5)
    assert g["latency"].max() == pytest.approx(expect, abs=1e-5)  # one batch: all end together
    serial = df.filter((df["arm"] == "serial") & (df["scenario"] == "ladder") & (df["n"] == 8))
    assert serial["end"].max() - serial["start"].min() > expect  # batching amortizes decode


def test_phase_split_recovers_the_model(tmp_path):
    m = Model()
    root = synthesize(tmp_path / "c", kind="serial", runs=1, seed=3, noise=0, snapshots=6, interference=0)
    ps = load_campaign(root).phase_samples
    short = ps.filter(ps["prompt_class"] == "short")
    assert short["prefill_s"].to_list() == pytest.approx([prefill_s(m, 120)] * short.height, abs=1e-9)
    assert short["decode_tok_s"].to_list() == pytest.approx(
        [(GENERATION_TOKENS - 1) / ((GENERATION_TOKENS - 1) * step_s(m, 120) + m.assembly_s)] * short.height
    )
    assert (ps["engine_total_s"] < ps["client_total_s"]).all()


def test_campaign_requests_read_ndjson_rounds_and_aggregate_per_round(tmp_path):
    from benchbook.analysis import baseline

    n = ROUND0 + 40 * (ROUND0 - 1)
    root = synthesize(tmp_path / "c", kind="serial", runs=2, seed=4, requests=n, snapshots=0, memory=False)
    camp = load_campaign(root)
    req = camp.requests
    nd = [e for e in camp.exclusions if e.file.endswith("requests.ndjson")]
    assert req.height + len(nd) == 2 * n
    assert all(e.sample.startswith("line ") for e in nd)
    assert req["round"].n_unique() == 41
    wc = baseline.whole_request_cells(camp)
    single = wc.filter((wc["run"] == "serial-1") & (wc["metric"] == "single_latency_s"))
    assert single.height == 1 and single["n"][0] == 41  # one figure per round, summarised per run
    assert single["min"][0] <= single["median"][0] <= single["max"][0]
    lad = wc.filter((wc["run"] == "serial-1") & (wc["metric"] == "ladder_tok_s"))
    assert sorted(lad["concurrency"].to_list()) == [2, 4, 8]
    # round 0 alone (requests.json) is what the concurrency harness wrote; it still loads as before
    (root / "runs" / "serial-1" / "requests.ndjson").unlink()
    (root / "runs" / "serial-2" / "requests.ndjson").unlink()
    one = load_campaign(root)
    assert one.requests.height == 2 * ROUND0 and set(one.requests["round"].to_list()) == {0}
    assert set(baseline.whole_request_cells(one)["n"].to_list()) == {1}


def test_ndjson_reader_names_the_bad_line(tmp_path):
    p = tmp_path / "requests.ndjson"
    good = {
        "round": 0,
        "scenario": "single",
        "n": 1,
        "index": 0,
        "prompt_class": "short",
        "start": 0.0,
        "end": 9.0,
        "prompt_tokens": 120,
        "completion_tokens": 32,
        "finish_reason": "length",
    }
    short = dict(good, completion_tokens=7, finish_reason="stop")
    p.write_text("\n".join(json.dumps(r) for r in [good, short, dict(good, scenario="nope")]) + "\n")
    with pytest.raises(InputError) as e:
        read_requests_ndjson(p, 32, ["short"])
    assert e.value.location == "line 3" and "scenario" in e.value.reason
    p.write_text("\n".join(json.dumps(r) for r in [good, short]) + "\n")
    df, excl = read_requests_ndjson(p, 32, ["short"])
    assert (
        df.filter(~df["excluded"]).height == 1 and excl[0][0] == "line 2" and "did not reach its budget" in excl[0][1]
    )
    # a blank line would shift every line number after it: rejected, with its line
    p.write_text("\n".join(json.dumps(r) for r in [good, short]).replace("\n", "\n\n") + "\n")
    with pytest.raises(InputError) as e:
        read_requests_ndjson(p, 32, ["short"])
    assert e.value.location == "line 2" and "blank line" in e.value.reason
    p.write_text(json.dumps({k: v for k, v in good.items() if k != "round"}) + "\n")
    with pytest.raises(InputError) as e:
        read_requests_ndjson(p, 32, ["short"])
    assert e.value.location == "line 1" and "round" in e.value.reason


def test_cli_refuses_a_non_empty_folder(tmp_path, capsys):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "keep.txt").write_text("mine")
    assert main(["synth", "--out", str(tmp_path / "x")]) == 2
    assert "not empty" in capsys.readouterr().err
    assert (tmp_path / "x" / "keep.txt").read_text() == "mine"
    assert main(["synth", "--out", str(tmp_path / "y"), "--seed", "2"]) == 0
    assert main(["synth", "--out", str(tmp_path / "y"), "--seed", "3", "--force"]) == 0
