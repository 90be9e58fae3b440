"""The controller loop carrying out the power policy: BMC readings in, cordons and power actions out."""

from __future__ import annotations

from joulie_common.clock import FakeClock
from joulie_controller.controller import Controller
from joulie_controller.model.fsm import PodInfo
from joulie_controller.model.hardware import NodeInfo
from joulie_controller.power.powerdriver import InMemoryPowerDriver
from joulie_controller.settings import Settings, SuspendSettings
from joulie_controller.testing import T0, MemoryKube, NoPower

MANAGED = {"joulie.io/managed": "true"}
SUSPEND = Settings(suspend=SuspendSettings(power_policy="idle_suspend_v1", after_s=600, min_powered=1))


def setup(settings: Settings, driver: InMemoryPowerDriver | None) -> tuple[Controller, MemoryKube, FakeClock]:
    kube = MemoryKube([NodeInfo("a", MANAGED), NodeInfo("b", MANAGED)], [PodInfo("ns", "job", node_name="b")])
    clock = FakeClock(t=0.0, start=T0)
    return Controller(settings, kube, NoPower(), clock=clock, power_driver=driver), kube, clock  # type: ignore[arg-type]


def power_state(kube: MemoryKube, node: str) -> tuple[str | None, str | None]:
    status = kube.snap.twins[node].status
    assert status is not None and status.power is not None
    return status.power.state, status.power.error


def test_an_idle_node_is_cordoned_then_powered_off_through_the_driver() -> None:
    driver = InMemoryPowerDriver({"a": "on", "b": "on"})
    ctl, kube, clock = setup(SUSPEND, driver)
    ctl.tick()
    clock.advance(600)
    ctl.tick()
    assert kube.snap.nodes[0].unschedulable and power_state(kube, "a") == ("suspending", None)
    assert driver.calls == []
    clock.advance(60)
    ctl.tick()
    assert driver.calls == [("a", "off")]
    clock.advance(60)
    ctl.tick()
    assert power_state(kube, "a") == ("off", None)


def test_a_bmc_refusing_credentials_leaves_the_node_as_it_was_with_the_error_in_status() -> None:
    driver = InMemoryPowerDriver({"a": "on", "b": "on"})
    driver.fail["a"] = "401 Unauthorized from https://10.0.0.1 (check the BMC Secret)"
    ctl, kube, clock = setup(SUSPEND, driver)
    for _ in range(3):
        ctl.tick()
        clock.advance(600)
    assert not kube.snap.nodes[0].unschedulable and driver.calls == []
    assert power_state(kube, "a") == ("on", "401 Unauthorized from https://10.0.0.1 (check the BMC Secret)")


def test_a_failed_power_off_shows_in_status_and_is_not_repeated() -> None:
    driver = InMemoryPowerDriver({"a": "on", "b": "on"})
    ctl, kube, clock = setup(SUSPEND, driver)
    ctl.tick()
    clock.advance(600)
    ctl.tick()
    driver.refuse["a"] = "400 Bad Request: ResetType GracefulShutdown not supported"
    clock.advance(60)
    summary = ctl.tick()
    assert summary.failures == 1 and "a" in ctl.power_errors
    clock.advance(60)
    ctl.tick()
    state, error = power_state(kube, "a")
    assert state == "suspending" and error is not None and "power off failed" in error
    assert driver.calls == []


def test_a_refused_cordon_is_retried_and_the_node_is_never_powered_off_uncordoned() -> None:
    driver = InMemoryPowerDriver({"a": "on", "b": "on"})
    ctl, kube, clock = setup(SUSPEND, driver)
    kube.refuse_cordon = True
    ctl.tick()
    clock.advance(600)
    assert ctl.tick().failures == 1
    clock.advance(60)
    ctl.tick()
    assert driver.calls == [] and not kube.snap.nodes[0].unschedulable


def test_with_power_policy_none_and_no_driver_nothing_changes() -> None:
    ctl, kube, clock = setup(Settings(), None)
    for _ in range(3):
        ctl.tick()
        clock.advance(3600)
    assert not any(n.unschedulable for n in kube.snap.nodes)
    assert all(t.status is not None and t.status.power is None for t in kube.snap.twins.values())


def test_a_powered_off_node_shows_off_in_its_liveness_not_agent_lost() -> None:
    # Issue 36: the liveness check ran before the tick, blind to the power policy: an off node was agent-lost.
    from prometheus_client import CollectorRegistry

    from joulie_controller.kube.liveness import Liveness

    driver = InMemoryPowerDriver({"a": "on", "b": "on"})
    kube = MemoryKube([NodeInfo("a", MANAGED), NodeInfo("b", MANAGED)], [PodInfo("ns", "job", node_name="b")])
    clock = FakeClock(t=0.0, start=T0)
    liveness = Liveness(None, 120, CollectorRegistry())
    ctl = Controller(SUSPEND, kube, NoPower(), clock=clock, power_driver=driver,  # type: ignore[arg-type]
                     liveness=liveness)
    for step in (0, 600, 60, 60):
        clock.advance(step)
        ctl.tick()
    assert power_state(kube, "a") == ("off", None)
    assert liveness.states["a"] == "off" and liveness.states["b"] in ("alive", "agent-lost")
