"""Reliability round four (issue 36), capture: a hostile capture.json given to init, answers cut
short (a body below its Content-Length, gzip without its end, two gzip members), periodic scrapes
of a huge /metrics, disk full while capturing, a --result-dir holding --out. Each test has its own
variant of the issue's case; docs/bad-input.md has the rows."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest

from benchbook.commands.cli import main
from benchbook.errors import EXIT_BAD_INPUT, SourceError

sys.path.insert(0, str(Path(__file__).parent))
import hostile_server as H  # noqa: E402
from test_init import capture_run_folder  # noqa: E402

FIX = Path(__file__).parent / "fixtures"
BENCH = FIX / "realdata" / "vllm_bench_serving" / "er0080_bench_serve_v0.25.1.json"


# --------------------------------------------------------------------------- 10. a hostile capture.json


@pytest.fixture
def read_paths(monkeypatch):
    """Every path init's format detection and readers open."""
    from benchbook.ingest import formats

    seen: list[Path] = []
    detect, read = formats.detect, formats.read
    monkeypatch.setattr(formats, "detect", lambda p, *a, **k: (seen.append(Path(p)), detect(p, *a, **k))[1])
    monkeypatch.setattr(formats, "read", lambda p, *a, **k: (seen.append(Path(p)), read(p, *a, **k))[1])
    return seen


def _edit_capture(folder: Path, fn) -> None:
    doc = json.loads((folder / "capture.json").read_text())
    fn(doc)
    (folder / "capture.json").write_text(json.dumps(doc))


@pytest.mark.parametrize(
    ("edit", "place", "reason"),
    [
        (lambda d, o: d.update(result_files=[{"file": str(o)}]), "$.result_files[0]", "is an absolute path"),
        (lambda d, o: d.update(result_files=["results/../../outside.json"]), "$.result_files[0]", "leads outside"),
        (
            lambda d, o: d["snapshots"].append({"file": "../outside.json", "phase": "during", "unix_s": 1.0}),
            "$.snapshots[3].file",
            "leads outside",
        ),
    ],  # fmt: skip
)
def test_init_reads_nothing_outside_a_capture_folder(tmp_path, capsys, read_paths, edit, place, reason):
    outside = tmp_path / "in" / "outside.json"
    folder = capture_run_folder(tmp_path / "in" / "conc4")
    shutil.copyfile(BENCH, outside)
    _edit_capture(folder, lambda d: edit(d, outside))
    rc = main(["init", "-q", str(tmp_path / "camp"), str(folder)])
    err = capsys.readouterr().err
    assert rc == EXIT_BAD_INPUT, err
    assert f"{folder / 'capture.json'}: {place}: " in err and reason in err, err
    assert outside.resolve() not in [p.resolve() for p in read_paths]
    assert not (tmp_path / "camp").exists()


@pytest.mark.parametrize(
    ("edit", "place"),
    [
        (lambda d: d.update(snapshots=["metrics/before.prom"]), "$.snapshots[0]"),
        (lambda d: d.update(snapshots={"before": "metrics/before.prom"}), "$.snapshots"),
        (lambda d: d["snapshots"][0].update(unix_s="yesterday"), "$.snapshots[0].unix_s"),
        (lambda d: d.update(result_files=[["results/bench.json"]]), "$.result_files[0]"),
        (lambda d: d.update(kind=["run"]), "$.kind"),
        (lambda d: d.update(prompt_classes=["short"]), "$.prompt_classes"),
        (lambda d: d.update(samples="none"), "$.samples"),
    ],
)
def test_init_refuses_strings_where_capture_json_has_objects(tmp_path, capsys, edit, place):
    folder = capture_run_folder(tmp_path / "in" / "conc8")
    _edit_capture(folder, edit)
    rc = main(["init", "-q", str(tmp_path / "camp"), str(folder)])
    err = capsys.readouterr().err
    assert rc == EXIT_BAD_INPUT, err
    assert "internal error" not in err
    assert f"{folder / 'capture.json'}: {place}: is " in err, err


# --------------------------------------------------------------------------- 11. answers cut short


