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

import math
from dataclasses import dataclass
from typing import Any, Literal, cast

from joulie_api.generated.nodetwin import CapDecision, NodeTwin, NodeTwinSpec, NodeTwinStatus, PowerSpec
from joulie_api.generated.nodetwin import PowerStatus as PowerStatusModel
from joulie_api.names import LABEL_COOLING_ZONE, LABEL_RACK, PROFILE_ECO, PROFILE_PERFORMANCE, object_name_for_node
from joulie_controller.model import fsm, twin
from joulie_controller.model.caps import Caps, compute_caps
from joulie_controller.model.hardware import HardwareView, NodeInfo, from_labels
from joulie_controller.policies.plan import BoardLock, NodeCaps, PolicyInput, PolicyNode, PolicyPlan
from joulie_controller.policies.registry import plan
from joulie_controller.power import powerstate
from joulie_controller.power.forecast import forecast
from joulie_controller.power.powerstate import PowerDecision
from joulie_controller.power.warmpool import ANY_POOL, WarmNeed, warm_need
from joulie_controller.readings import plausibility
from joulie_controller.readings.values import SOURCE_IMPLAUSIBLE, SOURCE_PROMETHEUS
from joulie_controller.reconcile.estimates import realised, update_clock_logs, update_estimates
from joulie_controller.reconcile.nodetwin import (
    cap_decision,
    controllers_lock,
    controllers_locks,
    desired_spec,
    dump,
    measured_row,
    operators_lock,
    operators_locks,
    owned_spec,
    owned_status,
    power_status,
    previous_power,
    refresh_after_s,
    refresh_due,
    spec_unchanged,
    status_body,
    status_content,
    status_needs_write,
)
from joulie_controller.reconcile.snapshot import Memory, NodeOutcome, NodeWrite, Snapshot, TickResult
from joulie_controller.settings import Settings, selector_matches

WORK_AWARE_POLICY = "work_aware_v1"
"""POLICY_TYPE of the policy that reads TRUSTED_NAMESPACES (the guard follows it there)."""

Measured = dict[str, tuple[float | None, str]]
"""Each eligible node's measured power (None: no valid sample) and its source, this tick."""


_StatusParts = tuple[twin.TwinOutput, CapDecision | None, PowerStatusModel | None]
"""What a node's status is made of: the twin model's output, the policy's decision, the power state."""


@dataclass(frozen=True)
class _Staged:
    """One eligible node after the guard, with the caps of its post-guard profile."""

    node: NodeInfo
    guarded: fsm.GuardedProfile
    previous: fsm.State
    caps: Caps

def managed(node: NodeInfo, s: Settings) -> bool:
    """Selected by NODE_SELECTOR and not reserved: the nodes the power policy looks after."""
    if node.labels.get(s.nodes.reserved_label_key, "").strip().lower() == "true":
        return False
    return selector_matches(s.nodes.selector, node.labels)


def eligible(node: NodeInfo, s: Settings) -> bool:
    """Managed and schedulable: the nodes the cap policies plan."""
    return not node.unschedulable and managed(node, s)


def normalise_profile(value: str | None) -> str:
    return value if value in (PROFILE_PERFORMANCE, PROFILE_ECO) else "unknown"


def _hardware_view(node: NodeInfo, snap: Snapshot, s: Settings, memory: Memory) -> HardwareView:
    nhw = snap.hardware.get(node.name)
    if nhw is not None:
        return memory.reuse.hardware_view(node.name, nhw, node.allocatable_gpus)
    return from_labels(node, s.caps.gpu_product_label_keys)


