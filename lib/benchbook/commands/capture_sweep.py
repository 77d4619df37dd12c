"""``benchbook capture sweep``: a load sweep in one command — one ``capture run`` per point.

    benchbook capture sweep --url http://127.0.0.1:8000 --arm batch --run p1 --out my-runs \\
        --concurrency 1,4,16,64 --num-prompts-per-point '4*concurrency' -- \\
        vllm bench serve ... --max-concurrency {concurrency} --num-prompts {num_prompts} \\
        --save-result --result-dir my-results --result-filename bench_conc{concurrency}.json

Each point runs the command with its value substituted (:func:`substitute`) as ``capture run``
(:func:`benchbook.commands.capture_run.capture_run`, the same code) into the point folder
``OUT/ARM/RUN/conc<C>`` or ``rate<R>`` — the names ``benchbook init`` reads. The sweep itself is
described in ``sweep.json`` in the run folder (``benchbook.capture/1``, ``kind: "sweep"``): the plan,
each point's status (``done``, ``failed``, ``interrupted``, ``not run``), its command line and what
its result file or the engine's counters say. A point that fails (its command exits non-zero, its
capture is incomplete, the server stops answering) stops the sweep: the points after it are marked
``not run``. docs/capture.md, ``capture sweep``.

Standard library + httpx + prometheus_client only (it runs in an engine's environment).
"""

from __future__ import annotations

import ast
import json
import math
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchbook.commands.capture_folder import FORMAT, dump_json, host_facts, layout, utc, write_atomic
from benchbook.errors import EXIT_SOURCE, BenchbookError, InputError

VARIABLES = ("concurrency", "rate", "num_prompts", "index", "point", "url")
_FUNCS: dict[str, Callable[..., Any]] = {"min": min, "max": max, "int": int, "round": round, "ceil": math.ceil}
# {expr}: names, numbers, arithmetic; anything else in braces (a JSON argument) is left alone
_PLACEHOLDER = re.compile(r"\{([A-Za-z0-9_+\-*/%(). ,]+)\}")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def parse_values(option: str, spec: str) -> list[float | int]:
    """``--concurrency 1,4,16`` -> [1, 4, 16]; ``--rate 2,8,inf`` -> [2.0, 8.0, inf], in the order given."""
    out: list[float | int] = []
    for part in (x.strip() for x in spec.split(",")):
        if not part:
            continue
        try:
            v: float | int = int(part) if option == "--concurrency" else float(part)
        except ValueError:
            what = "whole numbers" if option == "--concurrency" else "numbers (requests per second) or inf"
            raise InputError(option, spec, f"expected {what} separated by commas, e.g. 1,4,16,64") from None
        if not v > 0 or math.isnan(v) or (option == "--concurrency" and v < 1):
            raise InputError(option, spec, f"{part}: each value must be positive")
        if v in out:
            raise InputError(option, spec, f"{part} appears twice")
        out.append(v)
    if not out:
        raise InputError(option, spec, "no value given")
    return out


def fmt_value(v: Any) -> str:
    """A value as it goes into a command line and a folder name: ``4``, ``2.5``, ``inf``."""
    if isinstance(v, float):
        if math.isinf(v):
            return "inf"
        if v.is_integer():
            return str(int(v))
        return format(v, ".10g")
    return str(v)


