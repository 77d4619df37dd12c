"""The package's folders are the pipeline, and imports only point down the layers (docs/architecture.md)."""

from __future__ import annotations

import ast
from pathlib import Path

LIB = Path(__file__).resolve().parents[1] / "lib" / "benchbook"

# lowest first; a module may import its own layer and any layer listed before it
LAYERS = ["base", "metrics", "ingest", "analysis", "pages", "pipeline", "commands"]
BASE = {"errors", "findings", "jsonfile", "httpread", "__init__"}
ENTRY = {"__main__"}  # `python -m benchbook`: the command line's entry point, above every layer (like the script)


def _layer(module: str) -> str:
    """Layer of a dotted benchbook module name (``benchbook.analysis.stats`` -> ``analysis``)."""
    parts = module.split(".")
    if len(parts) == 1:
        return "base"
    if parts[1] in BASE or parts[1] in {"__version__", "templates", "schemas"}:
        return "base"
    return parts[1]


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text("utf-8"))
    out = []
    for node in ast.walk(tree):
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
    "history_page": "test_history",
    "schedule": "test_render_schedule",
    "__main__": "test_capture (python -m benchbook capture, with the notebook stack blocked)",
    "capture_folder": "test_capture, test_engine_capture",
    "capture_phases": "test_capture, test_engine_capture",
    "capture_run": "test_capture, test_engine_capture",
    "scrape": "test_capture, test_engine_capture",
    "results_runs": "test_results",
}


def test_each_module_has_tests_named_after_it():
    tests = {p.stem.removeprefix("test_") for p in (LIB.parents[1] / "tests").glob("test_*.py")}
    modules = {p.stem for p in LIB.rglob("*.py") if p.stem != "__init__"}
    unnamed = sorted(modules - tests - set(TESTS_UNDER_ANOTHER_NAME))
    assert unnamed == [], f"modules without tests/test_<module>.py: {unnamed}"
    stale = sorted(set(TESTS_UNDER_ANOTHER_NAME) & tests)
    assert stale == [], f"now tested by name, drop from TESTS_UNDER_ANOTHER_NAME: {stale}"


def _module_graph() -> dict[str, set[str]]:
    """Module -> the benchbook modules it imports (``from benchbook.x import y`` counts y when y is
    a module), lazy imports inside functions included."""
    mods = {
        "benchbook." + ".".join(p.relative_to(LIB).with_suffix("").parts).removesuffix(".__init__"): p
        for p in LIB.rglob("*.py")
    }
    graph: dict[str, set[str]] = {}
    for m, p in mods.items():
        deps = set()
        for n in ast.walk(ast.parse(p.read_text("utf-8"))):
            if isinstance(n, ast.ImportFrom) and n.module and n.module.startswith("benchbook"):
                for a in n.names:
                    full = f"{n.module}.{a.name}"
                    deps.add(full if full in mods else n.module)
            elif isinstance(n, ast.Import):
                deps |= {a.name for a in n.names if a.name.startswith("benchbook")}
        graph[m] = {d for d in deps if d in mods and d != m}
    return graph


# import circles still being taken apart (the list may only shrink)
KNOWN_CIRCLES = [{"benchbook.pipeline.render", "benchbook.pipeline.schedule"}]


def test_no_import_circle():
    """No module reaches itself through imports, lazy ones included (campaign <-> results_runs was one)."""
    graph = _module_graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                circles.append(comp)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert [c for c in circles if c not in KNOWN_CIRCLES] == []
