"""The project's exception types and the exit codes the CLI maps them to.

Every failure that a user can cause carries the file, the place in it and the reason, so the CLI can
print one line ``file: location: reason`` and exit with a code a scheduler can act on.
"""

from __future__ import annotations

import re
from pathlib import Path

# Exit codes (documented in the README).
EXIT_OK = 0
EXIT_INTERNAL = 1  # a bug in benchbook: please report it
EXIT_BAD_INPUT = 2  # the input files are wrong; the message names file, place and reason
EXIT_RENDER = 3  # input was fine but a page failed to render; the previous page is kept
EXIT_SOURCE = 4  # a remote source (Prometheus server) could not be reached or queried
EXIT_LOCKED = 5  # another benchbook render is writing into the same output folder


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def printable(s: str) -> str:
    """``s`` with control characters (C0, DEL, C1: NUL, ESC of terminal escape sequences, a
    newline inside a name …) written as escapes (``\\x00``), so a message is one inert line."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", s)


class BenchbookError(Exception):
    """Base class of every error benchbook raises on purpose."""

    exit_code = EXIT_INTERNAL

    def one_line(self) -> str:
        return str(self)


class InputError(BenchbookError):
    """Bad input: names the file, the location inside it and what was wrong."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, file: str | Path | None, location: str | None, reason: str):
        self.file = printable(str(file)) if file is not None else "<input>"
        self.location = printable(location or "-")
        self.reason = printable(reason)
        super().__init__(f"{self.file}: {self.location}: {self.reason}")


class InputErrors(InputError):
    """Several independent problems found in one pass (``benchbook validate`` lists them all)."""

    def __init__(self, errors: list[InputError]):
        self.errors = list(errors)
        first = self.errors[0]
        super().__init__(first.file, first.location, first.reason)

    def __str__(self) -> str:  # one problem per line
        return "\n".join(str(e) for e in self.errors)


class RenderError(BenchbookError):
    """A page failed to render (notebook cell error, export failure)."""

    exit_code = EXIT_RENDER

    def __init__(self, page: str, reason: str):
        self.page = printable(page)
        self.reason = printable(reason)
        super().__init__(f"{self.page}: render failed: {self.reason}")


class SourceError(BenchbookError):
    """A remote metrics source could not be reached or answered with an error."""

    exit_code = EXIT_SOURCE

    def __init__(self, source: str, reason: str):
        self.source = printable(source)
        self.reason = printable(reason)
        super().__init__(f"{self.source}: {self.reason}")


class UsageError(BenchbookError):
    """Bad command-line arguments."""

    exit_code = EXIT_BAD_INPUT


class LockedError(BenchbookError):
    """Another ``benchbook render`` holds the output folder's lock; nothing was written."""

    exit_code = EXIT_LOCKED

    def __init__(self, folder: str | Path, reason: str):
        self.folder = str(folder)
        self.reason = reason
        super().__init__(f"{self.folder}: {reason}")


def first_line(s: str) -> str:
    """The first line of a message (an exception's text can run to a traceback): for one-line errors."""
    s = (s or "").strip()
    return s.splitlines()[0] if s else ""
