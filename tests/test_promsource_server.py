"""benchbook.metrics.promsource against a real Prometheus (/usr/bin/prometheus) on 127.0.0.1.

One server per module, with a temporary data directory, holding two kinds of data:

* backfilled: the timeline in tests/fixtures/promsource/timeline.json, written as OpenMetrics with
  timestamps and turned into a TSDB block by ``promtool tsdb create-blocks-from openmetrics`` before
  the server starts. Exact timestamps, no waiting, no races: the main comparisons use it.
* live: a prometheus_client registry served on 127.0.0.1 and scraped every second, which the test
  advances (one test, ~2-3 s of waiting) to show that the scrape path gives the same numbers too.

The figures from the server must equal the ones the capture-file path gives on the same data.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

import promserver
from benchbook.errors import InputError, SourceError
from benchbook.metrics import phases, prometheus, promsource
from benchbook.metrics.profiles import EngineProfile, MetricRef, get_profile

FIX = Path(__file__).parent / "fixtures" / "promsource"
TIMELINE = json.loads((FIX / "timeline.json").read_text())
B = TIMELINE["base"]
POCKET = get_profile("pocket")
A = {"job": "engine", "instance": "a:8000"}
NAMES = phases.needed_names(POCKET)
NEEDED_SAMPLES = [n for q in phases.NEEDED for n in promsource.sample_names(POCKET.ref(q))]

if not promserver.available():
    pytest.skip(promserver.MISSING, allow_module_level=True)


def _capture(name: str) -> prometheus.Snapshot:
    return prometheus.read(FIX / name, NAMES)


def _openmetrics() -> str:
    """The timeline as OpenMetrics samples with timestamps, one per second per series."""
    from prometheus_client.parser import text_string_to_metric_families

    series: dict[str, dict[tuple, list[tuple[int, float]]]] = {}
    for instance, segments in TIMELINE["instances"].items():
        for seg in segments:
            fams = list(text_string_to_metric_families((FIX / seg["state"]).read_text()))
            for t in range(seg["from"], seg["to"]):
                for fam in fams:
                    for s in fam.samples:
                        key = tuple(sorted({**s.labels, **TIMELINE["labels"], "instance": instance}.items()))
                        series.setdefault(s.name, {}).setdefault(key, []).append((B + t, s.value))
    lines = []
    for name in sorted(series):  # each sample name its own (untyped) family, samples in time order
        for key in sorted(series[name]):
            labels = ",".join(f'{k}="{v}"' for k, v in key)
            lines += [f"{name}{{{labels}}} {v!r} {t}" for t, v in series[name][key]]
    return "\n".join(lines + ["# EOF"]) + "\n"


class Live:
    """A pocket-like engine's /metrics served by prometheus_client; the test advances it."""

    def __init__(self):
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self.registry = r = CollectorRegistry()
        self.ttft = Histogram("pocket_ttft_seconds", "TTFT", buckets=(0.1, 1.0), registry=r)
        self.e2e = Histogram("pocket_request_duration_seconds", "duration", buckets=(1.0, 10.0), registry=r)
        self.tokens = Counter("pocket_tokens", "tokens", ["type"], registry=r)
        self.requests = Counter("pocket_requests", "requests", ["status"], registry=r)
        self.step = Gauge("bbtest_step", "which state the test has set", registry=r)

    def request(self, ttft: float, duration: float, prompt: int, generated: int) -> None:
        self.ttft.observe(ttft)
        self.e2e.observe(duration)
        self.tokens.labels("prompt").inc(prompt)
        self.tokens.labels("generation").inc(generated)
        self.requests.labels("success").inc()

    def text(self) -> str:
        from prometheus_client import generate_latest

        return generate_latest(self.registry).decode()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from prometheus_client import start_http_server

    live = Live()
    exporter_port = promserver.free_port()
    httpd, thread = start_http_server(exporter_port, addr="127.0.0.1", registry=live.registry)
    scrape = f"[{{job_name: live, static_configs: [{{targets: ['127.0.0.1:{exporter_port}']}}]}}]"
    try:
        with promserver.running(tmp_path_factory.mktemp("prometheus"), _openmetrics(), scrape) as url:
            yield {"url": url, "live": live, "exporter": f"127.0.0.1:{exporter_port}"}
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


# ---- backfilled data: server figures equal capture-file figures ------------------------------

WINDOWS = [  # (t0, t1) offsets, state at t0, state at t1
    (5, 15, "s0-idle.prom", "s1-short.prom"),
    (15, 25, "s1-short.prom", "s2-long.prom"),
    (25, 35, "s2-long.prom", "s3-two.prom"),
]


@pytest.mark.parametrize("o0,o1,f0,f1", WINDOWS)
def test_snapshots_equal_the_capture_files(server, o0, o1, f0, f1):
    w = promsource.fetch_window(server["url"], B + o0, B + o1, A, POCKET)
    for snap, f in ((w.before, f0), (w.after, f1)):
        cap = _capture(f)
        for name in NEEDED_SAMPLES:
            assert snap.series(name) == cap.series(name), (name, f)
        for fam, kind in snap.types.items():
            assert cap.types[fam] == kind
    for name in NEEDED_SAMPLES:
        for key in w.before.series(name):
            labels = dict(key)
            assert prometheus.delta(w.before, w.after, name, labels) == prometheus.delta(
                _capture(f0), _capture(f1), name, labels
            )
    assert w.resets == []


