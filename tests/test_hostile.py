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
