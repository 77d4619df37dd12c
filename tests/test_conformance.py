"""benchbook's /metrics reader against the reference parsers' conformance cases.

Cases: tests/fixtures/conformance/openmetrics (prometheus/OpenMetrics parser tests) and
tests/fixtures/conformance/text004 (prometheus/common expfmt fuzz corpus, text format 0.0.4), copied
from /work/shared/realdata. Validity comes from the file-name prefix and MANIFEST.csv.

How benchbook reads exposition text (docs/bad-input.md):
* text holding a ``# EOF`` line is OpenMetrics → ``prometheus_client.openmetrics.parser``;
* anything else is 0.0.4 text → ``prometheus_client.parser``;
* then ``benchbook.metrics.exposition_checks`` adds the checks prometheus_client's 0.0.4 parser lacks.

Every valid case loads; every invalid case is rejected naming the file and the line — except the
cases in ``DIFFERENCES``, where benchbook deliberately disagrees with the reference, each with the
reason. ``CLOSED_BY_BENCHBOOK`` lists the invalid cases prometheus_client alone would accept and the
benchbook check that rejects them; the test also asserts prometheus_client still accepts them, so a
prometheus_client upgrade that tightens its parser shows up here.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from benchbook.errors import InputError
from benchbook.metrics import prometheus

HERE = Path(__file__).parent / "fixtures" / "conformance"
SUITES = {"openmetrics": HERE / "openmetrics", "text004": HERE / "text004"}

# (suite, file) -> (what benchbook does, why). Everything else follows the reference.
DIFFERENCES: dict[tuple[str, str], tuple[str, str]] = {
    ("text004", "invalid__from_test_parse_error_9.txt"): (
        "accepts",
        "timestamp 2.72 is not an integer: the Go parser rejects it, prometheus_client reads it as "
        "2.72 ms. benchbook never uses sample timestamps (snapshots are paired by the harness), "
        "so the value it reads (3.14) is right; no extra check.",
    ),
    ("openmetrics", "invalid__bad_no_eof.txt"): (
        "rejects-without-line",
        "an empty file. Without `# EOF` benchbook cannot know it was meant as OpenMetrics, and as "
        "0.0.4 text empty is valid; benchbook's file reader rejects any empty capture anyway "
        "('empty /metrics capture'), at location '-' since there is no line to name.",
    ),
    ("text004", "valid__from_test_parse_0.txt"): (
        "rejects-without-line",
        "two blank lines: valid 0.0.4 text with no samples. prometheus.parse accepts it, but "
        "prometheus.read rejects an empty capture: a /metrics file with nothing in it means the "
        "scrape failed, and every delta taken from it would be 'missing'.",
    ),
}

# Invalid by the reference, accepted by prometheus_client's parser, rejected by benchbook's own
# checks (lib/benchbook/metrics/exposition_checks.py). suite/file -> (check, what is wrong).
CLOSED_BY_BENCHBOOK: dict[tuple[str, str], tuple[str, str]] = {
    ("text004", "invalid__from_test_parse_error_0.txt"): (
        "check_unterminated",
        "last line `bla 3.14` has no line feed (a truncated capture looks like this)",
    ),
    ("text004", "invalid__from_test_parse_error_1.txt"): (
        "check_unterminated",
        "`\\t` is not a valid escape; also no final line feed. The escape itself is "
        "not checked: a label value benchbook reads that is mis-escaped simply does not match, and "
        "the sample is excluded as 'missing'",
    ),
    ("text004", "invalid__from_test_parse_error_7.txt"): ("check_families/summary", 'quantile="bla" is not a number'),
    ("text004", "invalid__from_test_parse_error_12.txt"): ("check_metadata", "second # HELP line for one family"),
    ("text004", "invalid__from_test_parse_error_13.txt"): (
        "check_metadata",
        "second # TYPE line for one family (counter, then untyped)",
    ),
    ("text004", "invalid__from_test_parse_error_14.txt"): (
        "check_families/grouping",
        "# TYPE after the family's samples",
    ),
    ("text004", "invalid__from_test_parse_error_17.txt"): (
        "check_unterminated + metric name",
        "`@invalidmetric` is not a metric name (and no final line feed)",
    ),
    ("text004", "invalid__from_test_parse_error_19.txt"): (
        "check_families/histogram",
        'bucket le="bla" is not a number',
    ),
    ("text004", "invalid__from_test_parse_error_10.txt"): (
        "check_trailing_tokens",
        "`3.14 2 3` has a token after the timestamp (promtool: 'spurious string after timestamp'); "
        "prometheus_client keeps 3.14 and takes the last token as the timestamp, so a line that lost "
        "its line feed would glue two samples and drop one silently",
    ),
}


def _cases():
    out = []
    for suite, folder in SUITES.items():
        with open(folder / "MANIFEST.csv", newline="") as f:
            rows = list(csv.DictReader(f))
        for row in rows:
            should = row["should_parse"].strip().lower() == "true"
            assert row["file"].startswith("valid__" if should else "invalid__"), row
            out.append(pytest.param(suite, row["file"], should, id=f"{suite}/{row['file']}"))
    return out


CASES = _cases()


def test_every_fixture_is_in_a_manifest():
    listed = {(p.values[0], p.values[1]) for p in CASES}
    on_disk = {(s, p.name) for s, d in SUITES.items() for p in d.glob("*.txt")}
    assert on_disk == listed
    assert len(listed) == 54 + 27  # OpenMetrics 26 valid + 28 invalid; 0.0.4 7 valid + 20 invalid


def test_tables_name_real_cases():
    listed = {(p.values[0], p.values[1]) for p in CASES}
    assert set(DIFFERENCES) <= listed
    assert set(CLOSED_BY_BENCHBOOK) <= listed
    assert not set(DIFFERENCES) & set(CLOSED_BY_BENCHBOOK)


@pytest.mark.parametrize("suite,name,should_parse", CASES)
def test_case(suite, name, should_parse):
    path = SUITES[suite] / name
    expect = DIFFERENCES.get((suite, name), ("accepts" if should_parse else "rejects", ""))[0]
    if expect == "accepts":
        snap = prometheus.read(path)
        assert isinstance(snap, prometheus.Snapshot)
        return
    with pytest.raises(InputError) as ei:
        prometheus.read(path)
    e = ei.value
    assert e.file == str(path)
    assert str(e).startswith(f"{path}: ")
    if expect == "rejects":
        assert re.fullmatch(r"line \d+", e.location), str(e)
        line_no = int(e.location.split()[1])
        assert 1 <= line_no <= path.read_text().count("\n") + 1
    else:
        assert expect == "rejects-without-line"
        assert e.location == "-"


@pytest.mark.parametrize("key", sorted(CLOSED_BY_BENCHBOOK), ids=lambda k: f"{k[0]}/{k[1]}")
def test_prometheus_client_alone_accepts_what_benchbook_rejects(key):
    """The gap is real: prometheus_client's own parser accepts these; benchbook's checks do not."""
    from prometheus_client.parser import text_string_to_metric_families

    suite, name = key
    text = (SUITES[suite] / name).read_text()
    assert not prometheus.is_openmetrics(text)
    list(text_string_to_metric_families(text))  # no exception
    with pytest.raises(InputError):
        prometheus.parse(text, name)


def test_the_openmetrics_parser_alone_rejects_every_invalid_openmetrics_case():
    """So benchbook adds no OpenMetrics checks of its own: routing to the right parser suffices."""
    from prometheus_client.openmetrics.parser import text_string_to_metric_families

    for p in sorted(SUITES["openmetrics"].glob("invalid__*.txt")):
        with pytest.raises(Exception):
            list(text_string_to_metric_families(p.read_text()))


def test_openmetrics_exemplars_are_not_read_as_values():
    snap = prometheus.read(SUITES["openmetrics"] / "valid__counter_exemplars.txt")
    assert snap.get("a_total") == 0.0
    snap = prometheus.read(SUITES["openmetrics"] / "valid__histogram_exemplars.txt")
    assert snap.get("a_bucket", {"le": "+Inf"}) == 3.0
    assert snap.types["a"] == "histogram"


def test_detects_openmetrics_only_by_eof_line():
    assert prometheus.is_openmetrics("a 1\n# EOF\n")
    assert prometheus.is_openmetrics("a 1\n# EOF")
    assert not prometheus.is_openmetrics("a 1\n")
    assert not prometheus.is_openmetrics("a 1\n# EOF is near\n")


def test_real_vllm_capture_passes_the_extra_checks():
    # A capture of vLLM 0.25.1's /metrics (prometheus_client-generated): histograms, counters and
    # `_created` gauges must all pass benchbook's checks.
    p = Path("/work/shared/realdata/prom_llm_servers/er0080_metrics_vllm_0_25_1_loaded.txt")
    if not p.exists():
        pytest.skip("shared real data not available")
    snap = prometheus.read(p)
    assert snap.types


def test_openmetrics_snapshots_in_a_campaign(tmp_path, capsys):
    """A phases run whose snapshots were scraped as OpenMetrics validates like the 0.0.4 one."""
    import shutil

    from benchbook.commands.cli import main

    mini = Path(__file__).parent / "fixtures" / "mini"
    root = tmp_path / "mini"
    shutil.copytree(mini, root)
    for p in (root / "runs/phases-serial/metrics").glob("*.prom"):
        text = p.read_text()
        for fam in ("pocket_tokens", "pocket_requests"):
            text = text.replace(f"# TYPE {fam}_total counter", f"# TYPE {fam} counter")
            text = text.replace(f"# HELP {fam}_total ", f"# HELP {fam} ")
        p.write_text(text + "# EOF\n")
        assert prometheus.is_openmetrics(p.read_text())
    assert main(["validate", str(mini)]) == 0
    want = capsys.readouterr().out.replace(str(mini), "ROOT")
    assert main(["validate", str(root)]) == 0
    got = capsys.readouterr().out.replace(str(root), "ROOT")
    assert got == want
