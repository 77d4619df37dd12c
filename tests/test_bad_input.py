"""Bad input: every kind is rejected by ``benchbook validate`` with exit 2 and ``file: location:
reason`` — or, where the input is valid but a sample cannot be used, excluded and listed.

Single-file cases live in tests/fixtures/bad/ (one defect each, named by the file name). Campaign
cases copy tests/fixtures/mini and change one thing. docs/bad-input.md is the user-facing list.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
from pathlib import Path

import pytest

from benchbook.commands.cli import main
from benchbook.errors import EXIT_BAD_INPUT, InputError
from benchbook.metrics import phases, prometheus
from benchbook.metrics.profiles import get_profile

FIX = Path(__file__).parent / "fixtures"
BAD = FIX / "bad"
MINI = FIX / "mini"


def validate(path, capsys) -> tuple[int, str, str]:
    rc = main(["validate", str(path)])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    assert "internal error" not in err, err
    return rc, out, err


def assert_rejected(path, capsys, file, location, reason=""):
    """exit 2; stderr has ``file: location: …reason…`` (location a regex)."""
    rc, out, err = validate(path, capsys)
    assert rc == EXIT_BAD_INPUT, (out, err)
    lines = [ln for ln in err.splitlines() if ln.startswith(f"{file}: ")]
    assert lines, f"no line naming {file} in:\n{err}"
    pat = re.compile(re.escape(f"{file}: ") + f"({location}): .*{reason}", re.S)
    assert any(pat.match(ln) for ln in lines), f"expected {file}: {location}: …{reason}… in:\n{err}"
    return err


@pytest.fixture
def camp(tmp_path) -> Path:
    root = tmp_path / "mini"
    shutil.copytree(MINI, root)
    return root


def edit_json(path: Path, fn) -> None:
    doc = json.loads(path.read_text())
    fn(doc)
    path.write_text(json.dumps(doc, indent=1) + "\n")


REQ = "runs/req-serial/requests.json"
PH = "runs/phases-serial/phases.json"
MEM = "runs/mem-serial/memory.json"
METRICS = "runs/phases-serial/metrics"


def test_mini_campaign_is_valid(capsys):
    rc, out, err = validate(MINI, capsys)
    assert rc == 0, err
    assert "4 phase samples (1 warm-up), 0 excluded" in out


# ---- single files ---------------------------------------------------------------------------

JSON_CASES = {
    "truncated.json": (r"line \d+ column \d+", "not valid JSON: unexpected end of data"),
    "nan.json": (r"line 11 column 11", "NaN and Infinity are not JSON numbers"),
    "infinity.json": (r"line 11 column 11", "NaN and Infinity are not JSON numbers"),
    "wrong_type.json": (r"\$\.requests\[1\]\.completion_tokens", "not of type 'integer'"),
    "missing_field.json": (r"\$\.requests\[1\]", "'end' is a required property"),
    "unknown_version.json": (r"\$\.format", "unsupported version 'benchbook.requests/2'"),
    "not_utf8.json": (r"line 14 column 28", "not UTF-8 \\(byte 0xff"),
    "empty.json": (r"-", "file is empty"),
    "top_level_array.json": (r"-", "unknown benchmark format"),
    "negative_repeat.json": (r"\$\.samples\[0\]\.repeat", "less than the minimum of 0"),
    "zero_client_total.json": (r"\$\.samples\[0\]\.client_total_s", "less than or equal to the minimum of 0"),
    "negative_gpu_memory.json": (r"\$\.samples\[0\]\.gpu_used_mib\[1\]", "less than the minimum of 0"),
}

PROM_CASES = {
    "duplicate_series.prom": ("line 4", "duplicate series"),
    "buckets_not_cumulative.prom": ("line 3", "buckets not cumulative"),
    "inf_not_count.prom": ("line 6", r"_count = 3 but its \+Inf bucket is 2"),
    "no_inf_bucket.prom": ("line 3", r"no le=\"\+Inf\" bucket"),
    "negative_counter.prom": ("line 3", "a counter is never negative"),
    "negative_histogram_sum.prom": ("line 5", "no bucket is below 0"),
    "truncated_last_line.prom": ("line 3", "no line feed: the capture looks truncated"),
    "late_type.prom": ("line 2", "comes after samples"),
    "repeated_type.prom": ("line 2", "second # TYPE line"),
    "html_error_page.prom": ("line 1", "an HTML page"),
    "bad_value.prom": ("line 3", "not valid Prometheus text exposition"),
    "not_utf8.prom": ("line 3", "not UTF-8 \\(byte 0xe9"),
    "empty.prom": ("-", "empty /metrics capture"),
    "openmetrics_text_after_eof.prom": ("line 5", "Received line after # EOF"),
    "openmetrics_negative_counter.prom": ("line 3", "cannot be negative"),
}


def test_every_bad_fixture_has_a_case():
    on_disk = {p.name for p in (BAD / "json").iterdir()} | {p.name for p in (BAD / "prom").iterdir()}
    assert on_disk == set(JSON_CASES) | set(PROM_CASES)


@pytest.mark.parametrize("name", sorted(JSON_CASES))
def test_bad_json_file(name, capsys):
    loc, reason = JSON_CASES[name]
    path = BAD / "json" / name
    assert_rejected(path, capsys, path, loc, reason)


@pytest.mark.parametrize("name", sorted(PROM_CASES))
def test_bad_prom_file(name, capsys):
    loc, reason = PROM_CASES[name]
    path = BAD / "prom" / name
    assert_rejected(path, capsys, path, re.escape(loc), reason)


NEEDED = phases.needed_samples(get_profile("pocket"))  # what the phase split reads: no _bucket lines


@pytest.mark.parametrize(
    "name",
    ["duplicate_series.prom", "negative_counter.prom", "truncated_last_line.prom", "negative_histogram_sum.prom"],
)
def test_bad_prom_is_rejected_on_the_narrow_path_too(name):
    """prometheus.read(names=…) (what the phase split uses) applies the same checks to the lines it reads."""
    path = BAD / "prom" / name
    with pytest.raises(InputError) as ei:
        prometheus.read(path, NEEDED)
    assert ei.value.location == PROM_CASES[name][0]


BUCKET_CASES = ["buckets_not_cumulative.prom", "inf_not_count.prom", "no_inf_bucket.prom"]


@pytest.mark.parametrize("name", BUCKET_CASES)
def test_bucket_defects_are_caught_where_buckets_are_read(name, capsys):
    """The split reads a histogram's _sum and _count, not its buckets: the narrow path returns
    them; ``benchbook validate FILE`` (a full parse) and the whole-family parse ``benchbook validate
    CAMPAIGN`` runs reject the file at the bucket's line (the campaign case: below)."""
    path = BAD / "prom" / name
    snap = prometheus.read(path, NEEDED)
    assert snap.get("pocket_ttft_seconds_sum") == 1.0 and snap.get("pocket_ttft_seconds_count") in (2.0, 3.0)
    assert snap.types["pocket_ttft_seconds"] == "histogram"
    for names in (None, phases.needed_names(get_profile("pocket"))):
        with pytest.raises(InputError) as ei:
            prometheus.read(path, names)
        assert ei.value.location == PROM_CASES[name][0]
    assert_rejected(path, capsys, path, re.escape(PROM_CASES[name][0]), PROM_CASES[name][1])


