"""Engine profiles: vLLM/SGLang/TGI/unprefixed names and auto-detection from a scrape."""

import pytest

from benchbook.errors import InputError
from benchbook.metrics import prometheus
from benchbook.metrics.profiles import PROFILES, detect_profile
from realdata import realdata

REAL = realdata("prom_llm_servers")
COMMON = {
    "ttft",
    "e2e",
    "queue",
    "prefill",
    "decode",
    "prompt_tokens",
    "generation_tokens",
    "requests_success",
    "requests_aborted",
    "running",
    "waiting",
    "kv_cache_usage",
}


def test_pocket_unchanged():
    p = PROFILES["pocket"]
    assert p.ref("ttft").name == "pocket_ttft_seconds"
    assert p.ref("prompt_tokens").label_dict == {"type": "prompt"}
    assert p.ref("prompt_tokens").sum_label is None


def test_vllm_profiles_cover_every_common_quantity():
    for name, prefix in (("vllm", "vllm:"), ("vllm-unprefixed", "")):
        p = PROFILES[name]
        assert COMMON <= set(p.quantities)
        assert p.ref("ttft").name == prefix + "time_to_first_token_seconds"
        assert p.ref("requests_success").sum_label == "finished_reason"
        assert set(p.ref("requests_success").sum_values) == {"stop", "length", "repetition"}
        assert p.ref("requests_aborted").sum_values == ("abort",)


def test_sglang_and_tgi_names():
    assert PROFILES["sglang"].ref("waiting").name == "sglang:num_queue_reqs"
    assert PROFILES["tgi"].ref("e2e").name == "tgi_request_duration"
    assert not PROFILES["tgi"].has("ttft")


@pytest.mark.parametrize(
    "text,expected",
    [
        ("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 1\n", "vllm"),
        (
            "# TYPE num_requests_running gauge\nnum_requests_running 1\n"
            "# TYPE generation_tokens_total counter\ngeneration_tokens_total 5\n",
            "vllm-unprefixed",
        ),
        ('# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs{model_name="m"} 2\n', "sglang"),
        (
            "# TYPE tgi_queue_size gauge\ntgi_queue_size 0\n# TYPE tgi_request_success counter\ntgi_request_success 3\n",
            "tgi",
        ),
        ("# TYPE pocket_requests_running gauge\npocket_requests_running 0\n", "pocket"),
    ],
)
def test_detect(text, expected):
    assert detect_profile(prometheus.parse(text)).name == expected


def test_detect_nothing_known():
    with pytest.raises(InputError, match="no engine profile"):
        detect_profile(prometheus.parse("# TYPE foo gauge\nfoo 1\n"))


def test_detect_real_vllm_capture():
    f = REAL / "er0080_metrics_vllm_0_25_1_loaded.txt"
    if not f.is_file():
        pytest.skip(f"real capture absent: {f}")
    assert detect_profile(prometheus.read(f)).name == "vllm"
