"""Scheduled rendering: incremental, parallel, quiet, the index under --page, and the history page.

One small data folder (three synthetic nightly campaigns with a known decode step, one PD campaign)
is rendered with the real notebooks; the tests then render it again in the ways cron and CI do.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from benchbook.commands import synth
from benchbook.commands.cli import main

EPOCH = "1790000000"
SHA = "0" * 40


def _public(root: Path, pattern: str = "*") -> list[Path]:
    """Files by the names readers open (not the hidden locks, keys' temp files and page manifests)."""
    return [
        p
        for p in sorted(root.rglob(pattern))
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)
    ]


def _tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in _public(root)}


def _mtimes(root: Path, pattern: str = "*.html") -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in _public(root, pattern)}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """``render --all -j 2 --quiet`` of the data folder under SOURCE_DATE_EPOCH: (data, out, stderr
    of that render, the output tree)."""
    base = tmp_path_factory.mktemp("schedule")
    data, out = base / "data", base / "reports"
    synth.synthesize_series(data, 3, [synth.parse_step("2026-11-03:decode_tok_s:-20%")], snapshots=3, memory=False)
    synth.synthesize(data / "pd-synthetic", "pd", runs=2, requests=16, seed=3)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SOURCE_DATE_EPOCH", EPOCH)
        mp.setenv("BENCHBOOK_GIT_SHA", SHA)
        # stderr of the whole process, kernels included: file descriptor 2, not sys.stderr
        log = base / "stderr.txt"
        saved = os.dup(2)
        with open(log, "wb") as fh:
            os.dup2(fh.fileno(), 2)
        try:
            rc = main(["render", "--all", str(data), "--out", str(out), "-j", "2", "--quiet"])
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        err = log.read_text()
    assert rc == 0, err
    return data, out, err, _tree(out)


def test_quiet_successful_render_has_empty_stderr(rendered):
    _, out, err, tree = rendered
    assert err == ""
    assert {"index.html", "history.html", "history.parquet", "pd-synthetic/pd.html"} <= set(tree)
    assert {f"nightly-2026-11-0{d}/baseline.html" for d in (1, 2, 3)} <= set(tree)


