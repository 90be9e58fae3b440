"""The controller's Redfish driver against the simulator's emulated BMCs (real Redfish over sushy,
on loopback): a graceful power-off and a power-on carried out by the controller loop, and a bad
credential and an unreachable BMC each ending as a clear error in NodeTwin status.power.error and
the log, with the node left as it was (not cordoned, not powered off)."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from joulie_common.clock import FakeClock
from joulie_controller.api import NodeInfo, PodInfo, Settings, SuspendSettings
from joulie_controller.shell_api import Controller, RedfishPowerDriver
from joulie_controller.testing import T0, MemoryKube, NoPower
from joulie_hwprofiles.schema import builtin_profile
from joulie_redfish.client import connect_entry
from joulie_redfish.credentials import Credentials
from joulie_redfish.directory import BmcEntry
from joulie_simulator.api import Emulator
from joulie_simulator.shell_api import BmcCredentials, BmcFleet
from joulie_simulator.testing import frozen_emulator, running_fleet

PASSWORD = "Pa55-w0rd-of-the-pool"
XEON = builtin_profile("intel-xeon-2s-rapl")
MANAGED = {"joulie.io/managed": "true"}
SUSPEND = Settings(suspend=SuspendSettings(power_policy="idle_suspend_v1", after_s=600, min_powered=1))


@pytest.fixture
def emu() -> Emulator:
    return frozen_emulator(("idle", XEON), ("busy", XEON))


@pytest.fixture
def fleet(emu: Emulator) -> Iterator[BmcFleet]:
    with running_fleet(emu, BmcCredentials("joulie", PASSWORD)) as f:
        yield f


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run(fleet: BmcFleet, directory: dict[str, BmcEntry], tmp_path: Path, ticks: int,
        advance_s: float = 200.0) -> tuple[MemoryKube, FakeClock]:
    """``ticks`` controller ticks ``advance_s`` apart (SUSPEND_AFTER 600 s: cordon on the 4th, power-off on the 5th)."""
    kube = MemoryKube([NodeInfo("idle", MANAGED), NodeInfo("busy", MANAGED)], [PodInfo("ns", "job", node_name="busy")])
    clock = FakeClock(t=0.0, start=T0)
    driver = RedfishPowerDriver(lambda: directory, lambda e: connect_entry(e, tmp_path, timeout_s=3))
    ctl = Controller(SUSPEND, kube, NoPower(), clock=clock, power_driver=driver)  # type: ignore[arg-type]
    for _ in range(ticks):
        ctl.tick()
        clock.advance(advance_s)
    driver.close()
    return kube, clock


def entries(fleet: BmcFleet, password: str = PASSWORD, idle_address: str | None = None) -> dict[str, BmcEntry]:
    return {n: BmcEntry(n, idle_address if n == "idle" and idle_address else fleet.addresses[n],
                        Credentials("joulie", password), secret="joulie-system/bmcs") for n in ("idle", "busy")}


def test_the_controller_powers_an_idle_node_off_through_its_emulated_bmc(fleet: BmcFleet, emu: Emulator,
                                                                         tmp_path: Path) -> None:
    kube, _ = run(fleet, entries(fleet), tmp_path, ticks=5)
    assert emu.power_state("idle") in ("shutting-down", "off")  # GracefulShutdown reached the emulator
    assert emu.power_state("busy") == "on"
    assert kube.node("idle").unschedulable and kube.power("idle").error is None


@pytest.mark.parametrize("case", ["bad-credential", "unreachable"])
def test_a_bad_credential_or_an_unreachable_bmc_is_a_clear_error_and_the_node_is_left(
        case: str, fleet: BmcFleet, emu: Emulator, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    if case == "bad-credential":
        directory = entries(fleet, password="wrong-" + PASSWORD)
        expected = "log in failed: credentials refused (HTTP 401)"
        address = fleet.addresses["idle"]
    else:
        address = f"http://127.0.0.1:{closed_port()}"
        directory = entries(fleet, idle_address=address)
        expected = "log in failed: unreachable (connection refused)"
    with caplog.at_level(logging.INFO):
        kube, _ = run(fleet, directory, tmp_path, ticks=6)  # past the cordon time, were the BMC answering
    power = kube.power("idle")
    print(f"{case}: NodeTwin idle status.power = state {power.state!r}, error {power.error!r}")
    assert power.state == "on" and power.error == f"node idle: BMC {address}: {expected}" + (
        "; check the username and password in the node's BMC Secret" if case == "bad-credential" else "")
    assert f"node idle: BMC reading failed, the node is left as it is: node idle: BMC {address}: {expected}" in caplog.text
    assert PASSWORD not in caplog.text and PASSWORD not in (power.error or "")
    assert not kube.node("idle").unschedulable and not kube.node("idle").taints  # left as it was
    assert emu.power_state("idle") == "on"
