"""The downgrade guard believes a Pod's class only where the policy does (issue 36): under
work_aware_v1 an untrusted Pod annotated performance held a node the budget lowered in draining, at
performance caps, for as long as it ran (found by tenants_cluster_test against a real API server)."""

from __future__ import annotations

from dataclasses import replace

from joulie_controller.model.fsm import PodInfo
from joulie_controller.model.hardware import NodeInfo
from joulie_controller.readings.values import Measurement
from joulie_controller.reconcile.forgedpower_test import _hardware
from joulie_controller.reconcile.reconcile_test import cluster, tick
from joulie_controller.reconcile.snapshot import Memory, Snapshot
from joulie_controller.settings import PolicySettings, Settings

MEMORY_BOUND = {"joulie.io/workload-kind": "cpu-memory"}


def _snap() -> Snapshot:
    snap = cluster(2)
    nodes = [NodeInfo(n.name, n.labels, allocatable_cpu=32, capacity_cpu=32) for n in snap.nodes]
    pods = [
        PodInfo("team", f"stream-{i}", node_name=f"node-{i}", phase="Running", cpu_request=26, labels=MEMORY_BOUND)
        for i in range(2)
    ]
    pods.append(
        PodInfo(
            "tenant",
            "sneaky",
            node_name="node-1",
            phase="Running",
            cpu_request=0.1,
            labels=MEMORY_BOUND,
            annotations={"joulie.io/workload-class": "performance"},
        )
    )
    return replace(
        snap,
        nodes=nodes,
        hardware={n.name: _hardware(n.name) for n in nodes},
        pods=pods,
        measurements={n.name: Measurement(300.0, components_w=260.0) for n in nodes},
    )


def _node1(trusted: tuple[str, ...]) -> tuple[str, float | None, bool]:
    s = Settings(
        policy=PolicySettings(type="work_aware_v1", queue_hp_base_frac=0.0, queue_hp_min=0, power_budget_w=100.0),
        trusted_namespaces=trusted,
    )
    result, after = tick(_snap(), s, Memory())
    twin = after.twins["node-1"]
    assert twin.spec.cpu is not None and twin.spec.scheduling is not None
    return twin.spec.profile, twin.spec.cpu.package_power_cap_pct_of_max, bool(twin.spec.scheduling.draining)


def test_an_untrusted_performance_pod_does_not_hold_its_node_in_draining_at_performance_caps() -> None:
    profile, cap, draining = _node1(("team",))
    assert (profile, draining) == ("eco", False) and cap is not None and cap < 100
    # Its namespace trusted, the same Pod is the operator's word: its node stays performance.
    profile, cap, draining = _node1(("team", "tenant"))
    assert (profile, cap) == ("performance", 100)


def test_under_the_static_policies_the_guard_still_holds_for_any_performance_pod() -> None:
    s = Settings(policy=PolicySettings(static_hp_frac=0.0))
    _, after = tick(_snap(), s, Memory())
    scheduling = after.twins["node-1"].spec.scheduling
    assert scheduling is not None and scheduling.draining
