"""Gzip-compressed captures (``*.prom.gz``, ``*_scrapes.jsonl.gz``): read as they are wherever the plain
files are read, bounded like them; ``benchbook capture --compress`` writes them; ``init`` keeps them.

The inputs are the real vLLM H200 campaign's own files (../shared/realdata/vllm_h200_llama8b), gzipped
in tmp_path: every figure must be the one the plain files give."""

from __future__ import annotations

import gzip
import json
import re
import shutil
import subprocess
import sys
import zlib
from argparse import Namespace
from pathlib import Path

import pytest

import fake_openai
from benchbook.commands import init as init_cmd
from benchbook.errors import InputError
from benchbook.ingest import run_layout
from benchbook.jsonfile import gzip_bytes, json_lines, read_bytes, read_head, validate
from benchbook.metrics import prometheus
from realdata import realdata

H200 = realdata("vllm_h200_llama8b")
POINTS = ("conc1", "conc8")
BENCH = str(Path(__file__).with_name("sweep_bench.py"))  # a stand-in for vllm bench serve


def _bb(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "benchbook.commands.cli", *args], capture_output=True, text=True, timeout=timeout
    )


def _run_folder(root: Path, compress: bool) -> Path:
    """The batch arm's results and /metrics captures of two points (before, after, the scrape series),
    with the server log, plain or each capture gzipped."""
    (root / "results").mkdir(parents=True)
    (root / "metrics").mkdir()
    shutil.copy(H200 / "batch" / "server.log", root)
    for pt in POINTS:
        shutil.copy(H200 / "batch" / "results" / f"bench_{pt}.json", root / "results")
        for name in (f"{pt}_before.prom", f"{pt}_after.prom", f"{pt}_scrapes.jsonl"):
            raw = (H200 / "batch" / "metrics" / name).read_bytes()
            if compress:
                (root / "metrics" / f"{name}.gz").write_bytes(gzip_bytes(raw))
            else:
                (root / "metrics" / name).write_bytes(raw)
    return root


def test_a_real_vllm_scrape_is_about_a_tenth_gzipped_and_reads_back_the_same(tmp_path):
    sizes = []
    for name in ("conc8_before.prom", "conc64_after.prom", "conc8_scrapes.jsonl"):
        src = H200 / "batch" / "metrics" / name
        raw = src.read_bytes()
        gz = tmp_path / f"{name}.gz"
        gz.write_bytes(gzip_bytes(raw))
        sizes.append((name, len(raw), gz.stat().st_size))
        assert read_bytes(gz) == raw
        assert gzip_bytes(raw) == gz.read_bytes()  # deterministic: the same bytes every time
        assert gz.read_bytes()[4:8] == b"\0\0\0\0"  # header mtime 0
        if name.endswith(".prom"):
            plain, packed = prometheus.read(src), prometheus.read(gz)
            assert packed.values == plain.values and packed.types == plain.types
            assert read_head(gz, 64) == raw[:64]
        else:
            assert [r for _n, r in json_lines(gz)] == [r for _n, r in json_lines(src)]
    print("\n" + "; ".join(f"{n}: {a} -> {b} bytes ({a / b:.1f}x)" for n, a, b in sizes), file=sys.stderr)
    prom_sizes = [(a, b) for n, a, b in sizes if n.endswith(".prom")]
    assert all(50_000 < a < 56_000 and 3_000 < b < 9_000 for a, b in prom_sizes), sizes


def test_the_run_layout_pairs_gzipped_captures_by_their_stem(tmp_path):
    rf = run_layout.read_run_folder(_run_folder(tmp_path / "batch", compress=True), "batch", "1")
    got = {p.name: (p.before.name, p.after.name, [e.name for e in p.extra]) for p in rf.points}
    assert got == {pt: (f"{pt}_before.prom.gz", f"{pt}_after.prom.gz", [f"{pt}_scrapes.jsonl.gz"]) for pt in POINTS}
    assert sorted(c.name for c in rf.captures) == sorted(
        f"{pt}_{s}.prom.gz" for pt in POINTS for s in ("after", "before")
    )


def _without_names(doc):
    """A summary with file names and hashes made comparable between the plain and the gzipped copy."""
    text = json.dumps(doc, sort_keys=True)
    text = re.sub(r"\.(prom|jsonl)\.gz", r".\1", text)
    return re.sub(r'"[0-9a-f]{64}"', '"<sha256>"', text)


def test_init_keeps_them_compressed_and_every_figure_is_the_plain_files(tmp_path):
    from benchbook.commands.summary import build

    sums = {}
    for compress in (False, True):
        src = _run_folder(tmp_path / f"in-{compress}" / "batch", compress)
        dest = tmp_path / f"out-{compress}" / "camp"  # one name: the summary carries it
        assert init_cmd.run(Namespace(dir=dest, inputs=[src], title="t", question=None, quiet=True)) == 0
        copied = sorted(p.name for p in (dest / "runs" / "batch" / "1" / "metrics").iterdir())
        assert copied == sorted(p.name for p in (src / "metrics").iterdir())  # kept as they were given
        for p in (src / "metrics").iterdir():
            assert (dest / "runs" / "batch" / "1" / "metrics" / p.name).read_bytes() == p.read_bytes()
        manifest = json.loads((dest / "campaign.json").read_text())
        for run in (r for r in manifest["runs"] if r["harness"] == "results"):
            doc = json.loads((dest / run["path"] / "results.json").read_text())
            assert doc["metrics_before"].endswith("_before.prom" + ".gz" * compress), doc
        sums[compress] = build(dest)
        assert _bb("validate", str(dest)).returncode == 0
    plain, packed = sums[False], sums[True]
    assert plain["results_ladder"] and _without_names(packed["results_ladder"]) == _without_names(
        plain["results_ladder"]
    )
    assert _without_names(packed) == _without_names(plain)


