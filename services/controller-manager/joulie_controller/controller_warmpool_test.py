"""The controller loop under POWER_POLICY=forecast_suspend_v1: the demand it sees becomes a warm pool,
a node is powered on before any Pod waits, and the forecast and the warm pool are exported."""

from __future__ import annotations

from dataclasses import replace

from joulie_common.clock import FakeClock
from joulie_controller.controller import Controller
from joulie_controller.model.fsm import PodInfo
from joulie_controller.model.hardware import NodeInfo
from joulie_controller.power.powerdriver import InMemoryPowerDriver
from joulie_controller.settings import Settings, SuspendSettings
from joulie_controller.telemetry.metrics import Metrics
from joulie_controller.testing import T0, MemoryKube, NoPower

POOL = {"joulie.io/managed": "true", "joulie.io/pool": "cpu"}
FORECAST = Settings(suspend=SuspendSettings(power_policy="forecast_suspend_v1", min_powered=0, max_concurrent=2))


def test_steady_arrivals_power_a_node_on_before_any_pod_waits() -> None:
    kept_on = {**POOL, "joulie.io/suspend-exclude": "true"}
    nodes = [
        NodeInfo("a", kept_on, allocatable_cpu=32.0, allocatable_memory_bytes=2.0**37),
        NodeInfo("b", POOL, allocatable_cpu=32.0, allocatable_memory_bytes=2.0**37),
    ]
    kube = MemoryKube(nodes, [])
    driver = InMemoryPowerDriver({"a": "on", "b": "on"})
    metrics = Metrics()
    clock = FakeClock(t=0.0, start=T0)
    ctl = Controller(FORECAST, kube, NoPower(), metrics, clock=clock, power_driver=driver)  # type: ignore[arg-type]
    for _ in range(5):  # no demand seen: b is suspended after SUSPEND_AFTER like under the reactive policy
        ctl.tick()
        clock.advance(300)
    assert driver.calls == [("b", "off")] and kube.power("b").state == "off"
    # Two 8-core Pods a minute land on a and finish a few minutes later: nothing ever waits.
    for minute in range(1, 15):
        live = [PodInfo("ns", f"job-{minute}-{i}", node_name="a", cpu_request=8.0) for i in range(2)]
        kube.snap = replace(kube.snap, pods=live)
        clock.advance(60)
        ctl.tick()
        if ("b", "on") in driver.calls:
            break
    assert ("b", "on") in driver.calls
    status = kube.power("b")
    assert status.state == "resuming" and (status.reason or "").startswith(
        "resumed ahead of demand (forecast): pool *"
    )
    get = metrics.registry.get_sample_value
    rate = get("joulie_power_forecast_arrivals_per_minute", {"pool": "*"})
    assert rate is not None and 0.0 < rate < 2.0  # the first minutes of demand after 25 quiet ones
    cores = get("joulie_power_warm_pool_cores", {"pool": "*"})
    assert cores is not None and cores > 8.0  # more than a's free room: why b was powered on
    assert get("joulie_power_pool_boot_seconds", {"pool": "*"}) == FORECAST.suspend.boot_estimate_s
