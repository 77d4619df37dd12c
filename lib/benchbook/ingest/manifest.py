"""The campaign manifest (``campaign.json``): the one reader, and what kind of campaign it describes.

Kept apart from :mod:`benchbook.ingest.campaign` so that the format-specific loaders (PD runs) and the
campaign object can both use it without importing each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchbook.errors import InputError
from benchbook.jsonfile import MAX_MANIFEST_BYTES, inside, load_json, validate


def open_manifest(path: str | Path, *, schema: bool = True) -> tuple[Path, Path, dict[str, Any]]:
    """(campaign folder, its campaign.json, the manifest validated against the campaign schema):
    the one reader of ``campaign.json``. ``schema=False`` (the renderer deciding which pages a
    folder gets) only checks that it is a JSON object whose ``arms`` is an object and ``runs`` an
    array; loading the campaign validates the rest."""
    root = Path(path)
    if not root.exists():
        raise InputError(root, "-", "no such campaign folder")
    if root.is_file():
        raise InputError(root, "-", "is a file; expected a campaign folder holding campaign.json")
    mpath = root / "campaign.json"
    if not mpath.exists():
        if _holds_runs(root):
            raise InputError(
                root,
                "-",
                "no campaign.json in this folder: it holds captures or benchmark results, not a campaign yet; "
                f"run `benchbook init` first (benchbook init data/{root.resolve().name} {root}), then use the "
                "folder it writes",
            )
        raise InputError(root, "-", "no campaign.json in this folder (an empty or non-campaign folder)")
    inside(root, mpath, mpath, "-", "campaign.json")
    manifest = load_json(mpath, MAX_MANIFEST_BYTES)
    if schema:
        validate(manifest, "campaign", mpath)
        return root, mpath, manifest
    if not isinstance(manifest, dict):
        raise InputError(mpath, "$", "expected a JSON object")
    for key, typ in (("arms", dict), ("runs", list)):
        if key in manifest and not isinstance(manifest[key], typ):
            raise InputError(mpath, f"$.{key}", f"expected {'an object' if typ is dict else 'an array'}")
    return root, mpath, manifest


# files a capture or a benchmark run leaves (docs/capture.md, docs/init.md): a folder holding them is
# what `benchbook init` turns into a campaign
_RUN_FILES = frozenset(
    {"capture.json", "phases.json", "requests.json", "gpu_samples.csv", "host_samples.csv", "events.jsonl"}
)


def _holds_runs(root: Path, depth: int = 3, budget: int = 2000) -> bool:
    """Whether ``root`` (to ``depth`` folders down, looking at ``budget`` entries at most) holds capture
    folders or run files: what a user renders by mistake before ``benchbook init``."""
    todo = [(root, 0)]
    seen = 0
    while todo:
        d, level = todo.pop()
        try:
            entries = sorted(d.iterdir())
        except OSError:
            continue
        for p in entries:
            seen += 1
            if seen > budget:
                return False
            if p.is_symlink():
                continue
            if p.is_file() and (p.name in _RUN_FILES or p.suffix == ".prom"):
                return True
            if p.is_dir() and level + 1 < depth and not p.name.startswith("."):
                todo.append((p, level + 1))
    return False


def counts(manifest: Mapping[str, Any]) -> dict[str, int]:
    """The campaign counted in the one vocabulary every command and page uses (README, docs/init.md):
    **arms** (server configurations), **server processes** (the repeats: a run's ``process``, else each
    run is one process) and **load points** (a results run's ``point``: one load of one process), besides
    the ``runs`` entries of campaign.json they are written as."""
    runs = [r for r in manifest.get("runs", []) if isinstance(r, Mapping)]
    # a results run without a process is one benchmark run of some server: not a process it names
    loose = [r for r in runs if not r.get("process") and r.get("harness") == "results"]
    processes = {str(r["process"]) if r.get("process") else f"run:{r.get('id')}" for r in runs if r not in loose}
    points = {(str(r.get("process") or r.get("id")), str(r["point"])) for r in runs if r.get("point")}
    return {
        "arms": len(manifest.get("arms") or {}),
        "processes": len(processes),
        "load_points": len(points),
        "benchmark_runs": len(loose),
        "entries": len(runs),
    }


def counts_text(manifest: Mapping[str, Any]) -> str:
    """``2 arms, 4 server processes, 16 load points (24 runs in campaign.json)``: :func:`counts` as one
    phrase (the runs entries only where they are not simply one per process)."""
    c = counts(manifest)

    def n(k: int, one: str, many: str) -> str:
        return f"{k} {one if k == 1 else many}"

    parts = [n(c["arms"], "arm", "arms")]
    if c["processes"] or not c["benchmark_runs"]:
        parts.append(n(c["processes"], "server process", "server processes"))
    if c["load_points"]:
        parts.append(n(c["load_points"], "load point", "load points"))
    if c["benchmark_runs"]:  # result files brought in on their own (init FILE…): each one benchmark run
        parts.append(n(c["benchmark_runs"], "benchmark run", "benchmark runs"))
    text = ", ".join(parts)
    if c["entries"] != c["processes"] + c["benchmark_runs"]:
        text += f" ({n(c['entries'], 'run', 'runs')} in campaign.json: one per process and harness or load point)"
    return text


def is_pd(manifest: Mapping[str, Any]) -> bool:
    """Is this a prefill/decode-disaggregated campaign? ``kind: "pd"`` or any arm with mode ``pd`` —
    decided here only (the campaign, its analysis, history and the PD loader ask this)."""
    arms = manifest.get("arms") if isinstance(manifest.get("arms"), Mapping) else {}
    return manifest.get("kind") == "pd" or any(isinstance(a, Mapping) and a.get("mode") == "pd" for a in arms.values())
