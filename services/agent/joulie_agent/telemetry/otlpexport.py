"""Sends the node's measured power over OTLP/HTTP with the OpenTelemetry SDK. Shell.

What is measured and how is in `powerexport.py`; this module reads the counter files and the GPU
tool layer every interval and exports one OTLP request for all the agent's nodes (one in a
daemonset, a shard in pool mode). Per node one resource: `service.name=joulie-agent`,
`service.instance.id`, `k8s.node.name` and `host.name` = the node name (as the simulator's, so
every telemetry mode's Prometheus settings apply unchanged). Metrics:
`hw.host.energy` (counter, J, one per source), `hw.host.power` (gauge, W, the current source),
both with `joulie.host.power.source` (`bmc` or `sum-of-components`), `hw.energy` (counter, J) and
`hw.power` (gauge, W) with `hw.type` / `hw.id`.

Per NVIDIA board (`hw.type=gpu`, `hw.id=gpu-N`), the signals the controller estimates each job's
sensitivity from (`joulie_telemetry.vocabulary.GPU_METRICS`): `hw.gpu.utilization`
(`hw.gpu.task=general`), `hw.gpu.speed` and `hw.gpu.speed.limit` (`hw.limit_type=max`, Hz), and,
where DCGM answers, `hw.gpu.sm.active`, `hw.gpu.tensor.active`, `hw.gpu.dram.active` (a value the
node does not have is left out, never sent as 0); and `hw.gpu.allocation` = 1 for each board a Pod
holds as the kubelet's pod-resources API lists it (`k8s.pod.name`, `k8s.namespace.name`,
`k8s.container.name`; the API has no Pod UID, so there is no `k8s.pod.uid`), no point for a free board.

Per node too, `joulie.agent.reconcile.time` (gauge, s): the Unix time of the agent's last reconcile
of the node, its heartbeat (issue 39). While a node is being pushed (``pushed``), its heartbeat
Lease is renewed rarely (`kube.heartbeat`): the controller manager reads this time every tick.

Host power from a BMC comes from a `HostPowerReader` (`bmcpower.py`), which reads the BMC in a
thread of its own: the export only takes its latest fresh reading, so a BMC that hangs or fails
never delays an export; the host is then the sum of the components, labelled as such.

The MetricsData is built directly and sent with the SDK's OTLPMetricExporter, like the
simulator's push: no MeterProvider, no per-node SDK state, nothing queued. A failed export is
counted and logged once per change of outcome, never retried in a loop: the counters are
cumulative, so the next export carries the energy the failed one had.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from opentelemetry.sdk.metrics.export import (
    Metric,
    MetricExporter,
    MetricExportResult,
    MetricsData,
    NumberDataPoint,
    ResourceMetrics,
    ScopeMetrics,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.util.instrumentation import InstrumentationScope

from joulie_agent.discovery.gpuactivity import ActivityReport, BoardActivity, BoardHolder, DeviceHolder, boards_held
from joulie_agent.discovery.gputools import Inventory
from joulie_agent.discovery.status import HostFacts, allocatable_gpus, expected_gpu_vendor
from joulie_agent.host import hostread
from joulie_agent.host.hostread import HostPaths
from joulie_agent.power.powerexport import (
    BMC_ONLY_REASON,
    NO_COUNTERS_REASON,
    Component,
    EnergyAccumulator,
    ExportPlan,
    HostEnergy,
    NodeSample,
    plan_sources,
)
from joulie_common.periodic import Periodic
from joulie_telemetry import otlp
from joulie_telemetry.otlp import metric, point
from joulie_telemetry.vocabulary import (
    AGENT_RECONCILE_TIME,
    COMPONENT_ENERGY,
    COMPONENT_POWER,
    GPU_ALLOCATION,
    GPU_DRAM_ACTIVE,
    GPU_SM_ACTIVE,
    GPU_SM_CLOCK,
    GPU_SM_CLOCK_MAX,
    GPU_TENSOR_ACTIVE,
    GPU_UTILIZATION,
    HOST_ENERGY,
    HOST_POWER,
    HOST_POWER_SOURCE,
    HW_GPU,
    HW_GPU_TASK,
    HW_GPU_TASK_GENERAL,
    HW_ID,
    HW_LIMIT_TYPE,
    HW_TYPE,
    K8S_CONTAINER_NAME,
    K8S_NAMESPACE_NAME,
    K8S_NODE_NAME,
    K8S_POD_NAME,
    SCHEMA_URL,
    MetricSpec,
)

log = logging.getLogger(__name__)

SCOPE = InstrumentationScope("joulie-agent")

GpuReader = Callable[[], Inventory | None]
ActivityReader = Callable[[], ActivityReport | None]
"""Each board's UUID, utilisation, clocks and DCGM ratios (the GPU tool layer), or None (tool busy)."""
HoldersReader = Callable[[], list[DeviceHolder] | None]
"""The kubelet's pod-resources devices, or None when the socket did not answer."""
TOOL_READ_MIN_S = 10.0
"""Shortest time between two GPU tool reads (the tool layer is NVML in a daemonset, a process otherwise)."""


