"""One reconcile tick over an in-memory snapshot: plan, guard, caps, twin, and the writes it needs.

Pure: the kube shell builds the `Snapshot` and carries out the `NodeWrite`s. Writes that would
not change anything are left out here, so an idle cluster costs no API writes:
- spec and label: only when they differ from what the cluster holds;
- status: when any value the controller owns changes (values rounded so noise does not count;
  measured values only when they move by more than STATUS_DEADBAND_PCT), or when `lastUpdated` is
  older than STATUS_REFRESH_INTERVAL (so the extender, which treats a twin older than 5 min as
  stale, keeps seeing fresh twins on idle nodes, and a small move is written within that interval).

Under POWER_POLICY=idle_suspend_v1 the power policy (powerstate.py) decides over every managed node,
cordoned ones included, and `TickResult.power` carries its actions (cordon, off, on, uncordon, fail)
for the shell or the benchmark to carry out. A node cordoned for suspend has no caps to plan (as any
cordoned node) but its twin is still written: spec.power and status.power, the rest as it was, so
the extender keeps a fresh twin that says the node is off.
"""

from __future__ import annotations

import copy
import math
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Final, Literal, cast

from joulie_api.generated.nodehardware import NodeHardware
from joulie_api.generated.nodetwin import (
    CapDecision,
    CPUCapSpec,
    DeviceCapDecision,
    EffectiveCapState,
    GPUCapSpec,
    GPUPowerCap,
    NodeTwin,
    NodeTwinSpec,
    NodeTwinStatus,
    PolicyRef,
    PowerMeasurement,
    PowerSpec,
    SchedulingSpec,
)
from joulie_api.generated.nodetwin import PowerStatus as PowerStatusModel
from joulie_api.names import (
    LABEL_COOLING_ZONE,
    LABEL_RACK,
    PROFILE_ECO,
    PROFILE_PERFORMANCE,
    TAINT_SUSPENDED,
    TAINT_SUSPENDED_EFFECT,
    object_name_for_node,
)
from joulie_controller import fsm, powerstate, twin
from joulie_controller.caps import Caps, compute_caps
from joulie_controller.hardware import HardwareView, NodeInfo, Taint, from_labels, from_node_hardware
from joulie_controller.policies import NodeCaps, PolicyInput, PolicyNode, PolicyPlan, plan
from joulie_controller.powerstate import BmcReading, PowerAction, PowerDecision
from joulie_controller.settings import Settings, selector_matches

SOURCE_PROMETHEUS = "prometheus"
SOURCE_NO_DATA = "prometheus-no-data"
SOURCE_STATIC = "static"

PowerSource = Literal[
    "kepler", "utilization", "static", "http", "http-error", "http-no-endpoint", "prometheus", "prometheus-no-data"
]


@dataclass(frozen=True)
class Measurement:
    power_w: float | None
    """Measured node power, W; None when there is no valid sample."""
    source: str = SOURCE_PROMETHEUS


@dataclass(frozen=True)
class Facility:
    """Facility readings (all optional): °C and W."""

    outdoor_ambient_c: float | None = None
    it_power_w: float = 0.0
    cooling_power_w: float | None = None
    zone_ambient_c: Mapping[str, float] = field(default_factory=dict)
    rack_power_w: Mapping[str, float] = field(default_factory=dict)
    node_inlet_c: Mapping[str, float] = field(default_factory=dict)


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


@dataclass
class Memory:
    """What the controller keeps between ticks (in memory only; a restart starts a fresh trend)."""

    trends: dict[str, twin.PowerTrend] = field(default_factory=dict)
    warned: set[tuple[str, str]] = field(default_factory=set)
    idle_since: dict[str, datetime] = field(default_factory=dict)
    """Since when each powered node has had no workload Pod (the power policy's suspend clock)."""
    budget_shed_w: float = 0.0
    """What the work-aware budget's caps hold back (``PolicyPlan.budget_shed_w``)."""


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

    @property
    def write_count(self) -> int:
        return sum((w.spec is not None) + (w.label is not None) + (w.status is not None) for w in self.writes)


