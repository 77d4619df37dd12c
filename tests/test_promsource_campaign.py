"""A campaign whose phase samples are windows on a real Prometheus renders the same page as its twin
made of capture files.

The test builds two campaigns from one list of requests per run: the *files* twin writes the
cumulative counters before and after each request as `/metrics` capture files; the *prometheus*
twin gives each sample a `window: {t0, t1}` and names a Prometheus server (on 127.0.0.1, filled by
``promtool tsdb create-blocks-from openmetrics`` with one sample per second of the same states).
Both baseline pages are rendered with ``render_campaign``; their recorded phase cells, comparisons
and exclusions must be identical. ``benchbook validate`` exits 0 on the Prometheus twin, 2 when its
matchers pick nothing and 4 when the server cannot be reached (``render`` too).
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest

import promserver
from benchbook.commands.cli import main
from benchbook.ingest.campaign import load_campaign
from benchbook.pipeline.campaigns import render_campaign

if not promserver.available():
    pytest.skip(promserver.MISSING, allow_module_level=True)

B = 1700100000  # Unix seconds of the first backfilled sample (2023; the server keeps 100y)
SLOT = 10  # seconds per sample: window [k*SLOT + 2, k*SLOT + 9], the request lands at k*SLOT + 5
JOB = "engine"
TTFT_LE, DUR_LE = ("0.1", "1.0", "+Inf"), ("1.0", "10.0", "+Inf")
PTOK = {"short": 16, "long": 64}
GEN = 8

# run id -> (arm, offset of its first second, speed factor). Each run is one engine instance.
RUNS = {"ph-default": ("default", 0, 1.0), "ph-tuned": ("tuned", 200, 0.7)}


def _requests(factor: float) -> list[dict]:
    """Per sample, the requests that land in its window (one; two in the contaminated sample)."""
    out = []
    for pclass, base in (("short", 0.05), ("long", 0.2)):
        for repeat in range(4):  # repeat 0 is the warm-up round
            ttft = round(base * (1 + repeat / 10), 6)
            dur = round(ttft + 0.8 * factor + 0.01 * repeat, 6)
            out.append(
                {
                    "prompt_class": pclass,
                    "repeat": repeat,
                    "warmup": repeat == 0,
                    "reqs": [(ttft, dur, PTOK[pclass], GEN)],
                }
            )
    out.append(
        {
            "prompt_class": "short",
            "repeat": 4,
            "warmup": False,  # another client's request landed too
            "reqs": [(0.05, 0.05 + 0.8 * factor, 16, GEN), (0.06, 0.9, 16, GEN)],
        }
    )
    return out


def _zero() -> dict[str, dict[tuple, float]]:
    s: dict[str, dict[tuple, float]] = {}
    for fam, les in (("pocket_ttft_seconds", TTFT_LE), ("pocket_request_duration_seconds", DUR_LE)):
        s[fam + "_bucket"] = {(("le", le),): 0.0 for le in les}
        s[fam + "_sum"] = {(): 0.0}
        s[fam + "_count"] = {(): 0.0}
    s["pocket_tokens_total"] = {(("type", "prompt"),): 0.0, (("type", "generation"),): 0.0}
    s["pocket_requests_total"] = {(("status", "success"),): 0.0, (("status", "error"),): 0.0}
    s["pocket_requests_running"] = {(): 0.0}
    s["pocket_requests_waiting"] = {(): 0.0}
    return s


def _observe(s, fam: str, les, v: float) -> None:
    for (key,) in [(k,) for k in s[fam + "_bucket"]]:
        le = float(key[0][1])
        if v <= le:
            s[fam + "_bucket"][key] += 1
    s[fam + "_sum"][()] += v
    s[fam + "_count"][()] += 1


def _after(state, reqs) -> dict:
    s = copy.deepcopy(state)
    for ttft, dur, ptok, gen in reqs:
        _observe(s, "pocket_ttft_seconds", TTFT_LE, ttft)
        _observe(s, "pocket_request_duration_seconds", DUR_LE, dur)
        s["pocket_tokens_total"][(("type", "prompt"),)] += ptok
        s["pocket_tokens_total"][(("type", "generation"),)] += gen
        s["pocket_requests_total"][(("status", "success"),)] += 1
    return s


def _text(state) -> str:
    """A state as a /metrics capture (text exposition 0.0.4)."""
    types = {
        "pocket_ttft_seconds": "histogram",
        "pocket_request_duration_seconds": "histogram",
        "pocket_tokens_total": "counter",
        "pocket_requests_total": "counter",
        "pocket_requests_running": "gauge",
        "pocket_requests_waiting": "gauge",
    }
    lines = []
    for fam, kind in types.items():
        lines.append(f"# TYPE {fam} {kind}")
        names = [fam + x for x in ("_bucket", "_sum", "_count")] if kind == "histogram" else [fam]
        for name in names:
            for key, v in state[name].items():
                labels = ",".join(f'{k}="{val}"' for k, val in key)
                lines.append(f"{name}{{{labels}}} {v!r}" if labels else f"{name} {v!r}")
    return "\n".join(lines) + "\n"


def _timeline(factor: float) -> tuple[list[dict], list[tuple[int, dict]]]:
    """(samples with before/after states and window offsets, [(second, state)] for the backfill)."""
    state, samples, seconds = _zero(), [], []
    for k, smp in enumerate(_requests(factor)):
        t0, land, t1 = k * SLOT + 2, k * SLOT + 5, k * SLOT + 9
        before, after = state, _after(state, smp["reqs"])
        busy = copy.deepcopy(before)
        busy["pocket_requests_running"][()] = float(len(smp["reqs"]))
        for t in range(k * SLOT, (k + 1) * SLOT):
            seconds.append((t, busy if land - 2 <= t < land else (before if t < land else after)))
        total = sum(r[1] for r in smp["reqs"])
        samples.append(
            {**smp, "t0": t0, "t1": t1, "before": before, "after": after, "client_total_s": round(total + 0.05, 6)}
        )
        state = after
    return samples, seconds


def _openmetrics() -> str:
    series: dict[str, list[str]] = {}
    for run, (_arm, off, factor) in RUNS.items():
        _, seconds = _timeline(factor)
        for t, state in seconds:
            for name, vals in state.items():
                for key, v in vals.items():
                    labels = ",".join(
                        f'{k}="{val}"'
                        for k, val in sorted({**dict(key), "job": JOB, "instance": f"{run}:8000"}.items())
                    )
                    series.setdefault(name, []).append((labels, B + off + t, v))
    # a restarted engine: one request, restart (zeros), then two requests — every edge delta +1
    one, two = _after(_zero(), [(0.5, 4.0, 120, 32)]), _after(_zero(), [(0.25, 3.5, 120, 32), (0.5, 4.0, 120, 32)])
    for t in range(0, 30):
        state = one if t < 10 else (_zero() if t < 15 else two)
        for name, vals in state.items():
            for key, v in vals.items():
                labels = ",".join(
                    f'{k}="{val}"' for k, val in sorted({**dict(key), "job": JOB, "instance": "restart:8000"}.items())
                )
                series.setdefault(name, []).append((labels, B + 500 + t, v))
    # a vLLM engine: request_success_total split by finished_reason; abort grows 3/s and resets at 10
    for t in range(0, 30):
        vllm = {
            "vllm:request_success_total": {
                (("finished_reason", "stop"),): float(t),
                (("finished_reason", "length"),): 2.0,
                (("finished_reason", "abort"),): float(3 * (t if t < 10 else t - 10)),
            },
            "vllm:prompt_tokens_total": {(): 16.0 * t},
            "vllm:generation_tokens_total": {(): 8.0 * t},
        }
        for fam in ("vllm:time_to_first_token_seconds", "vllm:e2e_request_latency_seconds"):
            vllm.update(
                {
                    fam + "_sum": {(): 0.1 * t},
                    fam + "_count": {(): float(t)},
                    fam + "_bucket": {(("le", "+Inf"),): float(t)},
                }
            )
        for name, vals in vllm.items():
            for key, v in vals.items():
                labels = ",".join(
                    f'{k}="{val}"' for k, val in sorted({**dict(key), "job": JOB, "instance": "vllm:8000"}.items())
                )
                series.setdefault(name, []).append((labels, B + 600 + t, v))
    lines = []
    for name in sorted(series):
        rows = sorted(series[name])  # by labels, then time
        lines += [f"{name}{{{labels}}} {v!r} {t}" for labels, t, v in rows]
    return "\n".join(lines + ["# EOF"]) + "\n"


def _manifest(prometheus: dict | None) -> dict:
    m = {
        "format": "benchbook.campaign/1",
        "title": "promsource twin",
        "question": "does tuning help a toy engine?",
        "date": "2023-11-16",
        "provenance": "synthetic",
        "scope": {"measured": ["toy engine"], "outside": ["everything else"]},
        "engine": {"name": "pocketllm", "profile": "pocket", "commit": "abc1234"},
        "environments": {
            "default": {"description": "nothing set", "variables": {}},
            "tuned": {"description": "tuned", "variables": {"POCKET_FAST": "1"}},
        },
        "prompt_classes": {"short": {"words": 12, "tokens": 16}, "long": {"words": 50, "tokens": 64}},
        "generation_tokens": GEN,
        "arms": {
            a: {"label": a, "mode": "serial", "environment": a, "server_args": {"max_batch_size": 1}, "series": "s1"}
            for a in ("default", "tuned")
        },
        "runs": [
            {"id": run, "arm": arm, "harness": "phases", "path": f"runs/{run}"} for run, (arm, _o, _f) in RUNS.items()
        ],
    }
    if prometheus:
        m["prometheus"] = prometheus
        for r in m["runs"]:
            r["prometheus"] = {"matchers": {"instance": f"{r['id']}:8000"}}
    return m


def _write_campaign(root: Path, prometheus: dict | None) -> Path:
    root.mkdir(parents=True)
    (root / "campaign.json").write_text(json.dumps(_manifest(prometheus), indent=1))
    for run, (_arm, off, factor) in RUNS.items():
        folder = root / "runs" / run
        (folder / "metrics").mkdir(parents=True)
        samples, _ = _timeline(factor)
        out = []
        for s in samples:
            row = {k: s[k] for k in ("prompt_class", "repeat", "warmup", "client_total_s")}
            if prometheus:
                row["window"] = {"t0": B + off + s["t0"], "t1": B + off + s["t1"]}
            else:
                stem = f"metrics/{s['prompt_class']}-{s['repeat']}"
                for side in ("before", "after"):
                    (folder / f"{stem}.{side}.prom").write_text(_text(s[side]))
                row["metrics_before"], row["metrics_after"] = f"{stem}.before.prom", f"{stem}.after.prom"
            out.append(row)
        (folder / "phases.json").write_text(
            json.dumps({"format": "benchbook.phases/1", "run": run, "samples": out}, indent=1)
        )
    return root


@pytest.fixture(scope="module", autouse=True)
def allowed():
    """These campaigns name the test's own servers: allowed for this module (a campaign's source is
    queried only where the run allows it, tests/test_reliability_sources.py)."""
    from benchbook.metrics.source_allow import allowing

    with allowing(["*"]):
        yield


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with promserver.running(tmp_path_factory.mktemp("prometheus"), _openmetrics()) as url:
        yield url


@pytest.fixture(scope="module")
def twins(server, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("twins")
    files = _write_campaign(tmp / "files", None)
    prom = _write_campaign(tmp / "prom", {"url": server, "matchers": {"job": JOB}, "timeout_s": 5})
    return files, prom


@pytest.fixture(scope="module")
def pages(twins, tmp_path_factory):
    out = {}
    for camp in twins:
        dest = tmp_path_factory.mktemp(f"page-{camp.name}")
        res = render_campaign(camp, dest, pages=["baseline"])
        assert res.rendered and not res.failed
        out[camp.name] = json.loads((dest / "baseline.values.json").read_text())
    return out


def test_prometheus_page_equals_the_capture_file_page(pages):
    f, p = pages["files"], pages["prom"]
    assert p["phase_cells"] == f["phase_cells"] and len(f["phase_cells"]) == 2 * 2 * 5  # arms x classes x metrics
    assert p["comparisons"] == f["comparisons"] and len(f["comparisons"]) > 0
    assert p["exclusions"] == f["exclusions"]
    two = [e for e in f["exclusions"] if "moved by 2" in e["Reason"]]
    assert len(two) == 2  # the contaminated sample of each run is listed, not used
    prefill = {(c["arm"], c["prompt_class"]): c for c in f["phase_cells"] if c["metric"] == "prefill_s"}
    assert prefill[("default", "short")]["median"] == pytest.approx(0.06) and prefill[("default", "short")]["n"] == 3


def test_gauges_section_only_with_a_prometheus_source(pages):
    assert "engine_gauges" not in pages["files"]
    g = pages["prom"]["engine_gauges"]
    assert [s["run"] for s in g["spans"]] == list(RUNS) and g["notes"] == []
    got = {(s["run"], s["quantity"]): s for s in g["series"]}
    assert got[("ph-default", "running")]["max"] == 2.0  # the contaminated sample had two in flight
    assert got[("ph-tuned", "prompt_tokens_rate")]["max"] > 0


def test_the_summary_carries_the_gauges_the_page_charts(twins, pages):
    from benchbook.commands.summary import build

    assert build(twins[0])["engine_gauges"] is None  # capture files: no server to ask
    assert build(twins[1])["engine_gauges"] == json.loads(json.dumps(pages["prom"]["engine_gauges"]))


def test_validate_passes_on_the_prometheus_twin(twins, capsys):
    assert main(["validate", str(twins[1])]) == 0
    assert "reachable, every needed series present" in capsys.readouterr().out


def test_validate_names_missing_series_exit_2(twins, tmp_path, capsys):
    camp = shutil.copytree(twins[1], tmp_path / "nope")
    m = json.loads((camp / "campaign.json").read_text())
    m["runs"][0]["prometheus"]["matchers"]["instance"] = "nope:1"
    (camp / "campaign.json").write_text(json.dumps(m))
    assert main(["validate", str(camp)]) == 2
    err = capsys.readouterr().err
    assert "$.runs[0].prometheus" in err and 'instance="nope:1"' in err and "no such series" in err


def test_unreachable_server_is_exit_4(twins, tmp_path, capsys):
    camp = shutil.copytree(twins[1], tmp_path / "down")
    m = json.loads((camp / "campaign.json").read_text())
    m["prometheus"]["url"] = f"http://127.0.0.1:{promserver.free_port()}"  # nothing listens there
    (camp / "campaign.json").write_text(json.dumps(m))
    assert main(["validate", str(camp)]) == 4
    err = capsys.readouterr().err
    assert err.count("cannot reach the server") == 1  # one dead server is one problem, whatever the run count
    assert main(["render", str(camp), "--out", str(tmp_path / "out"), "--page", "baseline"]) == 4
    lines = capsys.readouterr().err.strip().splitlines()
    assert "cannot reach the server" in lines[-1] and "Traceback" not in "\n".join(lines)
    data = tmp_path / "data"
    shutil.copytree(camp, data / "down")
    assert main(["render", "--all", str(data), "--out", str(tmp_path / "reports")]) == 4  # scheduled runs too


def test_counter_reset_inside_a_window_is_excluded_with_its_reason(twins, tmp_path):
    camp = shutil.copytree(twins[1], tmp_path / "restart")
    m = json.loads((camp / "campaign.json").read_text())
    m["runs"][0]["prometheus"]["matchers"]["instance"] = "restart:8000"
    (camp / "campaign.json").write_text(json.dumps(m))
    ph = camp / "runs" / "ph-default" / "phases.json"
    doc = json.loads(ph.read_text())
    doc["samples"] = [{**doc["samples"][1], "window": {"t0": B + 505, "t1": B + 20 + 505}}]
    ph.write_text(json.dumps(doc))
    c = load_campaign(camp)
    c.runs = [c.run("ph-default")]
    assert c.phase_samples.height == 0
    (e,) = c.exclusions
    assert "counter reset inside the window" in e.reason and "short repeat 1" in e.sample


def test_vllm_finished_reason_series_are_summed_like_enginemetrics(server):
    from benchbook.metrics import promsource
    from benchbook.metrics.profiles import get_profile

    vllm, who = get_profile("vllm"), {"instance": "vllm:8000"}
    assert promsource.check_source(server, who, vllm, start=B + 600, end=B + 629) == []
    g = promsource.fetch_gauges(server, B + 615, B + 625, who, vllm, quantities=["requests_success"], step=1)
    assert g["series"].unique().to_list() == ['{job="engine"}']  # finished_reason summed away, job kept
    assert g["value"].to_list() == pytest.approx([1.0] * g.height)  # stop + length only; abort (3/s) left out
    w = promsource.fetch_window(server, B + 605, B + 615, who, vllm)
    ref = vllm.ref("requests_success")
    assert w.reset_of(ref.name) is not None  # the abort series reset at +610 ...
    assert w.reset_of(ref.name, ref.label_dict, ref) is None  # ... but requests_success does not read it
    w.check_resets(vllm, ["requests_success"])  # so it does not exclude the sample


def test_explore_notebook_on_the_prometheus_twin(twins, tmp_path):
    """explore.ipynb reads phase samples through the campaign's one reader: a Prometheus-sourced
    campaign gives the same /metrics deltas as its capture-file twin (no KeyError on metrics_before)."""
    from benchbook.pipeline.execute import render_page

    nb = Path(__file__).resolve().parents[1] / "notebooks" / "explore.ipynb"
    files, prom = (
        render_page(nb, {"campaign": str(c)}, tmp_path / f"{c.name}.html", title="explore").values for c in twins
    )
    assert prom["rows"]["metric_deltas"] == files["rows"]["metric_deltas"] > 0
    assert prom["rows"]["phase_samples"] == files["rows"]["phase_samples"] > 0


def test_slow_server_fails_within_its_deadline_and_the_rest_renders(twins, tmp_path, capsys):
    """A Prometheus source answering a byte every 0.5 s hung `validate` > 90 s and stalled
    `render --all` > 100 s with no index: now each call has one total deadline (`timeout_s`)."""
    import time

    from hostile_server import LIFETIME_S, Hostile

    slow = Hostile()
    try:
        camp = shutil.copytree(twins[1], tmp_path / "data" / "slow")
        m = json.loads((camp / "campaign.json").read_text())
        m["prometheus"].update(url=slow.url, timeout_s=1.5)
        (camp / "campaign.json").write_text(json.dumps(m))
        shutil.copytree(twins[0], tmp_path / "data" / "files")
        t0 = time.monotonic()
        assert main(["validate", str(camp)]) == 4
        assert time.monotonic() - t0 < LIFETIME_S / 2  # its deadline, not the server's own end of the answer
        assert "no answer within 1.5 s" in capsys.readouterr().err
        # the render's own time is the host's; the deadline shows in the reason (a server's end of the answer would not
        # read "no answer within 1.5 s")
        rc = main(["render", "--all", str(tmp_path / "data"), "--out", str(tmp_path / "reports"), "--page", "baseline"])
        assert rc == 4, capsys.readouterr().err
        index = (tmp_path / "reports" / "index.html").read_text()
        assert (tmp_path / "reports" / "files" / "baseline.html").is_file()
        assert "no answer within 1.5 s" in index
    finally:
        slow.close()