class HostPowerReader(Protocol):
    """A platform meter of one node's input power, read in the background (`bmcpower.BmcPowerReader`)."""

    def power_w(self) -> float | None:
        """The latest fresh reading in watts; None while there is none (never blocks)."""

    def start(self) -> None: ...

    def stop(self) -> None: ...


HostPowerFactory = Callable[[str], HostPowerReader | None]


@dataclass
class NodeSource:
    """One node's counters and GPU reader, with its accumulated energies."""

    paths: HostPaths
    plan: ExportPlan
    read_gpus: GpuReader
    host_power: HostPowerReader | None = None
    acc: EnergyAccumulator = field(default_factory=EnergyAccumulator)
    host: HostEnergy = field(default_factory=HostEnergy)
    read_activity: ActivityReader | None = None
    read_holders: HoldersReader | None = None
    _inv: Inventory | None = None
    _inv_t_s: float | None = None
    _activity: list[BoardActivity] = field(default_factory=list)
    _activity_t_s: float | None = None
    _activity_read_t_s: float | None = None

    def gpu_report(self, t_s: float) -> tuple[list[BoardActivity], list[BoardHolder]]:
        """The boards' signals (from a tool read at most every TOOL_READ_MIN_S, none once older than two
        of them) and who holds each board (the pod-resources API, read every interval)."""
        if self.read_activity is None:
            return [], []
        if self._activity_read_t_s is None or t_s - self._activity_read_t_s >= TOOL_READ_MIN_S:
            self._activity_read_t_s = t_s
            report = self.read_activity()
            if report is not None and report.boards:
                self._activity, self._activity_t_s = report.boards, t_s
        fresh = self._activity_t_s is not None and t_s - self._activity_t_s <= 2 * TOOL_READ_MIN_S
        boards = self._activity if fresh else []
        devices = self.read_holders() if self.read_holders is not None else None
        # UUIDs do not change while the node runs: the last read maps the devices even when stale.
        held, _warnings = boards_held(devices or [], self._activity)
        return boards, held

    def sample(self, t_s: float) -> NodeSample:
        comps: list[Component] = []
        for src in self.plan.counters:
            raw = hostread.read_counter_uj(self.paths, src.path_key)
            if raw is not None:
                comps.append(self.acc.counter(src, raw, t_s))
        for m in self.plan.meters:
            uw = hostread.read_counter_uj(self.paths, m.path_key)  # same integer file format, µW
            if uw is not None:
                comps.append(self.acc.meter(m.hw_type, m.hw_id, uw / 1e6, t_s))
        if self.plan.gpus:
            # A GPU tool is a process per call: read it at most every TOOL_READ_MIN_S and integrate the
            # last draw in between (NVML would be cheap, but the fallback must not crowd the node).
            if self._inv_t_s is None or t_s - self._inv_t_s >= TOOL_READ_MIN_S:
                inv_now = self.read_gpus()
                self._inv_t_s = t_s  # a failed read waits its turn too: no tool call each interval
                if inv_now is not None and inv_now.devices:
                    self._inv = inv_now
            inv = self._inv
            for d in inv.devices if inv else []:
                if d.draw_w is not None:
                    comps.append(self.acc.meter(HW_GPU, f"gpu-{d.index}", d.draw_w, t_s))
        self.acc.forget_except({(c.hw_type, c.hw_id) for c in comps})
        return self.host.update(comps, self.host_power.power_w() if self.host_power else None, t_s)


