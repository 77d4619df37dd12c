"""render_page: execution, recorded values, atomic writes, errors, escaping, determinism."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import nbformat
import pytest

from benchbook.errors import RenderError
from benchbook.pages import display as bd
from benchbook.pipeline.execute import recorded_values, render_page
from benchbook.pipeline.plan import pages_for

XSS_TITLE = '<script>alert("t")</script>"><img src=x onerror=alert(1)>'
XSS_LABEL = '"><img src=x onerror=alert(2)><script>alert(3)</script>'


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def smoke(tmp_path_factory, smoke_notebook):
    out = tmp_path_factory.mktemp("smoke") / "smoke.html"
    before = _sha(smoke_notebook)
    res = render_page(smoke_notebook, {"label": XSS_LABEL, "rows": 3}, out, title=XSS_TITLE)
    assert _sha(smoke_notebook) == before, "the source notebook must never be written"
    return res


def test_values_are_recorded_beside_the_page(smoke):
    assert smoke.values == {"label": XSS_LABEL, "rate_sum": 9.0, "rows": 3}
    on_disk = json.loads(smoke.values_path.read_text())
    assert on_disk == smoke.values
    assert smoke.values_path == smoke.html.with_suffix(".values.json")


def test_executed_notebook_is_kept_and_source_has_no_outputs(smoke, smoke_notebook):
    executed = nbformat.read(smoke.notebook, as_version=4)
    assert smoke.notebook == smoke.html.with_suffix(".ipynb")
    assert any(c.get("outputs") for c in executed.cells)
    assert recorded_values(executed) == smoke.values
    assert [c["id"] for c in executed.cells] == [f"cell-{i:03d}" for i in range(len(executed.cells))]
    source = nbformat.read(smoke_notebook, as_version=4)
    assert not any(c.get("outputs") for c in source.cells if c.cell_type == "code")
    # no temp files left behind by the atomic writes
    visible = sorted(p.name for p in smoke.html.parent.iterdir() if not p.name.startswith("."))
    assert visible == ["smoke.html", "smoke.ipynb", "smoke.values.json"]
    assert not [p for p in smoke.html.parent.rglob("*") if p.name.endswith(".tmp")]


def test_page_is_self_contained_with_inputs_hidden(smoke):
    page = smoke.html.read_text()
    assert smoke.bytes == len(page.encode())
    assert "<script" not in page.lower()  # no require.js, MathJax, vega: nothing executes
    assert 'id="bb-smoke-table"' in page and 'id="bb-provenance"' in page
    assert page.count("<svg") == 1
    assert "bd.table(" not in page and "import altair" not in page  # code cells hidden
    assert "application/vnd.benchbook.values" not in page and "recorded rows" not in page


def test_input_strings_are_escaped(smoke):
    page = smoke.html.read_text()
    assert "<img src=x" not in page and "<script>alert" not in page
    assert "&lt;img src=x onerror=alert(2)&gt;" in page  # shown as text in the table
    assert re.search(r"<title>&lt;script&gt;alert\(&quot;t&quot;\)", page) or "<title>&lt;script&gt;" in page


def test_cell_error_is_a_render_error_and_keeps_the_previous_page(tmp_path, smoke_notebook):
    out = tmp_path / "page.html"
    good = render_page(smoke_notebook, {"label": "first"}, out, title="t")
    before = {p.name: _sha(p) for p in tmp_path.iterdir() if p.is_file()}
    with pytest.raises(RenderError) as e:
        render_page(smoke_notebook, {"label": "second", "fail": True}, out, title="t")
    msg = e.value.one_line()
    assert e.value.exit_code == 3
    assert msg.startswith("page: render failed:")
    assert "ValueError: smoke notebook asked to fail (fail=True)" in msg and "cell " in msg
    assert {p.name: _sha(p) for p in tmp_path.iterdir() if p.is_file()} == before  # untouched, no temp files
    assert json.loads(good.values_path.read_text())["label"] == "first"


def test_undeclared_parameter_is_refused(tmp_path, smoke_notebook):
    with pytest.raises(RenderError, match="does not declare parameter.*nope"):
        render_page(smoke_notebook, {"nope": 1}, tmp_path / "x.html", title="t")
    assert not list(tmp_path.iterdir())


def test_same_inputs_render_identically(tmp_path, smoke_notebook, monkeypatch):
    # other commits may land between two renders in a shared checkout: pin the SHA shown
    monkeypatch.setenv("BENCHBOOK_GIT_SHA", "0" * 40)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    a = render_page(smoke_notebook, {}, tmp_path / "a" / "p.html", title="t")
    b = render_page(smoke_notebook, {}, tmp_path / "b" / "p.html", title="t")
    assert a.html.read_bytes() == b.html.read_bytes()
    assert a.notebook.read_bytes() == b.notebook.read_bytes()
    assert "2023-11-14T22:13:20Z" in a.html.read_text()
    monkeypatch.delenv("SOURCE_DATE_EPOCH")
    c = render_page(smoke_notebook, {}, tmp_path / "c" / "p.html", title="t")
    stamp = re.compile(r'<span class="bb-timestamp">[^<]*</span>')
    assert stamp.sub("", c.html.read_text()) == stamp.sub("", a.html.read_text())
    assert c.values == a.values


def test_recorded_twice_is_an_error():
    out = {"output_type": "display_data", "metadata": {}, "data": {bd.VALUES_MIME: {"name": "x", "value": 1}}}
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(outputs=[out]), nbformat.v4.new_code_cell(outputs=[out])]
    )
    with pytest.raises(ValueError, match="'x' recorded twice"):
        recorded_values(nb)


@pytest.mark.parametrize(
    ("manifest", "pages"),
    [
        ({"runs": [{"harness": "requests"}], "arms": {"a": {"mode": "serial"}}}, ["baseline"]),
        (
            {"runs": [{"harness": "phases"}], "arms": {"a": {"mode": "batch", "role": "ablation"}}},
            ["baseline", "ablation"],
        ),
        ({"runs": [{"harness": "memory"}], "arms": {"a": {"mode": "pd"}}}, ["pd"]),
        ({"runs": [], "arms": {}}, []),
    ],
)
def test_pages_for(manifest, pages):
    assert pages_for(manifest) == pages


def test_input_error_inside_the_notebook_is_bad_input(tmp_path):
    from benchbook.errors import InputError

    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell('title: str = "x"', metadata={"tags": ["parameters"]}),
            nbformat.v4.new_code_cell(
                'from benchbook.errors import InputError\nraise InputError("runs/a/requests.json", "$.requests[3].end", "end before start")'
            ),
        ],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
    )
    src = tmp_path / "bad.ipynb"
    nbformat.write(nb, src)
    with pytest.raises(InputError) as e:
        render_page(src, {}, tmp_path / "out" / "bad.html", title="t")
    assert e.value.exit_code == 2
    assert (
        e.value.one_line()
        == "runs/a/requests.json: $.requests[3].end: end before start (page bad, cell 2 `from benchbook.errors import InputError`)"
    )
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


def test_export_setting_payloads_aside_gives_the_library_page(bundled_reports):
    """The fast export (large outputs set aside during nbconvert's BeautifulSoup pass) is the same
    document as nbconvert's own export, on a bundled campaign's pages (charts, tables, folded parts)."""
    from bs4 import BeautifulSoup

    from benchbook.pipeline.execute import export_html

    htmls = sorted((bundled_reports / "dsv4-163").glob("*.html"))
    assert htmls
    for html in htmls:
        nb = nbformat.read(html.with_suffix(".ipynb"), as_version=4)
        written = html.read_text(encoding="utf-8")
        title = BeautifulSoup(written, "html.parser").title.string
        before = nbformat.writes(nb)
        fast = export_html(nb, title=title)
        assert nbformat.writes(nb) == before  # the notebook is left as it was
        ref = export_html(nb, title=title, set_aside_payloads=False)
        assert "bb-payload" not in fast and fast.count("<svg") == ref.count("<svg") > 0
        assert str(BeautifulSoup(fast, "html.parser")) == str(BeautifulSoup(ref, "html.parser")), html.name
        assert written == fast, html.name  # the page written is the fast export