def test_narrow_path_ignores_defects_in_families_it_does_not_read(tmp_path):
    p = tmp_path / "m.prom"
    p.write_text((MINI / METRICS / "s1.prom").read_text() + "other_total 1\nother_total 2\n")
    with pytest.raises(InputError):
        prometheus.read(p)
    assert prometheus.read(p, ["pocket_tokens_total"]).get("pocket_tokens_total", {"type": "prompt"}) == 16


def test_very_long_line_is_read(tmp_path, capsys):
    p = tmp_path / "long.prom"
    p.write_text('# TYPE x gauge\nx{v="' + "a" * 1_000_000 + '"} 1\n')
    rc, out, err = validate(p, capsys)
    assert rc == 0, err
    assert prometheus.read(p).series("x")


def test_very_long_bad_line_gives_a_short_message(tmp_path, capsys):
    p = tmp_path / "long.prom"
    p.write_text('# TYPE x gauge\nx{v="' + "a" * 1_000_000 + '"} one\n')
    err = assert_rejected(p, capsys, p, "line 2", "not valid")
    assert max(len(ln) for ln in err.splitlines()) < 600


def test_very_long_json_line(tmp_path, capsys):
    p = tmp_path / "requests.json"
    reqs = [
        {
            "scenario": "single",
            "n": 1,
            "index": i,
            "prompt_class": "short",
            "start": 0.0,
            "end": 1.0,
            "prompt_tokens": 1,
            "completion_tokens": 1,
            "finish_reason": "length",
        }
        for i in range(20000)
    ]
    reqs[19999]["end"] = "late"
    p.write_text(json.dumps({"format": "benchbook.requests/1", "requests": reqs}))  # one line
    err = assert_rejected(p, capsys, p, r"\$\.requests\[19999\]\.end", "not of type 'number'")
    assert max(len(ln) for ln in err.splitlines()) < 600


# ---- folders and paths ----------------------------------------------------------------------


def test_empty_campaign_folder(tmp_path, capsys):
    d = tmp_path / "empty"
    d.mkdir()
    assert_rejected(d, capsys, d, "-", "no campaign.json")


def test_missing_path(tmp_path, capsys):
    p = tmp_path / "nope"
    assert_rejected(p, capsys, p, "-", "no such file")


def test_campaign_json_is_a_directory(camp, capsys):
    (camp / "campaign.json").unlink()
    (camp / "campaign.json").mkdir()
    assert_rejected(camp, capsys, camp / "campaign.json", "-", "is a directory")


def test_run_file_is_a_directory(camp, capsys):
    (camp / REQ).unlink()
    (camp / REQ).mkdir()
    assert_rejected(camp, capsys, camp / "campaign.json", r"\$\.runs\[0\]\.path", "no requests.json")


def test_snapshot_is_a_directory(camp, capsys):
    (camp / METRICS / "s2.prom").unlink()
    (camp / METRICS / "s2.prom").mkdir()
    assert_rejected(camp, capsys, (camp / METRICS / "s2.prom").resolve(), "-", "is a directory")


def test_snapshot_missing(camp, capsys):
    (camp / METRICS / "s3.prom").unlink()
    assert_rejected(camp, capsys, camp / PH, r"\$\.samples\[2\]\.metrics_after", "does not exist")


def test_run_folder_missing(camp, capsys):
    shutil.rmtree(camp / "runs/mem-serial")
    assert_rejected(camp, capsys, camp / "campaign.json", r"\$\.runs\[3\]\.path", "does not exist")


# ---- manifest -------------------------------------------------------------------------------


