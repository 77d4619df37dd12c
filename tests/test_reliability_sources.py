"""A campaign's Prometheus source (issue 36, item 2): queried only when the person running benchbook
allows that server for the run (``--allow-source HOST:PORT`` or ``BENCHBOOK_ALLOW_SOURCES``), and an
answer's text is never quoted — status, content type and size only — on stderr, a page or the index.

The "internal service" here is a small HTTP server on 127.0.0.1 that answers every request with a
private JSON document (not a Prometheus answer) or a Prometheus-shaped error carrying the secret."""

from __future__ import annotations

import http.server
import json
import os
import shutil
import threading
from pathlib import Path

import pytest

from benchbook.commands.cli import main
from benchbook.metrics import source_allow

MINI = Path(__file__).resolve().parent / "fixtures" / "mini"
SECRET = "vault-token-5f1c9e"


class Service:
    """An internal service: every path answers ``{"config": SECRET}`` (or, with ``errors``, a
    Prometheus-shaped error whose text is the secret); counts the requests it got."""

    def __init__(self, errors: bool = False):
        hits = self.hits = []

        class H(http.server.BaseHTTPRequestHandler):
            def _answer(self):
                hits.append(self.path)
                doc = {"status": "error", "errorType": "bad_data", "error": SECRET} if errors else {"config": SECRET}
                body = json.dumps(doc).encode()
                self.send_response(400 if errors else 200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _answer

            def log_message(self, *a):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.origin = f"127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def service():
    s = Service()
    yield s
    s.close()


def _campaign(dest: Path, origin: str) -> Path:
    """The hand-made campaign with its phases run's samples read from a Prometheus window."""
    shutil.copytree(MINI, dest)
    m = json.loads((dest / "campaign.json").read_text())
    m["prometheus"] = {"url": f"http://{origin}/", "matchers": {"job": "engine"}, "timeout_s": 3}
    (dest / "campaign.json").write_text(json.dumps(m))
    ph = dest / "runs" / "phases-serial" / "phases.json"
    d = json.loads(ph.read_text())
    for i, s in enumerate(d["samples"]):
        del s["metrics_before"], s["metrics_after"]
        s["window"] = {"t0": 1700000000 + 10 * i, "t1": 1700000009 + 10 * i}
    ph.write_text(json.dumps(d))
    shutil.rmtree(dest / "runs" / "phases-serial" / "metrics")
    return dest


def test_a_campaign_source_is_not_queried_unless_allowed(service, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv(source_allow.ALLOW_ENV, raising=False)
    camp = _campaign(tmp_path / "c", service.origin)
    assert main(["validate", str(camp)]) == 0
    out = capsys.readouterr().out
    assert out.count(f"not queried (not allowed: the campaign names the Prometheus server http://{service.origin}") == 1
    assert f"--allow-source {service.origin}" in out and "4 sample window(s) not queried" in out
    # another server allowed is not this one
    assert main(["summary", str(camp), "--json", "--allow-source", "prometheus.lab:9090"]) == 0
    s = json.loads(capsys.readouterr().out)
    nq = [e for e in s["exclusions"] if e["reason"].startswith("not queried (not allowed")]
    assert len(nq) == 4 and all(e["file"].endswith("phases.json") for e in nq)
    assert service.hits == []  # nothing was sent to the service


@pytest.mark.parametrize("how", ["flag", "env"])
def test_an_allowed_source_that_is_not_prometheus_is_described_never_quoted(
    service, tmp_path, capsys, monkeypatch, how
):
    monkeypatch.delenv(source_allow.ALLOW_ENV, raising=False)
    camp = _campaign(tmp_path / "c", service.origin)
    argv = ["validate", "-q", str(camp)]
    if how == "flag":
        argv += ["--allow-source", f"http://{service.origin}"]  # a URL is read as its host:port
    else:
        monkeypatch.setenv(source_allow.ALLOW_ENV, f"other:1, {service.origin}")
    assert main(argv) == 4
    err = capsys.readouterr().err
    assert service.hits  # allowed: asked
    assert SECRET not in err and "config" not in err
    assert "HTTP 200 to a build-info request: not a Prometheus API answer (application/json, " in err
    if how == "flag":
        assert source_allow.ALLOW_ENV not in os.environ  # the flag allowed it for that command only


def test_a_prometheus_shaped_error_is_named_by_its_type_not_its_text(tmp_path, capsys, monkeypatch):
    svc = Service(errors=True)
    try:
        camp = _campaign(tmp_path / "c", svc.origin)
        monkeypatch.setenv(source_allow.ALLOW_ENV, "*")
        assert main(["summary", str(camp), "--json"]) == 4
        err = capsys.readouterr().err
        assert "HTTP 400" in err and "Prometheus error bad_data" in err and SECRET not in err
    finally:
        svc.close()


def test_render_all_publishes_no_answer_and_renders_unallowed_campaigns_from_files(service, tmp_path, monkeypatch):
    """One render --all without the source allowed (the page is made from the files, its windows
    listed as not queried; nothing is sent) and one with it allowed (the campaign fails with exit 4;
    the index names the failure by status, type and size)."""
    monkeypatch.delenv(source_allow.ALLOW_ENV, raising=False)
    data = tmp_path / "data"
    _campaign(data / "leaky", service.origin)
    out = tmp_path / "reports"
    assert main(["render", "--all", str(data), "--out", str(out), "--page", "baseline"]) == 0
    page = (out / "leaky" / "baseline.html").read_text()
    assert "not queried (not allowed" in page and service.hits == []
    assert main(["render", "--all", str(data), "--out", str(out), "--allow-source", service.origin]) == 4
    assert service.hits
    for f in out.rglob("*"):
        if f.is_file() and f.suffix in (".html", ".json", ".ipynb", ".parquet"):
            assert SECRET.encode() not in f.read_bytes(), f
    index = (out / "index.html").read_text()
    assert "not a Prometheus API answer (application/json, " in index


def test_origins_and_the_allow_context():
    assert source_allow.origin("http://Prom.Lab/") == "prom.lab:80"
    assert source_allow.origin("https://u:pw@gw.example/prometheus") == "gw.example:443"
    assert source_allow.origin("10.0.0.5:9090") == "10.0.0.5:9090"
    assert source_allow.origin("http://[::1]:9090") == "[::1]:9090"
    env = {source_allow.ALLOW_ENV: "prom.lab:9090,10.0.0.5:9090"}
    assert source_allow.allowed_origins(env) == {"prom.lab:9090", "10.0.0.5:9090"}
    before = os.environ.get(source_allow.ALLOW_ENV)
    with source_allow.allowing(["prom.lab:9090"]):
        assert source_allow.refusal("http://prom.lab:9090") is None
        assert source_allow.refusal("http://prom.lab:9091").startswith("not queried (not allowed")
        key = source_allow.key()
    assert os.environ.get(source_allow.ALLOW_ENV) == before and source_allow.key() != key  # restored
    assert "pw" not in (source_allow.refusal("http://u:pw@10.1.1.1:9090") or "")
