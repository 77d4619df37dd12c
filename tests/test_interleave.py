"""The interleave measured only when its two requests overlapped (analysis/interleave.py): a short
request that never ran during the long one is "not measured" — never a finding, a verdict or the
index's headline. The mini campaign's seeds-shaped requests.json files, copied and shifted in tmp_path."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

MINI = Path(__file__).resolve().parent / "fixtures" / "mini"


def _mini(tmp_path: Path, shift: dict[str, float]) -> Path:
    """The mini campaign with each named run's interleave short request moved to start ``shift`` seconds
    after its long one ended (as `capture ladder --interleave` at its 0.5-s delay did against a server
    whose requests took 0.24 s)."""
    camp = tmp_path / "mini"
    shutil.copytree(MINI, camp)
    m = json.loads((camp / "campaign.json").read_text())
    m["arms"]["batch"]["environment"] = "default"  # one difference (the mode): a pair the page judges
    (camp / "campaign.json").write_text(json.dumps(m))
    for run, gap in shift.items():
        f = camp / "runs" / run / "requests.json"
        d = json.loads(f.read_text())
        long_end = next(
            r["end"] for r in d["requests"] if r["scenario"] == "interleave" and r["prompt_class"] == "long"
        )
        for r in d["requests"]:
            if r["scenario"] == "interleave" and r["prompt_class"] == "short":
                dur = r["end"] - r["start"]
                r["start"], r["end"] = long_end + gap, long_end + gap + dur
        f.write_text(json.dumps(d))
    return camp


def _analyse(camp: Path):
    from benchbook.analysis.campaign_analysis import analyse

    return analyse(camp)


def test_overlapping_interleave_is_judged(tmp_path):
    an = _analyse(_mini(tmp_path, {}))
    assert any(c["metric"] == "interleave_short_latency_s" for c in an.comparisons)
    rows = {r["run"]: r for r in an.whole_request_rows()}
    assert rows["req-batch"]["interleave_short_latency_s"] == pytest.approx(2.4)


def test_an_interleave_that_did_not_overlap_is_not_measured(tmp_path):
    an = _analyse(_mini(tmp_path, {"req-serial": 0.26, "req-batch": 0.26}))
    assert not any(c["metric"] == "interleave_short_latency_s" for c in an.comparisons)
    rows = {r["run"]: r for r in an.whole_request_rows()}
    assert rows["req-batch"]["interleave_short_latency_s"] is None
    f = an.baseline_findings().as_dict()
    lines = [x["text"] for x in f["lines"]]
    assert (
        "req-batch: interleave not measured — in its 1 round(s) 1 short request(s) started 0.26 s after the long "
        "one had ended" in "\n".join(lines)
    )
    assert not any("nterleave" in x["text"] for x in f["lines"] if x["kind"] != "unjudged")


def test_one_side_overlapped_gives_no_verdict(tmp_path):
    """The serial run's short request ran during its long one, the batched run's did not: nothing to
    compare the serial figure with."""
    an = _analyse(_mini(tmp_path, {"req-batch": 0.5}))
    assert not any(c["metric"] == "interleave_short_latency_s" for c in an.comparisons)
    from benchbook.analysis import interleave

    assert [n.split(":")[0] for n in interleave.not_measured(an.camp)] == ["req-batch"]