def test_duplicate_run_ids(camp, capsys):
    edit_json(camp / "campaign.json", lambda d: d["runs"][1].update(id="req-serial"))
    assert_rejected(camp, capsys, camp / "campaign.json", r"\$\.runs\[1\]\.id", "duplicate run id 'req-serial'")


def test_manifest_unknown_version(camp, capsys):
    edit_json(camp / "campaign.json", lambda d: d.update(format="benchbook.campaign/9"))
    assert_rejected(camp, capsys, camp / "campaign.json", r"\$\.format", "unsupported version")


def test_manifest_missing_required_field(camp, capsys):
    edit_json(camp / "campaign.json", lambda d: d.pop("title"))
    assert_rejected(camp, capsys, camp / "campaign.json", r"\$", "'title' is a required property")


def test_manifest_wrong_type(camp, capsys):
    edit_json(camp / "campaign.json", lambda d: d.update(generation_tokens="8"))
    assert_rejected(camp, capsys, camp / "campaign.json", r"\$\.generation_tokens", "not of type 'integer'")


def test_manifest_zero_generation_tokens(camp, capsys):
    edit_json(camp / "campaign.json", lambda d: d.update(generation_tokens=0))
    assert_rejected(camp, capsys, camp / "campaign.json", r"\$\.generation_tokens", "minimum")


def test_manifest_unknown_profile_names_the_manifest(camp, capsys):
    edit_json(camp / "campaign.json", lambda d: d["engine"].update(profile="nosuch"))
    assert_rejected(camp, capsys, camp / "campaign.json", r"\$\.engine\.profile", "unknown engine profile")


def test_manifest_unknown_arm_and_environment(camp, capsys):
    def f(d):
        d["runs"][0]["arm"] = "ghost"
        d["arms"]["batch"]["environment"] = "nowhere"

    edit_json(camp / "campaign.json", f)
    err = assert_rejected(camp, capsys, camp / "campaign.json", r"\$\.runs\[0\]\.arm", "unknown arm 'ghost'")
    assert "$.arms.batch.environment: unknown environment 'nowhere'" in err


def test_manifest_truncated(camp, capsys):
    p = camp / "campaign.json"
    p.write_bytes(p.read_bytes()[:300])
    assert_rejected(camp, capsys, p, r"line \d+ column \d+", "unexpected end of data")


# ---- requests -------------------------------------------------------------------------------


def test_requests_unknown_prompt_class(camp, capsys):
    edit_json(camp / REQ, lambda d: d["requests"][2].update(prompt_class="huge"))
    assert_rejected(camp, capsys, camp / REQ, r"\$\.requests\[2\]\.prompt_class", "unknown prompt class")


def test_requests_nan_end(camp, capsys):
    p = camp / REQ
    p.write_text(p.read_text().replace('"end": 5.0', '"end": NaN', 1))
    assert_rejected(camp, capsys, p, r"line \d+ column \d+", "NaN and Infinity")


@pytest.mark.parametrize("end", [2.0, 3.0], ids=["negative", "zero"])
def test_requests_non_positive_duration_is_excluded_and_listed(camp, capsys, end):
    # request 1 (single) starts at 3.0: ending at 2.0 or 3.0 is a negative / zero latency.
    edit_json(camp / REQ, lambda d: d["requests"][1].update(end=end))
    rc, out, err = validate(camp, capsys)
    assert rc == 0, err
    assert f"{camp / REQ}: 9 requests" in out
    assert re.search(r"excluded \$\.requests\[1\]: end .* (precedes|equals) start 3\.0", out), out
    from benchbook.ingest.campaign import load_campaign

    c = load_campaign(camp)
    assert (c.requests["latency"] > 0).all()


def test_requests_zero_completion_tokens_excluded_and_listed(camp, capsys):
    edit_json(camp / REQ, lambda d: d["requests"][1].update(completion_tokens=0, finish_reason="error"))
    rc, out, err = validate(camp, capsys)
    assert rc == 0, err
    assert re.search(r"excluded \$\.requests\[1\]: 0 of 8 tokens generated \(finish_reason 'error'\)", out), out


def test_arm_with_no_usable_requests(camp, capsys):
    edit_json(camp / "runs/req-batch/requests.json", lambda d: [q.update(completion_tokens=3) for q in d["requests"]])
    err = assert_rejected(
        camp, capsys, camp / "runs/req-batch/requests.json", "-", "arm 'batch' has no usable requests"
    )
    assert "10 excluded" in err or "9 excluded" in err


# ---- phases ---------------------------------------------------------------------------------


def _prom(camp, i) -> Path:
    return camp / METRICS / f"s{i}.prom"


def test_counter_reset_is_excluded_and_listed(camp, capsys):
    # s3 (after of sample 2) with every counter lower than in s2: an engine restart between scrapes.
    p = _prom(camp, 3)
    p.write_text(p.read_text().replace('{type="prompt"} 48', '{type="prompt"} 5'))
    rc, out, err = validate(camp, capsys)
    assert rc == 0, err
    assert re.search(
        r"excluded \$\.samples\[2\] \(short repeat 2\): engine restarted between the snapshots: "
        r"counter pocket_tokens_total\{type=\"prompt\"\} went from 32 to 5",
        out,
    ), out
    assert "1 excluded" in out


