"""pipeline.writes: a page's three files are plain files that change together under SIGKILL at any
point (rolled forward by the next render or a reader), leftovers are cleaned by the next render, one
render per output folder (the lock), stale kernel folders."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from benchbook.errors import EXIT_LOCKED, LockedError
from benchbook.pipeline import writes

SUFFIXES = (".html", ".ipynb", ".values.json")
FS_EVENTS = (
    "open",
    "os.rename",
    "os.symlink",
    "os.link",
    "os.mkdir",
    "os.remove",
    "os.rmdir",
    "os.chmod",
    "shutil.rmtree",
    "tempfile.mkdtemp",
    "tempfile.mkstemp",
)

# Publish generation `gen` of page "p" in OUT, SIGKILL-ing itself just before the K-th filesystem
# operation (audit events fire before the operation runs). Prints "done" when it was not killed.
KILLER = """
import os, signal, sys
from pathlib import Path
from benchbook.pipeline import writes
out, gen, k, events = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), set(sys.argv[4].split(","))
files = {s: f"{gen} {s}".encode() for s in (".html", ".ipynb", ".values.json")}
seen = 0
def hook(event, args):
    global seen
    if event in events:
        if event == "open" and not (len(args) > 1 and isinstance(args[1], str) and set(args[1]) & set("wxa+")):
            return
        seen += 1
        if seen == k:
            os.kill(os.getpid(), signal.SIGKILL)
