"""An arm/run-layout campaign of the real H200 files with TWO server processes for serial and batch.

``../shared/realdata/vllm_h200_llama8b`` holds one process per arm. The second process of ``serial``
and ``batch`` is made here from the first one's run folder, perturbed as a rerun the same morning
would differ — never a byte copy:

* every timing is scaled by the process's factor (``serial`` 2.1 % slower, ``batch`` 2.3 % faster):
  result files' ``duration``/``ttfts``/``itls``/``*_ms``, throughputs divided by it, the
  ``*_seconds_sum`` and ``process_cpu_seconds_total`` series of every ``/metrics`` capture, the phase
  harness's client times;
* every clock reading is moved onto the new process's timeline ``t0' + (t - t0) * f``: the server
  started ``shift_s`` later (``process_start_time_seconds``, ``*_created``, events, scrape times,
  sample timestamps, the server log's time stamps, the result file's ``date``);
* the processes have other pids (server log, host sampler);
* GPU power draws by a fraction of a percent more or less per sample;
* its result files name it apart in their own metadata (``--metadata arm=serial2``), as the real
  second processes did: the layout, not the file, says which arm a process belongs to.

Token counts, cache hits and the server's configuration are the first process's: the same workload.

:func:`layout` writes ``ARMS/serial/{p1,p2}``, ``ARMS/batch/{p1,p2}``, ``ARMS/eager``, ``ARMS/noprefix``
(an arm folder that is itself a run folder: one process); :func:`build` runs ``benchbook init`` on it.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
from argparse import Namespace
from dataclasses import dataclass
from pathlib import Path

from realdata import realdata

ROOT = Path(__file__).resolve().parents[1]
H200 = realdata("vllm_h200_llama8b")
TWO = ("serial", "batch")  # arms with two processes
ONE = ("eager", "noprefix")  # arms with one


@dataclass(frozen=True)
class Rerun:
    """How the second process of an arm differs from the first."""

    factor: float  # every duration × this
    shift_s: float  # the server started this much later
    pid_offset: int  # every pid + this

    def clock(self, t: float, t0: float) -> float:
        return t0 + self.shift_s + (t - t0) * self.factor


RERUNS = {
    "serial": Rerun(factor=1.021, shift_s=900.0, pid_offset=2000),
    "batch": Rerun(factor=0.977, shift_s=960.0, pid_offset=3000),
}

_PROM_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)(.*)$")


def _num(v: float) -> str:
    return repr(float(v))


def perturb_prom(text: str, rr: Rerun, t0: float) -> str:
    """A ``/metrics`` text as the rerun's process would have written it."""
    out = []
    for line in text.split("\n"):
        m = _PROM_LINE.match(line) if line and not line.startswith("#") else None
        if m is None:
            out.append(line)
            continue
        name, labels, value, rest = m.group(1), m.group(2) or "", m.group(3), m.group(4)
        try:
            v = float(value)
        except ValueError:
            out.append(line)
            continue
        if name == "process_start_time_seconds" or name.endswith("_created"):
            v = rr.clock(v, t0)
        elif name.endswith("_seconds_sum") or name == "process_cpu_seconds_total":
            v *= rr.factor
        else:
            out.append(line)
            continue
        out.append(f"{name}{labels} {_num(v)}{rest}")
    return "\n".join(out)


def _json_lines(src: Path, dst: Path, fn) -> None:
    lines = [json.dumps(fn(json.loads(x))) for x in src.read_text().splitlines() if x.strip()]
    dst.write_text("\n".join(lines) + "\n")


