"""One reconcile tick over an in-memory cluster: what gets written, and what does not."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from joulie_api.generated.nodehardware import NodeHardware
from joulie_api.generated.nodetwin import GPUCapSpec
from joulie_controller.model.fsm import PodInfo, State
from joulie_controller.model.hardware import NodeInfo
from joulie_controller.power.powerstate import BmcReading
from joulie_controller.readings.values import Facility, Measurement
from joulie_controller.reconcile.snapshot import Memory, Snapshot, TickResult, apply_in_memory
from joulie_controller.reconcile.tick import reconcile
from joulie_controller.settings import PolicySettings, ReconcileSettings, Settings, SuspendSettings

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
PROFILE = "joulie.io/power-profile"
MANAGED = {"joulie.io/managed": "true"}


def nhw(node: str, max_w: float = 300, sockets: int = 2) -> NodeHardware:
    return NodeHardware.model_validate({
        "spec": {"nodeName": node},
        "status": {"cpu": {"model": "epyc", "sockets": sockets, "capRange": {"minWattsPerSocket": 100,
                                                                            "maxWattsPerSocket": max_w}}},
    })


def cluster(n: int = 4, **labels: str) -> Snapshot:
    nodes = [NodeInfo(f"node-{i}", {**MANAGED, **labels}) for i in range(n)]
    return Snapshot(now=T0, nodes=nodes, pods=[], hardware={x.name: nhw(x.name) for x in nodes}, twins={},
                    measurements={})


def tick(snap: Snapshot, s: Settings, mem: Memory) -> tuple[TickResult, Snapshot]:
    result = reconcile(snap, s, mem)
    return result, apply_in_memory(snap, result, s.nodes.profile_label)


def perf_pod(node: str, name: str = "trainer") -> PodInfo:
    return PodInfo("default", name, node_name=node, node_selector={PROFILE: "performance"})


def test_first_tick_writes_spec_label_and_status_then_nothing() -> None:
    s, mem = Settings(policy=PolicySettings(static_hp_frac=0.5)), Memory()
    first, snap = tick(cluster(), s, mem)
    assert first.write_count == 12
    profiles = sorted(w.label or "" for w in first.writes)
    assert profiles == ["eco", "eco", "performance", "performance"]
    for i in range(10):
        again, snap = tick(replace(snap, now=T0 + timedelta(seconds=8 * (i + 1))), s, mem)  # inside 90 s
        assert again.write_count == 0, again.writes


def test_an_operators_gpu_clock_lock_is_no_reason_to_write_and_is_never_taken_over() -> None:
    s, mem = Settings(policy=PolicySettings(static_hp_frac=0.5)), Memory()
    _, snap = tick(cluster(2), s, mem)
    twin = snap.twins["node-0"]
    locked = twin.model_copy(update={"spec": twin.spec.model_copy(update={
        "gpu": GPUCapSpec.model_validate({"clockLock": {"pctOfMax": 70}})})})
    snap = replace(snap, twins={**snap.twins, "node-0": locked}, now=T0 + timedelta(seconds=8))
    again, _ = tick(snap, s, mem)
    assert again.write_count == 0, again.writes


def test_unchanged_status_is_refreshed_before_the_extender_calls_it_stale() -> None:
    s, mem = Settings(reconcile=ReconcileSettings(status_refresh_s=120)), Memory()
    _, snap = tick(cluster(2), s, mem)
    # Each node refreshes after 75-100 % of the interval (spread by name), never later.
    quiet, snap = tick(replace(snap, now=T0 + timedelta(seconds=89)), s, mem)
    assert quiet.write_count == 0
    refresh, snap = tick(replace(snap, now=T0 + timedelta(seconds=121)), s, mem)
    assert [w.spec is None and w.label is None and w.status is not None for w in refresh.writes] == [True, True]
    twin = snap.twins["node-0"]
    assert twin.status is not None and twin.status.last_updated == T0 + timedelta(seconds=121)


def test_status_is_written_as_soon_as_a_value_changes() -> None:
    s, mem = Settings(), Memory()
    _, snap = tick(cluster(2), s, mem)
    measured = replace(snap, now=T0 + timedelta(seconds=5), measurements={"node-0": Measurement(300.0)})
    result, snap = tick(measured, s, mem)
    assert [w.node for w in result.writes] == ["node-0"]
    status = snap.twins["node-0"].status
    assert status is not None and status.power_measurement is not None
    assert status.power_measurement.source == "prometheus"
    assert status.power_measurement.measured_node_power_w == 300
    assert status.control_status is None


def test_no_data_is_reported_and_neutral() -> None:
    result, snap = tick(cluster(1), Settings(), Memory())
    status = snap.twins["node-0"].status
    assert status is not None and status.power_measurement is not None
    assert status.power_measurement.source == "prometheus-no-data"
    assert status.power_measurement.measured_node_power_w is None
    assert (status.predicted_power_headroom_score, status.predicted_cooling_stress_score) == (50, 50)
    assert status.power_measurement.node_tdp_w == 600


@pytest.mark.parametrize("bad", [float("nan"), -40.0])
def test_garbage_samples_are_logged_with_node_and_field(bad: float) -> None:
    snap = replace(cluster(1), measurements={"node-0": Measurement(bad)})
    result, after = tick(snap, Settings(), Memory())
    assert any("node-0" in line and "measuredNodePowerW" in line for line in result.log)
    status = after.twins["node-0"].status
    assert status is not None and status.power_measurement is not None
    assert status.power_measurement.source == "prometheus-no-data"


def test_downgrade_guard_holds_while_a_performance_pod_runs() -> None:
    s, mem = Settings(policy=PolicySettings(static_hp_frac=1.0)), Memory()
    _, snap = tick(cluster(2), s, mem)
    assert all(t.spec.profile == "performance" for t in snap.twins.values())
    s_eco = Settings(policy=PolicySettings(static_hp_frac=0.0))  # floor: one performance node (node-0 by name)
    snap = replace(snap, pods=[perf_pod("node-1")])
    result, snap = tick(snap, s_eco, mem)
    twin = snap.twins["node-1"]
    assert twin.spec.profile == "eco" and twin.spec.scheduling is not None and twin.spec.scheduling.draining
    assert twin.spec.cpu is not None and twin.spec.cpu.package_power_cap_pct_of_max == 100  # still performance caps
    assert twin.status is not None and twin.status.schedulable_class == "draining"
    outcome = next(o for o in result.outcomes if o.node == "node-1")
    assert (outcome.previous_state, outcome.state, outcome.transition) == (
        State.ACTIVE_PERFORMANCE, State.DRAINING_PERFORMANCE, "deferred")
    assert any("transition guarded node=node-1" in line for line in result.log)
    # Still running: nothing changes, nothing counted again.
    held, snap = tick(replace(snap, now=T0 + timedelta(seconds=30)), s_eco, mem)
    assert held.write_count == 0
    assert next(o for o in held.outcomes if o.node == "node-1").transition is None
    # Pod finished: the node becomes eco with eco caps.
    done, snap = tick(replace(snap, now=T0 + timedelta(seconds=60), pods=[]), s_eco, mem)
    twin = snap.twins["node-1"]
    assert twin.spec.scheduling is not None and not twin.spec.scheduling.draining
    assert twin.spec.cpu is not None and twin.spec.cpu.package_power_cap_pct_of_max == 60
    assert next(o for o in done.outcomes if o.node == "node-1").transition == "applied"


def test_ineligible_nodes_are_left_alone() -> None:
    nodes = [NodeInfo("a", MANAGED), NodeInfo("b", {**MANAGED, "joulie.io/reserved": "true"}),
             NodeInfo("c", {}), NodeInfo("d", MANAGED, unschedulable=True)]
    result = reconcile(Snapshot(T0, nodes, [], {}, {}, {}), Settings(), Memory())
    assert [w.node for w in result.writes] == ["a"]


def test_no_eligible_node_writes_nothing_and_says_why() -> None:
    result = reconcile(Snapshot(T0, [NodeInfo("c", {})], [], {}, {}, {}), Settings(), Memory())
    assert result.write_count == 0 and "NODE_SELECTOR" in result.log[0]


def test_object_names_are_sanitised_and_spec_keeps_the_raw_name() -> None:
    snap = Snapshot(T0, [NodeInfo("n2.atos", MANAGED)], [], {}, {}, {})
    result, after = tick(snap, Settings(), Memory())
    assert result.writes[0].object_name == "n2-atos"
    assert after.twins["n2-atos"].spec.node_name == "n2.atos"


def test_psu_stress_per_rack_and_ambient_per_zone() -> None:
    snap = cluster(2)
    nodes = [replace(snap.nodes[0], labels={**MANAGED, "joulie.io/rack": "r1", "joulie.io/cooling-zone": "hot"}),
             replace(snap.nodes[1], labels={**MANAGED, "joulie.io/rack": "r1"})]
    snap = replace(snap, nodes=nodes, measurements={"node-0": Measurement(300.0), "node-1": Measurement(200.0)},
                   facility=Facility(outdoor_ambient_c=20.0, zone_ambient_c={"hot": 45.0}))
    _, after = tick(snap, Settings(policy=PolicySettings(static_hp_frac=1.0)), Memory())
    s0, s1 = after.twins["node-0"].status, after.twins["node-1"].status
    assert s0 is not None and s1 is not None
    assert s0.predicted_psu_stress_score == s1.predicted_psu_stress_score == 1.0  # 500 W of 50 kW
    assert s0.predicted_cooling_stress_score == 100.0  # 300/600 at 45 °C (x2)
    assert s1.predicted_cooling_stress_score == pytest.approx(33.3)  # 200/600 at 20 °C


def test_trend_is_reported_in_watts_per_minute() -> None:
    s, mem = Settings(), Memory()
    snap = replace(cluster(1), measurements={"node-0": Measurement(100.0)})
    _, snap = tick(snap, s, mem)
    _, snap = tick(replace(snap, now=T0 + timedelta(minutes=2), measurements={"node-0": Measurement(300.0)}), s, mem)
    status = snap.twins["node-0"].status
    assert status is not None and status.power_measurement is not None
    assert status.power_measurement.power_trend_w_per_min == 100


def test_queue_aware_follows_performance_demand() -> None:
    s, mem = Settings(policy=PolicySettings(type="queue_aware_v1", queue_hp_base_frac=0.0,
                                            queue_perf_per_hp_node=2)), Memory()
    _, snap = tick(cluster(4), s, mem)
    assert sum(t.spec.profile == "performance" for t in snap.twins.values()) == 1
    pods = [perf_pod("node-0", f"p{i}") for i in range(5)]
    _, snap = tick(replace(snap, pods=pods), s, mem)
    assert sum(t.spec.profile == "performance" for t in snap.twins.values()) == 3


def test_malformed_hardware_is_logged_once_with_the_field() -> None:
    bad = NodeHardware.model_validate({"spec": {"nodeName": "node-0"}, "status": {"cpu": {
        "model": "epyc", "sockets": 2, "capRange": {"minWattsPerSocket": 400, "maxWattsPerSocket": 300}}}})
    snap = replace(cluster(1), hardware={"node-0": bad})
    mem = Memory()
    first = reconcile(snap, Settings(), mem)
    lines = [line for line in first.log if "minWattsPerSocket" in line]
    assert lines and "node-0" in lines[0] and "NodeHardware node-0" in lines[0]
    assert not [line for line in reconcile(snap, Settings(), mem).log if "minWattsPerSocket" in line]


def test_work_aware_caps_follow_the_pods_and_the_twin_explains_why() -> None:
    s = Settings(policy=PolicySettings(type="work_aware_v1", queue_hp_base_frac=0.0), trusted_namespaces=("default",))
    mem = Memory()
    snap = cluster(3)
    mem_pod = PodInfo("default", "stream", node_name="node-2", labels={"joulie.io/workload-kind": "cpu-memory"},
                      cpu_request=60.0)
    result, after = tick(replace(snap, pods=[mem_pod], hardware={
        n.name: NodeHardware.model_validate({"spec": {"nodeName": n.name}, "status": {"cpu": {
            "model": "xeon", "sockets": 2, "totalCores": 64, "capRange": {"minWattsPerSocket": 50,
                                                                          "maxWattsPerSocket": 200}}}})
        for n in snap.nodes}), s, mem)
    twin = after.twins["node-2"]
    assert twin.spec.profile == "eco" and twin.spec.policy is not None and twin.spec.policy.name == "work-aware-v1"
    assert twin.spec.cpu is not None
    cap = twin.spec.cpu.package_power_cap_pct_of_max
    assert cap is not None and 25 <= cap < 100
    d = twin.status.cap_decision if twin.status else None
    assert d is not None and d.cpu is not None and d.cpu.cap_pct_of_max == cap
    assert d.cpu.driven_by == "stream (cpu-memory)" and 0 < (d.cpu.predicted_slowdown_pct or 0) <= 3.0
    assert d.slowdown_budget_pct == 3.0 and "bound by stream (cpu-memory)" in (d.reason or "")
    # A node with nothing on it stays uncapped, performance, and says so.
    assert d.gpu is None  # a CPU-only node explains only its CPUs
    idle = after.twins["node-1"]
    assert idle.status is not None and idle.status.cap_decision is not None
    kept = idle.status.cap_decision.cpu
    assert kept is not None and kept.predicted_slowdown_pct is None and kept.driven_by == "no work on the device"
    assert idle.spec.profile == "performance" and idle.spec.cpu is not None
    assert idle.spec.cpu.package_power_cap_pct_of_max == 100.0


def test_every_registered_policy_is_a_valid_policy_type() -> None:
    from joulie_controller.policies.registry import REGISTRY
    from joulie_controller.settings import POLICIES

    assert set(REGISTRY) == set(POLICIES)


# --- the power policy (POWER_POLICY, powerstate.py) -----------------------------------------------------

SUSPEND = Settings(suspend=SuspendSettings(power_policy="idle_suspend_v1", after_s=600, min_powered=1),
                   reconcile=ReconcileSettings(status_refresh_s=120))


def on_bmc(snap: Snapshot, **states: str) -> Snapshot:
    readings = {n.name: BmcReading(states.get(n.name.replace("-", "_"), "on")) for n in snap.nodes}  # type: ignore[arg-type]
    return replace(snap, bmc=readings)


def test_power_policy_none_writes_no_power_fields_and_decides_nothing() -> None:
    s, mem = Settings(), Memory()
    result, snap = tick(on_bmc(cluster(2)), s, mem)
    later, snap = tick(replace(snap, now=T0 + timedelta(hours=2)), s, mem)
    assert result.power == [] and later.power == []
    for twin in snap.twins.values():
        assert twin.spec.power is None and twin.status is not None and twin.status.power is None
    assert not any(n.unschedulable for n in snap.nodes)


def test_idle_node_is_suspended_through_cordon_and_off_and_its_twin_says_so() -> None:
    s, mem = SUSPEND, Memory()
    busy = PodInfo("default", "job", node_name="node-1")
    snap = replace(on_bmc(cluster(2)), pods=[busy])
    first, snap = tick(snap, s, mem)
    assert first.power == []
    twin = snap.twins["node-0"]
    assert twin.spec.power is not None and twin.spec.power.state == "on"
    assert twin.status is not None and twin.status.power is not None and twin.status.power.state == "on"

    cordon, snap = tick(replace(snap, now=T0 + timedelta(minutes=10)), s, mem)
    assert [(a.node, a.action) for a in cordon.power] == [("node-0", "cordon")]
    assert snap.nodes[0].unschedulable and snap.nodes[0].taints[0].key == "joulie.io/suspended"
    status = snap.twins["node-0"].status
    assert status is not None and status.power is not None and status.power.state == "suspending"

    off, snap = tick(replace(snap, now=T0 + timedelta(minutes=11)), s, mem)
    assert [(a.node, a.action) for a in off.power] == [("node-0", "off")]
    assert snap.twins["node-0"].spec.power is not None and snap.twins["node-0"].spec.power.state == "off"
    assert off.outcomes and {o.node for o in off.outcomes} == {"node-1"}  # a cordoned node gets no caps

    done, snap = tick(on_bmc(replace(snap, now=T0 + timedelta(minutes=12)), node_0="off"), s, mem)
    status = snap.twins["node-0"].status
    assert status is not None and status.power is not None and status.power.state == "off"
    assert status.power_measurement is not None  # the rest of the twin is kept as it was

    # Its twin stays fresh for the extender while it is off.
    quiet, snap = tick(replace(snap, now=T0 + timedelta(minutes=12, seconds=30)), s, mem)
    assert all(w.node != "node-0" for w in quiet.writes)
    late, snap = tick(replace(snap, now=T0 + timedelta(minutes=15)), s, mem)
    assert [w.status is not None and w.spec is None for w in late.writes if w.node == "node-0"] == [True]


def test_pending_pod_resumes_an_off_node_which_is_uncordoned_when_ready() -> None:
    s, mem = SUSPEND, Memory()
    snap = replace(on_bmc(cluster(2)), pods=[PodInfo("default", "job", node_name="node-1")])
    _, snap = tick(snap, s, mem)
    for minutes in (10, 11):
        _, snap = tick(replace(snap, now=T0 + timedelta(minutes=minutes)), s, mem)
    _, snap = tick(on_bmc(replace(snap, now=T0 + timedelta(minutes=12)), node_0="off"), s, mem)
    waiting = PodInfo("default", "new", phase="Pending", node_name="", unschedulable=True)  # node-1 has no CPU left
    full = [replace(n, allocatable_cpu=0.0 if n.name == "node-1" else 8.0) for n in snap.nodes]
    resume, snap = tick(on_bmc(replace(snap, now=T0 + timedelta(minutes=20), nodes=full,
                                       pods=[*snap.pods, replace(waiting, cpu_request=2.0)]), node_0="off"), s, mem)
    assert [(a.node, a.action) for a in resume.power] == [("node-0", "on")]
    back, snap = tick(on_bmc(replace(snap, now=T0 + timedelta(minutes=23))), s, mem)
    assert [(a.node, a.action) for a in back.power] == [("node-0", "uncordon")]
    assert not snap.nodes[0].unschedulable and snap.nodes[0].taints == ()
    status = snap.twins["node-0"].status
    assert status is not None and status.power is not None and (status.power.state, status.power.boots) == ("on", 1)


def test_measured_power_moving_inside_the_deadband_waits_for_the_refresh() -> None:
    s, mem = Settings(reconcile=ReconcileSettings(status_refresh_s=120, status_deadband_pct=1.0)), Memory()
    _, snap = tick(replace(cluster(1), measurements={"node-0": Measurement(400.0)}), s, mem)

    def measured(now_s: int, watts: float) -> tuple[TickResult, Snapshot]:
        return tick(replace(snap, now=T0 + timedelta(seconds=now_s), measurements={"node-0": Measurement(watts)}),
                    s, mem)

    def power_w(snap: Snapshot) -> float | None:
        st = snap.twins["node-0"].status
        assert st is not None and st.power_measurement is not None
        return st.power_measurement.measured_node_power_w

    # 400 W -> 403.5 W is under 1 %: no write, the twin still says 400 W.
    quiet, snap = measured(60, 403.5)
    assert quiet.write_count == 0
    assert power_w(snap) == 400.0
    # 400 W -> 405 W is over 1 %: written at once.
    moved, snap = measured(61, 405.0)
    assert [w.node for w in moved.writes] == ["node-0"]
    assert power_w(snap) == 405.0
    # A small move is still written by the refresh, with the value of that tick.
    _, snap = measured(100, 406.0)
    assert power_w(snap) == 405.0
    refreshed, snap = measured(61 + 121, 406.0)
    assert refreshed.write_count == 1 and power_w(snap) == 406.0


def test_a_zero_deadband_writes_every_tenth_of_a_watt() -> None:
    s, mem = Settings(reconcile=ReconcileSettings(status_deadband_pct=0.0)), Memory()
    _, snap = tick(replace(cluster(1), measurements={"node-0": Measurement(400.0)}), s, mem)
    moved, _ = tick(replace(snap, now=T0 + timedelta(seconds=60), measurements={"node-0": Measurement(400.2)}), s, mem)
    assert moved.write_count == 1


def test_a_cordoned_nodes_hardware_is_kept_for_the_energy_receipts() -> None:
    # A Pod still runs and draws on a node cordoned for drain: its receipt needs the node's idle draws.
    snap = cluster(2)
    cordoned = replace(snap, nodes=[snap.nodes[0], replace(snap.nodes[1], unschedulable=True)],
                       pods=[PodInfo("default", "job", node_name="node-1", cpu_request=4.0)])
    mem = Memory()
    result = reconcile(cordoned, Settings(), mem)
    assert [o.node for o in result.outcomes] == ["node-0"]  # no caps planned for it
    assert set(mem.views) == {"node-0", "node-1"} and mem.views["node-1"].cpu_max_w_per_socket == 300
    # Every node cordoned: no plan, the views still kept.
    all_cordoned = replace(cordoned, nodes=[replace(n, unschedulable=True) for n in cordoned.nodes])
    reconcile(all_cordoned, Settings(), mem)
    assert set(mem.views) == {"node-0", "node-1"}