sys.addaudithook(hook)
writes.publish(out, "p", files)
print("done")
"""


def _names(out: Path) -> set[str | None]:
    """The generation each of the three names shows right now (None: the name does not resolve)."""
    seen = set()
    for s in SUFFIXES:
        f = out / f"p{s}"
        seen.add(f.read_text().split(" ")[0] if f.exists() else None)
    return seen


def _state(out: Path) -> set[str | None]:
    """What the three names show once a reader (or the next render) has repaired the set."""
    writes.repair(out)
    return _names(out)


def _publish(out: Path, gen: str) -> None:
    writes.publish(out, "p", {s: f"{gen} {s}".encode() for s in SUFFIXES})


def _legacy(out: Path, gen: str) -> None:  # real files without a manifest, as the first benchbook wrote them
    out.mkdir(parents=True, exist_ok=True)
    for s in SUFFIXES:
        (out / f"p{s}").write_text(f"{gen} {s}")


def _link_layout(out: Path, gen: str) -> None:
    """The layout of the benchbook before this one: names are links into .pages/p -> p@gen/."""
    g = out / writes.GENERATIONS / f"p@{gen}"
    g.mkdir(parents=True)
    for s in SUFFIXES:
        (g / f"p{s}").write_text(f"{gen} {s}")
        (out / f"p{s}").symlink_to(f"{writes.GENERATIONS}/p/p{s}")
    (out / writes.GENERATIONS / "p").symlink_to(f"p@{gen}")


def _kill_at_every_point(out: Path, before: set) -> int:
    """Kill a publish of generation "new" at every filesystem operation in turn; after each kill the
    three names show the old generation or the new one, never a mix. Returns the number of points."""
    k = 0
    while True:
        k += 1
        r = subprocess.run(
            [sys.executable, "-c", KILLER, str(out), "new", str(k), ",".join(FS_EVENTS)],
            capture_output=True,
            text=True,
            check=False,
        )
        mixed = _names(out) not in (before, {"new"})
        assert not mixed or writes.torn(out, "p"), f"killed at operation {k}: a mix the manifest does not flag"
        state = _state(out)
        assert state in (before, {"new"}), f"killed at operation {k}: the page shows {state}"
        assert writes.torn(out, "p") == []
        if r.returncode == 0:
            assert "done" in r.stdout and state == {"new"}
            return k
        assert r.returncode == -9, r.stderr
        if state == {"new"}:  # the commit happened; publish the old again to keep killing the switch
            _publish(out, "old")


@pytest.mark.parametrize("start", ["page sets", "legacy files", "link layout", "no page yet"])
def test_sigkill_at_any_point_leaves_old_three_or_new_three(tmp_path, start):
    out = tmp_path / "out"
    if start == "page sets":
        _publish(out, "old")
    elif start == "legacy files":
        _legacy(out, "old")
    elif start == "link layout":
        _link_layout(out, "old")
    before = {"old"} if start != "no page yet" else {None}
    points = _kill_at_every_point(out, before)
    assert points > 8  # every write, fsync'd rename and removal was a kill point
    # the next render cleans what the killed ones left (before it publishes): plain files, their
    # manifest, no temporary file, no generation folder
    writes.clean_folder(out)
    _publish(out, "next")
    assert _names(out) == {"next"} and writes.torn(out, "p") == []
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [".benchbook-write.lock", ".p.set.json", *(f"p{s}" for s in SUFFIXES)]
    )
    assert not any((out / f"p{s}").is_symlink() for s in SUFFIXES)


def test_publishing_one_page_leaves_another_pages_temporary_files_alone(tmp_path):
    # render --all -j 2 writes two pages of one campaign at once: publishing one must not remove the
    # temporary file the other is about to rename into place (seen as FileNotFoundError on .baseline.key)
    out = tmp_path / "out"
    out.mkdir()
    (out / ".baseline.key.abc123.tmp").write_text("being written by another worker")
    _publish(out, "a")
    assert (out / ".baseline.key.abc123.tmp").exists()


def test_published_names_are_plain_files_that_survive_a_copy(tmp_path):
    """Names were links into .pages/<generation>/: rsync -a, zip -y or cp -P of the folder (or of one
    page's files) published a dangling link. Now each name is a plain file."""
    out = tmp_path / "out"
    _link_layout(out, "a")  # a folder written by the previous layout is converted by the next publish
    _publish(out, "b")
    assert not any((out / f"p{s}").is_symlink() for s in SUFFIXES)
    writes.clean_folder(out)
    assert not (out / writes.GENERATIONS).exists()  # no generation any name points into: gone
    one = tmp_path / "one-page"
    one.mkdir()
    subprocess.run(["cp", "-P", *(str(out / f"p{s}") for s in SUFFIXES), str(one)], check=True)
    assert _names(one) == {"b"}
    assert writes.torn(out, "p") == []
    (out / "p.ipynb").write_text("edited by hand")
    assert writes.torn(out, "p") == ["p.ipynb"]  # the manifest tells a changed member


def test_clean_folder_removes_leftovers_only(tmp_path):
    out = tmp_path / "out"
    _publish(out, "a")
    (out / ".p.html.deadbeef.tmp").write_text("half")  # a killed publish that never committed
    (out / ".index.html.abc.tmp").write_text("half")
    (out / "notes.txt").write_text("the user's own file")
    removed = writes.clean_folder(out)
    assert removed == sorted([".index.html.abc.tmp", ".p.html.deadbeef.tmp"])
    assert _names(out) == {"a"} and (out / "notes.txt").is_file()


def test_a_committed_set_is_rolled_forward_by_the_next_render(tmp_path):
    """Killed between two renames: the names show a mix, the manifest flags it, and clean_folder (the
    next render) finishes the switch rather than deleting the pending temp files."""
    out = tmp_path / "out"
    _publish(out, "old")
    staged = {}
    for s in SUFFIXES:
        tmp = f".p{s}.cafe.tmp"
        (out / tmp).write_text(f"new {s}")
        staged[f"p{s}"] = {"tmp": tmp, "sha256": hashlib.sha256(f"new {s}".encode()).hexdigest()}
    writes.set_path(out, "p").write_text(json.dumps({"files": staged}))
    os.replace(out / ".p.html.cafe.tmp", out / "p.html")  # the first rename happened, then the kill
    assert _names(out) == {"old", "new"} and writes.torn(out, "p") == ["p.ipynb", "p.values.json"]
    assert writes.clean_folder(out) == []
    assert _names(out) == {"new"} and writes.torn(out, "p") == []


# --------------------------------------------------------------------------- the lock

HOLDER = """
import sys
from pathlib import Path
from benchbook.pipeline import writes
with writes.render_lock(Path(sys.argv[1])):
    print("locked", flush=True)
    sys.stdin.read()
"""


@pytest.fixture
def held(tmp_path):
    """Another process holding the render lock of tmp_path/out until its stdin closes."""
    out = tmp_path / "out"
    out.mkdir()
    p = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(out)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert p.stdout.readline().strip() == "locked"
    yield out, p
    p.stdin.close()
    p.wait()


def test_second_render_into_a_locked_folder_exits_5(held, tmp_path, capsys):
    from benchbook.commands.cli import main

    out, holder = held
    data = tmp_path / "data"
    data.mkdir()
    assert main(["render", "--all", str(data), "--out", str(out)]) == EXIT_LOCKED == 5
    err = capsys.readouterr().err
    assert f"another benchbook render (pid {holder.pid}) is writing into this folder" in err
    assert not (out / "index.html").exists()  # nothing written, no mixed index


def test_wait_takes_the_lock_when_the_other_render_ends(held):
    out, holder = held
    with pytest.raises(LockedError):
        with writes.render_lock(out):
            pass
    got = threading.Event()

    def waiter():
        with writes.render_lock(out, wait=True):
            got.set()

    t = threading.Thread(target=waiter)
    t.start()
    holder.stdin.close()
    t.join()
    assert got.is_set()


# --------------------------------------------------------------------------- kernel folders


def _kernel_dir(tmp: Path, name: str) -> Path:
    d = tmp / f"{writes.KERNEL_PREFIX}{name}"
    d.mkdir()
    return d


def test_stale_kernel_folders_are_removed_and_live_ones_kept(tmp_path):
    dead = _kernel_dir(tmp_path, "dead")
    (dead / writes.KERNEL_OWNER).write_text("")  # its render is gone: nobody holds the lock
    live = _kernel_dir(tmp_path, "live")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl,sys; f=open(sys.argv[1],'w'); fcntl.flock(f, fcntl.LOCK_EX); print('x', flush=True); "
            "sys.stdin.read()",
            str(live / writes.KERNEL_OWNER),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout.readline().strip() == "x"
    old_dead = _kernel_dir(tmp_path, "olddead")  # an older benchbook's folder: sockets, no owner lock
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(old_dead / "kernel-1"))
    s.close()  # bound, never listening: refuses connections like a dead kernel's socket
    old_live = _kernel_dir(tmp_path, "oldlive")
    listening = socket.socket(socket.AF_UNIX)
    listening.bind(str(old_live / "kernel-1"))
    listening.listen()
    try:
        assert writes.clean_kernel_dirs(tmp_path) == [dead.name, old_dead.name]
        assert live.is_dir() and old_live.is_dir()
    finally:
        holder.stdin.close()
        holder.wait()
        listening.close()


