"""analysis.limits: the decode floor and prefill ceiling, their inputs, and the accelerator table."""

from __future__ import annotations

import json
import struct

import pytest

from benchbook.analysis import limits
from benchbook.errors import InputError
from h200_campaign import H200


def test_decode_floor_of_the_h200_campaign_is_64_percent():
    """serial/ at concurrency 1: TPOT 4.85 ms against 13.91 GiB of weights read per token at 4.8 TB/s."""
    gpu = limits.gpu_from_smi_q((H200 / "nvidia_smi_q.txt").read_text())
    acc = limits.find_accelerator(gpu)
    assert (gpu, acc.name, acc.memory_bandwidth_Bps) == ("NVIDIA H200", "NVIDIA H200 SXM", 4.8e12)
    w = limits.weights_from_log((H200 / "serial" / "server.log").read_text())
    assert w.bytes == pytest.approx(13.91 * 2**30) and "Model loading took 13.91 GiB" in w.source
    tpot = json.loads((H200 / "serial" / "results" / "bench_conc1.json").read_text())["median_tpot_ms"] / 1e3
    lim = limits.decode_limit("serial TPOT", tpot, w, acc)
    assert lim.limit == pytest.approx(3.11e-3, abs=0.01e-3)
    assert lim.share == pytest.approx(0.64, abs=0.01)
    assert lim.check().status == "pass" and "achieved 64 % of the limit" in lim.describe()


def test_a_figure_beyond_the_limit_fails():
    acc = limits.find_accelerator("NVIDIA H200")
    w = limits.Weights(14.93e9, "test")
    lim = limits.decode_limit("impossible", 2e-3, w, acc)  # faster than reading the weights once
    assert lim.beyond and lim.check().status == "fail"
    pre = limits.prefill_limit("too fast", 1e6, 7.465e9, "test", acc)  # ceiling 989.5e12 / (2 × 7.465e9) ≈ 66,277
    assert pre.limit == pytest.approx(989.5e12 / (2 * 7.465e9))
    assert pre.check().status == "fail"


def test_kv_cache_adds_to_the_floor():
    shape = limits.shape_of(
        {
            "hidden_size": 4096,
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "intermediate_size": 14336,
            "vocab_size": 59215,
        }
    )
    # the README's 7.465 B parameters of the H200 campaign's model (Llama-3.1-8B shape, vocab 59215)
    assert limits.parameters_from_shape(shape) == pytest.approx(7.465e9, rel=1e-3)
    per_tok = limits.kv_bytes_per_token(shape, 2)
    assert per_tok == 2 * 32 * 8 * 128 * 2  # 131072 bytes: 128 KiB per token of context
    acc = limits.find_accelerator("H200")
    w = limits.Weights(14.93e9, "test")
    at_4k = limits.decode_limit("x", 5e-3, w, acc, kv_per_token=per_tok, context_tokens=4096)
    assert at_4k.limit == pytest.approx((14.93e9 + per_tok * 4096) / 4.8e12)


def test_checkpoint_size_from_index_and_headers(tmp_path):
    idx = tmp_path / "model.safetensors.index.json"
    idx.write_text(json.dumps({"metadata": {"total_size": 14930000000}, "weight_map": {}}))
    assert limits.weights_from_index(idx).bytes == 14930000000
    header = json.dumps({"a": {"dtype": "BF16", "shape": [2, 3], "data_offsets": [0, 12]}, "__metadata__": {}}).encode()
    st = tmp_path / "model.safetensors"
    st.write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 12)
    assert limits.weights_from_safetensors([st]).bytes == 12
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(InputError, match="total_size"):
        limits.weights_from_index(bad)


def test_accelerator_table_is_complete_and_sourced():
    names = {a.name for a in limits.accelerators()}
    for want in ("H100", "H200", "A100", "L40S", "MI300X", "2080 Ti", "910B"):
        assert any(want in n for n in names), want
    for a in limits.accelerators():
        assert a.source and a.memory_bandwidth_Bps > 1e11 and a.peak_flops
    assert limits.find_accelerator("NVIDIA H200 NVL").name == "NVIDIA H200 NVL"
    assert limits.find_accelerator("4 x RTX 2080 Ti, 22528 MiB each").name == "NVIDIA GeForce RTX 2080 Ti"
    assert limits.find_accelerator("NVIDIA A100-SXM4-80GB").memory_bandwidth_Bps == 2.039e12
    assert limits.find_accelerator("Ascend 910C") is None
    peak, used = limits.find_accelerator("RTX 2080 Ti").peak("bfloat16")  # Turing: no bf16
    assert peak == 107.6e12 and used.startswith("fp16")
