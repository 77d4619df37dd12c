"""Mutation fuzzing of the loaders: bad input yields benchbook's InputError (or loads), never a
KeyError/TypeError/ValueError/ZeroDivisionError or any other traceback.

Seeds: the hand-made campaign in tests/fixtures/mini. JSON files get one value replaced, removed
or retyped at a random JSON path; /metrics text gets bytes flipped, lines dropped, duplicated,
swapped or cut. Bounded (max_examples) so the file runs in well under 30 s.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchbook.commands.cli import main
from benchbook.errors import InputError
from benchbook.ingest.campaign import load_campaign
from benchbook.metrics import phases, prometheus
from benchbook.metrics.profiles import get_profile

MINI = Path(__file__).parent / "fixtures" / "mini"
JSON_FILES = [
    "campaign.json",
    "runs/req-serial/requests.json",
    "runs/phases-serial/phases.json",
    "runs/mem-serial/memory.json",
]
DAMAGE_FILES = JSON_FILES + ["runs/phases-serial/metrics/s2.prom", "runs/req-serial/server.log"]
SNAP = (MINI / "runs/phases-serial/metrics/s2.prom").read_text()
SNAP_BEFORE = (MINI / "runs/phases-serial/metrics/s1.prom").read_text()
POCKET = get_profile("pocket")

# BENCHBOOK_FUZZ_EXAMPLES=5000 for a longer hunt; the default keeps `make test` quick.
FUZZ = settings(
    max_examples=int(os.environ.get("BENCHBOOK_FUZZ_EXAMPLES", "200")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

_WORK = Path(tempfile.mkdtemp(prefix="benchbook-fuzz-"))
_ROOT = _WORK / "mini"
shutil.copytree(MINI, _ROOT)


class _Mutated:
    """The shared working copy of the mini campaign with one file replaced; restored on exit."""

    def __init__(self, rel: str, data: bytes):
        self.path = _ROOT / rel
        self.data = data
        self.orig = (MINI / rel).read_bytes()

    def __enter__(self) -> Path:
        self.path.write_bytes(self.data)
        return _ROOT

    def __exit__(self, *exc):
        self.path.write_bytes(self.orig)


# ---- JSON ----------------------------------------------------------------------------------

odd_values = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from([0, -1, 1, 2**63, -(2**63), 10**30]),
    st.sampled_from([0.0, -0.0, -1.5, 1e-300, 1e308, 0.5]),
    st.text(max_size=8),
    st.sampled_from(
        [
            "",
            "../../etc/passwd",
            "metrics/s1.prom",
            "metrics",
            "benchbook.requests/1",
            "short",
            "serial",
            "warmup",
            "load_end",
            "stop",
            "nosuch",
            "\udcff".encode("utf-8", "surrogatepass").decode("latin-1"),
        ]
    ),
    st.just([]),
    st.just({}),
    st.lists(st.integers(-2, 3), max_size=3),
    st.dictionaries(st.sampled_from(["t", "event", "id", "tokens"]), st.integers(-1, 3), max_size=2),
)


def _paths(doc, prefix=()):
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _paths(v, prefix + (i,))


def _mutate(doc, path, op, value):
    if not path:
        return value if op == "replace" else [doc] if op == "wrap" else doc
    parent = doc
    for p in path[:-1]:
        parent = parent[p]
    last = path[-1]
    if op == "remove":
        del parent[last]
    elif op == "replace":
        parent[last] = value
    elif op == "wrap":
        parent[last] = [parent[last]]
    elif op == "stringify":
        parent[last] = json.dumps(parent[last])
    elif op == "duplicate" and isinstance(parent, list):
        parent.append(json.loads(json.dumps(parent[last])))
    return doc


def _load_everything(root: Path) -> None:
    """Every loader a page uses; only InputError may escape."""
    camp = load_campaign(root)
    camp.requests
    camp.phase_samples
    camp.memory
    for r in camp.runs:
        camp.server_log_text(r)
    camp.input_files()


def _check(root: Path) -> None:
    try:
        _load_everything(root)
    except InputError as e:
        assert e.file and e.reason
    rc = main(["validate", "-q", str(root)])
    assert rc in (0, 2), f"validate exited {rc} (internal error)"


@FUZZ
@given(
    which=st.sampled_from(JSON_FILES),
    pick=st.integers(min_value=0),
    op=st.sampled_from(["replace", "remove", "wrap", "stringify", "duplicate"]),
    value=odd_values,
)
def test_mutated_campaign_json(which, pick, op, value):
    doc = json.loads((MINI / which).read_text())
    paths = list(_paths(doc))
    doc = _mutate(doc, paths[pick % len(paths)], op, value)
    with _Mutated(which, json.dumps(doc).encode()) as root:
        _check(root)


@FUZZ
@given(which=st.sampled_from(DAMAGE_FILES), cut=st.floats(0, 1), flip=st.integers(0, 255), at=st.floats(0, 1))
def test_damaged_campaign_file_bytes(which, cut, flip, at):
    raw = bytearray((MINI / which).read_bytes())
    raw[int(at * (len(raw) - 1))] = flip
    raw = raw[: max(1, int(len(raw) * (0.5 + cut / 2)))]
    with _Mutated(which, bytes(raw)) as root:
        _check(root)


# ---- exposition text -----------------------------------------------------------------------


def _om(text: str) -> str:
    """The mini snapshot as OpenMetrics (counter families named without `_total`)."""
    text = text.replace("# TYPE pocket_tokens_total counter", "# TYPE pocket_tokens counter")
    text = text.replace("# HELP pocket_tokens_total", "# HELP pocket_tokens")
    text = text.replace("# TYPE pocket_requests_total counter", "# TYPE pocket_requests counter")
    text = text.replace("# HELP pocket_requests_total", "# HELP pocket_requests")
    return text + "# EOF\n"


line_ops = st.lists(
    st.tuples(
        st.sampled_from(["drop", "dup", "swap", "flip", "cut", "insert"]), st.integers(0, 10_000), st.integers(0, 255)
    ),
    min_size=1,
    max_size=4,
)


def _mutate_text(text: str, ops) -> bytes:
    lines = text.split("\n")
    raw = None
    for op, k, b in ops:
        i = k % max(1, len(lines))
        if op == "drop" and lines:
            del lines[i]
        elif op == "dup" and lines:
            lines.insert(i, lines[i])
        elif op == "swap" and len(lines) > 1:
            j = (i + 1) % len(lines)
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "insert":
            lines.insert(
                i,
                [
                    "",
                    "#",
                    "# TYPE",
                    "# HELP x",
                    "x",
                    "{}",
                    'x{le="+Inf"} 1',
                    "x NaN",
                    "# EOF",
                    'pocket_tokens_total{type="prompt"} -1',
                ][b % 10],
            )
        elif op == "cut":
            joined = "\n".join(lines)
            lines = joined[: k % (len(joined) + 1)].split("\n")
        elif op == "flip":
            data = bytearray("\n".join(lines).encode())
            if data:
                data[k % len(data)] = b
            raw = bytes(data)
            lines = raw.decode("utf-8", "replace").split("\n")
    return raw if raw is not None and ops[-1][0] == "flip" else "\n".join(lines).encode()


def _parse_all_ways(data: bytes, tmp: Path) -> None:
    p = tmp / "m.prom"
    p.write_bytes(data)
    names = phases.needed_names(POCKET)
    for kw in ({}, {"names": names}):
        try:
            snap = prometheus.read(p, **kw)
        except InputError as e:
            assert e.file == str(p)
            continue
        before = prometheus.parse(
            SNAP_BEFORE if not prometheus.is_openmetrics(data.decode()) else _om(SNAP_BEFORE), "before", names
        )
        try:
            phases.split(before, snap, POCKET, 10.0, 0.01)
        except (phases.Excluded, InputError):
            pass


@FUZZ
@given(ops=line_ops, om=st.booleans())
def test_mutated_exposition_text(ops, om):
    text = _om(SNAP) if om else SNAP
    _parse_all_ways(_mutate_text(text, ops), _WORK)


@FUZZ
@given(data=st.binary(max_size=300))
def test_arbitrary_bytes_as_exposition(data):
    _parse_all_ways(data, _WORK)


def test_om_seed_parses_like_the_text_seed():
    """The OpenMetrics rendering of the seed gives the same phase split (so fuzzing both is fair)."""
    names = phases.needed_names(POCKET)
    a = phases.split(prometheus.parse(SNAP_BEFORE, "b", names), prometheus.parse(SNAP, "a", names), POCKET)
    b = phases.split(prometheus.parse(_om(SNAP_BEFORE), "b", names), prometheus.parse(_om(SNAP), "a", names), POCKET)
    assert a == b


@FUZZ
@given(
    doc=st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(alphabet='ab"\\\\{}[]:,', max_size=8),
        lambda kids: (
            st.lists(kids, max_size=4) | st.dictionaries(st.text(alphabet='k"\\\\:{', max_size=4), kids, max_size=4)
        ),
        max_leaves=20,
    ),
    window=st.integers(min_value=1, max_value=17),
)
def test_windowed_scan_equals_a_whole_scan(doc, window):
    """The nesting/key scan reads a result file in windows (a 200 MB file no longer costs a class byte
    per byte at once); the string, escape and depth state carried across window edges gives exactly
    the figures of one window over the whole text, whatever the window size."""
    from benchbook import jsonfile

    raw = json.dumps(doc).encode()
    whole = jsonfile.scan_json(raw, limit=3)
    with mock.patch.object(jsonfile, "_WINDOW", window):
        assert jsonfile.scan_json(raw, limit=3) == whole
    assert whole[2] == jsonfile._count_keys(doc)


_LEAF = st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.floats(allow_nan=False, allow_infinity=False)
_VALUE = st.recursive(
    _LEAF | st.text(alphabet='ab"\\\\{}[]:, \n', max_size=6),
    lambda kids: (
        st.lists(kids, max_size=5) | st.dictionaries(st.text(alphabet='k"\\\\:{,', max_size=3), kids, max_size=3)
    ),
    max_leaves=25,
)


@FUZZ
@given(
    doc=st.dictionaries(st.text(alphabet='kq"\\\\,:', max_size=4), _VALUE, max_size=6),
    window=st.integers(min_value=1, max_value=23),
    batch=st.integers(min_value=1, max_value=40),
    indent=st.sampled_from([None, 1]),
)
def test_streamed_object_equals_a_whole_parse(doc, window, batch, indent):
    """A big result file is parsed member by member, its arrays in batches, from windows of the file
    (jsonfile.stream_object); whatever the window and batch sizes, the document is the same."""
    import orjson

    from benchbook import jsonfile

    p = _WORK / "streamed.json"
    p.write_text(json.dumps(doc, indent=indent))
    with mock.patch.object(jsonfile, "_WINDOW", window), mock.patch.object(jsonfile, "_BATCH", batch):
        assert jsonfile.stream_object(p, loads=orjson.loads) == doc
