"""The phase split from counter deltas, and every reason a sample is excluded."""

from pathlib import Path

import pytest

from benchbook.errors import InputError
from benchbook.metrics import phases, prometheus
from benchbook.metrics.profiles import get_profile

POCKET = get_profile("pocket")


def snap(ttft_sum, ttft_n, dur_sum, dur_n, ptok, gtok, ok, name="s"):
    text = f"""\
# TYPE pocket_ttft_seconds histogram
pocket_ttft_seconds_bucket{{le="+Inf"}} {ttft_n}
pocket_ttft_seconds_sum {ttft_sum}
pocket_ttft_seconds_count {ttft_n}
# TYPE pocket_request_duration_seconds histogram
pocket_request_duration_seconds_bucket{{le="+Inf"}} {dur_n}
pocket_request_duration_seconds_sum {dur_sum}
pocket_request_duration_seconds_count {dur_n}
# TYPE pocket_tokens_total counter
pocket_tokens_total{{type="prompt"}} {ptok}
pocket_tokens_total{{type="generation"}} {gtok}
# TYPE pocket_requests_total counter
pocket_requests_total{{status="success"}} {ok}
"""
    return prometheus.parse(text, name)


BEFORE = snap(10.0, 5, 40.0, 5, 600, 160, 5)


def test_seed_tuned_short_sample():
    # One tuned short-prompt sample of the seed: TTFT 2.699 s, decode 31 tokens at 5.248 tok/s.
    after = snap(10.0 + 2.699, 6, 40.0 + 2.699 + 31 / 5.248, 6, 720, 192, 6)
    sp = phases.split(BEFORE, after, POCKET, client_total_s=8.607)
    assert sp.prompt_tokens == 120 and sp.generated_tokens == 32 and sp.decode_tokens == 31
    assert round(sp.prefill_s, 3) == 2.699
    assert round(sp.prefill_tok_s, 1) == 44.5
    assert round(sp.decode_tok_s, 3) == 5.248
    assert round(sp.engine_total_s, 3) == 8.606


@pytest.mark.parametrize(
    "after, reason",
    [
        (
            snap(15.0, 7, 56.0, 7, 840, 224, 7),
            "TTFT count moved by 2, duration count moved by 2, success count moved by 2",
        ),
        (snap(12.0, 6, 48.0, 6, 720, 192, 5), "success count moved by 0"),
        (
            snap(12.0, 6, 48.0, 6, 720, 192, 4),
            'counter reset: pocket_requests_total{status="success"} went from 5 to 4',
        ),
        (snap(18.8588, 6, 48.8587, 6, 720, 192, 6), "does not exceed TTFT"),
        (snap(12.0, 6, 48.0, 6, 720, 161, 6), "need at least 2"),
    ],
)
def test_exclusions(after, reason):
    with pytest.raises(phases.Excluded) as e:
        phases.split(BEFORE, after, POCKET, client_total_s=100.0)
    assert reason in e.value.reason


def test_engine_total_after_client_is_excluded():
    after = snap(12.7, 6, 48.6, 6, 720, 192, 6)
    with pytest.raises(phases.Excluded, match="exceeds client total"):
        phases.split(BEFORE, after, POCKET, client_total_s=8.5)


def test_missing_family_is_excluded():
    after = prometheus.parse('pocket_tokens_total{type="prompt"} 5\n', "a")
    with pytest.raises(phases.Excluded, match="missing from the after snapshot"):
        phases.split(BEFORE, after, POCKET)


# ---- real vLLM captures: the success counter is split by finished_reason, deployments by model_name
VLLM_CAPS = Path(__file__).resolve().parent / "fixtures" / "vllm_captures"


def _vllm(name):
    return prometheus.read(VLLM_CAPS / name)


def test_vllm_success_counter_is_summed_over_finished_reason():
    # one_request.prom = idle.prom + one request finished by "length" (fixtures/vllm_captures/README.md).
    # Before: `vllm:request_success_total: 5 series match {}` — the split could not read a real capture.
    sp = phases.split(_vllm("idle.prom"), _vllm("one_request.prom"), get_profile("vllm"))
    assert sp.finished == {"length": 1.0}  # reported per reason; stop/repetition did not move
    assert sp.prompt_tokens == 100 and sp.decode_tokens == 31
    assert sp.prefill_s == pytest.approx(0.05) and sp.decode_s == pytest.approx(0.40)


def test_vllm_real_window_of_600_requests_is_excluded_with_its_counts():
    with pytest.raises(phases.Excluded) as e:
        phases.split(_vllm("idle.prom"), _vllm("loaded.prom"), get_profile("vllm"))
    assert "success count moved by 600" in e.value.reason and "TTFT count moved by 664" in e.value.reason


def test_two_deployments_are_never_added_and_the_message_names_the_key():
    before, after = _vllm("two_models_idle.prom"), _vllm("two_models_one_request.prom")
    with pytest.raises(InputError) as e:
        phases.split(before, after, get_profile("vllm"), labels_key="$.runs[2].metrics_labels")
    assert "set $.runs[2].metrics_labels in campaign.json" in str(e.value)
    assert 'model_name="opt-350m"' in str(e.value)
    sp = phases.split(before, after, get_profile("vllm"), labels={"model_name": "opt-125m-tp2"})
    assert sp.finished == {"length": 1.0} and sp.generated_tokens == 32
    other = {"model_name": "opt-350m"}
    with pytest.raises(phases.Excluded, match="success count moved by 0"):
        phases.split(before, after, get_profile("vllm"), labels=other)


def test_phases_run_of_real_vllm_captures_in_a_campaign(tmp_path):
    import json
    import shutil

    from benchbook.ingest.campaign import load_campaign

    run = tmp_path / "runs" / "p"
    (run / "metrics").mkdir(parents=True)
    for n in ("two_models_idle.prom", "two_models_one_request.prom"):
        shutil.copyfile(VLLM_CAPS / n, run / "metrics" / n)
    sample = {"prompt_class": "short", "repeat": 0, "warmup": False, "client_total_s": 0.5}
    sample |= {"metrics_before": "metrics/two_models_idle.prom", "metrics_after": "metrics/two_models_one_request.prom"}
    (run / "phases.json").write_text(json.dumps({"format": "benchbook.phases/1", "samples": [sample]}))
    manifest = {
        "format": "benchbook.campaign/1",
        "title": "t",
        "question": "q",
        "date": "2026-08-16",
        "provenance": "measured",
        "engine": {"name": "vllm", "profile": "vllm"},
        "environments": {"default": {"variables": {}}},
        "prompt_classes": {"short": {"tokens": 100}},
        "arms": {"a": {"mode": "serial", "environment": "default"}},
        "runs": [{"id": "p", "arm": "a", "harness": "phases", "path": "runs/p"}],
    }
    (tmp_path / "campaign.json").write_text(json.dumps(manifest))
    with pytest.raises(InputError, match=r"set \$\.runs\[0\]\.metrics_labels in campaign\.json"):
        load_campaign(tmp_path).phase_samples
    manifest["runs"][0]["metrics_labels"] = {"model_name": "opt-125m-tp2"}
    (tmp_path / "campaign.json").write_text(json.dumps(manifest))
    df = load_campaign(tmp_path).phase_samples
    assert df["finished_reason"].to_list() == ["length"] and df["prompt_tokens"].to_list() == [100.0]
