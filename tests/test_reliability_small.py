"""Reliability round four (issue 36), the smaller classes: look-alike labels and control characters
from benchbook-compare.yml, validate refusing what render refuses (GPU sample CSVs, the compare
overrides), --label matching, no machine path in a page's notebook or in init's README, and what a
killed init, a full disk or a result folder holding the capture folder leave. Each test has its own
variant of the issue's case; docs/bad-input.md has the rows."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from benchbook.analysis import identity as ident
from benchbook.analysis import resultset as rset
from benchbook.commands.cli import main
from benchbook.errors import EXIT_BAD_INPUT, InputError

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
FIX = HERE / "fixtures"
MINI = FIX / "mini"
sys.path.insert(0, str(HERE))
from test_compare_identity import _variant  # noqa: E402  (a real vLLM result with changes)

# --------------------------------------------------------------------------- 15. look-alike labels


@pytest.mark.parametrize(
    "twin",
    [
        "graphs\u2062",  # invisible times (the issue: U+2063)
        "graphs\ufe0e",  # text variation selector (U+FE0F)
        "gra\u034fphs",  # combining grapheme joiner
        "graphs\U000e0067\U000e007f",  # tag characters (U+E0020…)
        "\u115fgraphs",  # Hangul choseong filler (U+3164)
        "gr\u180baphs",  # Mongolian free variation selector (U+180E)
        "graphs\u2029",  # paragraph separator (U+2028)
        "\u00a0graphs\t",  # leading no-break space, trailing tab (a trailing space)
    ],
)
def test_look_alike_labels_are_one_configuration(tmp_path, twin):
    a = _variant(tmp_path, "a.json")
    b = _variant(tmp_path, "b.json", 1.1, output_throughput=250.0, duration=8.0)
    rs = rset.build([a, b], labels=["a.json=graphs", f"b.json={twin}"])
    assert [c.label for c in rs.configs] == ["graphs"] and len(rs.configs[0].entries) == 2
    assert ident.clean_text(twin) == "graphs"


def test_inner_spaces_collapse_but_words_stay_apart():
    assert ident.clean_text("tp=2\u2003 \u3000eager") == "tp=2 eager"
    assert ident.clean_text("tp=2eager") != ident.clean_text("tp=2 eager")


@pytest.mark.parametrize(("where", "text"), [("label", "eager\x1b]8;;http://x\x07"), ("group", "a\x9bb")])
def test_control_characters_in_benchbook_compare_yml_never_reach_a_page(tmp_path, capsys, where, text):
    a = _variant(tmp_path, "runs/a.json")
    (tmp_path / "runs" / "benchbook-compare.yml").write_text(
        json.dumps({"files": {"a.json": {where: text}}}), encoding="utf-8"
    )
    with pytest.raises(InputError, match=rf"\$\.files\.a\.json\.{where}: value contains the control character \\x"):
        rset.build([a])
    assert main(["validate", str(a)]) == EXIT_BAD_INPUT  # validate refuses it too (class 16)
    assert "control character" in capsys.readouterr().err


def test_benchbook_compare_yml_is_read_within_the_parameter_limits(tmp_path, capsys):
    a = _variant(tmp_path, "runs/a.json")
    yml = tmp_path / "runs" / "benchbook-compare.yml"
    yml.write_text("l: &big {label: x}\nfiles:\n  a.json: *big\n")
    with pytest.raises(InputError, match="aliases"):
        rset.build([a])
    yml.write_text("files:\n  a.json: {label: x}\n  a.json: {label: y}\n")
    assert main(["validate", str(a)]) == EXIT_BAD_INPUT
    assert f"{yml}: line 3 column 3: not valid YAML: key 'a.json' appears twice" in capsys.readouterr().err


# --------------------------------------------------------------------------- 16. validate refuses what render refuses


def _gpu_campaign(root: Path) -> tuple[Path, Path]:
    import test_telemetry_layout as T

    run = T._run_folder(root / "in", "csv", T._samples()[:60])
    camp = root / "camp"
    assert main(["init", "-q", str(camp), str(run.parent)]) == 0
    return camp, next(camp.rglob("gpu_samples.csv"))


def _set(rows: list[str], i: int, col: int, value: str) -> None:
    cells = rows[i].split(", ")
    cells[col] = value
    rows[i] = ", ".join(cells)


def _earlier(stamp: str, s: float) -> str:
    import datetime as dt

    t = dt.datetime.strptime(stamp, "%Y/%m/%d %H:%M:%S.%f") - dt.timedelta(seconds=s)
    return t.strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]


@pytest.mark.parametrize(
    ("edit", "place", "reason"),
    [
        (lambda r: _set(r, 2, 1, "0.5"), "line 3, column index", "0.5 is not a GPU index"),
        (lambda r: _set(r, 2, 1, "3e19"), "line 3, column index", "3e+19 is not a GPU index"),
        (lambda r: _set(r, 3, 1, "inf"), "line 4, column index", "'inf' is not a possible"),
        (lambda r: _set(r, 4, 2, "-0.5"), "line 5, column memory.used", "'-0.5' is not a possible"),
        (lambda r: _set(r, 5, 0, _earlier(r[4].split(", ")[0], 2.0)), "line 6, column timestamp", "time steps back 2"),
    ],
)
def test_validate_refuses_the_gpu_samples_render_refuses(tmp_path, capsys, edit, place, reason):
    camp, csv = _gpu_campaign(tmp_path)
    rows = csv.read_text().splitlines()
    edit(rows)
    csv.write_text("\n".join(rows) + "\n")
    for argv in (["validate", str(camp)], ["summary", str(camp)], ["validate", str(csv)]):
        assert main(argv) == EXIT_BAD_INPUT, argv
        err = capsys.readouterr().err
        assert f"gpu_samples.csv: {place}: " in err and reason in err and "internal error" not in err, (argv, err)


def test_validate_reads_an_nvidia_smi_csv_and_its_units(tmp_path, capsys):
    from benchbook.ingest.gpu_samples import read_gpu_csv

    p = tmp_path / "smi.csv"
    p.write_text(
        "timestamp, index, memory.used [GiB], memory.total [GiB]\n"
        "2026/12/01 10:00:00.000, 0, 71.5, 80\n2026/12/01 10:00:00.500, 0, 72 GiB, 80\n"
    )
    assert main(["validate", str(p)]) == 0
    out = capsys.readouterr().out
    assert "nvidia-smi --query-gpu CSV" in out and "2 samples, 1 GPU(s)" in out
    df = read_gpu_csv(p)
    assert df["memory_used_mib"].to_list() == [71.5 * 1024, 72 * 1024] and df["memory_total_mib"][0] == 80 * 1024
    p.write_text("timestamp, index, memory.used [pages]\n2026/12/01 10:00:00.000, 0, 7\n")
    assert main(["validate", str(p)]) == EXIT_BAD_INPUT
    assert "column memory.used: unit [pages] is not a memory unit" in capsys.readouterr().err


# --------------------------------------------------------------------------- 17. --label matching


def test_a_label_naming_a_file_exactly_is_not_a_glob(tmp_path):
    a = _variant(tmp_path, "sweep/c[8].json")
    b = _variant(tmp_path, "sweep/c8.json", 1.1, output_throughput=250.0, duration=8.0)
    rs = rset.build([a, b], labels=["c[8].json=bracketed", "c8.json=plain"])
    assert sorted(c.label for c in rs.configs) == ["bracketed", "plain"]
    assert all(len(c.entries) == 1 for c in rs.configs)


def test_two_labels_for_one_file_are_refused(tmp_path):
    a = _variant(tmp_path, "x/a.json")
    b = _variant(tmp_path, "x/b.json", 1.1, output_throughput=250.0, duration=8.0)
    with pytest.raises(
        InputError, match=r"x/b\.json is labelled twice: --label x/\*\.json=one and --label b\.json=two"
    ):
        rset.build([a, b], labels=["x/*.json=one", "b.json=two"])
    rs = rset.build([a, b], labels=["x/*.json=same", "b.json=same"])  # the same label twice: no question
    assert [c.label for c in rs.configs] == ["same"]


# --------------------------------------------------------------------------- 18. no machine path in pages


def test_a_pages_notebook_and_inits_readme_name_no_machine_folder(tmp_path, smoke_notebook):
    from benchbook.pipeline.execute import render_page

    out = tmp_path / "deep" / "reports"
    render_page(smoke_notebook, {}, out / "smoke.html", title="smoke")
    nb = json.loads((out / "smoke.ipynb").read_text())
    assert nb["metadata"]["papermill"]["input_path"] == "_smoke.ipynb"
    text = (out / "smoke.ipynb").read_text()
    for folder in (str(REPO), str(tmp_path), str(Path.home())):
        assert folder not in text, folder
    src = tmp_path / "alice-private" / "bench" / "conc2"
    shutil.copytree(MINI / "runs" / "req-serial", src)
    res = _variant(tmp_path / "alice-private" / "bench", "conc2/result.json")
    assert res.is_file()
    camp = tmp_path / "camp"
    main(["init", "-q", str(camp), str(src)])
    readme = (camp / "README.md").read_text()
    assert "alice-private" not in readme and str(tmp_path) not in readme
    assert "| `conc2/result.json` |" in readme  # copied from: relative to the folder above the inputs


# --------------------------------------------------------------------------- 19. leftovers and full disks


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_a_killed_init_leaves_nothing_the_next_init_keeps(tmp_path, capsys):
    """init SIGKILLed after its first copy (the issue: 87-145 MB folders that nothing removed, and a
    render --all that failed on their names): the next init of that DIR removes what it left; a
    live init's folder and an older init's without a PID are kept; render --all skips all of them."""
    data = tmp_path / "data"
    src = tmp_path / "in" / "conc2"
    shutil.copytree(MINI / "runs" / "req-serial", src)
    _variant(tmp_path / "in", "conc2/result.json")
    kill = (
        "import os, signal, sys; from benchbook.commands import init; real = init._copy\n"
        "def _copy(s, d):\n    r = real(s, d)\n"
        "    next(p for p in d.parents if p.name.startswith('.c.init-')).joinpath('campaign.json').write_text('{}')\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
        "init._copy = _copy\nfrom benchbook.commands.cli import main\nmain(sys.argv[1:])\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO / "lib")}
    r = subprocess.run([sys.executable, "-c", kill, "init", "-q", str(data / "c"), str(src)], env=env, timeout=120)
    assert r.returncode == -signal.SIGKILL
    (left,) = [p for p in data.iterdir() if p.name.startswith(".c.init-")]
    assert (left / "campaign.json").is_file()
    host = socket.gethostname()
    live = data / f".c.init-{os.getpid()}@{host}.keep01"
    old = data / ".c.init-a1b2c3d4"
    other = data / f".c.init-{_dead_pid()}@{host}x.otherhost"
    for p in (live, old, other):
        shutil.copytree(MINI, p)
    shutil.copytree(MINI, data / "alpha")
    nb = tmp_path / "nb"
    nb.mkdir()
    rc = main(["render", "--all", str(data), "--out", str(tmp_path / "o"), "--notebooks", str(nb)])
    err = capsys.readouterr().err
    assert rc == 0, err
    assert "1 campaign(s)" in err and ".c.init-" not in (tmp_path / "o" / "index.html").read_text()
    assert main(["init", "-q", str(data / "c"), str(src)]) == 0
    err = capsys.readouterr().err
    assert f"removed {left.name}, left by a killed init" in err
    assert not left.exists() and live.is_dir() and old.is_dir() and other.is_dir()
    assert (data / "c" / "campaign.json").is_file()


def test_disk_full_during_capture_run_is_exit_2_naming_the_file(tmp_path):
    """ENOSPC from the third snapshot on (os.fsync made to fail in the capture's own process, as a
    file system that allocates late reports it; a small tmpfs gives the same at write): exit 2 naming
    the file and the full disk, the capture marked stopped, no temporary file left."""
    sitedir = tmp_path / "site"
    sitedir.mkdir()
    (sitedir / "sitecustomize.py").write_text(
        "import errno, os\n_real = os.fsync\n_n = [0]\n"
        "def fsync(fd):\n"
        "    path = os.readlink(f'/proc/self/fd/{fd}')\n"
        "    if '/metrics/.during-' in path:\n"
        "        _n[0] += 1\n"
        "        if _n[0] > 1:\n"
        "            raise OSError(errno.ENOSPC, 'No space left on device')\n"
        "    return _real(fd)\n"
        "os.fsync = fsync\n"
    )
    import hostile_server as H

    with H.pair() as (server, _):
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(sitedir), str(REPO / "lib")])}
        out = tmp_path / "cap"
        r = subprocess.run(
            [sys.executable, "-m", "benchbook", "capture", "run", "--metrics", server.url + "/ok", "--every", "0.2",
             "--out", str(out), "--", sys.executable, "-c", "import time; time.sleep(3)"],
            env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert r.returncode == EXIT_BAD_INPUT, r.stderr
    assert "internal error" not in r.stderr
    import re

    # the second periodic snapshot (its number skips any interval missed on a loaded host)
    m = re.search(
        re.escape(f"{out}/metrics/") + r"(during-\d{4}\.prom): -: cannot write: no space left on device", r.stderr
    )
    assert m, r.stderr
    cap = json.loads((out / "capture.json").read_text())
    assert cap["complete"] is False and "no space left on device" in cap["stopped"]
    names = sorted(p.name for p in (out / "metrics").iterdir())
    assert "during-0001.prom" in names and m[1] not in names
    assert not [n for n in names if n.startswith(".")]  # the failed write's temporary file is gone


def test_a_result_folder_holding_the_capture_folder_is_refused_before_running(tmp_path):
    from benchbook.commands.capture_run import capture_run

    ran = tmp_path / "ran"
    cmd = [sys.executable, "-c", f"open({str(ran)!r}, 'w')"]
    for out, extra in (
        (tmp_path / "bench" / "cap", ["--output-path", str(tmp_path / "bench")]),  # the folder above --out
        (tmp_path / "cap2", [f"--result-dir={tmp_path / 'cap2' / 'res'}"]),  # a folder inside it
    ):
        with pytest.raises(InputError, match="the capture would copy its own files as results"):
            capture_run(metrics="http://127.0.0.1:9/metrics", out=str(out), command=[*cmd, *extra], arguments={})
        assert not out.exists()
    with pytest.raises(InputError, match=r"--results: .*holds the capture folder"):
        capture_run(
            metrics="http://127.0.0.1:9/metrics",
            out=str(tmp_path / "lay"),
            command=cmd,
            arguments={},
            results=[str(tmp_path / "lay" / "a1")],
            arm="a1",
            run="r1",
            point="c4",
        )
    assert not ran.exists()  # nothing ran, nothing was scraped (the URL is closed)
