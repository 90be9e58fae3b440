"""The names Joulie's telemetry speaks, in one place: metrics, their units, their attributes.

The node metrics follow the OpenTelemetry hardware semantic conventions (`hw.*`); the facility's
are Joulie's own (`joulie.*`). The agent and the simulator export them, the controller manager
queries them through Prometheus, the simulated cluster's alert and dashboard checks read them: a
name spelled here is a name every one of them agrees on. Pure: no I/O, no SDK.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal

SCHEMA_URL: Final = "https://opentelemetry.io/schemas/1.37.0"

# Resource attributes of a node's telemetry (service.instance.id becomes Prometheus' `instance`).
SERVICE_NAME: Final = "service.name"
SERVICE_INSTANCE_ID: Final = "service.instance.id"
K8S_NODE_NAME: Final = "k8s.node.name"
HOST_NAME: Final = "host.name"

# Data point attributes of the component metrics.
HW_TYPE: Final = "hw.type"
HW_ID: Final = "hw.id"
HW_CPU: Final = "cpu"
HW_MEMORY: Final = "memory"
HW_GPU: Final = "gpu"
HW_GPU_TASK: Final = "hw.gpu.task"
"""Attribute of hw.gpu.utilization (semconv values ``general``, ``encoder``, ``decoder``)."""
HW_GPU_TASK_GENERAL: Final = "general"
HW_LIMIT_TYPE: Final = "hw.limit_type"
"""Attribute of hw.gpu.speed.limit (semconv value ``max``)."""

# Where a host's power comes from (an attribute of hw.host.energy and hw.host.power).
HOST_POWER_SOURCE: Final = "joulie.host.power.source"
HOST_SOURCE_SUM: Final = "sum-of-components"
HOST_SOURCE_BMC: Final = "bmc"

# Attributes of the facility's rack and zone series.
ZONE_ATTRIBUTE: Final = "joulie.cooling_zone"
RACK_ATTRIBUTE: Final = "joulie.rack"

Kind = Literal["counter", "gauge"]

_PROM_UNIT: Final = {"J": "joules", "W": "watts", "Cel": "celsius", "1": "ratio", "Hz": "hertz", "s": "seconds"}
_NOT_LEGACY_CHAR: Final = re.compile(r"[^a-zA-Z0-9_:]")


@dataclass(frozen=True)
class MetricSpec:
    """One metric: its OTel name, unit (UCUM), kind and description."""

    name: str
    unit: str
    kind: Kind
    description: str

    @property
    def prometheus_unit(self) -> str:
        """The unit suffix Prometheus' OTLP translation appends (`joules`, `watts`, ...)."""
        return _PROM_UNIT.get(self.unit, "")

    def prometheus_name(self, escape: bool = True, suffixes: bool = True) -> str:
        """The series name under a translation strategy (default: UnderscoreEscapingWithSuffixes)."""
        name = _NOT_LEGACY_CHAR.sub("_", self.name) if escape else self.name
        if suffixes:
            # Prometheus appends the unit (`_ratio` for a gauge of unit "1"), then `_total` to a counter.
            if self.prometheus_unit and not (self.unit == "1" and self.kind != "gauge"):
                name += f"_{self.prometheus_unit}"
            if self.kind == "counter":
                name += "_total"
        return name


# The node: the whole host and each component (cpu package, memory, gpu).
HOST_ENERGY: Final = MetricSpec("hw.host.energy", "J", "counter", "Energy consumed by the whole host")
HOST_POWER: Final = MetricSpec("hw.host.power", "W", "gauge", "Instantaneous power of the whole host")
COMPONENT_ENERGY: Final = MetricSpec("hw.energy", "J", "counter", "Energy consumed by a component")
COMPONENT_POWER: Final = MetricSpec("hw.power", "W", "gauge", "Instantaneous power of a component")
HOST_AMBIENT_TEMPERATURE: Final = MetricSpec(
    "hw.host.ambient_temperature", "Cel", "gauge", "Inlet air temperature of the host (its rack's)"
)

