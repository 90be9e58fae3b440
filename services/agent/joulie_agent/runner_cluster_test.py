"""Contract with the real kube-apiserver (CRDs installed): what the agent writes and owns."""

from __future__ import annotations

import threading
import uuid
from pathlib import Path
from typing import Any

from kubernetes import client as k8s

from joulie_agent.discovery.catalog import load_catalog
from joulie_agent.fixtures import testtrees
from joulie_agent.kube.agentkube import AgentKube
from joulie_agent.loop.agent import Agent
from joulie_agent.settings import Settings
from joulie_agent.telemetry.metrics import AgentMetrics
from joulie_api.generated.nodetwin import CPUCapSpec, NodeTwin, NodeTwinSpec, NodeTwinStatus
from joulie_api.kube import NODE_HARDWARE, NODE_TWIN, JoulieClient
from joulie_api.names import (
    FIELD_MANAGER_AGENT,
    FIELD_MANAGER_CONTROLLER_MANAGER,
    GROUP,
    PLURAL_NODE_TWIN,
    VERSION,
    object_name_for_node,
)
from joulie_common.clock import FakeClock
from joulie_common.sharding import owns_node
from joulie_localcluster.nodes import create_node

pytest_plugins = ["joulie_testinfra.fixtures"]


def make_node(core: k8s.CoreV1Api, name: str) -> None:
    create_node(core, name, {"feature.node.kubernetes.io/cpu-model.vendor_id": "Intel"}, {"cpu": "8", "memory": "32Gi"})


def raw(kube_api: k8s.ApiClient, plural: str, name: str) -> dict[str, Any]:
    obj = k8s.CustomObjectsApi(kube_api).get_cluster_custom_object(GROUP, VERSION, plural, name)
    assert isinstance(obj, dict)
    return obj


def agent_for(kube_api: k8s.ApiClient, node: str, root: Path, clock: FakeClock) -> Agent:
    settings = Settings(mode="daemonset", node_name=node, root=str(root))
    kube = AgentKube(JoulieClient(kube_api, FIELD_MANAGER_AGENT), clock)
    return Agent(settings, kube, load_catalog(), clock, AgentMetrics())


def test_agent_publishes_hardware_enforces_the_twin_and_owns_only_control_status(
        kube_api: k8s.ApiClient, tmp_path: Path) -> None:
    node = f"agent-node.{uuid.uuid4().hex[:6]}"  # the dot makes the object name differ
    name = object_name_for_node(node)
    core = k8s.CoreV1Api(kube_api)
    make_node(core, node)
    testtrees.rapl_node(tmp_path)
    cm = JoulieClient(kube_api, FIELD_MANAGER_CONTROLLER_MANAGER)
    cm.apply(NODE_TWIN, name, NodeTwin(spec=NodeTwinSpec(node_name=node, profile="eco",
                                                         cpu=CPUCapSpec(package_power_cap_watts=120))))
    clock = FakeClock()
    agent = agent_for(kube_api, node, tmp_path, clock)

    assert agent.tick() == 0
    assert testtrees.pl1(tmp_path, "intel-rapl:0") == "120000000"
    hw = cm.get(NODE_HARDWARE, name)
    assert hw is not None and hw.spec.node_name == node
    assert hw.status is not None and hw.status.cpu is not None and hw.status.cpu.model == "INTEL_XEON_PLATINUM_8260"
    assert hw.status.updated_at is not None
    twin = raw(kube_api, PLURAL_NODE_TWIN, name)
    cpu = twin["status"]["controlStatus"]["cpu"]
    assert (cpu["backend"], cpu["result"]) == ("rapl", "applied") and cpu["updatedAt"]
    assert twin["status"]["controlStatus"]["gpu"]["result"] == "none"

    agent_fields = [m["fieldsV1"] for m in twin["metadata"]["managedFields"] if m["manager"] == FIELD_MANAGER_AGENT]
    assert agent_fields, "the agent's write is not attributed to joulie-agent"
    for fields in agent_fields:
        assert set(fields) == {"f:status"}
        assert set(fields["f:status"]) == {"f:controlStatus"}
    cm_fields = [m for m in twin["metadata"]["managedFields"] if m["manager"] == FIELD_MANAGER_CONTROLLER_MANAGER]
    assert all("f:controlStatus" not in str(m["fieldsV1"]) for m in cm_fields)

    # Nothing changed: no write, no resourceVersion bump (idle nodes generate no traffic).
    rv_hw, rv_twin = raw(kube_api, "nodehardwares", name)["metadata"]["resourceVersion"], twin["metadata"]["resourceVersion"]
    clock.advance(20)
    assert agent.tick() == 0
    assert raw(kube_api, "nodehardwares", name)["metadata"]["resourceVersion"] == rv_hw
    assert raw(kube_api, PLURAL_NODE_TWIN, name)["metadata"]["resourceVersion"] == rv_twin
    # ...but unchanged state is rewritten after five minutes.
    clock.advance(300)
    assert agent.tick() == 0
    assert raw(kube_api, "nodehardwares", name)["metadata"]["resourceVersion"] != rv_hw


