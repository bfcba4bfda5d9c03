"""OpenTelemetry traces (``report.otel``, the ``otel`` extra): a real run of the scripted scenario
exports its spans over OTLP/HTTP to a receiver this test starts on 127.0.0.1 (an HTTP server
that decodes each ``ExportTraceServiceRequest`` with ``opentelemetry-proto``, as a collector
does); the spans are counted against the run's evidence and their GenAI attributes checked. Off,
nothing of OpenTelemetry's SDK or exporter is imported."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import loop_helpers
import pytest

from ratchet_ray.evidence.store import EvidenceStore


class _Receiver(BaseHTTPRequestHandler):
    spans: list = []

    def do_POST(self):  # noqa: N802 - http.server's name
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest, ExportTraceServiceResponse)

        body = self.rfile.read(int(self.headers["Content-Length"]))
        request = ExportTraceServiceRequest.FromString(body)
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                self.spans.extend(scope.spans)
        reply = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):
        pass


@pytest.fixture
def receiver():
    _Receiver.spans = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1/traces", _Receiver.spans
    server.shutdown()


def _attrs(span) -> dict:
    out = {}
    for kv in span.attributes:
        value = kv.value
        out[kv.key] = getattr(value, value.WhichOneof("value"))
    return out


def test_a_run_exports_its_spans_with_genai_attributes(ray_local, receiver, tmp_path):
    from ratchet_ray.loop.driver import run_loop

    endpoint, spans = receiver
    config = loop_helpers.scenario_config(tmp_path, 2)
    config.tracing.otlp_endpoint = endpoint
    run = run_loop(config, models=loop_helpers.scenario_models(), show_progress=False)
    with EvidenceStore(run).connect() as con:
        calls = con.execute("SELECT round, role, model, input_tokens, output_tokens, cost_usd "
                            "FROM llm_call").fetchall()
    assert calls
    by_kind = Counter(s.name.split(" ")[0] for s in spans)
    roles = {(r, role) for r, role, *_ in calls}
    assert by_kind == {"ratchet.run": 1, "ratchet.round": 2, "invoke_agent": len(roles),
                       "chat": len(calls)}
    ids = {s.span_id: s for s in spans}
    run_span = next(s for s in spans if s.name.startswith("ratchet.run"))
    assert len({s.trace_id for s in spans}) == 1 and not run_span.parent_span_id
    chats = [s for s in spans if s.name.startswith("chat")]
    for chat in chats:
        a = _attrs(chat)
        assert a["gen_ai.operation.name"] == "chat" and a["gen_ai.request.model"]
        role_span = ids[chat.parent_span_id]
        assert _attrs(role_span)["gen_ai.agent.name"] == a["ratchet.role"]
        assert ids[role_span.parent_span_id].name.startswith("ratchet.round")
        assert chat.start_time_unix_nano <= chat.end_time_unix_nano
    assert sum(_attrs(c)["gen_ai.usage.input_tokens"] for c in chats) == sum(c[3] or 0 for c in calls)
    assert sum(_attrs(c)["gen_ai.usage.output_tokens"] for c in chats) == sum(c[4] or 0 for c in calls)
    assert sorted(_attrs(c)["gen_ai.request.model"] for c in chats) == sorted(c[2] for c in calls)
    total = _attrs(run_span)
    assert total["gen_ai.usage.input_tokens"] == sum(c[3] or 0 for c in calls)
    assert total["ratchet.finished"] is True
    rounds = sorted(_attrs(s)["ratchet.round"] for s in spans if s.name.startswith("ratchet.round"))
    assert rounds == [0, 1]


def test_off_imports_nothing_of_opentelemetry(tmp_path):
    code = ("import sys\nfrom pathlib import Path\n"
            "from ratchet_ray.report.otel import start_tracing, tracing_problems\n"
            "from ratchet_ray.settings.schema import LoopConfig\n"
            "config = LoopConfig(suite='sim')\n"
            "tracer = start_tracing(config, Path('.'))\n"
            "tracer.round_done(None); tracer.close(True)\n"
            "assert tracing_problems(config, {}) == []\n"
            "print(sorted(m for m in sys.modules if m.startswith(('opentelemetry.sdk', "
            "'opentelemetry.exporter'))))\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_a_bad_endpoint_is_refused_in_one_line(monkeypatch):
    from ratchet_ray.report.otel import tracing_problems
    from ratchet_ray.settings.schema import LoopConfig

    config = LoopConfig(suite="sim")
    config.tracing.otlp_endpoint = "localhost:4318"
    (problem,) = tracing_problems(config, {})
    assert "is not an http(s) URL" in problem and "http://127.0.0.1:4318/v1/traces" in problem
    config.tracing.otlp_endpoint = None
    assert tracing_problems(config, {"RATCHET_OTLP_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}) == []
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.http", None)
    (missing,) = tracing_problems(config, {"RATCHET_OTLP_ENDPOINT": "http://127.0.0.1:1/v1/traces"})
    assert "pip install 'ratchet-ray[otel]'" in missing

