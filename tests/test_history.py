"""The history analysis: step detection on series with known steps, consecutive changes with the
pages' noise rule, "cannot tell" with too little history, and synthetic nightly series."""

from __future__ import annotations

import math
import random

import polars as pl
import pytest

from benchbook.analysis import history
from benchbook.commands import synth
from benchbook.errors import UsageError


def _noisy(levels: list[tuple[int, float]], sigma: float, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [math.log(level) + rng.gauss(0.0, sigma) for count, level in levels for _ in range(count)]


@pytest.mark.parametrize("seed", range(8))
def test_steps_found_where_they_are(seed):
    y = _noisy([(30, 100.0), (25, 91.0), (40, 104.0)], 0.02, seed)
    segs = history.detect_steps(y, [history.robust_scatter(y)] * len(y))
    assert [a for a, _, _ in segs] == [0, 30, 55]
    assert [round(math.exp(lv) / 100, 1) for _, _, lv in segs] == [1.0, 0.9, 1.0]


@pytest.mark.parametrize("seed", range(20))
def test_flat_noisy_series_has_one_level(seed):
    y = _noisy([(365, 50.0)], 0.03, seed)
    segs = history.detect_steps(y, [history.robust_scatter(y)] * len(y))
    assert len(segs) == 1


def test_a_single_outlier_is_not_a_level_shift_unless_it_is_huge():
    y = [0.0] * 20 + [0.5] + [0.0] * 20
    segs = history.detect_steps(y, [0.01] * len(y))
    # an isolated spike is its own one-campaign segment, and the level comes back
    assert [(a, b) for a, b, _ in segs] == [(0, 20), (20, 21), (21, 41)]


def _table(points: list[tuple[str, list[float]]], series: str = "s", higher: bool = True) -> pl.DataFrame:
    heads = []
    for i, (date, values) in enumerate(points):
        heads.append(
            {
                "campaign": f"c{i:03d}",
                "title": f"campaign {i}",
                "date": date,
                "order": 0,
                "series": series,
                "commit": f"abc{i}",
                "provenance": "synthetic",
                "figures": [
                    history._figure(
                        "decode_tok_s" if higher else "single_latency_s",
                        "serial",
                        "default",
                        "short",
                        120,
                        32,
                        None,
                        [f"r{k}" for k in range(len(values))],
                        values,
                    )
                ],
            }
        )
    return history.history_table(heads)


def test_consecutive_change_uses_the_pages_rule():
    t = _table([("2026-11-01", [10.0, 10.2]), ("2026-11-02", [9.0, 9.1])])
    h = history.analyse(t)
    (c,) = h.figures[0].changes
    assert c["is_result"] and c["direction"] == "regression"
    assert c["change"] == pytest.approx(9.05 / 10.1 - 1)
    assert [r["to"] for r in h.what_changed] == ["c001"]
    # overlapping ranges: within noise
    t = _table([("2026-11-01", [10.0, 10.5]), ("2026-11-02", [10.4, 10.9])])
    (c,) = history.analyse(t).figures[0].changes
    assert not c["is_result"] and c["verdict"] == "within noise — not a result"


def test_no_measured_spread_cannot_tell():
    t = _table([(f"2026-11-{d:02d}", [10.0 if d < 4 else 8.0]) for d in range(1, 8)])
    h = history.analyse(t)
    f = h.figures[0]
    assert all(c["verdict"] == history.CANNOT_TELL for c in f.changes)
    assert f.steps == [] and any("no campaign measured" in w for w in f.cannot_tell)
    assert h.what_changed == []
    assert any(c["figure"] == f.figure for c in h.cannot_tell)


def test_too_few_campaigns_cannot_tell():
    h = history.analyse(_table([("2026-11-01", [10.0, 10.1])]))
    assert h.what_changed == [] and "only one campaign" in h.cannot_tell[0]["reason"]
    h = history.analyse(_table([(f"2026-11-0{d}", [10.0, 10.1]) for d in (1, 2, 3)]))
    assert any("step detection needs at least" in w for w in h.figures[0].cannot_tell)


def test_order_is_date_then_order_then_name():
    t = _table([("2026-11-03", [1.0, 1.01]), ("2026-11-01", [2.0, 2.01]), ("2026-11-02", [3.0, 3.01])])
    h = history.analyse(t)
    assert h.series["s"] == ["c001", "c002", "c000"]
    assert [p["median"] for p in h.figures[0].points] == pytest.approx([2.005, 3.005, 1.005])


def test_parquet_round_trip(tmp_path):
    t = _table([("2026-11-01", [10.0, 10.2]), ("2026-11-02", [9.0, 9.1])])
    t.write_parquet(tmp_path / "history.parquet")
    back = history.read_table(tmp_path / "history.parquet")
    assert back.equals(t)
    assert set(history.TABLE_SCHEMA) == set(back.columns)


# ----------------------------------------------------------------------------- synthetic series


def test_parse_step():
    assert synth.parse_step("2026-11-13:decode_tok_s:-9%") == synth.Step("2026-11-13", "decode_tok_s", -0.09)
    for bad in (
        "2026-11-13:decode_tok_s",
        "2026-13-01:decode_tok_s:+5%",
        "2026-11-13:nope:+5%",
        "2026-11-13:decode_tok_s:x",
    ):
        with pytest.raises(UsageError):
            synth.parse_step(bad)


def test_stepped_model_moves_the_metric():
    base = synth.Model()
    m = synth.stepped_model([synth.Step("2026-11-05", "decode_tok_s", 0.25)], "2026-11-05")
    assert m.decode_step_s == pytest.approx(base.decode_step_s / 1.25)
    assert synth.stepped_model([synth.Step("2026-11-05", "decode_tok_s", 0.25)], "2026-11-04") == base


def _series_history(tmp_path, count, steps, **kw):
    paths = synth.synthesize_series(tmp_path, count, steps, **kw)
    heads = [history.headline(p) for p in paths]
    return history.analyse(history.history_table(heads))


def test_synthetic_series_steps_are_found(tmp_path):
    steps = [synth.parse_step("2026-11-05:decode_tok_s:-15%"), synth.parse_step("2026-11-09:prefill_tok_s:+20%")]
    h = _series_history(tmp_path, 12, steps, memory=False)
    planted = {"decode_tok_s": "nightly-2026-11-05", "prefill_tok_s": "nightly-2026-11-09"}
    for metric, at in planted.items():
        figs = [f for f in h.figures if f.metric == metric]
        assert {f.context.split(",")[1].strip().split()[0] for f in figs} == {"short", "long"}
        for f in figs:  # exactly the planted step, where it was planted, of about its size
            (st,) = [s for s in f.steps if s["is_result"]]
            assert st["at"] == at
            assert st["change"] == pytest.approx(-0.15 if metric == "decode_tok_s" else 0.20, abs=0.05)
    worst = h.what_changed[0]
    assert worst["direction"] == "regression" and worst["figure"].startswith("decode_tok_s")
    assert worst["to"] == "nightly-2026-11-05" and worst["from"] == "nightly-2026-11-04"


def test_synthetic_flat_series_has_no_step(tmp_path):
    h = _series_history(tmp_path, 12, [], memory=False)
    assert h.summary()["steps"] == []
    assert h.what_changed == []


def test_series_cli(tmp_path, capsys):
    from benchbook.commands.cli import main

    assert main(["synth", "--series", "2", "--out", str(tmp_path), "--step", "2026-11-02:ladder_tok_s:+10%"]) == 0
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["nightly-2026-11-01", "nightly-2026-11-02"]
    assert history.headline(tmp_path / names[1])["series"] == "nightly"
    assert main(["synth", "--out", str(tmp_path / "x"), "--step", "2026-11-02:ladder_tok_s:+10%"]) != 0
