"""Each input file is read once per analysis (lib/benchbook/reads.py): one ``analyse()`` of the real
H200 campaign laid out as arm/run folders (`benchbook init` of ../shared/realdata/vllm_h200_llama8b)
opens each of its files at most once to read it (the 19 result files, the 98 captures, the 4
``gpu.json`` and their samples among them), counted at the operating system's open (so a read
outside the bounded reader counts too); a look at a file's first bytes to recognise it
(``jsonfile.read_head``) is counted apart. Before the read cache the same analysis parsed the 4
``gpu_samples.csv`` 23 times, each result file twice, 64 of the captures twice and a ``gpu.json`` 11
times."""

from __future__ import annotations

import builtins
import io
import os
import sys
from argparse import Namespace
from collections import Counter
from pathlib import Path

import pytest

from benchbook import jsonfile
from benchbook.commands import init as init_cmd
from benchbook.errors import InputError
from benchbook.reads import ReadCache, cached, current
from realdata import realdata

H200 = realdata("vllm_h200_llama8b")
ARMS = ("serial", "batch", "eager", "noprefix")


class Opens:
    """Files under ``root`` opened for reading, while installed: ``reads`` (whole reads) and ``peeks``
    (``jsonfile.read_head``), per path relative to ``root``."""

    def __init__(self, root: Path):
        self.root = root.resolve()
        self.reads: Counter[str] = Counter()
        self.peeks: Counter[str] = Counter()

    def _record(self, path) -> None:
        try:
            p = Path(os.fsdecode(path)).resolve()
        except TypeError:  # a file descriptor
            return
        if not (p.is_relative_to(self.root) and p.is_file()):
            return
        f, peek = sys._getframe(2), False
        while f is not None and not peek:
            peek = f.f_code is jsonfile.read_head.__code__
            f = f.f_back
        (self.peeks if peek else self.reads)[p.relative_to(self.root).as_posix()] += 1

    def install(self, monkeypatch) -> None:
        os_open, io_open = os.open, io.open

        def opened(path, flags, *a, **k):
            if not flags & (os.O_WRONLY | os.O_RDWR):
                self._record(path)
            return os_open(path, flags, *a, **k)

        def opened_io(file, mode="r", *a, **k):
            if isinstance(file, (str, bytes, os.PathLike)) and not set(mode) & set("wax+"):
                self._record(file)
            return io_open(file, mode, *a, **k)

        monkeypatch.setattr(os, "open", opened)
        monkeypatch.setattr(io, "open", opened_io)
        monkeypatch.setattr(builtins, "open", opened_io)


@pytest.fixture(scope="module")
def h200(tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("h200") / "campaign"
    rc = init_cmd.run(Namespace(dir=dest, inputs=[H200 / a for a in ARMS], title=None, question=None, quiet=True))
    assert rc == 0
    return dest


def test_one_analysis_reads_each_input_file_once(h200, monkeypatch):
    from benchbook.analysis.campaign_analysis import analyse
    from benchbook.ingest.campaign import load_campaign

    camp = load_campaign(h200)  # campaign.json: read by the loader, before the analysis
    opens = Opens(h200)
    opens.install(monkeypatch)
    an = analyse(camp)
    monkeypatch.undo()

    twice = {f: n for f, n in opens.reads.items() if n > 1}
    assert twice == {}, f"read more than once in one analysis: {twice}"
    read = set(opens.reads)
    # what the analysis must read, each once: every result file, capture, gpu run and its samples
    files = {p.relative_to(h200).as_posix() for p in h200.rglob("*") if p.is_file()}
    wanted = (
        ("results/bench_*.json", 19),  # the load points' result files
        ("metrics/phase_*.prom", 64),  # the phase harness's captures
        ("metrics/conc*_*.prom", 34),  # the engine's /metrics around each load point
        ("gpu.json", 4),
        ("gpu_samples.csv", 4),
    )
    for pattern, n in wanted:
        want = {f for f in files if Path(f).match(pattern)}
        assert len(want) == n and want <= read, (pattern, sorted(want - read)[:3])
    assert {f for f in files if f.endswith("host_samples.csv")} <= read
    # a peek names the file a reader then reads whole: the GPU samples are recognised by their head
    assert {f for f in opens.peeks if f.endswith("gpu_samples.csv")} <= read
    # the analysis's own cache counted the same reads, and answered the repeats without reading
    assert an.reads is not None and an.reads.entries == {}  # dropped once the analysis was done
    assert max(an.reads.reads.values()) == 1 and an.reads.hits >= 19 + 64 + 19
    assert analyse(camp) is an  # one analysis per campaign and arguments: asked again, nothing is read


def test_a_file_changed_on_disk_is_read_again(tmp_path):
    f = tmp_path / "x.txt"
    f.write_text("one")
    cache, reads = ReadCache(), []

    def read():
        reads.append(f.read_text())
        return reads[-1]

    with cache.active():
        assert current() is cache
        assert cached("text", f, read) == cached("text", f, read) == "one"
        f.write_text("three")  # another size: another file
        assert cached("text", f, read) == "three"
        assert cached("other reader", f, read) == "three"  # another reader of the same file reads it
    assert current() is None and reads == ["one", "three", "three"]
    assert cache.reads[str(f)] == 3 and cache.hits == 1
    assert cached("text", f, read) == "three" and len(reads) == 4  # outside an analysis: read each time


def test_a_failed_read_is_not_kept(tmp_path):
    missing = tmp_path / "gone.json"
    cache = ReadCache()
    with cache.active():
        for _ in range(2):  # each ask fails the same way, naming the file
            with pytest.raises(InputError) as e:
                cached("json", missing, lambda: jsonfile.load_json(missing))
            assert "gone.json" in str(e.value)
    assert cache.entries == {} and cache.reads == Counter()


def test_paths_resolve_once_per_analysis_and_every_time_outside_one(tmp_path, monkeypatch):
    """reads.resolved: the containment check's realpath, once per path in an analysis (the campaign folder
    was resolved again for every snapshot it names), every time outside one; release() forgets it."""
    from benchbook import reads

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    link = tmp_path / "camp"
    link.symlink_to(tmp_path / "a")
    cache = reads.ReadCache()
    with cache.active():
        assert reads.resolved(link) == tmp_path / "a"
        link.unlink()
        link.symlink_to(tmp_path / "b")
        assert reads.resolved(link) == tmp_path / "a"  # one analysis: the folder as it first resolved
        monkeypatch.chdir(tmp_path)
        assert reads.resolved("camp") == tmp_path / "b"  # a relative path is keyed by the working folder too
    assert reads.resolved(link) == tmp_path / "b"  # outside an analysis: every time
    cache.release()
    with cache.active():
        assert reads.resolved(link) == tmp_path / "b"
