"""Hostile strings from input, in every page kind: shown as text, never executed, nothing fetched.

A module fixture builds, into tmp_path, two campaigns (``tests/fixtures/mini`` plus an ablation arm,
and ``data/pd-prefill-cap``) with every free-text field, key and id replaced by hostile text, plus
two vLLM result files with hostile model/label fields and file names, renders ``render --all`` (baseline,
ablation, pd and the index) and ``render --compare`` once, then opens every page in Chromium with the
network cut off.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchbook.commands.cli import main

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "tests" / "fixtures" / "mini"
PD = ROOT / "data" / "pd-prefill-cap"
VLLM = ROOT / "tests" / "fixtures" / "realdata" / "vllm_bench_serving"
NV = [VLLM / "nv-action_serving_llama8B_tp1_1.json", VLLM / "nv-action_serving_llama8B_tp1_2.json"]

LONG = "long-" + "0123456789abcdef" * 256  # 4 KiB without a space
HOSTILE = [
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "</style><script>alert(2)</script>",
    "javascript:alert(3)",
    '<a href="javascript:alert(4)">x</a>',
    "[x](javascript:alert(5))",
    "![x](http://example.com/x.png)",
    "{{7*7}}",
]
ALL = " ".join(HOSTILE)


def h(tag: str) -> str:
    """A unique hostile value for one field: a tag (to keep keys distinct) and every hostile string."""
    return f"{tag} {ALL}"


def _write(path: Path, data) -> None:
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False), encoding="utf-8")


def _hostile_mini(dest: Path) -> None:
    """tests/fixtures/mini with hostile free text everywhere, plus an ablation arm (a copy of the
    serial phase run) so the same campaign also gets an ablation page."""
    shutil.copytree(MINI, dest)
    m = json.loads((dest / "campaign.json").read_text())
    s_arm, b_arm, a_arm = h("serial"), h("batch"), h("ablate")
    env, short, series = h("tuned-env"), h("short-ü"), h("série")
    ids = {
        "req-serial": h("req-serial"),
        "req-batch": h("req-batch"),
        "phases-serial": h("phases-serial"),
        "mem-serial": h("mem-serial"),
    }
    m["title"] = h("Hostile title")
    m["question"] = h("question") + " " + LONG
    m["scope"] = {"measured": HOSTILE + [LONG], "outside": [h("outside")]}
    m["host"] = {"GPU": h("gpu"), "CPU / host": "javascript:alert(3)", h("host-key"): "x"}
    m["checkpoint"] = {"path": "javascript:alert(3)", "layers": 2, "architecture": h("arch")}
    m["engine"]["name"] = h("engine")
    m["engine"]["commit"] = h("commit")
    m["environments"] = {
        "default": {"description": h("nothing set"), "variables": {}},
        env: {"description": h("env-desc"), "variables": {"POCKET_BATCH": h("value")}},
    }
    m["prompt_classes"] = {short: m["prompt_classes"]["short"], "long": m["prompt_classes"]["long"]}
    m["arms"] = {
        s_arm: {**m["arms"]["serial"], "label": h("serial-label"), "role": "baseline", "description": h("desc")},
        b_arm: {**m["arms"]["batch"], "label": h("batch-label"), "environment": env},
        a_arm: {
            **m["arms"]["serial"],
            "label": h("ablate-label"),
            "environment": env,
            "role": "ablation",
            "switches": {"POCKET_BATCH": h("switch")},
        },
    }
    for a in m["arms"].values():
        a["series"] = series
    arm_of = {"serial": s_arm, "batch": b_arm}
    for r in m["runs"]:
        r["arm"] = arm_of[r["arm"]]
        r["id"] = ids[r["id"]]
    shutil.copytree(dest / "runs" / "phases-serial", dest / "runs" / "phases-ablate")
    shutil.copytree(dest / "runs" / "req-serial", dest / "runs" / "req-serial2")  # a measured spread:
    rq = dest / "runs" / "req-serial2" / "requests.json"  # every time 3 % later (a copy is no repeat)
    doc = json.loads(rq.read_text())
    for q in doc["requests"]:
        q["start"], q["end"] = q["start"] * 1.03, q["end"] * 1.03
    rq.write_text(json.dumps(doc))
    ids["phases-ablate"], ids["req-serial2"] = h("phases-ablate"), h("req-serial2")
    m["runs"].append(
        {
            "id": ids["req-serial2"],
            "arm": s_arm,
            "harness": "requests",
            "path": "runs/req-serial2",
            "date": "2026-01-02",
        }
    )
    m["runs"].append(
        {
            "id": ids["phases-ablate"],
            "arm": a_arm,
            "harness": "phases",
            "path": "runs/phases-ablate",
            "date": "2026-01-02",
        }
    )
    m["noise"]["reference_arm"] = s_arm
    _write(dest / "campaign.json", m)

    for folder, run_id in [
        ("req-serial", "req-serial"),
        ("req-batch", "req-batch"),
        ("phases-serial", "phases-serial"),
        ("phases-ablate", "phases-ablate"),
        ("req-serial2", "req-serial2"),
        ("mem-serial", "mem-serial"),
    ]:
        run = dest / "runs" / folder
        for name in ("requests.json", "phases.json", "memory.json"):
            f = run / name
            if not f.is_file():
                continue
            d = json.loads(f.read_text())
            d["run"] = ids[run_id]
            for item in d.get("requests", []) + d.get("samples", []):
                if item.get("prompt_class") == "short":
                    item["prompt_class"] = short
            for mk in d.get("markers", []):
                if mk["event"].startswith("request"):
                    mk["label"] = h("marker")
            _write(f, d)
        log = run / "server.log"
        if log.is_file() or folder.startswith("phases"):
            text = log.read_text() if log.is_file() else ""
            log.write_text(f"{h('[server] log line')}\n{text}[server] {LONG}\n{ALL}\n", encoding="utf-8")


def _hostile_pd(dest: Path) -> None:
    """data/pd-prefill-cap with hostile arm names, labels, run ids, notes and value-mark texts."""
    shutil.copytree(PD, dest, ignore=shutil.ignore_patterns("check.py"))
    m = json.loads((dest / "campaign.json").read_text())
    arms = {"cap1": h("cap1"), "cap2": h("cap2")}
    m["title"] = h("Hostile PD")
    m["question"] = h("pd question") + " " + LONG
    m["scope"] = {"measured": HOSTILE, "outside": [h("pd outside"), LONG]}
    m["host"] = {**m["host"], "accelerator": h("accel"), "link": "javascript:alert(3)"}
    m["checkpoint"] = {"model": h("model"), "quantization": "javascript:alert(3)"}
    m["engine"]["name"] = h("pd engine")
    m["environments"]["default"]["description"] = h("pd env")
    m["environments"]["default"]["variables"] = {"PD_VAR": h("pd value")}
    m["arms"] = {arms[k]: {**a, "label": h(f"{k}-label"), "description": h(f"{k}-desc")} for k, a in m["arms"].items()}
    for r in m["runs"]:
        r["arm"] = arms[r["arm"]]
        old = r["id"]
        r["id"] = h(old)
        f = dest / r["path"] / "pd.json"
        d = json.loads(f.read_text())
        d["run"] = r["id"]
        d["notes"] = h("notes")
        for key in ("derived", "approximate"):
            d[key] = {k: h(f"{key}-how") for k in d.get(key, {})}
        _write(f, d)
    _write(dest / "campaign.json", m)


# a file name cannot hold "/", so the run ids (file stems) carry the slash-free hostile strings
FILE_STEM = 'hostile "><img src=x onerror=alert(1)> {{7*7}} [x](javascript:alert(5)) javascript:alert(3)'


def _hostile_vllm(dest: Path) -> list[Path]:
    """Two repeats of one vLLM configuration; the page shows the model's last path component, so the
    model id ends in hostile text without a slash; the title (a --params value) carries the rest."""
    out = []
    for i, src in enumerate(NV):
        d = json.loads(src.read_text())
        d["model_id"] = f"{h('org')}/{FILE_STEM} {LONG}"
        d["tokenizer_id"] = h("tokenizer")
        d["label"] = h("label")
        d["backend"] = h("backend")
        f = dest / f"{FILE_STEM} {i}.json"
        _write(f, d)
        out.append(f)
    return out


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    base = tmp_path_factory.mktemp("hostile")
    data = base / "data"
    data.mkdir()
    _hostile_mini(data / "hostile")
    _hostile_pd(data / "hostile-pd")
    files = _hostile_vllm(base)
    out = base / "reports"
    assert main(["render", "--all", str(data), "--out", str(out)]) == 0
    params = base / "params.json"
    _write(params, {"compare": {"title": h("compare title")}})
    assert main(["render", "--compare", *map(str, files), "--out", str(out / "compare"), "--params", str(params)]) == 0
    return out


PAGES = {
    "baseline": "hostile/baseline.html",
    "ablation": "hostile/ablation.html",
    "pd": "hostile-pd/pd.html",
    "compare": "compare/compare.html",
    "index": "index.html",
}


def _inner_text(browser, path: Path) -> str:
    """The page's visible text, loaded with every request except the document aborted."""
    url = path.resolve().as_uri()
    ctx = browser.new_context()
    try:
        ctx.route("**/*", lambda r: r.continue_() if r.request.url == url else r.abort("blockedbyclient"))
        page = ctx.new_page()
        page.on("dialog", lambda d: d.dismiss())
        page.goto(url, wait_until="load")
        return page.inner_text("body")
    finally:
        ctx.close()