def _measured(node: str, hw: HardwareView, snap: Snapshot, memory: Memory,
              log: list[str]) -> tuple[float | None, str]:
    m = snap.measurements.get(node)
    if m is None:
        return None, snap.no_data_source
    if m.power_w is None:
        return None, m.source if m.source != SOURCE_PROMETHEUS else snap.no_data_source
    if not math.isfinite(m.power_w) or m.power_w < 0:
        log.append(f"node {node}: measuredNodePowerW={m.power_w!r} rejected (not a finite non-negative number)")
        return None, snap.no_data_source
    refuted = plausibility.check(m.power_w, m.components_w, hw.budget().node_tdp_w)
    if refuted is not None:
        # Dropped, not clamped: a clamped forgery would still move the budget (issue 36).
        if node not in memory.implausible:
            log.append(f"node {node}: measured power dropped as implausible, node neutral until a plausible "
                       f"reading: {refuted.reason}")
        memory.implausible[node] = refuted.kind
        memory.trends.pop(node, None)  # neutral: no slope of its own in the budget's forecast either
        return None, SOURCE_IMPLAUSIBLE
    if memory.implausible.pop(node, None) is not None:
        log.append(f"node {node}: measured power plausible again ({m.power_w:.0f} W), in use")
    return m.power_w, m.source


def decide_power(snap: Snapshot, s: Settings, memory: Memory, log: list[str]) -> PowerDecision:
    """The power policy over every managed node (cordoned ones too); keeps its idle clock in `memory`."""
    if s.suspend.power_policy == powerstate.POLICY_NONE:
        return PowerDecision([], {}, {}, {}, [])
    nodes: list[powerstate.PowerNode] = []
    for n in sorted((n for n in snap.nodes if managed(n, s)), key=lambda n: n.name):
        status, desired = previous_power(snap.twins.get(object_name_for_node(n.name)))
        # The TDP ranks the nodes a resume may wake: a CPU Pod wakes a CPU node, not a GPU one.
        rank_w = _hardware_view(n, snap, s, memory).budget().node_tdp_w
        nodes.append(powerstate.PowerNode(n, status, desired, rank_w))
    hist, sus = memory.power_history, s.suspend
    pools = {n.info.name: powerstate.pool_of(n.info, s) for n in nodes}
    warm: dict[str, WarmNeed] = {}
    if sus.power_policy == powerstate.POLICY_FORECAST:
        hist.observe_pods(snap.now, snap.pods, pools, sus)
        since = hist.observed_since or snap.now
        horizon = {p: hist.boot_of(p, sus) for p in {*pools.values(), ANY_POOL}}
        fcs = {p: forecast(hist.arrivals, since, snap.now, max(60.0, h), sus).get(p) for p, h in horizon.items()}
        warm = {p: warm_need(p, fcs[p], horizon[p], s) for p in sorted(horizon)}
    boot_w = {n.info.name: n.rank_w for n in nodes}
    inp = powerstate.PowerInput(snap.now, nodes, snap.pods, snap.bmc, memory.idle_since, warm, hist.recent(snap.now),
                                hist.cycles(), hist.ramp_room(snap.now, boot_w, sus))
    decision = powerstate.decide(inp, s)
    hist.observe_power(snap.now, {n.info.name: n.status for n in nodes}, decision, pools, sus)
    hist.observe_ramp(snap.now, decision, boot_w, sus)
    memory.idle_since = decision.idle_since
    memory.warm = warm
    log.extend(decision.notes)
    return decision


def power_only_write(n: NodeInfo, snap: Snapshot, s: Settings, power: PowerDecision) -> NodeWrite | None:
    """A cordoned node's twin: spec.power and status.power, the rest left as it was. Refreshed (for
    the extender's staleness rule) while the node is cordoned for suspend; otherwise written only
    when its power fields change."""
    obj_name = object_name_for_node(n.name)
    existing = snap.twins.get(obj_name)
    power_spec = PowerSpec(state=power.desired[n.name])
    # A power-only write keeps the controller's clock locks as they are (its status still records them).
    mine, mine_locks = controllers_lock(existing), controllers_locks(existing)
    if existing is None:
        label = normalise_profile(n.labels.get(s.nodes.profile_label))
        spec = NodeTwinSpec(node_name=n.name, profile=cast(Literal["performance", "eco"],
                                                            label if label != "unknown" else PROFILE_ECO),
                            power=power_spec)
        base = NodeTwinStatus()
    else:
        spec = owned_spec(existing.spec, mine, mine_locks).model_copy(update={"power": power_spec})
        base = NodeTwinStatus.model_validate(owned_status(existing.status))
    spec_write = None if existing is not None and spec_unchanged(existing.spec, spec, mine, mine_locks) else spec
    status = base.model_copy(update={"power": power_status(power.status[n.name])})
    refresh_s = refresh_after_s(n.name, s.reconcile.status_refresh_s) if powerstate.tainted(n) else math.inf
    if spec_write is None and not status_needs_write(status, existing.status if existing else None, snap.now,
                                                     refresh_s):
        return None
    return NodeWrite(n.name, obj_name, spec_write, None, status.model_copy(update={"last_updated": snap.now}))