def test_node_without_a_twin_gets_hardware_and_no_error(kube_api: k8s.ApiClient, tmp_path: Path) -> None:
    node = f"lonely-{uuid.uuid4().hex[:6]}"
    make_node(k8s.CoreV1Api(kube_api), node)
    testtrees.cpuinfo(tmp_path)
    agent = agent_for(kube_api, node, tmp_path, FakeClock())
    assert agent.tick() == 0
    assert JoulieClient(kube_api, "reader").get(NODE_HARDWARE, object_name_for_node(node)) is not None
    assert JoulieClient(kube_api, "reader").get(NODE_TWIN, object_name_for_node(node)) is None


def test_run_once_subcommand_in_emulated_mode(control_plane: Any, kube_api: k8s.ApiClient, tmp_path: Path,
                                              monkeypatch: Any) -> None:
    from joulie_agent.cli import main

    node = f"emu-{uuid.uuid4().hex[:6]}"
    make_node(k8s.CoreV1Api(kube_api), node)
    testtrees.rapl_node(tmp_path / node)
    JoulieClient(kube_api, FIELD_MANAGER_CONTROLLER_MANAGER).apply(
        NODE_TWIN, node, NodeTwin(spec=NodeTwinSpec(node_name=node, profile="eco",
                                                    cpu=CPUCapSpec(package_power_cap_pct_of_max=50))))
    for k, v in {"KUBECONFIG": str(control_plane.kubeconfig), "AGENT_MODE": "emulated", "NODE_NAME": node,
                 "ROOT": str(tmp_path / "{node}"), "METRICS_ADDR": ""}.items():
        monkeypatch.setenv(k, v)
    assert main(["run", "--once"]) == 0
    assert testtrees.pl1(tmp_path / node, "intel-rapl:1") == "82500000"
    twin = raw(kube_api, PLURAL_NODE_TWIN, node)
    assert twin["status"]["controlStatus"]["cpu"]["result"] == "applied"


def test_twin_watch_wakes_the_loop_on_a_spec_change(kube_api: k8s.ApiClient) -> None:

    from joulie_agent.kube.twinwatch import TwinWatcher

    wake, stop = threading.Event(), threading.Event()
    TwinWatcher(kube_api, wake, stop).start()
    try:
        wake.wait(5)  # the initial listing (existing twins) may wake it once
        wake.clear()
        node = f"watched-{uuid.uuid4().hex[:6]}"
        JoulieClient(kube_api, FIELD_MANAGER_CONTROLLER_MANAGER).apply(
            NODE_TWIN, node, NodeTwin(spec=NodeTwinSpec(node_name=node, profile="performance")))
        assert wake.wait(10), "a NodeTwin change did not wake the agent loop"
    finally:
        stop.set()


def test_twin_watch_of_one_node_ignores_status_writes_and_other_twins(kube_api: k8s.ApiClient) -> None:

    from joulie_agent.kube.twinwatch import TwinWatcher

    node, other = f"mine.{uuid.uuid4().hex[:6]}", f"other-{uuid.uuid4().hex[:6]}"  # the dot: the twin's name differs
    name = object_name_for_node(node)
    ctl = JoulieClient(kube_api, FIELD_MANAGER_CONTROLLER_MANAGER)
    ctl.apply(NODE_TWIN, name, NodeTwin(spec=NodeTwinSpec(node_name=node, profile="performance")))
    wake, stop = threading.Event(), threading.Event()
    watcher = TwinWatcher(kube_api, wake, stop, twin_name=name).start()
    try:
        assert wake.wait(10), "the watch did not see the node's own twin"
        wake.clear()
        ctl.apply(NODE_TWIN, other, NodeTwin(spec=NodeTwinSpec(node_name=other, profile="eco")))
        ctl.apply_status(NODE_TWIN, name, NodeTwinStatus(schedulable_class="eco"))
        assert not wake.wait(3), "another twin or a status write woke the loop"
        ctl.apply(NODE_TWIN, name, NodeTwin(spec=NodeTwinSpec(node_name=node, profile="eco")))
        assert wake.wait(10), "a spec change of the node's twin did not wake the loop"
        assert watcher.resource_version == "" or watcher.resource_version.isdigit()
    finally:
        stop.set()


