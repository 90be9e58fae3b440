"""Events leave as OTLP log records over OTLP/HTTP: a receiver on loopback decodes the
ExportLogsServiceRequest the SDK's exporter sends and finds the event, its errno and its node."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest  # pants: no-infer-dep

from joulie_hwprofiles.schema import builtin_profile
from joulie_simulator.emulation.emulator import EVENT_WRITE_REJECTED, Emulator
from joulie_simulator.serving.otlp import OtlpEventExporter

DRAM_PL = "sys/devices/virtual/powercap/intel-rapl/intel-rapl:0/intel-rapl:0:0/constraint_0_power_limit_uw"


class _Receiver(ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[tuple[str, ExportLogsServiceRequest]] = []


class _Handler(BaseHTTPRequestHandler):
    server: _Receiver

    def do_POST(self) -> None:  # (http.server's name)
        body = self.rfile.read(int(self.headers["Content-Length"]))
        req = ExportLogsServiceRequest()
        req.ParseFromString(body)
        self.server.requests.append((self.path, req))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[_Receiver]:
    srv = _Receiver()
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _attrs(kvs: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in kvs:
        kind = kv.value.WhichOneof("value")
        out[kv.key] = getattr(kv.value, kind) if kind else None
    return out


def test_a_rejected_write_is_exported_as_an_otlp_log_record(receiver: _Receiver) -> None:
    emu = Emulator([("node-a", builtin_profile("intel-xeon-2s-rapl"))], clock=lambda: 0.0)
    exporter = OtlpEventExporter(emu, f"http://127.0.0.1:{receiver.server_address[1]}/v1/logs", interval_s=60)
    exporter.start()
    try:
        assert not emu.write("node-a", DRAM_PL, b"30000000").ok
        emu.tick()  # the per-tick event is not exported
    finally:
        exporter.stop()  # sends what is waiting
    [(path, req)] = receiver.requests
    assert path == "/v1/logs"
    [rl] = req.resource_logs
    assert _attrs(rl.resource.attributes)["k8s.node.name"] == "node-a"
    [record] = [r for sl in rl.scope_logs for r in sl.log_records]
    assert record.event_name == EVENT_WRITE_REJECTED
    attrs = _attrs(record.attributes)
    assert (attrs["error.type"], attrs["k8s.node.name"], attrs["file.path"]) == ("enodata", "node-a", DRAM_PL)
    assert record.severity_text == "WARN" and record.body.string_value