@pytest.mark.parametrize("page", list(PAGES))
def test_hostile_text_is_inert_and_visible(rendered, page, open_page, chromium):
    html = rendered / PAGES[page]
    report = open_page(html)
    assert report.dialogs == [] and report.requests == [], report.problems()
    assert report.console_errors == [] and report.page_errors == [], report.problems()
    text = _inner_text(chromium, html)
    missing = [
        s
        for s in HOSTILE + [LONG] + ([f"{FILE_STEM} {LONG}", f"{FILE_STEM} 0"] if page == "compare" else [])
        if s not in text
    ]
    assert missing == [], f"{page}: not shown as text: {missing}"


def test_no_script_or_raw_tag_from_input(rendered):
    for rel in PAGES.values():
        src = (rendered / rel).read_text(encoding="utf-8")
        for raw in (
            "<script>alert",
            "<img src=x",
            '<a href="javascript:',
            'href="javascript:alert(5)',
            "</style><script>",
            'src="http://example.com',
        ):
            assert raw not in src, f"{rel}: raw {raw!r} in the HTML"


def test_offline_checker_finds_nothing(rendered):
    r = subprocess.run(
        [sys.executable, "-m", "benchbook.pipeline.offline", str(rendered)], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stdout + r.stderr


# --------------------------------------------------------------------------- hostile servers (issue 30, classes 5, 6)
# Servers on 127.0.0.1 that answer slowly, endlessly, with a gzip bomb, with a redirect elsewhere or with a
# stream that never ends a line. Each runs in threads of this process, ends every connection by itself
# after LIFETIME_S, and is shut down by its fixture. Before benchbook.httpread, the scrape's timer reset
# on every byte, bodies had no limit and the Prometheus client followed redirects anywhere.

import time  # noqa: E402

import hostile_server  # noqa: E402
from benchbook.errors import SourceError  # noqa: E402
from hostile_server import _bomb  # noqa: E402


@pytest.fixture
def hostile():
    with hostile_server.pair() as both:
        yield both


def _scrape(url: str, timeout_s: float = 2.0, **kw):
    from benchbook.commands.scrape import MetricsEndpoint

    return MetricsEndpoint(url, timeout_s=timeout_s, retries=1, **kw).fetch()


@pytest.mark.parametrize("path", ["/trickle", "/trickle-headers"])
def test_scrape_deadline_covers_the_whole_answer(hostile, path):
    """`capture run --scrape-timeout 5` against a byte every 3 s hung > 100 s (the timer reset per byte)."""
    server, _ = hostile
    t0 = time.monotonic()
    with pytest.raises(SourceError, match="no answer within 2 s"):
        _scrape(server.url + path)
    assert time.monotonic() - t0 < hostile_server.LIFETIME_S / 2  # not the server's own end of the answer


def test_scrape_endless_body_is_cut_at_the_limit(hostile):
    server, _ = hostile
    with pytest.raises(SourceError, match="above the 1048576-byte limit"):
        _scrape(server.url + "/endless", timeout_s=10, max_bytes=1 << 20)
    with pytest.raises(SourceError, match="answer of 1099511627776 bytes"):
        _scrape(server.url + "/huge-length", timeout_s=10)


def test_scrape_gzip_bomb_is_bounded(hostile):
    import resource

    server, _ = hostile
    _bomb()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(SourceError, match="inflating past the 1048576-byte limit"):
        _scrape(server.url + "/bomb", timeout_s=10, max_bytes=1 << 20)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 32 << 10  # KiB: far below 64 MiB


def test_scrape_redirect_to_another_port_is_refused(hostile):
    server, target = hostile
    with pytest.raises(SourceError, match=f"redirect to http://127.0.0.1:{target.port}.*refused"):
        _scrape(server.url + "/redirect")
    assert target.hits == []
    assert "x_total 1" in _scrape(server.url + "/same-host-redirect").text  # same host and port: followed


def test_phases_stream_without_a_line_feed(hostile):
    """`capture phases --request-timeout 5` with a stream that never sent a newline hung."""
    from benchbook.commands.capture_phases import stream_completion

    server, _ = hostile
    t0 = time.monotonic()
    with pytest.raises(SourceError, match="did not finish within 2 s"):
        stream_completion(server.url, {"prompt": "x"}, 2.0)
    assert time.monotonic() - t0 < hostile_server.LIFETIME_S / 2  # not the server's own end of the answer
    with pytest.raises(SourceError, match="a line of more than 1048576 bytes"):
        stream_completion(server.url + "/flood", {"prompt": "x"}, 10.0)


def test_prometheus_source_deadline_and_redirect(hostile):
    """A slow Prometheus source hung `validate` > 90 s; a 302 elsewhere was followed, and the queries sent there."""
    from benchbook.metrics import promsource
    from benchbook.metrics.profiles import get_profile

    server, target = hostile
    t0 = time.monotonic()
    with promsource.PromClient(server.url, timeout=2.0) as c, pytest.raises(SourceError, match="no answer within 2 s"):
        c.buildinfo()
    assert time.monotonic() - t0 < hostile_server.LIFETIME_S / 2  # not the server's own end of the answer
    problems = promsource.check_source(server.url + "/redirect", {"job": "x"}, get_profile("pocket"), timeout=2.0)
    assert len(problems) == 1 and "refused" in problems[0], problems
    assert target.hits == []
