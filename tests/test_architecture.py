"""The package's folders are the pipeline, and imports only point down the layers (docs/architecture.md)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

LIB = Path(__file__).resolve().parents[1] / "lib" / "benchbook"

# lowest first; a module may import its own layer and any layer listed before it
LAYERS = ["base", "metrics", "ingest", "analysis", "pages", "pipeline", "commands"]
BASE = {"errors", "findings", "jsonfile", "httpread", "numfmt", "reads", "__init__"}
ENTRY = {"__main__"}  # `python -m benchbook`: the command line's entry point, above every layer (like the script)


def _layer(module: str) -> str:
    """Layer of a dotted benchbook module name (``benchbook.analysis.stats`` -> ``analysis``)."""
    parts = module.split(".")
    if len(parts) == 1:
        return "base"
    if parts[1] in BASE or parts[1] in {"__version__", "templates", "schemas"}:
        return "base"
    return parts[1]


@functools.cache
def _tree(path: Path) -> ast.Module:
    """A module's syntax tree, parsed once for every test here (they only read it)."""
    return ast.parse(path.read_text("utf-8"))


@functools.cache
def _nodes(path: Path) -> tuple[ast.AST, ...]:
    return tuple(ast.walk(_tree(path)))


def _imports(path: Path) -> list[tuple[int, str]]:
    out = []
    for node in _nodes(path):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "benchbook":
                out += [(node.lineno, f"benchbook.{a.name}") for a in node.names]
            elif node.module.startswith("benchbook."):
                out.append((node.lineno, node.module))
        elif isinstance(node, ast.ImportFrom) and node.level:
            out.append((node.lineno, "relative"))
        elif isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.startswith("benchbook.")]
    return out


def test_every_module_sits_in_a_layer_folder():
    flat = sorted(p.stem for p in LIB.glob("*.py") if p.stem not in BASE | ENTRY)
    assert flat == [], f"modules outside the layer folders: {flat}"
    for p in LIB.rglob("*.py"):
        rel = p.relative_to(LIB).parts
        assert len(rel) == 1 or rel[0] in LAYERS, p


def test_imports_point_down_the_layers():
    wrong = []
    for p in sorted(LIB.rglob("*.py")):
        rel = p.relative_to(LIB).parts
        own = "base" if len(rel) == 1 else rel[0]
        if len(rel) == 1 and p.stem in ENTRY:
            own = LAYERS[-1]
        for line, mod in _imports(p):
            if mod == "relative":
                wrong.append(f"{p.relative_to(LIB)}:{line}: relative import (use benchbook.<layer>.<module>)")
                continue
            target = _layer(mod)
            if LAYERS.index(target) > LAYERS.index(own):
                wrong.append(f"{p.relative_to(LIB)}:{line}: {own} imports {mod} ({target} is above it)")
    assert wrong == [], "\n".join(wrong)


def test_no_two_modules_share_a_name():
    names: dict[str, list[str]] = {}
    for p in LIB.rglob("*.py"):
        if p.stem != "__init__":
            names.setdefault(p.stem, []).append(str(p.relative_to(LIB)))
    assert {k: v for k, v in names.items() if len(v) > 1} == {}
    assert "pd" not in names, "a module named like the pandas alias"


# Class names defined in more than one module (the list may only shrink): each page module's Page is
# that page kind's view of the analysis; Point and RunFolder are still to be told apart.
KNOWN_SHARED_CLASS_NAMES = {"Page", "Point", "RunFolder"}


def test_no_two_classes_share_a_name():
    """A class name says what it holds, once: not two PDReport, three Window or four Finding (issue 33)."""
    names: dict[str, list[str]] = {}
    for p in sorted(LIB.rglob("*.py")):
        for node in _tree(p).body:
            if isinstance(node, ast.ClassDef):
                names.setdefault(node.name, []).append(str(p.relative_to(LIB)))
    shared = {k: v for k, v in names.items() if len(v) > 1}
    assert set(shared) <= KNOWN_SHARED_CLASS_NAMES, {
        k: v for k, v in shared.items() if k not in KNOWN_SHARED_CLASS_NAMES
    }
    assert KNOWN_SHARED_CLASS_NAMES <= set(shared), f"unique now, drop: {KNOWN_SHARED_CLASS_NAMES - set(shared)}"


