"""OTLP metrics of the emulator's truth, following the OpenTelemetry hardware semantic conventions.

Per node (one OTLP resource, attributes ``k8s.node.name`` and ``host.name`` = the node name):

- ``hw.host.energy`` (counter, J) and ``hw.host.power`` (gauge, W): the whole host.
- ``hw.energy`` (counter, J) and ``hw.power`` (gauge, W) per component, with ``hw.type``
  (``cpu`` for a package, ``memory`` for DRAM, ``gpu``) and ``hw.id`` (``package-0``,
  ``dram-0``, ``gpu-3``).

All nodes go in one export request (``MetricsData`` built directly, sent with the SDK's OTLP/HTTP
exporter): one request per interval however many nodes, rather than a meter provider per node.
A node under a ``telemetry_gap`` fault is left out.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    Gauge,
    Metric,
    MetricExportResult,
    MetricsData,
    NumberDataPoint,
    ResourceMetrics,
    ScopeMetrics,
    Sum,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.util.instrumentation import InstrumentationScope

from joulie_simulator.emulator import Emulator

SCOPE = InstrumentationScope("joulie-simulator")
SCHEMA_URL = "https://opentelemetry.io/schemas/1.37.0"


def _point(value: float, start_ns: int, now_ns: int, attrs: dict[str, Any] | None = None) -> NumberDataPoint:
    return NumberDataPoint(attributes=attrs or {}, start_time_unix_nano=start_ns, time_unix_nano=now_ns, value=value)


def _counter(name: str, desc: str, points: list[NumberDataPoint]) -> Metric:
    return Metric(name, desc, "J", Sum(points, AggregationTemporality.CUMULATIVE, is_monotonic=True))


def _gauge(name: str, desc: str, points: list[NumberDataPoint]) -> Metric:
    return Metric(name, desc, "W", Gauge(points))


def metrics_data(emu: Emulator, start_ns: int, now_ns: int) -> MetricsData:
    out = []
    for name in sorted(emu.nodes):
        if any(f.kind == "telemetry_gap" for f in emu.nodes[name].faults):
            continue
        t = emu.truth(name)
        energy: list[NumberDataPoint] = []
        power: list[NumberDataPoint] = []
        for p in t["packages"]:
            a = {"hw.type": "cpu", "hw.id": f"package-{p['socket']}"}
            energy.append(_point(p["energyJ"], start_ns, now_ns, a))
            power.append(_point(p["powerW"], start_ns, now_ns, a))
        for z in t["zones"]:
            if z["name"] == "dram":
                a = {"hw.type": "memory", "hw.id": f"dram-{z['path'].split(':')[1]}"}
                energy.append(_point(z["energyJ"], start_ns, now_ns, a))
                power.append(_point(z["powerW"], start_ns, now_ns, a))
        for g in t["gpus"]:
            a = {"hw.type": "gpu", "hw.id": f"gpu-{g['index']}"}
            energy.append(_point(g["energyJ"], start_ns, now_ns, a))
            power.append(_point(g["powerW"], start_ns, now_ns, a))
        metrics = [
            _counter("hw.host.energy", "Energy consumed by the whole host", [_point(t["host"]["energyJ"], start_ns, now_ns)]),
            _gauge("hw.host.power", "Instantaneous power of the whole host", [_point(t["host"]["powerW"], start_ns, now_ns)]),
            _counter("hw.energy", "Energy consumed by a component", energy),
            _gauge("hw.power", "Instantaneous power of a component", power),
        ]
        resource = Resource.create({"service.name": "joulie-simulator", "k8s.node.name": name, "host.name": name})
        out.append(ResourceMetrics(resource, [ScopeMetrics(SCOPE, metrics, SCHEMA_URL)], SCHEMA_URL))
    return MetricsData(out)


class OtlpPusher:
    """Pushes the truth every ``interval_s`` (wall clock) to an OTLP/HTTP metrics endpoint."""

    def __init__(self, emu: Emulator, endpoint: str, interval_s: float = 5.0) -> None:
        self.emu = emu
        self.exporter = OTLPMetricExporter(endpoint=endpoint, timeout=5)
        self.interval_s = interval_s
        self.start_ns = time.time_ns()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="otlp", daemon=True)

    def push(self) -> bool:
        data = metrics_data(self.emu, self.start_ns, time.time_ns())
        return self.exporter.export(data) == MetricExportResult.SUCCESS

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.push()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(10)
        self.exporter.shutdown()
