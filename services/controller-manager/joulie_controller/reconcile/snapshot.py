"""What one reconcile tick reads (``Snapshot``), keeps between ticks (``Memory``) and returns
(``TickResult``: the ``NodeWrite``s, each node's ``NodeOutcome``, the power actions), and the
snapshot as the cluster would hold it after a tick's writes (``apply_in_memory``, for tests and the
benchmark). Pure data."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from joulie_api.generated.nodehardware import NodeHardware
from joulie_api.generated.nodetwin import NodeTwin, NodeTwinSpec, NodeTwinStatus
from joulie_api.names import TAINT_SUSPENDED, TAINT_SUSPENDED_EFFECT
from joulie_controller.model import fsm, twin
from joulie_controller.model.caps import Caps
from joulie_controller.model.hardware import HardwareView, NodeInfo, Taint
from joulie_controller.model.jobestimate import GpuSample, JobEstimate
from joulie_controller.model.realised import ClockLog
from joulie_controller.policies.plan import PolicyPlan
from joulie_controller.power.history import PowerHistory
from joulie_controller.power.powerstate import BmcReading, PowerAction
from joulie_controller.power.warmpool import WarmNeed
from joulie_controller.readings.values import SOURCE_NO_DATA, Facility, Measurement
from joulie_controller.reconcile.reuse import Reuse


@dataclass(frozen=True)
class Snapshot:
    now: datetime
    nodes: Sequence[NodeInfo]
    pods: Sequence[fsm.PodInfo]
    hardware: Mapping[str, NodeHardware]
    """NodeHardware by spec.nodeName."""
    twins: Mapping[str, NodeTwin]
    """NodeTwin by object name."""
    measurements: Mapping[str, Measurement]
    """By node name; a node absent here has no data."""
    facility: Facility = field(default_factory=Facility)
    no_data_source: str = SOURCE_NO_DATA
    bmc: Mapping[str, BmcReading] = field(default_factory=dict)
    """What each node's BMC read this tick, by node name; a node absent here has no BMC (never suspended)."""
    gpu_samples: Mapping[str, Sequence[GpuSample]] = field(default_factory=dict)
    """Each running GPU Pod's per-GPU samples this tick, by "namespace/name" (a Pod absent here keeps
    its estimate where it was)."""
    gpu_boards: Mapping[tuple[str, str], tuple[int, ...]] = field(default_factory=dict)
    """The board indices each running GPU Pod holds (``hw.gpu.allocation``), by (node, "namespace/name"):
    the work-aware policy locks each group of boards apart (a Pod absent here under its own node: one
    lock for its node)."""


@dataclass
class Memory:
    """What the controller keeps between ticks (in memory only; a restart starts a fresh trend)."""

    trends: dict[str, twin.PowerTrend] = field(default_factory=dict)
    warned: set[tuple[str, str]] = field(default_factory=set)
    idle_since: dict[str, datetime] = field(default_factory=dict)
    """Since when each powered node has had no workload Pod (the power policy's suspend clock)."""
    budget_shed_w: float = 0.0
    """What the work-aware budget's caps hold back (``PolicyPlan.budget_shed_w``)."""
    reuse: Reuse = field(default_factory=Reuse)
    """Values derived from unchanged objects, kept for the next tick (``reconcile.reuse``)."""
    power_history: PowerHistory = field(default_factory=PowerHistory)
    """The power policy's arrivals, timed resumes and power-offs (forecast, warm pool, wear levelling)."""
    warm: dict[str, WarmNeed] = field(default_factory=dict)
    """The last tick's warm-pool needs (forecast_suspend_v1), for ``TickResult.warm``."""
    job_estimates: dict[str, JobEstimate] = field(default_factory=dict)
    """Each running GPU Pod's estimate by "namespace/name" (dropped when the Pod is gone)."""
    clock_logs: dict[str, ClockLog] = field(default_factory=dict)
    """Each such Pod's seconds at each measured SM clock ratio (its realised slowdown; dropped with it)."""
    last_tick: datetime | None = None
    """When the last tick's snapshot was taken (the clock logs' interval)."""
    implausible: dict[str, str] = field(default_factory=dict)
    """Eligible nodes whose measured power was last refuted (``readings.plausibility``), with the
    kind of refutation: logged when a node enters and when it leaves, not every tick."""
    views: dict[str, HardwareView] = field(default_factory=dict)
    """The last tick's hardware of each managed node, cordoned ones included (the energy receipts' idle draws
    and limits)."""


