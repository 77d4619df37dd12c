"""Writes a render cannot tear: a page's files published together, locks on output folders, and
cleanup of what a killed render left behind.

**Page generations.** A page is several files (``<page>.html``, ``<page>.ipynb``,
``<page>.values.json``) that must change together. POSIX renames one name at a time, so the files
live in a generation folder and the names readers open are fixed symbolic links into a pointer::

    out/baseline.html         -> .pages/baseline/baseline.html      (fixed, created once)
    out/baseline.ipynb        -> .pages/baseline/baseline.ipynb
    out/baseline.values.json  -> .pages/baseline/baseline.values.json
    out/.pages/baseline       -> baseline@k3j9x2                    (the pointer)
    out/.pages/baseline@k3j9x2/{baseline.html, baseline.ipynb, baseline.values.json}

:func:`publish` writes the new files into a fresh generation folder (fsynced), then replaces the
pointer with one ``rename`` of a symlink: every reader sees the old three files or the new three,
whatever moment the process is killed at. Links are relative and stay inside ``out``, so the
folder can be copied or served as it is. A folder written by an older benchbook (real files at
the fixed names) is converted in place without changing what the names show.

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
import os
import secrets
import shutil
import socket
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

from benchbook.errors import LockedError

GENERATIONS = ".pages"  # the folder, inside an output folder, holding page generations
FOLDER_LOCK = ".benchbook-write.lock"  # held while publishing into / cleaning one output folder
RENDER_LOCK = ".benchbook-render.lock"  # held by one `benchbook render` per output folder
KERNEL_PREFIX = "benchbook-kernel-"  # kernel IPC folders in the temp directory
KERNEL_OWNER = "owner.lock"  # flock-ed by the render that created the kernel folder
_NEXT = ".next-"  # temporary pointer links, renamed over the pointer


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
    """``path`` made absolute *without* following its last component: a page's fixed name is a link
    into its generation, and resolving it would publish the next generation inside the previous one
    (and record its key there, where the next render does not look)."""
    p = Path(path)
    return p.parent.resolve() / p.name


def _replace_symlink(target: str, link: Path) -> None:
    """Point ``link`` at ``target`` with one rename (a temp link beside it, then ``os.replace``)."""
    tmp = link.parent / f"{_NEXT}{link.name}-{secrets.token_hex(4)}"
    os.symlink(target, tmp)
    try:
        os.replace(tmp, link)
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


def _adopt_legacy(out: Path, stem: str, names: list[str]) -> None:
    """Convert real files at the fixed names (an older layout) into a first generation, keeping what
    each name shows at every step: hard links into a generation, pointer, then one link per name."""
    gens = out / GENERATIONS
    pointer = gens / stem
    real = [n for n in names if (out / n).is_file() and not (out / n).is_symlink()]
    if not real:
        return
    if not os.path.lexists(pointer):
        gen = Path(tempfile.mkdtemp(prefix=f"{stem}@", dir=gens))
        for n in real:
            os.link(out / n, gen / n)
        _fsync_dir(gen)
        _replace_symlink(gen.name, pointer)
    for n in real:  # each replaced by a link to the same content
        _replace_symlink(f"{GENERATIONS}/{stem}/{n}", out / n)
    _fsync_dir(out)


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
        _publish(out, stem, files)


def _publish(out: Path, stem: str, files: Mapping[str, bytes]) -> None:
    gens = out / GENERATIONS
    gens.mkdir(parents=True, exist_ok=True)
    names = [stem + suffix for suffix in files]
    _adopt_legacy(out, stem, names)
    gen = Path(tempfile.mkdtemp(prefix=f"{stem}@", dir=gens))
    try:
        for suffix, data in files.items():
            _write_file(gen / (stem + suffix), data)
        os.chmod(gen, 0o755)
        _fsync_dir(gen)
        # the fixed names: links into the pointer (dangling until the first pointer exists, so a new
        # page appears with all its files at once)
        for n in names:
            link = out / n
            want = f"{GENERATIONS}/{stem}/{n}"
            if not (link.is_symlink() and os.readlink(link) == want):
                _replace_symlink(want, link)
        _fsync_dir(out)
        pointer = gens / stem
        old = os.readlink(pointer) if pointer.is_symlink() else None
        _replace_symlink(gen.name, pointer)  # the commit point
        _fsync_dir(gens)
    except BaseException:
        if not (gens / stem).is_symlink() or os.readlink(gens / stem) != gen.name:
            shutil.rmtree(gen, ignore_errors=True)
        raise
    if old and old != gen.name:
        shutil.rmtree(gens / old, ignore_errors=True)


def clean_folder(out: Path) -> list[str]:
    """Remove what killed renders left in ``out`` (under :func:`folder_lock`): generations no
    pointer names, temporary pointer links, ``.*.tmp`` files. Returns the names removed."""
    out = Path(out)
    if not out.is_dir():
        return []
    with folder_lock(out):
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
        live = {os.readlink(p) for p in gens.iterdir() if p.is_symlink() and not p.name.startswith(_NEXT)}
        for p in gens.iterdir():
            if p.is_symlink() and p.name.startswith(_NEXT):
                p.unlink()
            elif p.is_dir() and not p.is_symlink() and "@" in p.name and p.name not in live:
                shutil.rmtree(p, ignore_errors=True)
            else:
                continue
            removed.append(f"{GENERATIONS}/{p.name}")
    return sorted(removed)


def _flock(path: Path, blocking: bool) -> int | None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
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
            holder = path.read_text(encoding="utf-8").strip() or "?"
        except OSError:
            holder = "?"
        raise LockedError(Path(out), f"another benchbook render (pid {holder}) is writing into this folder")
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
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
            if owner.is_file():
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
        except OSError:
            continue  # another render cleaned it first
        removed.append(d.name)
    return removed
