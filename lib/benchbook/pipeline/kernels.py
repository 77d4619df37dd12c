"""Kernels for rendering: one per page (the default) or one per worker, reused page after page.

Starting a Jupyter kernel and importing polars, Altair and benchbook in it costs more than most
pages take to compute. :class:`WorkerKernel` pays that once per render worker: it starts one kernel
(this Python, IPC sockets in a private folder, the same ``ThisPythonKernelManager`` the
one-kernel-per-page path uses), imports the page modules, and then executes notebook after notebook
in it through papermill. Before each notebook it resets the kernel *silently* (no output, no
execution count):

* ``InteractiveShell.reset(new_session=True)`` — a fresh user namespace (no variable of one page is
  visible to the next), output history cleared, a new history session, execution count back to 1;
* the working directory set back to the notebook's folder;
* every module's ``__warningregistry__`` cleared, so a warning shown once per process is shown
  again on every page that triggers it.

Modules stay imported (that is the point), and so does the analysis of the campaign whose pages the
worker renders: the kernel turns :func:`benchbook.analysis.campaign_analysis.share_analyses` on, so the
baseline, compare and ablation pages of one campaign, and its findings and headline figures (run in
the kernel too, :meth:`WorkerKernel.value`), read one analysis of the folder, made once while no file
of it changes. So the executed notebook is the one a fresh kernel would
give, byte for byte under ``SOURCE_DATE_EPOCH`` (tests/test_render_schedule.py checks it); a page
that mutated a module-level setting of a library would leak it to the next page, which is why page
code keeps its settings local (the house Altair theme is registered at import and never changed).

Kernel stdout/stderr go to a log file in the kernel's private folder, never to the renderer's
stderr: ipykernel logs ``KeyboardInterrupt caught in kernel`` when jupyter_client interrupts it
before shutdown, which is noise on a successful render.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

WARM_IMPORTS = (
    "benchbook.pages.baseline_page",
    "benchbook.pages.ablation_page",
    "benchbook.pages.pd_page",
    "benchbook.pages.compare_page",
    "benchbook.pages.history_page",
)

_RESET = """\
get_ipython().reset(new_session=True)
__import__("os").chdir({cwd!r})
[m.__dict__["__warningregistry__"].clear() for m in list(__import__("sys").modules.values())
 if isinstance(getattr(m, "__dict__", None), dict) and isinstance(m.__dict__.get("__warningregistry__"), dict)]
