"""Writes a render cannot tear: a page's files published together, locks on output folders, and
cleanup of what a killed render left behind.

**Page sets.** A page is several files (``<page>.html``, ``<page>.ipynb``, ``<page>.values.json``)
that must change together, and each is a plain file, so that ``rsync -a``, ``zip -y``, ``cp -P`` or
an artifact upload of the output folder (or of one page) publishes what a browser opens. POSIX
renames one name at a time, so :func:`publish` journals the switch::

    1. .baseline.html.<token>.tmp, .baseline.ipynb.<token>.tmp, ...   written and fsynced beside
    2. .baseline.set.json   {name: {sha256, tmp}}                       written atomically: the commit
    3. each temp file renamed over its name, the folder fsynced

A render killed before (2) leaves the previous three files (its temp files are removed by the next
render); killed after (2), the set is *rolled forward*: the next render (:func:`clean_folder`) or any
reader calling :func:`repair` renames the temp files still pending, so the names show the new three.
``.<page>.set.json`` stays beside the page as its manifest: :func:`torn` compares the three files
with it, so a reader can tell a set caught between two renames (or changed by hand) from a whole
one. A folder written by an older benchbook (names that are links into ``.pages/<generation>/``) is
converted by the next publish of each page: the links are replaced by plain files, and the
generation folders no name points into any more are removed by :func:`clean_folder`.

**Locks.** :func:`folder_lock` (blocking, held only while publishing and cleaning) serializes
writers of one output folder; :func:`render_lock` (non-blocking) stops a second ``benchbook
render`` into the same output folder: it raises :class:`LockedError` (exit 5).

**Cleanup.** Generation folders no pointer names, temporary pointer links, ``.*.tmp`` files, and
``benchbook-kernel-*`` folders (kernel IPC sockets, in the temp directory) whose render is gone are
removed by the next render (:func:`clean_folder`, :func:`clean_kernel_dirs`).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import secrets
import shutil
import socket
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

from benchbook.errors import InputError, LockedError
from benchbook.jsonfile import read_bytes, sha256_file

GENERATIONS = ".pages"  # the older layout's folder of page generations (converted, then removed)
FOLDER_LOCK = ".benchbook-write.lock"  # held while publishing into / cleaning one output folder
RENDER_LOCK = ".benchbook-render.lock"  # held by one `benchbook render` per output folder
KERNEL_PREFIX = "benchbook-kernel-"  # kernel IPC folders in the temp directory
KERNEL_OWNER = "owner.lock"  # flock-ed by the render that created the kernel folder
_NEXT = ".next-"  # the older layout's temporary pointer links


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_file(path: Path, data: bytes) -> None:
    with open(path, "xb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.chmod(path, 0o644)


def write_atomic(path: Path, data: bytes) -> None:
    """One file replaced atomically: a temp file in its folder (fsynced), then ``os.replace``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
        _fsync_dir(path.parent)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def fixed_name(path: str | Path) -> Path:
    """``path`` made absolute *without* following its last component: in a folder of the older layout
    a page's name is a link into its generation, and resolving it would publish the next page inside
    the previous generation (and record its key there, where the next render does not look)."""
    p = Path(path)
    return p.parent.resolve() / p.name


SET_SUFFIX = ".set.json"


def set_path(out: Path, stem: str) -> Path:
    """The manifest (and journal) of page ``stem`` in ``out``: ``.<stem>.set.json``."""
    return Path(out) / f".{stem}{SET_SUFFIX}"


def _read_set(out: Path, stem: str) -> dict[str, dict[str, str]]:
    try:
        doc = json.loads(read_own(set_path(out, stem)))
    except (OSError, ValueError):
        return {}
    files = doc.get("files") if isinstance(doc, dict) else None
    return files if isinstance(files, dict) else {}


def _sha256(path: Path) -> str | None:
    try:
        return sha256_file(path)
    except (OSError, InputError):  # missing, or not a regular file (never opened for reading)
        return None


OWN_LIMIT = 256 * 2**20  # a file benchbook wrote into an output folder (a page with its charts: a few MB)


def read_own(path: str | Path, limit: int = OWN_LIMIT) -> bytes:
    """A file benchbook wrote into an output folder (a key, a values file, a page manifest, the
    index), read only when it is a regular file of at most ``limit`` bytes — a FIFO planted there
    would block a render holding the folder's lock, a device would never end. Anything else is an
    OSError, which every reader of these files takes as "not there" (the render writes it anew,
    replacing what was there)."""
    try:
        return read_bytes(path, "output file", limit)
    except InputError as e:
        raise OSError(errno.EINVAL, f"{e.file}: {e.reason}") from None


