"""The loop over nodes: pool sharding, one node's failure isolated and counted."""

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

from prometheus_client import generate_latest

from joulie_agent.control.outcomes import CPUOutcome, GPUOutcome
from joulie_agent.discovery.catalog import load_catalog
from joulie_agent.fixtures import testtrees
from joulie_agent.kube.agentkube import AgentKube, NodeSeen
from joulie_agent.loop.agent import Agent
from joulie_agent.settings import Settings
from joulie_agent.telemetry.metrics import AgentMetrics
from joulie_api.generated.nodehardware import NodeHardwareStatus
from joulie_api.generated.nodetwin import NodeTwinSpec
from joulie_common.clock import FakeClock
from joulie_common.sharding import owns_node


class FakeKube:
    def __init__(self, nodes: list[str]):
        body = json.dumps({"items": [{"metadata": {"name": n, "labels": {}}, "status": {"allocatable": {}}}
                                     for n in nodes]}).encode()
        self.lists = 0

        def list_node(label_selector: str, _preload_content: bool) -> SimpleNamespace:
            self.lists += 1
            return SimpleNamespace(data=body)

        self.client = SimpleNamespace(core=SimpleNamespace(list_node=list_node))
        self.node_view: Any = None
        self.published: list[str] = []
        self.statuses: dict[str, CPUOutcome] = {}
        self.renewed: list[str] = []
        self.forgotten: list[str] = []

    list_nodes = AgentKube.list_nodes
    watched_nodes = AgentKube.watched_nodes

    def publish_hardware(self, node: str, status: NodeHardwareStatus) -> bool:
        self.published.append(node)
        return True

    def read_spec(self, node: str) -> tuple[bool, NodeTwinSpec | None]:
        if node == "broken-0":
            raise RuntimeError("apiserver said no")
        return True, None

    def write_control_status(self, node: str, cpu: CPUOutcome, gpu: GPUOutcome) -> bool:
        self.statuses[node] = cpu
        return True

    def renew_lease(self, node: str) -> bool:
        self.renewed.append(node)
        return True

    def forget_lease(self, node: str) -> None:
        self.forgotten.append(node)


def test_pool_replica_reconciles_only_its_shard_and_survives_a_failing_node(tmp_path: Path) -> None:
    nodes = [f"kwok-{i}" for i in range(12)] + ["broken-0"]
    for n in nodes:
        testtrees.cpuinfo(tmp_path / n)
    shard = next(k for k in range(2) if owns_node("broken-0", 2, k))
    settings = Settings(mode="pool", root=str(tmp_path / "{node}"), pool_shards=2, pool_shard_id=shard)
    kube, metrics = FakeKube(nodes), AgentMetrics()
    agent = Agent(settings, cast(AgentKube, cast(Any, kube)), load_catalog(), FakeClock(), metrics)
    assert agent.tick() == 1
    mine = {n for n in nodes if owns_node(n, 2, shard)}
    assert set(kube.published) == mine
    assert set(kube.statuses) == mine - {"broken-0"}
    # each node's heartbeat Lease is renewed once its reconcile went through, the failing one's not
    assert sorted(kube.renewed) == sorted(mine - {"broken-0"})
    assert all(s.result == "none" for s in kube.statuses.values())
    assert 'joulie_reconcile_errors_total{node="broken-0"} 1.0' in generate_latest(metrics.registry).decode()


class NodeView:
    """A Node watch's view as ``AgentKube.watched_nodes`` reads it."""

    def __init__(self, names: list[str]) -> None:
        import threading

        self.items = [NodeSeen(n, {}, {}, {}) for n in names]
        self.synced = threading.Event()
        self.synced.set()

    def values(self) -> list[NodeSeen]:
        return list(self.items)


def test_a_pool_agent_reads_its_nodes_from_the_watch_and_lists_only_while_the_watch_is_down(tmp_path: Path) -> None:
    for n in ["kwok-0", "kwok-1", "kwok-2"]:
        testtrees.cpuinfo(tmp_path / n)
    clock = FakeClock()
    settings = Settings(mode="pool", root=str(tmp_path / "{node}"), pool_list_interval_s=60)
    kube = FakeKube(["kwok-0", "kwok-1"])
    kube.node_view = view = NodeView(["kwok-0", "kwok-1"])
    agent = Agent(settings, cast(AgentKube, cast(Any, kube)), load_catalog(), clock, AgentMetrics())
    assert agent.tick() == 0
    assert kube.lists == 0 and set(kube.published) == {"kwok-0", "kwok-1"}
    # a Node the watch brings is reconciled at the next tick, not a POOL_LIST_INTERVAL later
    view.items.append(NodeSeen("kwok-2", {}, {}, {}))
    clock.advance(20)
    kube.published.clear()
    assert agent.tick() == 0
    assert kube.lists == 0 and set(kube.published) == {"kwok-0", "kwok-1", "kwok-2"}
    # the watch down (an API server restart): the last view is enforced, a LIST only once it is a
    # POOL_LIST_INTERVAL old (every agent's watch drops at once, and resumes without listing)
    view.synced.clear()
    clock.advance(20)
    assert agent.tick() == 0
    assert kube.lists == 0 and "kwok-2" in agent.controllers
    clock.advance(60)
    assert agent.tick() == 0
    assert kube.lists == 1 and "kwok-2" not in agent.controllers  # the LIST's answer names two Nodes


