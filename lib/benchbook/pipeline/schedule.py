"""Scheduled rendering at scale: only what changed, on N workers, then the history page and the index.

``benchbook render --all DATA --out REPORTS`` plans every page of every campaign, then:

* **Incremental.** Each page has a *render key*: SHA-256 over the campaign folder's files (paths
  and bytes), the page's parameter overrides, the notebook's bytes and the benchbook code (version
  plus every file of the installed package, so an edited checkout counts as a new version, and the
  versions of the libraries that shape a page: polars, Altair, vl-convert, papermill, nbconvert …). The key is written
  beside the page as ``<page>.key`` after the page itself; a page whose HTML exists and whose key
  matches is *unchanged* and not rendered (no kernel is started for it). ``--force`` renders all.
  Each campaign's headline figures (``headline.json``, read by the history page) carry their own
  key the same way.
* **Parallel.** ``-j N`` workers (default: the number of cores), each a process with one kernel it
  reuses page after page (:class:`benchbook.pipeline.kernels.WorkerKernel`: started and warmed once,
  reset to a fresh namespace before each notebook). A campaign's jobs run on one worker, one after
  the other — its headline figures and findings first, then its pages — so they read one analysis
  of the campaign, kept in that worker's kernel (``campaign_analysis.share_analyses``). Pages are
  independent files, so the output does not depend on N or on the order pages finish in.
* **History.** After the campaigns: every campaign's ``headline.json`` becomes one tidy table,
  ``REPORTS/history.parquet`` (polars), and ``notebooks/history.ipynb`` renders it to
  ``REPORTS/history.html`` — again only when the table, the notebook or the code changed.

The index is written once, at the end, by the caller.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import stat
import sys
import time
from collections.abc import Callable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from benchbook import __version__
from benchbook.metrics import source_allow
from benchbook.pages.display import PACKAGES

KEY_SUFFIX = ".key"
HEADLINE = "headline.json"
FINDINGS = "findings.json"  # beside it: the campaign's one findings box, as summary --json has it (the index reads it)
HISTORY_TABLE = "history.parquet"
HISTORY_PAGE = "history"


# ----------------------------------------------------------------------------------- render keys


# libraries whose upgrade can change a page's bytes: those a page's provenance lists, and the two the
# notebook and template handling add (read from package metadata, nothing imported)
FINGERPRINT_PACKAGES = (*PACKAGES, "nbformat", "jinja2")


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """benchbook's version, a hash of every file of the package (code, templates, schemas), and the
    versions of the libraries that shape a page."""
    from importlib import metadata

    pkg = Path(__file__).resolve().parents[1]
    h = hashlib.sha256(f"benchbook {__version__}\n".encode())
    for name in FINGERPRINT_PACKAGES:
        try:
            h.update(f"{name} {metadata.version(name)}\n".encode())
        except metadata.PackageNotFoundError:
            h.update(f"{name} absent\n".encode())
    for p in sorted(pkg.rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts and p.suffix in (".py", ".j2", ".css", ".json", ".tpl"):
            h.update(str(p.relative_to(pkg)).encode() + b"\0")
            h.update(hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


def folder_digest(folder: Path) -> str:
    """SHA-256 over every file under ``folder``: relative path and bytes (a symlink: its target text).
    Plain strings, not pathlib: a warm ``render --all`` spends most of its time here."""
    root = os.fspath(folder)
    h = hashlib.sha256()
    entries: list[tuple[str, str]] = []  # (relative posix path, path)
    from benchbook.jsonfile import walk

    for dirpath, _dirnames, filenames in walk(root):  # a stack, depth-bounded: a 1,000-deep folder is bad input
        rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
        prefix = "" if rel_dir == "." else rel_dir + "/"
        entries.extend((prefix + name, os.path.join(dirpath, name)) for name in filenames)
    entries.sort()
    for rel, path in entries:
        h.update(rel.encode("utf-8", "surrogateescape") + b"\0")
        h.update(_file_digest(path))
    return h.hexdigest()


def _file_digest(path: str) -> bytes:
    """One file's part of :func:`folder_digest`, read in blocks. A FIFO, device or socket is never
    opened (it would block or never end): it is bad input of its campaign. A file above the input
    limit (which no loader would read) is keyed by its size and change time, not read."""
    from benchbook.errors import InputError
    from benchbook.jsonfile import MAX_FILE_BYTES, special_kind

    try:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            return hashlib.sha256(os.readlink(path).encode("utf-8", "surrogateescape")).digest()
        kind = special_kind(st.st_mode)
        if kind is not None:
            raise InputError(
                path, "-", f"is {kind}, not a regular file: a campaign folder holds regular files and folders only"
            )
        if st.st_size > MAX_FILE_BYTES:
            return hashlib.sha256(f"too big: {st.st_size} {st.st_mtime_ns}".encode()).digest()
        h = hashlib.sha256()
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as fh:
            kind = special_kind(os.fstat(fh.fileno()).st_mode)
            if kind is not None:  # swapped in since the lstat
                raise InputError(path, "-", f"is {kind}, not a regular file")
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        return h.digest()
    except OSError as e:  # unreadable: part of the key, so a later fix re-renders
        return hashlib.sha256(f"unreadable: {e.strerror}".encode()).digest()


def render_key(*parts: Any) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(json.dumps(part, sort_keys=True, default=str, ensure_ascii=False).encode() + b"\0")
    return h.hexdigest()


def _read_own(path: Path) -> bytes:
    """A file of the output folder, read only when regular (:func:`benchbook.pipeline.writes.read_own`)."""
    from benchbook.pipeline.writes import read_own

    return read_own(path)


def key_path(target: Path) -> Path:
    return Path(target).with_suffix(KEY_SUFFIX)


def is_current(target: Path, key: str) -> bool:
    """True when ``target`` exists and the key recorded beside it is ``key``."""
    kp = key_path(target)
    try:
        return Path(target).is_file() and _read_own(kp).decode("utf-8", "replace").strip() == key
    except OSError:
        return False


def write_key(target: Path, key: str) -> None:
    """Record ``key`` beside ``target`` — after the target was published, so a render killed in
    between only renders that page again."""
    _write_atomic(key_path(target), (key + "\n").encode())


def _write_atomic(path: Path, data: bytes) -> None:
    from benchbook.pipeline import writes

    writes.write_atomic(path, data)


# ----------------------------------------------------------------------------------- jobs


@dataclasses.dataclass(frozen=True)
class Job:
    """One unit of work: a page (``page`` set) or a campaign's headline figures (``page`` None)."""

    campaign: str  # campaign folder name ("" for the history page)
    source: str  # campaign folder (absolute), or the reports folder for the history page
    target: str  # the page's HTML or headline.json
    key: str
    page: str | None = None
    notebook: str | None = None
    params: Mapping[str, Any] | None = None  # campaign pages: the overrides (render.yml, --params)
    title: str = ""
    # headline figures of a campaign whose pages render in the same batch: computed in the worker's
    # kernel, from the analysis its pages read (one analysis per campaign, kernels.WorkerKernel)
    in_kernel: bool = False

    @property
    def label(self) -> str:
        return f"{self.campaign}/{self.page}" if self.page and self.campaign else (self.page or f"{self.campaign}")