def _result(doc: dict, rr: Rerun, t0: float) -> dict:
    f = rr.factor
    doc = dict(doc)
    for k in ("duration",):
        doc[k] = doc[k] * f
    for k, v in list(doc.items()):
        if k.endswith("_ms") and isinstance(v, (int, float)):
            doc[k] = v * f
        elif k.endswith(("_throughput", "_goodput")) or k == "max_output_tokens_per_s":
            if isinstance(v, (int, float)):
                doc[k] = v / f
    if isinstance(doc.get("arm"), str):  # ``--metadata arm=…``: the rerun named itself apart, as people do
        doc["arm"] = f"{doc['arm']}2"
    doc["ttfts"] = [x * f for x in doc["ttfts"]]
    doc["itls"] = [[x * f for x in row] for row in doc["itls"]]
    s0 = min(doc["start_times"])
    doc["start_times"] = [s0 + rr.shift_s + (s - s0) * f for s in doc["start_times"]]
    when = dt.datetime.strptime(doc["date"], "%Y%m%d-%H%M%S").replace(tzinfo=dt.timezone.utc)
    doc["date"] = dt.datetime.fromtimestamp(rr.clock(when.timestamp(), t0), dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
    return doc


def _gpu_csv(text: str, rr: Rerun, t0: float) -> str:
    lines = text.split("\n")
    head = [c.strip() for c in lines[0].split(",")]
    power = head.index("power.draw [W]")
    out = [lines[0]]
    for i, line in enumerate(lines[1:]):
        if not line.strip():
            out.append(line)
            continue
        cells = line.split(", ")
        t = dt.datetime.strptime(cells[0], "%Y/%m/%d %H:%M:%S.%f").replace(tzinfo=dt.timezone.utc)
        moved = dt.datetime.fromtimestamp(rr.clock(t.timestamp(), t0), dt.timezone.utc)
        cells[0] = moved.strftime("%Y/%m/%d %H:%M:%S.") + f"{moved.microsecond // 1000:03d}"
        cells[power] = f"{float(cells[power]) * (1 + 0.004 * ((i * 7) % 5 - 2) / 2):.2f}"
        out.append(", ".join(cells))
    return "\n".join(out)


def _host_csv(text: str, rr: Rerun, t0: float) -> str:
    lines = text.split("\n")
    head = lines[0].split(",")
    ti, pi = head.index("t"), head.index("pid")
    out = [lines[0]]
    for line in lines[1:]:
        if not line.strip():
            out.append(line)
            continue
        cells = line.split(",")
        cells[ti] = f"{rr.clock(float(cells[ti]), t0):.3f}"
        if cells[pi]:
            cells[pi] = str(int(cells[pi]) + rr.pid_offset)
        out.append(",".join(cells))
    return "\n".join(out)


_LOG_TIME = re.compile(r"(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)")
_LOG_PID = re.compile(r"pid=(\d+)")


def _server_log(text: str, rr: Rerun, t0: float, year: int) -> str:
    def when(m: re.Match) -> str:
        mo, d, h, mi, s = (int(x) for x in m.groups())
        t = dt.datetime(year, mo, d, h, mi, s, tzinfo=dt.timezone.utc).timestamp()
        return dt.datetime.fromtimestamp(rr.clock(t, t0), dt.timezone.utc).strftime("%m-%d %H:%M:%S")

    text = _LOG_TIME.sub(when, text)
    return _LOG_PID.sub(lambda m: f"pid={int(m.group(1)) + rr.pid_offset}", text)


def _phases(doc: dict, rr: Rerun, t0: float) -> dict:
    doc = dict(doc)
    samples = []
    for s in doc["samples"]:
        s = dict(s)
        for k in ("client_total_s", "first_event_s"):
            if isinstance(s.get(k), (int, float)):
                s[k] = s[k] * rr.factor
        for k in ("t_start", "t_end"):
            if isinstance(s.get(k), (int, float)):
                s[k] = rr.clock(s[k], t0)
        for k in ("scrape_before", "scrape_after"):
            if isinstance(s.get(k), list):
                s[k] = [rr.clock(x, t0) for x in s[k]]
        samples.append(s)
    doc["samples"] = samples
    return doc


def _event(e: dict, rr: Rerun, t0: float) -> dict:
    e = dict(e)
    for k in ("t", "t_start", "t_end"):
        if k in e:
            e[k] = rr.clock(e[k], t0)
    return e


def _scrape(e: dict, rr: Rerun, t0: float) -> dict:
    e = dict(e)
    for k in ("t_start", "t_end"):
        e[k] = rr.clock(e[k], t0)
    e["text"] = perturb_prom(e["text"], rr, t0)
    return e


def second_process(src: Path, dst: Path, rr: Rerun) -> None:
    """``dst``: the run folder ``src`` as a second server process of its arm would have left it."""
    first = json.loads((src / "events.jsonl").read_text().splitlines()[0])
    t0 = float(first["t"])  # the first process's server start
    year = dt.datetime.fromtimestamp(t0, dt.timezone.utc).year
    for p in sorted(src.rglob("*")):
        if p.is_dir():
            continue
        rel = p.relative_to(src)
        out = dst / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        name = p.name
        if name.endswith(".prom"):
            out.write_text(perturb_prom(p.read_text(), rr, t0))
        elif name.endswith("_scrapes.jsonl"):
            _json_lines(p, out, lambda e: _scrape(e, rr, t0))
        elif name == "events.jsonl":
            _json_lines(p, out, lambda e: _event(e, rr, t0))
        elif rel.parts[0] == "results" and name.endswith(".json"):
            out.write_text(json.dumps(_result(json.loads(p.read_text()), rr, t0)))
        elif name == "phases.json":
            out.write_text(json.dumps(_phases(json.loads(p.read_text()), rr, t0), indent=1))
        elif name == "gpu_samples.csv":
            out.write_text(_gpu_csv(p.read_text(), rr, t0))
        elif name == "host_samples.csv":
            out.write_text(_host_csv(p.read_text(), rr, t0))
        elif name == "server.log":
            out.write_text(_server_log(p.read_text(), rr, t0, year))
        else:
            shutil.copyfile(p, out)


def layout(dest: Path) -> Path:
    """The arms folder ``dest`` (arm/run layout) with two processes of serial and batch."""
    for arm in TWO:
        shutil.copytree(H200 / arm, dest / arm / "p1")
        second_process(H200 / arm, dest / arm / "p2", RERUNS[arm])
    for arm in ONE:
        shutil.copytree(H200 / arm, dest / arm)
    return dest


def build(tmp: Path) -> Path:
    """``benchbook init`` of :func:`layout`: the campaign folder (``tmp/campaign``)."""
    from benchbook.commands import init as init_cmd

    arms = layout(tmp / "runs")
    dest = tmp / "campaign"
    rc = init_cmd.run(Namespace(dir=dest, inputs=[arms], title=None, question=None, quiet=True))
    if rc != 0:
        raise RuntimeError(f"benchbook init {arms} exited {rc}")
    return dest
