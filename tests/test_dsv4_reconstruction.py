"""The bundled dsv4-163 campaign: reproducible, and faithful to the seed page's tables.

(1) data/dsv4-163/reconstruct.py regenerates the committed files byte for byte.
(2) An independent recomputation - prometheus_client's parser and plain json, no benchbook and
    no import of the generator - gives the seed's printed figures at their printed precision.
The expected figures are typed from the seed page (tests/seed_tables.py), not imported from the generator.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from statistics import median

import pytest
from prometheus_client.parser import text_string_to_metric_families

import seed_tables

CAMPAIGN = Path(__file__).resolve().parents[1] / "data" / "dsv4-163"
NOT_GENERATED = {"README.md", "reconstruct.py", "render.yml"}  # hand-written beside the data


# seed "Prefill and decode separately", "Single request, phase split" (ccb339d) and
# "Environment ablation" (tests/seed_tables.py): run -> (median prefill s, prefill tok/s (min, med,
# max), decode tok/s (min, med, max), median engine total s); None where the seed prints no figure.
def _mmm(t):
    med, lo, hi = t
    return (lo, med, hi)


# the phases run of each arm: phases-<arm>, except the batched-forward arm's (its runs keep the seed's names)
PHASES_RUN = {"batched-forward": "phases-batched"}
PHASES = {
    **{
        (PHASES_RUN.get(arm, f"phases-{arm}"), pc): (
            r.prefill_s,
            _mmm(r.prefill_tok_s),
            _mmm(r.decode_tok_s),
            r.total_s,
        )
        for (arm, pc), r in seed_tables.PHASES.items()
    },
    **{
        (f"phases-{arm}", pc): (None, _mmm(row[i]), _mmm(row[i + 2]), None)
        for arm, row in seed_tables.ABLATION_ONLY.items()
        for i, pc in enumerate(("short", "long"))
    },
}
PTOK = {"short": 120, "long": 1446}

# seed "Serial, whole request": single latency s, single tok/s, n=2/4/8 rates, interleave s
SERIAL_TABLE = {
    "serial": (11.922, 2.684, (2.686, 2.686, 2.686), 26.384),
    "serial2": (11.335, 2.823, (2.798, 2.806, 2.803), 25.390),
    "tuned": (9.330, 3.430, (3.443, 3.449, 3.444), 20.439),
    "tuned2": (8.682, 3.686, (3.683, 3.775, 3.770), 19.289),
    "batch": (8.845, 3.618, (3.582, 3.538, 3.544), 20.187),
}
# seed "Batch mode after the batched forward": single s / tok/s, (wall, rate) per n, interleave,
# n=8 (mean, worst) latency
CCB_TABLE = {
    "serial-ccb339d": (8.656, 3.697, ((17.734, 3.609), (34.760, 3.682), (69.495, 3.684)), 19.660, (39.113, 69.490)),
    "batched-ccb339d": (8.978, 3.564, ((16.581, 3.860), (27.624, 4.634), (42.927, 5.964)), 18.538, (42.830, 42.925)),
}
# seed "Peak memory" tables: GiB per rank, 2 dp
MEMORY = {
    "memory-default": (8.19, 6.29),
    "memory-tuned": (15.57, 8.15),
    "memory-batch": (16.42, 9.73),
    "memory-serial": (15.90, None),
    "memory-batched": (17.52, None),
}


def r(x: float, dp: int) -> float:
    return round(x, dp)


def load(rel: str):
    return json.loads((CAMPAIGN / rel).read_text(encoding="utf-8"))


def manifest():
    return load("campaign.json")


def run_path(run_id: str) -> Path:
    runs = {run["id"]: run for run in manifest()["runs"]}
    return CAMPAIGN / runs[run_id]["path"]


# ---------------------------------------------------------------- (1) reproducible


def test_reconstruction_is_deterministic_and_committed(tmp_path):
    script = CAMPAIGN / "reconstruct.py"
    subprocess.run(
        [sys.executable, "-B", str(script), "--out", str(tmp_path)], check=True, capture_output=True, text=True
    )
    generated = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()}
    committed = {
        p.relative_to(CAMPAIGN).as_posix()
        for p in CAMPAIGN.rglob("*")
        if p.is_file() and p.name not in NOT_GENERATED and "__pycache__" not in p.parts
    }
    assert generated == committed, "stale or missing files: rerun data/dsv4-163/reconstruct.py"
    for rel in sorted(generated):
        assert (tmp_path / rel).read_bytes() == (CAMPAIGN / rel).read_bytes(), rel


def test_manifest_names_everything():
    m = manifest()
    assert m["provenance"] == "reconstructed"
    assert set(m["arms"]) == {
        "default",
        "tuned",
        "batch",
        "sparse",
        "prefetch",
        "cached",
        "sparse+cached",
        "serial",
        "batched-forward",
    }
    for arm in m["arms"].values():
        assert arm["environment"] in m["environments"] and arm["label"] and arm["description"]
    for run in m["runs"]:
        assert run["arm"] in m["arms"]
        harness_file = {"requests": "requests.json", "phases": "phases.json", "memory": "memory.json"}[run["harness"]]
        assert (CAMPAIGN / run["path"] / harness_file).is_file(), run["id"]
        assert (CAMPAIGN / run["path"] / "server.log").is_file(), run["id"]


# ---------------------------------------------------------------- (2) phase split


def scrape(path: Path) -> dict:
    values = {}
    for family in text_string_to_metric_families(path.read_text(encoding="utf-8")):
        for s in family.samples:
            values[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return values


def phase_samples(run_id: str):
    folder = run_path(run_id)
    doc = json.loads((folder / "phases.json").read_text(encoding="utf-8"))
    previous_after = None
    out = []
    for sample in doc["samples"]:
        before_path = folder / sample["metrics_before"]
        after_path = folder / sample["metrics_after"]
        b, a = scrape(before_path), scrape(after_path)
        if previous_after is not None:  # counters are cumulative across the run
            assert b == previous_after
        previous_after = a

        def delta(name, **labels):
            key = (name, tuple(sorted(labels.items())))
            return a[key] - b[key]

        for hist in ("pocket_ttft_seconds", "pocket_request_duration_seconds"):
            buckets = sorted((float(dict(k[1])["le"]), v) for k, v in a.items() if k[0] == hist + "_bucket")
            counts = [v for _, v in buckets]
            assert counts == sorted(counts) and counts[-1] == a[(hist + "_count", ())]
        assert delta("pocket_ttft_seconds_count") == 1
        assert delta("pocket_request_duration_seconds_count") == 1
        assert delta("pocket_requests_total", status="success") == 1
        prefill = delta("pocket_ttft_seconds_sum")
        total = delta("pocket_request_duration_seconds_sum")
        ptok = delta("pocket_tokens_total", type="prompt")
        ctok = delta("pocket_tokens_total", type="generation")
        assert ptok == PTOK[sample["prompt_class"]] and ctok == 32
        assert 0.001 <= sample["client_total_s"] - total <= 0.003 + 1e-9
        assert 0 < sample["first_event_s"] < 0.01 < prefill < total
        out.append(dict(sample, prefill=prefill, total=total, ptok=ptok, decode_rate=(ctok - 1) / (total - prefill)))
    return out


@pytest.mark.parametrize("run_id", sorted({k[0] for k in PHASES}))
def test_phase_cells_match_seed(run_id):
    samples = phase_samples(run_id)
    for cls in ("short", "long"):
        s_med, prates, drates, t_med = PHASES[(run_id, cls)]
        cell = [s for s in samples if s["prompt_class"] == cls]
        warm = [s for s in cell if s["warmup"]]
        kept = [s for s in cell if not s["warmup"]]
        assert len(warm) == 1 and [s["repeat"] for s in kept] == [1, 2, 3]
        pr = sorted(s["ptok"] / s["prefill"] for s in kept)
        dr = sorted(s["decode_rate"] for s in kept)
        assert [r(x, 1) for x in pr] == list(prates), (run_id, cls)
        assert [r(x, 3) for x in dr] == list(drates), (run_id, cls)
        # the warm-up round is visibly slower than every measured sample
        assert warm[0]["total"] > max(s["total"] for s in kept)
        if s_med is not None:
            assert r(median(s["prefill"] for s in kept), 3) == s_med
            assert r(median(s["total"] for s in kept), 3) == t_med


def test_tuned_short_engine_vs_client_sample():
    kept = [s for s in phase_samples("phases-tuned") if s["prompt_class"] == "short" and not s["warmup"]]
    fastest = max(kept, key=lambda s: s["ptok"] / s["prefill"])
    assert (r(fastest["total"], 3), r(fastest["client_total_s"], 3)) == (8.640, 8.641)


# ---------------------------------------------------------------- (2) whole request


def groups(run_id: str) -> dict:
    doc = json.loads((run_path(run_id) / "requests.json").read_text(encoding="utf-8"))
    out = {}
    for q in doc["requests"]:
        assert q["finish_reason"] == "length" and q["completion_tokens"] == 32
        out.setdefault((q["scenario"], q["n"]), []).append(q)
    return out


def wall(reqs) -> float:
    return max(q["end"] for q in reqs) - min(q["start"] for q in reqs)


def rate(reqs) -> float:
    return sum(q["completion_tokens"] for q in reqs) / wall(reqs)


def interleave_short(g) -> float:
    (short,) = [q for q in g[("interleave", 2)] if q["prompt_class"] == "short"]
    (long_,) = [q for q in g[("interleave", 2)] if q["prompt_class"] == "long"]
    assert long_["start"] < short["start"] < long_["end"]
    return short["end"] - short["start"]


@pytest.mark.parametrize("run_id", sorted(SERIAL_TABLE))
def test_serial_whole_request_table(run_id):
    single, single_rate, ladder, inter = SERIAL_TABLE[run_id]
    g = groups(run_id)
    assert r(wall(g[("single", 1)]), 3) == single and r(rate(g[("single", 1)]), 3) == single_rate
    assert tuple(r(rate(g[("ladder", n)]), 3) for n in (2, 4, 8)) == ladder
    assert r(interleave_short(g), 3) == inter


def test_serial_n8_is_pure_queueing():
    reqs = groups("serial")[("ladder", 8)]
    t0 = min(q["start"] for q in reqs)
    assert max(q["start"] for q in reqs) - t0 < 0.01
    ends = sorted(r(q["end"] - t0, 1) for q in reqs)
    assert ends == [11.9, 23.8, 35.7, 47.7, 59.6, 71.5, 83.4, 95.3]


@pytest.mark.parametrize("run_id", sorted(CCB_TABLE))
def test_batched_forward_table(run_id):
    single, single_rate, ladder, inter, (mean8, worst8) = CCB_TABLE[run_id]
    g = groups(run_id)
    assert r(wall(g[("single", 1)]), 3) == single and r(rate(g[("single", 1)]), 3) == single_rate
    for n, (w, rt) in zip((2, 4, 8), ladder):
        assert (r(wall(g[("ladder", n)]), 3), r(rate(g[("ladder", n)]), 3)) == (w, rt)
    lat = [q["end"] - q["start"] for q in g[("ladder", 8)]]
    assert (r(sum(lat) / 8, 3), r(max(lat), 3)) == (mean8, worst8)
    assert r(interleave_short(g), 3) == inter


# ---------------------------------------------------------------- (2) memory


def memory(run_id: str):
    doc = json.loads((run_path(run_id) / "memory.json").read_text(encoding="utf-8"))
    marks = {m["event"]: m["t"] for m in doc["markers"] if m["event"] in ("load_start", "load_end", "stop")}
    return doc["samples"], marks


@pytest.mark.parametrize("run_id", sorted(MEMORY))
def test_memory_peak_and_steady(run_id):
    peak, steady = MEMORY[run_id]
    samples, marks = memory(run_id)
    ranks = range(len(samples[0]["gpu_used_mib"]))
    per_rank_peak = [max(s["gpu_used_mib"][k] for s in samples) for k in ranks]
    assert r(max(per_rank_peak) / 1024, 2) == peak
    assert all(r(p / 1024, 2) == peak for p in per_rank_peak)  # ranks a few MiB apart
    loaded = [s for s in samples if marks["load_end"] <= s["t"] <= marks["stop"]]
    second = loaded[len(loaded) // 2 :]
    if steady is not None:
        for k in ranks:
            assert r(median(s["gpu_used_mib"][k] for s in second) / 1024, 2) == steady
    gib = 1024 * 1024
    for s in loaded:
        if s["t"] < marks["stop"]:
            assert r(s["shmem_kib"] / gib, 1) == 137.1
    for s in samples:
        if s["t"] < marks["load_start"] or s["t"] > marks["stop"]:
            assert r(s["shmem_kib"] / gib, 1) == 0.0


def test_host_memory_1536681():
    gib = 1024 * 1024
    pss_sums = []
    for run_id in ("memory-default", "memory-tuned", "memory-batch"):
        samples, marks = memory(run_id)
        idle = [s for s in samples if s["t"] < marks["load_start"]]
        after = [s for s in samples if s["t"] > marks["stop"]]
        loaded = [s for s in samples if marks["load_end"] <= s["t"] < marks["stop"]]
        assert r(median(s["mem_available_kib"] for s in idle) / gib, 1) == 997.1
        assert r(median(s["mem_available_kib"] for s in loaded) / gib, 1) == 853.0
        assert r(median(s["mem_available_kib"] for s in after) / gib, 1) == 997.1
        pss = median(sum(s["pss_kib"]) for s in loaded)
        assert len(loaded[0]["pss_kib"]) == 4 and round(pss / gib) == 285
        pss_sums.append(pss)
    assert (max(pss_sums) - min(pss_sums)) * 1024 < 15e6  # "agree to within 15 MB"


# ---------------------------------------------------------------- server logs

WIDTH_LINE = {
    ("1536681", 1): "batch width 1 (engine declares max_slots=1, continuous_batching=no), prefill budget 0",
    ("1536681", 8): "batch width 1 (engine declares max_slots=8, continuous_batching=no), prefill budget 0",
    ("ccb339d", 1): "batch width 1 (engine declares max_slots=1, continuous_batching=no), prefill budget 0",
    ("ccb339d", 8): "batch width 8 (engine declares max_slots=8, continuous_batching=yes), prefill budget 0",
}


def test_server_logs_state_what_ran():
    m = manifest()
    for run in m["runs"]:
        arm = m["arms"][run["arm"]]
        text = (CAMPAIGN / run["path"] / "server.log").read_text(encoding="utf-8")
        want = WIDTH_LINE[(arm["series"], arm["server_args"]["max_batch_size"])]
        assert f"[server] {want}\n" in text, run["id"]
