"""A campaign shaped like a user's own, made the way a user makes it: arm folders of server-process
folders (``my-runs/ARM/RUN/``) handed to ``benchbook init``.

Built at test time in ``tmp_path`` from the shared H200 campaign (``../shared/realdata/vllm_h200_llama8b``,
read in place): each arm's process folder is copied as process ``p1`` and copied again as ``p2`` with
its timings perturbed a little (so the second process is a repeat of the same configuration, not a
byte copy that would count once). Two processes per arm, the ladder (``conc1`` … ``conc8``), the
phase harness's samples and the GPU and host samples: what an init-made campaign has.

The perturbation is consistent: every time in a result file (duration, TTFTs, ITLs, the ``*_ms``
figures) and every ``*_seconds_sum`` counter of the ``/metrics`` captures is multiplied by
one factor per file, throughputs divided by it; the phase samples' client times scale with their
captures; token counts, request counts and the GPU samples stay what the engine wrote.

:func:`captured_runs` makes the other shape a user has: what the README's capture loop writes
(``capture ladder --arm --run``, two server processes per arm) against the capture tests' small
OpenAI-compatible server.
"""

from __future__ import annotations

import json
import re
import shutil
import zlib
from pathlib import Path

from realdata import realdata

H200 = realdata("vllm_h200_llama8b")
POINTS = ("conc1", "conc2", "conc4", "conc8")  # the ladder both arms ran
_POINT = re.compile(r"(?:bench_)?((?:conc|rate)\d+)")
_SUM = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*_seconds_sum(?:\{[^}]*\})?) (\S+)(.*)$")
_TIME_LISTS = ("ttfts", "itls")
_RATE_KEYS = ("request_throughput", "output_throughput", "total_token_throughput", "request_goodput")


def factor(name: str, spread: float = 0.04) -> float:
    """A fixed factor in [1 − spread/2, 1 + spread/2] for a file (deterministic: from its name)."""
    return 1.0 + spread * ((zlib.crc32(name.encode()) % 1000) / 1000.0 - 0.5)


def _scale_result(doc: dict, f: float) -> dict:
    out = dict(doc)
    out["duration"] = doc["duration"] * f
    for k in _TIME_LISTS:
        if isinstance(doc.get(k), list):
            out[k] = [[x * f for x in v] if isinstance(v, list) else v * f for v in doc[k]]
    for k, v in doc.items():
        if k.endswith("_ms") and isinstance(v, (int, float)):
            out[k] = v * f
        elif k in _RATE_KEYS and isinstance(v, (int, float)):
            out[k] = v / f
    return out


def _scale_prom(text: str, f: float) -> str:
    lines = []
    for line in text.splitlines():
        m = _SUM.match(line)
        if m and not line.startswith("#"):
            line = f"{m.group(1)} {float(m.group(2)) * f!r}{m.group(3)}"
        lines.append(line)
    return "\n".join(lines) + ("\n" if text.endswith("\n") else "")


def _copy_process(src: Path, dst: Path, perturb: bool, points: tuple[str, ...] = POINTS, phases: bool = True) -> None:
    for p in sorted(src.rglob("*")):
        if p.is_dir():
            continue
        rel = p.relative_to(src)
        if not phases and (p.name in ("phases.json", "phase.log") or p.name.startswith("phase_")):
            continue
        if rel.parts[0] in ("results", "metrics"):
            m = _POINT.match(p.name)
            if m and m.group(1) not in points:
                continue
        out = dst / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        if not perturb:
            shutil.copyfile(p, out)
            continue
        if rel.parts[0] == "results" and p.suffix == ".json":
            f = factor(_POINT.match(p.name).group(1))
            out.write_text(json.dumps(_scale_result(json.loads(p.read_text()), f)))
        elif rel.parts[0] == "metrics" and p.suffix in (".prom", ".jsonl"):
            # one factor per phase sample or load point, before and after alike: deltas scale, counts do not
            m = re.match(r"phase_([a-z]+)_(\d+)_", p.name)
            g = factor(f"phase_{m.group(1)}_{m.group(2)}" if m else _POINT.match(p.name).group(1))
            if p.suffix == ".prom":
                out.write_text(_scale_prom(p.read_text(), g))
            else:  # the timed scrapes during a point: {"t_start", "t_end", "text"} a line
                rows = [json.loads(x) for x in p.read_text().splitlines() if x.strip()]
                out.write_text("".join(json.dumps({**r, "text": _scale_prom(r["text"], g)}) + "\n" for r in rows))
        elif p.name == "phases.json":
            doc = json.loads(p.read_text())
            for s in doc["samples"]:
                g = factor(f"phase_{s['prompt_class']}_{s['round']}")
                for k in ("client_total_s", "first_event_s"):
                    if isinstance(s.get(k), (int, float)):
                        s[k] = s[k] * g
            out.write_text(json.dumps(doc, indent=1))
        else:
            shutil.copyfile(p, out)