def _bomb(path: Path, decompressed: int) -> None:
    z = zlib.compressobj(1, zlib.DEFLATED, 31)
    block = b"vllm:num_requests_running 0\n" * (1 << 15)
    with open(path, "wb") as f:
        written = 0
        while written < decompressed:
            f.write(z.compress(block))
            written += len(block)
        f.write(z.flush())


def test_a_gzip_bomb_truncated_or_fake_gzip_is_bad_input_naming_the_file(tmp_path):
    good = gzip_bytes((H200 / "batch" / "metrics" / "conc8_before.prom").read_bytes())
    cases = {
        "truncated.prom.gz": (good[: len(good) // 2], "truncated gzip data"),
        "fake.prom.gz": (b"# TYPE x counter\nx 1\n", "named .gz but not gzip data"),
        "trailing.prom.gz": (good + b"junk", "bytes after the end of the gzip data"),
        "corrupt.prom.gz": (good[:20] + bytes(64) + good[84:], "not valid gzip data"),
    }
    for name, (data, msg) in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(InputError, match=msg) as e:
            prometheus.read(tmp_path / name)
        assert name in str(e.value)
        r = _bb("validate", str(tmp_path / name))
        assert r.returncode == 2 and name in r.stderr and msg in r.stderr, r.stderr
    # a bomb: 300 MiB of /metrics lines in ~1 MiB of gzip, above the 256 MiB limit of one capture
    _bomb(tmp_path / "bomb.prom.gz", 300 * 2**20)
    assert (tmp_path / "bomb.prom.gz").stat().st_size < 4 * 2**20
    r = _bb("validate", str(tmp_path / "bomb.prom.gz"))
    assert r.returncode == 2 and "bomb.prom.gz: -: decompresses to more than the 268435456-byte limit" in r.stderr
    # the same bound on a scrape series (the events / JSON Lines limit of its reader)
    (tmp_path / "s.jsonl.gz").write_bytes(gzip.compress(b'{"t": 1, "text": "x 1"}\n' * 100, mtime=0))
    with pytest.raises(InputError, match="decompresses to more than the 1000-byte limit"):
        list(json_lines(tmp_path / "s.jsonl.gz", limit=1000))


def test_capture_compress_writes_prom_gz_and_init_reads_them(tmp_path):
    root = tmp_path / "caps"
    with fake_openai.serving() as (url, _st):
        common = ["--url", url, "--model", "m", "--max-tokens", "2", "--warmup", "0", "--arm", "a", "--run", "p1"]
        for args in (
            ["phases", *common, "--repeats", "1"],
            ["ladder", *common, "--concurrency", "1,2"],
            ["run", "--metrics", url, "--every", "0.2", "--arm", "a", "--run", "p1", "--point", "c1", "--",
             sys.executable, BENCH, "--base-url", url, "--num-prompts", "2", "--max-concurrency", "1",
             "--result-dir", str(tmp_path / "res"), "--result-filename", "c1.json"],
            ["sweep", "--url", url, "--every", "0.2", "--arm", "a", "--run", "p1", "--concurrency", "2",
             "--point-prefix", "s", "--", sys.executable, BENCH, "--base-url", url, "--num-prompts", "4",
             "--max-concurrency", "{concurrency}", "--result-dir", str(tmp_path / "res"),
             "--result-filename", "{point}.json"],
        ):  # fmt: skip
            cut = args.index("--") if "--" in args else len(args)
            # the phases run apart: the small server has no TTFT histograms for a phase split to read
            out = tmp_path / "phases-caps" if args[0] == "phases" else root
            r = _bb("capture", *args[:cut], "--compress", "--out", str(out), *args[cut:])
            assert r.returncode == 0, r.stderr
    run = root / "a" / "p1"
    for folder in (tmp_path / "phases-caps" / "a" / "p1" / "phases", *(run / p for p in ("ladder", "c1", "s2"))):
        cap = json.loads((folder / "capture.json").read_text())
        validate(cap, "capture", folder / "capture.json")
        assert cap["compressed"] is True
        files = sorted((folder / "metrics").iterdir())
        assert files and all(f.name.endswith(".prom.gz") for f in files), files
        for f in files:
            assert f.read_bytes()[:2] == b"\x1f\x8b" and f.read_bytes()[4:8] == b"\0\0\0\0"
            assert "vllm:request_success_total" in gzip.decompress(f.read_bytes()).decode()
    cap = json.loads((run / "ladder" / "capture.json").read_text())
    assert cap["steps"][0]["metrics_before"] == "metrics/single.before.prom.gz"
    snaps = json.loads((run / "c1" / "capture.json").read_text())["snapshots"]
    assert [s["file"] for s in snaps][:: len(snaps) - 1] == ["metrics/before.prom.gz", "metrics/after.prom.gz"]
    # init reads the arm folder as it lies (the phases, ladder and point runs) and keeps the .gz files
    r = _bb("init", str(tmp_path / "camp"), str(root))
    assert r.returncode == 0, r.stderr[-3000:]
    kept = sorted(p.name for p in (tmp_path / "camp" / "runs" / "a" / "p1" / "ladder" / "metrics").iterdir())
    assert kept == sorted(p.name for p in (run / "ladder" / "metrics").iterdir())
    r = _bb("summary", str(tmp_path / "camp"), "--json")
    assert r.returncode == 0, r.stderr[-3000:]
    s = json.loads(r.stdout)
    assert "ladder_tok_s" in r.stdout and s["format"].startswith("benchbook.summary/")
