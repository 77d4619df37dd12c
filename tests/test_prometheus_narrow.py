"""The narrow parse (``prometheus.parse(text, names=…)``, what the phase split uses) against a full parse.

Snapshots come from ``benchbook.commands.synth``'s engine (about 280 lines, the phase-split families among
queue, decode-step, per-rank and process families), plus rearranged variants the fast line finder
must not be fooled by: families in another order, no ``# TYPE``/``# HELP`` lines, wanted names
inside label values and help text, a family that resumes after another one, metadata lines split
by tabs. For each, the narrow parse keeps exactly the lines a line-by-line scan keeps, and either
gives the full parse's values and types for the samples it returns or rejects the text when (and
only when) the defect is in a line it reads.

The phase split's names (``phases.needed_samples``) are a histogram's ``_sum`` and ``_count``
with its ``# TYPE``/``# HELP`` lines, not its ``_bucket`` lines: a bucket defect is not seen there,
and is rejected by the full parse and by the whole-family parse ``benchbook validate CAMPAIGN``
runs (``phases.needed_names``), at the same line — ``BUCKET_DEFECTS`` below. Both name sets are
compared with the full parse.
"""

from __future__ import annotations

import random
import re

import pytest

from benchbook.commands.synth_engine import GENERATION_TOKENS, PROMPT_CLASSES, Model, PocketEngine, prefill_s, step_s
from benchbook.errors import InputError
from benchbook.metrics import phases, prometheus
from benchbook.metrics.profiles import get_profile

POCKET = get_profile("pocket")
NAMES = phases.needed_samples(POCKET)
FAMILIES = phases.needed_names(POCKET)


def _snapshots(k: int, seed: int = 5) -> list[str]:
    m = Model()
    rng = random.Random(seed)
    eng = PocketEngine(rng)
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
    noisy = (
        "# HELP zzz_total mentions pocket_ttft_seconds and pocket_tokens_total in its help\n"
        '# TYPE zzz_total counter\nzzz_total{of="pocket_requests_total"} 3\n'
    )
    return [
        text,
        "\n".join(ln for f in shuffled for ln in f) + "\n",
        "\n".join(untyped),  # no metadata at all (and no final blank line)
        noisy + text,
        text + noisy,
        text.replace("\r", "") + "pocket_tokens_total_extra 1\n",
        text.replace("# TYPE pocket_ttft_seconds ", "#\tTYPE\tpocket_ttft_seconds\t").replace(
            "# HELP pocket_request_duration_seconds ", "#  HELP  pocket_request_duration_seconds  "
        ),
    ]


def _line_scan(text: str, names=NAMES) -> str:
    return "\n".join(ln for ln in text.split("\n") if prometheus._wanted_line(ln, tuple(names))) + "\n"


def _outcome(text: str, names):
    try:
        snap = prometheus.parse(text, "m.prom", names)
    except InputError as e:
        return ("error", e.location, e.reason)
    return ("ok", snap.values, snap.types)


@pytest.fixture
def no_memo(monkeypatch):
    monkeypatch.setattr(prometheus, "MEMO", False)


@pytest.mark.parametrize("memo", [True, False])
@pytest.mark.parametrize("names", [NAMES, FAMILIES], ids=["needed_samples", "needed_names"])
def test_narrow_equals_full_over_many_snapshots(memo, names, monkeypatch):
    monkeypatch.setattr(prometheus, "MEMO", memo)
    prometheus.memo_clear()
    rng = random.Random(11)
    snaps = _snapshots(48)  # 48 snapshots x 7 spellings each (336 texts) per parametrization
    checked = 0
    for text in snaps:
        for v in _variants(text, rng):
            kept = prometheus._kept_lines(v, tuple(names))[0]
            assert kept == _line_scan(v, names)
            if names is NAMES:  # the split's names: no bucket line reaches the parser
                assert not [ln for ln in kept.split("\n") if ln.split("{")[0].split(" ")[0].endswith("_bucket")]
            full = prometheus.parse(v, "m.prom")
            narrow = prometheus.parse(v, "m.prom", names)
            wanted = {k for k in full.values if k.startswith(tuple(names))}
            assert set(narrow.values) == wanted
            for k in wanted:
                assert narrow.values[k] == full.values[k]
            for fam, typ in narrow.types.items():
                assert full.types[fam] == typ
            if v.startswith("#") and names is NAMES:  # typed text: the histograms keep their type
                assert narrow.types["pocket_ttft_seconds"] == "histogram"
            checked += 1
    assert checked == len(snaps) * 7


