"""The controller loop with the Redfish driver: a node whose BMC fails shows the error in its status
and in the log (never a credential) and is left as it was."""

from __future__ import annotations

import logging

import pytest

from joulie_common.clock import FakeClock
from joulie_controller.bmc.redfishdriver_test import BAD_CRED, PASSWORD, UNREACHABLE, FakeBmcs, driver, entry
from joulie_controller.controller import Controller
from joulie_controller.controller_power_test import SUSPEND, power_state
from joulie_controller.model.fsm import PodInfo
from joulie_controller.model.hardware import NodeInfo
from joulie_controller.testing import MemoryKube, NoPower
from joulie_redfish.errors import RedfishError


@pytest.mark.parametrize("err", [BAD_CRED, UNREACHABLE], ids=["bad-credential", "unreachable"])
def test_controller_shows_the_bmc_error_in_status_and_log_and_leaves_the_node(err: RedfishError,
                                                                                caplog: pytest.LogCaptureFixture) -> None:
    kube = MemoryKube([NodeInfo("a", {"joulie.io/managed": "true"}), NodeInfo("b", {"joulie.io/managed": "true"})],
                      [PodInfo("ns", "job", node_name="b")])
    clock = FakeClock(t=0.0, start=kube.snap.now)
    bmcs = FakeBmcs({"a": "on", "b": "on"})
    bmcs.fail_login["a"] = err
    d = driver(bmcs, {"a": entry("a"), "b": entry("b")})
    ctl = Controller(SUSPEND, kube, NoPower(), clock=clock, power_driver=d)  # type: ignore[arg-type]
    with caplog.at_level(logging.INFO):
        for _ in range(4):  # past SUSPEND_AFTER: a, idle, would be suspended were its BMC answering
            ctl.tick()
            clock.advance(400)
    state, error = power_state(kube, "a")
    assert state == "on" and error is not None and str(err) in error and "node a" in error
    assert PASSWORD not in error and PASSWORD not in caplog.text
    assert str(err) in caplog.text
    node_a = next(n for n in kube.snap.nodes if n.name == "a")
    assert not node_a.unschedulable and not node_a.taints  # left as it was: not cordoned, not tainted
    assert bmcs.resets == []
