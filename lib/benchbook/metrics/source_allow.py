"""Which Prometheus servers a campaign may make benchbook query.

A campaign file names its source (``prometheus.url``), so a contributed campaign could aim the
renderer at any service the rendering machine can reach and have its answers published. A
campaign's source is therefore queried only when the person running benchbook allows that server
for the run: ``--allow-source HOST:PORT`` (``validate``, ``summary``, ``render``, ``render --all``)
or the environment variable :data:`ALLOW_ENV`. Otherwise nothing is sent to it and the campaign
renders from its files, with a "not queried (not allowed: …)" line where the windows would be.
Light on purpose: the render key reads it without importing the Prometheus client.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit, urlunsplit

#: host:port list (comma-separated) of the Prometheus servers campaigns may make this run query; ``*``: any
ALLOW_ENV = "BENCHBOOK_ALLOW_SOURCES"


def public_url(url: str) -> str:
    """The URL with any user:password removed (it goes into messages and provenance)."""
    parts = urlsplit(url)
    if parts.username or parts.password:
        host = parts.hostname or ""
        if parts.port:
            host = f"{host}:{parts.port}"
        parts = parts._replace(netloc=host)
    return urlunsplit(parts).rstrip("/")


def origin(url: str) -> str:
    """``host:port`` of a URL (the scheme's port when none is given; the host lowercased)."""
    parts = urlsplit(url if "://" in url else f"http://{url}")
    try:
        port = parts.port
    except ValueError:
        port = None
    host = (parts.hostname or "").lower()
    host = f"[{host}]" if ":" in host else host
    return f"{host}:{port or (443 if parts.scheme == 'https' else 80)}"


def allowed_origins(env: Mapping[str, str] | None = None) -> set[str]:
    """The origins :data:`ALLOW_ENV` allows (``{"*"}``: any), from ``env`` (default: this process's)."""
    import os

    raw = (os.environ if env is None else env).get(ALLOW_ENV, "")
    return {x if x == "*" else origin(x) for x in re.split(r"[,\s]+", raw) if x}


def refusal(url: str) -> str | None:
    """None when this run may query a campaign's source ``url``; else the "not queried" line that
    says why and how to allow it. A campaign file names its source, so a contributed campaign could
    aim the renderer at any service it can reach (the module docstring)."""
    allowed = allowed_origins()
    o = origin(url)
    if "*" in allowed or o in allowed:
        return None
    return (
        f"not queried (not allowed: the campaign names the Prometheus server {public_url(url)}, which is "
        f"queried only when this run allows it: --allow-source {o} or {ALLOW_ENV}={o})"
    )


def allowing(origins: Iterable[str]):
    """A context in which :data:`ALLOW_ENV` also allows ``origins`` (the kernels a render starts
    inherit it); the variable is restored afterwards."""
    import contextlib
    import os

    @contextlib.contextmanager
    def ctx():
        extra = [x if x == "*" else origin(x) for x in origins]
        old = os.environ.get(ALLOW_ENV)
        if extra:
            os.environ[ALLOW_ENV] = ",".join([*([old] if old else []), *extra])
        try:
            yield
        finally:
            if old is None:
                os.environ.pop(ALLOW_ENV, None)
            else:
                os.environ[ALLOW_ENV] = old

    return ctx()


def add_allow_argument(p) -> None:
    """The ``--allow-source HOST:PORT`` option of the commands that read a campaign."""
    p.add_argument(
        "--allow-source",
        action="append",
        default=[],
        metavar="HOST:PORT",
        help="query this Prometheus server where a campaign names it (repeatable; '*' allows any; also "
        f"{ALLOW_ENV}=HOST:PORT,…). Without it a campaign's prometheus.url is not queried: its windows are "
        "listed as not queried",
    )


def key() -> list[str]:
    """What this run allows, for the render keys (a page rendered without a source is not current
    once the source is allowed)."""
    return sorted(allowed_origins())