def test_second_render_renders_nothing_and_says_so(rendered, capsys, monkeypatch):
    data, out, _, _ = rendered
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    monkeypatch.setenv("BENCHBOOK_GIT_SHA", SHA)
    before = _mtimes(out, "*")
    assert main(["render", "--all", str(data), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "0 page(s) rendered, 4 unchanged, 0 failed; history unchanged" in err
    assert err.count(": unchanged") == 4 and "rendering" not in err
    assert _mtimes(out, "*") == before  # the index too: a no-op writes nothing (mtime-based sync sees no change)


def test_index_keeps_every_page_under_page(rendered, monkeypatch):
    data, out, _, _ = rendered
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    assert main(["render", "--all", str(data), "--out", str(out), "--page", "baseline", "--quiet"]) == 0
    index = (out / "index.html").read_text()
    for href in ("pd-synthetic/pd.html", "nightly-2026-11-01/baseline.html", "history.html"):
        assert f'href="{href}"' in index, href


def test_j1_output_is_byte_identical_to_j2(rendered, tmp_path, monkeypatch):
    data, out, _, tree = rendered
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    monkeypatch.setenv("BENCHBOOK_GIT_SHA", SHA)
    out1 = tmp_path / "reports"
    assert main(["render", "--all", str(data), "--out", str(out1), "-j", "1", "--quiet"]) == 0
    assert _tree(out1) == tree


@pytest.mark.fresh_kernel  # `render CAMPAIGN` in a kernel of its own, as outside the tests
def test_reused_kernel_gives_the_bytes_of_a_fresh_kernel(rendered, tmp_path, monkeypatch):
    """``render CAMPAIGN`` starts a kernel for the page; ``render --all`` reused a worker's kernel."""
    data, out, _, tree = rendered
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    monkeypatch.setenv("BENCHBOOK_GIT_SHA", SHA)
    one = tmp_path / "one"
    assert main(["render", str(data / "nightly-2026-11-03"), "--out", str(one), "--quiet"]) == 0
    for suffix in (".html", ".ipynb", ".values.json"):
        assert _tree(one)[f"baseline{suffix}"] == tree[f"nightly-2026-11-03/baseline{suffix}"], suffix


def test_history_page_in_chromium(rendered, open_page):
    _, out, _, _ = rendered
    rep = open_page(
        out / "history.html",
        table_ids=["bb-what-changed"],
        screenshot="history.png",
        text_of=["#bb-what-changed", "#bb-findings"],
    )
    assert rep.ok, rep.problems()
    assert rep.layout.problems() == []  # charts of several campaigns: no label outside its chart
    assert rep.charts >= 5
    # three campaigns: consecutive changes are judged; too few for step detection, and it says so
    assert "nightly-2026-11-03" in rep.texts["#bb-what-changed"]
    assert "Decode tok/s" in rep.texts["#bb-what-changed"]
    assert "step detection needs at least 4" in rep.texts["#bb-findings"]


def test_changing_one_input_rerenders_only_that_campaign(rendered, capsys, monkeypatch):
    """Runs last of the tests on ``rendered``: it changes an input file."""
    data, out, _, _ = rendered
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    monkeypatch.setenv("BENCHBOOK_GIT_SHA", SHA)
    before = _mtimes(out)
    with open(data / "nightly-2026-11-02" / "runs" / "serial-1" / "server.log", "a") as fh:
        fh.write("[server] one more line\n")
    assert main(["render", "--all", str(data), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "1 page(s) rendered, 3 unchanged" in err
    after = _mtimes(out)
    changed = sorted(k for k in after if after[k] != before.get(k))
    # the index lists the same pages with the same headlines: its bytes, and so its mtime, stay
    assert changed == ["history.html", "nightly-2026-11-02/baseline.html"]
    # the re-rendered pages are plain files beside their keys, where the next render checks: it
    # renders nothing
    for page in (out / "nightly-2026-11-02" / "baseline.html", out / "history.html"):
        assert not page.is_symlink() and (page.parent / f"{page.stem}.key").is_file()
        assert not (page.parent / ".pages").exists()
    assert main(["render", "--all", str(data), "--out", str(out)]) == 0
    assert "0 page(s) rendered, 4 unchanged, 0 failed; history unchanged" in capsys.readouterr().err


@pytest.fixture(scope="module")
def history_only(tmp_path_factory):
    """Two series (one with known steps, one flat and noisy), headline figures and the history page
    only (``--page history``: no campaign page is rendered)."""
    base = tmp_path_factory.mktemp("history")
    data, out = base / "data", base / "reports"
    steps = [synth.parse_step("2026-11-05:decode_tok_s:-15%"), synth.parse_step("2026-11-09:prefill_tok_s:+20%")]
    synth.synthesize_series(data, 12, steps, name="stepped", memory=False)
    synth.synthesize_series(data, 12, [], name="flat", memory=False, seed=7)
    assert main(["render", "--all", str(data), "--out", str(out), "--page", "history", "--quiet"]) == 0
    return out


def test_history_finds_each_step_and_none_in_the_flat_series(history_only, open_page):
    out = history_only
    assert not list(out.rglob("baseline.html"))
    import json

    values = json.loads((out / "history.values.json").read_text())
    steps = {(s["series"], s["figure"].split("/")[0], s["at"]) for s in values["steps"]}
    assert ("stepped", "decode_tok_s", "stepped-2026-11-05") in steps
    assert ("stepped", "prefill_tok_s", "stepped-2026-11-09") in steps
    assert not [s for s in steps if s[0] == "flat"]
    assert not [r for r in values["what_changed"] if r["series"] == "flat"]
    rep = open_page(out / "history.html", table_ids=["bb-what-changed"], text_of=["#bb-what-changed"])
    assert rep.ok, rep.problems()
    text = rep.texts["#bb-what-changed"]
    assert "stepped-2026-11-05" in text and "stepped-2026-11-09" in text and "flat-" not in text


def test_folder_digest_covers_paths_bytes_and_link_targets(tmp_path):
    from benchbook.pipeline.schedule import folder_digest

    a = tmp_path / "a"
    (a / "runs" / "r1").mkdir(parents=True)
    (a / "campaign.json").write_bytes(b"{}")
    (a / "runs" / "r1" / "x.prom").write_bytes(b"m 1\n")
    (a / "runs" / "r1" / "link").symlink_to("x.prom")
    # by hand: sorted relative paths, each followed by the SHA-256 of its bytes (a link: its target text)
    h = hashlib.sha256()
    for rel, data in (("campaign.json", b"{}"), ("runs/r1/link", b"x.prom"), ("runs/r1/x.prom", b"m 1\n")):
        h.update(rel.encode() + b"\0")
        h.update(hashlib.sha256(data).digest())
    assert folder_digest(a) == h.hexdigest()
    import shutil

    b = tmp_path / "elsewhere" / "b"
    shutil.copytree(a, b, symlinks=True)
    assert folder_digest(b) == folder_digest(a)  # where the folder is does not matter
    (b / "runs" / "r1" / "x.prom").write_bytes(b"m 2\n")
    assert folder_digest(b) != folder_digest(a)
    (b / "runs" / "r1" / "x.prom").write_bytes(b"m 1\n")
    (b / "runs" / "r1" / "x.prom").rename(b / "runs" / "r1" / "y.prom")
    assert folder_digest(b) != folder_digest(a)


def test_an_order_in_campaign_json_puts_a_campaign_first(tmp_path):
    """``render --all`` plans campaigns with an ``order`` first (lowest first), the rest by name; the
    index lists them in the same way (the rest newest first); a campaign.json that cannot be read
    sorts with the unordered (its failure is reported when it is planned)."""
    import json

    from benchbook.pipeline.campaigns import CampaignOutcome
    from benchbook.pipeline.index import index_html
    from benchbook.pipeline.plan import find_campaigns, in_render_order

    docs = {
        "a-old": {"date": "2026-01-01"},
        "b-new": {"date": "2026-06-01"},
        "z-first": {"date": "2025-01-01", "order": 1},
        "y-second": {"date": "2025-02-01", "order": 2},
    }
    for name, doc in docs.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "campaign.json").write_text(json.dumps({"title": name, **doc}))
    (tmp_path / "c-broken").mkdir()
    (tmp_path / "c-broken" / "campaign.json").write_text("{not json")
    found = find_campaigns(tmp_path)
    assert [p.name for p in found] == ["a-old", "b-new", "c-broken", "y-second", "z-first"]  # by name
    assert [p.name for p in in_render_order(found)] == ["z-first", "y-second", "a-old", "b-new", "c-broken"]
    outcomes = [CampaignOutcome(n, {"title": n, **d}) for n, d in docs.items()]
    index = index_html(outcomes, tmp_path)
    where = {n: index.index(f">{n}<") for n in docs}
    assert sorted(docs, key=where.get) == ["z-first", "y-second", "b-new", "a-old"]


def test_a_campaign_is_analysed_once_for_its_findings_headline_and_pages(tmp_path):
    """A render worker's kernel keeps the analysis of the campaign it renders: the headline job makes
    it (findings.json, headline.json), each page reads it (campaign_analysis.share_analyses)."""
    import json
    import shutil

    from benchbook.pipeline import schedule
    from benchbook.pipeline.plan import NOTEBOOKS

    root = Path(__file__).resolve().parents[1]
    src = shutil.copytree(root / "data" / "dsv4-163", tmp_path / "data" / "dsv4-163")
    out = tmp_path / "out" / "dsv4-163"
    plan = schedule.plan_campaign(src, out, only=None, overrides={}, notebooks=None, force=False, log=lambda m: None)
    assert [j.page for j in plan.jobs] == [None, "baseline", "ablation"] and plan.jobs[0].in_kernel
    with schedule.Pool(1, NOTEBOOKS) as pool:
        pool._lazy = schedule._LazyKernel(str(NOTEBOOKS))  # the worker's kernel (in a test: the warm one)
        kernel = pool._lazy.get()
        shared = "__import__('benchbook.analysis.campaign_analysis', fromlist=['_'])._SHARED"
        counts = f"__import__('json').dumps([{shared}.made, {shared}.reused])"
        before = json.loads(kernel.value("", counts))
        done = pool.run(plan.jobs)
        assert all(d.ok for d in done), [d.error for d in done]
        after = json.loads(kernel.value("", counts))
    assert [a - b for a, b in zip(after, before)] == [1, 2]  # made once (the headline job), read by the two pages
    assert {"findings.json", "headline.json", "baseline.html", "ablation.html"} <= {p.name for p in out.iterdir()}
    assert json.loads((out / "findings.json").read_text())["campaign"] == "dsv4-163"