def _mutate(text: str, rng: random.Random) -> str:
    lines = text.split("\n")
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(lines))
        op = rng.choice(["drop", "dup", "swap", "insert", "cut"])
        if op == "drop":
            del lines[i]
        elif op == "dup":
            lines.insert(i, lines[i])
        elif op == "swap" and i + 1 < len(lines):
            lines[i], lines[i + 1] = lines[i + 1], lines[i]
        elif op == "insert":
            lines.insert(
                i,
                rng.choice(
                    [
                        "",
                        "#",
                        "# TYPE pocket_ttft_seconds gauge",
                        "# HELP pocket_ttft_seconds x",
                        "pocket_ttft_seconds_sum 1",
                        'pocket_ttft_seconds_bucket{le="+Inf"} 1',
                        "pocket_request_duration_seconds_count NaN",
                        "pocket_ttft_seconds 3",
                        "# TYPE pocket_request_duration_seconds summary",
                    ]
                ),
            )
        elif op == "cut":
            lines[i] = lines[i][: rng.randrange(len(lines[i]) + 1)]
    return "\n".join(lines)


def test_narrow_against_full_over_mutated_snapshots(no_memo):
    """Lines dropped, doubled, swapped, cut, inserted: the kept lines are the line scan's; where both
    parses succeed, the samples the narrow one returns are the full one's; the narrow parse rejects
    only what the full one rejects too (it reads fewer lines, so it may accept more)."""
    rng = random.Random(3)
    base = _snapshots(6)
    both_ok = 0
    for k in range(1000):
        text = _mutate(base[k % len(base)], rng)
        assert prometheus._kept_lines(text, tuple(NAMES))[0] == _line_scan(text)
        full, narrow = _outcome(text, None), _outcome(text, NAMES)
        if narrow[0] == "error":
            assert full[0] == "error", (text, narrow)
        elif full[0] == "ok":
            both_ok += 1
            assert set(narrow[1]) == {n for n in full[1] if n.startswith(tuple(NAMES))}
            assert all(narrow[1][n] == full[1][n] for n in narrow[1])
            assert all(full[2][f] == t for f, t in narrow[2].items())
    assert both_ok > 200


def _openmetrics(text: str) -> str:
    """The text as OpenMetrics: a counter family is named without its `_total`."""
    text = re.sub(r"^# (TYPE|HELP) (\S+)_total ", r"# \1 \2 ", text, flags=re.M)
    return text + "# EOF\n"


def test_openmetrics_keeps_whole_histograms(no_memo):
    """prometheus_client's OpenMetrics parser rejects a histogram without its +Inf bucket, so on
    OpenMetrics text a `_sum`/`_count` name keeps the whole family; values equal the full parse."""
    snaps = _snapshots(5)
    for text in snaps:
        om = _openmetrics(text)
        kept = prometheus._kept_lines(om, prometheus._om_prefixes(tuple(NAMES)), True)[0]
        assert 'pocket_ttft_seconds_bucket{le="+Inf"}' in kept and "process_" not in kept
        full, narrow = prometheus.parse(om, "m.prom"), prometheus.parse(om, "m.prom", NAMES)
        for k in NAMES:
            assert narrow.values[k] == full.values[k] == prometheus.parse(text, "t.prom", NAMES).values[k]
    for b, a in zip(snaps, snaps[1:]):
        om = phases.split(
            prometheus.parse(_openmetrics(b), "b", NAMES), prometheus.parse(_openmetrics(a), "a", NAMES), POCKET
        )
        assert om == phases.split(prometheus.parse(b, "b", NAMES), prometheus.parse(a, "a", NAMES), POCKET)


def test_phase_splits_agree_over_consecutive_snapshots():
    prometheus.memo_clear()
    snaps = _snapshots(60)
    for b, a in zip(snaps, snaps[1:]):
        full = phases.split(prometheus.parse(b, "b"), prometheus.parse(a, "a"), POCKET)
        narrow = phases.split(prometheus.parse(b, "b", NAMES), prometheus.parse(a, "a", NAMES), POCKET)
        assert narrow == full