def test_counters_moved_by_two_are_excluded_and_listed(camp, capsys):
    # sample 1 uses s1 → s2; make s1 look like s0 for the counts: two requests finished in between.
    p = _prom(camp, 1)
    text = p.read_text()
    for name in ("pocket_ttft_seconds_count", "pocket_request_duration_seconds_count"):
        text = text.replace(f"{name} 1\n", f"{name} 0\n")
    text = text.replace('pocket_ttft_seconds_bucket{le="+Inf"} 1', 'pocket_ttft_seconds_bucket{le="+Inf"} 0')
    text = text.replace(
        'pocket_request_duration_seconds_bucket{le="+Inf"} 1', 'pocket_request_duration_seconds_bucket{le="+Inf"} 0'
    )
    for le in ("0.5", "1", "2.5", "5"):
        text = text.replace(f'pocket_ttft_seconds_bucket{{le="{le}"}} 1', f'pocket_ttft_seconds_bucket{{le="{le}"}} 0')
        text = text.replace(
            f'pocket_request_duration_seconds_bucket{{le="{le}"}} 1',
            f'pocket_request_duration_seconds_bucket{{le="{le}"}} 0',
        )
    text = text.replace('{status="success"} 1', '{status="success"} 0')
    p.write_text(text)
    rc, out, err = validate(camp, capsys)
    assert rc == 0, err
    assert re.search(
        r"excluded \$\.samples\[1\] \(short repeat 1\): not attributable to one request: "
        r"TTFT count moved by 2, duration count moved by 2, success count moved by 2",
        out,
    ), out


def test_non_streamed_path_excluded(camp, capsys):
    # TTFT delta == duration delta for sample 3 (long): no first-token instant.
    p = _prom(camp, 4)
    p.write_text(p.read_text().replace("pocket_ttft_seconds_sum 3.0", "pocket_ttft_seconds_sum 5.0"))
    rc, out, err = validate(camp, capsys)
    assert rc == 0, err
    assert "excluded $.samples[3] (long repeat 0): duration 3.5000 s does not exceed TTFT 3.5000 s" in out


def test_zero_generation_tokens_excluded(camp, capsys):
    # s4 with generation tokens unchanged from s3: no decode phase (no division by zero).
    p = _prom(camp, 4)
    p.write_text(p.read_text().replace('{type="generation"} 32', '{type="generation"} 24'))
    rc, out, err = validate(camp, capsys)
    assert rc == 0, err
    assert "excluded $.samples[3] (long repeat 0): generation tokens moved by 0" in out


def test_zero_prompt_tokens_excluded(camp, capsys):
    p = _prom(camp, 4)
    p.write_text(p.read_text().replace('{type="prompt"} 112', '{type="prompt"} 48'))
    rc, out, err = validate(camp, capsys)
    assert rc == 0, err
    assert "excluded $.samples[3] (long repeat 0): prompt tokens moved by 0" in out


def test_snapshot_not_exposition_text(camp, capsys):
    p = _prom(camp, 2)
    lines = p.read_text().splitlines(keepends=True)
    lines[18] = 'pocket_tokens_total{type="prompt" 32\n'
    p.write_text("".join(lines))
    assert_rejected(camp, capsys, p.resolve(), "line 19", "not valid Prometheus text exposition")


def test_snapshot_non_utf8(camp, capsys):
    p = _prom(camp, 2)
    p.write_bytes(p.read_bytes().replace(b"Tokens processed", b"Tokens \xff processed"))
    assert_rejected(camp, capsys, p.resolve(), "line 19", "not UTF-8")


def test_snapshot_duplicate_series(camp, capsys):
    p = _prom(camp, 2)
    p.write_text(p.read_text() + 'pocket_tokens_total{type="generation"} 99\n')
    assert_rejected(camp, capsys, p.resolve(), r"line \d+", "duplicate series")


def test_snapshot_nan_counter(camp, capsys):
    p = _prom(camp, 2)
    p.write_text(p.read_text().replace('{type="generation"} 16', '{type="generation"} NaN'))
    assert_rejected(camp, capsys, p.resolve(), r"pocket_tokens_total", "not a finite counter value")


SNAPSHOT_BUCKET_DEFECTS = {
    # s2.prom (after of sample 1, before of sample 2), one bucket defect each: (old, new, line, reason)
    "not cumulative": (
        'pocket_ttft_seconds_bucket{le="1"} 2',
        'pocket_ttft_seconds_bucket{le="1"} 1',
        "line 4",
        "buckets not cumulative",
    ),
    "+Inf differs from _count": (
        'pocket_request_duration_seconds_bucket{le="+Inf"} 2',
        'pocket_request_duration_seconds_bucket{le="+Inf"} 3',
        "line 18",
        r"_count = 2 but its \+Inf bucket is 3",
    ),
    "no +Inf bucket": ('pocket_ttft_seconds_bucket{le="+Inf"} 2\n', "", "line 6", r'no le="\+Inf" bucket'),
    "le not a number": (
        'pocket_ttft_seconds_bucket{le="2.5"}',
        'pocket_ttft_seconds_bucket{le="soon"}',
        "line 5",
        "is not a number",
    ),
    "negative bucket count": (
        'pocket_request_duration_seconds_bucket{le="0.5"} 0',
        'pocket_request_duration_seconds_bucket{le="0.5"} -1',
        "line 12",
        "never negative",
    ),
    "bucket line not exposition text": (
        'pocket_ttft_seconds_bucket{le="1"} 2',
        'pocket_ttft_seconds_bucket{le="1" 2',
        "line 4",
        "not valid Prometheus text exposition",
    ),
}