def managed(node: NodeInfo, s: Settings) -> bool:
    """Selected by NODE_SELECTOR and not reserved: the nodes the power policy looks after."""
    if node.labels.get(s.reserved_label_key, "").strip().lower() == "true":
        return False
    return selector_matches(s.node_selector, node.labels)


def eligible(node: NodeInfo, s: Settings) -> bool:
    """Managed and schedulable: the nodes the cap policies plan."""
    return not node.unschedulable and managed(node, s)


def normalise_profile(value: str | None) -> str:
    return value if value in (PROFILE_PERFORMANCE, PROFILE_ECO) else "unknown"


def desired_spec(node: str, profile: str, draining: bool, caps: Caps, policy_name: str,
                 power: str | None = None) -> NodeTwinSpec:
    if caps.cpu.pct_of_max is not None:
        cpu = CPUCapSpec(package_power_cap_pct_of_max=caps.cpu.pct_of_max)
    elif caps.cpu.watts is not None and caps.cpu.watts >= 1:
        cpu = CPUCapSpec(package_power_cap_watts=caps.cpu.watts)
    else:
        cpu = CPUCapSpec()  # {}: the agent leaves the CPU cap as it is
    gpu = None
    if caps.gpu is not None:
        gpu = GPUCapSpec(power_cap=GPUPowerCap(
            scope="perGpu", cap_pct_of_max=caps.gpu.pct_of_max, cap_watts_per_gpu=caps.gpu.watts_per_gpu))
    return NodeTwinSpec(
        node_name=node,
        profile=cast(Literal["performance", "eco"], profile),
        cpu=cpu,
        gpu=gpu,
        policy=PolicyRef(name=policy_name),
        scheduling=SchedulingSpec(draining=draining),
        power=PowerSpec(state=cast(Literal["on", "off"], power)) if power is not None else None,
    )


def _dump(model: Any) -> dict[str, Any]:
    return cast(dict[str, Any], model.model_dump(mode="json", by_alias=True, exclude_none=True))


def _r(x: float, digits: int = 1) -> float:
    return round(x, digits) + 0.0  # + 0.0 turns -0.0 into 0.0


def cap_decision(work: NodeCaps, tau_pct: float) -> CapDecision:
    """NodeTwin status.capDecision: the work-aware policy's choice, explained. A device held at its
    reference limit carries only the reason (no prediction: nothing was traded)."""

    def device(capped: bool, pct: float, driver: str, slow: float, saving: float) -> dict[str, Any] | None:
        if not driver:
            return None  # the node has no such device group
        if not capped:
            return {"cap_pct_of_max": _r(pct), "driven_by": driver[:512]}
        return {"cap_pct_of_max": _r(pct), "driven_by": driver[:512],
                "predicted_slowdown_pct": _r(max(0.0, slow), 2), "predicted_energy_saving_pct": _r(saving, 2)}

    cpu = device(work.cpu_capped, work.cpu_pct, work.cpu_driver, work.cpu_slowdown_pct, work.cpu_saving_pct)
    gpu = device(work.gpu_capped, work.gpu_pct, work.gpu_driver, work.gpu_slowdown_pct, work.gpu_saving_pct)
    return CapDecision(
        reason=work.reason[:2048],
        slowdown_budget_pct=_r(tau_pct, 2),
        cpu=DeviceCapDecision(**cpu) if cpu is not None else None,
        gpu=DeviceCapDecision(**gpu) if gpu is not None else None,
    )


def power_status(status: powerstate.PowerStatus) -> PowerStatusModel:
    return PowerStatusModel(state=status.state, since=status.since, reason=status.reason or None,
                            boots=status.boots, error=status.error)


