"""benchbook.pipeline.offline: any reference that would leave the page fails the check."""

from __future__ import annotations

import pytest

from benchbook.pipeline.offline import main, scan_html


@pytest.mark.parametrize(
    "snippet",
    [
        '<script src="https://cdn.jsdelivr.net/npm/vega@5"></script>',
        '<script src="//cdnjs.cloudflare.com/require.js"></script>',
        '<link rel="stylesheet" href="https://fonts.googleapis.com/css?family=Roboto">',
        "<style>@import url(https://fonts.googleapis.com/css);</style>",
        '<style>@import "theme.css";</style>',
        "<style>body { background: url('http://example.com/bg.png') }</style>",
        '<div style="background-image: url(https://x.test/a.png)"></div>',
        '<img src="http://example.com/a.png">',
        '<img src="chart.png">',
        '<img srcset="a.png 1x, https://x.test/b.png 2x">',
        '<iframe src="https://example.com"></iframe>',
        '<svg><image xlink:href="https://x.test/a.png"/></svg>',
        '<a href="https://github.com/org/repo/issues/163">#163</a>',
        '<a href="javascript:alert(1)">x</a>',
        '<meta http-equiv="refresh" content="0; url=https://x.test">',
    ],
)
def test_external_reference_is_found(snippet):
    findings = scan_html(f"<html><body>{snippet}</body></html>", "p.html")
    assert findings, snippet
    assert all(f.file == "p.html" and f.line == 1 for f in findings)


def test_self_contained_page_is_clean():
    page = """<html><head><style>a { color: red } .x { background: url(data:image/png;base64,AA) }</style></head>
    <body><a href="#provenance">p</a><a href="dsv4/baseline.html">baseline</a>
    <img src="data:image/png;base64,AAAA">
    <svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink">
    <clipPath id="c1"/><g clip-path="url(#c1)"><use xlink:href="#c1"/></g></svg></body></html>"""
    assert scan_html(page) == []


def test_cli_lists_findings_and_exits_nonzero(tmp_path, capsys):
    (tmp_path / "ok.html").write_text("<p>fine</p>")
    sub = tmp_path / "camp"
    sub.mkdir()
    (sub / "bad.html").write_text('<p>x</p>\n<script src="https://cdn.example/x.js"></script>')
    assert main([str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert f"{sub / 'bad.html'}:2:" in out and "https://cdn.example/x.js" in out
    (sub / "bad.html").unlink()
    assert main([str(tmp_path)]) == 0
    assert main([str(tmp_path / "missing")]) == 2