# Library modules whose tests still live under another name (the list may only shrink): a new module
# gets tests/test_<module>.py, so its tests are found by name.
TESTS_UNDER_ANOTHER_NAME = {
    "errors": "test_bad_input, test_exit_codes",
    "jsonfile": "test_bad_input, test_summary",
    "findings": "test_reconcile, test_baseline",
    "exposition_checks": "test_conformance, test_prometheus_narrow",
    "pd_runs": "test_disaggregation",
    "gpu_runs": "test_run_layout, test_init_layout",
    "requests_ndjson": "test_bad_input, test_synth",
    "campaign": "test_bad_input, test_baseline",
    "formats": "test_vllm, test_sglang, test_formats_tools",
    "aiperf": "test_formats_tools",
    "llmperf": "test_formats_tools",
    "guidellm": "test_formats_tools",
    "sections": "test_baseline_page, test_hostile",
    "display": "test_render_display",
    "charts": "test_render_display",
    "cli": "test_exit_codes, test_render_cli",
    "history_page": "test_history, test_history_context",
    # the baseline page's sections split out of pages/baseline_page.py (issue 38), tested on a user's campaign
    "results_ladder_section": "test_user_campaign_layout, test_init_layout",
    "schedule": "test_render_schedule",
    "__main__": "test_capture (python -m benchbook capture, with the notebook stack blocked)",
    "capture_folder": "test_capture, test_engine_capture",
    "capture_phases": "test_capture, test_engine_capture",
    "capture_run": "test_capture, test_engine_capture",
    "scrape": "test_capture, test_engine_capture",
    "results_runs": "test_results",
    # issue 36 (reliability round four)
    "copies": "test_reliability_copies",
    "source_allow": "test_reliability_sources",
    # the renderer's jobs, split out of pipeline/render.py (issue 26); its tests kept their names
    "plan": "test_render, test_results",
    "params": "test_render_cli",
    "execute": "test_render, test_nothing_lost",
    "campaigns": "test_render, test_render_cli",
    "index": "test_render_cli, test_render_schedule",
    "prefill_sim": "test_admission, test_exit_codes",
}


def test_each_module_has_tests_named_after_it():
    tests = {p.stem.removeprefix("test_") for p in (LIB.parents[1] / "tests").glob("test_*.py")}
    modules = {p.stem for p in LIB.rglob("*.py") if p.stem != "__init__"}
    unnamed = sorted(modules - tests - set(TESTS_UNDER_ANOTHER_NAME))
    assert unnamed == [], f"modules without tests/test_<module>.py: {unnamed}"
    stale = sorted(set(TESTS_UNDER_ANOTHER_NAME) & tests)
    assert stale == [], f"now tested by name, drop from TESTS_UNDER_ANOTHER_NAME: {stale}"


