"""Locks that clobber nothing (issue 36, item 3): ``OUT/.benchbook-render.lock`` and
``.benchbook-write.lock`` are opened only as regular files of the output folder (``O_NOFOLLOW``,
relative to the folder, never a FIFO, device or second name of a file elsewhere); anything else is
bad input (exit 2, the path and why) and nothing outside OUT is created, truncated or written."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from benchbook.commands.cli import main
from benchbook.errors import InputError, LockedError
from benchbook.pipeline import writes

MINI = Path(__file__).resolve().parent / "fixtures" / "mini"


@pytest.fixture
def ws(tmp_path):
    shutil.copytree(MINI, tmp_path / "data" / "mini")
    (tmp_path / "out").mkdir()
    victim = tmp_path / "elsewhere" / "notes.txt"
    victim.parent.mkdir()
    victim.write_text("keep me\n")
    return tmp_path, victim


@pytest.mark.parametrize("lock", [writes.RENDER_LOCK, writes.FOLDER_LOCK])
def test_a_lock_symlinked_to_a_file_outside_out_is_refused_and_the_file_kept(ws, lock, capsys):
    tmp, victim = ws
    (tmp / "out" / lock).symlink_to(os.path.relpath(victim, tmp / "out"))
    rc = main(["render", str(tmp / "data" / "mini"), "--out", str(tmp / "out"), "--page", "baseline"])
    assert rc == 2
    err = capsys.readouterr().err
    assert f"{lock}: -: is a symlink" in err and "never followed" in err
    assert victim.read_text() == "keep me\n"  # not truncated, no pid written into it
    assert not (tmp / "out" / "baseline.html").exists()


@pytest.mark.parametrize("lock", [writes.RENDER_LOCK, writes.FOLDER_LOCK])
def test_a_dangling_lock_symlink_creates_nothing_outside_out(ws, lock, capsys):
    tmp, _ = ws
    target = tmp / "elsewhere" / "planted.lock"  # its folder exists: a followed link would create it
    (tmp / "out" / lock).symlink_to(target)
    rc = main(["render", "--all", str(tmp / "data"), "--out", str(tmp / "out"), "--page", "baseline"])
    assert rc == 2, capsys.readouterr().err
    assert "is a symlink" in capsys.readouterr().err
    assert not (tmp / "elsewhere" / "planted.lock").exists() and sorted(os.listdir(tmp / "elsewhere")) == ["notes.txt"]


def test_a_hard_link_a_fifo_and_a_folder_at_the_lock_path_are_refused(ws):
    tmp, victim = ws
    out = tmp / "out"
    os.link(victim, out / writes.RENDER_LOCK)  # the same inode as a file outside OUT
    with pytest.raises(InputError, match="has 2 names"), writes.render_lock(out):
        pass
    assert victim.read_text() == "keep me\n"
    (out / writes.RENDER_LOCK).unlink()
    os.mkfifo(out / writes.FOLDER_LOCK)  # would block an open without O_NONBLOCK
    with pytest.raises(InputError, match="not a regular file"), writes.folder_lock(out):
        pass
    (out / writes.FOLDER_LOCK).unlink()
    (out / writes.FOLDER_LOCK).mkdir()
    with pytest.raises(InputError, match=writes.FOLDER_LOCK), writes.folder_lock(out):
        pass


def test_a_plain_lock_still_locks_and_names_its_holder(tmp_path):
    with writes.render_lock(tmp_path):
        assert (tmp_path / writes.RENDER_LOCK).read_text() == f"{os.getpid()}\n"
        with pytest.raises(LockedError, match=f"pid {os.getpid()}"), writes.render_lock(tmp_path):
            pass
    with writes.render_lock(tmp_path), writes.folder_lock(tmp_path):  # a stale file of our own is reused
        pass
