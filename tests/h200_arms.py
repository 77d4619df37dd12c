"""Arm folders built at test time (in tmp_path) from the shared H200 campaign's own files, and a
KV-starved variant of one made by editing those files' texts the way such a server writes them.

``arm(root, src, points)`` copies one arm folder of ``../shared/realdata/vllm_h200_llama8b`` with only
the load points a test needs (their result files, before/after captures and per-second scrape series)
and the process's own files (server.log, version.json, events.jsonl, the GPU and host sample CSVs).
``starve(folder, …)`` turns it into the server the H200 morning also ran with
``--gpu-memory-utilization 0.115``: its log's ``non-default args`` and ``GPU KV cache size`` line, and
every capture's ``vllm:cache_config_info`` labels, state the small cache; the preemption counter of the
points named rises by the count given, their result files name the arm, and a point named in ``slow``
takes that many times as long (its duration and every request's latency scaled).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from realdata import realdata

ROOT = Path(__file__).resolve().parents[1]
H200 = realdata("vllm_h200_llama8b")
PROCESS_FILES = ("server.log", "version.json", "events.jsonl", "gpu_samples.csv", "host_samples.csv")


def arm(root: Path, src: str, points: tuple[str, ...], *, name: str | None = None) -> Path:
    """``root/<name or src>``: the arm folder ``src`` with the load points ``points`` only."""
    dst = root / (name or src)
    (dst / "results").mkdir(parents=True)
    (dst / "metrics").mkdir()
    for f in PROCESS_FILES:
        if (H200 / src / f).is_file():
            shutil.copyfile(H200 / src / f, dst / f)
    for p in points:
        shutil.copyfile(H200 / src / "results" / f"bench_{p}.json", dst / "results" / f"bench_{p}.json")
        for part in ("before.prom", "after.prom", "scrapes.jsonl"):
            shutil.copyfile(H200 / src / "metrics" / f"{p}_{part}", dst / "metrics" / f"{p}_{part}")
    return dst


def _edit_labels(text: str, labels: dict[str, str]) -> str:
    def fix(m: re.Match) -> str:
        line = m.group(0)
        for k, v in labels.items():
            line = re.sub(rf'(?<=[{{,]){k}="[^"]*"', f'{k}="{v}"', line)
        return line

    return re.sub(r"^vllm:cache_config_info\{.*$", fix, text, flags=re.M)


def _tokens(folder: Path) -> int:
    m = re.search(r'kv_cache_size_tokens="(\d+)"', (folder / "metrics").glob("*_after.prom").__next__().read_text())
    return int(m.group(1))


def _usage(text: str, scale: float) -> str:
    return re.sub(
        r"^(vllm:kv_cache_usage_perc\{[^}]*\}) ([0-9.e+-]+)$",
        lambda m: f"{m.group(1)} {min(1.0, float(m.group(2)) * scale)}",
        text,
        flags=re.M,
    )


def starve(
    folder: Path,
    *,
    util: float = 0.115,
    tokens: int = 8752,
    block_size: int = 16,
    preemptions: dict[str, int] | None = None,
    slow: dict[str, float] | None = None,
) -> Path:
    """Edit ``folder`` (a copy made by :func:`arm`) into a KV-starved server's files (module docstring)."""
    scale_from = _tokens(folder)
    blocks = tokens // block_size
    labels = {
        "gpu_memory_utilization": f"{util:g}",
        "kv_cache_size_tokens": str(tokens),
        "num_gpu_blocks": str(blocks),
        "kv_cache_max_concurrency": f"{tokens / 8192:.6g}",
    }
    log = folder / "server.log"
    text = log.read_text()
    text = text.replace("'max_model_len': 8192,", f"'max_model_len': 8192, 'gpu_memory_utilization': {util:g},", 1)
    text = re.sub(r"GPU KV cache size: [0-9,]+ tokens", f"GPU KV cache size: {tokens:,} tokens", text)
    log.write_text(text)
    for p in sorted((folder / "metrics").glob("*.prom")):
        p.write_text(_edit_labels(p.read_text(), labels))
    scale = scale_from / tokens  # the same requests fill a smaller cache that much more
    for p in sorted((folder / "metrics").glob("*_scrapes.jsonl")):
        lines = [json.loads(x) for x in p.read_text().splitlines() if x.strip()]
        for rec in lines:
            rec["text"] = _usage(_edit_labels(rec["text"], labels), scale)
        p.write_text("".join(json.dumps(r) + "\n" for r in lines))
    for point, n in (preemptions or {}).items():
        after = folder / "metrics" / f"{point}_after.prom"
        after.write_text(
            re.sub(
                r"^(vllm:num_preemptions_total\{[^}]*\}) ([0-9.e+]+)$",
                lambda m: f"{m.group(1)} {float(m.group(2)) + n}",
                after.read_text(),
                flags=re.M,
            )
        )
    for f in sorted((folder / "results").glob("bench_*.json")):
        d = json.loads(f.read_text())
        d["arm"] = folder.name  # --metadata arm=<arm>, as the runner passes it
        k = (slow or {}).get(f.stem.removeprefix("bench_"))
        if k:
            d["duration"] *= k
            for key in ("ttfts", "itls"):
                d[key] = [[x * k for x in v] if isinstance(v, list) else v * k for v in d[key]]
            s0 = min(d["start_times"])
            d["start_times"] = [s0 + (t - s0) * k for t in d["start_times"]]
            for key in list(d):
                if key.endswith("_ms"):
                    d[key] *= k
            for key in ("output_throughput", "request_throughput", "total_token_throughput"):
                d[key] /= k
        f.write_text(json.dumps(d))
    return folder
