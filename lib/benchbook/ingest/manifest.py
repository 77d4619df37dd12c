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


def is_pd(manifest: Mapping[str, Any]) -> bool:
    """Is this a prefill/decode-disaggregated campaign? ``kind: "pd"`` or any arm with mode ``pd`` —
    decided here only (the campaign, its analysis, history and the PD loader ask this)."""
    arms = manifest.get("arms") if isinstance(manifest.get("arms"), Mapping) else {}
    return manifest.get("kind") == "pd" or any(isinstance(a, Mapping) and a.get("mode") == "pd" for a in arms.values())