def test_a_killed_render_leaves_nothing_after_the_next_render(tmp_path, smoke_notebook):
    """SIGKILL a real `benchbook render` as it launches its kernel; the next render removes the
    kernel folder it left and writes the page."""
    tmp = tmp_path / "t"
    tmp.mkdir()
    out = tmp_path / "o"
    campaign = tmp_path / "c"
    campaign.mkdir()
    (campaign / "campaign.json").write_text(json.dumps({"title": "c", "arms": {}, "runs": []}))
    notebooks = tmp_path / "nb"
    notebooks.mkdir()
    (notebooks / "baseline.ipynb").write_bytes(smoke_notebook.read_bytes())
    argv = ["render", str(campaign), "--out", str(out), "--page", "baseline", "--notebooks", str(notebooks)]
    cli = f"import sys; from benchbook.commands.cli import main; sys.exit(main({argv!r}))"
    kill_at_kernel_launch = (
        "import os, signal, sys\n"
        "def hook(e, a):\n"
        "    if e == 'subprocess.Popen':\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        "sys.addaudithook(hook)\n" + cli
    )
    env = {**os.environ, "TMPDIR": str(tmp)}
    killed = subprocess.run([sys.executable, "-c", kill_at_kernel_launch], env=env, capture_output=True, text=True)
    assert killed.returncode == -9, killed.stderr
    assert len(list(tmp.glob(writes.KERNEL_PREFIX + "*"))) == 1
    ok = subprocess.run([sys.executable, "-c", cli], env=env, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert "removed 1 leftover(s) of an interrupted render" in ok.stderr
    assert not list(tmp.glob(writes.KERNEL_PREFIX + "*"))
    assert json.loads((out / "baseline.values.json").read_text())["rows"] == 4