def evaluate(expr: str, env: dict[str, Any], where: str) -> Any:
    """``4*concurrency``, ``max(1, concurrency // 2)``, ``{rate}``: names from ``env``, numbers, ``+ - * /
    // %``, ``min max int round ceil``. A string variable (``point``, ``url``) only on its own."""
    expr = expr.strip()
    if expr.startswith("{") and expr.endswith("}"):
        expr = expr[1:-1].strip()
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError:
        raise InputError(
            where, expr, "not an expression (names, numbers, + - * / // %, min/max/int/round/ceil)"
        ) from None

    def ev(node: ast.AST) -> Any:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in env:
                known = ", ".join(k for k in VARIABLES if k in env)
                raise InputError(where, expr, f"unknown name {node.id!r} (this sweep knows: {known})")
            v = env[node.id]
            if isinstance(v, str) and node is not tree.body:
                raise InputError(where, expr, f"{node.id} is text: use it alone, as {{{node.id}}}")
            return v
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            v = ev(node.operand)
            return -v if isinstance(node.op, ast.USub) else v
        if isinstance(node, ast.BinOp):
            a, b = ev(node.left), ev(node.right)
            ops = {ast.Add: a.__add__, ast.Sub: a.__sub__, ast.Mult: a.__mul__, ast.Div: a.__truediv__,
                   ast.FloorDiv: a.__floordiv__, ast.Mod: a.__mod__}  # fmt: skip
            op = ops.get(type(node.op))
            if op is None:
                raise InputError(where, expr, "only + - * / // % are allowed")
            r = op(b)
            if r is NotImplemented:
                r = {ast.Add: b.__radd__, ast.Sub: b.__rsub__, ast.Mult: b.__rmul__, ast.Div: b.__rtruediv__,
                     ast.FloorDiv: b.__rfloordiv__, ast.Mod: b.__rmod__}[type(node.op)](a)  # fmt: skip
            return r
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in _FUNCS
            and not node.keywords
        ):
            return _FUNCS[node.func.id](*(ev(a) for a in node.args))
        raise InputError(where, expr, "only names, numbers, + - * / // % and min/max/int/round/ceil are allowed")

    try:
        v = ev(tree)
    except (ZeroDivisionError, OverflowError, ValueError, TypeError) as e:
        raise InputError(where, expr, f"cannot be computed here: {e}") from None
    if isinstance(v, float) and math.isnan(v):
        raise InputError(where, expr, "is not a number here")
    return v


def substitute(arg: str, env: dict[str, Any], where: str) -> str:
    """``arg`` with every ``{expr}`` naming a sweep variable replaced by its value (``bench_conc{concurrency}
    .json`` -> ``bench_conc16.json``); braces around anything else (JSON, ``{5}``) are left as they are."""

    def one(m: re.Match) -> str:
        names = set(_IDENT.findall(m.group(1))) - set(_FUNCS)
        if not names:
            return m.group(0)
        return fmt_value(evaluate(m.group(1), env, where))

    return _PLACEHOLDER.sub(one, arg)


def plan(
    *,
    variable: str,
    values: list[float | int],
    point_prefix: str,
    command: list[str],
    results: list[str],
    num_prompts_expr: str | None,
    url: str,
) -> list[dict[str, Any]]:
    """Per point: its name, value, number of prompts and the command with everything substituted;
    every point is computed before the first is run, so a bad placeholder costs nothing."""
    points = []
    for i, v in enumerate(values):
        name = f"{point_prefix}{fmt_value(v)}"
        env: dict[str, Any] = {variable: v, "index": i, "point": name, "url": url}
        n = None
        if num_prompts_expr is not None:
            n = evaluate(num_prompts_expr, env, f"--num-prompts-per-point ({name})")
            if isinstance(n, float) and (math.isinf(n) or not n.is_integer()) or n < 1:
                raise InputError(
                    "--num-prompts-per-point", num_prompts_expr, f"{fmt_value(n)} at {name}: needs a whole number >= 1"
                )
            n = int(n)
            env["num_prompts"] = n
        argv = [substitute(a, env, f"command argument {a!r} ({name})") for a in command]
        res = [substitute(a, env, f"--results {a!r} ({name})") for a in results]
        points.append({"point": name, "value": v, "num_prompts": n, "argv": argv, "results": res})
    names = [p["point"] for p in points]
    if len(set(names)) != len(names):
        raise InputError("--point-prefix", point_prefix, f"two points get one folder name: {names}")
    return points