def previous_power(existing: NodeTwin | None) -> tuple[powerstate.PowerStatus, powerstate.DesiredPower]:
    """The node's power status and desired state as its NodeTwin holds them (on for a new node)."""
    spec_power = existing.spec.power if existing is not None else None
    desired: powerstate.DesiredPower = "off" if spec_power is not None and spec_power.state == "off" else "on"
    p = existing.status.power if existing is not None and existing.status is not None else None
    if p is None or p.state is None:
        return powerstate.PowerStatus(), desired
    return powerstate.PowerStatus(p.state, p.since, p.reason or "", p.boots or 0, p.error), desired


def status_content(out: twin.TwinOutput, measured_w: float | None, source: str, trend: float,
                   decision: CapDecision | None = None, power: PowerStatusModel | None = None) -> NodeTwinStatus:
    """The status the controller owns, without lastUpdated. Rounded: noise below it is not a change."""
    return NodeTwinStatus(
        cap_decision=decision,
        schedulable_class=out.schedulable_class,
        power_measurement=PowerMeasurement(
            source=cast(PowerSource, source),
            measured_node_power_w=_r(measured_w) if measured_w is not None else None,
            cpu_capped_power_w=_r(out.cpu_capped_w),
            gpu_capped_power_w=_r(out.gpu_capped_w),
            node_capped_power_w=_r(out.node_capped_w),
            cpu_tdp_w=_r(out.cpu_tdp_w),
            gpu_tdp_w=_r(out.gpu_tdp_w),
            node_tdp_w=_r(out.node_tdp_w),
            power_trend_w_per_min=_r(trend),
        ),
        predicted_power_headroom_score=_r(out.headroom_score),
        predicted_cooling_stress_score=_r(out.cooling_stress_score),
        predicted_psu_stress_score=_r(out.psu_stress_score),
        effective_cap_state=EffectiveCapState(cpu_pct=_r(out.cpu_pct), gpu_pct=_r(out.gpu_pct)),
        estimated_pue=_r(out.estimated_pue, 3),
        power=power,
    )


def owned_status(existing: NodeTwinStatus | None) -> dict[str, Any]:
    if existing is None:
        return {}
    body = _dump(existing)
    body.pop("controlStatus", None)
    body.pop("agent", None)  # owned by the liveness check (liveness.py), not by this write
    body.pop("lastUpdated", None)
    return body


def refresh_after_s(node: str, refresh_s: float) -> float:
    """The node's own refresh period: up to 25 % shorter than STATUS_REFRESH_INTERVAL, fixed per node
    name, so the refreshes of twins written together do not all land on one tick forever."""
    return refresh_s * (1.0 - 0.25 * (zlib.crc32(node.encode()) % 1000) / 1000.0)


# Measured status values and how each one's dead band is sized: (path in the status, "rel" for a
# share of the value itself, "power" for a share of the measured node power, "points" for the 0-100
# scores), and the least move that counts whatever the share.
_MEASURED: Final = (
    (("powerMeasurement", "measuredNodePowerW"), "rel", 0.0),
    (("powerMeasurement", "powerTrendWPerMin"), "power", 1.0),
    (("predictedPowerHeadroomScore",), "points", 0.0),
    (("predictedCoolingStressScore",), "points", 0.0),
    (("predictedPsuStressScore",), "points", 0.0),
    (("estimatedPUE",), "rel", 0.0),
)


def _get(body: dict[str, Any], path: tuple[str, ...]) -> Any:
    v: Any = body
    for k in path:
        if not isinstance(v, dict):
            return None
        v = v.get(k)
    return v


def measured_within(desired: dict[str, Any], existing: dict[str, Any], deadband_pct: float) -> dict[str, Any]:
    """``desired`` with each measured value that moved less than its dead band since ``existing``
    put back as ``existing`` holds it: comparing the two then tells a change worth writing."""
    if deadband_pct <= 0:
        return desired
    share = deadband_pct / 100.0
    power = _get(existing, ("powerMeasurement", "measuredNodePowerW"))
    out = desired
    for path, scale, least in _MEASURED:
        new, old = _get(desired, path), _get(existing, path)
        if not isinstance(new, (int, float)) or not isinstance(old, (int, float)) or new == old:
            continue
        if scale == "rel":
            band = share * max(abs(new), abs(old))
        elif scale == "power":
            band = share * abs(power) if isinstance(power, (int, float)) else 0.0
        else:
            band = share * 100.0
        if abs(new - old) > max(least, band):
            continue
        if out is desired:
            out = copy.deepcopy(desired)
        parent = out
        for k in path[:-1]:
            parent = parent[k]
        parent[path[-1]] = old
    return out


