"""Recompute the derived values of this transcription from the printed figures; exit 1 on mismatch.

Read-only: it never writes the data files. Run: .venv/bin/python data/pd-prefill-cap/check.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CARDS = 16  # P8 + D8

# (run, JSON path, value recomputed from printed figures, what it came from)
DERIVED = [
    ("cap1-n640", "windows.whole.common.Output Token Throughput", 166.24 * CARDS, "166.24 /card × 16"),
    ("cap1-n640", "windows.whole.common.Benchmark Duration", 640 / 2.5975 * 1000, "640 / 2.5975 req/s"),
    ("cap1-n640", "windows.whole.common.Total Generated Tokens", 640 * 1024, "640 × 1024"),
    ("cap1-n640", "windows.native.common.Output Token Throughput", 236.8268 * CARDS / 1.3227, "cap2 native / 1.3227"),
    ("cap2-n640", "windows.whole.common.Output Token Throughput", 216.5483 * CARDS, "216.5483 /card × 16"),
    ("cap2-n640", "windows.whole.common.Total Generated Tokens", 640 * 1024, "640 × 1024"),
    ("cap2-n640", "windows.native.common.Output Token Throughput", 236.8268 * CARDS, "236.8268 /card × 16"),
    ("cap1-n320", "windows.whole.common.Output Token Throughput", 158.8958 * CARDS, "158.8958 /card × 16"),
    ("cap2-n320", "windows.whole.common.Output Token Throughput", 199.4288 * CARDS, "199.4288 /card × 16"),
    ("cap2-n320", "windows.native.common.Output Token Throughput", 239.9814 * CARDS, "239.9814 /card × 16"),
]


def main() -> int:
    bad = 0
    for run, path, want, how in DERIVED:
        doc = json.loads((HERE / "runs" / run / "pd.json").read_text())
        cur = doc
        for part in path.split("."):
            cur = cur[part]
        marked = f"$.{path}" in doc.get("derived", {})
        ok = abs(cur - want) <= 5e-5 * max(1.0, abs(want)) and marked
        bad += not ok
        print(f"{'ok ' if ok else 'BAD'} {run:10} {path:50} {cur!s:>14} = {how}{'' if marked else ' (not marked derived)'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
