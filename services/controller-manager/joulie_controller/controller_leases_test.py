"""Unreadable agent heartbeat Leases (a 403, their watch down) hold the agent-lost verdicts, never the tick."""

from __future__ import annotations

import logging

import pytest
from prometheus_client import CollectorRegistry

from joulie_common.clock import FakeClock
from joulie_controller.controller import Controller
from joulie_controller.kube.heartbeats import Heartbeat
from joulie_controller.kube.liveness import Liveness
from joulie_controller.model.fsm import PodInfo
from joulie_controller.model.hardware import NodeInfo
from joulie_controller.settings import Settings
from joulie_controller.testing import T0, MemoryKube, NoPower


class UnreadableLeases(MemoryKube):
    def __init__(self) -> None:
        super().__init__([NodeInfo("a", {"joulie.io/managed": "true"})], [PodInfo("ns", "job", node_name="a")])
        self.readable = False

    def heartbeats(self) -> dict[str, Heartbeat] | None:  # type: ignore[override]
        return dict(self.leases) if self.readable else None


def test_unreadable_leases_hold_the_verdicts_and_the_tick_still_writes(caplog: pytest.LogCaptureFixture) -> None:
    kube = UnreadableLeases()
    clock = FakeClock(t=0.0, start=T0)
    liveness = Liveness(None, 120, CollectorRegistry())
    ctl = Controller(Settings(), kube, NoPower(), clock=clock, liveness=liveness)  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            ctl.tick()
            clock.advance(60)
    assert "a" in kube.snap.twins  # the node's twin was written: the tick went on
    assert liveness.states == {}  # no verdict on evidence it could not read
    assert sum("Leases unreadable" in r.getMessage() for r in caplog.records) == 1  # once, not every tick
    kube.readable, kube.leases = True, {"a": Heartbeat("a", clock.now())}
    ctl.tick()
    assert liveness.states["a"] == "alive"
    assert any("read again" in r.getMessage() for r in caplog.records)
