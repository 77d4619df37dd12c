"""Exit codes a scheduler can act on, one table across commands (docs/bad-input.md, docs/rendering.md):
0 done, 2 bad input, 3 a page failed to render, 1 internal error, 4 a Prometheus server unreachable.
Every failure ends with one line on stderr naming the command, and never a traceback (unless
BENCHBOOK_DEBUG is set)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from benchbook.commands.cli import main

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "tests" / "fixtures" / "mini"
UNREACHABLE = "http://127.0.0.1:9"  # the discard port: connection refused, nothing leaves the host


@pytest.fixture(scope="module")
def ws(tmp_path_factory) -> Path:
    """A workspace: a mini copy, a broken manifest, an invalid requests file, an empty folder, a
    notebooks folder whose baseline raises, an empty notebooks folder, a bad --params file and a
    mini copy whose phase samples are windows on an unreachable Prometheus server."""
    w = tmp_path_factory.mktemp("exit-codes")
    shutil.copytree(MINI, w / "data" / "mini")
    broken = w / "broken"
    broken.mkdir()
    (broken / "campaign.json").write_text('{"title": "x",\n "arms": }')
    nan = w / "nan"
    shutil.copytree(MINI, nan)
    req = nan / "runs" / "req-serial" / "requests.json"
    req.write_text(req.read_text().replace('"end": 5.0', '"end": NaN', 1))
    (w / "empty").mkdir()
    (w / "no-notebooks").mkdir()
    nbs = w / "raising-notebooks"
    nbs.mkdir()
    params_cell = nbformat.v4.new_code_cell('campaign: str = ""  # campaign folder\ntitle: str = ""  # title')
    params_cell.metadata["tags"] = ["parameters"]
    nb = nbformat.v4.new_notebook(cells=[params_cell, nbformat.v4.new_code_cell("1 / 0")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(nbs / "baseline.ipynb"))
    (w / "params.json").write_text(json.dumps({"nope": {"x": 1}}))

    prom = w / "prom"
    shutil.copytree(MINI, prom)
    m = json.loads((prom / "campaign.json").read_text())
    m["prometheus"] = {"url": UNREACHABLE, "matchers": {"job": "engine"}, "timeout_s": 2}
    (prom / "campaign.json").write_text(json.dumps(m))
    ph = prom / "runs" / "phases-serial" / "phases.json"
    d = json.loads(ph.read_text())
    for i, s in enumerate(d["samples"]):
        del s["metrics_before"], s["metrics_after"]
        s["window"] = {"t0": 1700000000 + 10 * i, "t1": 1700000009 + 10 * i}
    ph.write_text(json.dumps(d))
    shutil.rmtree(prom / "runs" / "phases-serial" / "metrics")
    return w


SIM = [
    "prefill-sim",
    "--prompt-tokens",
    "16388",
    "--requests",
    "2",
    "--global-chunk-size",
    "131072",
    "--dp",
    "16",
    "--page-size",
    "128",
    "--max-requests",
    "1",
]

# (case id, argv with {w} for the workspace, exit code, text the last stderr line holds)
CASES = [
    ("render-ok", ["render", "{w}/data/mini", "--out", "{w}/out-ok", "--page", "baseline"], 0, None),
    ("validate-ok", ["validate", "-q", "{w}/data/mini"], 0, None),
    ("prefill-sim-ok", SIM, 0, None),
    ("render-missing-campaign", ["render", "{w}/nowhere", "--out", "{w}/o"], 2, "campaign folder does not exist"),
    (
        "render-bad-manifest",
        ["render", "{w}/broken", "--out", "{w}/o"],
        2,
        "campaign.json: line 2 column 10: not valid JSON",
    ),
    (
        "render-all-bad-params",
        ["render", "--all", "{w}/data", "--out", "{w}/o", "--params", "{w}/params.json"],
        2,
        "params.json: $.nope: unknown page kind",
    ),
    ("render-neither-campaign-nor-all", ["render", "--out", "{w}/o"], 2, "give either CAMPAIGN or --all"),
    ("validate-nan", ["validate", "-q", "{w}/nan"], 2, "problem(s) found"),
    ("summary-empty-folder", ["summary", "{w}/empty", "--json"], 2, "campaign.json"),
    (
        "prefill-sim-bad-number",
        ["prefill-sim", "--prompt-tokens", "x", "--requests", "2", "--chunk-size", "5"],
        2,
        "--prompt-tokens must be a positive integer",
    ),
    (
        "render-cell-raises",
        ["render", "{w}/data/mini", "--out", "{w}/o3", "--page", "baseline", "--notebooks", "{w}/raising-notebooks"],
        3,
        "mini/baseline: render failed: baseline.ipynb cell 2 `1 / 0`: ZeroDivisionError: division by zero",
    ),
    (
        "render-page-notebook-missing",
        ["render", "{w}/data/mini", "--out", "{w}/o3", "--page", "baseline", "--notebooks", "{w}/no-notebooks"],
        3,
        "baseline.ipynb does not exist",
    ),
    (
        "validate-prometheus-unreachable",
        ["validate", "-q", "{w}/prom", "--allow-source", "127.0.0.1:9"],
        4,
        "problem(s) found",
    ),
    (
        "summary-prometheus-unreachable",
        ["summary", "{w}/prom", "--json", "--allow-source", "127.0.0.1:9"],
        4,
        "127.0.0.1:9",
    ),
    (
        "render-prometheus-unreachable",
        ["render", "{w}/prom", "--out", "{w}/o4", "--page", "baseline", "--allow-source", "127.0.0.1:9"],
        4,
        "127.0.0.1:9",
    ),
]


@pytest.mark.parametrize(
    "argv,code,says",
    [pytest.param(*c[1:], id=c[0]) for c in CASES],
)
def test_exit_code(ws, argv, code, says, capsys):
    argv = [a.format(w=ws) for a in argv]
    assert main(argv) == code, capsys.readouterr().err
    err = capsys.readouterr().err
    assert "Traceback" not in err
    if code:
        last = err.strip().splitlines()[-1]
        assert last.startswith(f"benchbook {argv[0]}"), last
        assert says in last, last
    if code == 4:
        assert "127.0.0.1:9" in err  # the unreachable source is named


# an unexpected exception deep inside a command: (argv, dotted function made to raise)
INTERNAL = [
    (["render", "--all", "{w}/data", "--out", "{w}/o"], "benchbook.pipeline.plan.find_campaigns"),
    (["validate", "{w}/data/mini"], "benchbook.ingest.campaign.load_campaign"),
    (["summary", "{w}/data/mini"], "benchbook.ingest.campaign.load_campaign"),
    (SIM, "benchbook.analysis.admission.simulate"),
]


@pytest.mark.parametrize("argv,target", INTERNAL, ids=[a[0][0] for a in INTERNAL])
def test_internal_error_is_exit_1_in_one_line(ws, argv, target, monkeypatch, capsys):
    argv = [a.format(w=ws) for a in argv]
    module, name = target.rsplit(".", 1)

    def boom(*a, **k):
        raise RuntimeError("unexpected state")

    monkeypatch.setattr(f"{module}.{name}", boom)
    monkeypatch.delenv("BENCHBOOK_DEBUG", raising=False)
    assert main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"benchbook {argv[0]}: internal error: RuntimeError: unexpected state "
        "(a bug in benchbook; rerun with BENCHBOOK_DEBUG=1 for the traceback)"
    ]
    monkeypatch.setenv("BENCHBOOK_DEBUG", "1")
    with pytest.raises(RuntimeError, match="unexpected state"):
        main(argv)


def test_the_process_exit_status_is_the_code(ws):
    """What cron sees: the console script's status and one stderr line."""
    r = subprocess.run(
        [sys.executable, "-m", "benchbook.commands.cli", "validate", str(ws / "nowhere")],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) <= 2 and "Traceback" not in r.stderr
    assert str(ws / "nowhere") in r.stderr


def test_every_exit_code_is_in_the_readme_and_bad_input_tables():
    """The README's exit-code table (and docs/bad-input.md's) lists exactly the codes errors.py defines."""
    import re

    from benchbook import errors

    codes = {v for k, v in vars(errors).items() if k.startswith("EXIT_")}
    root = Path(__file__).resolve().parents[1]
    for doc in ("README.md", "docs/bad-input.md"):
        text = (root / doc).read_text(encoding="utf-8")
        listed = {int(m) for m in re.findall(r"^\| (\d) \|", text, flags=re.M)}
        assert listed == codes, doc
