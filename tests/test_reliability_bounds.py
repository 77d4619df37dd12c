"""Reliability round four (issue 36), crashes, hangs and bounds: folders nested far too deep, GPU
telemetry from several hosts, whole-file reads of logs and YAML, periodic scrapes of a huge
/metrics, special files in the output folder, symlinked run folders. Each test uses its own
variant of the issue's case; docs/bad-input.md has the rows."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from benchbook.commands.cli import main
from benchbook.errors import EXIT_BAD_INPUT, InputError

FIX = Path(__file__).parent / "fixtures"
MINI = FIX / "mini"


def _deep(top: Path, levels: int, name: str = "n") -> None:
    """``top/name/name/…`` ``levels`` deep, made through directory descriptors (no long paths, no
    recursion), with a file at the bottom."""
    top.mkdir(parents=True, exist_ok=True)
    fd = os.open(top, os.O_RDONLY)
    try:
        for _ in range(levels):
            os.mkdir(name, dir_fd=fd)
            nfd = os.open(name, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nfd
        os.close(os.open("leaf.json", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    finally:
        os.close(fd)


def _undeep(top: Path, levels: int, name: str = "n") -> None:
    """Remove what :func:`_deep` made, bottom up (pytest's own clean-up would recurse)."""
    fds = [os.open(top, os.O_RDONLY)]
    try:
        for _ in range(levels):
            fds.append(os.open(name, os.O_RDONLY, dir_fd=fds[-1]))
        os.unlink("leaf.json", dir_fd=fds[-1])
        while len(fds) > 1:
            os.close(fds.pop())
            os.rmdir(name, dir_fd=fds[-1])
    finally:
        for fd in fds:
            os.close(fd)


# --------------------------------------------------------------------------- 8. folders 1,000 deep


@pytest.fixture
def deep_data(tmp_path):
    """data/{alpha,beta}: beta holds an arm-level folder 1,200 levels deep (the issue's was inside a
    run folder, 1,000 deep)."""
    data = tmp_path / "data"
    shutil.copytree(MINI, data / "alpha")
    shutil.copytree(MINI, data / "beta")
    top = data / "beta" / "attic"
    _deep(top, 1200, "q")
    yield data, top
    _undeep(top, 1200, "q")


def test_a_folder_1200_deep_fails_its_campaign_only(deep_data, tmp_path, capsys):
    data, _top = deep_data
    nb = tmp_path / "nb"
    nb.mkdir()
    out = tmp_path / "reports"
    rc = main(["render", "--all", str(data), "--out", str(out), "--notebooks", str(nb)])
    err = capsys.readouterr().err
    assert rc == EXIT_BAD_INPUT, err
    assert "internal error" not in err and "RecursionError" not in err
    assert "beta: FAILED" in err and "folder nested more than 32 levels" in err
    index = (out / "index.html").read_text()
    assert "campaign failed" in index and "nested more than 32 levels" in index
    assert (out / "alpha" / "headline.json").is_file()  # the other campaign was processed


def test_validate_and_init_refuse_a_deep_folder_with_exit_2(deep_data, tmp_path, capsys):
    data, top = deep_data
    assert main(["validate", str(data / "beta")]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "internal error" not in err
    assert f"{data / 'beta'}/attic/q/q" in err and "folder nested more than 32 levels below" in err
    assert main(["validate", str(data / "alpha")]) == 0
    capsys.readouterr()
    # init given a run folder holding it: exit 2, no DIR and no hidden temporary folder left
    run = tmp_path / "in" / "r1"
    shutil.copytree(MINI / "runs" / "req-serial", run)
    os.rename(top / "q", run / "q")  # move the chain (cheap), and back afterwards
    try:
        assert main(["init", "-q", str(tmp_path / "c"), str(run)]) == EXIT_BAD_INPUT
        err = capsys.readouterr().err
        assert "folder nested more than 32 levels" in err and "internal error" not in err
        assert not (tmp_path / "c").exists()
        assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".c.")] == []
    finally:
        os.rename(run / "q", top / "q")


def test_the_walk_is_a_stack_not_recursion():
    """The walker under a small recursion limit: a 300-deep folder costs no stack."""
    import tempfile

    from benchbook.jsonfile import walk

    with tempfile.TemporaryDirectory() as d:
        _deep(Path(d), 300)
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(120)
        try:
            seen = sum(1 for _ in walk(d, limit=400))
        finally:
            sys.setrecursionlimit(old)
        assert seen == 301
        with pytest.raises(InputError, match="nested more than 299 levels"):
            list(walk(d, limit=299))
        _undeep(Path(d), 300)