def _sweep_file(run_dir: Path) -> Path:
    p, i = run_dir / "sweep.json", 2
    while p.exists():
        p, i = run_dir / f"sweep-{i}.json", i + 1
    return p


def capture_sweep(
    *,
    url: str,
    metrics: str | None,
    out: str,
    arm: str | None,
    run: str | None,
    variable: str,
    values: list[float | int],
    command: list[str],
    arguments: dict[str, Any],
    point_prefix: str | None = None,
    num_prompts_expr: str | None = None,
    every_s: float = 0.5,
    results: list[str] | None = None,
    time_limit_s: float | None = None,
    scrape_timeout_s: float = 10.0,
    retries: int = 3,
    echo: bool = True,
    server_pid: int | None = None,
    compress: bool = False,
    settle_s: float | None = None,
    log: Callable[[str], None] = print,
) -> tuple[dict[str, Any], int]:
    """Run the sweep; returns (the sweep document, the exit status: 0, or the failed point's)."""
    from benchbook.commands.capture_run import capture_run
    from benchbook.commands.scrape import MetricsEndpoint, metrics_url

    if not command:
        raise InputError(
            "command", "-", "no benchmark command: put it after `--` (capture sweep ... -- vllm bench serve ...)"
        )
    if every_s <= 0:
        raise InputError("--every", str(every_s), "must be a positive number of seconds")
    base = str(url).rstrip("/")
    metrics_at = metrics_url(metrics or base + "/metrics")
    prefix = point_prefix or ("conc" if variable == "concurrency" else "rate")
    points = plan(
        variable=variable,
        values=values,
        point_prefix=prefix,
        command=command,
        results=list(results or []),
        num_prompts_expr=num_prompts_expr,
        url=base,
    )
    for p in points:  # every folder name and place checked before anything runs
        if arm is not None or run is not None:
            folder = layout(out, "run", arm, run, p["point"])[0]
        else:
            folder = Path(out) / p["point"]
        if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
            raise InputError(folder, "-", "the point folder exists and is not empty; give a new --run or --out")
        if shutil.which(p["argv"][0]) is None:
            raise InputError("command", p["argv"][0], "not found on PATH")
        p["folder"] = folder
    run_dir = points[0]["folder"].parent
    endpoint = MetricsEndpoint(metrics_at, timeout_s=scrape_timeout_s, retries=retries)
    endpoint.check_fetch()  # unreachable / not Prometheus: refused before anything is written
    sweep_path = _sweep_file(run_dir)
    started = time.time()
    doc: dict[str, Any] = {
        "format": FORMAT,
        "kind": "sweep",
        "complete": False,
        "stopped": "sweep in progress (or killed before it could say why)",
        "benchbook": _version(),
        "arguments": arguments,
        "started_at": utc(started),
        "ended_at": None,
        "host": host_facts(),
        "compressed": compress,
        "files": {
            "points": ", ".join(f"{p['point']}/" for p in points) + " (one capture run folder per point)",
            "sweep": sweep_path.name,
        },
        "sweep": {
            "variable": variable,
            "values": [_json_value(v) for v in values],
            "point_prefix": prefix,
            "num_prompts": num_prompts_expr,
            "command": list(command),
            "url": base,
            "metrics_url": endpoint.url,
            "every_s": every_s,
            "run_folder": f"{arm}/{run}" if arm else str(run_dir),
        },
        "points": [
            {
                "point": p["point"],
                "value": _json_value(p["value"]),
                "folder": p["point"],
                "num_prompts": p["num_prompts"],
                "argv": p["argv"],
                "status": "not run",
            }
            for p in points
        ],
    }
    run_dir.mkdir(parents=True, exist_ok=True)

    def save() -> None:
        write_atomic(sweep_path, dump_json(doc))

    save()
    n = len(points)
    log(f"capture sweep: {n} points ({', '.join(p['point'] for p in points)}) -> {run_dir}; {sweep_path.name}")
    rc = 0
    stopped: str | None = None
    done_s: list[float] = []
    try:
        for k, (p, rec) in enumerate(zip(points, doc["points"]), start=1):
            elapsed = time.time() - started
            eta = (
                f"ETA {_clock(sum(done_s) / len(done_s) * (n - k + 1))} (mean of the {len(done_s)} point"
                f"{'s' * (len(done_s) > 1)} done)"
                if done_s
                else "ETA after the first point"
            )
            log(f"capture sweep: point {k} of {n}: {p['point']} — elapsed {_clock(elapsed)}, {eta}")
            log("  $ " + " ".join(_shell_word(a) for a in p["argv"]))
            t0 = time.time()
            rec.update({"status": "running", "started_at": utc(t0)})
            save()
            try:
                folder = capture_run(
                    metrics=endpoint.url,
                    out=out if arm else str(p["folder"]),
                    command=p["argv"],
                    arguments={**doc["arguments"], "sweep_point": p["point"]},
                    every_s=every_s,
                    results=p["results"],
                    time_limit_s=time_limit_s,
                    scrape_timeout_s=scrape_timeout_s,
                    retries=retries,
                    echo=echo,
                    arm=arm,
                    run=run,
                    point=p["point"] if arm else None,
                    server_pid=server_pid,
                    compress=compress,
                    expect_requests=p["num_prompts"],
                    **({} if settle_s is None else {"settle_s": settle_s}),
                    log=log,
                )
            except KeyboardInterrupt:
                rec.update({"status": "interrupted", "ended_at": utc(time.time()), "stopped": "interrupted (Ctrl-C)"})
                stopped = f"interrupted (Ctrl-C) at point {p['point']} ({k} of {n})"
                raise
            except BenchbookError as e:
                rec.update({"status": "failed", "ended_at": utc(time.time()), "stopped": str(e)})
                stopped = f"point {p['point']} ({k} of {n}) failed: {e}"
                raise
            t1 = time.time()
            cmd = folder.doc["command"]
            rec.update(
                {
                    "ended_at": utc(t1),
                    "duration_s": round(t1 - t0, 3),
                    "exit_status": cmd["exit_status"],
                    "complete": folder.doc["complete"],
                    "stopped": folder.doc["stopped"],
                    "summary": point_summary(folder.path, folder.doc),
                }
            )
            done_s.append(t1 - t0)
            if folder.doc["complete"]:
                rec["status"] = "done"
                log(f"capture sweep: {p['point']} done in {t1 - t0:.1f} s: {summary_line(rec['summary'])}")
                save()
                continue
            rec["status"] = "failed"
            stopped = f"point {p['point']} ({k} of {n}) failed: {folder.doc['stopped']}"
            status = cmd["exit_status"]
            # the command's own status (128 + N for a signal N, as a shell says it); a command that
            # succeeded in a capture that did not (the scrape after it failed): the server's fault
            rc = (status if status > 0 else 128 - status) if isinstance(status, int) and status else EXIT_SOURCE
            save()
            break
    finally:
        endpoint.close()
        not_run = [r["point"] for r in doc["points"] if r["status"] == "not run"]
        if stopped and not_run:
            stopped += f"; not run: {', '.join(not_run)}"
        doc["complete"] = stopped is None
        doc["stopped"] = stopped
        doc["ended_at"] = utc(time.time())
        save()
        _print_summary(doc, log)
    return doc, rc


