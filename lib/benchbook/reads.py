"""Each input file read once per analysis: the read cache a campaign's analysis owns.

While :func:`benchbook.analysis.campaign_analysis.analyse` runs, it holds a :class:`ReadCache` active
(``with cache.active():``). The readers that parse a whole input file — a result file
(``formats.read``), a ``/metrics`` capture (``prometheus.read_capture``), a gpu run's ``gpu.json``, its
GPU samples (``telemetry.read_gpu_samples``) and host samples (``gpu_samples.read_host_csv``) — ask it
first through :func:`cached`: the first ask reads the file, every later one in the same analysis gets
what that read made. Outside an analysis :func:`cached` just reads. An entry is keyed by what was
read, the file's resolved path, its modification time and size (and the reader's arguments), so a file
changed on disk is read again; a read that fails is not kept (the next ask fails the same way, naming
the file). The analysis drops the entries when it is done (:meth:`ReadCache.release`) and keeps the
counts: :attr:`ReadCache.reads` (reads from disk per file) and :attr:`ReadCache.hits`.

:func:`resolved` is ``Path.resolve()`` once per path and analysis the same way: the containment check
(``jsonfile.inside``: every file a campaign names must resolve, symlinks followed, inside its folder)
resolved the campaign folder again for each of its thousands of snapshots (6 % of `make test-fast`'s
CPU went to ``realpath``). Outside an analysis it resolves every time.
"""

from __future__ import annotations

import contextlib
import os
from collections import Counter
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

_ACTIVE: ContextVar[ReadCache | None] = ContextVar("benchbook_read_cache", default=None)


@dataclass
class ReadCache:
    """What each input file was read as, during one analysis (see the module doc)."""

    entries: dict[tuple, Any] = field(default_factory=dict, repr=False)
    reads: Counter[str] = field(default_factory=Counter)  # file -> reads from disk through this cache
    hits: int = 0  # asks answered without reading
    _reading: set[str] = field(default_factory=set, repr=False)  # files being read now (nested asks)
    _resolved: dict[tuple[str, str], Path] = field(default_factory=dict, repr=False)  # (cwd, path) -> resolved

    @contextlib.contextmanager
    def active(self) -> Iterator[ReadCache]:
        """Make this the cache :func:`cached` uses, for the ``with`` block (nested blocks restore the outer one)."""
        token = _ACTIVE.set(self)
        try:
            yield self
        finally:
            _ACTIVE.reset(token)

    def get(self, what: str, path: str | Path, read: Callable[[], T], *args: Any) -> T:
        """What ``read()`` made of ``path`` (``what``: which reader; ``args``: its other arguments)."""
        p = Path(path)
        try:
            st = p.stat()
        except OSError:
            return read()  # reading it says why (missing, unreadable)
        rp = str(self.resolve(p))
        key = (what, rp, st.st_mtime_ns, st.st_size, args)
        if key in self.entries:
            self.hits += 1
            return self.entries[key]
        nested = rp in self._reading  # a reader's own cached read of the file (its text): one read from disk
        self._reading.add(rp)
        try:
            value = read()
        finally:
            if not nested:
                self._reading.discard(rp)
        self.entries[key] = value
        if not nested:
            self.reads[str(p)] += 1
        return value

    def resolve(self, path: str | Path) -> Path:
        """``Path(path).resolve()``, once per path (and working folder, for a relative one) in this analysis."""
        p = os.fspath(path)
        key = ("" if os.path.isabs(p) else os.getcwd(), p)
        got = self._resolved.get(key)
        if got is None:
            got = self._resolved[key] = Path(p).resolve()
        return got

    def release(self) -> None:
        """Drop what was read (the analysis is done with it); the counts stay."""
        self.entries.clear()
        self._resolved.clear()


def current() -> ReadCache | None:
    """The active read cache, if an analysis is running."""
    return _ACTIVE.get()


def resolved(path: str | Path) -> Path:
    """``Path(path).resolve()``: once per path in an analysis while a :class:`ReadCache` is active, else every time."""
    cache = _ACTIVE.get()
    return Path(path).resolve() if cache is None else cache.resolve(path)


def cached(what: str, path: str | Path, read: Callable[[], T], *args: Any) -> T:
    """``read()`` of ``path``, once per analysis while a :class:`ReadCache` is active; else ``read()``."""
    cache = _ACTIVE.get()
    return read() if cache is None else cache.get(what, path, read, *args)