# Each GPU (data point attributes hw.id, hw.type=gpu), the signals the controller estimates a job's
# sensitivity from. Power per GPU is COMPONENT_POWER (hw.power, hw.type=gpu). The OpenTelemetry
# hardware conventions (GPU metrics, 1.37, status development) define hw.gpu.utilization but no SM
# clock and no profiling activity: the clock takes the form of the conventions' CPU frequency
# (hw.cpu.speed, hw.cpu.speed.limit, in Hz), the activity ratios are Joulie's names under hw.gpu.*, each
# the DCGM field named in its description (hw.gpu.memory.utilization is memory *capacity* used, not DRAM bandwidth: not it).
GPU_UTILIZATION: Final = MetricSpec(
    "hw.gpu.utilization", "1", "gauge",
    "Fraction of time a kernel ran (NVML utilization.gpu; attribute hw.gpu.task=general)",
)
GPU_SM_CLOCK: Final = MetricSpec(
    "hw.gpu.speed", "Hz", "gauge", "SM clock (NVML_CLOCK_SM; as hw.cpu.speed is a CPU's current frequency)"
)
GPU_SM_CLOCK_MAX: Final = MetricSpec(
    "hw.gpu.speed.limit", "Hz", "gauge",
    "Highest supported SM clock (attribute hw.limit_type=max, as hw.cpu.speed.limit): the clock ratio is "
    "hw.gpu.speed over it",
)
GPU_SM_ACTIVE: Final = MetricSpec(
    "hw.gpu.sm.active", "1", "gauge", "Fraction of time at least one warp was resident on an SM (DCGM_FI_PROF_SM_ACTIVE)"
)
GPU_TENSOR_ACTIVE: Final = MetricSpec(
    "hw.gpu.tensor.active", "1", "gauge",
    "Fraction of cycles the tensor pipes were active (DCGM_FI_PROF_PIPE_TENSOR_ACTIVE)",
)
GPU_DRAM_ACTIVE: Final = MetricSpec(
    "hw.gpu.dram.active", "1", "gauge",
    "Fraction of cycles the device memory interface was sending or receiving data (DCGM_FI_PROF_DRAM_ACTIVE)",
)
K8S_POD_UID: Final = "k8s.pod.uid"
K8S_CONTAINER_NAME: Final = "k8s.container.name"
GPU_ALLOCATION: Final = MetricSpec(
    "hw.gpu.allocation", "1", "gauge",
    "1 while the Pod in the data point's k8s.pod.uid, k8s.pod.name, k8s.namespace.name (and k8s.container.name) "
    "holds the board hw.id, as the kubelet's pod-resources API lists it; no point for a board nobody holds. "
    "Kept apart from the power and energy series so a Pod's arrival never starts a new counter series",
)

# The agent's own liveness (issue 39): per node, when its reconcile last completed; the controller
# manager reads it as a heartbeat beside the agent's Lease (joulie_controller.kube.heartbeats).
AGENT_RECONCILE_TIME: Final = MetricSpec(
    "joulie.agent.reconcile.time", "s", "gauge",
    "Unix time of the agent's last completed reconcile of the node (its heartbeat; the Lease is renewed rarely "
    "while this is pushed)",
)

