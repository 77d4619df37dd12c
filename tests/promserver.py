"""A real Prometheus on 127.0.0.1 for tests: backfilled with promtool, started on a free port, always stopped.

    with promserver.running(tmp, backfill_openmetrics_text, scrape_configs="[]") as url:
        ...

Only loopback addresses; the server and its data folder are removed even when the test fails.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

PROMETHEUS = Path("/usr/bin/prometheus")
PROMTOOL = Path("/usr/bin/promtool")
MISSING = "needs /usr/bin/prometheus and /usr/bin/promtool (Debian: apt-get install -y prometheus; CI installs it)"


def available() -> bool:
    return PROMETHEUS.exists() and PROMTOOL.exists()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running(tmp: Path, backfill: str, scrape_configs: str = "[]", scrape_interval: str = "1s") -> Iterator[str]:
    """Backfill ``backfill`` (OpenMetrics text) into a fresh TSDB under ``tmp``, start Prometheus on it
    and yield its base URL; ``scrape_configs`` is YAML for the config's scrape_configs key."""
    data = tmp / "data"
    (tmp / "backfill.om").write_text(backfill)
    subprocess.run(
        [str(PROMTOOL), "tsdb", "create-blocks-from", "openmetrics", str(tmp / "backfill.om"), str(data)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    (tmp / "prometheus.yml").write_text(
        f"global: {{scrape_interval: {scrape_interval}, scrape_timeout: {scrape_interval}}}\n"
        f"scrape_configs: {scrape_configs}\n"
    )
    proc, log = None, tmp / "prometheus.log"
    try:
        for _attempt in range(3):  # the free port may be taken between choosing and binding
            port = free_port()
            with log.open("wb") as out:
                proc = subprocess.Popen(
                    [
                        str(PROMETHEUS),
                        f"--config.file={tmp / 'prometheus.yml'}",
                        f"--storage.tsdb.path={data}",
                        f"--web.listen-address=127.0.0.1:{port}",
                        "--storage.tsdb.retention.time=100y",
                    ],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 20
            with httpx.Client(timeout=1) as poll:  # one client: httpx.get builds one (and a TLS context) per call
                while time.monotonic() < deadline and proc.poll() is None:
                    try:
                        if poll.get(f"{url}/-/ready").status_code == 200:
                            break
                    except httpx.HTTPError:
                        pass
                    time.sleep(0.05)
            if proc.poll() is None:
                break
            proc = None
        if proc is None:
            pytest.fail(f"prometheus did not start; its log:\n{log.read_text()[-2000:]}")
        yield url
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(data, ignore_errors=True)
