"""OTLP metrics of the emulator's truth, following the OpenTelemetry hardware semantic conventions.

Per node (one OTLP resource, attributes ``k8s.node.name``, ``host.name`` and ``service.instance.id`` =
the node name; the last becomes Prometheus' ``instance``, which keeps nodes apart without promotion):

- ``hw.host.energy`` (counter, J) and ``hw.host.power`` (gauge, W): the whole host.
- ``hw.energy`` (counter, J) and ``hw.power`` (gauge, W) per component, with ``hw.type``
  (``cpu`` for a package, ``memory`` for DRAM, ``gpu``) and ``hw.id`` (``package-0``,
  ``dram-0``, ``gpu-3``).

With a facility (:class:`~joulie_simulator.facility.live.FacilityLive`), each node's resource also
carries ``hw.host.ambient_temperature`` (gauge, Cel: the node's inlet air, its rack's), and one more
resource (``service.instance.id`` = ``facility``) the facility's signals, the names the controller's
facility poller reads by default (docs/facility-model.md, "Exported"):

- ``joulie.facility.ambient.temperature`` (Cel), ``joulie.facility.it.power``,
  ``joulie.facility.cooling.power``, ``joulie.facility.other.power``, ``joulie.facility.power`` (W),
  ``joulie.facility.pue`` (1; absent while no IT power flows);
- ``joulie.cooling_zone.ambient.temperature`` (Cel, attribute ``joulie.cooling_zone``: the zone's supply air);
- ``joulie.rack.power`` (W), ``joulie.rack.inlet.temperature`` (Cel) and ``joulie.rack.psu.load``
  (1: rack IT over rack PSU capacity), attributes ``joulie.rack`` and ``joulie.cooling_zone``.

All nodes go in one export request (``MetricsData`` built directly, sent with the SDK's OTLP/HTTP
exporter): one request per interval however many nodes, rather than a meter provider per node.
A node under a ``telemetry_gap`` fault is left out.

Events (``joulie.sim.*``, see ``emulator.py``; not the per-tick one) go out as OTLP log records
(:class:`OtlpEventExporter`, the SDK's OTLP/HTTP log exporter): ``event_name`` = the event,
the node's resource as above, attributes ``k8s.node.name``,
``error.type`` (rejected writes: the lower-case errno name), ``file.path`` (the file, relative
to the node's tree), ``joulie.sim.tick`` and ``joulie.sim.value_w`` where they apply; body = the
message. Batched every interval, at most ``max_queue`` waiting (the oldest are dropped and counted).
"""

from __future__ import annotations

import collections
import threading
import time
from typing import Any