@dataclasses.dataclass
class Done:
    job: Job
    ok: bool
    seconds: float
    bytes: int = 0
    exit_code: int = 0
    error: str = ""
    values: dict[str, Any] | None = None


def run_job(job: Job, kernel: Any = None) -> Done:
    """Execute one job in this process (pages in ``kernel`` when given); never raises a BenchbookError."""
    from benchbook.errors import BenchbookError, InputError, RenderError

    t0 = time.perf_counter()
    try:
        if job.page is None and job.in_kernel and kernel is not None:  # where the pages' analysis is kept
            got = json.loads(kernel.value(_IN_KERNEL.format(job=_job_to_json(job)), "_bb_done"))
            return Done(job, **got)
        if job.page is None:
            from benchbook.analysis.campaign_analysis import analyse

            an = analyse(job.source)  # the campaign's one analysis: its headline figures and its findings
            data = json.dumps(an.headline(), indent=1, sort_keys=True, ensure_ascii=False).encode() + b"\n"
            summary = _findings_bytes(an)  # the index reads the campaign's findings from it
            _write_atomic(Path(job.target).with_name(FINDINGS), summary)
            _write_atomic(Path(job.target), data)
            write_key(Path(job.target), job.key)
            return Done(job, True, time.perf_counter() - t0, len(data) + len(summary))
        from benchbook.pipeline import plan
        from benchbook.pipeline.execute import render_page
        from benchbook.pipeline.params import page_parameters

        params = dict(job.params or {})
        if job.campaign:  # a campaign page: resolve its parameters against the notebook now
            manifest = plan.read_manifest(Path(job.source))
            params = page_parameters(Path(job.source), manifest, job.page, Path(job.notebook), params)
        # a campaign page runs in the campaign's parent folder (``campaign`` is the folder's name),
        # the history page in the reports folder: no absolute path of this machine enters a page
        res = render_page(
            Path(job.notebook),
            params,
            Path(job.target),
            cwd=Path(job.source).parent if job.campaign else Path(job.source),
            title=job.title,
            page=job.label,
            kernel=kernel,
        )
        write_key(Path(job.target), job.key)
        return Done(job, True, time.perf_counter() - t0, res.bytes, values=None)
    except BenchbookError as e:
        return Done(job, False, time.perf_counter() - t0, exit_code=e.exit_code, error=e.one_line())
    except Exception as e:  # noqa: BLE001 - one job's failure of any kind is that job's, never the batch's
        if job.page is None:  # headline figures that cannot be computed: that campaign's input
            err = InputError(job.source, None, f"headline figures: {type(e).__name__}: {e}")
        else:
            err = RenderError(job.label, f"{type(e).__name__}: {e}")
        return Done(job, False, time.perf_counter() - t0, exit_code=err.exit_code, error=err.one_line())