def test_phase_split_matches_known_values_and_capture_files(server):
    short = promsource.fetch_window(server["url"], B + 5, B + 15, A, POCKET).split(POCKET, client_total_s=3.6)
    assert short == phases.PhaseSplit(
        prompt_tokens=120, generated_tokens=32, prefill_s=0.25, decode_tokens=31, decode_s=3.25, engine_total_s=3.5
    )
    assert short == phases.split(_capture("s0-idle.prom"), _capture("s1-short.prom"), POCKET, 3.6)
    long = promsource.fetch_window(server["url"], B + 15, B + 25, A, POCKET).split(POCKET)
    assert (long.prompt_tokens, long.prefill_s, long.decode_s, long.decode_tokens) == (2000, 2.0, 6.0, 31)
    assert long.prefill_tok_s == 1000.0


def test_two_requests_in_one_window_are_excluded_as_with_files(server):
    w = promsource.fetch_window(server["url"], B + 25, B + 35, A, POCKET)
    with pytest.raises(phases.Excluded) as from_server:
        w.split(POCKET)
    with pytest.raises(phases.Excluded) as from_files:
        phases.split(_capture("s2-long.prom"), _capture("s3-two.prom"), POCKET)
    assert from_server.value.reason == from_files.value.reason
    assert "TTFT count moved by 2" in from_server.value.reason


def test_reset_that_climbs_back_is_caught_by_resets(server):
    """s3 → restart → s5: every edge delta looks like one valid request; only the server can tell."""
    w = promsource.fetch_window(server["url"], B + 35, B + 55, A, POCKET)
    fooled = phases.split(w.before, w.after, POCKET)  # edge values alone accept it: the trap
    assert fooled.prefill_s == 0.25
    names = {r.name for r in w.resets}
    assert {"pocket_ttft_seconds_count", "pocket_requests_total", "pocket_tokens_total"} <= names
    r = w.reset_of("pocket_ttft_seconds_count")
    assert r.resets == 1 and r.edge_delta == 1.0 and r.increase > 5  # six requests after the restart
    with pytest.raises(phases.Excluded, match="counter reset inside the window: pocket_ttft_seconds"):
        w.split(POCKET)


def test_reset_that_ends_lower_is_reported(server):
    w = promsource.fetch_window(server["url"], B + 35, B + 43, A, POCKET)
    r = w.reset_of("pocket_tokens_total", {"type": "prompt"})
    assert r is not None and r.edge_delta == -2480.0
    with pytest.raises(phases.Excluded, match="counter reset inside the window"):
        w.split(POCKET)


def test_reset_just_before_the_window_start_is_not_blamed_on_it(server):
    # s4 (restart, t=42..44) → s5 (t=45..): the counter only rises inside [43, 50].
    w = promsource.fetch_window(server["url"], B + 43, B + 50, A, POCKET)
    assert w.resets == []


def test_series_of_two_instances_stay_apart(server):
    w = promsource.fetch_window(server["url"], B + 5, B + 15, {"job": "engine"}, POCKET)
    keys = set(w.before.series("pocket_ttft_seconds_sum"))
    assert keys == {(("instance", "a:8000"),), (("instance", "b:8000"),)}
    with pytest.raises(InputError, match="2 series match"):
        phases.split(w.before, w.after, POCKET)
    b = w.after.get("pocket_tokens_total", {"instance": "b:8000", "type": "prompt"})
    assert b == _capture("s2-long.prom").get("pocket_tokens_total", {"type": "prompt"})


def test_unknown_label_value_names_the_query(server):
    with pytest.raises(InputError) as e:
        promsource.fetch_window(server["url"], B + 5, B + 15, {"job": "engine", "instance": "nope:1"}, POCKET)
    assert e.value.location == f'query \'pocket_ttft_seconds_sum{{instance="nope:1",job="engine"}}\' at {B + 5}.000'
    assert "returned no series" in e.value.reason


def test_metric_the_server_does_not_have_names_the_query(server):
    kv = EngineProfile(
        "pocket+kv", "test", {**POCKET.quantities, "kv_cache_usage": MetricRef("pocket_kv_cache_usage", "gauge")}
    )
    with pytest.raises(InputError, match="returned no series") as e:
        promsource.fetch_window(server["url"], B + 5, B + 15, A, kv, quantities=["kv_cache_usage"])
    assert "pocket_kv_cache_usage" in e.value.location


def test_window_before_any_data_names_the_query(server):
    with pytest.raises(InputError, match="returned no series"):
        promsource.fetch_window(server["url"], B - 3600, B - 3000, A, POCKET)


def test_server_side_query_error_is_a_source_error(server):
    with promsource.PromClient(server["url"]) as c, pytest.raises(SourceError, match="HTTP 400 .*bad_data"):
        c.query("sum(", B)


# ---- gauges over time -------------------------------------------------------------------------