def test_a_pool_agent_reads_its_shard_of_the_selected_nodes(kube_api: k8s.ApiClient, tmp_path: Path) -> None:
    tag = uuid.uuid4().hex[:6]
    core = k8s.CoreV1Api(kube_api)
    names = [f"pool-{tag}-{i}" for i in range(6)]
    for n in names:
        create_node(core, n, {"test.joulie.io/pool": tag}, {"cpu": "8", "memory": "32Gi"})
    create_node(core, f"other-{tag}", {}, {"cpu": "8"})
    clock = FakeClock()
    kube = AgentKube(JoulieClient(kube_api, FIELD_MANAGER_AGENT), clock)
    seen = {n.name: n for n in kube.list_nodes(f"test.joulie.io/pool={tag}")}
    assert sorted(seen) == names
    assert seen[names[0]].labels["test.joulie.io/pool"] == tag and seen[names[0]].allocatable["cpu"] == "8"
    shard = Settings(mode="pool", root=str(tmp_path / "{node}"), pool_selector=f"test.joulie.io/pool={tag}",
                     pool_shards=2, pool_shard_id=1)
    agent = Agent(shard, kube, load_catalog(), clock, AgentMetrics())
    assert sorted(n.name for n in agent.nodes()) == [n for n in names if owns_node(n, 2, 1)]


def test_a_pool_agents_node_watch_keeps_its_shard_without_listing_again(kube_api: k8s.ApiClient, tmp_path: Path) -> None:
    import time

    from joulie_agent.runner import watch_pool_nodes

    tag = uuid.uuid4().hex[:6]
    core = k8s.CoreV1Api(kube_api)
    names = [f"watched-{tag}-{i}" for i in range(8)]
    for n in names[:6]:
        create_node(core, n, {"test.joulie.io/pool": tag}, {"cpu": "8", "memory": "32Gi"})
    settings = Settings(mode="pool", root=str(tmp_path / "{node}"), pool_selector=f"test.joulie.io/pool={tag}",
                        pool_shards=2, pool_shard_id=0)
    stop = threading.Event()
    view = watch_pool_nodes(kube_api, settings, stop)
    assert view is not None
    kube = AgentKube(JoulieClient(kube_api, FIELD_MANAGER_AGENT), FakeClock(), node_view=view)

    def shard() -> list[str]:
        seen = kube.watched_nodes()
        return sorted(n.name for n in seen) if seen is not None else []

    def eventually(want: list[str]) -> None:
        deadline = time.monotonic() + 15
        while shard() != want and time.monotonic() < deadline:
            time.sleep(0.1)
        assert shard() == want

    try:
        assert view.synced.wait(15), "the Node watch never listed"
        eventually(sorted(n for n in names[:6] if owns_node(n, 2, 0)))
        # Nodes added to the pool and a label taken off one: seen by the watch, with no second list
        for n in names[6:]:
            create_node(core, n, {"test.joulie.io/pool": tag}, {"cpu": "8", "memory": "32Gi"})
        gone = next(n for n in names[:6] if owns_node(n, 2, 0))
        core.patch_node(gone, {"metadata": {"labels": {"test.joulie.io/pool": None}}})
        eventually(sorted(n for n in names if owns_node(n, 2, 0) and n != gone))
        assert kube.watched_nodes() is not None
        assert next(n for n in kube.watched_nodes() or []).allocatable["cpu"] == "8"
        assert view.lists == 1
    finally:
        stop.set()
    # the other shard's Nodes and the unselected ones never enter the view; NODE_RESYNC=0: no watch
    assert not any(owns_node(n, 2, 1) for n in shard())
    no_watch = Settings(mode="pool", root=str(tmp_path / "{node}"), node_resync_s=0)
    assert watch_pool_nodes(kube_api, no_watch, threading.Event()) is None
