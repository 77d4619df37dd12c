"""What ran, complete: every setting the engine states (vllm:cache_config_info, the server log's
startup lines, /version) read into the run's server config and compared between arms in their own
units, on the real H200 campaign's files and a KV-starved server made from them (tests/h200_arms.py)."""

from __future__ import annotations

import json
from argparse import Namespace
from pathlib import Path

import pytest

import h200_arms
from benchbook.analysis import what_ran
from benchbook.commands import init as init_cmd
from benchbook.ingest import server_config as sc
from one_page import render_one

H200 = h200_arms.H200


def _init(dest: Path, *inputs: Path) -> dict:
    assert init_cmd.run(Namespace(dir=dest, inputs=list(inputs), title=None, question=None, quiet=True)) == 0
    return json.loads((dest / "campaign.json").read_text())


def test_every_setting_the_h200_engine_states():
    d = H200 / "batch"
    cfg = sc.read_server_config([d / "metrics_final.prom"], [d / "server.log"], versions=[d / "version.json"])
    st = {k: v["value"] for k, v in sc.settings(cfg).items()}
    # the info series' labels
    assert st["gpu_memory_utilization"] == 0.92 and st["num_gpu_blocks"] == 58137 and st["block_size"] == 16
    assert st["kv_cache_tokens"] == 930192 and st["kv_cache_dtype"] == "auto"
    # the log's startup lines and engine-config line
    assert st["weights_gib"] == 13.91 and st["kv_cache_gib"] == 113.55
    assert st["max_model_len"] == 8192 and st["max_num_batched_tokens"] == 8192
    assert (st["tensor_parallel_size"], st["pipeline_parallel_size"], st["data_parallel_size"]) == (1, 1, 1)
    assert st["quantization"] == "none" and st["speculative"] == "none" and st["dtype"] == "bfloat16"
    assert st["engine_version"] == "0.26.0"  # GET /version
    src = sc.settings(cfg)
    assert src["kv_cache_tokens"]["source"] == "metrics_final.prom: vllm:cache_config_info"
    assert src["weights_gib"]["source"] == "server.log: startup line"
    assert src["engine_version"]["source"] == "version.json: GET /version"


def test_the_log_alone_states_the_kv_cache_and_speculative_decoding():
    cfg = sc.ServerConfig()
    log = (H200 / "batch" / "server.log").read_text()
    log = log.replace(
        "speculative_config=None", "speculative_config=SpeculativeConfig(method='ngram', num_spec_tokens=3)"
    )
    sc.parse_log(log, cfg, "server.log")
    st = sc.settings(cfg)
    assert st["kv_cache_tokens"] == {
        "value": 930192,
        "unit": "tokens",
        "kind": "size",
        "source": "server.log: startup line",
    }
    assert st["speculative"]["value"] == "SpeculativeConfig(method='ngram', num_spec_tokens=3)"


def test_sizes_within_tolerance_are_not_a_difference():
    """With and without CUDA graphs the H200 engine sized its KV cache 930,192 vs 930,672 tokens: the same
    capacity; a starved server's 8,752 is not."""
    a = {"kv_cache_tokens": {"value": 930192}, "gpu_memory_utilization": {"value": 0.92}}
    b = {"kv_cache_tokens": {"value": 930672}, "gpu_memory_utilization": {"value": 0.92}}
    c = {"kv_cache_tokens": {"value": 8752}, "gpu_memory_utilization": {"value": 0.115}}
    assert what_ran.differences(a, b) == []
    assert (
        what_ran.text(what_ran.differences(c, a))
        == "KV cache 8,752 vs 930,192 tokens; gpu_memory_utilization 0.115 vs 0.92"
    )
    assert what_ran.differences(a, {}) == []  # a side whose files say nothing is not a difference


@pytest.fixture(scope="module")
def starved(tmp_path_factory):
    from benchbook.commands.summary import build

    root = tmp_path_factory.mktemp("arms")
    batch = h200_arms.arm(root, "batch", ("conc1", "conc64"))
    kv = h200_arms.starve(
        h200_arms.arm(root, "batch", ("conc1", "conc64"), name="kvlimited"),
        preemptions={"conc64": 44},
        slow={"conc64": 4.0},
    )
    dest = root / "camp"
    m = _init(dest, batch, kv)
    return dest, m, build(dest)


