"""`make bench`: speed and memory of benchbook against its floors, on synthetic campaigns.

Generates (and caches, under .cache/bench) synthetic campaigns with `benchbook synth`, then times,
in the same run and on the same files, each benchbook step next to the floor it is compared with.
Every measurement runs in its own child process so its peak RSS is its own (``os.wait4``). Each
figure is the median of ``--repeats`` timed calls (after one untimed warm-up call where stated),
shown with its min–max. Targets are ratios taken from this one run, so machine noise cancels.

    python bench/run.py --out reports/bench.json          # the full run (about 10 min on 2 cores)
    python bench/run.py --quick --out /tmp/bench.json     # smaller sizes, about 1-2 min

docs/bench.md explains the table. Timings are never asserted in tests.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
BENCHBOOK = str(Path(PY).with_name("benchbook"))
CLASSES = ["short", "long"]


# ------------------------------------------------------------------------------------ workers
# ``python bench/run.py --worker NAME ARG...`` runs one measurement and prints one JSON line.


def _timed(fn, repeats: int, warmup: bool):
    if warmup:
        fn()
    times, out = [], None
    for _ in range(repeats):
        gc.collect()
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return times, out


def _attribution(campaign: str, full: bool, results_path: str | None):
    """Every pair of every phases run: read both snapshots, split (or the exclusion reason)."""
    from benchbook.ingest.campaign import load_campaign
    from benchbook.metrics import phases, prometheus

    camp = load_campaign(campaign)
    profile = camp.profile
    names = None if full else phases.needed_samples(profile)  # what the loader hands the parser
    runs = [(r, json.loads(r.file.read_text())) for r in camp.runs_of("phases")]

    def go():
        out = []
        for r, doc in runs:
            for s in doc["samples"]:
                b = prometheus.read(r.path / s["metrics_before"], names)
                a = prometheus.read(r.path / s["metrics_after"], names)
                try:
                    sp = phases.split(b, a, profile, s["client_total_s"], s.get("first_event_s"))
                    out.append(
                        [
                            sp.prompt_tokens,
                            sp.generated_tokens,
                            sp.prefill_s,
                            sp.decode_tokens,
                            sp.decode_s,
                            sp.engine_total_s,
                        ]
                    )
                except phases.Excluded as e:
                    out.append(e.reason)
        return out

    return go


def worker(name: str, args: list[str], repeats: int) -> dict:
    if name == "ingest-benchbook":
        from benchbook.ingest.requests_ndjson import read_requests_ndjson

        times, (df, excl) = _timed(lambda: read_requests_ndjson(args[0], 32, CLASSES), repeats, True)
        return {"times": times, "rows": df.height, "excluded": len(excl)}
    if name == "ingest-polars":
        import polars as pl

        times, df = _timed(lambda: pl.read_ndjson(args[0]), repeats, True)
        return {"times": times, "rows": df.height}
    if name in ("attr-benchbook", "attr-full", "attr-nomemo"):
        from benchbook.metrics import prometheus

        if name in ("attr-nomemo", "attr-full"):  # the full row is a full parse of every snapshot, every repeat
            prometheus.MEMO = False
        go = _attribution(args[0], name == "attr-full", args[1])
        times, out = _timed(go, repeats, False)
        Path(args[1]).write_text(json.dumps(out))
        return {"times": times, "pairs": len(out), "excluded": sum(isinstance(x, str) for x in out)}
    raise SystemExit(f"unknown worker {name}")


# ------------------------------------------------------------------------------------ driver


def _child(cmd: list[str], timeout: float = 1800) -> tuple[float, int, str, str]:
    """Run one child; return (wall seconds, peak RSS in KiB, stdout, stderr)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=out, stderr=err, cwd=ROOT)
        _pid, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        so, se = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:4])} … exited {p.returncode}: {se.strip()[-400:]}")
    return wall, ru.ru_maxrss, so, se


def run_worker(name: str, args: list[str], repeats: int) -> dict:
    _w, rss, so, _se = _child([PY, __file__, "--worker", name, "--repeats", str(repeats), *args])
    res = json.loads(so.strip().splitlines()[-1])
    res["rss_kib"] = rss
    return res


def run_command(cmd: list[str], repeats: int) -> dict:
    times, rss = [], 0
    for _ in range(repeats):
        w, r, _so, _se = _child(cmd)
        times.append(w)
        rss = max(rss, r)
    return {"times": times, "rss_kib": rss}