def _module_name(path: Path) -> str:
    rel = path.relative_to(LIB.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _module_graph() -> dict[str, set[str]]:
    """Every benchbook module -> the benchbook modules it imports, at the top or inside a function
    (``from benchbook.pipeline import writes`` names the module ``benchbook.pipeline.writes``)."""
    modules = {_module_name(p): p for p in LIB.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        for node in _nodes(path):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("benchbook"):
                subs = [f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in modules]
                targets = subs if len(subs) == len(node.names) else [node.module, *subs]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.startswith("benchbook")]
            graph[name] |= {t for t in targets if t in modules and t != name}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[frozenset[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(frozenset(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


# Import circles still to be broken (issue 26; the list may only shrink): each set is one circle.
KNOWN_CIRCLES: set[frozenset[str]] = set()  # the list may only shrink; it is empty


def test_no_import_circles():
    """A module never imports, directly or through others, a module that imports it back — not even
    inside a function, where a circle hides from the import system but not from a reader."""
    found = set(_circles(_module_graph()))
    new = sorted(sorted(c) for c in found - KNOWN_CIRCLES)
    assert new == [], f"import circles: {new}"
    assert KNOWN_CIRCLES <= found, f"broken now, drop from KNOWN_CIRCLES: {sorted(map(sorted, KNOWN_CIRCLES - found))}"


def test_the_split_renderer_has_no_circle():
    """The renderer's jobs import down a chain: plan -> params -> execute -> campaigns -> schedule,
    index; the CLI sits above them in commands/ (issue 26)."""
    graph = _module_graph()
    order = ["plan", "params", "execute", "campaigns", "schedule"]
    for i, low in enumerate(order):
        for high in order[i + 1 :]:
            assert f"benchbook.pipeline.{high}" not in graph[f"benchbook.pipeline.{low}"], (low, high)
    up = sorted(
        (m, t)
        for m, ts in graph.items()
        if not m.startswith("benchbook.commands") and m.removeprefix("benchbook.") not in ENTRY
        for t in ts
        if ".commands" in t
    )
    assert up == []


# Private names still used outside their module (the list may only shrink): "module: name".
KNOWN_PRIVATE_CROSSINGS: set[str] = {
    "benchbook.metrics.promsource: benchbook.metrics.prometheus._fmt_labels",
}


def test_no_private_name_crosses_a_module():
    """``_name`` is its module's own: no other module imports it or reaches it as ``module._name``."""
    modules = {_module_name(p) for p in LIB.rglob("*.py")}
    found = set()
    for p in sorted(LIB.rglob("*.py")):
        me = _module_name(p)
        bound: dict[str, str] = {}  # local name -> benchbook module
        for node in _nodes(p):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("benchbook"):
                for a in node.names:
                    full = f"{node.module}.{a.name}"
                    if full in modules:
                        bound[a.asname or a.name] = full
                    elif a.name.startswith("_") and not a.name.startswith("__"):
                        found.add(f"{me}: {node.module}.{a.name}")
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.startswith("benchbook") and a.asname:
                        bound[a.asname] = a.name
        for node in _nodes(p):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in bound
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                found.add(f"{me}: {bound[node.value.id]}.{node.attr}")
    new = sorted(found - KNOWN_PRIVATE_CROSSINGS)
    assert new == [], "private names used outside their module:\n" + "\n".join(new)
    assert KNOWN_PRIVATE_CROSSINGS <= found, f"gone now, drop: {sorted(KNOWN_PRIVATE_CROSSINGS - found)}"


# The analysis entries a page may import: the campaign's analysis object and its builder, the result
# set's and the history's analysis objects and their builders (issue 26: pages read, never compute).
PAGE_ANALYSIS_ENTRIES = {
    "benchbook.analysis.campaign_analysis": {"analyse", "CampaignAnalysis"},
    "benchbook.analysis.resultset": {"build", "ResultSet"},
    "benchbook.analysis.history": {"load_history", "History"},
}


def _page_analysis_imports() -> list[tuple[str, int, str, str]]:
    """(page file, line, module, name) of every name a page imports from benchbook.analysis."""
    out = []
    for p in sorted((LIB / "pages").glob("*.py")):
        for node in _nodes(p):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("benchbook"):
                for a in node.names:
                    full = f"{node.module}.{a.name}"
                    if full == "benchbook.analysis":  # `from benchbook import analysis`
                        out.append((p.name, node.lineno, full, ""))
                    elif full.startswith("benchbook.analysis."):
                        mod, _, name = full.rpartition(".")
                        out.append((p.name, node.lineno, mod, name))
            elif isinstance(node, ast.Import):
                out += [
                    (p.name, node.lineno, a.name, "") for a in node.names if a.name.startswith("benchbook.analysis")
                ]
    return out


def _allowed_for_a_page(mod: str, name: str) -> str | None:
    """None where a page may import ``mod.name``, else why not."""
    import enum
    import importlib
    import importlib.util
    import inspect

    if name in PAGE_ANALYSIS_ENTRIES.get(mod, ()):
        return None
    if not name:
        return "a whole analysis module"
    try:
        obj = getattr(importlib.import_module(mod), name)
    except (ImportError, AttributeError):
        return "a whole analysis module" if importlib.util.find_spec(f"{mod}.{name}") else "not found"
    if inspect.ismodule(obj):
        return "a whole analysis module"
    if inspect.isclass(obj) or isinstance(obj, enum.Enum):
        return None  # a type (dataclass, Enum, result class)
    if name.isupper() and not callable(obj):
        return None  # a constant describing a rule
    return "a function: make it a property or method of the analysis object"


def test_pages_import_only_the_analysis_object_and_its_types():
    """A page formats what the analysis decided: from benchbook.analysis it imports the analysis
    object (and its builder) and types/constants — never a function that computes (issue 26)."""
    wrong = []
    for page, line, mod, name in _page_analysis_imports():
        why = _allowed_for_a_page(mod, name)
        if why:
            wrong.append(f"pages/{page}:{line}: {mod}{'.' + name if name else ''} ({why})")
    assert wrong == [], "pages compute instead of reading the analysis:\n" + "\n".join(wrong)


def test_the_page_import_rule_refuses_functions_and_modules():
    assert _allowed_for_a_page("benchbook.analysis.stats", "fmt_pct")
    assert _allowed_for_a_page("benchbook.analysis", "stats")
    assert _allowed_for_a_page("benchbook.analysis.verdict", "State") is None
    assert _allowed_for_a_page("benchbook.analysis.verdict", "RULE_TEXT") is None
    assert _allowed_for_a_page("benchbook.analysis.campaign_analysis", "analyse") is None