def test_init_says_what_the_starved_arm_changed(starved):
    _dest, m, s = starved
    todo = "\n".join(m["todo"])
    assert "arms batch and kvlimited do not differ in what ran" not in todo
    assert (
        "arm kvlimited vs the baseline batch: KV cache 8,752 vs 930,192 tokens; gpu_memory_utilization 0.115 vs 0.92"
        in todo
    )
    assert m["arms"]["batch"]["role"] == "baseline" and m["arms"]["kvlimited"]["role"] == "ablation"
    assert m["environments"]["kvlimited"]["variables"]["gpu_memory_utilization"] == "0.115"
    (pair,) = [c for c in m["comparisons"] if c["candidate"] == "kvlimited"]
    assert "KV cache 8,752 vs 930,192 tokens" in pair["why"]
    cfg = s["server_configs"]["kvlimited/1"]
    assert cfg["settings"]["kv_cache_tokens"]["value"] == 8752 and cfg["version"] == "0.26.0"


def test_the_ablation_names_the_setting_and_the_capacity(starved):
    _dest, _m, s = starved
    sa = s["switch_ablation"]
    assert sa["switches"]["kvlimited"] == {"gpu_memory_utilization": "0.115"}
    rows = [r for r in sa["rows"] if r["arm"] == "kvlimited"]
    assert rows and all("nothing beyond the baseline" not in r["switches"] for r in rows)
    assert all(r["what_ran"] == "KV cache 8,752 vs 930,192 tokens; gpu_memory_utilization 0.115 vs 0.92" for r in rows)
    assert sa["settings"]["kvlimited"]["KV cache (tokens)"] == "8,752"
    assert sa["settings"]["batch"]["weights (GiB)"] == "13.91"


def test_every_regression_carries_its_evidence(starved):
    """The starved arm's concurrency-64 row: its 0.25× with the capacity, the 44 preemptions its counter
    recorded and its KV cache full, the baseline's figures beside them."""
    _dest, _m, s = starved
    rows = {(r["arm"], r["metric"], r["context"]): r for r in s["switch_ablation"]["rows"]}
    r = rows[("kvlimited", "output tok/s", "concurrency 64")]
    assert round(r["ratio"], 2) == 0.25
    assert r["evidence"].startswith("KV cache 8,752 vs 930,192 tokens; gpu_memory_utilization 0.115 vs 0.92; ")
    assert "44 preemptions (batch 0)" in r["evidence"] and "KV cache usage peak 100 %" in r["evidence"]
    assert r["evidence_figures"]["candidate"]["preemptions"] == 44
    assert r["evidence_figures"]["candidate"]["kv_usage_max"] == 1.0
    quiet = rows[("kvlimited", "output tok/s", "concurrency 1")]
    assert "0 preemptions (batch 0)" in quiet["evidence"]
    # the compare page's verdict rows carry the same figures
    v = [x for x in s["results"]["verdicts"] if x["candidate"] == "kvlimited" and x["load"].endswith(" 64")]
    assert v and all("44 preemptions" in x["evidence"] for x in v)


def test_the_ablation_page_shows_setting_capacity_and_preemptions(starved, tmp_path):

    dest, _m, _s = starved
    render_one("ablation", dest, tmp_path, "kv")
    values = json.loads((tmp_path / "ablation.values.json").read_text())
    (row,) = [
        r
        for r in values["ablation_rows"]
        if r["arm"] == "kvlimited" and r["context"] == "concurrency 64" and r["metric"] == "output tok/s"
    ]
    assert "44 preemptions" in row["evidence"]
    html = (tmp_path / "ablation.html").read_text()
    assert "nothing beyond the baseline" not in html
    assert "KV cache 8,752 vs 930,192 tokens" in html and "44 preemptions (batch 0)" in html
    assert 'id="settings"' in html or "bb-settings" in html


def test_an_override_one_side_sets():
    a = {"num_gpu_blocks_override": {"value": 17}, "num_gpu_blocks": {"value": 17}}
    b = {"num_gpu_blocks": {"value": 4096}}
    assert "num_gpu_blocks_override 17 blocks vs not set" in what_ran.text(what_ran.differences(a, b))


def test_a_manifest_from_an_older_init_reads_the_settings_from_the_process_folder(starved):
    """A campaign.json written before init carried ``server_config.settings``: the analysis reads them
    from the process's own folder (its server.log and first capture), so the starved arm still shows its
    setting and capacity."""
    from benchbook.analysis import what_ran
    from benchbook.ingest.campaign import load_campaign

    dest, _m, _s = starved
    original = (dest / "campaign.json").read_text()
    m = json.loads(original)
    for r in m["runs"]:
        r.get("server_config", {}).pop("settings", None)
    (dest / "campaign.json").write_text(json.dumps(m))
    try:
        camp = load_campaign(dest)
        assert what_ran.text(what_ran.arm_differences(camp, "kvlimited", "batch")) == (
            "KV cache 8,752 vs 930,192 tokens; gpu_memory_utilization 0.115 vs 0.92"
        )
    finally:
        (dest / "campaign.json").write_text(original)
