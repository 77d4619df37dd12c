"""The history matches like with like: a figure is one series only over campaigns of the same
context (prompt and generation length, concurrency, load, environment, model, hardware); figures of
another context are their own series, listed as not comparable; two loads of one campaign are two
figures; a regression is marked ▼ as on every other page."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchbook.analysis import history

ROOT = Path(__file__).resolve().parents[1]


def _head(name, date, values, *, gen=32, prompt=120, model="m", hardware="1 x H200", metric="single_latency_s"):
    return {
        "campaign": name,
        "title": name,
        "date": date,
        "order": 0,
        "series": "s",
        "commit": "",
        "provenance": "measured",
        "model": model,
        "hardware": hardware,
        "figures": [
            history._figure(
                metric, "serial", "default", "short", prompt, gen, 1, [f"r{i}" for i in range(len(values))], values
            )
        ],
    }


def test_a_128_and_a_512_token_campaign_are_never_one_series():
    """The issue's case: 128 then 512 generated tokens read as "+363.4 % regression" labelled with
    the first campaign's context only."""
    heads = [
        _head("c128", "2026-11-01", [1.00, 1.02], gen=128),
        _head("c512", "2026-11-02", [4.60, 4.65], gen=512),
    ]
    h = history.analyse(history.history_table(heads))
    assert h.what_changed == []
    assert len(h.figures) == 2 and all(len(f.points) == 1 for f in h.figures)
    assert sorted(f.context for f in h.figures) == [
        "arm serial, short prompt (120 tok), 128 generated, env default",
        "arm serial, short prompt (120 tok), 512 generated, env default",
    ]
    (nc,) = h.not_comparable
    assert nc["differ"] == ["generated tokens"]
    assert [c["campaigns"] for c in nc["contexts"]] == [["c128"], ["c512"]]
    assert "not comparable" in nc["reason"]
    # each figure says why it has nothing to compare
    assert all("not comparable" in f.cannot_tell[0] for f in h.figures)


@pytest.mark.parametrize(
    "field,a,b,word",
    [
        ("prompt", 120, 1446, "prompt tokens"),
        ("model", "llama-8b", "llama-70b", "model"),
        ("hardware", "1 x H200", "8 x H200", "hardware"),
    ],
)
def test_every_part_of_the_context_separates_figures(field, a, b, word):
    heads = [_head("a", "2026-11-01", [1.0, 1.01], **{field: a}), _head("b", "2026-11-02", [2.0, 2.02], **{field: b})]
    h = history.analyse(history.history_table(heads))
    assert h.what_changed == [] and [x["differ"] for x in h.not_comparable] == [[word]]
    contexts = {f.context for f in h.figures}
    assert len(contexts) == 2  # a reader tells the two apart from the context shown
    if field in ("model", "hardware"):
        assert {f"{word} {a}", f"{word} {b}"} <= {c.rsplit(", ", 1)[1] for c in contexts}


def test_the_same_context_is_one_series_and_is_judged():
    heads = [_head("a", "2026-11-01", [1.0, 1.01]), _head("b", "2026-11-02", [1.5, 1.52])]
    h = history.analyse(history.history_table(heads))
    (f,) = h.figures
    assert [p["campaign"] for p in f.points] == ["a", "b"] and h.not_comparable == []
    (r,) = h.what_changed
    assert r["direction"] == "regression"  # latency up
    assert f.setup == "model m, hardware 1 x H200"


def test_two_loads_of_one_campaign_are_two_figures():
    """data/pd-prefill-cap: each arm at 320 and 640 requests; once merged into one series of
    "2 campaign(s)" at the same date."""
    head = history.headline(ROOT / "data" / "pd-prefill-cap")
    t = history.history_table([head])
    assert t.group_by(["series", "figure", "campaign"]).len()["len"].max() == 1
    per_card = t.filter(t["metric"] == "output_tok_s_per_card")
    assert sorted(per_card["load"].to_list()) == ["320 requests"] * 2 + ["640 requests, C128, 6 req/s"] * 2
    assert all("load 3" in c or "load 6" in c for c in per_card["context"])
    assert set(per_card["model"]) == {"DeepSeek-V4-Flash"} and set(per_card["hardware"]) == {"16 x Ascend 910C"}
    h = history.analyse(t)
    assert all(len(f.points) == 1 for f in h.figures)
    # a second campaign of the series at one of the loads is matched with that load only
    later = {**head, "campaign": "pd-later", "date": "2026-10-22"}
    h = history.analyse(history.history_table([head, later]))
    assert all(len(f.points) == 2 for f in h.figures)
    assert all(len({p["load"] for p in f.points}) == 1 for f in h.figures)


def test_one_campaign_cannot_hold_two_points_of_one_figure():
    head = _head("a", "2026-11-01", [1.0, 1.01])
    head["figures"] = head["figures"] * 2
    with pytest.raises(ValueError, match="two headline figures with one context"):
        history.history_table([head])


def test_model_and_hardware_from_the_manifest():
    assert history.model_of({"checkpoint": {"path": "/mnt/data3/DeepSeek-V4-Flash-0731"}}) == "DeepSeek-V4-Flash-0731"
    assert history.model_of({"checkpoint": {"model": "DeepSeek-V4-Flash", "path": "/x/y"}}) == "DeepSeek-V4-Flash"
    assert history.model_of({}) is None
    gpu = {"GPU": "4 x RTX 2080 Ti, 22528 MiB each, driver 580.173.02"}
    assert history.hardware_of({"host": gpu}) == "4 x RTX 2080 Ti"
    assert history.hardware_of({"host": {"accelerator": "Ascend 910C", "cards": "16 physical"}}) == "16 x Ascend 910C"
    assert history.hardware_of({"host": {"hostname": "box"}}) is None


def test_the_page_marks_a_regression_as_every_page_does(tmp_path):
    from benchbook.pages import display, history_page

    heads = [_head("a", "2026-11-01", [1.0, 1.01]), _head("b", "2026-11-02", [1.5, 1.52])]
    heads += [_head("c128", "2026-11-01", [1.0, 1.02], gen=128), _head("c512", "2026-11-02", [4.6, 4.65], gen=512)]
    history.history_table(heads).write_parquet(tmp_path / "history.parquet")
    page = history_page.load(str(tmp_path / "history.parquet"))
    html = str(history_page.findings(page)) + str(history_page.trends(page))
    what = html[html.index('id="bb-what-changed"') :].split("</table>", 1)[0]
    assert "bb-mark-regression" in what and display.MARKS["regression"][0] in what
    assert display.MARKS["result"][0] not in what  # no ▲ on a regression
    assert "Not comparable" in html and "the campaigns differ in generated tokens" in html
    assert "model m, hardware 1 x H200" in html
    assert 'href="#sec-provenance"' in html  # the contents reach the provenance section
