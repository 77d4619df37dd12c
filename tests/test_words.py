"""Words a newcomer knows: --help names the things (the concurrency ladder, the phase harness, the
range-and-spread rule) instead of the seeds they came from; one counting vocabulary — arms, server
processes, load points — in init, validate and the campaign it writes; distinct arm names in the
bundled campaign; ``render`` on a capture folder says to run ``benchbook init`` first."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from benchbook.analysis.verdict import RULE_NAMES, RULE_TEXT, RULES
from benchbook.commands.cli import main
from benchbook.ingest.manifest import counts, counts_text

ROOT = Path(__file__).resolve().parents[1]
HELP = ["capture", "capture ladder", "capture phases", "capture run", "init", "render", "validate", "summary"]


def _help(capsys, cmd: str) -> str:
    with pytest.raises(SystemExit):
        main([*cmd.split(), "--help"])
    return capsys.readouterr().out


@pytest.mark.parametrize("cmd", HELP)
def test_help_never_sends_a_reader_to_the_seeds(cmd, capsys):
    text = _help(capsys, cmd)
    assert not re.search(r"\bseeds?'|\bthe seeds?\b|PD seed", text), text


def test_help_names_the_harnesses(capsys):
    top = _help(capsys, "capture")
    assert "the phase harness" in top and "the concurrency ladder" in top
    ladder = " ".join(_help(capsys, "capture ladder").split())
    assert ladder.count("The concurrency ladder against an OpenAI-compatible server") == 1


def test_rule_is_explained_where_it_is_chosen(capsys):
    text = " ".join(_help(capsys, "summary").split())
    for rule in RULES:
        assert f"{rule} = {RULE_NAMES[rule]}" in text
    assert "docs/statistics.md" in text
    doc = (ROOT / "docs" / "statistics.md").read_text()
    table = doc[doc.index("### Choosing a noise rule") :].split("\n### ", 1)[0]
    for rule in RULES:
        assert f"| `{rule}`" in table and RULE_NAMES[rule] in table


def test_every_page_says_the_rules_name():
    for rule in RULES:
        assert RULE_TEXT[rule].startswith(f"{RULE_NAMES[rule]} ({rule}): ")


# ----------------------------------------------------------------------------- counting


def test_counts_in_one_vocabulary():
    layout = {
        "arms": {"serial": {}, "batch": {}},
        "runs": [
            *(
                {"id": f"{a}-{p}-conc{c}", "arm": a, "process": f"{a}/{p}", "point": f"conc{c}"}
                for a in ("serial", "batch")
                for p in ("p1", "p2")
                for c in (1, 2)
            ),
            *(
                {"id": f"{a}-{p}-phases", "arm": a, "process": f"{a}/{p}"}
                for a in ("serial", "batch")
                for p in ("p1", "p2")
            ),
        ],
    }
    assert counts(layout) == {"arms": 2, "processes": 4, "load_points": 8, "benchmark_runs": 0, "entries": 12}
    assert counts_text(layout).startswith("2 arms, 4 server processes, 8 load points (12 runs in campaign.json")
    dsv4 = json.loads((ROOT / "data" / "dsv4-163" / "campaign.json").read_text())
    # a hand-written campaign: each run one server process, no load points, nothing more to say
    assert counts_text(dsv4) == f"{len(dsv4['arms'])} arms, {len(dsv4['runs'])} server processes"
    # result files brought in on their own: benchmark runs, not processes nobody named
    er = json.loads((ROOT / "data" / "er0080-opt125m" / "campaign.json").read_text())
    assert counts_text(er) == f"{len(er['arms'])} arms, {len(er['runs'])} benchmark runs"


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    import user_campaign

    return user_campaign.my_runs(tmp_path_factory.mktemp("words"))


def test_init_and_validate_count_alike(made, tmp_path, capsys):
    camp = tmp_path / "camp"
    assert main(["init", str(camp), str(made), "-v"]) == 0
    said = capsys.readouterr().out
    m = json.loads((camp / "campaign.json").read_text())
    words = counts_text(m)
    assert words.startswith("2 arms, 4 server processes, 16 load points")
    assert f"wrote {camp / 'campaign.json'}: {words}" in said
    assert f"campaign {m['title']!r}: {words}," in said  # the validate line init prints
    assert m["scope"]["measured"][0].startswith(words + ", brought in by benchbook init")
    assert main(["validate", str(camp)]) == 0
    assert f": {words}," in capsys.readouterr().out
    assert not re.search(r"\d+ run\(s\), \d+ arm\(s\)|\d+ arms, \d+ runs,", said)


def test_render_on_capture_folders_says_to_init_first(made, tmp_path, capsys):
    for cmd in (["render", str(made), "--out", str(tmp_path / "out")], ["validate", str(made / "serial")]):
        assert main(cmd) == 2
        err = capsys.readouterr().err
        assert "no campaign.json" in err and "run `benchbook init` first" in err, err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["render", str(empty), "--out", str(tmp_path / "out2")]) == 2
    err = capsys.readouterr().err
    assert "benchbook init" not in err and "an empty or non-campaign folder" in err


def test_the_bundled_arms_are_told_apart():
    """`batch` (batch mode at 1536681) and `batched` (the batched forward at ccb339d) stood side by
    side in the findings; no arm name is another's name plus a suffix now, and no label says mbs."""
    arms = json.loads((ROOT / "data" / "dsv4-163" / "campaign.json").read_text())["arms"]
    names = list(arms)
    assert not [(a, b) for a in names for b in names if a != b and b.startswith(a) and b[len(a) :].isalpha()]
    assert "batched-forward" in arms and "batch" in arms
    assert not [a for a, v in arms.items() if "mbs" in v["label"]]