def _phase_numbers(root: Path):
    from benchbook.ingest.campaign import load_campaign

    c = load_campaign(root)
    return c.phase_samples.drop("file"), [(e.sample, e.reason) for e in c.exclusions]


@pytest.mark.parametrize("defect", sorted(SNAPSHOT_BUCKET_DEFECTS))
def test_snapshot_bucket_defect_validate_rejects_pages_read_sum_and_count(camp, capsys, defect):
    """A bucket defect in a snapshot: the phase split does not read buckets, so the loader (what
    render and summary use) gives the same phase numbers as without it; ``benchbook validate``
    parses the whole histogram families and rejects the campaign with the file and line."""
    old, new, line, reason = SNAPSHOT_BUCKET_DEFECTS[defect]
    clean = _phase_numbers(camp)
    p = _prom(camp, 2)
    text = p.read_text()
    assert old in text
    p.write_text(text.replace(old, new, 1))
    got = _phase_numbers(camp)
    assert got[0].equals(clean[0]) and got[1] == clean[1]
    assert_rejected(camp, capsys, p.resolve(), re.escape(line), reason)


def test_snapshot_bucket_defect_summary_gives_the_clean_numbers(camp, capsys):
    def summary() -> dict:
        assert main(["summary", "--json", str(camp)]) == 0
        return json.loads(capsys.readouterr().out)

    clean = summary()
    p = _prom(camp, 3)
    p.write_text(
        p.read_text().replace('pocket_ttft_seconds_bucket{le="+Inf"} 3', 'pocket_ttft_seconds_bucket{le="+Inf"} 7')
    )
    assert summary() == clean
    rc, _out, err = validate(camp, capsys)
    assert rc == EXIT_BAD_INPUT and f"{p.resolve()}: line 9: " in err and "+Inf bucket is 7" in err  # the _count line


def test_phases_duplicate_sample(camp, capsys):
    edit_json(camp / PH, lambda d: d["samples"][2].update(repeat=1))
    assert_rejected(camp, capsys, camp / PH, r"\$\.samples\[2\]", "duplicate sample")


def test_phases_negative_first_event(camp, capsys):
    edit_json(camp / PH, lambda d: d["samples"][1].update(first_event_s=-0.5))
    assert_rejected(camp, capsys, camp / PH, r"\$\.samples\[1\]\.first_event_s", "minimum")


def test_phases_missing_required_field(camp, capsys):
    edit_json(camp / PH, lambda d: d["samples"][1].pop("metrics_after"))
    assert_rejected(camp, capsys, camp / PH, r"\$\.samples\[1\]", "'metrics_after' is a required property")


def test_phases_same_file_before_and_after(camp, capsys):
    edit_json(camp / PH, lambda d: d["samples"][1].update(metrics_after="metrics/s1.prom"))
    assert_rejected(camp, capsys, camp / PH, r"\$\.samples\[1\]", "name the same file")


def test_arm_with_no_usable_phase_samples(camp, capsys):
    def f(d):
        for s in d["samples"]:
            s["client_total_s"] = 1.0  # engine total (2.5 s) cannot exceed the client's

    edit_json(camp / PH, f)
    assert_rejected(camp, capsys, camp / PH, "-", "arm 'serial' has no usable phase samples")


# ---- memory ---------------------------------------------------------------------------------


def test_memory_time_goes_back(camp, capsys):
    edit_json(camp / MEM, lambda d: d["samples"][4].update(t=1.0))
    assert_rejected(camp, capsys, camp / MEM, r"\$\.samples\[4\]\.t", "does not increase")


def test_memory_rank_count_changes(camp, capsys):
    edit_json(camp / MEM, lambda d: d["samples"][5]["gpu_used_mib"].append(1))
    assert_rejected(camp, capsys, camp / MEM, r"\$\.samples\[5\]\.gpu_used_mib", "3 ranks")


def test_memory_missing_markers(camp, capsys):
    edit_json(camp / MEM, lambda d: d.update(markers=[m for m in d["markers"] if m["event"] != "stop"]))
    assert_rejected(camp, capsys, camp / MEM, r"\$\.markers", "no 'stop' marker")


def test_memory_unknown_version(camp, capsys):
    edit_json(camp / MEM, lambda d: d.update(format="benchbook.memory/2"))
    assert_rejected(camp, capsys, camp / MEM, r"\$\.format", "unsupported version")


# ---- server.log -----------------------------------------------------------------------------


def test_server_log_non_utf8(camp, capsys):
    p = camp / "runs/req-serial/server.log"
    p.write_bytes(b"[server] loading\n[server] batch width \xff1\n")
    assert_rejected(camp, capsys, p, "line 2", "not UTF-8")


def test_server_log_is_a_directory(camp, capsys):
    p = camp / "runs/req-serial/server.log"
    p.unlink()
    p.mkdir()
    assert_rejected(camp, capsys, p, "-", "is a directory")


def test_all_problems_of_a_campaign_are_listed(camp, capsys):
    """One bad run does not hide another: validate reports both."""
    edit_json(camp / REQ, lambda d: d["requests"][0].update(n="one"))
    edit_json(camp / MEM, lambda d: d["samples"][4].update(t=1.0))
    rc, out, err = validate(camp, capsys)
    assert rc == EXIT_BAD_INPUT
    assert f"{camp / REQ}: $.requests[0].n:" in err
    assert f"{camp / MEM}: $.samples[4].t:" in err
    assert "2 problem(s) found" in err