# a headline job run in a worker's kernel: run_job there (no kernel), its Done (less the job) as JSON
_IN_KERNEL = (
    "import json as _j, dataclasses as _d\n"
    "from benchbook.pipeline import schedule as _s\n"
    "_bb_done = _j.dumps({{k: v for k, v in _d.asdict(_s.run_job(_s.Job(**_j.loads({job!r})))).items() if k != 'job'}})\n"
)


def _findings_bytes(an: Any) -> bytes:
    """The campaign's one findings box (``CampaignAnalysis.campaign_findings``, what ``summary --json``
    carries under ``findings``) as bytes: no machine path, nothing but what the index shows."""
    from benchbook.jsonfile import plain

    doc = {"format": "benchbook.findings/1", "campaign": an.camp.name, "findings": an.campaign_findings().as_dict()}
    return json.dumps(plain(doc), indent=1, ensure_ascii=False).encode() + b"\n"


class _LazyKernel:
    """A worker's kernel, started on its first page (a worker that only computes headlines starts none)."""

    def __init__(self, cwd: str):
        self.cwd = cwd
        self.kernel = None

    def get(self):
        from benchbook.pipeline.kernels import WorkerKernel

        if self.kernel is not None and not self.kernel.alive():
            self.kernel.close()
            self.kernel = None
        if self.kernel is None:
            self.kernel = WorkerKernel(self.cwd)
        return self.kernel

    def close(self) -> None:
        if self.kernel is not None:
            self.kernel.close()
            self.kernel = None


def _job_to_json(job: Job) -> str:
    return json.dumps(dataclasses.asdict(job), sort_keys=True)


def _worker_main(notebooks: str) -> int:
    """``python -m benchbook.pipeline.schedule --worker NOTEBOOKS``: read one job (JSON) per line on
    stdin, run it in this process with one reused kernel, answer one result (JSON) per line."""
    proto = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # anything printed by libraries goes to stderr, never into the protocol
    lazy = _LazyKernel(notebooks)
    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            job = Job(**json.loads(line))
            d = run_job(job, lazy.get() if job.page is not None or job.in_kernel else None)
            out = {k: v for k, v in dataclasses.asdict(d).items() if k != "job"}
            proto.write(json.dumps(out) + "\n")
            proto.flush()
    finally:
        lazy.close()
    return 0


