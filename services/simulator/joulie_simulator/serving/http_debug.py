"""``/debug/emulate``: the emulator's truth as JSON over HTTP (loopback by default).

``GET /debug/emulate`` -> ``{"clock": {...}, "nodes": [{name, profile, host: {powerW, energyJ},
zones, gpus, caps, ...}], "events": [...]}``; ``?node=<name>`` narrows to one node (404 names it).

``GET /debug/bmcs``: where each node's emulated BMC listens (``joulie_simulator.bmc.serving.fleet``).
``POST /debug/bmc/faults`` ``{"failureShare": x, "hangShare": y}``: the share of power-ons those BMCs
refuse (HTTP 500) or accept without booting, from now on (``emulation/powerfaults.py``; a chaos fault's switch).

``GET /metrics``: the same hardware metrics as the OTLP push, in the Prometheus text format, for a
Prometheus that scrapes (telemetry mode ``scrape``): ``hw_host_energy_joules_total`` and
``hw_host_power_watts`` per node, ``hw_energy_joules_total`` and ``hw_power_watts`` per component
(``hw_type``, ``hw_id``), every series labelled ``k8s_node_name`` and ``host_name`` — the names
and labels Prometheus gives the OTLP metrics with promotion and UnderscoreEscapingWithSuffixes.

With a facility: ``/debug/emulate`` gains ``facility`` (ambient, IT, cooling, other and facility
power, PUE, zones' supply air, racks' power, inlet and PSU load, each node's inlet, the ambient
control in force), ``/metrics`` the facility series as Prometheus names them from OTLP
(``joulie_facility_ambient_temperature_celsius``, ``joulie_facility_it_power_watts``,
``joulie_facility_cooling_power_watts``, ``joulie_facility_pue_ratio``, ``joulie_rack_power_watts``
by ``joulie_rack``, ``joulie_cooling_zone_ambient_temperature_celsius`` by ``joulie_cooling_zone``,
``hw_host_ambient_temperature_celsius`` per node, ...), and ``POST /debug/facility/ambient`` with
``{"offsetC": 6}`` (shift the daily profile), ``{"fixedC": 35}`` (pin it) or ``{"clear": true}``
changes the ambient (400 names the field when the body is wrong).

``GET /metrics/components``: the component series only (no ``hw_host_*``), as a node exporter
that knows RAPL and the GPUs but no whole-host meter serves them; the Collector's Prometheus bridge
(telemetry mode ``otel-bridge``, which carries no whole-host power) scrapes this one.

``GET /metrics/cadvisor``: what each emulated node's kubelet serves there, each container's CPU time
(``container_cpu_usage_seconds_total{namespace, pod, container, node}``, ``emulation.cputime``); the
simulated cluster's Prometheus scrapes it in every telemetry mode, as a real one scrapes the kubelets.
"""

from __future__ import annotations

import json
import sys
import threading
from dataclasses import asdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from joulie_simulator.emulation import cputime
from joulie_simulator.emulation.emulator import Emulator, NotEmulated
from joulie_simulator.emulation.hwsemconv import components, telemetry_gap
from joulie_simulator.emulation.powerfaults import PowerOnFaults
from joulie_simulator.emulation.tickcost import TickCost
from joulie_simulator.facility.live import FacilityLive, check_c


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