DEFECTS = {
    # (old, new) applied once to a line the split reads: the narrow path must reject as the full does
    "duplicate series": ('pocket_requests_total{status="error"}', 'pocket_requests_total{status="success"}'),
    "negative counter": ('pocket_tokens_total{type="prompt"} ', 'pocket_tokens_total{type="prompt"} -'),
    "second TYPE": (
        "# TYPE pocket_tokens_total counter",
        "# TYPE pocket_tokens_total counter\n# TYPE pocket_tokens_total counter",
    ),
    "second histogram TYPE": (
        "# TYPE pocket_ttft_seconds histogram",
        "# TYPE pocket_ttft_seconds histogram\n# TYPE pocket_ttft_seconds histogram",
    ),
    "bad value": ("pocket_request_duration_seconds_sum ", "pocket_request_duration_seconds_sum x"),
    "negative histogram sum": ("pocket_ttft_seconds_sum ", "pocket_ttft_seconds_sum -"),
    "negative histogram count": ("pocket_ttft_seconds_count ", "pocket_ttft_seconds_count -"),
    "duplicate histogram count": (
        "pocket_ttft_seconds_count ",
        "pocket_ttft_seconds_count 1\npocket_ttft_seconds_count ",
    ),
}

BUCKET_DEFECTS = {
    # (old, new, reason): a defect in a _bucket line, which the split does not read
    "non-cumulative bucket": (  # the old value moves to a comment line (a token after it is rejected)
        'pocket_ttft_seconds_bucket{le="+Inf"}',
        'pocket_ttft_seconds_bucket{le="+Inf"} 0\n#',
        "buckets not cumulative",
    ),
    "+Inf differs from _count": (
        'pocket_request_duration_seconds_bucket{le="+Inf"} ',
        'pocket_request_duration_seconds_bucket{le="+Inf"} 9',
        "but its \\+Inf bucket is",
    ),
    "no +Inf bucket": ('pocket_ttft_seconds_bucket{le="+Inf"}', 'pocket_ttft_seconds_bucket{le="1e9"}', "no le="),
    "le not a number": (
        'pocket_ttft_seconds_bucket{le="0.1"}',
        'pocket_ttft_seconds_bucket{le="fast"}',
        "is not a number",
    ),
    "negative bucket count": (
        'pocket_ttft_seconds_bucket{le="+Inf"} ',
        'pocket_ttft_seconds_bucket{le="+Inf"} -',
        "never negative",
    ),
    "bucket line not exposition text": (
        'pocket_ttft_seconds_bucket{le="0.1"}',
        'pocket_ttft_seconds_bucket{le="0.1"',
        "not valid Prometheus text",
    ),
}


@pytest.mark.parametrize("defect", sorted(DEFECTS))
def test_defects_in_read_lines_are_rejected_on_both_paths(defect, no_memo):
    old, new = DEFECTS[defect]
    for text in _snapshots(4)[1:]:
        bad = text.replace(old, new, 1)
        assert bad != text
        full, narrow = _outcome(bad, None), _outcome(bad, NAMES)
        assert full[0] == "error" and narrow[0] == "error", (defect, full, narrow)
        assert narrow[1] == full[1] or defect == "bad value"  # the same line named


@pytest.mark.parametrize("defect", sorted(BUCKET_DEFECTS))
def test_bucket_defects_are_found_where_buckets_are_read(defect, no_memo):
    """The split's names skip the buckets and read the undamaged ``_sum``/``_count``; the full
    parse and the whole-family parse (``benchbook validate CAMPAIGN``) reject, naming the same line."""
    old, new, reason = BUCKET_DEFECTS[defect]
    for text in _snapshots(4)[1:]:
        bad = text.replace(old, new, 1)
        assert bad != text
        full, families, narrow = _outcome(bad, None), _outcome(bad, FAMILIES), _outcome(bad, NAMES)
        assert full[0] == "error" and families[0] == "error", (defect, full, families)
        assert families[1] == full[1] and families[1].startswith("line "), (full, families)
        assert re.search(reason, families[2]), families[2]
        assert narrow[0] == "ok" and narrow == _outcome(text, NAMES)  # what the undamaged text gives


def test_defects_in_other_families_do_not_reach_the_narrow_path(no_memo):
    text = _snapshots(2)[-1]
    bad = text.replace("process_open_fds 211", "process_open_fds 211\nprocess_open_fds 212")
    assert _outcome(bad, None)[0] == "error"
    assert _outcome(bad, NAMES)[0] == "ok"


def test_memo_hit_is_the_same_snapshot_and_still_checks_the_final_line_feed(monkeypatch):
    monkeypatch.setattr(prometheus, "MEMO", True)
    prometheus.memo_clear()
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