class _Worker:
    """One worker process (a fresh Python running :func:`_worker_main`), its stderr in a file."""

    def __init__(self, notebooks: Path):
        import subprocess
        import tempfile

        self.err = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "benchbook.pipeline.schedule", "--worker", str(notebooks)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.err,
            text=True,
            encoding="utf-8",
        )

    def run(self, job: Job) -> Done:
        from benchbook.errors import RenderError

        try:
            self.proc.stdin.write(_job_to_json(job) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        except OSError:
            line = ""
        if not line:
            self.err.seek(0)
            tail = self.err.read().decode(errors="replace").strip().splitlines()[-1:] or ["no message"]
            err = RenderError(job.label, f"render worker died: {tail[0][:300]}")
            return Done(job, False, 0.0, exit_code=err.exit_code, error=err.one_line())
        return Done(job, **json.loads(line))

    def close(self) -> None:
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=120)
        except Exception:  # noqa: BLE001 - a worker that will not stop is killed
            self.proc.kill()
            self.proc.wait()
        self.err.close()


class Pool:
    """``workers`` render workers (1: this process), started once and used for several batches of
    jobs; each worker keeps one kernel. Use as a context manager."""

    def __init__(self, workers: int, notebooks: Path):
        self.workers = max(1, workers)
        self.notebooks = notebooks
        self._lazy: _LazyKernel | None = None
        self._procs: list[_Worker] = []

    def run(
        self,
        jobs: list[Job],
        on_done: Callable[[Done], None] | None = None,
        together: Callable[[Job], str] | None = None,
    ) -> list[Done]:
        """Run ``jobs`` (in list order as workers free up); the results in job order. ``on_done`` is
        called as each finishes. ``together``: jobs with the same value of it run on one worker, one
        after the other in list order (a campaign's headline figures and pages: one kernel, one
        analysis); the groups go to workers in the order of their first job."""
        if not jobs:
            return []
        results: dict[int, Done] = {}
        if self.workers == 1:
            if self._lazy is None:
                self._lazy = _LazyKernel(str(self.notebooks))
            for i, job in enumerate(jobs):
                results[i] = run_job(job, self._lazy.get() if job.page is not None or job.in_kernel else None)
                if on_done:
                    on_done(results[i])
            return [results[i] for i in range(len(jobs))]

        import queue
        import threading

        groups: dict[Any, list[tuple[int, Job]]] = {}
        for i, job in enumerate(jobs):
            groups.setdefault(together(job) if together else i, []).append((i, job))
        todo: queue.Queue = queue.Queue()
        for group in groups.values():
            todo.put(group)
        lock = threading.Lock()
        n = min(self.workers, len(groups))
        while len(self._procs) < n:
            self._procs.append(_Worker(self.notebooks))

        def drive(k: int) -> None:
            while True:
                try:
                    group = todo.get_nowait()
                except queue.Empty:
                    return
                for i, job in group:
                    d = self._procs[k].run(job)
                    if not d.ok and "render worker died" in d.error:  # a new worker for the rest
                        self._procs[k].close()
                        self._procs[k] = _Worker(self.notebooks)
                    with lock:
                        results[i] = d
                        if on_done:
                            on_done(d)

        threads = [threading.Thread(target=drive, args=(k,), daemon=True) for k in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return [results[i] for i in range(len(jobs))]

    def close(self) -> None:
        if self._lazy is not None:
            self._lazy.close()
            self._lazy = None
        for w in self._procs:
            w.close()
        self._procs = []

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


# ----------------------------------------------------------------------------------- history


def history_jobs(out: Path, campaigns: list[str], notebooks: Path, force: bool) -> list[Job]:
    """The history page's job, unless it is current. Its key covers every campaign's headline key,
    the notebook and the code, so a warm run decides without reading a table; when it must render,
    ``OUT/history.parquet`` is rewritten first from the campaigns' ``headline.json``."""
    out = Path(out)
    nb = Path(notebooks) / "history.ipynb"
    if not nb.is_file():
        return []
    html = out / f"{HISTORY_PAGE}.html"
    table = out / HISTORY_TABLE
    heads = []
    for name in sorted(campaigns):
        f = out / name / HEADLINE
        try:
            heads.append((name, _read_own(key_path(f)).decode("utf-8", "replace").strip() if f.is_file() else ""))
        except OSError:
            heads.append((name, ""))
    nb_hash = hashlib.sha256(nb.read_bytes()).hexdigest()
    key = render_key("history", heads, nb_hash, code_fingerprint())
    if not force and is_current(html, key) and table.is_file():
        return []
    import io

    from benchbook.analysis.history import history_table
    from benchbook.pipeline import writes

    docs = [json.loads(_read_own(out / n / HEADLINE)) for n, k in heads if k]
    buf = io.BytesIO()
    history_table(docs).write_parquet(buf, statistics=False)
    _write_atomic(table, buf.getvalue())
    # executed with the reports folder as working directory, so the page names its input
    # "history.parquet" wherever the reports are (two renders into two folders give the same page)
    params: dict[str, Any] = {"table": HISTORY_TABLE}
    return [
        Job(
            "",
            str(out.resolve()),
            str(writes.fixed_name(html)),
            key,
            HISTORY_PAGE,
            str(nb),
            params,
            "History across campaigns",
        )
    ]


# ----------------------------------------------------------------------------------- planning


@dataclasses.dataclass
class Plan:
    """What ``render --all`` will do for one campaign."""

    name: str
    manifest: dict[str, Any]
    jobs: list[Job] = dataclasses.field(default_factory=list)
    unchanged: list[str] = dataclasses.field(default_factory=list)  # page kinds whose key matched
    skipped: list[str] = dataclasses.field(default_factory=list)  # page kinds without a notebook yet


def reserved_name(name: str) -> str | None:
    """Why a campaign folder cannot be called ``name`` (its pages go to ``OUT/<name>/``, beside the
    index, the history page and the locks ``render --all`` writes there), or None."""
    from benchbook.pipeline.writes import FOLDER_LOCK, RENDER_LOCK

    outputs = {"index.html", f"{HISTORY_PAGE}.html", HISTORY_TABLE, FOLDER_LOCK, RENDER_LOCK}
    stems = ("index.", f"{HISTORY_PAGE}.")
    if name in outputs or name.startswith(stems) or name.startswith("."):
        return (
            f"campaign folder name {name!r} collides with what render --all writes beside the campaigns' folders "
            f"(index.html, {HISTORY_PAGE}.html, {HISTORY_TABLE}, hidden lock files): rename the folder"
        )
    return None


def plan_campaign(
    campaign: Path,
    out_dir: Path,
    *,
    only: list[str] | None,
    overrides: Mapping[str, Mapping[str, Any]],
    notebooks: Path | None,
    force: bool,
    log: Callable[[str], None],
    digest: str | None = None,
) -> Plan:
    """The jobs one campaign needs: its pages (unless current) and its headline figures (unless
    current). Raises ``InputError`` for a campaign the renderer cannot read at all. ``digest``: the
    campaign folder's :func:`folder_digest` when the caller has it already."""
    from benchbook.errors import InputError
    from benchbook.pipeline import plan as page_plan
    from benchbook.pipeline import writes
    from benchbook.pipeline.params import campaign_params, check_overrides, merge_params, params_file

    reserved = reserved_name(Path(campaign).name)
    if reserved:
        raise InputError(campaign, None, reserved)
    name = Path(campaign).name  # as the data folder names it (its pages go to OUT/<name>, even through a link)
    campaign = Path(campaign).resolve()
    if not campaign.is_dir():
        raise InputError(campaign, None, "campaign folder does not exist")
    manifest = page_plan.read_manifest(campaign)
    own = campaign_params(campaign)
    check_overrides(own, str(params_file(campaign)))
    params_all = merge_params(own, overrides or {})
    if Path(out_dir).is_dir():
        writes.clean_folder(out_dir)  # what a killed render of this campaign left behind
    plan = Plan(name, manifest)
    if digest is None or digest.startswith("unreadable: "):
        digest = folder_digest(campaign)  # raises what made it unreadable, for this campaign alone
    code = code_fingerprint()
    allowed = source_allow.key()  # a page made without its Prometheus source is not current once it is allowed
    applies = page_plan.pages_for(manifest, campaign)
    wanted = [p for p in applies if only is None or p in only]
    if not applies:
        log(f"{name}: no page applies (no requests/phases runs, no ablation or pd arms)")
    for page in wanted:
        nb = page_plan.notebook_for(page, notebooks)
        if not nb.is_file():
            log(f"{name}/{page}: skipped, {nb} does not exist yet")
            plan.skipped.append(page)
            continue
        # the key covers what decides the parameters (campaign folder, overrides) rather than the
        # resolved parameters, so checking it needs no papermill: a warm run only hashes
        overrides_page = dict(params_all.get(page) or {})
        target = Path(out_dir) / f"{page}.html"
        nb_hash = hashlib.sha256(nb.read_bytes()).hexdigest()
        key = render_key("page", page, str(campaign), digest, nb_hash, overrides_page, code, allowed)
        if not force and is_current(target, key):
            plan.unchanged.append(page)
            continue
        plan.jobs.append(
            Job(
                name,
                str(campaign),
                str(writes.fixed_name(target)),
                key,
                page,
                str(nb),
                overrides_page,
                page_plan.page_title(manifest, campaign, page),
            )
        )
    head = Path(out_dir) / HEADLINE
    hkey = render_key("headline", digest, code, allowed)
    if force or not is_current(head, hkey):  # first: its pages then read the analysis it made
        plan.jobs.insert(0, Job(name, str(campaign), str(writes.fixed_name(head)), hkey, in_kernel=bool(plan.jobs)))
    return plan


# ----------------------------------------------------------------------------------- a no-op render --all

TREE_KEY = ".render-all.key"  # in the reports folder: what the last clean render --all read and wrote


@dataclasses.dataclass(frozen=True)
class TreeInputs:
    """Everything a ``render --all`` reads, hashed (:func:`tree_inputs`), and the campaign digests."""

    key: str
    digests: dict[str, str]


def tree_inputs(
    campaigns: list[Path], notebooks: Path | None, only: list[str] | None, params: bytes | None
) -> TreeInputs:
    """The key of a ``render --all``'s inputs: every campaign folder (path and :func:`folder_digest`),
    every notebook of the notebooks folder, the code (:func:`code_fingerprint`), the ``--params``
    file's bytes and ``--page``. Computed without reading a manifest or importing the renderer."""
    from benchbook.pipeline.plan import NOTEBOOKS

    nbdir = Path(notebooks) if notebooks is not None else NOTEBOOKS
    from benchbook.errors import InputError

    digests: dict[str, str] = {}
    for c in campaigns:
        try:
            digests[str(c)] = folder_digest(c)
        except InputError as e:  # a FIFO, a device …: that campaign fails when it is planned, the rest render
            digests[str(c)] = "unreadable: " + str(e)
    nbs = sorted((p.name, hashlib.sha256(p.read_bytes()).hexdigest()) for p in nbdir.glob("*.ipynb") if p.is_file())
    params_hash = None if params is None else hashlib.sha256(params).hexdigest()
    key = render_key(
        "tree",
        sorted(digests.items()),
        str(nbdir.resolve()),
        nbs,
        code_fingerprint(),
        params_hash,
        only,
        source_allow.key(),
    )
    return TreeInputs(key, digests)


def _output_keys(out: Path) -> dict[str, str]:
    """Every render key recorded in ``out`` (``<campaign>/<page>.key``, ``headline.key``,
    ``history.key``) by relative path."""
    found = {}
    for kp in [*Path(out).glob("*" + KEY_SUFFIX), *Path(out).glob("*/*" + KEY_SUFFIX)]:
        if any(part.startswith(".") for part in kp.relative_to(out).parts):
            continue  # this record itself; nothing else hidden holds a key
        try:
            found[kp.relative_to(out).as_posix()] = _read_own(kp).decode("utf-8", "replace").strip()
        except OSError:
            continue
    return found


def _target_of(out: Path, rel_key: str) -> Path:
    stem = Path(out) / rel_key[: -len(KEY_SUFFIX)]
    return stem.with_name(HEADLINE) if stem.name == Path(HEADLINE).stem else stem.with_suffix(".html")


def unchanged_tree(out: Path, inputs: TreeInputs) -> dict[str, Any] | None:
    """What the last clean ``render --all`` into ``out`` recorded (its pages, its history state) when
    nothing it read has changed since and everything it wrote is still there; else None. A no-op
    ``render --all`` then reads no manifest, starts no worker and leaves every file untouched."""
    try:
        rec = json.loads(_read_own(Path(out) / TREE_KEY))
    except (OSError, ValueError):
        return None
    if not isinstance(rec, dict) or rec.get("inputs") != inputs.key or not (Path(out) / "index.html").is_file():
        return None
    outputs = rec.get("outputs")
    if not isinstance(outputs, dict) or _output_keys(out) != outputs:
        return None
    if not all(_target_of(out, k).is_file() for k in outputs):
        return None
    return rec


def forget_tree(out: Path) -> None:
    """Drop the record before a render writes anything: a render killed midway leaves none, so the
    next one plans (and cleans up) in full."""
    try:
        (Path(out) / TREE_KEY).unlink()
    except FileNotFoundError:
        pass


def record_tree(out: Path, inputs: TreeInputs, pages: list[str], history: str) -> None:
    """After a ``render --all`` without a failure: what it read (``inputs``), the keys of what the
    output folder now holds, the pages and the history state (for the next no-op's summary line)."""
    rec = {"inputs": inputs.key, "outputs": _output_keys(out), "pages": sorted(pages), "history": history}
    _write_atomic(Path(out) / TREE_KEY, (json.dumps(rec, indent=1, sort_keys=True) + "\n").encode())


# ----------------------------------------------------------------------------------- render --all


@dataclasses.dataclass
class Summary:
    rendered: int = 0
    unchanged: int = 0
    failed: int = 0  # pages and campaigns (their lines are in the outcomes)
    other_failures: list[str] = dataclasses.field(default_factory=list)  # the history page's
    history: str = "not rendered"
    seconds: float = 0.0

    def line(self) -> str:
        failed = self.failed + len(self.other_failures)
        return (
            f"{self.rendered} page(s) rendered, {self.unchanged} unchanged, {failed} failed; "
            f"history {self.history}; {self.seconds:.1f} s"
        )


def render_all(
    campaigns: list[Path],
    out: Path,
    *,
    only: list[str] | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    notebooks: Path | None = None,
    force: bool = False,
    workers: int | None = None,
    log: Callable[[str], None] = lambda m: None,
    error: Callable[[str], None] = lambda m: None,
    digests: Mapping[str, str] | None = None,
) -> tuple[list[Any], Summary]:
    """Plan, render what changed on ``workers`` processes, then the history page. ``digests``: the
    campaign folders' :func:`folder_digest` by path, when the caller has them (:func:`tree_inputs`).

    Returns the campaigns' outcomes (:class:`benchbook.pipeline.campaigns.CampaignOutcome`, for the index) and the summary.
    A campaign that cannot be planned (unreadable campaign.json, bad render.yml) is a failure of
    that campaign only; the others render."""
    from benchbook.errors import BenchbookError
    from benchbook.pipeline.campaigns import CampaignOutcome, campaign_failure
    from benchbook.pipeline.plan import NOTEBOOKS, PAGES

    t0 = time.perf_counter()
    out = Path(out)
    nbdir = Path(notebooks) if notebooks is not None else NOTEBOOKS
    summary = Summary()
    plans: list[Plan] = []
    outcomes: dict[str, Any] = {}
    failed_campaigns: list[Any] = []
    for c in campaigns:
        try:
            plan = plan_campaign(
                c,
                out / c.name,
                only=only,
                overrides=overrides or {},
                notebooks=notebooks,
                force=force,
                log=log,
                digest=(digests or {}).get(str(c)),
            )
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:  # noqa: BLE001 - one campaign's failure of any kind is that campaign's
            o = campaign_failure(c, e)
            failed_campaigns.append(o)
            summary.failed += 1
            error(f"{c.name}: FAILED: {o.error[1]}")
            continue
        plans.append(plan)
        o = CampaignOutcome(plan.name, plan.manifest)
        o.skipped = list(plan.skipped)
        o.unchanged = list(plan.unchanged)
        planned = {j.page for j in plan.jobs}
        o.kept = [  # pages of earlier renders not rendered now (e.g. outside --page): still linked
            p for p in PAGES if p not in plan.unchanged and p not in planned and (out / c.name / f"{p}.html").is_file()
        ]
        outcomes[plan.name] = o
        summary.unchanged += len(plan.unchanged)
        for p in plan.unchanged:
            log(f"{plan.name}/{p}: unchanged")
    jobs = [j for p in plans for j in p.jobs]
    workers = default_workers() if workers is None else workers
    pages = sum(1 for j in jobs if j.page)
    if pages:
        log(f"rendering {pages} page(s) on {min(workers, len(jobs))} worker(s)")

    def done(d: Done) -> None:
        if d.job.page is None:
            if not d.ok:
                error(
                    f"{d.job.campaign}: headline figures not updated (the history keeps the previous ones): {d.error}"
                )
            return
        if d.ok:
            log(f"{d.job.label}: wrote {d.job.target} ({d.bytes / 1024:.0f} KiB, {d.seconds:.1f} s)")
        else:
            error(f"{d.job.label}: FAILED: {d.error}")

    # each campaign on one worker: its headline figures and findings, then its pages, all from one
    # analysis kept in that worker's kernel; then the history page, which reads every headline
    with Pool(workers if len(jobs) > 1 else 1, nbdir) as pool:
        for d in pool.run(jobs, done, together=lambda j: j.campaign):
            if d.job.page is None:  # a failed headline keeps the previous one, as a failed page does
                continue
            o = outcomes.get(d.job.campaign)
            if d.ok:
                summary.rendered += 1
                o.rendered_pages.append(d.job.page)
            else:
                summary.failed += 1
                o.failed[d.job.page] = (d.exit_code, d.error)
        hjobs: list[Job] = []
        if only is None or HISTORY_PAGE in (only or []):
            try:
                hjobs = history_jobs(out, [p.name for p in plans], nbdir, force)
            except Exception as e:  # noqa: BLE001 - the history's failure is not the campaigns'
                from benchbook.errors import RenderError

                line = (
                    e if isinstance(e, BenchbookError) else RenderError("history", f"{type(e).__name__}: {e}")
                ).one_line()
                summary.other_failures.append(line)
                error(f"history: FAILED: {line}")
            if not hjobs:
                summary.history = "unchanged" if (out / f"{HISTORY_PAGE}.html").is_file() else "not rendered"
        elif (out / f"{HISTORY_PAGE}.html").is_file():
            summary.history = "kept"
        for d in pool.run(hjobs, done):  # the history page
            summary.history = "rendered" if d.ok else "FAILED"
            if not d.ok:
                summary.other_failures.append(d.error)
    summary.seconds = time.perf_counter() - t0
    return [outcomes[p.name] for p in plans] + failed_campaigns, summary


if __name__ == "__main__":  # a render worker: see _worker_main
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        sys.exit(_worker_main(sys.argv[2]))
    sys.exit("usage: python -m benchbook.pipeline.schedule --worker NOTEBOOKS (started by benchbook render)")