def _json_value(v: float | int) -> float | int | str:
    """A point's value in sweep.json: the number, ``"inf"`` for an unbounded rate (JSON has no infinity)."""
    if isinstance(v, float) and math.isinf(v):
        return "inf"
    return int(v) if isinstance(v, float) and v.is_integer() else v


def _version() -> str:
    from benchbook import __version__

    return __version__


def _clock(s: float) -> str:
    s = int(round(s))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


def _shell_word(a: str) -> str:
    import shlex

    return shlex.quote(a)


def point_summary(folder: Path, cap: dict[str, Any]) -> dict[str, Any]:
    """What is known of a point: from a vLLM result file (``vllm bench serve --save-result``: completed,
    failed, duration, output throughput), and from the engine's counters between the snapshots before
    and after (finished requests, generated tokens); the command's own duration always."""
    out: dict[str, Any] = {"command_s": cap["command"].get("duration_s")}
    for rf in cap.get("result_files") or []:
        res = _vllm_result(folder / rf["file"])
        if res is not None:
            out["result_file"] = rf["file"]
            out.update(res)
            break
    engine = _engine_delta(folder, cap)
    if engine:
        out["engine"] = engine
    return out


def _vllm_result(path: Path) -> dict[str, Any] | None:
    from benchbook.jsonfile import MAX_FILE_BYTES, read_bytes

    if path.suffix != ".json":
        return None
    try:
        doc = json.loads(read_bytes(path, "result file", MAX_FILE_BYTES))
    except (InputError, ValueError):
        return None
    if not isinstance(doc, dict) or not {"completed", "duration", "output_throughput"} <= set(doc):
        return None
    keep = ("completed", "failed", "duration", "output_throughput", "request_throughput", "total_output_tokens")
    return {"tool": "vllm bench serve", **{k: doc[k] for k in keep if isinstance(doc.get(k), (int, float))}}