def publish(out: Path, stem: str, files: Mapping[str, bytes]) -> None:
    """Publish one page's files (``{suffix: bytes}``, e.g. ``{".html": ...}``) in ``out`` together,
    under :func:`folder_lock`. What killed renders left there is removed before a render starts
    (:func:`clean_folder`, called when a campaign is planned), never here: another worker may be
    writing a temporary file of another page of the same campaign into ``out`` at this moment.

    Raises ``OSError`` (disk full, read-only folder): the previous files are then untouched.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    with folder_lock(out):
        _repair(out, stem)  # a set a killed publish committed: finish it first
        _publish(out, stem, files)


def _publish(out: Path, stem: str, files: Mapping[str, bytes]) -> None:
    token = secrets.token_hex(4)
    staged: dict[str, dict[str, str]] = {}
    try:
        for suffix, data in files.items():
            name = stem + suffix
            tmp = f".{name}.{token}.tmp"
            _write_file(out / tmp, data)
            staged[name] = {"tmp": tmp, "sha256": hashlib.sha256(data).hexdigest()}
        _fsync_dir(out)
        doc = {"format": "benchbook.page-set/1", "files": staged}
        write_atomic(set_path(out, stem), (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode())  # commit
    except BaseException:
        for entry in staged.values():
            with contextlib.suppress(FileNotFoundError):
                os.unlink(out / entry["tmp"])
        raise
    _roll_forward(out, staged)


def _roll_forward(out: Path, entries: Mapping[str, Mapping[str, str]]) -> list[str]:
    """Rename each committed temp file still pending over its name; the names renamed."""
    done = []
    for name, entry in entries.items():
        tmp = out / str(entry.get("tmp", ""))
        if entry.get("tmp") and os.path.lexists(tmp):
            os.replace(tmp, out / name)
            done.append(name)
    if done:
        _fsync_dir(out)
    return done


def _repair(out: Path, stem: str) -> list[str]:
    return _roll_forward(out, _read_set(out, stem))


def repair(out: Path) -> list[str]:
    """Finish every page set in ``out`` that a killed publish committed but did not switch (rename
    its pending temp files over their names), under :func:`folder_lock`. Returns the names renamed."""
    out = Path(out)
    if not out.is_dir():
        return []
    with folder_lock(out):
        return _repair_all(out)


def _repair_all(out: Path) -> list[str]:
    done = []
    for p in sorted(out.glob(".*" + SET_SUFFIX)):
        done += _repair(out, p.name[1 : -len(SET_SUFFIX)])
    return done


def torn(out: Path, stem: str) -> list[str]:
    """The names of page ``stem`` whose bytes are not those its manifest (``.<stem>.set.json``)
    records: a set caught between two renames, or edited by hand; [] for a whole set (or a page
    without a manifest)."""
    entries = _read_set(out, stem)
    return sorted(n for n, e in entries.items() if _sha256(Path(out) / n) != e.get("sha256"))


def clean_folder(out: Path) -> list[str]:
    """Finish page sets a killed publish committed (:func:`repair`), then remove what killed renders
    left in ``out`` (under :func:`folder_lock`): temporary files no committed set still needs, and
    generation folders of the older link layout that no name points into. Returns the names removed."""
    out = Path(out)
    if not out.is_dir():
        return []
    with folder_lock(out):
        _repair_all(out)
        return _clean_folder(out)


def _clean_folder(out: Path) -> list[str]:
    removed: list[str] = []
    for p in out.iterdir():
        if p.name.startswith(".") and p.name.endswith(".tmp") and (p.is_file() or p.is_symlink()):
            p.unlink()
            removed.append(p.name)
        elif p.name.startswith(_NEXT) and p.is_symlink():
            p.unlink()
            removed.append(p.name)
    gens = out / GENERATIONS
    if gens.is_dir() and not gens.is_symlink():
        # the older layout: names were links into .pages/<stem>/; a generation stays while a name
        # still points into it, and goes with its pointer once every name is a plain file
        linked = {
            os.readlink(p).split("/")[1]
            for p in out.iterdir()
            if p.is_symlink() and os.readlink(p).startswith(GENERATIONS + "/")
        }
        live = {os.readlink(p) for p in gens.iterdir() if p.is_symlink() and p.name in linked}
        for p in gens.iterdir():
            if p.is_symlink() and p.name not in linked:
                p.unlink()
            elif p.is_dir() and not p.is_symlink() and p.name not in live:
                shutil.rmtree(p, ignore_errors=True)
            else:
                continue
            removed.append(f"{GENERATIONS}/{p.name}")
        with contextlib.suppress(OSError):
            gens.rmdir()  # empty now
    return sorted(removed)


def _open_lock(path: Path) -> int:
    """The lock file ``path`` opened read-write, created if absent — only as a regular file of its own
    folder: the final name is never followed (``O_NOFOLLOW``, opened relative to the folder's own
    descriptor), a FIFO or device never blocks (``O_NONBLOCK``) and is refused, and so is a file with
    another name elsewhere (a hard link, ``st_nlink`` > 1). Nothing is truncated here; nothing outside
    the folder is created or written. InputError (exit 2) naming the path otherwise."""
    import stat

    path.parent.mkdir(parents=True, exist_ok=True)
    dfd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
        try:
            fd = os.open(path.name, flags, 0o644, dir_fd=dfd)
        except OSError as e:
            if e.errno == errno.ELOOP or os.path.islink(path):
                raise InputError(
                    path,
                    "-",
                    f"is a symlink (to {os.readlink(path)!r}): benchbook's lock is a regular file of "
                    "the output folder and is never followed; remove the link",
                ) from None
            raise InputError(path, "-", f"cannot open the lock file: {e.strerror or e}") from None
    finally:
        os.close(dfd)
    st = os.fstat(fd)
    why = None
    if not stat.S_ISREG(st.st_mode):
        why = "is not a regular file (a FIFO, device, socket or folder)"
    elif st.st_nlink > 1:
        why = f"has {st.st_nlink} names (a hard link to a file elsewhere?)"
    if why:
        os.close(fd)
        raise InputError(path, "-", f"{why}: benchbook's lock is a regular file of the output folder; remove it")
    return fd


def _flock(path: Path, blocking: bool) -> int | None:
    fd = _open_lock(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
    except OSError as e:
        os.close(fd)
        if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return None
        raise
    return fd


@contextlib.contextmanager
def folder_lock(out: Path) -> Iterator[None]:
    """Exclusive, blocking lock on one output folder while its files are published or cleaned."""
    fd = _flock(Path(out) / FOLDER_LOCK, blocking=True)
    try:
        yield
    finally:
        os.close(fd)


@contextlib.contextmanager
def render_lock(out: Path, *, wait: bool = False) -> Iterator[None]:
    """One ``benchbook render`` per output folder: a second one raises :class:`LockedError` (exit 5)
    naming the process holding the lock, or waits for it with ``wait=True``."""
    path = Path(out) / RENDER_LOCK
    fd = _flock(path, blocking=wait)
    if fd is None:
        try:
            probe = _open_lock(path)  # the holder's pid, read through the same checks (never a FIFO)
            try:
                holder = os.pread(probe, 64, 0).decode("utf-8", "replace").strip() or "?"
            finally:
                os.close(probe)
        except (OSError, InputError):  # the holder's pid is a courtesy
            holder = "?"
        raise LockedError(Path(out), f"another benchbook render (pid {holder}) is writing into this folder")
    try:
        os.ftruncate(fd, 0)  # our own regular file (checked): the pid of this render
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)


# --------------------------------------------------------------------------- kernel folders

_kernel_locks: dict[str, int] = {}


def make_kernel_dir() -> str:
    """A private temp folder for one kernel's IPC sockets, marked as owned by this process (a lock
    held until :func:`remove_kernel_dir`), so a later render can tell a dead render's folder."""
    d = tempfile.mkdtemp(prefix=KERNEL_PREFIX)
    fd = _flock(Path(d) / KERNEL_OWNER, blocking=True)
    _kernel_locks[d] = fd
    return d


