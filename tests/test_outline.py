"""benchbook.pipeline.outline: heading ids and anchors, the table of contents under the findings box;
benchbook.pages.sections: the findings box's order and headline (no kernel, no browser)."""

from __future__ import annotations

from benchbook.pages import display as bd
from benchbook.pages import sections
from benchbook.pipeline.outline import outline


def _page(*body: str) -> str:
    box = bd.findings_box([bd.BoxLine("fail", "x", "checks")], headline="0 results, 1 failed check").html
    return "<h1>T</h1>" + box + "".join(body)


def test_every_section_gets_a_unique_id_an_anchor_and_an_entry_in_the_contents():
    html = outline(
        _page(
            "<h2>Scope</h2><p>.</p>",
            '<h2 id="sec-checks">Checks &amp; gates</h2>',
            "<h2>Scope</h2>",
            "<h3>Arms</h3>",
            '<section class="bb-provenance"><h2>Provenance</h2></section>',
        )
    )
    toc = html[html.index('<nav class="bb-toc"') : html.index("</nav>")]
    assert [h for h in ("#sec-scope", "#sec-checks", "#sec-scope-2", "#sec-provenance") if h in toc] == [
        "#sec-scope",
        "#sec-checks",
        "#sec-scope-2",
        "#sec-provenance",
    ]
    assert "#sec-findings" not in toc and "#sec-arms" not in toc  # the box is above; h3 are not sections
    assert "Checks &amp; gates" in toc
    assert '<h3 id="sec-arms">Arms<a class="bb-anchor" href="#sec-arms"' in html
    assert html.count('class="bb-anchor"') == 6  # findings, 4 h2, 1 h3
    assert outline(_page("<h2>Scope</h2>")) == outline(_page("<h2>Scope</h2>"))


def test_a_page_without_a_findings_box_gets_anchors_only():
    html = outline("<h1>T</h1><h2>One</h2>")
    assert 'id="sec-one"' in html and "bb-toc" not in html


def test_findings_lead_with_failed_checks_then_results_worst_first_and_the_headline_counts_them():
    box = sections.findings(
        results=[
            ("improvement", 1.2, "small gain", "c"),
            ("regression", 0.95, "small loss", "c"),
            ("improvement", 1.6, "big gain", "c"),
            ("regression", 0.5, "big loss", "c"),
        ],
        failed=[("clamped", "clamps")],
        unjudged=[("no spread", "c")],
    ).html
    order = [box.index(t) for t in ("clamped", "big loss", "small loss", "big gain", "small gain", "no spread")]
    assert order == sorted(order)
    assert "4 results (2 regressions), 1 failed check, 1 not judged" in box
    assert sections.headline(1, 0, 0, 0) == "1 result"