def _engine_delta(folder: Path, cap: dict[str, Any]) -> dict[str, float] | None:
    from benchbook.analysis import enginemetrics
    from benchbook.metrics import prometheus
    from benchbook.metrics.profiles import detect_profile

    snaps = cap.get("snapshots") or []
    ends = [s for s in snaps if s.get("phase") in ("before", "after")]
    if len(ends) != 2 or ends[0]["phase"] != "before":
        return None
    try:
        before, after = (prometheus.read(folder / s["file"]) for s in ends)
        prof = detect_profile(after)
    except InputError:
        return None
    out = {}
    for q, key in (("requests_success", "requests"), ("generation_tokens", "generation_tokens")):
        if prof.has(q):
            out[key] = sum(enginemetrics.values(after, prof, q).values()) - sum(
                enginemetrics.values(before, prof, q).values()
            )
    return out or None


def summary_line(s: dict[str, Any] | None) -> str:
    """``64 requests, 12.3 s, 1234.5 output tok/s (vllm bench serve); engine: 65 finished, 8320 tokens``."""
    if not s:
        return "nothing known"
    parts = []
    if "completed" in s:
        failed = f" ({s['failed']:g} failed)" if s.get("failed") else ""
        parts.append(
            f"{s['completed']:g} requests{failed}, {s['duration']:.1f} s, {s['output_throughput']:.1f} output tok/s"
            f" ({s['tool']}, {s['result_file']})"
        )
    elif s.get("command_s") is not None:
        parts.append(f"command {s['command_s']:.1f} s")
    e = s.get("engine")
    if e:
        got = [f"{e['requests']:g} requests finished" if "requests" in e else None]
        if "generation_tokens" in e:
            rate = (
                f" ({e['generation_tokens'] / s['command_s']:.1f} tok/s over the command)"
                if "completed" not in s and s.get("command_s")
                else ""
            )
            got.append(f"{e['generation_tokens']:g} tokens generated{rate}")
        parts.append("engine: " + ", ".join(g for g in got if g))
    return "; ".join(parts) or "nothing known"


def _print_summary(doc: dict[str, Any], log: Callable[[str], None]) -> None:
    log("capture sweep: " + ("every point done" if doc["complete"] else f"stopped: {doc['stopped']}"))
    width = max(len(r["point"]) for r in doc["points"])
    for r in doc["points"]:
        what = summary_line(r.get("summary")) if r["status"] in ("done", "failed") and r.get("summary") else ""
        why = f" — {r['stopped']}" if r["status"] != "done" and r.get("stopped") else ""
        log(f"  {r['point']:<{width}}  {r['status']:<11} {what}{why}")