# The agent says where the host's figure comes from (a BMC reading or the sum of the components).
HOST_ENERGY_BY_SOURCE = ("Energy of the host, per joulie.host.power.source (bmc: the BMC's input power reading; "
                         "sum-of-components: the sum of the measured components)")
HOST_POWER_BY_SOURCE = "Power of the host (joulie.host.power.source says from what)"


def node_resource(node: str) -> Resource:
    return otlp.node_resource("joulie-agent", node)


def gpu_metrics(boards: list[BoardActivity], held: list[BoardHolder], start_ns: int, now_ns: int) -> list[Metric]:
    """The GPU_METRICS of a node's boards: each value a board reported, nothing for one it did not."""
    series: dict[MetricSpec, list[NumberDataPoint]] = {}

    def add(spec: MetricSpec, value: float | None, attrs: dict[str, str]) -> None:
        if value is not None:
            series.setdefault(spec, []).append(point(value, start_ns, now_ns, attrs))

    for b in boards:
        a = {HW_TYPE: HW_GPU, HW_ID: f"gpu-{b.index}"}
        add(GPU_UTILIZATION, b.utilization, {**a, HW_GPU_TASK: HW_GPU_TASK_GENERAL})
        add(GPU_SM_CLOCK, b.sm_clock_mhz * 1e6 if b.sm_clock_mhz is not None else None, a)
        add(GPU_SM_CLOCK_MAX, b.sm_clock_max_mhz * 1e6 if b.sm_clock_max_mhz is not None else None,
            {**a, HW_LIMIT_TYPE: "max"})
        add(GPU_SM_ACTIVE, b.sm_active, a)
        add(GPU_TENSOR_ACTIVE, b.tensor_active, a)
        add(GPU_DRAM_ACTIVE, b.dram_active, a)
    for h in held:
        add(GPU_ALLOCATION, 1.0, {HW_TYPE: HW_GPU, HW_ID: f"gpu-{h.index}", K8S_NAMESPACE_NAME: h.namespace,
                                  K8S_POD_NAME: h.pod, K8S_CONTAINER_NAME: h.container})
    return [metric(spec, pts) for spec, pts in series.items()]


def resource_metrics(node: str, sample: NodeSample, start_ns: int, now_ns: int,
                     resource: Resource | None = None, gpus: list[Metric] | None = None) -> ResourceMetrics | None:
    """One node's OTLP resource metrics; None when nothing was measured. ``gpus``: its GPU series,
    and any other series of the node's (its reconcile time), sent even when no power was measured."""
    if not sample.measured:
        if not gpus:
            return None
        # No power measured (POWER_EXPORT_METRICS=gpu): the GPU series alone, no host counter at 0 J.
        return ResourceMetrics(resource or node_resource(node), [ScopeMetrics(SCOPE, list(gpus), SCHEMA_URL)],
                               SCHEMA_URL)
    energy, power = [], []
    for c in sample.components:
        a = {HW_TYPE: c.hw_type, HW_ID: c.hw_id}
        energy.append(point(c.energy_j, start_ns, now_ns, a))
        if c.power_w is not None:
            power.append(point(c.power_w, start_ns, now_ns, a))
    by_source = sample.host_energy_by_source_j or ((sample.host_source, sample.host_energy_j),)
    metrics = [
        metric(HOST_ENERGY, [point(j, start_ns, now_ns, {HOST_POWER_SOURCE: src}) for src, j in by_source],
               HOST_ENERGY_BY_SOURCE),
    ]
    if energy:
        metrics.append(metric(COMPONENT_ENERGY, energy))
    if sample.host_power_w is not None:
        host_power = point(sample.host_power_w, start_ns, now_ns, {HOST_POWER_SOURCE: sample.host_source})
        metrics.append(metric(HOST_POWER, [host_power], HOST_POWER_BY_SOURCE))
    if power:
        metrics.append(metric(COMPONENT_POWER, power))
    metrics.extend(gpus or [])
    return ResourceMetrics(resource or node_resource(node), [ScopeMetrics(SCOPE, metrics, SCHEMA_URL)], SCHEMA_URL)