# --------------------------------------------------------------------------- 9. telemetry of two hosts


def _two_host_campaign(root: Path, hosts: tuple[str, ...], watts: tuple[float, ...]) -> Path:
    sys.path.insert(0, str(Path(__file__).parent))
    import test_telemetry_layout as T

    s = T._samples()
    run = T._run_folder(root / "in", "aiperf", s)
    lines = []
    start = s[0]["t"]
    for x in s:
        if x["gpu"] != 1:  # GPU 1 of each host (the issue had GPU 0 on each)
            continue
        for host, w in zip(hosts, watts):
            data = {
                "nvidia_memory_used": (x["mib"] + (len(host) * 64)) * 2**20 / 1e9,
                "nvidia_power_usage": w,
                "nvidia_energy_consumption": (1e6 + w * (x["t"] - start)) / 1e6,
            }
            rec = {"timestamp_ns": round(x["t"] * 1e9), "gpu_index": 1, "hostname": host, "telemetry_data": data}
            lines.append(json.dumps(rec))
    (run / "gpu_telemetry_export.jsonl").write_text("\n".join(lines) + "\n")
    camp = root / "camp"
    assert main(["init", "-q", str(camp), str(run.parent)]) == 0
    return camp


def test_aiperf_telemetry_from_three_hosts_keys_gpus_by_host(tmp_path, capsys):
    from benchbook.commands.summary import build

    sys.path.insert(0, str(Path(__file__).parent))
    import test_telemetry_layout as T

    camp = _two_host_campaign(tmp_path, ("gpu-node-2", "gpu-node-10", "gpu-node-3"), (210.0, 320.0, 275.0))
    s = build(camp)
    (e,) = s["audit"]["energy"]
    t0, t1 = T._window()
    assert e["joules"] == pytest.approx((210.0 + 320.0 + 275.0) * (t1 - t0), rel=1e-6)
    assert len(e["per_gpu"]) == 3
    (mem,) = s["memory"]
    assert mem["peak_gib"] > 0
    assert main(["summary", str(camp)]) == 0
    capsys.readouterr()
    export = next(camp.rglob("gpu_telemetry_export.jsonl"))
    assert main(["validate", str(export)]) == 0
    assert "3 GPU(s) on 3 hosts (keyed by host and index)" in capsys.readouterr().out


def test_one_host_gpu_sampled_twice_at_one_instant_is_bad_input(tmp_path):
    from benchbook.ingest import telemetry

    rec = {"timestamp_ns": 1_767_225_600_000_000_000, "gpu_index": 3, "hostname": "h", "telemetry_data": {}}
    p = tmp_path / "gpu_telemetry_export.jsonl"
    p.write_text(json.dumps(rec) + "\n" + json.dumps(rec) + "\n")
    with pytest.raises(InputError, match="two samples of GPU 3 on host 'h'"):
        telemetry.read_gpu_samples(p)


# --------------------------------------------------------------------------- 12. whole-file reads, bounded


