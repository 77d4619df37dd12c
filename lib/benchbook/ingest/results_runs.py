"""Results runs (``harness: "results"``): benchmark-tool result files plus, optionally, the engine's
``/metrics`` around them.

A results run folder holds ``results.json`` (schema ``benchbook.results/1``, data/README.md) naming

* ``files`` — result files in any format :mod:`benchbook.ingest.formats` reads (vLLM bench serve,
  SGLang bench_serving, GuideLLM, AIPerf, llmperf);
* optionally the engine window: ``metrics_before`` + ``metrics_after`` (capture files) or
  ``window`` (``{t0, t1}``, Unix seconds, read from the run's Prometheus source);
* optionally ``snapshots``: periodic captures taken during the run.

Every path is relative to the run folder and must stay inside the campaign folder: no absolute
path, no ``../`` or symlink leading out (``jsonfile.join_inside``; a page shows nothing from outside
its own campaign folder).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from benchbook.errors import InputError
from benchbook.jsonfile import join_inside, load_json, validate


class RunRef(Protocol):
    """What the reader needs of a campaign's run (``ingest.campaign.Run`` has it). This module does not
    import the campaign module: the campaign imports this one (its lazy results part), one way only."""

    id: str
    arm: str
    path: Path
    file: Path


@dataclass(frozen=True)
class ResultsRun:
    """One results run of a campaign, its paths resolved and checked."""

    id: str
    arm: str
    path: Path  # the run folder
    file: Path  # its results.json
    files: list[Path]
    metrics_before: Path | None = None
    metrics_after: Path | None = None
    window: tuple[float, float] | None = None
    snapshots: list[tuple[Path, float | None]] = field(default_factory=list)
    series: list[Path] = field(default_factory=list)  # JSON Lines scrape series ({t_start, t_end, text})
    labels: dict[str, str] = field(default_factory=dict)  # metrics_labels: picks the engine's series
    labels_key: str = "$.metrics_labels"  # where in campaign.json to set them
    complete: bool = True
    doc: dict[str, Any] = field(default_factory=dict)

    @property
    def has_engine(self) -> bool:
        return self.metrics_before is not None or self.window is not None

    def input_files(self) -> list[Path]:
        out = [self.file, *self.files]
        if self.metrics_before is not None and self.metrics_after is not None:
            out += [self.metrics_before, self.metrics_after]
        out += [p for p, _ in self.snapshots]
        out += self.series
        return out


def in_run(camp_root: Path, run_path: Path, rel: Any, file: Path, where: str, what: str) -> Path:
    """``run_path / rel``, checked to stay inside the campaign folder (``jsonfile.join_inside``:
    relative, no ``../`` out, no symlink out) and to exist."""
    full = join_inside(camp_root, run_path, rel, file, where, what)
    if not full.is_file():
        raise InputError(file, where, f"references {rel!r}, which does not exist in the run folder")
    return full


def metrics_labels(manifest: dict[str, Any], run_id: str) -> tuple[dict[str, str], str]:
    """The campaign's ``metrics_labels`` with the run's merged over it, and the key to set them."""
    base = manifest.get("metrics_labels") or {}
    for i, r in enumerate(manifest.get("runs", [])):
        if r.get("id") == run_id:
            return {**base, **(r.get("metrics_labels") or {})}, f"$.runs[{i}].metrics_labels"
    return dict(base), "$.metrics_labels"


def read_results_run(root: Path, manifest: dict[str, Any], run: RunRef, has_prometheus: bool) -> ResultsRun:
    """Read and check one results run's ``results.json`` of the campaign at ``root`` (its
    ``manifest``); ``has_prometheus``: the campaign or the run names a Prometheus source (a window
    needs one). Every problem in the file at once."""
    from benchbook.errors import InputErrors

    doc = load_json(run.file)
    validate(doc, "results", run.file)
    errors: list[InputError] = []

    def resolve(rel: str, where: str, what: str) -> Path | None:
        try:
            return in_run(root, run.path, rel, run.file, where, what)
        except InputError as e:
            errors.append(e)
            return None

    files = [resolve(f, f"$.files[{i}]", "result file") for i, f in enumerate(doc["files"])]
    before = resolve(doc["metrics_before"], "$.metrics_before", "capture") if "metrics_before" in doc else None
    after = resolve(doc["metrics_after"], "$.metrics_after", "capture") if "metrics_after" in doc else None
    snaps = []
    for i, s in enumerate(doc.get("snapshots", [])):
        p = resolve(s["file"], f"$.snapshots[{i}].file", "snapshot")
        snaps.append((p, s.get("unix_s")))
    series = [
        resolve(s["file"], f"$.scrape_series[{i}].file", "scrape series")
        for i, s in enumerate(doc.get("scrape_series", []))
    ]
    window = None
    if "window" in doc:
        t0, t1 = float(doc["window"]["t0"]), float(doc["window"]["t1"])
        if not t1 > t0:
            errors.append(InputError(run.file, "$.window", f"t1 {t1} is not after t0 {t0}"))
        elif not has_prometheus:
            errors.append(
                InputError(
                    run.file,
                    "$.window",
                    "gives a window but neither campaign.json nor its run names a prometheus source "
                    '(add "prometheus": {"url": …, "matchers": {…}} to campaign.json)',
                )
            )
        window = (t0, t1)
    if errors:
        raise errors[0] if len(errors) == 1 else InputErrors(errors)
    labels, key = metrics_labels(manifest, run.id)
    return ResultsRun(
        id=run.id,
        arm=run.arm,
        path=run.path,
        file=run.file,
        files=[f for f in files if f is not None],
        metrics_before=before,
        metrics_after=after,
        window=window,
        snapshots=[(p, t) for p, t in snaps if p is not None],
        series=[p for p in series if p is not None],
        labels=labels,
        labels_key=key,
        complete=bool(doc.get("complete", True)),
        doc=doc,
    )


def timed_scrapes(
    snapshots: list[tuple[Path, float | None]], series: list[Path], names: list[str], *, untimed: bool = False
) -> list[tuple[float | None, Any]]:
    """Every /metrics scrape taken during a run, parsed for ``names``: the periodic snapshots that carry a
    Unix time (``untimed``: the others too, with None) and every line of the scrape series (its time the
    scrape's middle), sorted by time (untimed last)."""
    from benchbook.ingest.telemetry import scrape_lines
    from benchbook.metrics import prometheus

    out: list[tuple[float | None, Any]] = []
    for path, t in snapshots:
        if t is not None or untimed:
            out.append((t, prometheus.read(path, names)))
    for path in series:
        for lineno, t, text in scrape_lines(path):
            out.append((t, prometheus.parse(text, f"{path}: line {lineno}", names)))
    return sorted(out, key=lambda x: (x[0] is None, x[0] or 0.0))