from opentelemetry._logs import LogRecord, SeverityNumber  # pants: no-infer-dep (opentelemetry-api, via the SDK)
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk._logs.export import LogRecordExportResult
from opentelemetry.sdk.metrics.export import (
    Metric,
    MetricExportResult,
    MetricsData,
    NumberDataPoint,
    ResourceMetrics,
    ScopeMetrics,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.util.instrumentation import InstrumentationScope

from joulie_common.periodic import Periodic
from joulie_simulator.emulation.emulator import EVENT_TICK, EVENT_WRITE_REJECTED, Emulator, Event
from joulie_simulator.emulation.hwsemconv import components, telemetry_gap
from joulie_simulator.facility import FacilityReading
from joulie_simulator.facility.live import FacilityLive
from joulie_telemetry import vocabulary as v
from joulie_telemetry.otlp import metric, node_resource, point

SCOPE = InstrumentationScope("joulie-simulator")
SCHEMA_URL = v.SCHEMA_URL


def facility_metrics(f: FacilityReading, start_ns: int, now_ns: int) -> list[Metric]:
    def one(value: float) -> list[NumberDataPoint]:
        return [point(value, start_ns, now_ns)]

    racks = sorted(f.racks.items())
    rack_attrs = [{v.RACK_ATTRIBUTE: r, v.ZONE_ATTRIBUTE: x.zone} if x.zone else {v.RACK_ATTRIBUTE: r} for r, x in racks]
    out = [
        metric(v.FACILITY_AMBIENT, one(f.ambient_c)),
        metric(v.FACILITY_IT_POWER, one(f.it_w)),
        metric(v.FACILITY_COOLING_POWER, one(f.cooling_w)),
        metric(v.FACILITY_OTHER_POWER, one(f.other_w)),
        metric(v.FACILITY_POWER, one(f.facility_w)),
    ]
    if f.pue is not None:
        out.append(metric(v.FACILITY_PUE, one(f.pue)))
    if f.zone_supply_c:
        out.append(metric(v.ZONE_AMBIENT, [
            point(c, start_ns, now_ns, {v.ZONE_ATTRIBUTE: z}) for z, c in sorted(f.zone_supply_c.items())]))
    if racks:
        pairs = list(zip(racks, rack_attrs, strict=True))
        out += [
            metric(v.RACK_POWER, [point(x.it_w, start_ns, now_ns, a) for (_, x), a in pairs]),
            metric(v.RACK_INLET, [point(x.inlet_c, start_ns, now_ns, a) for (_, x), a in pairs]),
            metric(v.RACK_PSU_LOAD, [point(x.psu_load, start_ns, now_ns, a) for (_, x), a in pairs]),
        ]
    return out


def metrics_data(emu: Emulator, start_ns: int, now_ns: int, facility: FacilityLive | None = None) -> MetricsData:
    clock_s = emu.clock()
    out = []
    reading = facility.reading() if facility is not None else None
    for name in sorted(emu.nodes):
        if telemetry_gap(emu.nodes[name]):
            continue
        t, tick_s = emu.truth_and_tick(name)
        # Stamped with the time of the tick the values are from (``now_ns`` is the emulator clock's
        # ``clock_s``), not the push's: building 1000 Nodes' points takes seconds on a busy machine,
        # late ticks and all, and ticks go on meanwhile.
        at_ns = max(start_ns, now_ns + int((tick_s - clock_s) * 1e9))
        energy: list[NumberDataPoint] = []
        power: list[NumberDataPoint] = []
        for c in components(t):
            a = {v.HW_TYPE: c.hw_type, v.HW_ID: c.hw_id}
            energy.append(point(c.energy_j, start_ns, at_ns, a))
            power.append(point(c.power_w, start_ns, at_ns, a))
        metrics = [
            metric(v.HOST_ENERGY, [point(t["host"]["energyJ"], start_ns, at_ns)]),
            metric(v.HOST_POWER, [point(t["host"]["powerW"], start_ns, at_ns)]),
            metric(v.COMPONENT_ENERGY, energy),
            metric(v.COMPONENT_POWER, power),
        ]
        if reading is not None:
            metrics.append(metric(v.HOST_AMBIENT_TEMPERATURE, [point(reading.node_inlet_c[name], start_ns, now_ns)]))
        resource = _node_resource(name)
        out.append(ResourceMetrics(resource, [ScopeMetrics(SCOPE, metrics, SCHEMA_URL)], SCHEMA_URL))
    if reading is not None:
        resource = Resource.create({v.SERVICE_NAME: "joulie-simulator", v.SERVICE_INSTANCE_ID: "facility"})
        out.append(ResourceMetrics(resource, [ScopeMetrics(SCOPE, facility_metrics(reading, start_ns, now_ns), SCHEMA_URL)], SCHEMA_URL))
    return MetricsData(out)


class OtlpPusher:
    """Pushes the truth every ``interval_s`` (wall clock) to an OTLP/HTTP metrics endpoint."""

    def __init__(self, emu: Emulator, endpoint: str, interval_s: float = 5.0, facility: FacilityLive | None = None) -> None:
        self.emu = emu
        self.facility = facility
        self.exporter = OTLPMetricExporter(endpoint=endpoint, timeout=5)
        self.interval_s = interval_s
        self.start_ns = time.time_ns()
        self._loop = Periodic(interval_s, self.push, "otlp")

    def push(self) -> bool:
        data = metrics_data(self.emu, self.start_ns, time.time_ns(), self.facility)
        return self.exporter.export(data) == MetricExportResult.SUCCESS

    def start(self) -> None:
        self._loop.start()

    def stop(self) -> None:
        self._loop.stop()
        self.exporter.shutdown()


def _node_resource(node: str) -> Resource:
    """One resource per emulated node (no node: the simulator's own), as `joulie_telemetry.otlp` builds it."""
    return node_resource("joulie-simulator", node)


def log_record(ev: Event, resource: Resource, now_ns: int) -> ReadableLogRecord:
    """One event as an OTLP log record (what :class:`OtlpEventExporter` sends)."""
    attrs: dict[str, Any] = {"joulie.sim.tick": ev.tick}
    if ev.node:
        attrs[v.K8S_NODE_NAME] = ev.node
    if ev.error_type:
        attrs["error.type"] = ev.error_type
    if ev.file:
        attrs["file.path"] = ev.file
    if ev.value_w:
        attrs["joulie.sim.value_w"] = ev.value_w
    warn = ev.name == EVENT_WRITE_REJECTED
    record = LogRecord(
        timestamp=now_ns,
        observed_timestamp=now_ns,
        severity_number=SeverityNumber.WARN if warn else SeverityNumber.INFO,
        severity_text="WARN" if warn else "INFO",
        body=ev.message or ev.name,
        attributes=attrs,
        event_name=ev.name,
    )
    return ReadableLogRecord(record, resource, SCOPE)


class OtlpEventExporter:
    """Sends the emulator's events as OTLP log records to an OTLP/HTTP logs endpoint
    (e.g. ``http://collector:4318/v1/logs``), one request per ``interval_s`` while any are waiting."""

    def __init__(self, emu: Emulator, endpoint: str, interval_s: float = 1.0, max_queue: int = 10000) -> None:
        self.emu = emu
        self.exporter = OTLPLogExporter(endpoint=endpoint, timeout=5)
        self.interval_s = interval_s
        self.dropped = 0
        self._queue: collections.deque[ReadableLogRecord] = collections.deque()
        self._max_queue = max_queue
        self._resources: dict[str, Resource] = {}
        self._lock = threading.Lock()
        self._loop = Periodic(interval_s, self.push, "otlp-logs")

    def on_event(self, ev: Event) -> None:
        if ev.name == EVENT_TICK:
            return
        res = self._resources.get(ev.node)
        if res is None:
            res = self._resources[ev.node] = _node_resource(ev.node)
        rec = log_record(ev, res, time.time_ns())
        with self._lock:
            if len(self._queue) >= self._max_queue:
                self._queue.popleft()
                self.dropped += 1
            self._queue.append(rec)

    def push(self) -> bool:
        """Send what is waiting (nothing to send counts as success)."""
        with self._lock:
            batch = list(self._queue)
            self._queue.clear()
        if not batch:
            return True
        return self.exporter.export(batch) == LogRecordExportResult.SUCCESS

    def start(self) -> None:
        self.emu.listeners.append(self.on_event)
        self._loop.start()

    def stop(self) -> None:
        if self.on_event in self.emu.listeners:
            self.emu.listeners.remove(self.on_event)
        self._loop.stop()
        self.push()
        self.exporter.shutdown()  # type: ignore[no-untyped-call]
