"""A user's own pages, as a new reader opens them: headless Chromium at 1280×900 on campaigns made the
way a user makes them — ``benchbook init`` on arm/run folders of real shape (the H200 campaign's
serial and batched servers, two server processes each, their ladders, phase samples and GPU/host
samples; the second process a perturbed copy), the same with one load point per process, and what
the README's capture loop writes (``capture ladder``, two processes per arm). The bundled campaigns
passed the layout test while a user's pages had tables wider than their frame and empty sections.

Each page: no table wider than its frame, nothing cut off, no section without content; and the words
and numbers a user's page once got wrong (``mbs=?``, variable names, switches nobody requested,
``1091.400``, init's labels marked as the user's, start-up compilers in the memory table)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from benchbook.commands.cli import main


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> Path:
    import user_campaign

    base = tmp_path_factory.mktemp("user")
    user_campaign.init_campaign(base)  # data/my-campaign
    user_campaign.init_campaign(base, name="one-point", points=("conc8",), phases=False)
    user_campaign.init_captured(base)  # data/captured-campaign
    out = base / "reports"
    assert main(["render", "--all", str(base / "data"), "--out", str(out), "--quiet"]) == 0
    return out


PAGES = [
    "my-campaign/baseline.html",
    "my-campaign/compare.html",
    "one-point/baseline.html",
    "captured-campaign/baseline.html",
    "index.html",
    "history.html",
]


def _sections(html: str) -> list[tuple[str, str]]:
    """(heading, text under it up to the next heading of its level or above: an h2's subsections are
    its content) for every h2 and h3 of the page body."""
    body = html[html.index("<main") :] if "<main" in html else html
    out = []
    for level, stop in (("h2", r"<h2\b"), ("h3", r"<h[23]\b")):
        parts = re.split(rf"<{level}\b[^>]*>", body)[1:]
        for chunk in parts:
            head, _, rest = chunk.partition(f"</{level}>")
            rest = re.split(stop, rest, maxsplit=1)[0]
            text = re.sub(r"<[^>]+>", " ", rest)
            out.append((re.sub(r"<[^>]+>|#", "", head).strip(), " ".join(text.split())))
    return out


@pytest.mark.parametrize("page", PAGES)
def test_a_users_pages_fit_their_frame_and_hide_nothing(page, reports, open_page):
    html = reports / page
    shot = page.replace("/", "-").replace(".html", "")
    report = open_page(html, screenshot=f"user-{shot}.png")
    assert report.ok, report.problems()
    lay = report.layout
    print(f"{page}: {lay.height} px tall at {lay.width} px")
    assert lay.problems() == []
    empty = [h for h, text in _sections(html.read_text()) if not text]
    assert empty == [], f"sections with nothing under them: {empty}"


def _text(page: Path) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page.read_text()))


def test_serialization_with_one_load_point_says_why_not_judged(reports):
    v = json.loads((reports / "one-point" / "baseline.values.json").read_text())
    rl = v["results_ladder"]
    assert rl["serialization"] == []
    assert {s["process"] for s in rl["serialization_not_judged"]} == {"serial/p1", "serial/p2", "batch/p1", "batch/p2"}
    text = _text(reports / "one-point" / "baseline.html")
    part = text[text.index("Serialization: is the aggregate rate flat?") :][:2000]
    assert "one load point (concurrency 8) in this process" in part and "not judged" in part


def test_a_users_page_speaks_plainly(reports):
    text = _text(reports / "my-campaign" / "baseline.html")
    for word in ("mbs", "ptok", "ctok", "decode_tok_s", "prefill_tok_s", "unrecorded"):
        assert not re.search(rf"\b{word}\b", text), word
    # the arms' requested switches only, as vLLM takes them; the mode with the known max_num_seqs
    html = (reports / "my-campaign" / "baseline.html").read_text()
    arms = html[html.index('id="bb-arms"') :].split("</table>", 1)[0]
    assert "--max-num-seqs 1" in arms and "none (the engine&#x27;s defaults)" in arms
    assert "--enforce-eager" not in arms and "--cudagraph-mode" not in arms and " False" not in arms
    memory = html[html.index('id="bb-memory"') :].split("</table>", 1)[0]
    assert "serial, max_num_seqs 1" in memory and "batch, max_num_seqs default" in memory and "?" not in memory
    # the start-up compilers are one line per process, not a row each
    procs = html[html.index('id="bb-memory-processes"') :].split("</table>", 1)[0]
    assert "cc1" not in procs and "gcc-real" not in procs and "ptxas" not in procs
    assert re.search(r"ran only during start-up.*?serial-p1-gpu: \d+ \(", text)


def test_no_false_precision_in_a_users_tables(reports):
    html = (reports / "my-campaign" / "baseline.html").read_text()
    points = html[html.index('id="bb-results-ladder-points"') :].split("</table>", 1)[0]
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", points)
    numbers = [c for c in cells if re.fullmatch(r"-?\d+\.\d+", c.strip())]
    assert numbers, "no numeric cells found"
    for c in numbers:
        digits = len(c.replace("-", "").replace(".", "").lstrip("0"))
        assert digits <= 5, c  # 1091.4, not 1091.400
        assert float(c) != 0, c  # never 0.000 for a measured figure
    v = json.loads((reports / "my-campaign" / "baseline.values.json").read_text())
    top = max(p["rate_tok_s"] for p in v["results_ladder"]["points"])
    assert f"{top:.1f}" in points and f"{top:.3f}" not in points


def test_init_made_labels_are_not_the_users(reports):
    text = _text(reports / "my-campaign" / "compare.html")
    assert "label (user)" not in text  # "differs in … label (user) (serial vs batch)" once
    assert text.count("[user]") == 1  # the caption saying what the mark means; no value carries it
    assert "arm (campaign.json): serial" in text and "arm (campaign.json): batch" in text