def test_number_beyond_int64_is_rejected(camp, capsys):
    # Used to end in a polars ComputeError ("internal error", exit 1) when building the Int64 column.
    edit_json(camp / REQ, lambda d: d["requests"][3].update(prompt_tokens=2**63))
    assert_rejected(camp, capsys, camp / REQ, r"\$\.requests\[3\]\.prompt_tokens", "out of range")


def test_huge_float_where_an_integer_is_expected(camp, capsys):
    edit_json(camp / REQ, lambda d: d["requests"][3].update(prompt_tokens=1e29))
    assert_rejected(camp, capsys, camp / REQ, r"\$\.requests\[3\]\.prompt_tokens", "out of range")


def test_sha256_file_reads_in_blocks_and_matches_hashlib(tmp_path):
    import hashlib

    from benchbook.jsonfile import sha256_file

    data = bytes(range(256)) * 9000  # 2.2 MiB: more than one block
    (tmp_path / "f").write_bytes(data)
    assert sha256_file(tmp_path / "f") == hashlib.sha256(data).hexdigest()


# --------------------------------------------------------------------------- special files, size limits
# (issue 30, class 4). A FIFO used to hang `validate`, `render --all` (the folder digest opened it) and
# `init`; a device node was read whole. Each test has an alarm so a regression fails, never hangs.


@contextlib.contextmanager
def within(seconds: float):
    def expired(*_):
        raise TimeoutError(f"still running after {seconds} s (blocked on a special file?)")

    old = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def test_fifo_as_an_input_file_is_refused_unopened(camp, capsys):
    p = camp / "runs/req-serial/server.log"
    p.unlink()
    os.mkfifo(p)
    with within(20):
        err = assert_rejected(camp, capsys, p, "-", "is a FIFO")
    assert "not a regular file" in err


def test_fifo_as_a_single_file_is_refused(tmp_path, capsys):
    for name in ("result.json", "snap.prom"):
        p = tmp_path / name
        os.mkfifo(p)
        with within(20):
            assert_rejected(p, capsys, p, "-", "is a FIFO")


def test_device_node_is_refused_not_read(capsys):
    from benchbook.jsonfile import read_bytes

    with within(20), pytest.raises(InputError, match="is a character device"):
        read_bytes("/dev/zero")


def test_stray_fifo_in_a_campaign_folder_is_bad_input(camp, capsys):
    os.mkfifo(camp / "runs" / "stray.pipe")
    with within(20):
        assert_rejected(camp, capsys, camp / "runs" / "stray.pipe", "-", "is a FIFO")


def test_size_limit_per_kind_is_checked_before_reading(camp, capsys, monkeypatch):
    from benchbook import jsonfile

    monkeypatch.setattr(jsonfile, "MAX_LOG_BYTES", 100)
    from benchbook.ingest import campaign

    monkeypatch.setattr(campaign, "MAX_LOG_BYTES", 100)
    p = camp / "runs/req-serial/server.log"
    assert_rejected(camp, capsys, p, "-", "above the 100-byte limit")


def _tiny_campaign(root: Path, name: str) -> Path:
    c = root / name
    shutil.copytree(MINI, c)
    return c


def test_render_all_with_a_fifo_renders_the_rest_and_writes_the_index(tmp_path, capsys):
    data = tmp_path / "data"
    _tiny_campaign(data, "alpha")
    bad = _tiny_campaign(data, "beta")
    os.mkfifo(bad / "runs" / "req-serial" / "requests.ndjson")
    empty = tmp_path / "nb"
    empty.mkdir()
    out = tmp_path / "reports"
    with within(120):
        rc = main(["render", "--all", str(data), "--out", str(out), "--notebooks", str(empty)])
    err = capsys.readouterr().err
    assert rc == EXIT_BAD_INPUT, err
    assert "beta: FAILED" in err and "is a FIFO" in err
    index = (out / "index.html").read_text()
    assert "campaign failed" in index and "is a FIFO" in index
    assert (out / "alpha" / "headline.json").is_file()  # the other campaign was processed


@pytest.mark.parametrize("name", ["index.html", "history.html", "history.parquet"])
def test_campaign_folder_named_like_an_output_is_refused(tmp_path, capsys, name):
    data = tmp_path / "data"
    _tiny_campaign(data, "alpha")
    _tiny_campaign(data, name)
    empty = tmp_path / "nb"
    empty.mkdir()
    out = tmp_path / "reports"
    rc = main(["render", "--all", str(data), "--out", str(out), "--notebooks", str(empty)])
    err = capsys.readouterr().err
    assert rc == EXIT_BAD_INPUT, err
    assert f"campaign folder name {name!r} collides" in err
    assert (out / "index.html").is_file() and "campaign failed" in (out / "index.html").read_text()


# --------------------------------------------------------------------------- render.yml (class 10)


def test_validate_checks_render_yml_alias_bomb(camp, capsys):
    (camp / "render.yml").write_text("a: &x {n: 1}\nbaseline: *x\n")
    assert_rejected(camp, capsys, camp / "render.yml", "line 2 column 11", "aliases")


def test_validate_checks_render_yml_input_key(camp, capsys):
    (camp / "render.yml").write_text("baseline:\n  campaign: ../other\n")
    assert_rejected(camp, capsys, camp / "render.yml", r"\$\.baseline\.campaign", "chooses which files")


