"""The suite's marks, derived from what each test uses (tests/conftest.py applies them at collection).

A test file never writes these marks itself and a new file cannot escape them: every test is marked
from the fixtures it requests (its whole fixture closure) and from the code it reaches — its own
body, the module-level helpers it calls (in its module or imported from another tests/ module, followed
transitively) and the bodies of the test-module fixtures it uses:

* ``engine``            — requests ``serial_engine``, ``batched_engine`` or ``starved_engine``, or its file
  imports tests/engine.py (a real vLLM CPU engine);
* ``browser``           — requests ``chromium`` or ``open_page`` (headless Chromium);
* ``prometheus_server`` — its file imports tests/promserver.py (a real Prometheus);
* ``slow``              — executes notebooks: requests a notebook fixture (``warm_kernel``,
  ``bundled_reports``, ``smoke_notebook``) or reaches one of :data:`NOTEBOOK_NAMES` or the ``"render"``
  command (``main(["render", …])``, ``benchbook render`` in a subprocess), or holds it in its parameters.

The static part is a backstop's first half: conftest also refuses, at run time, any in-process page
render by a test that is not marked ``slow`` (with a message naming this module), so a spelling the
scan misses fails the test instead of slipping into ``make test-fast``.
"""

from __future__ import annotations

import ast
import inspect
import sys
import types
from functools import cache
from pathlib import Path

TESTS = Path(__file__).resolve().parent

ENGINE_FIXTURES = frozenset({"serial_engine", "batched_engine", "starved_engine"})
BROWSER_FIXTURES = frozenset({"chromium", "open_page"})
NOTEBOOK_FIXTURES = frozenset({"warm_kernel", "bundled_reports", "smoke_notebook"})
# what starts a kernel or renders a page, by the name a test spells it with
NOTEBOOK_NAMES = frozenset(
    {
        "render_page",
        "render_campaign",
        "render_all",
        "run_job",
        "run_jobs",
        "Pool",
        "WorkerKernel",
        "_LazyKernel",
        "execute_notebook",
        "papermill",
        "nbclient",
    }
)
NOTEBOOK_STRINGS = frozenset({"render"})  # the CLI command, in-process or in a subprocess
HELPER_MODULES = {"engine": "engine", "browser": "browser", "promserver": "prometheus_server"}
MARKS = ("engine", "browser", "prometheus_server", "slow")


def is_test_module(mod: types.ModuleType | None) -> bool:
    f = getattr(mod, "__file__", None)
    return bool(f) and Path(f).resolve().parent == TESTS


@cache
def _scan(path: str) -> dict[str, tuple[frozenset[str], frozenset[str]]]:
    """Each top-level function or class of a tests/ module: (names it references, strings it holds)."""
    tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    out = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names, strings = set(), set()
            for n in ast.walk(node):
                if isinstance(n, ast.Name):
                    names.add(n.id)
                elif isinstance(n, ast.Attribute):
                    names.add(n.attr)
                elif isinstance(n, ast.Constant) and isinstance(n.value, str):
                    strings.add(n.value)
                elif isinstance(n, ast.alias):
                    names.add(n.name.rsplit(".", 1)[-1])
                    names.add(n.name)
            out[node.name] = (frozenset(names), frozenset(strings))
    return out


def _reaches_notebooks(start: list[object]) -> bool:
    """Whether any of these functions (or the tests/ helpers they name, transitively) renders."""
    seen: set[tuple[str, str]] = set()
    todo = [f for f in start if f is not None]
    while todo:
        f = inspect.unwrap(todo.pop())
        mod = sys.modules.get(getattr(f, "__module__", "") or "")
        if not is_test_module(mod):
            continue
        qual = getattr(f, "__qualname__", getattr(f, "__name__", ""))
        top = qual.split(".", 1)[0]
        key = (mod.__name__, top)
        if key in seen:
            continue
        seen.add(key)
        names, strings = _scan(mod.__file__).get(top, (frozenset(), frozenset()))
        if names & NOTEBOOK_NAMES or strings & NOTEBOOK_STRINGS:
            return True
        g = vars(mod)
        for n in names:
            obj = g.get(n)
            if isinstance(obj, (types.FunctionType, type)) and is_test_module(sys.modules.get(obj.__module__)):
                todo.append(obj)
    return False