@pytest.fixture
def hostile():
    with H.pair() as (server, _target):
        yield server


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/short-body", "the connection closed 37 bytes before its Content-Length"),
        ("/short-chunked", "the chunked body ended early"),
        ("/gzip-cut", "gzip body cut short: it ends before its end of stream"),
        ("/gzip-two", "gzip body goes on 54 bytes past its end (a second gzip member?)"),
    ],
)
def test_a_scrape_cut_short_is_retried_then_fails(hostile, path, reason):
    from benchbook.commands.scrape import MetricsEndpoint

    with pytest.raises(SourceError, match=re.escape(reason) + ".* after 3 attempts") as e:
        MetricsEndpoint(hostile.url + path, timeout_s=5, retries=3, backoff_s=0.05).fetch()
    assert "is the server up" not in str(e.value)
    assert hostile.hits.count(path) == 3  # retried: a cut can be a passing fault


def test_a_deflate_answer_cut_short_fails_the_prometheus_source(hostile):
    import zlib

    from benchbook.metrics import promsource

    body = zlib.compress(json.dumps({"status": "success", "data": {"version": "2.53.0"}}).encode())[:-3]
    head = f"HTTP/1.1 200 OK\r\nContent-Encoding: deflate\r\nContent-Length: {len(body)}\r\n\r\n".encode()
    hostile.canned["/api/v1/status/buildinfo"] = head + body
    with promsource.PromClient(hostile.url, timeout=5.0) as c, pytest.raises(SourceError, match="deflate body cut"):
        c.buildinfo()


def test_a_streamed_completion_cut_short_is_exit_4(hostile):
    from benchbook.commands.capture_phases import stream_completion

    events = b'data: {"choices": [{"text": "a"}]}\n\ndata: {"choices": [{"text": "b"}]}\n\n'  # no [DONE]
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n" % (len(events) + 90)
    hostile.canned["/v1/completions"] = head + events
    with pytest.raises(SourceError, match="request failed: answer cut short"):
        stream_completion(hostile.url, {"prompt": "x"}, 5.0)


# --------------------------------------------------------------------------- 13. periodic scrapes, cheaply


def test_periodic_scrapes_are_not_parsed_and_a_missed_interval_is_said(hostile, tmp_path, monkeypatch):
    """`capture run --every 0.1` against a /metrics answering 0.4 s late: only the two scrapes that
    bracket the window are parsed; the ones between are checked cheaply, and the intervals that
    passed while a scrape ran are skipped and listed in capture.json (they were scraped back to back)."""
    from benchbook.commands.capture_run import capture_run
    from benchbook.metrics import prometheus

    parsed = []
    real = prometheus.parse
    monkeypatch.setattr(prometheus, "parse", lambda text, *a, **k: (parsed.append(len(text)), real(text, *a, **k))[1])
    folder = capture_run(
        metrics=hostile.url + "/slow-metrics",
        out=str(tmp_path / "o"),
        command=[sys.executable, "-c", "import time; time.sleep(2.2)"],
        arguments={},
        every_s=0.1,
        echo=False,
        log=lambda s: None,
    )
    doc = folder.doc
    during = [s for s in doc["snapshots"] if s["phase"] == "during"]
    assert len(during) >= 2
    assert len(parsed) == 2  # before and after
    missed = [e["error"] for e in doc["scrape_errors"] if e["error"].startswith("missed ")]
    assert missed and all("interval(s) of 0.1 s after scrape" in m for m in missed)


def test_the_light_check_refuses_what_is_not_metrics(hostile):
    from benchbook.commands.scrape import MetricsEndpoint, Scrape
    from benchbook.errors import InputError

    ep = MetricsEndpoint(hostile.url)
    for text, msg in (
        ("", "empty answer"),
        ("  <html><body>login</body></html>\n", "answered HTML"),
        ("# HELP x y\n# TYPE x counter\n", "without a single sample"),
        ("# TYPE x counter\n-x 1\n", "its first sample line starts '-x 1"),
        ("# TYPE x counter\nx_total 1\nx_total{a=", "no line feed: cut off"),
    ):
        with pytest.raises(InputError, match=msg):
            ep.check_light(Scrape(text, 0.0, 0.0, 0.0, 1))
    ep.check_light(Scrape("# TYPE x counter\nx_total 1\n" * 1000, 0.0, 0.0, 0.0, 1))
