"""Test doubles of the controller manager, for its own tests and the products' (a product imports this
module only from ``*_test.py`` and ``conftest.py``): the cluster the controller loop talks to, kept in
memory as a Snapshot (``MemoryKube``, starting at ``T0``), and a power reader that measures nothing
(``NoPower``). Writes, cordons and taints land in it as the API server would keep them, so a test
drives the real ``Controller`` without an API server."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from joulie_api.generated.nodetwin import PowerStatus
from joulie_api.kube import KubeWriteError
from joulie_controller.kube.heartbeats import Heartbeat
from joulie_controller.kube.kube import WriteReport
from joulie_controller.model.fsm import PodInfo
from joulie_controller.model.hardware import NodeInfo
from joulie_controller.reconcile.snapshot import SUSPENDED_TAINT, NodeWrite, Snapshot, TickResult, apply_in_memory
from joulie_controller.telemetry.prometheus import PowerReading

T0 = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


class MemoryKube:
    """Nodes, Pods and NodeTwins in memory. ``refuse_cordon``: the next cordons fail with a 403, as
    under RBAC that forbids patching Nodes."""

    def __init__(self, nodes: list[NodeInfo], pods: list[PodInfo]):
        self.snap = Snapshot(T0, nodes, pods, {}, {}, {})
        self.refuse_cordon = False
        self.leases: dict[str, Heartbeat] = {}
        """The agents' heartbeat Lease renewals by node name, as ``ControllerKube.heartbeats`` reads them."""

    def snapshot(self, now: datetime, *_: Any) -> Snapshot:
        return replace(self.snap, now=now)

    def heartbeats(self) -> dict[str, Heartbeat]:
        return dict(self.leases)

    def write(self, writes: list[NodeWrite], profile_label: str) -> WriteReport:
        self.snap = apply_in_memory(self.snap, TickResult(writes, [], None, []), profile_label)
        return WriteReport(writes=len(writes))

    def set_suspended(self, node: str, suspended: bool) -> None:
        if self.refuse_cordon:
            raise KubeWriteError("cordon", "Node", node, "joulie-controller-manager", 403, "forbidden")
        if node not in {n.name for n in self.snap.nodes}:
            raise KubeWriteError("cordon", "Node", node, "joulie-controller-manager", 404, "not found")
        self.snap = replace(self.snap, nodes=[
            replace(n, unschedulable=suspended, taints=(SUSPENDED_TAINT,) if suspended else ())
            if n.name == node else n for n in self.snap.nodes])

    def power(self, node: str) -> PowerStatus:
        """The NodeTwin's status.power as the controller last wrote it (there must be one)."""
        status = self.snap.twins[node].status
        if status is None or status.power is None:
            raise AssertionError(f"NodeTwin {node}: no status.power written")
        return status.power

    def node(self, name: str) -> NodeInfo:
        return next(n for n in self.snap.nodes if n.name == name)


class NoPower:
    """A Prometheus with no power data (the power policy does not need it)."""

    def read(self) -> PowerReading:
        return PowerReading()

    def agent_times(self) -> dict[str, datetime] | None:
        return None
