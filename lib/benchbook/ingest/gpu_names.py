"""The GPU a run's files name, from any file that names it (docs/checks.md, "The physical limit").

Each reader returns the names it finds (first GPU first, distinct), or ``[]``:

* :func:`from_smi_csv` — an ``nvidia-smi --query-gpu=…,name,…`` sample CSV's ``name`` column;
* :func:`from_telemetry` — AIPerf's GPU telemetry export (``gpu_model_name``), DCGM-exporter series
  (the ``modelName`` label; a ``.prom`` scrape or a ``*_scrapes.jsonl`` series);
* :func:`from_capture` — a ``capture.json``'s own GPU facts (``host.gpu_memory.gpus[].name``: what
  ``nvidia-smi`` said on the capture host);
* :func:`from_log` — an engine log line naming its device (``… device name: NVIDIA H200``, ``GPU 0:
  NVIDIA H100 80GB HBM3``, ``Using device NVIDIA A100-SXM4-80GB``).

``nvidia-smi -q``'s ``Product Name`` and the manifest's ``host.GPU`` are read by
``analysis.audit.gpu_name``, which asks these in turn.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path
from typing import Any

_LOG_NAME = re.compile(
    r"(?:device(?: name)?|GPU(?: \d+)?|accelerator)\s*[:=]?\s*['\"]?((?:NVIDIA|AMD|Huawei|Tesla|Ascend)[\w .-]*\w)",
    re.I,
)
_DCGM_NAMES = ("DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_GPU_UTIL")


def _distinct(xs) -> list[str]:
    return list(dict.fromkeys(x.strip() for x in xs if isinstance(x, str) and x.strip()))


def from_smi_csv(path: Path) -> list[str]:
    from benchbook.jsonfile import read_text

    text = read_text(path, "GPU sample file")
    rows = csv.reader(io.StringIO(text))
    header = [h.split("[", 1)[0].strip() for h in next(rows, [])]
    if "name" not in header:
        return []
    i = header.index("name")
    return _distinct(r[i] for r in rows if len(r) > i)


def _dcgm_text_names(text: str, where: str) -> list[str]:
    from benchbook.metrics import prometheus

    snap = prometheus.parse(text, where, list(_DCGM_NAMES))
    out = []
    for fam in _DCGM_NAMES:
        for key in snap.series(fam):
            out.append(dict(key).get("modelName"))
    return _distinct(out)


def from_telemetry(path: Path) -> list[str]:
    from benchbook.ingest import telemetry
    from benchbook.jsonfile import json_lines, read_text

    kind = telemetry.kind_of(path)
    if kind == "aiperf":
        return _distinct(
            rec.get("gpu_model_name") for _n, rec in json_lines(path, "GPU telemetry") if isinstance(rec, dict)
        )
    if kind == "dcgm-prom":
        return _dcgm_text_names(read_text(path, "DCGM scrape"), str(path))
    if kind == "dcgm-series":
        for lineno, _t, text in telemetry.scrape_lines(path, keep=lambda t: "DCGM_FI_DEV_" in t):
            names = _dcgm_text_names(text, f"{path}: line {lineno}")
            if names:
                return names
    return []


def from_capture(doc: Any) -> list[str]:
    host = doc.get("host") if isinstance(doc, dict) else None
    mem = host.get("gpu_memory") if isinstance(host, dict) else None
    gpus = mem.get("gpus") if isinstance(mem, dict) else None
    return _distinct(g.get("name") for g in gpus if isinstance(g, dict)) if isinstance(gpus, list) else []


def from_log(text: str) -> list[str]:
    return _distinct(m.group(1) for m in _LOG_NAME.finditer(text))