class FacilityCollector(Collector):
    """The facility's signals, spelled as Prometheus spells the OTLP ones (UnderscoreEscapingWithSuffixes)."""

    def __init__(self, facility: FacilityLive) -> None:
        self.facility = facility

    def collect(self) -> list[Metric]:
        f = self.facility.reading()
        out: list[Metric] = []
        for name, doc, value in (
            ("joulie_facility_ambient_temperature_celsius", "Outdoor ambient temperature", f.ambient_c),
            ("joulie_facility_it_power_watts", "IT power of the facility", f.it_w),
            ("joulie_facility_cooling_power_watts", "Cooling power of the facility", f.cooling_w),
            ("joulie_facility_other_power_watts", "Facility power beside IT and cooling", f.other_w),
            ("joulie_facility_power_watts", "Total facility power", f.facility_w),
        ):
            out.append(GaugeMetricFamily(name, doc, value=value))
        if f.pue is not None:
            out.append(GaugeMetricFamily("joulie_facility_pue_ratio", "Power usage effectiveness", value=f.pue))
        zone = GaugeMetricFamily("joulie_cooling_zone_ambient_temperature_celsius", "Supply air of a cooling zone",
                                 labels=["joulie_cooling_zone"])
        for z, c in sorted(f.zone_supply_c.items()):
            zone.add_metric([z], c)
        rack_labels = ["joulie_rack", "joulie_cooling_zone"]
        power = GaugeMetricFamily("joulie_rack_power_watts", "IT power of a rack", labels=rack_labels)
        inlet = GaugeMetricFamily("joulie_rack_inlet_temperature_celsius", "Inlet air of a rack", labels=rack_labels)
        psu = GaugeMetricFamily("joulie_rack_psu_load_ratio", "Rack IT power over rack PSU capacity", labels=rack_labels)
        for r, x in sorted(f.racks.items()):
            power.add_metric([r, x.zone], x.it_w)
            inlet.add_metric([r, x.zone], x.inlet_c)
            psu.add_metric([r, x.zone], x.psu_load)
        node = GaugeMetricFamily("hw_host_ambient_temperature_celsius", "Inlet air of the host",
                                 labels=["k8s_node_name", "host_name"])
        for n, c in sorted(f.node_inlet_c.items()):
            node.add_metric([n, n], c)
        return [*out, zone, power, inlet, psu, node]


def metrics_text(emu: Emulator, host: bool = True, facility: FacilityLive | None = None) -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(HardwareCollector(emu, host))
    if facility is not None and host:
        registry.register(FacilityCollector(facility))
    return bytes(generate_latest(registry))


def emulate_document(
    emu: Emulator, node: str | None = None, facility: FacilityLive | None = None, tick_cost: TickCost | None = None
) -> dict[str, Any]:
    names = [node] if node else sorted(emu.nodes)
    doc: dict[str, Any] = {
        "clock": {"tick": emu.tick_count, "tickSeconds": emu.tick_s, "frozen": emu.frozen},
        "nodes": [emu.truth(n) for n in names],
        "events": [asdict(e) for e in emu.events[-200:] if node is None or e.node == node],
    }
    if facility is not None and node is None:
        doc["facility"] = facility.document()
    if tick_cost is not None:
        doc["tickCost"] = tick_cost.summary()
    return doc


def power_document(emu: Emulator) -> dict[str, Any]:
    """``GET /debug/power``: {"nodes": {node: power state}} (as ``/debug/emulate`` ``nodes[].power.state``;
    no lock, as ``truth``: a node's power state is one value)."""
    return {"nodes": {name: emu.nodes[name].power for name in sorted(emu.nodes)}}


def set_ambient(facility: FacilityLive | None, body: bytes) -> tuple[int, dict[str, Any]]:
    """``POST /debug/facility/ambient``: the status code and the answer (the control now, or the error)."""
    if facility is None:
        return 404, {"error": "no facility model in this simulator"}
    try:
        req = json.loads(body or b"{}")
    except ValueError as e:
        return 400, {"error": f"body: not JSON: {e}"}
    if not isinstance(req, dict) or not req or set(req) - {"offsetC", "fixedC", "clear"} or len(req) != 1:
        return 400, {"error": 'body: expected exactly one of {"offsetC": degC}, {"fixedC": degC}, {"clear": true}'}
    key, value = next(iter(req.items()))
    if key == "clear":
        if value is not True:
            return 400, {"error": f"clear: {value!r} is not true"}
        return 200, {"control": facility.set_ambient(clear=True).as_json()}
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 400, {"error": f"{key}: {value!r} is not a number (degC)"}
    try:
        degc = check_c(key, float(value))
    except ValueError as e:
        return 400, {"error": str(e)}
    control = facility.set_ambient(offset_c=degc) if key == "offsetC" else facility.set_ambient(fixed_c=degc)
    return 200, {"control": control.as_json(), "ambientC": facility.reading().ambient_c}