def status_needs_write(desired: NodeTwinStatus, existing: NodeTwinStatus | None, now: datetime,
                       refresh_after: float, deadband_pct: float = 0.0) -> bool:
    held = owned_status(existing)
    if measured_within(_dump(desired), held, deadband_pct) != held:
        return True
    last = existing.last_updated if existing is not None else None
    return last is None or (now - last).total_seconds() >= refresh_after


def _hardware_view(node: NodeInfo, snap: Snapshot, s: Settings) -> HardwareView:
    nhw = snap.hardware.get(node.name)
    if nhw is not None:
        return from_node_hardware(nhw, node.allocatable_gpus)
    return from_labels(node, s.gpu_product_label_keys)


def _measured(node: str, snap: Snapshot, log: list[str]) -> tuple[float | None, str]:
    m = snap.measurements.get(node)
    if m is None:
        return None, snap.no_data_source
    if m.power_w is None:
        return None, m.source if m.source != SOURCE_PROMETHEUS else snap.no_data_source
    if not math.isfinite(m.power_w) or m.power_w < 0:
        log.append(f"node {node}: measuredNodePowerW={m.power_w!r} rejected (not a finite non-negative number)")
        return None, snap.no_data_source
    return m.power_w, m.source


def decide_power(snap: Snapshot, s: Settings, memory: Memory, log: list[str]) -> PowerDecision:
    """The power policy over every managed node (cordoned ones too); keeps its idle clock in `memory`."""
    if s.power_policy == powerstate.POLICY_NONE:
        return PowerDecision([], {}, {}, {}, [])
    nodes: list[powerstate.PowerNode] = []
    for n in sorted((n for n in snap.nodes if managed(n, s)), key=lambda n: n.name):
        status, desired = previous_power(snap.twins.get(object_name_for_node(n.name)))
        # The TDP ranks the nodes a resume may wake: a CPU Pod wakes a CPU node, not a GPU one.
        rank_w = _hardware_view(n, snap, s).budget().node_tdp_w
        nodes.append(powerstate.PowerNode(n, status, desired, rank_w))
    decision = powerstate.decide(powerstate.PowerInput(snap.now, nodes, snap.pods, snap.bmc, memory.idle_since), s)
    memory.idle_since = decision.idle_since
    log.extend(decision.notes)
    return decision


def power_only_write(n: NodeInfo, snap: Snapshot, s: Settings, power: PowerDecision) -> NodeWrite | None:
    """A cordoned node's twin: spec.power and status.power, the rest left as it was. Refreshed (for
    the extender's staleness rule) while the node is cordoned for suspend; otherwise written only
    when its power fields change."""
    obj_name = object_name_for_node(n.name)
    existing = snap.twins.get(obj_name)
    power_spec = PowerSpec(state=power.desired[n.name])
    if existing is None:
        label = normalise_profile(n.labels.get(s.power_profile_label))
        spec = NodeTwinSpec(node_name=n.name, profile=cast(Literal["performance", "eco"],
                                                            label if label != "unknown" else PROFILE_ECO),
                            power=power_spec)
        base = NodeTwinStatus()
    else:
        spec = existing.spec.model_copy(update={"power": power_spec})
        base = NodeTwinStatus.model_validate(owned_status(existing.status))
    spec_write = None if existing is not None and _dump(existing.spec) == _dump(spec) else spec
    status = base.model_copy(update={"power": power_status(power.status[n.name])})
    refresh_s = refresh_after_s(n.name, s.status_refresh_s) if powerstate.tainted(n) else math.inf
    if spec_write is None and not status_needs_write(status, existing.status if existing else None, snap.now,
                                                     refresh_s):
        return None
    return NodeWrite(n.name, obj_name, spec_write, None, status.model_copy(update={"last_updated": snap.now}))