def remove_kernel_dir(d: str) -> None:
    shutil.rmtree(d, ignore_errors=True)
    fd = _kernel_locks.pop(d, None)
    if fd is not None:
        os.close(fd)


def _sockets_dead(d: Path) -> bool:
    """A folder from a benchbook without owner locks: stale when it holds sockets and none answers."""
    socks = [p for p in d.iterdir() if p.is_socket()]
    if not socks:
        return False
    for p in socks:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(str(p))
            return False
        except OSError:
            continue
        finally:
            s.close()
    return True


def clean_kernel_dirs(tmp: Path | None = None) -> list[str]:
    """Remove ``benchbook-kernel-*`` folders in the temp directory whose render is gone (its owner
    lock can be taken, or none of its sockets answers). Live renders' folders are left alone."""
    tmp = Path(tmp or tempfile.gettempdir())
    removed: list[str] = []
    uid = os.getuid()
    for d in sorted(tmp.glob(KERNEL_PREFIX + "*")):
        try:
            if d.is_symlink() or not d.is_dir() or d.stat().st_uid != uid or str(d) in _kernel_locks:
                continue
            owner = d / KERNEL_OWNER
            if owner.is_file() and not owner.is_symlink():
                fd = _flock(owner, blocking=False)
                if fd is None:
                    continue  # a live render holds it
                try:
                    shutil.rmtree(d, ignore_errors=True)
                finally:
                    os.close(fd)
            elif _sockets_dead(d):
                shutil.rmtree(d, ignore_errors=True)
            else:
                continue
        except (OSError, InputError):
            continue  # another render cleaned it first, or its owner lock is not ours to open
        removed.append(d.name)
    return removed
