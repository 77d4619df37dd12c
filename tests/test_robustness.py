"""Bad input of every kind is rejected by validate (and by the loaders render uses) with
`file: location: reason`: encoding and nesting faults and duplicate keys in each manifest,
control characters in each kind of id, captures that are not /metrics text, engine restarts,
durations too short for a rate."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from benchbook.commands.cli import main
from benchbook.jsonfile import MAX_DEPTH, scan_json

MINI = Path(__file__).resolve().parent / "fixtures" / "mini"
PD = Path(__file__).resolve().parents[1] / "data" / "pd-prefill-cap"
RAW_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")  # what must never reach the terminal


@pytest.fixture
def camp(tmp_path) -> Path:
    c = tmp_path / "camp"
    shutil.copytree(MINI, c)
    return c


def _validate(path: Path, capsys) -> tuple[int, str, str]:
    code = main(["validate", str(path)])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


MANIFESTS = {
    "campaign.json": "campaign.json",
    "requests.json": "runs/req-serial/requests.json",
    "phases.json": "runs/phases-serial/phases.json",
    "memory.json": "runs/mem-serial/memory.json",
}


def _bomb(raw: bytes) -> bytes:
    return raw.rstrip()[:-1] + b', "deep": ' + b"[" * 1000 + b"]" * 1000 + b"}"


FAULTS = {
    "bad byte": (lambda raw: raw.replace(b'"', b'"\xff', 1), r"line 2 column \d+: not UTF-8 \(byte 0xff"),
    "nesting bomb": (
        _bomb,
        rf"line \d+ column \d+: nested 1001 levels deep \(the limit, {MAX_DEPTH}, is passed here\)",
    ),
    "duplicate key": (lambda raw: raw.replace(b"{", b'{"format": "x", ', 1), r"\$: key 'format' appears twice"),
    "truncated": (lambda raw: raw[: len(raw) // 2], r"line \d+ column \d+: not valid JSON"),
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
@pytest.mark.parametrize("manifest", sorted(MANIFESTS))
def test_encoding_nesting_and_duplicate_key_faults_in_each_manifest(camp, manifest, fault, capsys):
    path = camp / MANIFESTS[manifest]
    make, says = FAULTS[fault]
    path.write_bytes(make(path.read_bytes()))
    code, _, err = _validate(camp, capsys)
    assert code == 2, err
    assert re.search(re.escape(f"{path}: ") + says, err), err
    if manifest == "memory.json":
        return  # summary does not read memory; the baseline page does, with the same loader
    # the loaders render uses say the same (summary reads what the pages read)
    assert main(["summary", str(camp), "--json"]) == 2
    assert re.search(re.escape(f"{path}: ") + says, capsys.readouterr().err)


@pytest.mark.parametrize("fault", ["bad byte", "nesting bomb", "duplicate key"])
def test_faults_in_a_pd_run(tmp_path, fault, capsys):
    c = tmp_path / "pd"
    shutil.copytree(PD, c)
    path = c / "runs" / "cap1-n320" / "pd.json"
    make, says = FAULTS[fault]
    path.write_bytes(make(path.read_bytes()))
    code, _, err = _validate(c, capsys)
    assert code == 2 and re.search(re.escape(f"{path}: ") + says, err), err


def test_the_depth_scan_ignores_brackets_in_strings_and_escaped_quotes():
    deep_text = '"' + "[" * 500 + '"'
    assert scan_json(json.dumps({"a": deep_text}).encode())[0] == 1
    assert scan_json(json.dumps({"a": 'x\\"[[[' + "\\\\", "b": [[1]]}).encode())[:1] == (3,)
    assert scan_json(b'{"k": 1, "k2": {"k": 2}}')[2] == 3  # every key counted, nested ones too


# --------------------------------------------------------------------------- control characters in ids


def _set(doc: dict, path: list, value=None, rename: str | None = None) -> None:
    *parents, last = path
    for p in parents:
        doc = doc[p]
    if rename is not None:
        doc[rename] = doc.pop(last)
    else:
        doc[last] = value


IDS = {
    # kind: (file, edit) — the edit puts a control character into that kind of id or name
    "run id": ("campaign.json", lambda d: _set(d, ["runs", 0, "id"], "req\x00serial")),
    "arm name": ("campaign.json", lambda d: _set(d, ["arms", "batch"], rename="bat\x1b[31mch")),
    "arm label": ("campaign.json", lambda d: _set(d, ["arms", "serial", "label"], "ser\nial")),
    "environment name": ("campaign.json", lambda d: _set(d, ["environments", "tuned"], rename="tu\x07ned")),
    "prompt class": ("campaign.json", lambda d: _set(d, ["prompt_classes", "long"], rename="lo\x00ng")),
    "campaign title": ("campaign.json", lambda d: _set(d, ["title"], "mini\x00")),
    "question (text)": ("campaign.json", lambda d: _set(d, ["question"], "does \x00 help?")),
    "request prompt class": (
        "runs/req-serial/requests.json",
        lambda d: _set(d, ["requests", 1, "prompt_class"], "sho\x00rt"),
    ),
    "phase sample prompt class": (
        "runs/phases-serial/phases.json",
        lambda d: _set(d, ["samples", 1, "prompt_class"], "short\x1f"),
    ),
    "run in a run document": ("runs/mem-serial/memory.json", lambda d: _set(d, ["run"], "mem\x7fserial")),
}


@pytest.mark.parametrize("kind", sorted(IDS))
def test_control_characters_in_each_kind_of_id_are_rejected_and_never_printed_raw(camp, kind, capsys):
    rel, edit = IDS[kind]
    path = camp / rel
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))
    code, out, err = _validate(camp, capsys)
    assert code == 2, err
    assert f"{path}: $" in err and "control character \\x" in err, err
    assert not RAW_CONTROL.search(out + err.replace("\n", "")), "a raw control character reached the terminal"


def test_tabs_and_line_breaks_are_fine_in_free_text(camp, capsys):
    _edit = json.loads((camp / "campaign.json").read_text())
    _edit["question"] = "does batching help?\n\tA second line."
    (camp / "campaign.json").write_text(json.dumps(_edit))
    assert _validate(camp, capsys)[0] == 0


# --------------------------------------------------------------------------- captures that are not /metrics text

SNAPSHOT = "runs/phases-serial/metrics/s2.prom"
NOT_METRICS = {
    "html error page": (b"<!DOCTYPE html>\n<html><body>502 Bad Gateway</body></html>\n", "line 1: an HTML page"),
    "only comments": (b"# HELP x y\n# just a comment\n\n", "-: holds only comments and blank lines"),
    "gzip": (b"\x1f\x8b\x08\x00" + b"\x00" * 20, "-: this is gzip-compressed data, not /metrics text"),
    "json": (b'{"error": "scrape failed"}\n', "line 1: not /metrics text"),
    "spurious token": (
        b'# TYPE pocket_requests_total counter\npocket_requests_total{status="success"} 2 1700000000 3\n',
        "line 2: spurious string after timestamp",
    ),
}


@pytest.mark.parametrize("case", sorted(NOT_METRICS))
def test_a_capture_that_is_not_metrics_text_is_rejected_in_a_campaign_as_in_a_file(camp, case, capsys):
    raw, says = NOT_METRICS[case]
    path = camp / SNAPSHOT
    path.write_bytes(raw)
    code, _, err = _validate(path, capsys)  # the file alone (JSON is taken for another tool's results)
    assert code == 2 and (f"{path}: {says}" in err or case == "json"), err
    code, _, err = _validate(camp, capsys)  # inside its campaign: the same line, not "missing"
    assert code == 2 and f"{path.resolve()}: {says}" in err, err
    assert main(["summary", str(camp), "--json"]) == 2
    assert f"{path.resolve()}: {says}" in capsys.readouterr().err


def test_crlf_captures_read_like_lf(camp, capsys):
    for p in (camp / "runs" / "phases-serial" / "metrics").glob("*.prom"):
        p.write_bytes(p.read_bytes().replace(b"\n", b"\r\n"))
    assert main(["summary", str(camp), "--json"]) == 0
    crlf = json.loads(capsys.readouterr().out)
    shutil.rmtree(camp)
    shutil.copytree(MINI, camp)
    assert main(["summary", str(camp), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == crlf


def test_openmetrics_exemplar_error_names_its_own_line():
    from benchbook.errors import InputError
    from benchbook.metrics import prometheus

    text = (
        "# TYPE a histogram\n"
        'a_bucket{le="1.0"} 0 # {a="b"} 0.5\n'
        'a_bucket{le="2.0"} 2 # {{a="c"} 0.5\n'
        'a_bucket{le="+Inf"} 3\n'
        "a_count 3\na_sum 2\n# EOF\n"
    )
    with pytest.raises(InputError) as e:
        prometheus.parse(text, "x.prom")
    assert e.value.location == "line 3"


# --------------------------------------------------------------------------- restarts and durations


def _prom(camp: Path, name: str, fn) -> None:
    p = camp / "runs" / "phases-serial" / "metrics" / name
    p.write_text(fn(p.read_text()))


def _excluded(camp: Path, capsys) -> str:
    code, out, err = _validate(camp, capsys)
    assert code == 0, err
    return out


def test_restart_seen_by_process_start_time_even_when_counters_grew(camp, capsys):
    _prom(
        camp,
        "s1.prom",
        lambda t: t + "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds 1700000000\n",
    )
    _prom(
        camp,
        "s2.prom",
        lambda t: t + "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds 1700000100\n",
    )
    out = _excluded(camp, capsys)
    assert (
        "excluded $.samples[1] (short repeat 1): engine restarted between the snapshots: "
        "process_start_time_seconds went from 1.7e+09 to 1.7e+09" in out
    )


def test_restart_seen_by_a_counter_the_split_does_not_read(camp, capsys):
    extra = "# TYPE pocket_preemptions_total counter\npocket_preemptions_total {}\n"
    _prom(camp, "s1.prom", lambda t: t + extra.format(7))
    _prom(camp, "s2.prom", lambda t: t + extra.format(2))
    out = _excluded(camp, capsys)
    assert "excluded $.samples[1] (short repeat 1): engine restarted between the snapshots: counter " in out
    assert "pocket_preemptions_total went from 7 to 2" in out


def test_restart_seen_by_a_new_created_time(camp, capsys):
    extra = "# TYPE pocket_errors counter\npocket_errors_total 0\npocket_errors_created {}\n"
    _prom(camp, "s1.prom", lambda t: t + extra.format(1700000000))
    _prom(camp, "s2.prom", lambda t: t + extra.format(1700000050))
    assert "pocket_errors_created went from 1.7e+09 to 1.7e+09" in _excluded(camp, capsys)


@pytest.mark.parametrize("ttft", ["0.5000000001", "0.5000000000000001"])
def test_a_ttft_delta_too_short_for_a_rate_is_excluded(camp, ttft, capsys):
    _prom(camp, "s2.prom", lambda t: re.sub(r"pocket_ttft_seconds_sum \S+", f"pocket_ttft_seconds_sum {ttft}", t))
    out = _excluded(camp, capsys)
    assert re.search(r"excluded \$\.samples\[1\] \(short repeat 1\): TTFT delta \S+ s is below 1e-06 s", out), out
    assert "inf" not in out


@pytest.mark.parametrize("end", [3.0 + 1e-12, 3.0 + 5e-324])
def test_a_latency_too_short_for_a_rate_is_excluded(camp, end, capsys):
    p = camp / "runs" / "req-serial" / "requests.json"
    doc = json.loads(p.read_text())
    doc["requests"][1]["end"] = end
    p.write_text(json.dumps(doc))
    out = _excluded(camp, capsys)
    assert re.search(r"excluded \$\.requests\[1\]: (latency \S+ s .* is below 1e-06 s|end \S+ equals start)", out), out


def test_server_log_without_startup_line_is_rejected_by_validate(camp, capsys):
    log = camp / "runs" / "req-batch" / "server.log"
    log.write_text("[server] loading /toy\n[server] listening on :8080\n")
    code, _, err = _validate(camp, capsys)
    assert code == 2
    assert f"{log}: whole file: no startup line 'batch width … prefill budget …'" in err


def _ndjson(camp: Path) -> Path:
    run = camp / "runs" / "req-serial"
    recs = json.loads((run / "requests.json").read_text())["requests"]
    p = run / "requests.ndjson"
    p.write_text("".join(json.dumps({"round": 0, **r}) + "\n" for r in recs))
    return p


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (lambda line: line[:-1] + ', "deep": ' + "[" * 5000 + "]" * 5000 + "}", r"line 1: not valid JSON"),
        (
            lambda line: line.replace('"short"', '"sh\\u0000ort"', 1),
            r"line 3: prompt_class contains the control character \\x00",
        ),
        (
            lambda line: line.replace('"length"', '"len\\u001bgth"', 1),
            r"line 3: finish_reason contains the control character \\x1b",
        ),
    ],
    ids=["nesting", "NUL in prompt class", "ESC in finish reason"],
)
def test_request_log_faults(camp, edit, says, capsys):
    p = _ndjson(camp)
    assert _validate(camp, capsys)[0] == 0
    lines = p.read_text().splitlines(keepends=True)
    i = 0 if "not valid JSON" in says else 2
    lines[i] = edit(lines[i].rstrip("\n")) + "\n"
    p.write_text("".join(lines))
    code, out, err = _validate(camp, capsys)
    assert code == 2 and re.search(re.escape(f"{p}: ") + says, err), err
    assert not RAW_CONTROL.search(out + err.replace("\n", ""))


@pytest.mark.parametrize("ms", [5e-324, 1e-9])
def test_a_pd_window_too_short_for_a_rate_is_bad_input(tmp_path, ms, capsys):
    c = tmp_path / "pd"
    shutil.copytree(PD, c)
    path = c / "runs" / "cap1-n320" / "pd.json"
    doc = json.loads(path.read_text())
    doc["windows"]["whole"]["common"]["Benchmark Duration"] = ms
    path.write_text(json.dumps(doc))
    code, _, err = _validate(c, capsys)
    assert code == 2, err
    assert f"{path}: $.windows.whole.common.Benchmark Duration: " in err and "is below 1e-06 s" in err
