"""PD figures from a Benchmark Report (analysis.pd_report), checked by hand against the fixture:
1 prefill pod (4 GPUs) + 2 decode pods (2 GPUs each), 20000 input and 5000 output tok/s,
131,072,000 KV bytes in 4 ms per request."""

from pathlib import Path

import pytest
import yaml

from benchbook.analysis import pd_report
from benchbook.ingest import formats

BR = Path(__file__).parent / "fixtures" / "tools" / "llmd-benchmark-report-0.2.1" / "pd_report.yaml"


def _run(doc=None, tmp_path=None):
    if doc is None:
        return formats.read(BR)[0]
    p = tmp_path / "br.yaml"
    p.write_text(yaml.safe_dump(doc))
    return formats.read(p)[0]


def test_per_gpu_throughput_per_role_and_cluster():
    r = pd_report.analyse(_run(), link_gb_s=50.0)
    assert (r.prefill_gpus, r.decode_gpus, r.total_gpus) == (4, 4, 8)
    assert r.input_tok_s_per_prefill_gpu == 5000.0  # 20000 / 4
    assert r.output_tok_s_per_decode_gpu == 1250.0  # 5000 / 4
    assert r.output_tok_s_per_gpu == 625.0  # 5000 / 8
    assert r.total_tok_s_per_gpu == 3125.0  # 25000 / 8


def test_kv_transfer_against_the_link():
    r = pd_report.analyse(_run(), link_gb_s=50.0)
    assert r.kv_bytes_per_request == 131_072_000 and r.kv_seconds_per_request == pytest.approx(0.004)
    assert r.kv_gb_s == pytest.approx(32.768)  # 131.072 MB / 4 ms
    link = next(c for c in r.checks if c.name == "KV transfer rate within the link")
    assert link.status == "pass" and link.share_of_link == pytest.approx(0.65536)
    # the same transfer over a 25 GB/s link is impossible: the metrics count more than the wire carries
    over = pd_report.analyse(_run(), link_gb_s=25.0)
    bad = next(c for c in over.checks if c.name == "KV transfer rate within the link")
    assert bad.status == "fail" and "above the link" in bad.detail
    unknown = pd_report.analyse(_run())
    assert next(c for c in unknown.checks if c.name.startswith("KV")).status == "warn"


def test_pd_path_exercised_and_not(tmp_path):
    ok = next(c for c in pd_report.analyse(_run()).checks if c.name == "PD path exercised")
    assert ok.status == "pass" and ok.prefill_running_mean == 3.1
    doc = yaml.safe_load(BR.read_text())
    comps = doc["results"]["observability"]["components"]
    comps[0]["aggregate"]["running_requests"]["mean"] = 0
    for series in [k for k in doc["results"]["observability"] if k.startswith("vllm_nixl_")]:
        del doc["results"]["observability"][series]  # no KV moved
    idle = next(c for c in pd_report.analyse(_run(doc, tmp_path)).checks if c.name == "PD path exercised")
    assert idle.status == "fail" and "not a PD result" in idle.detail


def test_link_check_alone():
    assert pd_report.kv_link_check(50.0, 50.0).status == "pass"  # exactly the link: possible
    assert pd_report.kv_link_check(50.1, 50.0).status == "fail"
    assert pd_report.kv_link_check(None, 50.0).status == "warn"


def test_not_pd_is_none(tmp_path):
    doc = yaml.safe_load(BR.read_text())
    for c in doc["scenario"]["stack"]:
        c["standardized"]["role"] = "replica"
    assert pd_report.analyse(_run(doc, tmp_path)) is None
