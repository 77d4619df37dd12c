"""A page's parameters: the types its notebook declares, the campaign's ``render.yml``, ``--params``
overrides, and the rule that a parameter file never chooses a page's input.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchbook.errors import InputError, RenderError, first_line
from benchbook.pipeline.plan import PAGES, page_title


def declared_parameters(notebook: Path) -> dict[str, Any]:
    """The parameters a notebook's ``parameters`` cell declares (name -> papermill's description)."""
    import papermill

    try:
        return dict(papermill.inspect_notebook(str(notebook)))
    except Exception as e:  # noqa: BLE001 - a broken page notebook is a render failure, not a crash
        raise RenderError(
            Path(notebook).stem, f"cannot read the parameters of {notebook}: {type(e).__name__}: {first_line(str(e))}"
        ) from None


_TYPES = {"str": (str,), "int": (int,), "float": (int, float), "bool": (bool,), "list": (list, tuple), "dict": (dict,)}


def check_parameter_types(params: Mapping[str, Any], declared: Mapping[str, Any], source: str = "parameters") -> None:
    """A parameter whose value does not have the declared literal type is bad input (exit 2)."""
    for name, value in params.items():
        typ = (declared.get(name) or {}).get("inferred_type_name")
        ok = _TYPES.get(typ)
        if ok is None:
            continue
        if isinstance(value, bool) and typ in ("int", "float"):
            ok = ()
        if not isinstance(value, ok):
            raise InputError(
                source, name, f"expected {typ} (as the notebook declares it), got {type(value).__name__} {value!r}"
            )


# notebook parameters that choose what a page reads: set by the renderer from the campaign folder (or
# --compare's files), never by render.yml or --params, so a parameter file cannot pull another
# folder's data onto a campaign's page
INPUT_PARAMETERS = frozenset({"campaign", "files", "inputs", "engine_before", "engine_after"})


def check_overrides(overrides: Mapping[str, Mapping[str, Any]], source: str, allowed: frozenset = frozenset()) -> None:
    """Parameter files set a page's parameters only: naming an input (``campaign``, ``files`` …) is
    bad input (exit 2), except the ``allowed`` ones."""
    for page, params in overrides.items():
        for k in sorted(set(params) & (INPUT_PARAMETERS - allowed)):
            raise InputError(
                source,
                f"$.{page}.{k}",
                f"{k!r} chooses which files the page reads; render.yml and --params set a page's parameters, "
                "not its input (render the other folder itself)",
            )


def page_parameters(
    campaign: Path, manifest: Mapping[str, Any], page: str, notebook: Path, overrides: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Parameters for one page: ``campaign`` (the folder's name: the kernel runs in its parent folder,
    see :func:`benchbook.pipeline.execute.render_page`) and ``title`` when the notebook declares
    them, then the overrides (``render.yml``, ``--params``); an override the notebook does not declare, or one that names an input (:data:`INPUT_PARAMETERS`), is an input error."""
    declared = declared_parameters(notebook)
    check_overrides({page: overrides or {}}, "--params")
    params: dict[str, Any] = {}
    if "campaign" in declared:
        params["campaign"] = Path(campaign).resolve().name
    if "title" in declared:
        params["title"] = page_title(manifest, campaign, page)
    for k, v in (overrides or {}).items():
        if k not in declared:
            raise InputError("--params", f"$.{page}.{k}", f"{notebook.name} declares no parameter {k!r}")
        params[k] = v
    return params


PARAMS_FILES = ("render.yml", "render.yaml", "render.json")


def campaign_params(campaign: Path) -> dict[str, dict[str, Any]]:
    """The campaign's own scheduled-run parameters: ``<campaign>/render.yml`` (or .yaml/.json),
    ``{page kind: {parameter: value}}``. Command-line ``--params`` override them."""
    f = params_file(campaign)
    return load_params(f) if f is not None else {}


def params_file(campaign: Path) -> Path | None:
    """The campaign's parameter file (the first of :data:`PARAMS_FILES` that exists), or None."""
    return next((Path(campaign) / n for n in PARAMS_FILES if (Path(campaign) / n).is_file()), None)


def merge_params(
    base: Mapping[str, Mapping[str, Any]], top: Mapping[str, Mapping[str, Any]]
) -> dict[str, dict[str, Any]]:
    return {page: {**base.get(page, {}), **top.get(page, {})} for page in set(base) | set(top)}


def load_params(path: Path | None) -> dict[str, dict[str, Any]]:
    """A parameter file (JSON or YAML): ``{page kind: {parameter: value}}``; bad input is exit 2."""
    from benchbook.jsonfile import load_json, load_yaml

    if path is None:
        return {}
    # the input limits hold here too: size, nesting, duplicate keys, no YAML aliases
    data = load_yaml(path) if path.suffix in (".yaml", ".yml") else load_json(path)
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise InputError(path, "$", "expected {page kind: {parameter: value}}")
    bad = sorted(set(data) - set(PAGES))
    if bad:
        raise InputError(path, f"$.{bad[0]}", f"unknown page kind; choose from {', '.join(PAGES)}")
    return data
