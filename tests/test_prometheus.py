"""benchbook.metrics.prometheus: prometheus_client parsing, narrow parsing, deltas and errors."""

from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from benchbook.errors import InputError
from benchbook.metrics import prometheus

TEXT = """\
# HELP pocket_ttft_seconds Time to first token.
# TYPE pocket_ttft_seconds histogram
pocket_ttft_seconds_bucket{le="1"} 0
pocket_ttft_seconds_bucket{le="5"} 4
pocket_ttft_seconds_bucket{le="+Inf"} 5
pocket_ttft_seconds_sum 12.5
pocket_ttft_seconds_count 5
# HELP pocket_tokens_total Tokens processed.
# TYPE pocket_tokens_total counter
pocket_tokens_total{type="prompt"} 600
pocket_tokens_total{type="generation"} 160
# HELP process_cpu_seconds_total CPU time.
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 12.0
# HELP vllm:num_requests_running Running.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 3
vllm:num_requests_running{engine="1",model_name="m"} 4
"""


def test_full_parse_matches_prometheus_client():
    snap = prometheus.parse(TEXT, "x.prom")
    ref = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for fam in text_string_to_metric_families(TEXT)
        for s in fam.samples
    }
    got = {(name, key): v for name, series in snap.values.items() for key, v in series.items()}
    assert got == ref
    assert snap.types["pocket_ttft_seconds"] == "histogram"
    assert snap.get("pocket_tokens_total", {"type": "generation"}) == 160


def test_narrow_parse_keeps_only_named_families_and_agrees():
    full = prometheus.parse(TEXT, "x.prom")
    narrow = prometheus.parse(TEXT, "x.prom", names=["pocket_ttft_seconds", "pocket_tokens_total"])
    assert set(narrow.values) == {
        "pocket_ttft_seconds_bucket",
        "pocket_ttft_seconds_sum",
        "pocket_ttft_seconds_count",
        "pocket_tokens_total",
    }
    for name, series in narrow.values.items():
        assert series == full.values[name]


def test_several_matching_series_are_not_summed():
    snap = prometheus.parse(TEXT, "x.prom")
    with pytest.raises(InputError) as e:
        snap.get("vllm:num_requests_running", {"model_name": "m"})
    assert "2 series match" in str(e.value) and "x.prom" in str(e.value)
    assert snap.get("vllm:num_requests_running", {"engine": "1"}) == 4


def test_invalid_text_names_file_and_line(tmp_path: Path):
    bad = TEXT.replace('pocket_tokens_total{type="generation"} 160', 'pocket_tokens_total{type="generation" 160')
    p = tmp_path / "bad.prom"
    p.write_text(bad)
    with pytest.raises(InputError) as e:
        prometheus.read(p)
    msg = str(e.value)
    assert msg.startswith(f"{p}: line 11: not valid Prometheus text exposition")


def test_non_utf8_and_directory(tmp_path: Path):
    p = tmp_path / "b.prom"
    p.write_bytes(b"a 1\nb\xff 2\n")
    with pytest.raises(InputError, match="line 2: not UTF-8"):
        prometheus.read(p)
    with pytest.raises(InputError, match="is a directory"):
        prometheus.read(tmp_path)


def test_delta_and_reset():
    a = prometheus.parse("c_total 10\n", "a")
    b = prometheus.parse("c_total 13\n", "b")
    assert prometheus.delta(a, b, "c_total").value == 3
    d = prometheus.delta(b, a, "c_total")
    assert d.reset and not d.missing
    with pytest.raises(ValueError, match="reset"):
        d.value
    assert prometheus.delta(a, b, "nope_total").missing