def test_validate_checks_render_yml_unknown_page_and_parameter(camp, capsys):
    (camp / "render.yml").write_text("baseline:\n  no_such_parameter: 3\n")
    assert_rejected(camp, capsys, camp / "render.yml", r"\$\.baseline\.no_such_parameter", "declares no parameter")
    (camp / "render.yml").write_text("nopage:\n  x: 3\n")
    assert_rejected(camp, capsys, camp / "render.yml", r"\$\.nopage", "unknown page kind")


def test_metrics_error_on_the_last_line_is_found_in_one_pass(tmp_path, monkeypatch):
    """A 12 MB capture whose last line was bad took 78.6 s to validate (5.4 s valid): the error was
    located by bisection, up to 18 further parses of ever longer prefixes. The text parser fails on
    the line it is reading, so the line is known after the one parse (counted, not timed)."""
    import prometheus_client.parser as pc

    lines = [f'm{i}_total{{r="{j}"}} {i + j}' for i in range(2000) for j in range(3)]
    p = tmp_path / "big.prom"
    p.write_text("\n".join(lines) + '\nlast_total{a="1"} notanumber\n')
    passes = []
    real = pc.text_fd_to_metric_families

    def counted(fd):
        passes.append(1)
        yield from real(fd)

    monkeypatch.setattr(pc, "text_fd_to_metric_families", counted)
    with pytest.raises(InputError) as e:
        prometheus.read(p)
    assert e.value.location == "line 6001" and "notanumber" in e.value.reason
    assert len(passes) == 1, f"{len(passes)} parses of the text"


# --------------------------------------------------------------------------- impossible values (class 7)

VLLM = FIX / "tools" / "vllm-0.32.0+cpu" / "bench_serve.json"


def _vllm(tmp_path, change) -> Path:
    doc = json.loads(VLLM.read_text())
    change(doc)
    p = tmp_path / "result.json"
    p.write_text(json.dumps(doc))
    return p


@pytest.mark.parametrize(
    "change, location, reason",
    [
        (lambda d: d["ttfts"].__setitem__(3, -4.0), r"\$\.ttfts\[3\]", "-4.0 \\(negative\\)"),
        (lambda d: d["itls"][2].__setitem__(1, 1e308), r"\$\.itls\[2\]\[1\]", "more than"),
        (lambda d: d["latencies"].__setitem__(0, -0.5), r"\$\.latencies\[0\]", "negative"),
        (lambda d: d.update(duration=0), r"\$ duration", "a run lasts more than 0 s"),
        (lambda d: d.update(duration=-3), r"\$ duration", "impossible"),
        (lambda d: d.update(completed=1000000), r"\$ completed", "the file holds 30 per-request records"),
        (lambda d: d.update(completed=29), r"\$ completed", "30 of the 30 per-request records succeeded"),
        (lambda d: d.update(mean_ttft_ms=-1.0), r"\$ mean_ttft_ms", "impossible"),
    ],
)
def test_impossible_values_in_a_result_file_are_bad_input(tmp_path, capsys, change, location, reason):
    """A negative TTFT was averaged in (37.47 instead of 139 ms), a duration of 0 or -3 accepted,
    completed = 1000000 beside 50 records passed the minimum-completed gate, ITLs of 1e308 ended in
    an OverflowError (exit 1)."""
    p = _vllm(tmp_path, change)
    assert_rejected(p, capsys, p, location, reason)


def test_non_finite_time_is_bad_input(tmp_path, capsys):
    doc = json.loads(VLLM.read_text())
    doc["ttfts"][5] = float("inf")
    p = tmp_path / "results.jsonl"  # --append-result: Python's json writes Infinity, and it is read
    p.write_text(json.dumps(doc) + "\n")
    assert_rejected(p, capsys, p, r"line 1\.ttfts\[5\]", "not finite")


def test_other_readers_refuse_negative_request_times(tmp_path):
    from benchbook.ingest import formats

    rows = {"index": [0, 1], "ttft_s": [0.1, -0.2], "e2e_s": [1.0, 1.0], "success": [True, True]}
    run = formats.BenchmarkRun("x.json", "aiperf-records", {}, formats.make_summary(), formats.requests_frame(rows))
    with pytest.raises(InputError, match="request 1 ttft_s") as e:
        formats.check_run_values(run)
    assert "negative" in e.value.reason


def test_a_non_zero_value_never_prints_as_zero():
    from benchbook.analysis.stats import Cell
    from benchbook.pages import display

    html = str(display.table([{"ttft_ms": 5e-321, "zero": 0.0}], id="t", formats={"ttft_ms": "{:.2f} ms"}))
    assert ">0.00 ms<" not in html and ">5e-321 ms<" in html
    assert ">0.000<" in html  # a true zero stays 0
    assert Cell(1e-310, 1e-310, 2e-310, 3, (1e-310, 1e-310, 2e-310), 0).fmt(2) == "1e-310 (1e-310–2e-310)"


# --------------------------------------------------------------------------- init error paths (class 8)


def _init(argv, capsys) -> tuple[int, str]:
    rc = main(["init", *map(str, argv)])
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal error" not in err, err
    return rc, err


def test_init_folder_without_a_result_file(tmp_path, capsys):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "notes.txt").write_text("hello\n")
    rc, err = _init([tmp_path / "out", tmp_path / "in"], capsys)  # was exit 1, TypeError
    assert rc == EXIT_BAD_INPUT and "no result file in this folder (formats read: vllm-bench-serve" in err
    assert not (tmp_path / "out").exists()


