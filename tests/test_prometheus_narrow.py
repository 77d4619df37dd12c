"""The narrow parse (``prometheus.parse(text, names=…)``, what the phase split uses) against a full parse.

Snapshots come from ``benchbook.synth``'s engine (about 280 lines, the phase-split families among
queue, decode-step, per-rank and process families), plus rearranged variants the fast line finder
must not be fooled by: families in another order, no ``# TYPE``/``# HELP`` lines, wanted names
inside label values and help text, a family that resumes after another one. For each, the narrow
parse keeps exactly the lines a line-by-line scan keeps, and either gives the full parse's values
and types for the wanted families or rejects the text when (and only when) the defect is in them.
"""

from __future__ import annotations

import random

import pytest

from benchbook import phases, prometheus
from benchbook.errors import InputError
from benchbook.profiles import get_profile
from benchbook.synth import GENERATION_TOKENS, PROMPT_CLASSES, Model, _Engine, prefill_s, step_s

POCKET = get_profile("pocket")
NAMES = phases.needed_names(POCKET)


def _snapshots(k: int, seed: int = 5) -> list[str]:
    m = Model()
    rng = random.Random(seed)
    eng = _Engine(rng)
    out = [eng.text(0)]
    for i in range(k):
        cls = "short" if i % 2 == 0 else "long"
        p = PROMPT_CLASSES[cls]["tokens"]
        f = 1.0 + 0.05 * rng.gauss(0.0, 1.0)
        eng.request(p, GENERATION_TOKENS, prefill_s(m, p) * f, [step_s(m, p) * f] * (GENERATION_TOKENS - 1), 0.004)
        out.append(eng.text(rng.randint(0, 3)))
    return out


def _families(text: str) -> list[list[str]]:
    """Split text into blocks that each start at a # HELP line (one family each in synth text)."""
    blocks: list[list[str]] = []
    for ln in text.rstrip("\n").split("\n"):
        if ln.startswith("# HELP ") or not blocks:
            blocks.append([])
        blocks[-1].append(ln)
    return blocks


def _variants(text: str, rng: random.Random) -> list[str]:
    fams = _families(text)
    shuffled = fams[:]
    rng.shuffle(shuffled)
    untyped = [ln for ln in text.split("\n") if not ln.startswith("#")]
    noisy = ('# HELP zzz_total mentions pocket_ttft_seconds and pocket_tokens_total in its help\n'
             '# TYPE zzz_total counter\nzzz_total{of="pocket_requests_total"} 3\n')
    return [
        text,
        "\n".join(ln for f in shuffled for ln in f) + "\n",
        "\n".join(untyped),  # no metadata at all (and no final blank line)
        noisy + text,
        text + noisy,
        text.replace("\r", "") + "pocket_tokens_total_extra 1\n",
    ]


def _line_scan(text: str) -> str:
    return "\n".join(ln for ln in text.split("\n") if prometheus._wanted_line(ln, tuple(NAMES))) + "\n"


def _outcome(text: str, names):
    try:
        snap = prometheus.parse(text, "m.prom", names)
    except InputError as e:
        return ("error", e.location, e.reason)
    return ("ok", snap.values, snap.types)


@pytest.fixture
def no_memo(monkeypatch):
    monkeypatch.setattr(prometheus, "NARROW_MEMO", False)


@pytest.mark.parametrize("memo", [True, False])
def test_narrow_equals_full_over_many_snapshots(memo, monkeypatch):
    monkeypatch.setattr(prometheus, "NARROW_MEMO", memo)
    prometheus._MEMO.clear()
    rng = random.Random(11)
    snaps = _snapshots(120)
    checked = 0
    for text in snaps:
        for v in _variants(text, rng):
            assert prometheus._kept_lines(v, tuple(NAMES))[0] == _line_scan(v)
            full = prometheus.parse(v, "m.prom")
            narrow = prometheus.parse(v, "m.prom", NAMES)
            wanted = {k for k in full.values if k.startswith(tuple(NAMES))}
            assert set(narrow.values) == wanted
            for k in wanted:
                assert narrow.values[k] == full.values[k]
            for fam, typ in narrow.types.items():
                assert full.types[fam] == typ
            checked += 1
    assert checked == len(snaps) * 6


def test_phase_splits_agree_over_consecutive_snapshots():
    prometheus._MEMO.clear()
    snaps = _snapshots(60)
    for b, a in zip(snaps, snaps[1:]):
        full = phases.split(prometheus.parse(b, "b"), prometheus.parse(a, "a"), POCKET)
        narrow = phases.split(prometheus.parse(b, "b", NAMES), prometheus.parse(a, "a", NAMES), POCKET)
        assert narrow == full


DEFECTS = {
    # (old, new) applied once to a wanted family's line: the narrow path must reject as the full does
    "non-cumulative bucket": ('pocket_ttft_seconds_bucket{le="+Inf"}', 'pocket_ttft_seconds_bucket{le="+Inf"} 0 #'),
    "duplicate series": ('pocket_requests_total{status="error"}', 'pocket_requests_total{status="success"}'),
    "negative counter": ('pocket_tokens_total{type="prompt"} ', 'pocket_tokens_total{type="prompt"} -'),
    "second TYPE": ("# TYPE pocket_tokens_total counter", "# TYPE pocket_tokens_total counter\n# TYPE pocket_tokens_total counter"),
    "bad value": ("pocket_request_duration_seconds_sum ", "pocket_request_duration_seconds_sum x"),
}


@pytest.mark.parametrize("defect", sorted(DEFECTS))
def test_defects_in_wanted_families_are_rejected_on_both_paths(defect, no_memo):
    old, new = DEFECTS[defect]
    for text in _snapshots(4)[1:]:
        bad = text.replace(old, new, 1)
        assert bad != text
        full, narrow = _outcome(bad, None), _outcome(bad, NAMES)
        assert full[0] == "error" and narrow[0] == "error", (defect, full, narrow)
        assert narrow[1] == full[1] or defect == "bad value"  # the same line named


def test_defects_in_other_families_do_not_reach_the_narrow_path(no_memo):
    text = _snapshots(2)[-1]
    bad = text.replace("process_open_fds 211", "process_open_fds 211\nprocess_open_fds 212")
    assert _outcome(bad, None)[0] == "error"
    assert _outcome(bad, NAMES)[0] == "ok"


def test_memo_hit_is_the_same_snapshot_and_still_checks_the_final_line_feed(monkeypatch):
    monkeypatch.setattr(prometheus, "NARROW_MEMO", True)
    prometheus._MEMO.clear()
    text = _snapshots(3)[-1]
    # other families differ: the kept text (and so the memo key) is the same
    other = text.replace("process_open_fds 211", "process_open_fds 299")
    first = prometheus.parse(text, "a.prom", NAMES)
    second = prometheus.parse(other, "b.prom", NAMES)
    assert second.source == "b.prom" and second.values == first.values and second.types == first.types
    second.values["pocket_tokens_total"].clear()  # callers own their snapshot
    assert prometheus.parse(text, "c.prom", NAMES).values == first.values
    # the same kept lines, but the capture ends mid-line on a wanted family: still rejected
    kept = prometheus._kept_lines(text, tuple(NAMES))[0]
    prometheus.parse(kept, "kept.prom", NAMES)  # memoised
    with pytest.raises(InputError, match="no line feed"):
        prometheus.parse(kept.rstrip("\n"), "cut.prom", NAMES)
