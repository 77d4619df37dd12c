"""Causes found, not assumed: the prefix-cache check separates the tool's warm-up, prompts repeated
across points and repeats inside the run, from the H200 files (copied and edited in tmp_path), and no
hint contradicts what the engine states about prefix caching."""

from __future__ import annotations

import json
import re
from argparse import Namespace
from pathlib import Path

import h200_arms
from benchbook.analysis import cache_cause as cc
from benchbook.analysis.checks import _why_cached
from benchbook.commands import init as init_cmd
from benchbook.commands.summary import build


def _init(dest: Path, *inputs: Path) -> dict:
    assert init_cmd.run(Namespace(dir=dest, inputs=list(inputs), title=None, question=None, quiet=True)) == 0
    return build(dest)


def _cache_checks(s: dict) -> dict[str, dict]:
    return {c["run"]: c for c in s["checks"] if c["name"].startswith("prefix cache:")}


def _set_hits(after: Path, before: Path, delta: float) -> None:
    """The after-scrape's cache-hit counters (vLLM states the hit tokens three ways) set to the
    before-scrape's plus ``delta``."""
    text = after.read_text()
    for name in (
        r"vllm:prefix_cache_hits_total\{[^}]*\}",
        r"vllm:prompt_tokens_cached_total\{[^}]*\}",
        r'vllm:prompt_tokens_by_source_total\{[^}]*source="local_cache_hit"[^}]*\}',
    ):
        pat = rf"^({name}) ([0-9.e+]+)$"
        b = float(re.search(pat, before.read_text(), re.M).group(2))
        text = re.sub(pat, lambda m, b=b: f"{m.group(1)} {b + delta}", text, flags=re.M)
    after.write_text(text)


def test_the_shared_seed_h200_sweep():
    """On the H200 files (one --seed for every point): concurrency 1's 2,048 cached tokens are the two
    warm-ups; every later point found the earlier point's prompts."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        a = h200_arms.arm(Path(d), "batch", ("conc1", "conc2", "conc8"))
        checks = _cache_checks(_init(Path(d) / "camp", a))
    assert (
        "the tool's warm-up: 2,048 cached tokens ≈ 2.0 of this point's 1,038-token prompts"
        in checks["batch-conc1"]["detail"]
    )
    assert "prompts repeated across points" in checks["batch-conc2"]["detail"]
    assert "point batch-conc1 ran earlier on this server" in checks["batch-conc2"]["detail"]
    assert "point batch-conc2 ran earlier" in checks["batch-conc8"]["detail"]


def test_a_seed_per_point_blames_no_shared_seed(tmp_path):
    """The same points as a sweep with its own --seed per point would have run them (each file states its
    seed, as --metadata seed=N writes it; the engine counted only the warm-ups' 2,048 tokens per point):
    every point's cause is the warm-up, and no row mentions a shared seed."""
    a = h200_arms.arm(tmp_path, "batch", ("conc1", "conc2", "conc8"))
    for k, p in enumerate(("conc1", "conc2", "conc8")):
        f = a / "results" / f"bench_{p}.json"
        d = json.loads(f.read_text())
        d["seed"] = 100 + k
        f.write_text(json.dumps(d))
        _set_hits(a / "metrics" / f"{p}_after.prom", a / "metrics" / f"{p}_before.prom", 2048)
    checks = _cache_checks(_init(tmp_path / "camp", a))
    for p in ("conc1", "conc2", "conc8"):
        detail = checks[f"batch-{p}"]["detail"]
        assert "the tool's warm-up: 2,048 cached tokens" in detail, detail
        assert "seed" not in detail and "across points" not in detail


def test_repeats_inside_the_first_point(tmp_path):
    a = h200_arms.arm(tmp_path, "batch", ("conc1",))
    _set_hits(a / "metrics" / "conc1_after.prom", a / "metrics" / "conc1_before.prom", 10 * 1024)
    detail = _cache_checks(_init(tmp_path / "camp", a))["batch-conc1"]["detail"]
    assert "repeats inside the run: 10,240 cached tokens (9.9 prompts)" in detail
    assert "no earlier point on this server" in detail


def test_other_seeds_rule_out_the_earlier_point():
    first = cc.Point("a-conc1", "a/1", 1.0, (1038,) * 16, 1, "random")
    later = cc.Point("a-conc2", "a/1", 2.0, (1038,) * 16, 2, "random")
    text = cc.cause(later, 16 * 1024, [first])
    assert text.startswith("repeats inside the run") and "every earlier point on this server sent other prompts" in text
    same = cc.Point("a-conc2", "a/1", 2.0, (1038,) * 16, 1, "random")
    assert "with the same --seed (1)" in cc.cause(same, 16 * 1024, [first])
    other_lengths = cc.Point("a-conc2", "a/1", 2.0, (900,) * 16, None, None)
    assert cc.cause(other_lengths, 16 * 900, [cc.Point("a-conc1", "a/1", 1.0, (1038,) * 16, None, None)]).startswith(
        "repeats inside the run"
    )
    assert cc.cause(later, 12, [first]).startswith("a shared prefix")


def test_no_hint_contradicts_the_engine():
    on = (True, "vllm:cache_config_info")
    assert "prefix caching off?" not in _why_cached("phase sample", False, None, on)
    assert _why_cached("phase sample", False, None, on).endswith("with prefix caching on (vllm:cache_config_info)")
    assert _why_cached("phase sample", False, None, (False, "vllm:cache_config_info")).startswith(
        "prefix caching is off"
    )
    assert "do not state whether prefix caching was on" in _why_cached("phase sample", False, None)