def test_memo_keeps_the_most_recently_used_within_its_entry_and_sample_bounds(monkeypatch):
    """The memo is a least-recently-used cache bounded by entries and by samples held; a hit is the
    most recently used; what it holds is always what parsing again gives."""
    monkeypatch.setattr(prometheus, "MEMO", True)
    prometheus.memo_clear()
    snaps = [s for s in dict.fromkeys(_snapshots(40))]  # distinct texts (and distinct kept texts)
    kept = {prometheus._kept_lines(s, tuple(NAMES))[0] for s in snaps}
    assert len(kept) > 12
    per = sum(len(v) for v in prometheus.parse(snaps[0], "0.prom", NAMES).values.values())
    monkeypatch.setattr(prometheus, "_MEMO_MAX", 1000)
    monkeypatch.setattr(prometheus, "_MEMO_SAMPLES_MAX", per * 5 + per // 2)  # room for five entries
    prometheus.memo_clear()
    first = [prometheus.parse(s, f"{i}.prom", NAMES) for i, s in enumerate(snaps[:8])]
    assert len(prometheus._MEMO) == 5 and prometheus._memo_samples[0] == sum(
        len(v) for e in prometheus._MEMO.values() for v in e[0].values()
    )
    assert prometheus._memo_samples[0] <= prometheus._MEMO_SAMPLES_MAX
    newest = [(prometheus._kept_lines(s, tuple(NAMES))[0], False, False) for s in snaps[3:8]]
    assert list(prometheus._MEMO) == newest  # the three oldest went first
    prometheus.parse(snaps[3], "again.prom", NAMES)  # a hit: now the most recently used
    prometheus.parse(snaps[8], "8.prom", NAMES)  # one more out: the oldest is now snaps[4]
    assert list(prometheus._MEMO)[-2:] == [newest[0], (prometheus._kept_lines(snaps[8], tuple(NAMES))[0], False, False)]
    assert newest[1] not in prometheus._MEMO
    monkeypatch.setattr(prometheus, "_MEMO_MAX", 2)  # and by entries
    prometheus.parse(snaps[9], "9.prom", NAMES)
    assert len(prometheus._MEMO) == 2
    for i, s in enumerate(snaps[:10]):  # a hit or a parse, the same snapshot
        got = prometheus.parse(s, "x.prom", NAMES)
        prometheus.memo_clear()
        assert got.values == prometheus.parse(s, "y.prom", NAMES).values, i
    assert [x.values for x in first] == [prometheus.parse(s, "z", NAMES).values for s in snaps[:8]]


def test_whole_text_memo_hits_what_a_parse_gives_and_is_bounded_by_characters(monkeypatch):
    """A whole capture parsed again (init then its validation; a kernel's baseline then compare page) is a
    memo hit that gives what parsing gives; the whole and the narrow parse of one text are two entries
    (their checks differ); a text that fails is never stored; the characters held are bounded."""
    monkeypatch.setattr(prometheus, "MEMO", True)
    prometheus.memo_clear()
    snaps = list(dict.fromkeys(_snapshots(6)))
    first = prometheus.parse(snaps[0], "a.prom")
    assert list(prometheus._MEMO) == [(snaps[0], False, True)]
    hit = prometheus.parse(snaps[0], "b.prom")
    assert hit.source == "b.prom" and hit.values == first.values and hit.types == first.types
    hit.values.clear()  # callers own their snapshot
    assert prometheus.parse(snaps[0], "c.prom").values == first.values
    prometheus.parse(snaps[0], "d.prom", NAMES)
    assert len(prometheus._MEMO) == 2 and (snaps[0], False, True) in prometheus._MEMO
    bad = snaps[1].replace("process_open_fds 211", "process_open_fds 211\nprocess_open_fds 212")
    for _ in range(2):  # fails the same way each time: nothing stored
        assert _outcome(bad, None)[0] == "error"
    assert not any(k[0] == bad for k in prometheus._MEMO)
    monkeypatch.setattr(prometheus, "_MEMO_CHARS_MAX", len(snaps[3]) + len(snaps[4]))  # room for the newest two
    prometheus.memo_clear()
    for i in (2, 3, 4):
        prometheus.parse(snaps[i], f"{i}.prom")
    assert list(prometheus._MEMO) == [(snaps[3], False, True), (snaps[4], False, True)]
    assert prometheus._memo_chars[0] == len(snaps[3]) + len(snaps[4]) <= prometheus._MEMO_CHARS_MAX
    prometheus.memo_clear()
    assert prometheus._memo_chars[0] == 0 and prometheus._memo_samples[0] == 0