def my_runs(
    tmp: Path,
    arms: tuple[str, ...] = ("serial", "batch"),
    points: tuple[str, ...] = POINTS,
    phases: bool = True,
    name: str = "my-runs",
) -> Path:
    """``tmp/NAME/ARM/{p1,p2}/``: each arm's H200 process folder as p1 and, perturbed, as p2, with the
    load points ``points`` (and the phase harness's files unless ``phases`` is false)."""
    base = tmp / name
    for arm in arms:
        _copy_process(H200 / arm, base / arm / "p1", perturb=False, points=points, phases=phases)
        _copy_process(H200 / arm, base / arm / "p2", perturb=True, points=points, phases=phases)
    return base


def init_campaign(tmp: Path, arms: tuple[str, ...] = ("serial", "batch"), name: str = "my-campaign", **kw) -> Path:
    """The campaign ``benchbook init`` makes from :func:`my_runs`: ``tmp/data/NAME`` from the process
    folders in ``tmp/runs/NAME`` (``kw`` as my_runs')."""
    from benchbook.commands.cli import main

    runs = my_runs(tmp / "runs", arms, name=name, **kw)
    camp = tmp / "data" / name
    assert main(["init", "-q", str(camp), *(str(runs / a) for a in arms)]) == 0
    return camp


def captured_runs(tmp: Path, token_s: float = 0.002, max_tokens: int = 16) -> Path:
    """``tmp/captured/ARM/RUN/ladder``: what the README's capture loop writes — ``benchbook capture
    ladder --arm --run`` for a serial and a batched server, two server processes each — against the
    small OpenAI-compatible server of the capture tests (``fake_openai``: a lock makes it serial), and
    each process's ``server.log`` stating its ``max_num_seqs`` as vLLM's log does."""
    import fake_openai
    from benchbook.commands.cli import main

    base = tmp / "captured"
    for arm, serial in (("serial", True), ("batch", False)):
        for run in ("p1", "p2"):
            with fake_openai.serving(serial=serial, token_s=token_s) as (url, _st):
                argv = ["capture", "ladder", "--url", url, "--model", "m", "--concurrency", "1,2,4,8"]
                argv += ["--interleave", "--max-tokens", str(max_tokens), "--ignore-eos"]
                assert main([*argv, "--arm", arm, "--run", run, "--out", str(base)]) == 0
            seqs = 1 if serial else 16
            (base / arm / run / "server.log").write_text(
                f"INFO non-default args: {{'model': 'm', 'max_num_seqs': {seqs}}}\n"
            )
    return base


def init_captured(tmp: Path) -> Path:
    """The campaign ``benchbook init`` makes from :func:`captured_runs`: ``tmp/data/captured-campaign``
    from ``tmp/runs/captured``."""
    from benchbook.commands.cli import main

    runs = captured_runs(tmp / "runs")
    camp = tmp / "data" / "captured-campaign"
    assert main(["init", "-q", str(camp), str(runs)]) == 0
    return camp