# The facility; the first three names are the controller's FACILITY_*_METRIC defaults.
FACILITY_AMBIENT: Final = MetricSpec(
    "joulie.facility.ambient.temperature", "Cel", "gauge", "Outdoor ambient temperature"
)
FACILITY_IT_POWER: Final = MetricSpec(
    "joulie.facility.it.power", "W", "gauge", "IT power of the facility (every emulated node)"
)
FACILITY_COOLING_POWER: Final = MetricSpec(
    "joulie.facility.cooling.power", "W", "gauge", "Cooling power of the facility"
)
FACILITY_OTHER_POWER: Final = MetricSpec(
    "joulie.facility.other.power", "W", "gauge", "Facility power beside IT and cooling"
)
FACILITY_POWER: Final = MetricSpec("joulie.facility.power", "W", "gauge", "Total facility power (IT + cooling + other)")
FACILITY_PUE: Final = MetricSpec(
    "joulie.facility.pue", "1", "gauge", "Power usage effectiveness, (IT + cooling + other) / IT"
)
ZONE_AMBIENT: Final = MetricSpec(
    "joulie.cooling_zone.ambient.temperature", "Cel", "gauge", "Supply air temperature of a cooling zone"
)
RACK_POWER: Final = MetricSpec("joulie.rack.power", "W", "gauge", "IT power of a rack")
RACK_INLET: Final = MetricSpec("joulie.rack.inlet.temperature", "Cel", "gauge", "Inlet air temperature of a rack")
RACK_PSU_LOAD: Final = MetricSpec("joulie.rack.psu.load", "1", "gauge", "Rack IT power over the rack's PSU capacity")

# Energy receipts (docs/energy-receipts.md): each Pod's share of its node's metered energy, by device kind,
# and what the caps saved it; the node's unallocated rest, so the Pods and it add up to the node meter.
K8S_NAMESPACE_NAME: Final = "k8s.namespace.name"
K8S_POD_NAME: Final = "k8s.pod.name"
ENERGY_DEVICE: Final = "joulie.energy.device"
"""Attribute of joulie.pod.energy: ``gpu``, ``cpu_busy``, ``cpu_idle`` or ``platform`` (memory and the rest)."""
ENERGY_DEVICES: Final = ("gpu", "cpu_busy", "cpu_idle", "platform")
POD_ENERGY: Final = MetricSpec("joulie.pod.energy", "J", "counter",
                               "Energy attributed to a Pod from its node's meters, by device kind")
POD_ENERGY_SAVED: Final = MetricSpec("joulie.pod.energy.saved", "J", "counter",
                                     "Energy the power caps saved a Pod: the model's uncapped energy minus the metered")
POD_TIME_ADDED: Final = MetricSpec("joulie.pod.time.added", "s", "counter",
                                   "Running time the power caps added to a Pod, by the controller's model")
NODE_ENERGY_UNALLOCATED: Final = MetricSpec("joulie.node.energy.unallocated", "J", "counter",
                                            "A node's metered energy no Pod was billed (idle of unallocated devices)")

NODE_METRICS: Final = (HOST_ENERGY, HOST_POWER, COMPONENT_ENERGY, COMPONENT_POWER, HOST_AMBIENT_TEMPERATURE)
FACILITY_METRICS: Final = (
    FACILITY_AMBIENT,
    FACILITY_IT_POWER,
    FACILITY_COOLING_POWER,
    FACILITY_OTHER_POWER,
    FACILITY_POWER,
    FACILITY_PUE,
    ZONE_AMBIENT,
    RACK_POWER,
    RACK_INLET,
    RACK_PSU_LOAD,
)
GPU_METRICS: Final = (GPU_UTILIZATION, GPU_SM_CLOCK, GPU_SM_CLOCK_MAX, GPU_SM_ACTIVE, GPU_TENSOR_ACTIVE,
                      GPU_DRAM_ACTIVE, GPU_ALLOCATION)
"""Per-GPU signals a node exposes (issue 35). Not in ALL_METRICS until the agent and the simulator export
them: ALL_METRICS is what dashboards and alerts may query (joulie_simcluster.metricnames)."""
RECEIPT_METRICS: Final = (POD_ENERGY, POD_ENERGY_SAVED, POD_TIME_ADDED, NODE_ENERGY_UNALLOCATED)
"""The energy receipts' metrics, exported by the controller manager's metrics endpoint (ENERGY_RECEIPTS) under
these Prometheus names; the receipts dashboard (charts/joulie/dashboards/joulie-receipts.json) queries them."""
ALL_METRICS: Final = NODE_METRICS + FACILITY_METRICS + RECEIPT_METRICS
