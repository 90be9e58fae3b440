"""The power policy as an operator sees it: which nodes are cordoned, powered off, woken and when."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from joulie_controller.model.fsm import PodInfo, Requirement, Toleration
from joulie_controller.model.hardware import NodeInfo, Taint
from joulie_controller.power.powerstate import (
    BmcReading,
    PowerAction,
    PowerDecision,
    PowerInput,
    PowerNode,
    PowerStatus,
    decide,
    duration_text,
)
from joulie_controller.settings import Settings, SuspendSettings

T0 = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
ON = Settings(suspend=SuspendSettings(power_policy="idle_suspend_v1", min_powered=1, max_concurrent=2))
GIB = 2.0**30
SUSPENDED = Taint("joulie.io/suspended", "", "NoSchedule")


def node(name: str, *, gpus: int = 0, labels: Mapping[str, str] | None = None,
         annotations: Mapping[str, str] | None = None, cordoned: bool = False, ready: bool = True,
         taints: tuple[Taint, ...] = ()) -> NodeInfo:
    return NodeInfo(name, dict(labels or {}), cordoned, gpus, 32, dict(annotations or {}),
                    taints + ((SUSPENDED,) if cordoned and not taints else ()), 32.0, 128 * GIB, ready)


def pn(info: NodeInfo, state: str = "on", since: datetime | None = T0, desired: str = "on",
       rank_w: float = 0.0, boots: int = 0) -> PowerNode:
    return PowerNode(info, PowerStatus(state, since, "", boots), desired, rank_w)  # type: ignore[arg-type]


def pod(name: str, node_name: str = "", *, cpu: float = 1.0, gpu: int = 0, daemonset: bool = False,
        selector: Mapping[str, str] | None = None, tolerations: tuple[Toleration, ...] = (),
        terms: tuple[tuple[Requirement, ...], ...] = ()) -> PodInfo:
    return PodInfo("ns", name, node_name=node_name, phase="Running" if node_name else "Pending",
                   node_selector=dict(selector or {}), required_terms=terms, cpu_request=cpu, gpu_request=gpu,
                   tolerations=tolerations, daemonset=daemonset, unschedulable=not node_name)


def run(nodes: Sequence[PowerNode], pods: Sequence[PodInfo] = (), *, at: timedelta = timedelta(0),
        bmc: Mapping[str, str] | None = None, idle: Mapping[str, datetime] | None = None,
        s: Settings = ON) -> PowerDecision:
    readings = {n.info.name: BmcReading("on" if n.status.state in ("on", "suspending") else "off")
                for n in nodes}
    readings.update({k: BmcReading(v) for k, v in (bmc or {}).items()})  # type: ignore[arg-type]
    return decide(PowerInput(T0 + at, nodes, pods, readings, dict(idle or {})), s)


def actions(d: PowerDecision) -> set[tuple[str, str]]:
    return {(a.node, a.action) for a in d.actions}


IDLE_11M = {"a": T0 - timedelta(minutes=11), "b": T0 - timedelta(minutes=11), "c": T0 - timedelta(minutes=11)}


# --- suspend ------------------------------------------------------------------------------------------

def test_policy_none_never_decides_anything() -> None:
    d = run([pn(node("a")), pn(node("b"))], idle=IDLE_11M, s=Settings())
    assert d.actions == [] and d.status == {} and d.desired == {}


def test_an_idle_node_is_cordoned_after_suspend_after_and_not_before() -> None:
    nodes = [pn(node("a")), pn(node("b"))]
    busy_b = [pod("job", "b")]
    first = run(nodes, busy_b)
    assert first.actions == [] and first.idle_since == {"a": T0}  # idle clock starts
    nine = run(nodes, busy_b, at=timedelta(minutes=9), idle=first.idle_since)
    assert nine.actions == []
    ten = run(nodes, busy_b, at=timedelta(minutes=10), idle=first.idle_since)
    assert actions(ten) == {("a", "cordon")}
    assert ten.status["a"].state == "suspending" and ten.status["a"].since == T0 + timedelta(minutes=10)
    assert "no workload Pods for 10m" in ten.status["a"].reason and ten.desired["a"] == "on"


def test_daemonset_pods_do_not_keep_a_node_on_but_any_other_pod_does() -> None:
    nodes = [pn(node("a")), pn(node("b")), pn(node("c"))]
    d = run(nodes, [pod("exporter", "a", daemonset=True), pod("job", "b"), pod("exporter-c", "c", daemonset=True)],
            idle=IDLE_11M)
    assert ("b", "cordon") not in actions(d)
    assert {"a", "c"} >= {n for n, _ in actions(d)} and len(d.actions) == 2


def test_cordoned_node_is_powered_off_on_a_later_tick_then_off_when_the_bmc_says_so() -> None:
    a = node("a", cordoned=True)
    nodes = [pn(a, "suspending", since=T0, desired="on"), pn(node("b"))]
    same_tick = run(nodes, [pod("job", "b")])
    assert same_tick.actions == []  # the cordon's own tick: a Pod may be binding
    later = run(nodes, [pod("job", "b")], at=timedelta(minutes=1))
    assert actions(later) == {("a", "off")} and later.desired["a"] == "off"
    off = run([pn(a, "suspending", since=T0, desired="off"), pn(node("b"))], [pod("job", "b")],
              at=timedelta(minutes=2), bmc={"a": "off"})
    assert off.status["a"].state == "off" and off.actions == []


def test_a_pod_that_arrives_before_the_power_off_uncordons_the_node() -> None:
    d = run([pn(node("a", cordoned=True), "suspending"), pn(node("b"))], [pod("late", "a"), pod("job", "b")],
            at=timedelta(minutes=1))
    assert actions(d) == {("a", "uncordon")} and d.status["a"].state == "on"
    assert "ns/late arrived" in d.status["a"].reason


def test_suspend_timeout_marks_the_node_failed_with_the_reason() -> None:
    d = run([pn(node("a", cordoned=True), "suspending", desired="off"), pn(node("b"))], [pod("job", "b")],
            at=timedelta(minutes=6), bmc={"a": "on"})
    assert actions(d) == {("a", "fail")} and d.status["a"].state == "failed"
    assert "SUSPEND_TIMEOUT (5m)" in d.status["a"].reason and "the BMC reads on" in d.status["a"].reason


def test_a_node_excluded_by_annotation_or_label_stays_on() -> None:
    nodes = [pn(node("a", annotations={"joulie.io/suspend-exclude": "true"})),
             pn(node("b", labels={"joulie.io/suspend-exclude": "true"})), pn(node("c"))]
    d = run(nodes, idle=IDLE_11M, s=Settings(suspend=SuspendSettings(power_policy="idle_suspend_v1", min_powered=0)))
    assert actions(d) == {("c", "cordon")}


def test_a_node_without_a_bmc_reading_is_never_suspended() -> None:
    nodes = [pn(node("a")), pn(node("b"))]
    d = decide(PowerInput(T0, nodes, [], {"b": BmcReading("on")}, IDLE_11M),
               Settings(suspend=SuspendSettings(power_policy="idle_suspend_v1", min_powered=0)))
    assert actions(d) == {("b", "cordon")}


def test_a_bmc_that_reports_an_error_blocks_suspend_and_shows_in_status() -> None:
    nodes = [pn(node("a")), pn(node("b"))]
    d = decide(PowerInput(T0, nodes, [], {"a": BmcReading("unknown", "401 Unauthorized from https://bmc-a"),
                                         "b": BmcReading("on")}, IDLE_11M),
               Settings(suspend=SuspendSettings(power_policy="idle_suspend_v1", min_powered=0)))
    assert actions(d) == {("b", "cordon")}
    assert d.status["a"].state == "on" and d.status["a"].error == "401 Unauthorized from https://bmc-a"


def test_the_floor_keeps_powered_nodes_per_pool() -> None:
    gpu = {"joulie.io/pool": "gpu"}
    nodes = [pn(node("a")), pn(node("b")), pn(node("c")), pn(node("g1", labels=gpu)), pn(node("g2", labels=gpu))]
    idle = {n.info.name: T0 - timedelta(hours=1) for n in nodes}
    d = run(nodes, idle=idle, s=Settings(suspend=SuspendSettings(power_policy="idle_suspend_v1", min_powered=1,
                                                                 max_concurrent=10)))
    cordoned = {n for n, a in actions(d) if a == "cordon"}
    assert len(cordoned & {"a", "b", "c"}) == 2 and len(cordoned & {"g1", "g2"}) == 1


def test_no_more_than_max_concurrent_nodes_change_state_at_once() -> None:
    nodes = [pn(node(f"n{i}")) for i in range(6)] + [pn(node("r", cordoned=True), "resuming", desired="on")]
    idle = {n.info.name: T0 - timedelta(hours=1) for n in nodes}
    d = run(nodes, idle=idle, bmc={"r": "powering-on"},
            s=Settings(suspend=SuspendSettings(power_policy="idle_suspend_v1", min_powered=0, max_concurrent=3)))
    assert len([a for a in d.actions if a.action == "cordon"]) == 2  # 3 less the one resuming


# --- resume -------------------------------------------------------------------------------------------

def test_a_pending_gpu_pod_resumes_the_gpu_node_not_a_cpu_one() -> None:
    nodes = [pn(node("busy")), pn(node("cpu-off", cordoned=True), "off", desired="off", rank_w=300),
             pn(node("gpu-off", gpus=4, cordoned=True), "off", desired="off", rank_w=3000)]
    d = run(nodes, [pod("filler", "busy", cpu=32), pod("train", gpu=2)])
    assert actions(d) == {("gpu-off", "on")}
    assert d.status["gpu-off"].state == "resuming" and "ns/train fits no powered node" in d.status["gpu-off"].reason


def test_a_pending_cpu_pod_wakes_the_cheapest_node_and_the_fewest_nodes() -> None:
    nodes = [pn(node("busy")), pn(node("cpu-off", cordoned=True), "off", desired="off", rank_w=300),
             pn(node("cpu-off-2", cordoned=True), "off", desired="off", rank_w=300),
             pn(node("gpu-off", gpus=4, cordoned=True), "off", desired="off", rank_w=3000)]
    d = run(nodes, [pod("filler", "busy", cpu=32), pod("p1", cpu=8), pod("p2", cpu=8), pod("p3", cpu=8)])
    assert actions(d) == {("cpu-off", "on")}


def test_a_pending_pod_that_fits_a_powered_node_wakes_nothing() -> None:
    nodes = [pn(node("a")), pn(node("off", cordoned=True), "off", desired="off")]
    assert run(nodes, [pod("p", cpu=4)]).actions == []


def test_node_selector_and_tolerations_are_respected() -> None:
    gpu_taint = Taint("nvidia.com/gpu", "present", "NoSchedule")
    nodes = [pn(node("busy")),
             pn(node("zone-a", labels={"zone": "a"}, cordoned=True), "off", desired="off", rank_w=1),
             pn(node("zone-b", labels={"zone": "b"}, cordoned=True), "off", desired="off", rank_w=2),
             pn(node("tainted", labels={"zone": "c"}, taints=(gpu_taint, SUSPENDED), cordoned=True), "off",
                desired="off", rank_w=0)]
    filler = pod("filler", "busy", cpu=32)
    assert actions(run(nodes, [filler, pod("p", selector={"zone": "b"})])) == {("zone-b", "on")}
    in_c = ((Requirement("zone", "In", ("c",)),),)
    assert run(nodes, [filler, pod("p", terms=in_c)]).actions == []  # does not tolerate the GPU taint
    tolerant = (Toleration("nvidia.com/gpu", "Exists", "", "NoSchedule"),)
    assert actions(run(nodes, [filler, pod("p", terms=in_c, tolerations=tolerant)])) == {("tainted", "on")}
    not_a = ((Requirement("zone", "NotIn", ("a", "c")),),)
    assert actions(run(nodes, [filler, pod("p", terms=not_a)])) == {("zone-b", "on")}


def test_a_node_cordoned_but_not_yet_off_is_taken_back_for_a_pending_pod() -> None:
    nodes = [pn(node("busy")), pn(node("a", cordoned=True), "suspending", since=T0 - timedelta(minutes=1))]
    d = run(nodes, [pod("filler", "busy", cpu=32), pod("p", cpu=4)])
    assert actions(d) == {("a", "uncordon")} and d.status["a"].state == "on"


def test_resumed_when_the_bmc_reads_on_and_the_node_is_ready() -> None:
    resuming = [pn(node("busy")), pn(node("a", cordoned=True, ready=False), "resuming", boots=2)]
    assert run(resuming, bmc={"a": "on"}, at=timedelta(minutes=3)).actions == []  # not Ready yet
    nodes = [pn(node("busy")), pn(node("a", cordoned=True), "resuming", boots=2)]
    d = run(nodes, bmc={"a": "on"}, at=timedelta(minutes=3))
    assert actions(d) == {("a", "uncordon")}
    assert d.status["a"].state == "on" and d.status["a"].boots == 3


def test_resume_timeout_fails_the_node_and_it_is_not_retried() -> None:
    nodes = [pn(node("busy")), pn(node("a", cordoned=True, ready=False), "resuming")]
    pending = [pod("filler", "busy", cpu=32), pod("p", cpu=4)]
    d = run(nodes, pending, bmc={"a": "on"}, at=timedelta(minutes=16))
    assert actions(d) == {("a", "fail")}
    assert d.status["a"].state == "failed" and "RESUME_TIMEOUT (15m)" in d.status["a"].reason
    again = [pn(node("busy")), PowerNode(nodes[1].info, d.status["a"], "on")]
    later = run(again, pending, bmc={"a": "off"}, at=timedelta(hours=2))
    assert later.actions == [] and later.status["a"].state == "failed"


def test_an_operator_clears_a_failed_node_by_removing_the_taint() -> None:
    d = run([pn(node("a"), "failed")])
    assert d.status["a"].state == "on" and "cleared by an operator" in d.status["a"].reason


def test_a_pool_under_its_floor_gets_an_off_node_back() -> None:
    nodes = [pn(node("a", cordoned=True), "failed"), pn(node("b", cordoned=True), "off", desired="off")]
    d = run(nodes)
    assert actions(d) == {("b", "on")} and "SUSPEND_MIN_POWERED=1" in d.status["b"].reason


def test_actions_carry_a_reason() -> None:
    d = run([pn(node("a")), pn(node("b"))], idle=IDLE_11M)
    assert d.actions == [PowerAction("a", "cordon", "no workload Pods for 11m (SUSPEND_AFTER 10m)")]


def test_durations_read_as_the_settings_are_written() -> None:
    assert [duration_text(x) for x in (600, 90, 5400, 0)] == ["10m", "1m30s", "1h30m", "0s"]


def test_a_cordon_or_uncordon_that_did_not_reach_the_cluster_is_retried_never_powered_off_uncordoned() -> None:
    not_cordoned = [pn(node("a"), "suspending"), pn(node("b"))]
    d = run(not_cordoned, [pod("job", "b")], at=timedelta(minutes=1))
    assert actions(d) == {("a", "cordon")}
    still_tainted = [pn(node("a", taints=(SUSPENDED,))), pn(node("b"))]
    assert actions(run(still_tainted, [pod("job", "b")])) == {("a", "uncordon")}


def test_a_pending_daemonset_pod_wakes_nothing() -> None:
    nodes = [pn(node("busy")), pn(node("off", cordoned=True), "off", desired="off")]
    assert run(nodes, [pod("filler", "busy", cpu=32), pod("exporter-x", daemonset=True)]).actions == []


def test_only_a_pod_our_scheduler_marked_unschedulable_wakes_a_node() -> None:
    # Issue 36: a Pod with a bogus schedulerName, or one the scheduler has not yet tried, woke a
    # suspended node and held it on.
    nodes = [pn(node("busy")), pn(node("off", cordoned=True), "off", desired="off")]
    waiting = pod("train", cpu=4)
    assert actions(run(nodes, [pod("filler", "busy", cpu=32), waiting])) == {("off", "on")}
    for ignored in (replace(waiting, unschedulable=False), replace(waiting, scheduler_name="bogus-scheduler")):
        assert run(nodes, [pod("filler", "busy", cpu=32), ignored]).actions == []
    other = Settings(suspend=replace(ON.suspend), scheduler_names=("gpu-scheduler",))
    assert actions(run(nodes, [pod("filler", "busy", cpu=32), replace(waiting, scheduler_name="gpu-scheduler")],
                       s=other)) == {("off", "on")}