class PowerExporter:
    """Every `interval_s`, samples each registered node and sends one OTLP request."""

    def __init__(self, exporter: MetricExporter, interval_s: float = 10.0,
                 monotonic: Callable[[], float] = time.monotonic, on_result: Callable[[bool], None] = lambda ok: None,
                 host_power: HostPowerFactory = lambda node: None, gpu_only: bool = False):
        self.exporter = exporter
        # Only the GPU_METRICS (POWER_EXPORT_METRICS=gpu): where another exporter meters the power.
        self.gpu_only = gpu_only
        self._host_power_factory = host_power
        self._host_power: dict[str, HostPowerReader | None] = {}
        self.interval_s = interval_s
        self._monotonic = monotonic
        self._on_result = on_result
        self._nodes: dict[str, NodeSource] = {}
        self._resources: dict[str, Resource] = {}
        self._lock = threading.Lock()
        self._loop = Periodic(interval_s, self.export_once, "power-export")
        self._last_ok: bool | None = None
        self.start_ns = time.time_ns()
        # Each node's last reconcile (Unix s, from the agent loop), and which nodes the last
        # successful export carried it for, and when (monotonic s).
        self._reconciled: dict[str, float] = {}
        self._pushed: frozenset[str] = frozenset()
        self._pushed_at: float | None = None

    def reconciled(self, node: str, unix_s: float) -> None:
        """The agent loop finished a reconcile of ``node`` at ``unix_s``: the next export says so."""
        with self._lock:
            self._reconciled[node] = unix_s

    def pushed(self, node: str) -> bool:
        """Whether ``node``'s reconcile time is being pushed: the last export carried it and
        succeeded no longer than two intervals ago (an export that hangs or fails ends it)."""
        with self._lock:
            at = self._pushed_at
            return at is not None and node in self._pushed and self._monotonic() - at <= 2 * self.interval_s + 5

    def set_node(self, node: str, paths: HostPaths, facts: HostFacts, read_gpus: GpuReader,
                 read_activity: ActivityReader | None = None, read_holders: HoldersReader | None = None) -> str | None:
        """(Re)plan a node after discovery. Returns why nothing is exported for it, or None.
        ``read_activity`` / ``read_holders``: the boards' signals and the pod-resources devices (an
        NVIDIA node); None exports no GPU_METRICS for the node."""
        # GPUs the node has even when the tools did not answer at discovery (busy, timed out): the
        # exporter then keeps asking them each TOOL_READ_MIN_S instead of waiting for rediscovery.
        gpu_count = (len(facts.gpu.devices) if facts.gpu else 0) or allocatable_gpus(facts.allocatable) or int(
            bool(expected_gpu_vendor(facts.labels, facts.nvidiactl)))
        plan = ExportPlan() if self.gpu_only else plan_sources(
            facts.zones, hostread.read_amd_energy(paths), gpu_count, hostread.read_amdgpu_power_files(paths))
        with self._lock:
            if self.gpu_only:
                if read_activity is None:
                    self._nodes.pop(node, None)
                    return None  # a node without NVIDIA boards: nothing of its is exported, as asked
                self._nodes[node] = NodeSource(paths, plan, read_gpus, read_activity=read_activity,
                                               read_holders=read_holders)
                self._resources.setdefault(node, node_resource(node))
                return None
            if node not in self._host_power:
                reader = self._host_power[node] = self._host_power_factory(node)
                if reader is not None:
                    reader.start()
            host_power = self._host_power[node]
            if plan.empty and host_power is None:
                self._nodes.pop(node, None)
                return NO_COUNTERS_REASON
            old = self._nodes.get(node)
            if old is None or old.plan != plan or old.paths != paths:
                # A new plan keeps the host counters: they must not go back when a GPU comes or goes.
                self._nodes[node] = NodeSource(paths, plan, read_gpus, host_power,
                                               host=old.host if old is not None else HostEnergy(),
                                               read_activity=read_activity, read_holders=read_holders)
                self._resources.setdefault(node, node_resource(node))
            else:
                old.read_activity, old.read_holders = read_activity, read_holders
        return BMC_ONLY_REASON if plan.empty else None

    def remove_node(self, node: str) -> None:
        with self._lock:
            self._nodes.pop(node, None)
            self._reconciled.pop(node, None)
            self._pushed = self._pushed - {node}
            self._resources.pop(node, None)
            reader = self._host_power.pop(node, None)
        if reader is not None:
            reader.stop()

    def collect(self) -> MetricsData:
        with self._lock:
            sources = dict(self._nodes)
            reconciled = dict(self._reconciled)
        now_ns = time.time_ns()
        out = []
        # Every reconciled node carries its reconcile time, one with nothing else to export too
        # (POWER_EXPORT_METRICS=gpu on a CPU node, a node without counters): its Lease is then rare.
        for name in sorted(sources.keys() | reconciled.keys()):
            src = sources.get(name)
            sample, extra = NodeSample((), 0.0, None), []
            if src is not None:
                try:
                    t_s = self._monotonic()
                    if not self.gpu_only:
                        sample = src.sample(t_s)
                    boards, held = src.gpu_report(t_s)
                    extra = gpu_metrics(boards, held, self.start_ns, now_ns)
                except Exception as err:  # one node's unreadable file must not stop the others
                    log.warning("power export: node %s: %s", name, err)
                    sample, extra = NodeSample((), 0.0, None), []
            if name in reconciled:
                extra.append(metric(AGENT_RECONCILE_TIME, [point(reconciled[name], self.start_ns, now_ns)]))
            with self._lock:  # remove_node may run meanwhile: never add back a node it removed
                resource = self._resources.get(name)
                if resource is None:
                    if name not in self._nodes and name not in self._reconciled:
                        continue
                    resource = self._resources[name] = node_resource(name)
            rm = resource_metrics(name, sample, self.start_ns, now_ns, resource, extra)
            if rm is not None:
                out.append(rm)
        return MetricsData(out)

    def export_once(self) -> bool:
        data = self.collect()
        if not data.resource_metrics:
            return True
        try:
            ok = self.exporter.export(data) == MetricExportResult.SUCCESS
        except Exception as err:
            log.debug("power export failed: %s", err)
            ok = False
        carried = frozenset(
            str(rm.resource.attributes.get(K8S_NODE_NAME, "")) for rm in data.resource_metrics
            if any(m.name == AGENT_RECONCILE_TIME.name for sm in rm.scope_metrics for m in sm.metrics))
        with self._lock:
            self._pushed, self._pushed_at = (carried, self._monotonic()) if ok else (frozenset(), None)
        if ok != self._last_ok:
            (log.info if ok else log.warning)("power export to OTLP %s", "succeeds" if ok else "fails; retrying each interval")
            self._last_ok = ok
        self._on_result(ok)
        return ok

    def start(self) -> None:
        self._loop.start()

    def stop(self) -> None:
        self._loop.stop()
        with self._lock:
            readers = [r for r in self._host_power.values() if r is not None]
            self._host_power.clear()
        for r in readers:
            r.stop()
        self.exporter.shutdown()


def otlp_exporter(endpoint: str, timeout_s: float = 5.0) -> MetricExporter:
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

    return OTLPMetricExporter(endpoint=endpoint, timeout=timeout_s)

