"""What a server ran, read from its log lines and its /metrics info series (ingest.server_config)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchbook.errors import InputError
from benchbook.ingest import server_config as sc
from realdata import realdata

H200 = realdata("vllm_h200_llama8b")

ENGINE_LINE = (
    "(EngineCore pid=1) INFO [core.py:116] Initializing a V1 LLM engine (v0.26.0) with config: model='/m', "
    "dtype=torch.bfloat16, max_seq_len=8192, tensor_parallel_size=1, enforce_eager=True, "
    "enable_prefix_caching=False, enable_chunked_prefill=True, compilation_config={'mode': 0, "
    "'cudagraph_mode': <CUDAGraphMode.NONE: 0>}"
)


def _info(path: Path, prefix: str) -> Path:
    path.write_text(
        "# TYPE vllm:cache_config_info gauge\n"
        f'vllm:cache_config_info{{block_size="16",enable_prefix_caching="{prefix}",engine="0"}} 1.0\n'
    )
    return path


def test_engine_line_is_what_ran_and_args_what_was_asked():
    cfg = sc.ServerConfig()
    log = "INFO non-default args: {'model': '/m', 'enforce_eager': True, 'max_num_seqs': 4}\n" + ENGINE_LINE + "\n"
    log += "INFO Engine 000: Avg prompt throughput: 1.0 tokens/s, Running: 3 reqs, Waiting: 0 reqs\n"
    sc.parse_log(log, cfg, "server.log")
    sw = sc.switches(cfg)
    assert sw == {
        "max_num_seqs": 4,
        "enforce_eager": True,
        "cudagraph_mode": "NONE",
        "enable_prefix_caching": False,
        "enable_chunked_prefill": True,
    }
    assert cfg.max_running == 3 and cfg.engine["max_seq_len"] == "8192"
    assert sc.requested_switches(cfg) == {"max_num_seqs": 4, "enforce_eager": True}
    assert sc.clamps(cfg, 8) == [
        "max_num_seqs 4 requested, 3 ran (the most requests running at once in the log's stats lines, "
        "under a load of 8 concurrent requests)"
    ]
    assert sc.clamps(cfg, 2) == []  # the load never offered 4 requests: nothing to say


def test_info_series_wins_over_the_requested_value(tmp_path):
    cfg = sc.read_server_config([_info(tmp_path / "a.prom", "True")], [])
    cfg.requested = {"enable_prefix_caching": False}
    assert sc.switches(cfg)["enable_prefix_caching"] is True


def test_two_servers_in_one_folder_name_both_files(tmp_path):
    a, b = _info(tmp_path / "a.prom", "True"), _info(tmp_path / "b.prom", "False")
    with pytest.raises(InputError) as e:
        sc.read_server_config([a, b], [])
    assert str(a) in str(e.value) and str(b) in str(e.value) and "enable_prefix_caching True vs False" in str(e.value)


def test_the_pocket_startup_line_and_sglang_server_info(tmp_path):
    from benchbook.analysis.clamps import parse_startup_line

    log = tmp_path / "server.log"
    log.write_text("[server] batch width 1 (engine declares max_slots=8, continuous_batching=no), prefill budget 0\n")
    info = tmp_path / "server_info.json"
    info.write_text('{"server_info": {"max_running_requests": 32, "disable_radix_cache": true}}')
    cfg = sc.read_server_config([], [log], [info], startup_parser=parse_startup_line)
    assert sc.switches(cfg)["max_num_seqs"] == 1  # the startup line says what ran
    assert sc.switches(cfg)["enable_prefix_caching"] is False
    assert sc.clamps(cfg, None) == ["batch width 1 ran, the engine declares max_slots=8"]


def test_the_h200_arms_as_their_engines_state_them():
    got = {}
    for arm in ("serial", "eager"):
        d = H200 / arm
        got[arm] = sc.switches(sc.read_server_config([d / "metrics_final.prom"], [d / "server.log"]))
    assert got["serial"]["max_num_seqs"] == 1 and got["serial"]["cudagraph_mode"] == "FULL_AND_PIECEWISE"
    assert got["eager"]["enforce_eager"] is True and got["eager"]["max_num_seqs"] == "default"