@dataclass(frozen=True)
class NodeWrite:
    node: str
    object_name: str
    spec: NodeTwinSpec | None
    """Desired spec when it differs from the cluster's, else None."""
    label: str | None
    """Profile label to set when it differs, else None."""
    status: NodeTwinStatus | None
    """Status to apply (never controlStatus), else None."""


@dataclass(frozen=True)
class NodeOutcome:
    node: str
    profile: str
    draining: bool
    previous_state: fsm.State
    state: fsm.State
    transition: str | None
    performance_pods: int
    family: str
    caps: Caps


@dataclass(frozen=True)
class TickResult:
    writes: list[NodeWrite]
    outcomes: list[NodeOutcome]
    plan: PolicyPlan | None
    log: list[str]
    """Human-readable problems and decisions, one line each, naming the node and field."""
    power: list[PowerAction] = field(default_factory=list)
    """The power policy's actions, in order (empty under POWER_POLICY=none)."""
    power_states: dict[str, str] = field(default_factory=dict)
    """Each managed node's power state after the tick (empty under POWER_POLICY=none)."""
    warm: dict[str, WarmNeed] = field(default_factory=dict)
    """forecast_suspend_v1: each pool's warm-pool need this tick, with its forecast (the metrics)."""
    implausible: dict[str, str] = field(default_factory=dict)
    """Nodes whose measured power was dropped as implausible this tick, with the kind (the metrics)."""

    @property
    def write_count(self) -> int:
        return sum((w.spec is not None) + (w.label is not None) + (w.status is not None) for w in self.writes)


def apply_in_memory(snap: Snapshot, result: TickResult, profile_label: str) -> Snapshot:
    """The snapshot as the cluster would hold it after `result`'s writes (for tests and the benchmark)."""
    twins = dict(snap.twins)
    labels_by_node = {w.node: w.label for w in result.writes if w.label is not None}
    for w in result.writes:
        current = twins.get(w.object_name)
        spec = w.spec if w.spec is not None else (current.spec if current is not None else None)
        if spec is None:
            continue
        status = current.status if current is not None else None
        if w.status is not None:
            control = status.control_status if status is not None else None
            status = w.status.model_copy(update={"control_status": control})
        twins[w.object_name] = NodeTwin(metadata={"name": w.object_name}, spec=spec, status=status)
    nodes = [
        replace(n, labels={**n.labels, profile_label: labels_by_node[n.name]}) if n.name in labels_by_node else n
        for n in snap.nodes
    ]
    nodes = [apply_power_action(n, result.power) for n in nodes]
    return Snapshot(snap.now, nodes, snap.pods, snap.hardware, twins, snap.measurements, snap.facility,
                    snap.no_data_source, snap.bmc, snap.gpu_samples, snap.gpu_boards)


SUSPENDED_TAINT = Taint(TAINT_SUSPENDED, "", TAINT_SUSPENDED_EFFECT)


def apply_power_action(node: NodeInfo, actions: Sequence[PowerAction]) -> NodeInfo:
    """The Node after the cordons and uncordons among `actions` (what the shell does through the
    API; the benchmark uses it, and carries out on/off on its emulated BMCs itself)."""
    for a in actions:
        if a.node != node.name:
            continue
        others = tuple(t for t in node.taints if t.key != TAINT_SUSPENDED)
        if a.action == "cordon":
            node = replace(node, unschedulable=True, taints=(*others, SUSPENDED_TAINT))
        elif a.action == "uncordon":
            node = replace(node, unschedulable=False, taints=others)
    return node