def _holds_render(value) -> bool:
    """Whether a test's parameters hold the render command (a parametrized table of command lines)."""
    if isinstance(value, str):
        return value in NOTEBOOK_STRINGS
    if isinstance(value, dict):
        value = list(value.values())
    return isinstance(value, (list, tuple)) and any(_holds_render(v) for v in value)


def derived_marks(item) -> set[str]:
    """The marks of one collected test (a pytest Function item)."""
    got: set[str] = set()
    used = set(getattr(item, "fixturenames", ()))
    mod = getattr(item, "module", None)
    for v in vars(mod).values() if mod else ():  # `import engine as eng`, `from promserver import running`
        home = v.__name__ if isinstance(v, types.ModuleType) else getattr(v, "__module__", None)
        if home in HELPER_MODULES and is_test_module(sys.modules.get(home)):
            got.add(HELPER_MODULES[home])
    if used & ENGINE_FIXTURES:
        got.add("engine")
    if used & BROWSER_FIXTURES:
        got.add("browser")
    info = getattr(item, "_fixtureinfo", None)
    own = set(info.argnames) if info else set()  # warm_kernel is in every closure (conftest's autouse renders)
    if (used - {"warm_kernel"}) & NOTEBOOK_FIXTURES or "warm_kernel" in own:
        got.add("slow")
    else:
        fixture_funcs = []
        for name in used:
            for fd in info.name2fixturedefs.get(name, ()) if info else ():
                if getattr(fd.func, "__module__", None) != "conftest":  # conftest's are in the tables above
                    fixture_funcs.append(fd.func)
        if _reaches_notebooks([getattr(item, "function", None), *fixture_funcs]) or _holds_render(
            getattr(getattr(item, "callspec", None), "params", {})
        ):
            got.add("slow")
    return got


# ----------------------------------------------------------------------------------- the worker that waits
# Files whose tests spend most of their time waiting, not computing: on a deadline (a hostile or slow fake server,
# a request timeout), a fake server's pace, a capture's scrape interval or a sampler's tick. Measured by each
# test's CPU (the worker and its subprocesses) against its wall time under `make test`: these used 17 of 72 s.
# With `--wait-worker` (make test, make test-fast) the last xdist worker runs these files alone, beside the
# workers that compute, so a wait no longer holds a computing worker while a core sits idle. A file not listed
# runs on a computing worker, as before; a listed file whose tests render, open Chromium or drive an engine is
# refused at collection (the waiting worker must not compete for a core), as is a listed file that is gone.
WAITS = frozenset(
    {
        "tests/test_capture.py",
        "tests/test_capture_ladder.py",
        "tests/test_capture_memory.py",
        "tests/test_capture_prompts.py",
        "tests/test_hostile_servers.py",
        "tests/test_httpread.py",
        "tests/test_openai_answers.py",
        "tests/test_promsource_server.py",
        "tests/test_reliability_capture.py",
        "tests/test_step_audits.py",
    }
)
WAITS_MAY_NOT = frozenset({"engine", "browser", "slow"})


def waits_problems(root: Path, marked: dict[str, set[str]]) -> list[str]:
    """What is wrong with :data:`WAITS` for the collected tests ``marked`` ({node id: derived marks}): a listed
    file that does not exist, or a test of a listed file with a mark the waiting worker may not carry."""
    out = [f"tests/marks.py WAITS lists {f}, which does not exist" for f in sorted(WAITS) if not (root / f).is_file()]
    for nodeid, got in marked.items():
        bad = sorted(got & WAITS_MAY_NOT)
        if bad and nodeid.split("::", 1)[0] in WAITS:
            out.append(
                f"tests/marks.py WAITS lists {nodeid.split('::', 1)[0]}, but {nodeid} is marked {', '.join(bad)}: "
                "the waiting worker runs no notebook, browser or engine (move the test, or the file off the list)"
            )
    return out


def pick_unit(queued: list[str], waiter: bool) -> str | None:
    """The next work unit (an xdist group: a file, or "engine") for a worker, from the queue in run order. The
    waiting worker takes only :data:`WAITS` files, and stops when none is left; a computing worker takes the
    first unit that is not one, and the waiting worker's files only once nothing else is left (so a slow or lost
    waiting worker never leaves them unrun)."""
    for scope in queued:
        if (scope in WAITS) == waiter:
            return scope
    return None if waiter else next(iter(queued), None)