def test_a_huge_engine_log_and_smi_output_are_refused_unread(tmp_path, capsys):
    """A 3 GB (sparse) ``sglang_engine.log`` and a 40 MB ``nvidia_smi_q.txt`` in a run folder: exit 2
    from validate and summary, naming each, before a byte is read (the issue's: a 2 GB log, 89 s)."""
    camp = tmp_path / "c"
    shutil.copytree(MINI, camp)
    log = camp / "runs" / "phases-serial" / "sglang_engine.log"
    smi = camp / "runs" / "req-batch" / "nvidia_smi_q.txt"
    with open(log, "wb") as f:
        f.truncate(3 * 2**30)
    with open(smi, "wb") as f:
        f.truncate(40 * 2**20)
    assert main(["validate", str(camp)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert f"{log}: -: file is {3 * 2**30} bytes, above the 268435456-byte limit" in err
    assert f"{smi}: -: file is {40 * 2**20} bytes, above the 16777216-byte limit" in err
    assert main(["summary", str(camp)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "above the" in err and "internal error" not in err
    smi.unlink()
    os.mkfifo(smi)  # and a FIFO under that name is refused unopened, not waited on
    assert main(["validate", str(camp)]) == EXIT_BAD_INPUT
    assert f"{smi}: -: is a FIFO" in capsys.readouterr().err


def test_a_yaml_result_above_its_limit_is_refused_before_parsing(tmp_path, capsys):
    from benchbook.jsonfile import MAX_LLMD_YAML_BYTES

    big = tmp_path / "report_stage_0.yaml"
    src = (FIX / "tools" / "llmd-benchmark-report-0.2.1" / "pd_report.yaml").read_text()
    with open(big, "w") as f:  # a real report, then a comment block to 5 MiB
        f.write(src)
        f.write(("# " + "x" * 1021 + "\n") * 5 * 1024)
    assert big.stat().st_size > MAX_LLMD_YAML_BYTES
    assert main(["validate", str(big)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert f"{big}: -: file is {big.stat().st_size} bytes, above the {MAX_LLMD_YAML_BYTES}-byte limit" in err


def test_the_c_parser_keeps_the_yaml_checks(tmp_path):
    """load_yaml on libyaml's parser: the same values, and still no aliases, duplicate keys or deep nesting."""
    import yaml

    from benchbook.jsonfile import _yaml_base, load_yaml

    assert "CParser" in [c.__name__ for c in _yaml_base().__mro__] or not yaml.__with_libyaml__
    p = tmp_path / "x.yaml"
    src = (FIX / "tools" / "llmd-benchmark-report-0.2.1" / "pd_report.yaml").read_text()
    p.write_text(src)
    assert load_yaml(p, 2**20) == yaml.safe_load(src)
    for text, msg in (
        ("base: &b {n: 1}\nother: *b\n", "line 2 column 8: not valid YAML: aliases"),
        ("k: 1\nj: 2\nk: 3\n", "line 3 column 1: not valid YAML: key 'k' appears twice"),
        ("v: " + "{a: " * 80 + "1" + "}" * 80 + "\n", "nested deeper than 64 levels"),
    ):
        p.write_text(text)
        with pytest.raises(InputError, match=msg):
            load_yaml(p)


# --------------------------------------------------------------------------- 13. FIFOs in the output folder


def test_fifos_in_the_output_folder_never_hang_render(tmp_path, capsys):
    """FIFOs planted where render reads its own files (a page manifest, a key, the tree record, the
    index): render --all finishes, replaces them with regular files, exit 0 (it hung holding the lock)."""
    import signal
    import stat

    data = tmp_path / "data"
    shutil.copytree(MINI, data / "alpha")
    nb = tmp_path / "nb"
    nb.mkdir()
    out = tmp_path / "reports"
    argv = ["render", "--all", str(data), "--out", str(out), "--notebooks", str(nb)]
    assert main(argv) == 0
    planted = [out / "alpha" / ".compare.set.json", out / "alpha" / "headline.key", out / ".render-all.key"]
    planted.append(out / "index.html")
    for p in planted:
        p.unlink(missing_ok=True)
        os.mkfifo(p)

    def expired(*_):
        raise TimeoutError("render blocked on a FIFO in the output folder")

    old = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, 120)
    try:
        rc = main([*argv, "--force"])
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    err = capsys.readouterr().err
    assert rc == 0, err
    for p in planted[1:]:
        assert stat.S_ISREG(os.lstat(p).st_mode), p


# --------------------------------------------------------------------------- 14. symlinked run folders


def test_a_symlinked_arm_folder_is_refused_not_dropped(tmp_path, capsys):
    """An ``arms`` folder whose second arm is a symlink to an arm folder elsewhere (the issue's: a
    symlinked run folder inside an arm): exit 2 naming the link; it was silently left out."""
    sys.path.insert(0, str(Path(__file__).parent))
    import test_telemetry_layout as T

    s = T._samples()[:40]
    arms = tmp_path / "in" / "arms"
    T._run_folder(arms, "eager", s)  # arms/eager/p1
    T._run_folder(tmp_path / "elsewhere", "graphs", s)  # elsewhere/graphs/p1
    (arms / "graphs").symlink_to(tmp_path / "elsewhere" / "graphs", target_is_directory=True)
    assert main(["init", "-q", str(tmp_path / "camp"), str(arms)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert f"{arms / 'graphs'}: -: is a symlink to a folder" in err, err
    assert not (tmp_path / "camp").exists()
    (arms / "graphs").unlink()  # without the link: one arm, as before
    assert main(["init", "-q", str(tmp_path / "camp"), str(arms)]) == 0