def reconcile(snap: Snapshot, s: Settings, memory: Memory) -> TickResult:
    """One tick: the power policy, then over the eligible nodes the policy's plan, the downgrade guard
    and the caps, the rack power they add up to, and each node's twin and writes."""
    log: list[str] = []
    power_plan = decide_power(snap, s, memory, log)
    managed_nodes = [n for n in snap.nodes if managed(n, s)]
    nodes = sorted((n for n in managed_nodes if not n.unschedulable), key=lambda n: n.name)  # eligible
    power_writes = _power_only_writes(snap, s, power_plan, {n.name for n in nodes})
    power_states: dict[str, str] = {k: v.state for k, v in power_plan.status.items()}
    # The energy receipts bill the Pods of every managed node, cordoned ones too: a Pod still runs (and
    # draws) on a node cordoned for drain or for suspend, and its node's meter still counts.
    memory.views = {n.name: _hardware_view(n, snap, s, memory) for n in managed_nodes}
    if not nodes:
        log.append("no eligible nodes (check NODE_SELECTOR and RESERVED_LABEL_KEY)")
        return TickResult(power_writes, [], None, log, power_plan.actions, power_states, memory.warm)

    perf_pods, guarded_pods = _performance_pods(snap, s)
    views = _hardware_views(nodes, memory, log)
    measured: Measured = {n.name: _measured(n.name, views[n.name], snap, memory, log) for n in nodes}
    for gone in [k for k in memory.implausible if k not in views]:
        del memory.implausible[gone]
    memory.job_estimates = update_estimates(memory.job_estimates, snap.pods, views, snap.gpu_samples,
                                            s.trusted_namespaces)
    since_s = (snap.now - memory.last_tick).total_seconds() if memory.last_tick is not None else s.reconcile.interval_s
    memory.clock_logs = update_clock_logs(memory.clock_logs, memory.job_estimates, snap.pods, views, snap.gpu_samples,
                                          since_s)
    memory.last_tick = snap.now
    decided = _plan(nodes, views, measured, sum(perf_pods.values()), snap, s, memory, log)
    # Guard and caps first: rack power needs every node's capped budget.
    staged = [_guard_and_caps(n, views[n.name], guarded_pods.get(n.name, 0), decided, snap, s, memory, log)
              for n in nodes]
    rack_power = _rack_power(snap, staged, views, measured)

    live = {n.name for n in nodes}
    for gone in [k for k in memory.trends if k not in live]:
        del memory.trends[gone]
    # The power policy reads the views of every managed node, cordoned and powered-off ones too.
    memory.reuse.forget(set(memory.views), set(snap.twins))
    writes: list[NodeWrite] = []
    outcomes: list[NodeOutcome] = []
    for st in staged:
        write, outcome = _node_tick(st, views[st.node.name], measured[st.node.name], rack_power, decided,
                                    power_plan, snap, s, memory, log)
        if write is not None:
            writes.append(write)
        outcomes.append(outcome)
    return TickResult(writes + power_writes, outcomes, decided, log, power_plan.actions, power_states, memory.warm,
                      dict(memory.implausible))


def _performance_pods(snap: Snapshot, s: Settings) -> tuple[dict[str, int], dict[str, int]]:
    """The running performance Pods per node, and those the downgrade guard holds a node in draining
    for. Under work_aware_v1, only trusted ones (TRUSTED_NAMESPACES): the guard keeps performance caps,
    so an untrusted Pod annotated performance held a node the budget lowered at 100 % for as long as it
    ran (issue 36)."""
    if s.policy.type != WORK_AWARE_POLICY:
        perf_pods = fsm.count_performance_pods(snap.pods)
        return perf_pods, perf_pods
    return fsm.count_performance_pods_of_tenants(snap.pods, s.trusted_namespaces)