__import__("warnings")._filters_mutated() if hasattr(__import__("warnings"), "_filters_mutated") else None
"""


# a worker's pages of one campaign, and its findings and headline figures, share one analysis of the
# folder (benchbook.analysis.campaign_analysis.share_analyses: kept while no file of it changes)
_SHARE = "__import__('benchbook.analysis.campaign_analysis').analysis.campaign_analysis.share_analyses()\n"


IPC_PATH_MAX = 100  # bytes of an IPC socket path, below sun_path's 107 with "-<n>" appended


def kernel_manager_class():
    """A KernelManager that runs the kernel on *this* interpreter, whatever kernelspecs exist
    (a user-level ``python3`` kernelspec pointing at another Python would lack benchbook), over IPC
    sockets in a private temp folder, with its stdout/stderr in ``kernel.log`` there."""
    import sys

    from jupyter_client.kernelspec import KernelSpec
    from jupyter_client.manager import AsyncKernelManager
    from traitlets import default

    class ThisPythonKernelManager(AsyncKernelManager):
        # IPC sockets (a private temp folder) rather than TCP on localhost: nothing listens on a port.
        # A socket path holds at most 107 bytes; under a long TMPDIR the kernel talks TCP on 127.0.0.1
        # instead (its folder still holds the log and the owner lock).
        _bb_dir: str | None = None

        def _kernel_dir(self) -> str:
            if self._bb_dir is None:
                from benchbook.pipeline import writes

                self._bb_dir = str(writes.make_kernel_dir())  # owned: a later render can tell a dead one
            return self._bb_dir

        @default("transport")
        def _transport_default(self):
            return "ipc" if len(os.path.join(self._kernel_dir(), "kernel")) + 8 <= IPC_PATH_MAX else "tcp"

        @default("ip")
        def _ip_default(self):
            return os.path.join(self._kernel_dir(), "kernel") if self.transport == "ipc" else "127.0.0.1"

        async def start_kernel(self, **kw: Any) -> None:  # type: ignore[override]
            log = open(os.path.join(self._kernel_dir(), "kernel.log"), "ab")  # noqa: SIM115 - the kernel owns it
            kw.setdefault("stdout", log)
            kw.setdefault("stderr", log)
            try:
                await AsyncKernelManager.start_kernel(self, **kw)
            finally:
                log.close()  # the child has its own descriptor

        async def _async_cleanup_resources(self, restart: bool = False) -> None:
            await super()._async_cleanup_resources(restart=restart)
            if not restart:
                from benchbook.pipeline import writes

                writes.remove_kernel_dir(self._kernel_dir())

        @property
        def kernel_spec(self):  # type: ignore[override]
            return KernelSpec(
                argv=[sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                display_name="benchbook (this Python)",
                language="python",
                env={"PYTHONHASHSEED": "0"},
            )

    return ThisPythonKernelManager


def _engine():
    """A papermill engine that executes in a kernel it is given (``km=``) and leaves it running."""
    from papermill.clientwrap import PapermillNotebookClient
    from papermill.engines import NBClientEngine, papermill_engines

    class KeptKernelEngine(NBClientEngine):
        @classmethod
        def execute_managed_notebook(
            cls, nb_man, kernel_name, log_output=False, stdout_file=None, stderr_file=None, **kwargs
        ):
            import logging

            km = kwargs.pop("km")
            kc = kwargs.pop("kc", None)  # a connected client to execute through (kept connected)
            timeout = kwargs.pop("execution_timeout", None)
            client = PapermillNotebookClient(
                nb_man,
                km=km,
                timeout=timeout,
                startup_timeout=kwargs.pop("start_timeout", 60),
                kernel_name=kernel_name,
                log=logging.getLogger("papermill"),
                log_output=log_output,
                stdout_file=stdout_file,
                stderr_file=stderr_file,
            )
            if kc is not None:
                client.kc = kc
            try:
                return client.execute()
            finally:
                if client.kc is not None and client.kc is not kc:
                    client.kc.stop_channels()

    papermill_engines.register("benchbook-kept-kernel", KeptKernelEngine)
    return "benchbook-kept-kernel"


class WorkerKernel:
    """One kernel for one render worker: started once, warmed with the page imports, reset
    (fresh namespace) before every notebook. Use as a context manager or call :meth:`close`."""

    def __init__(self, cwd: str | Path, warm: tuple[str, ...] = WARM_IMPORTS):
        from jupyter_core.utils import run_sync

        self.cwd = str(cwd)
        self.km = kernel_manager_class()()
        run_sync(self.km.start_kernel)(cwd=self.cwd)
        # one client for the worker's life: connecting a client waits for the kernel to answer on
        # every channel (about 0.2 s), which a client per reset and per notebook paid twice a page
        self.kc = self.km.client()

        async def connect():
            self.kc.start_channels()
            await self.kc.wait_for_ready(timeout=60)

        run_sync(connect)()
        self.kc.allow_stdin = False
        self.engine = _engine()
        self.pages = 0
        self._silent("\n".join(f"import {m}" for m in warm) + "\n" + _SHARE + _RESET.format(cwd=self.cwd))

    def _run(self, code: str, timeout: float, expressions: dict[str, str] | None = None) -> dict[str, Any]:
        """Execute ``code`` silently (no output, no history); the reply's content."""
        from jupyter_core.utils import run_sync

        async def go():
            return await self.kc.execute_interactive(
                code,
                silent=True,
                store_history=False,
                user_expressions=expressions or {},
                timeout=timeout,
                output_hook=lambda msg: None,
            )

        return run_sync(go)()["content"]

    def _silent(self, code: str, timeout: float = 120) -> None:
        c = self._run(code, timeout)
        if c["status"] != "ok":
            raise RuntimeError(f"kernel reset failed: {c.get('ename')}: {c.get('evalue')}")

    def value(self, code: str, expression: str, timeout: float = 600) -> str:
        """Run ``code`` silently in this kernel and return the string ``expression`` names afterwards
        (a render worker's headline job: computed where its pages' analysis is kept). The next notebook
        starts from a reset namespace, as after a page."""
        import ast

        self.pages += 1  # whatever ran, the next notebook gets a reset kernel
        c = self._run(code, timeout, {"value": expression})
        if c["status"] != "ok":
            raise RuntimeError(f"{c.get('ename')}: {c.get('evalue')}")
        got = c["user_expressions"]["value"]
        if got.get("status") != "ok":
            raise RuntimeError(f"{got.get('ename')}: {got.get('evalue')}")
        return ast.literal_eval(got["data"]["text/plain"])

    def execute(self, notebook: Path, parameters: dict[str, Any], timeout: int, cwd: str | Path | None = None):
        """Execute ``notebook`` with papermill in this kernel, after a silent reset (working
        directory ``cwd``, default the notebook's folder)."""
        import papermill

        cwd = str(cwd or Path(notebook).parent)
        if self.pages or cwd != self.cwd:
            self._silent(_RESET.format(cwd=cwd))
        self.pages += 1
        return papermill.execute_notebook(
            str(notebook),
            None,
            parameters=parameters,
            kernel_name="python3",
            progress_bar=False,
            request_save_on_cell_execute=False,
            cwd=cwd,
            execution_timeout=timeout,
            engine_name=self.engine,
            km=self.km,
            kc=self.kc,
        )

    def alive(self) -> bool:
        from jupyter_core.utils import run_sync

        return bool(run_sync(self.km.is_alive)())

    def close(self) -> None:
        from jupyter_core.utils import run_sync

        try:
            self.kc.stop_channels()
            if run_sync(self.km.is_alive)():
                run_sync(self.km.shutdown_kernel)(now=False)
        finally:
            run_sync(self.km.cleanup_resources)()

    def __enter__(self) -> WorkerKernel:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
