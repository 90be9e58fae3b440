"""``/debug/emulate``: the emulator's truth as JSON over HTTP (loopback by default).

``GET /debug/emulate`` -> ``{"clock": {...}, "nodes": [{name, profile, host: {powerW, energyJ},
zones, gpus, caps, ...}], "events": [...]}``; ``?node=<name>`` narrows to one node (404 names it).

``GET /debug/bmcs``: where each node's emulated BMC listens (``joulie_simulator.bmc.fleet``).

``GET /metrics``: the same hardware metrics as the OTLP push, in the Prometheus text format, for a
Prometheus that scrapes (telemetry mode ``scrape``): ``hw_host_energy_joules_total`` and
``hw_host_power_watts`` per node, ``hw_energy_joules_total`` and ``hw_power_watts`` per component
(``hw_type``, ``hw_id``), every series labelled ``k8s_node_name`` and ``host_name`` — the names
and labels Prometheus gives the OTLP metrics with promotion and UnderscoreEscapingWithSuffixes.

``GET /metrics/components``: the component series only (no ``hw_host_*``), as a node exporter
that knows RAPL and the GPUs but no whole-host meter serves them; the Collector's Prometheus bridge
(telemetry mode ``otel-bridge``, which carries no whole-host power) scrapes this one.
"""

from __future__ import annotations

import json
import threading
from dataclasses import asdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from joulie_simulator.emulator import Emulator, NotEmulated
from joulie_simulator.hwsemconv import components, telemetry_gap


class HardwareCollector(Collector):
    """The emulator's truth at scrape time (counters move at read time, as in FUSE mode)."""

    def __init__(self, emu: Emulator, host: bool = True) -> None:
        self.emu = emu
        self.host = host
        """False: the component series only (``/metrics/components``)."""

    def collect(self) -> list[Metric]:
        node_labels = ["k8s_node_name", "host_name"]
        comp_labels = [*node_labels, "hw_type", "hw_id"]
        host_e = CounterMetricFamily("hw_host_energy_joules", "Energy consumed by the whole host", labels=node_labels)
        host_p = GaugeMetricFamily("hw_host_power_watts", "Instantaneous power of the whole host", labels=node_labels)
        comp_e = CounterMetricFamily("hw_energy_joules", "Energy consumed by a component", labels=comp_labels)
        comp_p = GaugeMetricFamily("hw_power_watts", "Instantaneous power of a component", labels=comp_labels)
        for name in sorted(self.emu.nodes):
            if telemetry_gap(self.emu.nodes[name]):
                continue
            t = self.emu.truth(name)
            host_e.add_metric([name, name], float(t["host"]["energyJ"]))
            host_p.add_metric([name, name], float(t["host"]["powerW"]))
            for c in components(t):
                comp_e.add_metric([name, name, c.hw_type, c.hw_id], float(c.energy_j))
                comp_p.add_metric([name, name, c.hw_type, c.hw_id], float(c.power_w))
        return [host_e, host_p, comp_e, comp_p] if self.host else [comp_e, comp_p]


def metrics_text(emu: Emulator, host: bool = True) -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(HardwareCollector(emu, host))
    return bytes(generate_latest(registry))


def emulate_document(emu: Emulator, node: str | None = None) -> dict[str, Any]:
    names = [node] if node else sorted(emu.nodes)
    return {
        "clock": {"tick": emu.tick_count, "tickSeconds": emu.tick_s, "frozen": emu.frozen},
        "nodes": [emu.truth(n) for n in names],
        "events": [asdict(e) for e in emu.events[-200:] if node is None or e.node == node],
    }


class DebugServer:
    def __init__(self, emu: Emulator, host: str = "127.0.0.1", port: int = 0, bmcs: dict[str, Any] | None = None) -> None:
        """``bmcs``: the emulated BMCs' addresses document, served at ``GET /debug/bmcs`` (404 without)."""
        self.emu = emu
        emulator = emu
        self.bmcs = bmcs
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # - the stdlib's name
                url = urlparse(self.path)
                if url.path == "/healthz":
                    self._send(200, {"status": "ok"})
                    return
                if url.path in ("/metrics", "/metrics/components"):
                    data = metrics_text(emulator, host=url.path == "/metrics")
                    self.send_response(200)
                    self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                if url.path == "/debug/bmcs":
                    if server.bmcs is None:
                        self._send(404, {"error": "no emulated BMCs (the simulator runs without --bmc)"})
                    else:
                        self._send(200, server.bmcs)
                    return
                if url.path != "/debug/emulate":
                    self._send(404, {"error": f"no route {url.path}; try /debug/emulate, /debug/bmcs, /metrics or /metrics/components"})
                    return
                node = parse_qs(url.query).get("node", [None])[0]
                try:
                    self._send(200, emulate_document(emulator, node))
                except NotEmulated as e:
                    self._send(404, {"error": str(e)})

            def _send(self, code: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:  # - the stdlib's name
                pass

        self.httpd = ThreadingHTTPServer((host, port), Handler)
        self.port = self.httpd.server_address[1]
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="debug-http", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