def reconcile(snap: Snapshot, s: Settings, memory: Memory) -> TickResult:
    log: list[str] = []
    power_plan = decide_power(snap, s, memory, log)
    nodes = sorted((n for n in snap.nodes if eligible(n, s)), key=lambda n: n.name)
    power_writes: list[NodeWrite] = []
    if power_plan.status:
        cap_nodes = {n.name for n in nodes}
        for n in sorted(snap.nodes, key=lambda n: n.name):
            if n.name in power_plan.status and n.name not in cap_nodes:
                power_write = power_only_write(n, snap, s, power_plan)
                if power_write is not None:
                    power_writes.append(power_write)
    if not nodes:
        log.append("no eligible nodes (check NODE_SELECTOR and RESERVED_LABEL_KEY)")
        return TickResult(power_writes, [], None, log, power_plan.actions,
                          {k: v.state for k, v in power_plan.status.items()})

    perf_pods = fsm.count_performance_pods(snap.pods)
    views: dict[str, HardwareView] = {}
    policy_nodes: list[PolicyNode] = []
    for n in nodes:
        hw = _hardware_view(n, snap, s)
        for problem in hw.problems:
            key = (n.name, problem)
            if key not in memory.warned:
                memory.warned.add(key)
                log.append(f"node {n.name}: NodeHardware {object_name_for_node(n.name)}: {problem}")
        views[n.name] = hw
        policy_nodes.append(PolicyNode(n.name, hw, normalise_profile(n.labels.get(s.power_profile_label))))

    measured: dict[str, tuple[float | None, str]] = {n.name: _measured(n.name, snap, log) for n in nodes}
    inp = PolicyInput(
        policy_nodes, sum(perf_pods.values()), snap.now.timestamp(), s, snap.pods,
        measured_w={k: v for k, (v, _) in measured.items() if v is not None},
        trend_w_per_min={k: t.slope_w_per_min() for k, t in memory.trends.items()},
        budget_shed_w=memory.budget_shed_w,
    )
    decided = plan(s.policy_type, policy_nodes, inp.performance_pods, inp.now_unix_s, s, inp)
    memory.budget_shed_w = decided.budget_shed_w
    log.extend(decided.notes)

    # Guard and caps first: rack power needs every node's capped budget.
    staged: list[tuple[NodeInfo, fsm.GuardedProfile, fsm.State, Caps]] = []
    for n in nodes:
        existing = snap.twins.get(object_name_for_node(n.name))
        if existing is not None:
            previous = fsm.assignment_state(existing.spec.profile,
                                            bool(existing.spec.scheduling and existing.spec.scheduling.draining))
        else:
            previous = fsm.assignment_state(normalise_profile(n.labels.get(s.power_profile_label)), False)
        desired = PROFILE_PERFORMANCE if n.name in decided.performance else PROFILE_ECO
        guarded = fsm.guard_downgrade(desired, previous, perf_pods.get(n.name, 0))
        if guarded.draining:
            log.append(f"transition guarded node={n.name} desired=eco draining=true "
                       f"reason=running-performance-sensitive-pods count={guarded.performance_pods}")
        caps_profile = PROFILE_PERFORMANCE if guarded.draining else guarded.profile
        work = None if guarded.draining else decided.node_caps.get(n.name)
        caps, warnings = compute_caps(caps_profile, views[n.name], s, decided.eco_cap_pct.get(n.name),
                                      (work.cpu_pct, work.gpu_pct) if work is not None else None)
        for w in warnings:
            key = (n.name, w)
            if key not in memory.warned:
                memory.warned.add(key)
                log.append(f"node {n.name}: {w}")
        staged.append((n, guarded, previous, caps))

    rack_power: dict[str, float] = dict(snap.facility.rack_power_w)
    if not rack_power:
        # No facility rack meter: sum what the rack's nodes draw (their capped budget when unmeasured).
        for n, _, _, caps in staged:
            rack = n.labels.get(LABEL_RACK)
            if not rack:
                continue
            hw = views[n.name]
            power = measured[n.name][0]
            if power is None:
                power = hw.budget().capped_w(caps.cpu_pct_in_effect(hw), caps.gpu_pct_in_effect())
            rack_power[rack] = rack_power.get(rack, 0.0) + power

    writes: list[NodeWrite] = []
    outcomes: list[NodeOutcome] = []
    live = {n.name for n in nodes}
    for gone in [k for k in memory.trends if k not in live]:
        del memory.trends[gone]
    for n, guarded, previous, caps in staged:
        hw = views[n.name]
        obj_name = object_name_for_node(n.name)
        existing = snap.twins.get(obj_name)
        spec = desired_spec(n.name, guarded.profile, guarded.draining, caps, decided.policy_name,
                            power_plan.desired.get(n.name))
        spec_write = None if existing is not None and _dump(existing.spec) == _dump(spec) else spec
        label_write = None if n.labels.get(s.power_profile_label) == guarded.profile else guarded.profile

        power_w, source = measured[n.name]
        trend = 0.0
        if power_w is not None:
            trend = memory.trends.setdefault(n.name, twin.PowerTrend()).add(snap.now, power_w)
            if twin.implausible_power(power_w, hw.budget().node_tdp_w) and (n.name, "implausible") not in memory.warned:
                memory.warned.add((n.name, "implausible"))
                log.append(f"node {n.name}: measuredNodePowerW={power_w:.0f} is more than twice nodeTdpW="
                           f"{hw.budget().node_tdp_w:.0f}; is the query a joules counter without rate()?")
        ambient = snap.facility.node_inlet_c.get(n.name)
        if ambient is None:
            ambient = snap.facility.zone_ambient_c.get(n.labels.get(LABEL_COOLING_ZONE, ""))
        if ambient is None:
            ambient = snap.facility.outdoor_ambient_c
        rack = n.labels.get(LABEL_RACK, "")
        out = twin.compute(twin.TwinInput(
            hardware=hw.budget(),
            profile=guarded.profile,
            draining=guarded.draining,
            cpu_cap_pct=caps.cpu_pct_in_effect(hw),
            gpu_cap_pct=caps.gpu_pct_in_effect(),
            measured_node_power_w=power_w,
            power_trend_w_per_min=trend,
            ambient_c=ambient,
            rack_power_w=rack_power.get(rack, 0.0) if rack else 0.0,
            cluster_power_w=snap.facility.it_power_w,
        ))
        work = decided.node_caps.get(n.name)
        decision = cap_decision(work, s.work_aware_slowdown_pct) if work is not None and not guarded.draining else None
        node_power = power_plan.status.get(n.name)
        status = status_content(out, power_w, source, trend, decision,
                                power_status(node_power) if node_power is not None else None)
        status_write = None
        if spec_write is not None or status_needs_write(
                status, existing.status if existing else None, snap.now, refresh_after_s(n.name, s.status_refresh_s),
                s.status_deadband_pct):
            status_write = status.model_copy(update={"last_updated": snap.now})
        if spec_write or label_write or status_write:
            writes.append(NodeWrite(n.name, obj_name, spec_write, label_write, status_write))
        outcomes.append(NodeOutcome(
            node=n.name, profile=guarded.profile, draining=guarded.draining, previous_state=previous,
            state=guarded.state, transition=fsm.transition_result(previous, guarded.state),
            performance_pods=guarded.performance_pods, family=hw.family(n.name), caps=caps,
        ))
    return TickResult(writes + power_writes, outcomes, decided, log, power_plan.actions,
                      {k: v.state for k, v in power_plan.status.items()})


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
                    snap.no_data_source, snap.bmc)


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