def _synth_hash() -> str:
    """Hash of the generator's modules (synth.py, synth_engine.py, synth_writers.py)."""
    h = hashlib.sha256()
    for p in sorted((ROOT / "lib" / "benchbook" / "commands").glob("synth*.py")):
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def campaign(cache: Path, requests: int, snapshots: int, itl: bool) -> Path:
    """A cached synthetic campaign (regenerated when the synth modules change)."""
    name = f"r{requests}-p{snapshots}" + ("-itl" if itl else "")
    root = cache / name
    stamp = root / ".bench-stamp"
    if stamp.exists() and stamp.read_text() == _synth_hash():
        return root
    cmd = [
        PY,
        "-m",
        "benchbook.commands.cli",
        "synth",
        "--out",
        str(root),
        "--kind",
        "serial",
        "--runs",
        "1",
        "--requests",
        str(requests),
        "--snapshots",
        str(snapshots),
        "--seed",
        "8",
        "--no-memory",
        "--force",
    ]
    if itl:
        cmd.append("--itl")
    print(f"  generating {name} …", file=sys.stderr, flush=True)
    t = time.perf_counter()
    subprocess.run(cmd, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    print(f"  generated {name} in {time.perf_counter() - t:.1f} s", file=sys.stderr, flush=True)
    stamp.write_text(_synth_hash())
    return root


def vllm_result(cache: Path, n: int) -> Path:
    """A seeded ``vllm bench serve --save-result`` JSON with per-request arrays (``n`` requests of 512
    prompt and 128 output tokens: 70,000 give about 208 MB), cached; never committed."""
    import random

    path = cache / f"vllm-result-{n}.json"
    if path.exists():
        return path
    rng = random.Random(7)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as f:
        head = {
            "date": "20261201-120000", "endpoint_type": "openai", "backend": "vllm", "label": None,
            "model_id": "m", "tokenizer_id": "m", "num_prompts": n, "request_rate": "inf", "burstiness": 1.0,
            "max_concurrency": 256, "duration": 1200.5, "completed": n, "failed": 0,
            "total_input_tokens": n * 512, "total_output_tokens": n * 128, "request_throughput": 50.0,
            "request_goodput": None, "output_throughput": 6400.0, "total_token_throughput": 20000.0,
        }  # fmt: skip
        f.write(json.dumps(head)[:-1])
        f.write(', "input_lens": ' + json.dumps([512] * n) + ', "output_lens": ' + json.dumps([128] * n))
        f.write(', "ttfts": ' + json.dumps([rng.uniform(0.05, 0.5) for _ in range(n)]) + ', "itls": [')
        for i in range(n):
            f.write(("," if i else "") + json.dumps([rng.uniform(0.005, 0.05) for _ in range(127)]))
        f.write('], "generated_texts": ' + json.dumps(["word " * 40] * n) + ', "errors": ' + json.dumps([""] * n))
        f.write(', "mean_ttft_ms": 250.0, "median_ttft_ms": 250.0, "std_ttft_ms": 10.0, "p99_ttft_ms": 490.0}')
    tmp.replace(path)
    return path


def ndjson(root: Path) -> Path:
    return root / "runs" / "serial-1" / "requests.ndjson"


def row(case: str, size: str, res: dict | None, note: str = "") -> dict:
    if res is None:
        return {
            "case": case,
            "size": size,
            "median_s": None,
            "min_s": None,
            "max_s": None,
            "n": 0,
            "peak_rss_mib": None,
            "note": note,
        }
    t = res["times"]
    return {
        "case": case,
        "size": size,
        "median_s": statistics.median(t),
        "min_s": min(t),
        "max_s": max(t),
        "n": len(t),
        "peak_rss_mib": round(res["rss_kib"] / 1024, 1),
        "note": note,
    }


def _empty_notebook_cmd(tmp: Path) -> list[str]:
    """Execute (papermill) and export (nbconvert) a notebook holding only the page's imports."""
    nb = tmp / "empty.ipynb"
    nb.write_text(
        json.dumps(
            {
                "cells": [
                    {
                        "cell_type": "code",
                        "metadata": {"tags": ["parameters"]},
                        "source": ["campaign = ''"],
                        "outputs": [],
                        "execution_count": None,
                    },
                    {
                        "cell_type": "code",
                        "metadata": {},
                        "outputs": [],
                        "execution_count": None,
                        "source": ["import benchbook, polars, altair, scipy.stats"],
                    },
                ],
                "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
                "nbformat": 4,
                "nbformat_minor": 5,
            }
        )
    )
    script = (
        "import papermill, nbconvert, nbformat, sys;"
        f"papermill.execute_notebook({str(nb)!r}, {str(tmp / 'out.ipynb')!r}, parameters={{'campaign': 'x'}}, "
        "progress_bar=False, log_output=False);"
        f"body, _ = nbconvert.HTMLExporter().from_notebook_node(nbformat.read({str(tmp / 'out.ipynb')!r}, 4));"
        f"open({str(tmp / 'out.html')!r}, 'w').write(body)"
    )
    return [PY, "-c", script]


def _page_vs_empty(cache: Path, R: int, rows: list[dict], target) -> float | None:
    """One baseline page (a kernel of its own) vs an empty notebook with the same imports; returns
    the page's median seconds."""
    single = None
    with tempfile.TemporaryDirectory() as td:
        print("render …", file=sys.stderr, flush=True)
        empty = run_command(_empty_notebook_cmd(Path(td)), R)
        rows.append(row("empty notebook: papermill + nbconvert (floor)", "imports only", empty))
        small = campaign(cache, 18, 6, False)
        if importlib.util.find_spec("benchbook.pipeline.execute") is None:
            rows.append(
                row("benchbook render (one page)", "baseline page", None, "pending: no benchbook.pipeline.execute")
            )
            target("page render <= 1.5x empty notebook", None, "pending")
        else:
            try:
                res = run_command(
                    [BENCHBOOK, "render", str(small), "--out", str(Path(td) / "out"), "--page", "baseline"], R
                )
                ratio = statistics.median(res["times"]) / statistics.median(empty["times"])
                rows.append(row("benchbook render (one page)", "baseline page, synthetic", res, f"{ratio:.2f}x empty"))
                target("page render <= 1.5x empty notebook (one page at a time)", ratio <= 1.5, f"{ratio:.2f}x")
                single = statistics.median(res["times"])
            except RuntimeError as e:
                rows.append(row("benchbook render (one page)", "baseline page", None, f"failed: {e}"))
                target("page render <= 1.5x empty notebook", False, f"failed: {str(e)[:200]}")
    return single


SIZE_RUNS, SIZE_REQUESTS = 50, 2_000  # a sweep of 50 runs x 2,000 requests: 100k per-request records
PAGE_LIMIT_MIB = 5.0


def _cached_synth(root: Path, args: list[str], what: str) -> Path:
    """``benchbook synth ARGS`` into ``root``, cached until the synth modules change (a stamp file)."""
    stamp = root / ".bench-stamp"
    if stamp.exists() and stamp.read_text() == _synth_hash():
        return root
    import shutil

    shutil.rmtree(root, ignore_errors=True)
    print(f"  generating {what} …", file=sys.stderr, flush=True)
    t = time.perf_counter()
    subprocess.run(
        [PY, "-m", "benchbook.commands.cli", "synth", *args], check=True, cwd=ROOT, stdout=subprocess.DEVNULL
    )
    print(f"  generated in {time.perf_counter() - t:.1f} s", file=sys.stderr, flush=True)
    stamp.write_text(_synth_hash())
    return root


def _synth_at_size(cache: Path, kind: str) -> Path:
    """A cached data folder holding one synthetic campaign of 100k per-request records."""
    root = cache / f"sizes-{kind}"
    runs = SIZE_RUNS // 2 if kind == "batch" else SIZE_RUNS  # batch: two arms, so 2 x 25 requests runs
    args = ["--out", str(root / kind), "--kind", kind, "--runs", str(runs), "--requests", str(SIZE_REQUESTS)]
    return _cached_synth(root, [*args, "--seed", "22"], f"{kind} campaign at 100k records")


def _vllm_files(cache: Path) -> list[Path]:
    """50 `vllm bench serve --save-detailed` result files of 2,000 requests (tests/vllm_results.py)."""
    spec = importlib.util.spec_from_file_location("vllm_results", ROOT / "tests" / "vllm_results.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    folder = cache / "sizes-vllm"
    stamp = folder / ".bench-stamp"
    digest = hashlib.sha256((ROOT / "tests" / "vllm_results.py").read_bytes()).hexdigest()[:16]
    if not (stamp.exists() and stamp.read_text() == digest):
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
        mod.write_results(folder, SIZE_RUNS, SIZE_REQUESTS, seed=22)
        stamp.write_text(digest)
    return sorted(folder.glob("*.json"))


def _sizes(cache: Path, R: int, rows: list[dict], target) -> None:
    """Each page kind rendered from 100k per-request records: time, peak RSS and the page's size.
    Every chart must bin or aggregate (Altair refuses more than 5000 rows; a page stays under 5 MiB)."""
    print("real sizes (100k per-request records) …", file=sys.stderr, flush=True)
    cases = [
        ("compare", "50 vLLM result files x 2,000 requests", lambda out: [BENCHBOOK, "render", "--compare",
            *map(str, _vllm_files(cache)), "--out", str(out)], "compare.html"),
        ("baseline", "2 arms x 25 runs x 2,000 requests (synth batch)", lambda out: [BENCHBOOK, "render", "--all",
            str(_synth_at_size(cache, "batch")), "--out", str(out)], "batch/baseline.html"),
        ("pd", "50 PD runs x 2,000 requests (synth pd)", lambda out: [BENCHBOOK, "render", "--all",
            str(_synth_at_size(cache, "pd")), "--out", str(out)], "pd/pd.html"),
    ]  # fmt: skip
    worst, failed = 0.0, []
    for page, size, make_cmd, html in cases:
        times, rss, mib = [], 0, None
        try:
            make_cmd(Path(tempfile.gettempdir()))  # generate (cached) before timing
            for _ in range(R):
                with tempfile.TemporaryDirectory() as td:
                    w, r, _so, _se = _child(make_cmd(Path(td) / "out"))
                    times.append(w)
                    rss = max(rss, r)
                    mib = (Path(td) / "out" / html).resolve().stat().st_size / 2**20
        except (RuntimeError, OSError) as e:
            rows.append(row(f"sizes: render {page} page", size, None, f"failed: {str(e)[:300]}"))
            failed.append(page)
            continue
        worst = max(worst, mib or 0.0)
        rows.append(row(f"sizes: render {page} page", size, {"times": times, "rss_kib": rss}, f"page {mib:.2f} MiB"))
    target(
        f"every page renders from 100k per-request records, each page < {PAGE_LIMIT_MIB:g} MiB",
        not failed and worst < PAGE_LIMIT_MIB,
        (f"failed: {', '.join(failed)}; " if failed else "") + f"largest page {worst:.2f} MiB",
    )


def _series(cache: Path, count: int) -> Path:
    """A cached data folder of ``count`` synthetic nightly campaigns with two known steps."""
    root = cache / f"series-{count}"
    args = ["--series", str(count), "--out", str(root), "--start", "2026-01-01"]
    args += ["--step", "2026-01-20:decode_tok_s:-9%", "--step", "2026-02-10:prefill_tok_s:+12%"]
    return _cached_synth(root, args, f"{count} nightly campaigns")


def _schedule(cache: Path, quick: bool, rows: list[dict], target, single_page: float | None) -> None:
    """The five scheduled-rendering figures of issue 16 (whole ``benchbook render --all`` commands,
    each in its own child process, output folders fresh unless stated)."""
    n_warm, n_cold, n_hist = (12, 8, 40) if quick else (100, 50, 365)
    render = [BENCHBOOK, "render", "--all"]
    with tempfile.TemporaryDirectory() as td:
        td = Path(td)
        # 1. warm no-op over n_warm unchanged campaigns vs the cold render of the same folder
        data = _series(cache, n_warm)
        print(f"schedule: cold render of {n_warm} campaigns (-j 2) …", file=sys.stderr, flush=True)
        cold = run_command(render + [str(data), "--out", str(td / "warm"), "-j", "2", "--quiet"], 1)
        warm = run_command(render + [str(data), "--out", str(td / "warm"), "-j", "2", "--quiet"], 3)
        c, w = statistics.median(cold["times"]), statistics.median(warm["times"])
        rows.append(row("render --all cold (-j 2)", f"{n_warm} campaigns", cold, f"{n_warm / c:.2f} pages/s"))
        rows.append(row("render --all warm no-op", f"{n_warm} campaigns", warm, f"{w / c:.2%} of cold"))
        target(f"warm no-op over {n_warm} unchanged campaigns <= 2% of cold", w / c <= 0.02, f"{w / c:.2%}")

        # 2./3. cold -j 1 vs -j 2 over n_cold campaigns (pages and headline figures; no history page)
        data = _series(cache, n_cold)
        res = {}
        for j in (1, 2):
            print(f"schedule: cold render of {n_cold} campaigns, -j {j} …", file=sys.stderr, flush=True)
            res[j] = run_command(
                render + [str(data), "--out", str(td / f"j{j}"), "-j", str(j), "--page", "baseline", "--quiet"], 1
            )
            t = statistics.median(res[j]["times"])
            rows.append(row(f"render --all cold -j {j}", f"{n_cold} campaigns", res[j], f"{t / n_cold:.2f} s/page"))
        t1, t2 = statistics.median(res[1]["times"]), statistics.median(res[2]["times"])
        target("-j 2 >= 1.7x the pages/s of -j 1 (cold)", t1 / t2 >= 1.7, f"{t1 / t2:.2f}x")
        target(
            f"cold render --all over {n_cold} campaigns <= 0.4 s/page", t2 / n_cold <= 0.4, f"{t2 / n_cold:.2f} s/page"
        )

        # 5. the history page over n_hist nightly campaigns vs one baseline page (each with its kernel)
        data = _series(cache, n_hist)
        out = td / "hist"
        print(f"schedule: headline figures of {n_hist} campaigns …", file=sys.stderr, flush=True)
        run_command(render + [str(data), "--out", str(out), "--page", "history", "-j", "2", "--quiet"], 1)
        times = []
        for _ in range(3):
            (out / "history.key").unlink(missing_ok=True)
            times += run_command(render + [str(data), "--out", str(out), "--page", "history", "--quiet"], 1)["times"]
        h = {"times": times, "rss_kib": 0}
        hm = statistics.median(times)
        note = f"{hm / single_page:.2f}x one baseline page" if single_page else "no one-page figure"
        rows.append(row("render --all --page history (history page only)", f"{n_hist} campaigns", h, note))
        target(
            f"history page over {n_hist} nightly campaigns <= 3x one baseline page",
            (hm / single_page <= 3) if single_page else None,
            note,
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "reports" / "bench.json")
    ap.add_argument("--quick", action="store_true", help="10k/100k records and 1k pairs only")
    ap.add_argument("--repeats", type=int, default=3, help="timed calls per figure (at least 3)")
    ap.add_argument("--cache", type=Path, default=ROOT / ".cache" / "bench")
    ap.add_argument(
        "--only",
        choices=("all", "schedule", "sizes"),
        default="all",
        help="schedule: only the scheduled-rendering figures (and the one-page figure they need); "
        "sizes: only the real-size page renders (100k per-request records)",
    )
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("rest", nargs="*", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        print(json.dumps(worker(a.worker, a.rest, a.repeats)))
        return 0
    R = max(3, a.repeats)
    sizes = [10_000, 100_000] if a.quick else [10_000, 100_000, 1_000_000]
    a.cache.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    rows: list[dict] = []
    targets: list[dict] = []

    def target(name: str, ok: bool | None, figure: str) -> None:
        targets.append(
            {"target": name, "result": "PASS" if ok else ("pending" if ok is None else "FAIL"), "figure": figure}
        )

    if a.only == "sizes":
        _sizes(a.cache, R, rows, target)
        return _finish(a, R, rows, targets, t_start)

    if a.only == "schedule":
        single_page = _page_vs_empty(a.cache, R, rows, target)
        _schedule(a.cache, a.quick, rows, target, single_page)
        return _finish(a, R, rows, targets, t_start)

    print("generating campaigns (cached in .cache/bench) …", file=sys.stderr)
    camps = {}
    for n in sizes:
        snaps = {10_000: 1_000, 1_000_000: 10_000}.get(n, 0) if not a.quick else {10_000: 1_000}.get(n, 0)
        camps[(n, False)] = campaign(a.cache, n, snaps, False)
        camps[(n, True)] = campaign(a.cache, n, 0, True)
    pair_camp = {1_000: camps[(10_000, False)]}
    if not a.quick:
        pair_camp[10_000] = camps[(1_000_000, False)]

    # 1. ingest of per-request records vs polars.read_ndjson, same file
    per_record = {}
    worst_ratio = 0.0
    for itl in (False, True):
        for n in sizes:
            f = str(ndjson(camps[(n, itl)]))
            label = f"{n:,} records" + (" + ITL" if itl else "")
            print(f"ingest {label} …", file=sys.stderr, flush=True)
            # a 10k-record read takes milliseconds, and a few ms of scheduler noise would decide
            # the median of 3: small files get more timed calls (the same number for both)
            reps = max(R, min(25, 1_000_000 // n))
            bb = run_worker("ingest-benchbook", [f], reps)
            pl_ = run_worker("ingest-polars", [f], reps)
            ratio = statistics.median(bb["times"]) / statistics.median(pl_["times"])
            worst_ratio = max(worst_ratio, ratio)
            per_record[(itl, n)] = statistics.median(bb["times"]) / n * 1e6
            rows.append(
                row(
                    "ingest: benchbook read_requests_ndjson",
                    label,
                    bb,
                    f"{ratio:.2f}x polars; {per_record[(itl, n)]:.2f} us/record; {bb['excluded']} excluded",
                )
            )
            rows.append(row("ingest: polars.read_ndjson (floor)", label, pl_))
    target("ingest <= 1.5x polars.read_ndjson (worst size)", worst_ratio <= 1.5, f"{worst_ratio:.2f}x")
    grow = []
    for itl in (False, True):
        for small, big in zip(sizes, sizes[1:]):
            grow.append(per_record[(itl, big)] / per_record[(itl, small)])
    target(
        "per-record ingest cost does not grow with size (each step <= 1.2x)",
        max(grow) <= 1.2,
        "steps " + ", ".join(f"{g:.2f}x" for g in grow),
    )

    # 2. phase attribution vs a full prometheus_client parse of every snapshot
    with tempfile.TemporaryDirectory() as td:
        for k, camp in pair_camp.items():
            print(f"attribution {k:,} pairs …", file=sys.stderr, flush=True)
            fast_out, full_out = Path(td) / "fast.json", Path(td) / "full.json"
            nomemo_out = Path(td) / "nomemo.json"
            fast = run_worker("attr-benchbook", [str(camp), str(fast_out)], R)
            full = run_worker("attr-full", [str(camp), str(full_out)], R)
            nomemo = run_worker("attr-nomemo", [str(camp), str(nomemo_out)], R)
            a_, b_ = json.loads(fast_out.read_text()), json.loads(full_out.read_text())
            c_ = json.loads(nomemo_out.read_text())
            same = sum(x == y for x, y in zip(a_, b_)) if len(a_) == len(b_) else 0
            same_nm = sum(x == y for x, y in zip(c_, b_)) if len(c_) == len(b_) else 0
            ratio = statistics.median(full["times"]) / statistics.median(fast["times"])
            ratio_nm = statistics.median(full["times"]) / statistics.median(nomemo["times"])
            rows.append(
                row(
                    "phase attribution: benchbook (needed names)",
                    f"{k:,} pairs",
                    fast,
                    f"{ratio:.1f}x faster; {same}/{len(b_)} pairs identical; {fast['excluded']} excluded",
                )
            )
            rows.append(
                row(
                    "phase attribution: needed names, memo off",
                    f"{k:,} pairs",
                    nomemo,
                    f"{ratio_nm:.1f}x faster; {same_nm}/{len(b_)} pairs identical",
                )
            )
            rows.append(row("phase attribution: full prometheus_client parse", f"{k:,} pairs", full))
            if k == max(pair_camp):
                target(
                    f"attribution over {k:,} pairs >= 10x faster than full parse, identical results",
                    ratio >= 10 and same == len(b_),
                    f"{ratio:.1f}x, {same}/{len(b_)} identical (memo off: {ratio_nm:.1f}x, {same_nm} identical)",
                )

    # 3. benchbook summary end to end
    big = camps[(sizes[-1], False)]
    label = f"{sizes[-1]:,} records + {max(pair_camp):,} pairs"
    if importlib.util.find_spec("benchbook.commands.summary") is None:
        rows.append(row("benchbook summary --json", label, None, "pending: no benchbook.commands.summary"))
        target("summary on 1M records + 10k pairs < 20 s and < 2 GB", None, "pending")
    else:
        print("summary …", file=sys.stderr, flush=True)
        try:
            res = run_command([BENCHBOOK, "summary", "--json", str(big)], R)
            med = statistics.median(res["times"])
            reads = f"reads requests.ndjson: {sizes[-1]:,} records"
            rows.append(row("benchbook summary --json", label, res, reads))
            ok = med < 20 and res["rss_kib"] < 2 * 1024 * 1024
            target(
                f"summary on {label} < 20 s and < 2 GB" + ("" if not a.quick else " (quick sizes)"),
                ok,
                f"{med:.2f} s, {res['rss_kib'] / 1024:.0f} MiB ({reads})",
            )
        except RuntimeError as e:
            rows.append(row("benchbook summary --json", label, None, f"failed: {e}"))
            target("summary on 1M records + 10k pairs < 20 s and < 2 GB", False, f"failed: {str(e)[:200]}")

    # 4. one page render vs executing + exporting an empty notebook with the same imports
    single_page = _page_vs_empty(a.cache, R, rows, target)

    # 6. scheduled rendering (issue 16): warm no-op, -j 2 vs -j 1, amortized cost, history page
    _schedule(a.cache, a.quick, rows, target, single_page)

    # 7. real sizes (issue 22): every page kind over 100k per-request records (minutes: not in --quick)
    if a.quick:
        rows.append(row("sizes: every page from 100k records", "100k records", None, "skipped (--quick): --only sizes"))
    else:
        _sizes(a.cache, R, rows, target)

    # 8. validate of a large `vllm bench serve` result (issue 30): peak memory against the file size
    n = 14_000 if a.quick else 70_000  # both above jsonfile.STREAM_BYTES (32 MiB): the streamed path
    f = vllm_result(a.cache, n)
    mib = f.stat().st_size / 2**20
    print(f"validate vLLM result {mib:.0f} MiB …", file=sys.stderr, flush=True)
    res = run_command([BENCHBOOK, "validate", "-q", str(f)], R)
    small = run_command(
        [BENCHBOOK, "validate", "-q", str(ROOT / "tests/fixtures/tools/vllm-0.32.0+cpu/bench_serve.json")], R
    )
    extra = (res["rss_kib"] - small["rss_kib"]) / 1024  # above what validating a 29 KB result costs (imports)
    ratio = extra / mib
    rows.append(
        row(
            "validate: vllm bench serve result",
            f"{mib:.0f} MiB, {n:,} requests",
            res,
            f"{extra:.0f} MiB above a 29 KB file's {small['rss_kib'] / 1024:.0f} MiB: {ratio:.1f}x the file",
        )
    )
    target(
        "validate of a vLLM result: peak RSS above a tiny file's <= 2x the file (streamed parse)",
        ratio <= 2,
        f"{extra:.0f} MiB for {mib:.0f} MiB ({ratio:.1f}x)",
    )

    # 5. benchbook --help
    res = run_command([BENCHBOOK, "--help"], max(R, 5))
    med = statistics.median(res["times"])
    rows.append(row("benchbook --help", "subprocess", res))
    target("benchbook --help < 0.3 s", med < 0.3, f"{med:.3f} s")

    return _finish(a, R, rows, targets, t_start)


def _finish(a, R: int, rows: list[dict], targets: list[dict], t_start: float) -> int:
    total = time.perf_counter() - t_start
    _print(rows, targets, total)
    doc = {
        "format": "benchbook.bench/1",
        "machine": {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count()},
        "quick": a.quick,
        "repeats": R,
        "total_s": round(total, 1),
        "rows": rows,
        "targets": targets,
    }
    a.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = a.out.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    tmp.replace(a.out)
    print(f"\nwrote {a.out}")
    return 0


def _fmt_s(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x * 1000:.1f} ms" if x < 1 else f"{x:.2f} s"


def _print(rows: list[dict], targets: list[dict], total: float) -> None:
    head = ("case", "size", "median", "min–max", "n", "peak RSS", "note")
    table = [head]
    for r in rows:
        rng = f"{_fmt_s(r['min_s'])}–{_fmt_s(r['max_s'])}" if r["n"] else "-"
        rss = f"{r['peak_rss_mib']:.0f} MiB" if r["peak_rss_mib"] is not None else "-"
        table.append((r["case"], r["size"], _fmt_s(r["median_s"]), rng, str(r["n"]), rss, r["note"]))
    widths = [max(len(t[i]) for t in table) for i in range(len(head) - 1)]
    print()
    for i, t in enumerate(table):
        print("  ".join(c.ljust(w) for c, w in zip(t, widths)) + "  " + t[-1])
        if i == 0:
            print("  ".join("-" * w for w in widths) + "  " + "-" * 4)
    print(f"\ntargets (ratios from this run; total {total:.0f} s):")
    for t in targets:
        print(f"  {t['result']:<7} {t['target']}: {t['figure']}")


if __name__ == "__main__":
    sys.exit(main())