def test_init_non_utf8_file_name_leaves_no_folder(tmp_path, capsys):
    src = tmp_path / "in"
    src.mkdir()
    name = os.fsdecode(b"r\xff.json")
    shutil.copy(VLLM, src / name)
    rc, err = _init([tmp_path / "out", src], capsys)  # was exit 1 with a half-written out/
    assert rc == EXIT_BAD_INPUT and "r\\xff.json: -: file name is not UTF-8" in err
    assert sorted(os.listdir(tmp_path)) == ["in"]  # nothing written, no temporary folder left


def test_init_failure_while_writing_leaves_no_half_written_folder(tmp_path, capsys, monkeypatch):
    from benchbook.commands import init

    real = init._copy
    calls = []

    def failing(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise InputError(dst, "-", "simulated failure after one copy")
        return real(src, dst)

    monkeypatch.setattr(init, "_copy", failing)
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    shutil.copy(VLLM, a)
    shutil.copy(VLLM, b)
    rc, err = _init([tmp_path / "out", a, b], capsys)
    assert rc == EXIT_BAD_INPUT and "simulated failure" in err
    assert sorted(os.listdir(tmp_path)) == ["a.json", "b.json"]
    monkeypatch.setattr(init, "_copy", real)
    assert _init([tmp_path / "out", a, b], capsys)[0] == 0  # the rerun is not blocked
    assert oct((tmp_path / "out").stat().st_mode & 0o777) == oct(0o777 & ~_umask())


def _umask() -> int:
    m = os.umask(0)
    os.umask(m)
    return m


def test_init_dangling_symlink_dir(tmp_path, capsys):
    (tmp_path / "out").symlink_to(tmp_path / "nowhere")
    rc, err = _init([tmp_path / "out", VLLM], capsys)  # was exit 1, FileExistsError
    assert rc == EXIT_BAD_INPUT and "is a symlink" in err


@pytest.mark.parametrize("where", ["r.json", "s.prom", "folder/s.prom"])
def test_init_given_a_fifo_exits_2(tmp_path, capsys, where):
    (tmp_path / "folder").mkdir()
    shutil.copy(VLLM, tmp_path / "folder" / "r.json")
    os.mkfifo(tmp_path / where)
    given = tmp_path / where.split("/")[0]
    with within(20):
        rc, err = _init([tmp_path / "out", given], capsys)
    assert rc == EXIT_BAD_INPUT and "is a FIFO" in err
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- streamed result files (class 4)


def _read_both(path: Path, monkeypatch):
    from benchbook import jsonfile
    from benchbook.ingest import formats

    whole = formats.read(path)
    monkeypatch.setattr(jsonfile, "STREAM_BYTES", 0)  # every object file streamed
    monkeypatch.setattr(jsonfile, "_WINDOW", 4096)  # many windows, batches and carries
    monkeypatch.setattr(jsonfile, "_BATCH", 1000)
    streamed = formats.read(path)
    return whole, streamed


@pytest.mark.parametrize(
    "path", [VLLM, *sorted((FIX / "realdata" / "vllm_bench_serving").glob("*.json"))], ids=lambda p: p.name
)
def test_a_streamed_result_file_reads_exactly_like_a_whole_one(path, monkeypatch):
    """Above jsonfile.STREAM_BYTES a result file is parsed member by member (a 208 MB vLLM result:
    validate's peak RSS 1394 -> 317 MB); what it gives must be what the whole-file parse gives."""
    whole, streamed = _read_both(path, monkeypatch)
    assert len(whole) == len(streamed)
    for a, b in zip(whole, streamed, strict=True):
        assert (a.config, a.summary, a.notes, a.tool_version) == (b.config, b.summary, b.notes, b.tool_version)
        assert (a.requests is None) == (b.requests is None)
        if a.requests is not None:
            assert a.requests.equals(b.requests)


@pytest.mark.parametrize(
    "change, location",
    [
        (lambda d: d["itls"][2].__setitem__(1, 1e308), r"\$\.itls\[2\]\[1\]"),
        (lambda d: d["itls"][4].__setitem__(0, -1.0), r"\$\.itls\[4\]\[0\]"),
        (lambda d: d["itls"][5].__setitem__(0, True), r"\$\.itls\[5\]\[0\]"),
        (lambda d: d["ttfts"].__setitem__(7, "x"), r"\$\.ttfts\[7\]"),
    ],
)
def test_a_streamed_result_file_names_bad_values_like_a_whole_one(tmp_path, monkeypatch, change, location):
    from benchbook import jsonfile
    from benchbook.ingest import formats

    p = _vllm(tmp_path, change)
    with pytest.raises(InputError) as whole:
        formats.read(p)
    monkeypatch.setattr(jsonfile, "STREAM_BYTES", 0)
    monkeypatch.setattr(jsonfile, "_BATCH", 500)
    with pytest.raises(InputError) as streamed:
        formats.read(p)
    assert re.fullmatch(location, whole.value.location) and streamed.value.location == whole.value.location
    assert streamed.value.reason == whole.value.reason


def test_a_streamed_file_with_a_duplicate_key_or_cut_short(tmp_path, monkeypatch):
    from benchbook import jsonfile
    from benchbook.ingest import formats

    monkeypatch.setattr(jsonfile, "STREAM_BYTES", 0)
    p = tmp_path / "r.json"
    text = VLLM.read_text()
    p.write_text(text.replace('"completed":', '"failed": 0, "completed":', 1))
    with pytest.raises(InputError, match="'failed' appears twice"):
        formats.read(p)
    p.write_text(text[: len(text) // 2])
    with pytest.raises(InputError, match="ends inside the object"):
        formats.read(p)
