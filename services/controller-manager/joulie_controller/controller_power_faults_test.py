"""The controller loop under the faults a live probe found (issue 37): a node woken twice for one Pod,
a BMC that refuses one power-on, a node cleared by an operator that never suspended again, and a
spec.power.state written by hand."""

from __future__ import annotations

from dataclasses import replace

from joulie_api.generated.nodetwin import PowerSpec
from joulie_common.clock import FakeClock
from joulie_controller.controller import Controller
from joulie_controller.model.fsm import PodInfo
from joulie_controller.model.hardware import NodeInfo
from joulie_controller.power.powerdriver import InMemoryPowerDriver
from joulie_controller.settings import Settings, SuspendSettings
from joulie_controller.testing import T0, MemoryKube, NoPower

MANAGED = {"joulie.io/managed": "true"}
SUSPEND = Settings(suspend=SuspendSettings(power_policy="idle_suspend_v1", after_s=600, min_powered=1))
FILLER = PodInfo("ns", "filler", node_name="busy", phase="Running", cpu_request=32.0)
HTTP_500 = "HTTP 500 Internal Server Error: iLO busy, try again"


def cluster(*idle: str, settings: Settings = SUSPEND) -> tuple[Controller, MemoryKube, FakeClock, InMemoryPowerDriver]:
    """A full node ``busy`` and the ``idle`` nodes, 32 cores each, every one with a BMC that reads on."""
    nodes = [NodeInfo(name, MANAGED, capacity_cpu=32, allocatable_cpu=32.0) for name in ("busy", *idle)]
    kube = MemoryKube(nodes, [FILLER])
    driver = InMemoryPowerDriver({n.name: "on" for n in nodes})
    clock = FakeClock(t=0.0, start=T0)
    ctl = Controller(settings, kube, NoPower(), clock=clock, power_driver=driver)  # type: ignore[arg-type]
    return ctl, kube, clock, driver


def ticks(ctl: Controller, clock: FakeClock, n: int, every_s: float = 60.0) -> None:
    for _ in range(n):
        clock.advance(every_s)
        ctl.tick()


def suspend_all(ctl: Controller, kube: MemoryKube, clock: FakeClock, *names: str) -> None:
    """Idle nodes through the whole suspend: cordoned after SUSPEND_AFTER, powered off, read off."""
    ctl.tick()
    clock.advance(600)
    ctl.tick()
    ticks(ctl, clock, 2)
    assert {n: kube.power(n).state for n in names} == {n: "off" for n in names}


def pending(kube: MemoryKube, *names: str) -> None:
    kube.snap = replace(kube.snap, pods=[FILLER, *(PodInfo("ns", n, phase="Pending", cpu_request=4.0, unschedulable=True)
                                                 for n in names)])


def test_one_pending_pod_wakes_one_node_even_on_the_tick_it_comes_back_still_cordoned() -> None:
    ctl, kube, clock, driver = cluster(
        "a", "c", settings=replace(SUSPEND, suspend=replace(SUSPEND.suspend, min_powered=0))
    )
    suspend_all(ctl, kube, clock, "a", "c")
    driver.calls.clear()
    pending(kube, "job")
    ticks(ctl, clock, 1)  # a resumes; the in-memory BMC is on at once and the Node Ready
    assert driver.calls == [("a", "on")] and kube.power("a").state == "resuming"
    ticks(ctl, clock, 1)  # a is on, still cordoned until this tick's uncordon: the Pod goes there
    assert kube.power("a").state == "on" and not kube.node("a").unschedulable
    assert driver.calls == [("a", "on")], "a second node was powered on for the same Pod"
    assert kube.power("c").state == "off"


def test_a_power_on_the_bmc_refuses_once_is_retried_after_the_backoff() -> None:
    ctl, kube, clock, driver = cluster("a")
    suspend_all(ctl, kube, clock, "a")
    driver.calls.clear()
    driver.refuse["a"] = HTTP_500
    pending(kube, "job")
    ticks(ctl, clock, 1)
    assert kube.power("a").state == "resuming" and driver.calls == []
    del driver.refuse["a"]
    ticks(ctl, clock, 1)
    assert driver.calls == [("a", "on")], "the refused power-on was never retried"
    ticks(ctl, clock, 1)
    assert kube.power("a").state == "on" and kube.power("a").error is None


def test_a_bmc_that_keeps_refusing_fails_the_node_within_the_retry_budget_and_the_pod_wakes_the_next() -> None:
    ctl, kube, clock, driver = cluster(
        "a", "c", settings=replace(SUSPEND, suspend=replace(SUSPEND.suspend, min_powered=0))
    )
    suspend_all(ctl, kube, clock, "a", "c")
    driver.calls.clear()
    driver.refuse["a"] = HTTP_500
    pending(kube, "job")
    ticks(ctl, clock, 6)  # 6 minutes, far inside RESUME_TIMEOUT (15m)
    a = kube.power("a")
    assert a.state == "failed", f"still {a.state} after 6 minutes of refused power-ons: {a.reason}"
    assert a.reason is not None and HTTP_500 in a.reason and "RESUME_RETRIES" in a.reason
    assert driver.calls == [("c", "on")]  # the Pod waits for the next candidate, not for an operator
    ticks(ctl, clock, 3)
    assert kube.power("a").state == "failed" and kube.power("c").state == "on"


def test_a_node_an_operator_cleared_suspends_again_when_idle() -> None:
    ctl, kube, clock, driver = cluster("a")
    ctl.tick()
    clock.advance(600)
    ctl.tick()
    driver.refuse["a"] = "HTTP 400: ResetType GracefulShutdown not supported"
    ticks(ctl, clock, 7)  # the power-off is refused; SUSPEND_TIMEOUT (5m) fails the node
    assert kube.power("a").state == "failed"
    del driver.refuse["a"]  # the operator fixes the BMC, then clears the node as documented
    kube.set_suspended("a", False)
    ticks(ctl, clock, 1)
    assert kube.power("a").state == "on"
    ticks(ctl, clock, 12)
    assert kube.power("a").error is None
    assert kube.power("a").state in ("suspending", "off"), "a cleared node never suspended again"


def test_a_hand_written_power_off_on_a_running_node_is_overwritten_and_the_node_suspends_normally() -> None:
    ctl, kube, clock, driver = cluster("a")
    ctl.tick()
    twin = kube.snap.twins["a"]
    hand = twin.model_copy(update={"spec": twin.spec.model_copy(update={"power": PowerSpec(state="off")})})
    kube.snap = replace(kube.snap, twins={**kube.snap.twins, "a": hand})
    ctl.tick()
    power = kube.snap.twins["a"].spec.power
    assert power is not None and power.state == "on", "the hand-written spec.power.state off was kept"
    clock.advance(600)
    ticks(ctl, clock, 3)
    assert driver.calls == [("a", "off")] and kube.power("a").state == "off"