class FlakyKube(FakeKube):
    def __init__(self, spec: NodeTwinSpec):
        super().__init__(["n1"])
        self.spec, self.fail = spec, False

    def read_spec(self, node: str) -> tuple[bool, NodeTwinSpec | None]:
        if self.fail:
            raise ConnectionError("apiserver unreachable")
        return True, self.spec


def test_unreadable_twin_keeps_the_cap_for_a_while_then_relaxes_it(tmp_path: Path) -> None:
    from joulie_api.generated.nodetwin import CPUCapSpec

    testtrees.rapl_node(tmp_path / "n1")
    kube = FlakyKube(NodeTwinSpec(node_name="n1", profile="eco", cpu=CPUCapSpec(package_power_cap_watts=120)))
    clock = FakeClock()
    settings = Settings(mode="pool", root=str(tmp_path / "{node}"), spec_read_timeout_s=300)
    agent = Agent(settings, cast(AgentKube, cast(Any, kube)), load_catalog(), clock, AgentMetrics())
    assert agent.tick() == 0
    assert testtrees.pl1(tmp_path / "n1", "intel-rapl:0") == "120000000"
    kube.fail = True
    clock.advance(200)
    assert agent.tick() == 1
    assert testtrees.pl1(tmp_path / "n1", "intel-rapl:0") == "120000000"
    clock.advance(200)
    assert agent.tick() == 1
    assert testtrees.pl1(tmp_path / "n1", "intel-rapl:0") == "165000000"


def test_a_node_without_energy_counters_says_so_in_nodehardware_when_exporting(tmp_path: Path) -> None:
    from joulie_agent.power.powerexport import NO_COUNTERS_REASON
    from joulie_agent.telemetry.otlpexport import PowerExporter
    from joulie_agent.telemetry.otlpexport_test import FakeExporter

    testtrees.cpuinfo(tmp_path / "vm-0")            # no powercap, no GPU: nothing to measure
    testtrees.rapl_node(tmp_path / "metal-0", sockets=1)
    settings = Settings(mode="pool", root=str(tmp_path / "{node}"), tool_path=str(tmp_path / "no-bin"))
    kube, fake = FakeKube(["vm-0", "metal-0"]), FakeExporter()
    agent = Agent(settings, cast(AgentKube, cast(Any, kube)), load_catalog(), FakeClock(), AgentMetrics(),
                  exporter=PowerExporter(fake, 10.0))
    assert agent.tick() == 0
    vm, metal = agent.controllers["vm-0"].hardware, agent.controllers["metal-0"].hardware
    assert vm is not None and vm.quality is not None and NO_COUNTERS_REASON in (vm.quality.warnings or [])
    assert metal is not None and metal.quality is not None and NO_COUNTERS_REASON not in (metal.quality.warnings or [])
    agent.exporter.export_once()  # type: ignore[union-attr]
    (data,) = fake.sent
    # The node without counters sends no power, only its agent's reconcile time (issue 39: its heartbeat)
    sent = {str(rm.resource.attributes["k8s.node.name"]): {m.name for sm in rm.scope_metrics for m in sm.metrics}
            for rm in data.resource_metrics}
    assert sent["vm-0"] == {"joulie.agent.reconcile.time"}
    assert {"hw.host.energy", "joulie.agent.reconcile.time"} <= sent["metal-0"]


def test_a_node_is_read_from_its_json_with_labels_allocatable_and_capacity() -> None:
    from joulie_agent.kube.agentkube import node_seen

    seen = node_seen({"metadata": {"name": "n1", "labels": {"joulie.io/managed": "true"}},
                      "status": {"allocatable": {"cpu": "94", "nvidia.com/gpu": "8"}, "capacity": {"cpu": "96"}}})
    assert seen is not None and seen.name == "n1" and seen.labels == {"joulie.io/managed": "true"}
    assert seen.allocatable == {"cpu": "94", "nvidia.com/gpu": "8"} and seen.capacity == {"cpu": "96"}
    assert node_seen({"metadata": {}}) is None
    bare = node_seen({"metadata": {"name": "n2"}})
    assert bare is not None and (bare.labels, bare.allocatable, bare.capacity) == ({}, {}, {})


def test_a_pool_agent_lists_its_nodes_once_per_list_interval(tmp_path: Path) -> None:
    nodes = [f"kwok-{i}" for i in range(4)]
    for n in nodes:
        testtrees.cpuinfo(tmp_path / n)
    kube = FakeKube(nodes)
    lists: list[str] = []
    real_list = kube.client.core.list_node

    def counting_list(label_selector: str, _preload_content: bool) -> Any:
        lists.append(label_selector)
        return real_list(label_selector=label_selector, _preload_content=_preload_content)

    kube.client.core.list_node = counting_list
    clock = FakeClock()
    settings = Settings(mode="pool", root=str(tmp_path / "{node}"), pool_list_interval_s=60.0)
    agent = Agent(settings, cast(AgentKube, cast(Any, kube)), load_catalog(), clock, AgentMetrics())
    for _ in range(3):
        assert agent.tick() == 0
        clock.advance(20.0)
    assert len(lists) == 1 and set(kube.statuses) == set(nodes)  # every node reconciled each tick, one list
    assert agent.tick() == 0
    assert len(lists) == 2
