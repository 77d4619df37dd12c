"""Shared pytest fixtures and the suite's marks (docs/testing.md). Keep this file small: add a fixture, don't add logic.

Marks — applied here at collection, derived from what each test uses (tests/marks.py), never written
by hand: ``engine`` (a real vLLM CPU engine), ``browser`` (headless Chromium), ``slow`` (executes
notebooks), ``prometheus_server`` (a real Prometheus). ``make test-fast`` deselects all four.
``fresh_kernel`` is the one mark a test writes itself: its page renders start their own kernels (the
tests that compare a reused kernel with a fresh one).

Fixtures:

* ``serial_engine``, ``batched_engine``, ``starved_engine`` (session) — a real vLLM CPU engine of each
  configuration in tests/engine.py ``KINDS`` (``--max-num-seqs 1``; ``16``; ``16`` on 17 KV blocks),
  started once per test run on first use and shared. Each is an ``engine.EngineHandle``: ``.url``,
  ``.pid``, ``.model``, ``.model_dir``, ``.log``, ``.metrics``. One engine runs at a time (asking for
  another kind stops the running one, by its process group); the engine tests run first, on one xdist
  worker, ordered by kind, so each kind starts once. ``engine_pool`` is the pool behind them.
* ``bundled_reports`` (session) — ``render --all data -j 1`` done once per test run (one xdist worker
  renders under a file lock, the others wait and read) with ``SOURCE_DATE_EPOCH=BUNDLED_EPOCH`` and
  ``BENCHBOOK_GIT_SHA=BUNDLED_SHA``: ``<folder>/<campaign>/<page>.html`` (+ ``.ipynb``,
  ``.values.json``), ``index.html``, ``history.html``. Read-only: copy what you change.
* ``warm_kernel`` (session) — one kernel per xdist worker (``pipeline.kernels.WorkerKernel``, reset
  before every notebook, the environment synchronized). Every in-process page render of a ``slow``
  test runs in it (``render_page`` without a kernel, ``render CAMPAIGN``, ``render --all``, which also
  runs ``-j 1`` unless the test passes ``-j``), unless the test is marked ``fresh_kernel``. A test not
  marked ``slow`` that renders a page fails, naming tests/marks.py.
* ``chromium`` / ``open_page`` — headless Chromium (``open_page(path, table_ids=[...], screenshot=...)``).
* ``smoke_notebook`` — notebooks/_smoke.ipynb, a tiny parameterized page notebook.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# every chart built under test (in this process, render workers and kernels) is validated by Altair
os.environ["BENCHBOOK_VALIDATE_CHARTS"] = "1"
sys.path.insert(0, str(Path(__file__).resolve().parent))  # tests/*.py helpers importable by name

import engine as eng  # noqa: E402
import marks  # noqa: E402

BUNDLED_EPOCH = "1790000000"  # 2026-09-21
BUNDLED_SHA = "0" * 40  # teammates committing mid-run must not change the SHA a page shows


# ----------------------------------------------------------------------------------- marks and order


GROUPS_ENV = "BENCHBOOK_TEST_GROUPS"  # where the xdist workers leave {node id: group} for the controller


def pytest_addoption(parser):
    parser.addoption(
        "--wait-worker",
        action="store_true",
        help="benchbook: with -n N (N >= 2) and --dist loadgroup, the last worker runs only the files that mostly wait "
        "(tests/marks.py WAITS) and the others run the rest (make test and make test-fast pass it)",
    )


def pytest_configure(config):
    if not os.environ.get("PYTEST_XDIST_WORKER") and config.pluginmanager.hasplugin("xdist"):
        if config.getoption("numprocesses", None) and config.getoption("dist", None) == "loadgroup":
            import tempfile

            os.environ[GROUPS_ENV] = str(Path(tempfile.mkdtemp(prefix="benchbook-test-groups-")) / "groups.json")


def pytest_unconfigure(config):
    path = os.environ.get(GROUPS_ENV)
    if path and not os.environ.get("PYTEST_XDIST_WORKER"):
        import shutil

        shutil.rmtree(Path(path).parent, ignore_errors=True)


def pytest_xdist_make_scheduler(config, log):
    """``--dist loadgroup`` on the groups conftest gives (xdist's own loadgroup reads them from an
    ``@group`` suffix it writes into the node id, which pytest 9.2's node ids no longer take): the
    workers write {node id: group} at collection, the controller schedules one group per work unit,
    in the workers' order (``--no-loadscope-reorder``)."""
    if config.getoption("dist", None) != "loadgroup" or not os.environ.get(GROUPS_ENV):
        return None
    from xdist.scheduler import LoadScopeScheduling
    from xdist.workermanage import parse_tx_spec_config

    class Groups(LoadScopeScheduling):
        _groups: dict[str, str] | None = None
        # --wait-worker: the last worker takes the files that mostly wait, the others the rest (marks.pick_unit)
        waiter = f"gw{len(parse_tx_spec_config(config)) - 1}" if config.getoption("wait_worker") else None

        def _split_scope(self, nodeid: str) -> str:
            if self._groups is None:
                self._groups = json.loads(Path(os.environ[GROUPS_ENV]).read_text())
            return self._groups.get(nodeid) or nodeid.split("::", 1)[0]

        def _assign_work_unit(self, node) -> None:
            if self.waiter is None:
                return super()._assign_work_unit(node)
            scope = marks.pick_unit(list(self.workqueue), node.gateway.id == self.waiter)
            if scope is None:  # nothing left for this worker: it ends once what it holds has run
                node.shutdown()
                return
            self.workqueue.move_to_end(scope, last=False)  # the base class takes the queue's first unit
            super()._assign_work_unit(node)

    if config.getoption("wait_worker") and len(parse_tx_spec_config(config)) < 2:
        raise pytest.UsageError("--wait-worker needs two xdist workers or more (-n 2)")
    return Groups(config, log)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Mark every test from what it uses, group it for ``--dist loadgroup`` (the engine tests on one
    worker, every other file on one worker like ``--dist loadfile``) and order the run: the engine tests
    first (by engine kind), then the files that execute notebooks, then the rest."""
    kinds = {f"{k}_engine": i for i, k in enumerate(eng.KIND_ORDER)}
    info = []  # (item, file, rank, (last, first) engine kind it uses: len(kinds) for one that starts its own)
    for item in items:
        got = marks.derived_marks(item)
        for m in sorted(got - {m.name for m in item.iter_markers()}):
            item.add_marker(m)
        path = item.nodeid.split("::", 1)[0]
        if "engine" in got:
            item.add_marker(pytest.mark.xdist_group("engine"))
            used = [kinds[f] for f in item.fixturenames if f in kinds]
            info.append((item, path, 0, (max(used), min(used)) if used else (len(kinds), len(kinds))))
        elif any(f in item.fixturenames for f in TWO_PROCESS):  # one build and analysis for every file using it
            item.add_marker(pytest.mark.xdist_group("two-process"))
            info.append((item, path, 1 if got else 2, (0, 0)))
        else:
            item.add_marker(pytest.mark.xdist_group(path))
            info.append((item, path, 1 if got else 2, (0, 0)))
    # the pool's tests first, in the order the pool's engines start: by the last kind a test needs (it asks for
    # them in the pool's order), then the first, so that each test finds running the kind the one before it left
    # (a test needing batched then starved comes after the batched ones and before the starved ones); a file's
    # tests of one kind together (its module fixtures set up once: a file with tests of a later kind comes back to
    # it, and only the fixtures those use are set up again), the file needing the earliest kind first. Then the
    # engine tests that start engines of their own (the pool stopped before them: _own_engines)
    start, first = {}, {}
    for i, (_, path, rank, (_, lo)) in enumerate(info):
        start.setdefault(path, i)
        if rank == 0:
            first[path] = min(first.get(path, lo), lo)
    keys = {
        it: (rank, hi == len(kinds) if rank == 0 else 0, hi, lo, first.get(path, 0), start[path], i)
        for i, (it, path, rank, (hi, lo)) in enumerate(info)
    }
    items.sort(key=keys.__getitem__)
    problems = marks.waits_problems(ROOT, {it.nodeid: {m.name for m in it.iter_markers()} for it in items})
    if problems:
        raise pytest.UsageError("\n".join(problems))
    groups = os.environ.get(GROUPS_ENV)
    if groups and os.environ.get("PYTEST_XDIST_WORKER"):  # for the controller's scheduler (every worker alike)
        tmp = Path(f"{groups}.{os.environ['PYTEST_XDIST_WORKER']}")
        tmp.write_text(json.dumps({it.nodeid: it.get_closest_marker("xdist_group").args[0] for it in items}))
        os.replace(tmp, groups)


# ----------------------------------------------------------------------------------- engines


@pytest.fixture(scope="session")
def engine_pool(tmp_path_factory):
    pool = eng.EnginePool(tmp_path_factory.mktemp("engines"))
    yield pool
    pool.close()


@pytest.fixture(autouse=True)
def _own_engines(request):
    """An engine test that starts engines of its own (scripts/measure-campaign) runs with the pool's stopped."""
    node = request.node
    if node.get_closest_marker("engine") and not set(request.fixturenames) & {f"{k}_engine" for k in eng.KINDS}:
        request.getfixturevalue("engine_pool").close()


@pytest.fixture(scope="session")
def serial_engine(engine_pool) -> eng.EngineHandle:
    """``vllm serve --max-num-seqs 1``: one request at a time."""
    return eng.EngineHandle(engine_pool, "serial")


@pytest.fixture(scope="session")
def batched_engine(engine_pool) -> eng.EngineHandle:
    """``vllm serve --max-num-seqs 16``."""
    return eng.EngineHandle(engine_pool, "batched")


@pytest.fixture(scope="session")
def starved_engine(engine_pool) -> eng.EngineHandle:
    """``--max-num-seqs 16`` on 17 KV blocks of 128 tokens (the batched settings otherwise): it preempts."""
    return eng.EngineHandle(engine_pool, "starved")


# ----------------------------------------------------------------------------------- kernels and renders


class WarmKernel:
    """The worker's one page kernel, (re)started on demand, its environment kept equal to this process's."""

    def __init__(self):
        self.kernel = None
        self.known: set[str] = set()  # every variable this process had at the kernel's start or sent since

    def get(self):
        from benchbook.pipeline.kernels import WorkerKernel

        if self.kernel is not None and not self.kernel.alive():
            self.kernel.close()
            self.kernel = None
        if self.kernel is None:
            self.known = set(os.environ)
            self.kernel = WorkerKernel(ROOT / "notebooks")
        now = dict(os.environ)  # what a fresh kernel would inherit: the test's SOURCE_DATE_EPOCH, …
        gone = sorted(self.known - set(now))
        self.known |= set(now)
        # and out of the last notebook's folder, which its test may have removed (IPython's reset reads the cwd)
        self.kernel._silent(
            f"import os as _o, time as _t\n_o.environ.update({now!r})\n[_o.environ.pop(k, None) for k in {gone!r}]\n"
            f"_t.tzset()\n_o.chdir({str(ROOT)!r})"
        )
        return self.kernel

    def close(self):
        if self.kernel is not None:
            self.kernel.close()
            self.kernel = None


class _SharedLazyKernel:
    """``schedule._LazyKernel`` in a test: the worker's warm kernel, never closed by the render."""

    def __init__(self, warm: WarmKernel):
        self.warm = warm

    def get(self):
        return self.warm.get()

    def close(self):
        pass


def _in_warm_kernels(mp: pytest.MonkeyPatch, warm: WarmKernel) -> None:
    from benchbook.pipeline import execute, schedule

    real = execute.render_page

    def render_page(notebook, parameters, out_html, *, kernel=None, **kw):
        return real(notebook, parameters, out_html, kernel=kernel if kernel is not None else warm.get(), **kw)

    mp.setattr(execute, "render_page", render_page)
    for mod in list(sys.modules.values()):  # `from benchbook.pipeline.execute import render_page` in a test module
        if marks.is_test_module(mod) and getattr(mod, "render_page", None) is real:
            mp.setattr(mod, "render_page", render_page)
    mp.setattr(schedule, "_LazyKernel", lambda cwd: _SharedLazyKernel(warm))
    mp.setattr(schedule, "default_workers", lambda: 1)  # no render workers inside a test worker


TWO_PROCESS = ("two_process_campaign", "two_process_analysis")  # their tests share a worker (one build, one analysis)


@pytest.fixture(scope="session")
def two_process_campaign(tmp_path_factory):
    """``benchbook init`` of the H200 two-process layout (tests/h200_two_process.py), built once per worker;
    every test that uses it is in one xdist group, so once per test run. Read it, never write into it."""
    import h200_two_process as two

    return two.build(tmp_path_factory.mktemp("two-process"))


@pytest.fixture(scope="session")
def two_process_analysis(two_process_campaign):
    """``analyse()`` of :func:`two_process_campaign`, made once and shared (its memos only add)."""
    from benchbook.analysis.campaign_analysis import analyse

    return analyse(two_process_campaign)


@pytest.fixture(scope="session")
def warm_kernel():
    warm = WarmKernel()
    yield warm
    warm.close()


@pytest.fixture(scope="session", autouse=True)
def _warm_renders(warm_kernel):
    """For the whole session (module and session fixtures included): page renders in the warm kernel
    (which starts on the first render)."""
    from benchbook.pipeline import execute, schedule

    fresh = {"render_page": execute.render_page, "_LazyKernel": schedule._LazyKernel}
    mp = pytest.MonkeyPatch()
    _in_warm_kernels(mp, warm_kernel)
    yield fresh
    mp.undo()


@pytest.fixture(autouse=True)
def _page_kernels(request, monkeypatch, _warm_renders):
    """A ``fresh_kernel`` test renders in kernels of its own; one not marked ``slow`` may not render."""
    from benchbook.pipeline import execute, schedule

    node = request.node
    if node.get_closest_marker("fresh_kernel"):
        for mod in list(sys.modules.values()):
            if marks.is_test_module(mod) and getattr(mod, "render_page", None) is execute.render_page:
                monkeypatch.setattr(mod, "render_page", _warm_renders["render_page"])
        monkeypatch.setattr(execute, "render_page", _warm_renders["render_page"])
        monkeypatch.setattr(schedule, "_LazyKernel", _warm_renders["_LazyKernel"])
    elif node.get_closest_marker("slow") is None:

        def refuse(*a, **kw):
            pytest.fail(
                f"{node.nodeid} renders a page but is not marked slow: tests/marks.py derives the mark from what a "
                "test uses (NOTEBOOK_NAMES, NOTEBOOK_FIXTURES); add the spelling it uses there",
                pytrace=False,
            )

        monkeypatch.setattr(execute, "render_page", refuse)


def _tree_digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="session")
def bundled_reports(tmp_path_factory, _warm_renders):
    from benchbook.commands.cli import main
    from benchbook.pipeline import plan

    base = tmp_path_factory.getbasetemp()
    run = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # one folder per test run
    out = run / "bundled-reports"
    with open(run / "bundled-reports.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one worker renders, the others wait here and then read
        if not (out / ".complete").exists():
            data = ROOT / "data"
            before = {c.name: _tree_digest(c) for c in plan.find_campaigns(data)}
            with pytest.MonkeyPatch.context() as mp:
                mp.setenv("SOURCE_DATE_EPOCH", BUNDLED_EPOCH)
                mp.setenv("BENCHBOOK_GIT_SHA", BUNDLED_SHA)
                rc = main(["render", "--all", str(data), "--out", str(out), "-j", "1", "--quiet"])
            assert rc == 0, f"render --all {data} exited {rc}"
            after = {c.name: _tree_digest(c) for c in plan.find_campaigns(data)}
            # what test_nothing_lost checks: the render wrote nothing into data/
            (out / ".data-digests.json").write_text(json.dumps({"before": before, "after": after}))
            (out / ".complete").write_text("")
            (out / ".reports-digest.json").write_text(json.dumps(_tree_digest(out)))
    yield out
    # read-only for the tests: one that wrote into it would change what the others read
    was = json.loads((out / ".reports-digest.json").read_text())
    now = {k: v for k, v in _tree_digest(out).items() if k != ".reports-digest.json"}
    changed = sorted(k for k in was.keys() | now.keys() if was.get(k) != now.get(k))
    assert not changed, f"a test wrote into bundled_reports (copy it first): {changed[:10]}"


# ----------------------------------------------------------------------------------- browser, notebooks


@pytest.fixture(scope="session")
def chromium():
    """A headless Debian Chromium for browser tests (skips when /usr/bin/chromium is absent)."""
    import browser

    if not browser.chromium_available():
        pytest.skip(f"{browser.CHROMIUM} not found: install Debian's chromium (make browser-deps) to run browser tests")
    with browser.launch() as b:
        yield b


@pytest.fixture
def open_page(chromium):
    """``open_page(path, table_ids=[...], screenshot="name.png") -> browser.PageReport`` (network blocked)."""
    import browser

    def _open(path, **kw):
        return browser.open_page(chromium, path, **kw)

    return _open


@pytest.fixture(scope="session")
def smoke_notebook() -> Path:
    """notebooks/_smoke.ipynb: a tiny parameterized page notebook (table, chart, recorded values)."""
    return ROOT / "notebooks" / "_smoke.ipynb"