def _power_only_writes(snap: Snapshot, s: Settings, power_plan: PowerDecision, cap_nodes: set[str]) -> list[NodeWrite]:
    """The twins of the nodes the power policy looks after that get no caps (cordoned ones)."""
    writes: list[NodeWrite] = []
    if not power_plan.status:
        return writes
    for n in sorted(snap.nodes, key=lambda n: n.name):
        if n.name in power_plan.status and n.name not in cap_nodes:
            write = power_only_write(n, snap, s, power_plan)
            if write is not None:
                writes.append(write)
    return writes


def _warn_once(memory: Memory, log: list[str], key: tuple[str, str], line: str) -> None:
    if key not in memory.warned:
        memory.warned.add(key)
        log.append(line)


def _hardware_views(nodes: list[NodeInfo], memory: Memory, log: list[str]) -> dict[str, HardwareView]:
    """Each eligible node's hardware, from the managed nodes' views this tick already built
    (``memory.views``); a NodeHardware problem is logged once per node."""
    views: dict[str, HardwareView] = {}
    for n in nodes:
        hw = memory.views[n.name]
        for problem in hw.problems:
            _warn_once(memory, log, (n.name, problem),
                       f"node {n.name}: NodeHardware {object_name_for_node(n.name)}: {problem}")
        views[n.name] = hw
    return views


def _plan(nodes: list[NodeInfo], views: dict[str, HardwareView], measured: Measured, performance_pods: int,
          snap: Snapshot, s: Settings, memory: Memory, log: list[str]) -> PolicyPlan:
    """The policy's plan over the eligible nodes; keeps what the budget's caps shed in `memory`."""
    policy_nodes = [PolicyNode(n.name, views[n.name], normalise_profile(n.labels.get(s.nodes.profile_label)), n)
                    for n in nodes]
    agent_lost, gpu_locks = _held_facts(nodes, snap, memory)
    inp = PolicyInput(
        policy_nodes, performance_pods, snap.now.timestamp(), s, snap.pods,
        measured_w={k: v for k, (v, _) in measured.items() if v is not None},
        trend_w_per_min={k: t.slope_w_per_min() for k, t in memory.trends.items()},
        trend_span_s={k: t.span_s() for k, t in memory.trends.items()},
        budget_shed_w=memory.budget_shed_w,
        job_estimates=memory.job_estimates,
        gpu_locks=gpu_locks,
        gpu_boards=snap.gpu_boards,
        agent_lost=agent_lost,
    )
    decided = plan(s.policy.type, policy_nodes, inp.performance_pods, inp.now_unix_s, s, inp)
    memory.budget_shed_w = decided.budget_shed_w
    log.extend(decided.notes)
    return decided


def _held_facts(nodes: list[NodeInfo], snap: Snapshot,
                memory: Memory) -> tuple[frozenset[str], dict[str, dict[int, float]]]:
    """From the NodeTwins, in one walk: the nodes whose liveness check last said agent-lost
    (``kube/liveness.py``), and the SM clock lock on each board that the controller set
    (``controllers_locks``), by node."""
    lost: set[str] = set()
    locks_by_node: dict[str, dict[int, float]] = {}
    for n in nodes:
        name = object_name_for_node(n.name)
        existing = snap.twins.get(name)
        if existing is None:
            continue
        facts = memory.reuse.twin_facts(name, existing)
        if facts.agent_lost:
            lost.add(n.name)
        if facts.locks:
            locks_by_node[n.name] = {b: lock.pct_of_max for lock in facts.locks for b in lock.gpus}
    return frozenset(lost), locks_by_node


