"""The reports index: every campaign with its pages and their findings, and one findings box over all.

Written by ``render --all`` after the campaigns, and only when its bytes changed, so a no-op render
leaves ``index.html`` (and its mtime) as it was.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchbook import __version__
from benchbook.errors import RenderError
from benchbook.pipeline import writes
from benchbook.pipeline.campaigns import CampaignOutcome
from benchbook.pipeline.execute import TEMPLATE_NAME, TEMPLATES
from benchbook.pipeline.outline import outline
from benchbook.pipeline.plan import PAGES, campaign_order


def campaign_findings(folder: Path) -> dict[str, Any]:
    """The campaign's one findings box as its ``findings.json`` (written beside its pages by
    ``render --all`` from the analysis, what ``summary --json`` carries under ``findings``): the counts,
    the headline and the lines; {} if none."""
    try:
        doc = json.loads(writes.read_own(Path(folder) / "findings.json"))
    except (OSError, ValueError):
        return {}
    box = doc.get("findings") if isinstance(doc, dict) else None
    return dict(box) if isinstance(box, dict) and isinstance(box.get("headline"), str) else {}


def page_findings(html: Path) -> dict[str, Any]:
    """What the findings box of the page's campaign counted, read from the campaign's ``findings.json``
    (the same box on every page of it); {} if none."""
    box = campaign_findings(Path(html).parent)
    return {"headline": box["headline"], **{k: v for k, v in box.items() if isinstance(v, int)}} if box else {}


def page_headline(html: Path) -> str:
    return page_findings(html).get("headline", "")


def index_html(outcomes: list[CampaignOutcome], reports: Path) -> str:
    """The index page: every campaign (newest first) with its title, date, provenance and pages."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES / TEMPLATE_NAME)), autoescape=True, keep_trailing_newline=True
    )
    rows = []
    newest_first = sorted(outcomes, key=lambda o: (str(o.manifest.get("date") or ""), o.name), reverse=True)
    for o in sorted(newest_first, key=lambda o: campaign_order(o.manifest)):  # an ``order`` first (stable)
        links = []
        done = {r.page.rsplit("/", 1)[-1] for r in o.rendered} | set(o.rendered_pages) | set(o.unchanged)
        done |= set(o.kept)
        failed = dict(o.failed)
        if o.error is not None:  # the whole campaign failed: every page it had is marked, and kept
            failed.update({p: o.error for p in PAGES if (reports / o.name / f"{p}.html").exists()})
        for page in PAGES:
            # a failure first: a page kept from an earlier render is still marked as failed now
            if page in failed:
                kept = (reports / o.name / f"{page}.html").exists()
                links.append(
                    {
                        "label": PAGES[page][1],
                        "href": f"{o.name}/{page}.html" if kept else None,
                        "status": "failed",
                        "reason": failed[page][1],
                        "headline": "",
                    }
                )
            elif page in done:
                links.append(
                    {
                        "label": PAGES[page][1],
                        "href": f"{o.name}/{page}.html",
                        "status": "ok",
                        "headline": "",
                    }
                )
        rows.append(
            {
                "name": o.name,
                "title": o.manifest.get("title") or o.name,
                "date": o.manifest.get("date") or "",
                "question": o.manifest.get("question") or "",
                "provenance": o.manifest.get("provenance") or "",
                "headline": campaign_findings(reports / o.name).get("headline", "") if links else "",
                "links": links,
                "skipped": [p for p in o.skipped],
                "error": o.error[1] if o.error is not None else "",
            }
        )
    css = (TEMPLATES / TEMPLATE_NAME / "page.css").read_text(encoding="utf-8")
    box = index_findings(rows, reports)
    history = "history.html" if (reports / "history.html").is_file() else None
    return outline(
        env.get_template("reports_index.html.j2").render(
            campaigns=rows, css=css, version=__version__, history=history, box=box
        )
    )


def index_findings(rows: list[dict[str, Any]], reports: Path) -> str:
    """The index's findings box: the totals over every campaign (each counted once: its pages show one
    box), then one line per campaign that found a regression, a failed check, a warning or something
    it could not judge, and one per page that failed to render."""
    from benchbook.pages import display as bd
    from benchbook.pages.sections import headline

    totals = {"results": 0, "regressions": 0, "failed_checks": 0, "unjudged": 0, "warnings": 0}
    lines = []
    for i, c in enumerate(rows, 1):
        where = f"campaign-{i}"
        if c.get("error"):
            lines.append(bd.BoxLine("fail", f"{c['name']}: not rendered — {c['error']}", where))
        for link in c["links"]:
            if link["status"] == "failed":
                lines.append(
                    bd.BoxLine("fail", f"{c['name']} / {link['label']}: this render failed — {link['reason']}", where)
                )
        f = campaign_findings(reports / c["name"]) if c["links"] else {}
        for k in totals:
            totals[k] += f.get(k, 0)
        if f.get("regressions"):
            lines.append(bd.BoxLine("regression", f"{c['name']}: {f['headline']}", where))
        elif f.get("failed_checks"):
            lines.append(bd.BoxLine("fail", f"{c['name']}: {f['headline']}", where))
        elif f.get("warnings"):
            lines.append(bd.BoxLine("warn", f"{c['name']}: {f['headline']}", where))
        elif f.get("unjudged"):
            lines.append(bd.BoxLine("unjudged", f"{c['name']}: {f['headline']}", where))
    order = {k: i for i, k in enumerate(bd.FINDING_ORDER)}
    lines.sort(key=lambda f: order[f.kind])
    head = f"{len(rows)} campaign{'s' * (len(rows) != 1)}: " + headline(
        totals["results"], totals["regressions"], totals["failed_checks"], totals["unjudged"], totals["warnings"]
    )
    return bd.findings_box(lines, headline=head, empty="No regression, failed check or unjudged figure.").html


def write_index(outcomes: list[CampaignOutcome], reports: Path) -> tuple[Path, bool]:
    """Write ``reports/index.html`` (atomically) when its bytes changed; ``(path, written)``. An index
    left as it was keeps its mtime, so mtime-based sync (rsync, make) sees no change after a no-op
    render. Raises :class:`RenderError` when it cannot be written."""
    index = Path(reports) / "index.html"
    data = index_html(outcomes, reports).encode("utf-8")
    try:
        if writes.read_own(index, len(data) + 1) == data:  # a FIFO planted as index.html is never opened to read
            return index, False
    except OSError:
        pass  # no index yet (or unreadable): write it
    try:
        writes.write_atomic(index, data)
    except OSError as e:
        raise RenderError("index", f"cannot write {index}: {e.strerror or e}") from None
    return index, True