def set_bmc_faults(faults: PowerOnFaults | None, body: bytes) -> tuple[int, dict[str, Any]]:
    """``POST /debug/bmc/faults`` ``{"failureShare": 0.5, "hangShare": 0}``: the share of power-ons the
    emulated BMCs refuse or hang from now on (``emulation/powerfaults.py``; 0 and 0 clear it), of the BMCs
    of ``"nodes": [...]`` only when given; the answer says the shares now and the answers drawn so far."""
    if faults is None:
        return 404, {"error": "no emulated BMCs in this simulator (--bmc)"}
    try:
        req = json.loads(body or b"{}")
    except ValueError as e:
        return 400, {"error": f"body: not JSON: {e}"}
    if not isinstance(req, dict) or set(req) - {"failureShare", "hangShare", "nodes"}:
        return 400, {"error": 'body: expected {"failureShare": share, "hangShare": share} (0 to 1 each) '
                              'and optionally "nodes": [node names]'}
    nodes = req.get("nodes", [])
    if not isinstance(nodes, list) or not all(isinstance(n, str) and n for n in nodes):
        return 400, {"error": f"nodes: {nodes!r} is not a list of node names"}
    values = {k: req.get(k, 0.0) for k in ("failureShare", "hangShare")}
    for k, v in values.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return 400, {"error": f"{k}: {v!r} is not a number between 0 and 1"}
    try:
        faults.set_shares(float(values["failureShare"]), float(values["hangShare"]), frozenset(nodes))
    except ValueError as e:
        return 400, {"error": str(e)}
    return 200, {"failureShare": faults.failure_share, "hangShare": faults.hang_share,
                 "nodes": sorted(faults.nodes), "drawn": dict(faults.drawn)}


class QuietServer(ThreadingHTTPServer):
    """A client that went away before its answer was written (it timed out while the simulator was
    busy) is not an error of the simulator: no traceback in its log for that."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class DebugServer:
    def __init__(self, emu: Emulator, host: str = "127.0.0.1", port: int = 0, bmcs: dict[str, Any] | None = None,
                 facility: FacilityLive | None = None, tick_cost: TickCost | None = None,
                 bmc_faults: PowerOnFaults | None = None) -> None:
        """``bmcs``: the emulated BMCs' addresses document, served at ``GET /debug/bmcs`` (404 without);
        ``bmc_faults``: their power-on faults, set at ``POST /debug/bmc/faults``."""
        self.emu = emu
        emulator = emu
        self.bmcs = bmcs
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # - the stdlib's name
                url = urlparse(self.path)
                if url.path not in ("/debug/facility/ambient", "/debug/bmc/faults"):
                    self._send(404, {"error": f"no route POST {url.path}; try /debug/facility/ambient or /debug/bmc/faults"})
                    return
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(min(length, 4096))
                code, answer = (set_ambient(facility, body) if url.path == "/debug/facility/ambient"
                                else set_bmc_faults(bmc_faults, body))
                self._send(code, answer)

            def do_GET(self) -> None:  # - the stdlib's name
                url = urlparse(self.path)
                if url.path == "/healthz":
                    self._send(200, {"status": "ok"})
                    return
                if url.path in ("/metrics", "/metrics/components", "/metrics/cadvisor"):
                    data = (cputime.exposition(emulator.cpu_time.snapshot()).encode() if url.path == "/metrics/cadvisor"
                            else metrics_text(emulator, host=url.path == "/metrics", facility=facility))
                    self.send_response(200)
                    self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                if url.path == "/debug/power":
                    # Each node's power state alone: the simcluster supervisor reads it every second,
                    # and /debug/emulate's every-node truth cost 11 % of the simulator at 1000 Nodes.
                    self._send(200, power_document(emulator))
                    return
                if url.path == "/debug/bmcs":
                    if server.bmcs is None:
                        self._send(404, {"error": "no emulated BMCs (the simulator runs without --bmc)"})
                    else:
                        self._send(200, server.bmcs)
                    return
                if url.path != "/debug/emulate":
                    self._send(404, {"error": f"no route {url.path}; try /debug/emulate, /debug/power, /debug/bmcs, /metrics, /metrics/components or /metrics/cadvisor"})
                    return
                node = parse_qs(url.query).get("node", [None])[0]
                try:
                    self._send(200, emulate_document(emulator, node, facility, tick_cost))
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

        self.httpd = QuietServer((host, port), Handler)
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