def _guard_and_caps(n: NodeInfo, hw: HardwareView, performance_pods: int, decided: PolicyPlan, snap: Snapshot,
                    s: Settings, memory: Memory, log: list[str]) -> _Staged:
    """The downgrade guard on the plan's profile for `n`, and the caps of the guarded profile (a
    draining node keeps performance caps)."""
    name = object_name_for_node(n.name)
    existing = snap.twins.get(name)
    if existing is not None:
        previous = memory.reuse.twin_facts(name, existing).previous
    else:
        previous = fsm.assignment_state(normalise_profile(n.labels.get(s.nodes.profile_label)), False)
    desired = PROFILE_PERFORMANCE if n.name in decided.performance else PROFILE_ECO
    guarded = fsm.guard_downgrade(desired, previous, performance_pods)
    if guarded.draining:
        log.append(f"transition guarded node={n.name} desired=eco draining=true "
                   f"reason=running-performance-sensitive-pods count={guarded.performance_pods}")
    caps_profile = PROFILE_PERFORMANCE if guarded.draining else guarded.profile
    work = None if guarded.draining else decided.node_caps.get(n.name)
    eco_pct, work_caps = decided.eco_cap_pct.get(n.name), (work.cpu_pct, work.gpu_pct) if work is not None else None
    caps, warnings = memory.reuse.node_caps(n.name, (caps_profile, hw, s.caps, eco_pct, work_caps),
                                            lambda: compute_caps(caps_profile, hw, s, eco_pct, work_caps))
    for w in warnings:
        _warn_once(memory, log, (n.name, w), f"node {n.name}: {w}")
    return _Staged(n, guarded, previous, caps)


def _rack_power(snap: Snapshot, staged: list[_Staged], views: dict[str, HardwareView],
                measured: Measured) -> dict[str, float]:
    """Power per rack: the facility's rack meters, else the sum of what the rack's nodes draw (their
    capped budget when unmeasured)."""
    rack_power: dict[str, float] = dict(snap.facility.rack_power_w)
    if rack_power:
        return rack_power
    for st in staged:
        rack = st.node.labels.get(LABEL_RACK)
        if not rack:
            continue
        hw = views[st.node.name]
        power = measured[st.node.name][0]
        if power is None:
            power = hw.budget().capped_w(st.caps.cpu_pct_in_effect(hw), st.caps.gpu_pct_in_effect())
        rack_power[rack] = rack_power.get(rack, 0.0) + power
    return rack_power


def _ambient_c(n: NodeInfo, snap: Snapshot) -> float | None:
    """The node's inlet temperature, else its cooling zone's ambient, else the outdoor ambient."""
    ambient = snap.facility.node_inlet_c.get(n.name)
    if ambient is None:
        ambient = snap.facility.zone_ambient_c.get(n.labels.get(LABEL_COOLING_ZONE, ""))
    if ambient is None:
        ambient = snap.facility.outdoor_ambient_c
    return ambient


def _trend(n: NodeInfo, power_w: float | None, snap: Snapshot, memory: Memory) -> float:
    """The node's power trend with this tick's sample (0 without one)."""
    if power_w is None:
        return 0.0
    return memory.trends.setdefault(n.name, twin.PowerTrend()).add(snap.now, power_w)


def _locks_to_write(work: NodeCaps | None, draining: bool, existing: NodeTwin | None, node: str, memory: Memory,
                    log: list[str]) -> tuple[BoardLock, ...]:
    """The SM clock locks the controller writes: the policy's, unless the node is draining or an
    operator's lock is in spec, node-wide or per board (then the operator's stays, and the policy's are
    dropped with a note: the model would not know the clock the operator's lock leaves)."""
    if work is None or not work.gpu_locks or draining:
        return ()
    which = ("spec.gpu.clockLock" if operators_lock(existing)
             else "spec.gpu.clockLocks" if operators_locks(existing) else "")
    if which:
        _warn_once(memory, log, (node, "operator-lock"), f"node {node}: {which} is an operator's: "
                   f"kept, the policy's locks ({_described(work.gpu_locks)}) not written")
        return ()
    return work.gpu_locks


def _described(locks: tuple[BoardLock, ...]) -> str:
    return ", ".join(f"boards {','.join(map(str, b.gpus))} at {b.pct_of_max:g} %" for b in locks)


