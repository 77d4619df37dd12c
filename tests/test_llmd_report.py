"""llm-d Benchmark Report (0.2 / 0.2.1): detection, deployment fields, aggregates, a newer version
read where its keys match. The fixture is written from the schema (tests/fixtures/tools/PROVENANCE.md)."""

from pathlib import Path

import pytest
import yaml

from benchbook.analysis import identity
from benchbook.errors import InputError
from benchbook.ingest import formats

BR = Path(__file__).parent / "fixtures" / "tools" / "llmd-benchmark-report-0.2.1" / "pd_report.yaml"


def _read(p=BR):
    (run,) = formats.read(p)
    return run


def test_detected_and_version_named():
    assert formats.detect(BR) == "llmd-benchmark-report"
    run = _read()
    assert run.tool_version == "llm-d Benchmark Report 0.2.1"
    line = formats.describe([run])[0]
    assert "[llm-d Benchmark Report 0.2.1]" in line and "completed=2400" in line


def test_deployment_roles_and_gpus_are_config():
    c = _read().config
    assert c["disaggregated"] is True and (c["prefill_servers"], c["decode_servers"]) == (1, 2)
    p = c["params"]
    assert (p["prefill_gpus"], p["decode_gpus"]) == (4, 4)
    assert p["prefill_parallelism"] == "tp=4 dp=1 ep=1 pp=1" and p["decode_parallelism"] == "tp=2 dp=1 ep=1 pp=1"
    assert p["accelerator"] == "NVIDIA-H100-80GB-HBM3" and c["gpu"] == "NVIDIA-H100-80GB-HBM3"
    assert c["model"] == "meta-llama/Llama-3.1-8B-Instruct" and c["backend"] == "vllm"
    assert (c["max_concurrency"], c["input_tokens"], c["output_tokens"]) == (64, 1000, 250)
    assert c["harness"] == "inference-perf 0.7.0"


def test_identity_reads_the_deployment():
    ident = identity.read_identity(_read())
    assert ident.get("param:prefill_gpus").value == 4 and ident.get("param:decode_gpus").value == 4
    assert ident.get("param:decode_parallelism").group == "deployment"
    assert ident.get("disaggregation").shown == "1 prefill + 2 decode server(s) reported"
    assert ident.get("hardware").value == "NVIDIA-H100-80GB-HBM3"
    assert ident.get("model").value is not None and ident.get("max_concurrency").value == 64
    assert ident.get("input_len").value == 1000


def test_aggregates_in_milliseconds():
    s = _read().summary
    assert (s["completed"], s["failed"], s["duration_s"]) == (2400, 0, 120.0)
    assert s["mean_ttft_ms"] == 250.0 and s["median_ttft_ms"] == 200.0 and s["p99_ttft_ms"] == 900.0
    assert s["mean_tpot_ms"] == pytest.approx(20.0) and s["median_e2el_ms"] == pytest.approx(5100.0)
    assert (s["input_throughput"], s["output_throughput"], s["request_throughput"]) == (20000, 5000, 20)
    # totals derived: 2400 x 1000 and 2400 x 250; 2,400,000 / 120 s = the report's 20000 tok/s
    assert (s["total_input_tokens"], s["total_output_tokens"]) == (2_400_000, 600_000)


def test_health_and_observability():
    run = _read()
    assert run.config["health"]["vllm-decode"]["total_restarts"] == 1
    assert any("vllm-decode x1" in n for n in run.notes)
    assert run.config["observability"]["vllm-prefill"]["running_requests"]["mean"] == 3.1


def _newer(tmp_path, version="0.3"):
    doc = yaml.safe_load(BR.read_text())
    doc["version"] = version
    doc["results"]["energy"] = {"joules": 1}
    doc["results"]["request_performance"]["aggregate"]["goodput"] = {"rate": 1}
    p = tmp_path / "br.yaml"
    p.write_text(yaml.safe_dump(doc))
    return p


def test_newer_version_read_where_keys_match(tmp_path):
    run = _read(_newer(tmp_path))
    assert run.tool_version.startswith("llm-d Benchmark Report 0.3 (newer than known 0.2.1")
    note = next(n for n in run.notes if "newer than the versions benchbook knows" in n)
    assert "$.results.energy" in note and "$.results.request_performance.aggregate.goodput" in note
    assert run.summary["mean_ttft_ms"] == 250.0 and run.config["params"]["decode_gpus"] == 4


def test_older_unknown_version_refused(tmp_path):
    with pytest.raises(InputError, match="known versions are 0.2, 0.2.1"):
        _read(_newer(tmp_path, "0.1"))


def test_bad_units_and_role_named(tmp_path):
    doc = yaml.safe_load(BR.read_text())
    doc["results"]["request_performance"]["aggregate"]["latency"]["time_to_first_token"]["units"] = "tokens/s"
    p = tmp_path / "u.yaml"
    p.write_text(yaml.safe_dump(doc))
    with pytest.raises(InputError, match=r"latency\.time_to_first_token\.units"):
        _read(p)
    doc = yaml.safe_load(BR.read_text())
    doc["scenario"]["stack"][0]["standardized"]["role"] = "encoder"
    p.write_text(yaml.safe_dump(doc))
    with pytest.raises(InputError, match=r"stack\[0\]\.standardized\.role"):
        _read(p)


def test_the_run_uid_names_the_run_not_its_configuration(tmp_path):
    """Two runs of one deployment (two uids) are one configuration: repeats, not two arms."""
    doc = yaml.safe_load(BR.read_text())
    doc["run"]["uid"] = "pd-1p2d-conc64-repeat"
    other = tmp_path / "repeat.yaml"
    other.write_text(yaml.safe_dump(doc))
    a, b = formats.read(BR)[0], formats.read(other)[0]
    assert a.config["run_uid"] == "pd-1p2d-conc64" and a.config.get("label") is None
    assert identity.same_point(identity.read_identity(a), identity.read_identity(b))


def test_kv_transfers_from_the_nixl_series_as_llm_d_reports_them():
    """llm-d-benchmark's br_v0_2_1_example.yaml lays vLLM's NIXL counters out under
    results.observability (per pod: statistics of the _sum and _count series); the fixture follows it:
    450 transfers of 131,072,000 bytes in 4 ms each."""
    (run,) = formats.read(BR)
    kv = run.config["observability"]["vllm-decode"]
    assert kv["kv_transfer_bytes"]["mean"] == pytest.approx(131_072_000)
    assert kv["kv_transfer_time"]["mean"] == pytest.approx(0.004)
    assert any("NIXL counters" in n for n in run.notes)


def test_a_nixl_series_missing_its_count_gives_no_transfer_figure(tmp_path):
    doc = yaml.safe_load(BR.read_text())
    del doc["results"]["observability"]["vllm_nixl_xfer_time_seconds_count"]
    p = tmp_path / "br.yaml"
    p.write_text(yaml.safe_dump(doc))
    (run,) = formats.read(p)
    assert "kv_transfer_time" not in run.config["observability"].get("vllm-decode", {})
    assert any("vllm_nixl_xfer_time_seconds_count" in n for n in run.notes)
