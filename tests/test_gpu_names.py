"""The GPU named from any file that names it, for the decode floor and the prefill ceiling: an
nvidia-smi CSV's name column, DCGM's modelName label, AIPerf's gpu_model_name, a capture.json's own
GPU facts, an engine log's device line — beside nvidia-smi -q and the manifest's host.GPU."""

from __future__ import annotations

import json
from argparse import Namespace
from pathlib import Path

import h200_arms
from benchbook.commands import init as init_cmd
from benchbook.ingest import gpu_names

TOOLS = Path(__file__).resolve().parent / "fixtures" / "tools"


def _with_name_column(csv_path: Path, name: str) -> None:
    """nvidia-smi --query-gpu=timestamp,name,index,… as a sampler that asks for the name writes it."""
    lines = csv_path.read_text().splitlines()
    head, rows = lines[0].split(", "), [r.split(", ") for r in lines[1:]]
    out = [", ".join([head[0], "name", *head[1:]])] + [", ".join([r[0], name, *r[1:]]) for r in rows]
    csv_path.write_text("\n".join(out) + "\n")


def test_each_reader_names_the_gpu(tmp_path):
    assert gpu_names.from_telemetry(TOOLS / "dcgm-exporter" / "dcgm_metrics.prom") == ["NVIDIA H100 80GB HBM3"]
    aiperf = TOOLS / "aiperf-0.13.0-telemetry" / "gpu_telemetry_export.jsonl"
    assert gpu_names.from_telemetry(aiperf) == ["NVIDIA H100 80GB HBM3"]
    cap = {"host": {"gpu_memory": {"source": "nvidia-smi", "gpus": [{"index": "0", "name": "NVIDIA H200"}]}}}
    assert gpu_names.from_capture(cap) == ["NVIDIA H200"]
    assert gpu_names.from_capture({"host": {"gpu_memory": "not sampled (nvidia-smi not found)"}}) == []
    assert gpu_names.from_log("INFO worker.py:12] GPU 0: NVIDIA A100-SXM4-80GB, 80 GiB\n") == ["NVIDIA A100-SXM4-80GB"]
    # the real H200 log names no device: its "GPU KV cache size" line is not a name
    assert gpu_names.from_log((h200_arms.H200 / "batch" / "server.log").read_text()) == []
    p = tmp_path / "gpu_samples.csv"
    p.write_text((h200_arms.H200 / "batch" / "gpu_samples.csv").read_text())
    assert gpu_names.from_smi_csv(p) == []
    _with_name_column(p, "NVIDIA H200")
    assert gpu_names.from_smi_csv(p) == ["NVIDIA H200"]


def _limits(tmp_path: Path, edit) -> dict:
    from benchbook.commands.summary import build

    a = h200_arms.arm(tmp_path, "batch", ("conc1",))
    edit(a)
    dest = tmp_path / "camp"
    assert init_cmd.run(Namespace(dir=dest, inputs=[a], title=None, question=None, quiet=True)) == 0
    return build(dest)["audit"]


def test_the_decode_floor_from_the_samples_name_column(tmp_path):
    """The H200 arm folder as init takes it has no nvidia_smi_q.txt: with a name column in its samples the
    decode floor is drawn (14.93 GB of weights at 4.8 TB/s: 3.1 ms; TPOT 4.87 ms), naming the source."""
    au = _limits(tmp_path, lambda a: _with_name_column(a / "gpu_samples.csv", "NVIDIA H200"))
    (lim,) = [x for x in au["limits"] if "TPOT at concurrency 1" in x["what"]]
    assert lim["inputs"]["accelerator"] == "NVIDIA H200 SXM"
    assert lim["inputs"]["gpu_source"] == "runs/batch/1/gpu_samples.csv: name column"
    assert 0.60 < lim["share"] < 0.68  # the README's ~64 %


def test_the_capture_json_names_it(tmp_path):
    """A `capture run` point folder (result file, before/after scrapes, capture.json with the capture
    host's nvidia-smi facts) inside the process's folder."""

    def cap(a: Path) -> None:
        pt = a / "conc8"
        pt.mkdir()
        (pt / "bench_conc8.json").write_text((h200_arms.H200 / "batch" / "results" / "bench_conc8.json").read_text())
        for side in ("before", "after"):
            (pt / f"{side}.prom").write_text((h200_arms.H200 / "batch" / "metrics" / f"conc8_{side}.prom").read_text())
        doc = {
            "format": "benchbook.capture/1",
            "kind": "run",
            "result_files": ["bench_conc8.json"],
            "snapshots": [{"file": "before.prom", "phase": "before"}, {"file": "after.prom", "phase": "after"}],
            "host": {"gpu_memory": {"source": "nvidia-smi", "gpus": [{"index": "0", "name": "NVIDIA H200"}]}},
        }
        (pt / "capture.json").write_text(json.dumps(doc))

    au = _limits(tmp_path, cap)
    assert au["limits"] and all(
        x["inputs"]["gpu_source"] == "runs/batch/1/conc8/capture.json: host.gpu_memory.gpus[0].name"
        for x in au["limits"]
    )


def test_nothing_names_it_says_where_it_looked(tmp_path):
    au = _limits(tmp_path, lambda a: None)
    assert au["limits"] == []
    (note,) = au["limit_notes"]
    assert "no file names the GPU" in note and "a name column in the GPU samples" in note