def _state_at(offset: int) -> prometheus.Snapshot:
    for seg in TIMELINE["instances"]["a:8000"]:
        if seg["from"] <= offset < seg["to"]:
            return prometheus.read(FIX / seg["state"])
    raise AssertionError(offset)


def test_gauges_over_time_equal_the_states(server):
    df = promsource.fetch_gauges(server["url"], B, B + 59, A, POCKET, step=1)
    assert set(df["quantity"].unique()) == {"running", "waiting", "prompt_tokens_rate", "generation_tokens_rate"}
    assert df.columns == ["quantity", "metric", "series", "t", "value"]
    for q, name in (("running", "pocket_requests_running"), ("waiting", "pocket_requests_waiting")):
        rows = df.filter(df["quantity"] == q)
        assert rows.height == 60
        for t, v in zip(rows["t"], rows["value"]):
            assert v == _state_at(int(t - B)).get(name), (q, t)
    rate = df.filter(df["quantity"] == "prompt_tokens_rate")
    assert rate["series"].unique().to_list() == ['{type="prompt"}']
    flat = rate.filter(rate["t"] == B + 8)["value"].item()  # s0 held since t=0: nothing happened
    assert flat == 0.0
    assert rate.filter(rate["t"] == B + 22)["value"].item() > 0  # the long prompt landed at t=20


def test_long_span_step_stays_under_the_point_limit(server):
    # Two days at a wished 1 s step would be 172,801 points; the server would refuse it.
    df = promsource.fetch_gauges(server["url"], B - 86400, B + 86400, A, POCKET, quantities=["running"], step=1)
    assert df.height > 0
    steps = df["t"].diff().drop_nulls().unique().to_list()
    assert min(steps) >= 172800 / (promsource.MAX_POINTS - 1)


def test_gauges_of_nothing_name_the_queries(server):
    with pytest.raises(InputError, match="returned no series") as e:
        promsource.fetch_gauges(server["url"], B, B + 59, {"job": "nope"}, POCKET, quantities=["running"])
    assert 'pocket_requests_running{job="nope"}' in e.value.location


# ---- validate ---------------------------------------------------------------------------------


def test_check_source(server):
    assert promsource.check_source(server["url"], A, POCKET) == []
    assert promsource.check_source(server["url"], A, POCKET, start=B, end=B + 59) == []
    problems = promsource.check_source(server["url"], {"job": "nope"}, POCKET)
    assert len(problems) == 9 and all("no such series on the server" in p for p in problems)
    assert 'pocket_tokens_total{job="nope",type="generation"}' in " ".join(problems)
    wrong = promsource.check_source(server["url"] + "/not-prometheus", A, POCKET)
    assert len(wrong) == 1 and "HTTP 404" in wrong[0] and "base URL" in wrong[0]


# ---- live scraping ----------------------------------------------------------------------------


def _wait_for_step(url: str, job: dict, step: int) -> float:
    """Timestamp of a scraped sample that saw ``bbtest_step == step`` (polls for up to 15 s)."""
    sel = promsource.selector("bbtest_step", job)
    deadline = time.monotonic() + 15
    with promsource.PromClient(url) as c:
        while time.monotonic() < deadline:
            now = time.time()
            got = c.query(f"timestamp({sel}) and ({sel} == {step})", now)
            if got:
                return float(got[0]["value"][1])
            time.sleep(0.2)
    raise AssertionError(f"prometheus did not scrape step {step} within 15 s")


def test_live_scrape_matches_the_capture_text(server):
    live, url = server["live"], server["url"]
    job = {"job": "live", "instance": server["exporter"]}
    live.request(ttft=0.5, duration=4.0, prompt=100, generated=16)  # an earlier request
    live.step.set(1)
    t0 = _wait_for_step(url, job, 1)
    text_before = live.text()  # what the harness would have saved as metrics_before
    live.request(ttft=0.25, duration=3.5, prompt=120, generated=32)
    live.step.set(2)
    text_after = live.text()
    t1 = _wait_for_step(url, job, 2)
    w = promsource.fetch_window(url, t0, t1, job, POCKET)
    from_files = phases.split(
        prometheus.parse(text_before, "before", NAMES), prometheus.parse(text_after, "after", NAMES), POCKET
    )
    assert w.split(POCKET) == from_files
    assert (from_files.prefill_s, from_files.decode_s, from_files.prompt_tokens) == (0.25, 3.25, 120)


def test_frozen_window_reads_back_through_the_file_path(server, tmp_path):
    w = promsource.fetch_window(server["url"], B + 15, B + 25, A, POCKET)
    promsource.write_captures(
        w, tmp_path / "metrics" / "long-0.before.prom", tmp_path / "metrics" / "long-0.after.prom"
    )
    before = prometheus.read(tmp_path / "metrics" / "long-0.before.prom", NAMES)
    after = prometheus.read(tmp_path / "metrics" / "long-0.after.prom", NAMES)
    assert phases.split(before, after, POCKET) == w.split(POCKET)
    assert sorted(p.name for p in (tmp_path / "metrics").iterdir()) == ["long-0.after.prom", "long-0.before.prom"]