def _node_tick(st: _Staged, hw: HardwareView, measured: tuple[float | None, str], rack_power: dict[str, float],
               decided: PolicyPlan, power_plan: PowerDecision, snap: Snapshot, s: Settings, memory: Memory,
               log: list[str]) -> tuple[NodeWrite | None, NodeOutcome]:
    """One eligible node's twin, the writes it needs (none when nothing changed) and its outcome."""
    n, guarded, caps = st.node, st.guarded, st.caps
    obj_name = object_name_for_node(n.name)
    existing = snap.twins.get(obj_name)
    work = decided.node_caps.get(n.name)
    lock = _locks_to_write(work, guarded.draining, existing, n.name, memory, log)
    spec_inputs = (guarded.profile, guarded.draining, caps, decided.policy_name, power_plan.desired.get(n.name), lock)
    spec, spec_body = memory.reuse.desired_spec(n.name, spec_inputs, lambda: desired_spec(n.name, *spec_inputs))
    facts = memory.reuse.twin_facts(obj_name, existing) if existing is not None else None
    held_spec = (memory.reuse.held_spec(obj_name, existing, facts.lock_pct, facts.locks)
                 if existing is not None and facts is not None else None)
    spec_write = None if held_spec is not None and memory.reuse.spec_same(n.name, held_spec, spec_body) else spec
    label_write = None if n.labels.get(s.nodes.profile_label) == guarded.profile else guarded.profile

    power_w, source = measured
    trend = _trend(n, power_w, snap, memory)
    rack = n.labels.get(LABEL_RACK, "")
    inp = twin.TwinInput(
        hardware=hw.budget(),
        profile=guarded.profile,
        draining=guarded.draining,
        cpu_cap_pct=caps.cpu_pct_in_effect(hw),
        gpu_cap_pct=caps.gpu_pct_in_effect(),
        measured_node_power_w=power_w,
        power_trend_w_per_min=trend,
        ambient_c=_ambient_c(n, snap),
        rack_power_w=rack_power.get(rack, 0.0) if rack else 0.0,
        cluster_power_w=snap.facility.it_power_w,
    )
    decision_inputs = (
        (work, s.policy.slowdown_budget_pct, lock,
         {p.pod: r for p in work.pods
          if (r := realised(p.pod, memory.job_estimates, memory.clock_logs, hw)) is not None})
        if work is not None and not guarded.draining else None)
    node_power = power_plan.status.get(n.name)
    made: list[_StatusParts] = []

    def parts() -> _StatusParts:
        if not made:
            decision = cap_decision(*decision_inputs) if decision_inputs is not None else None
            made.append((twin.compute(inp), decision, power_status(node_power) if node_power is not None else None))
        return made[0]

    def body() -> dict[str, Any]:
        out, decision, power = parts()
        return status_body(out, power_w, source, trend, dump(decision) if decision is not None else None,
                           dump(power) if power is not None else None)

    held = existing.status if existing else None
    # Every input of the status is in one key or the other. The measured values (``measured_row``) follow
    # the moving ones and the fixed ones the model reads beside them (``twin.scores``); the rest of the
    # status follows the fixed ones alone, whether a power is measured (it is left out when not) included.
    fixed = (inp.hardware, inp.profile, inp.draining, inp.cpu_cap_pct, inp.gpu_cap_pct, power_w is None, source,
             decision_inputs, node_power)
    moving = (power_w, trend, inp.ambient_c, inp.rack_power_w, inp.cluster_power_w)
    changed = memory.reuse.status(n.name, fixed, moving, lambda: measured_row(power_w, trend, twin.scores(inp)), body,
                                  memory.reuse.held_status(obj_name, held), s.reconcile.status_deadband_pct)
    status_write = None
    if (spec_write is not None or changed
            or refresh_due(held, snap.now, refresh_after_s(n.name, s.reconcile.status_refresh_s))):
        out, decision, power = parts()
        status_write = status_content(out, power_w, source, trend, decision, power).model_copy(
            update={"last_updated": snap.now})
    write = NodeWrite(n.name, obj_name, spec_write, label_write, status_write) if (
        spec_write or label_write or status_write) else None
    outcome = NodeOutcome(
        node=n.name, profile=guarded.profile, draining=guarded.draining, previous_state=st.previous,
        state=guarded.state, transition=fsm.transition_result(st.previous, guarded.state),
        performance_pods=guarded.performance_pods, family=hw.family(n.name), caps=caps,
    )
    return write, outcome
