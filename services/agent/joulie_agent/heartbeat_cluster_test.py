"""The agent's heartbeat Lease against the real kube-apiserver: created on the first tick, renewed every
AGENT_HEARTBEAT while NodeTwin controlStatus is left alone until it changes or AGENT_STATUS_REWRITE."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from joulie_agent.discovery.catalog import load_catalog
from joulie_agent.fixtures import testtrees
from joulie_agent.kube.agentkube import AgentKube
from joulie_agent.kube.heartbeat import LeaseHeartbeat
from joulie_agent.loop.agent import Agent
from joulie_agent.settings import Settings
from joulie_agent.telemetry.metrics import AgentMetrics
from joulie_api.generated.nodetwin import CPUCapSpec, NodeTwin, NodeTwinSpec
from joulie_api.kube import NODE_TWIN, JoulieClient
from joulie_api.names import (
    FIELD_MANAGER_AGENT,
    FIELD_MANAGER_CONTROLLER_MANAGER,
    LABEL_AGENT_HEARTBEAT,
    agent_lease_name,
    object_name_for_node,
)
from joulie_common.clock import FakeClock
from joulie_localcluster.nodes import create_node

pytest_plugins = ["joulie_testinfra.fixtures"]


@pytest.fixture
def namespace(kube_api: k8s.ApiClient) -> Iterator[str]:
    name = f"hb-{uuid.uuid4().hex[:6]}"
    core = k8s.CoreV1Api(kube_api)
    core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=name)))
    yield name
    with contextlib.suppress(ApiException):
        core.delete_namespace(name)


def _lease(kube_api: k8s.ApiClient, ns: str, node: str) -> k8s.V1Lease:
    lease = k8s.CoordinationV1Api(kube_api).read_namespaced_lease(agent_lease_name(node), ns)
    assert isinstance(lease, k8s.V1Lease)
    return lease


def _renewed(lease: k8s.V1Lease) -> datetime:
    assert lease.spec is not None and isinstance(lease.spec.renew_time, datetime)
    return lease.spec.renew_time


def _heartbeat_at(cm: JoulieClient, node: str) -> datetime | None:
    twin = cm.get(NODE_TWIN, object_name_for_node(node))
    cs = twin.status.control_status if twin and twin.status else None
    return cs.heartbeat_at if cs else None


def test_the_lease_is_renewed_every_heartbeat_and_control_status_only_when_it_changes(
    kube_api: k8s.ApiClient, namespace: str, tmp_path: Path
) -> None:
    node = f"hb-node.{uuid.uuid4().hex[:6]}"
    create_node(
        k8s.CoreV1Api(kube_api),
        node,
        {"feature.node.kubernetes.io/cpu-model.vendor_id": "Intel"},
        {"cpu": "8", "memory": "32Gi"},
    )
    testtrees.rapl_node(tmp_path)
    cm = JoulieClient(kube_api, FIELD_MANAGER_CONTROLLER_MANAGER)
    cm.apply(
        NODE_TWIN,
        object_name_for_node(node),
        NodeTwin(spec=NodeTwinSpec(node_name=node, profile="eco", cpu=CPUCapSpec(package_power_cap_watts=120))),
    )
    clock = FakeClock()
    leases = LeaseHeartbeat(kube_api, namespace, 30.0, clock.now, clock.monotonic)
    kube = AgentKube(
        JoulieClient(kube_api, FIELD_MANAGER_AGENT), clock, heartbeat_s=30.0, leases=leases, status_rewrite_s=600.0
    )
    agent = Agent(
        Settings(node_name=node, root=str(tmp_path), lease_namespace=namespace),
        kube,
        load_catalog(),
        clock,
        AgentMetrics(),
    )

    assert agent.tick() == 0
    first = _lease(kube_api, namespace, node)
    assert first.metadata is not None and first.metadata.labels == {LABEL_AGENT_HEARTBEAT: "true"}
    assert first.spec is not None and first.spec.holder_identity == node
    assert _renewed(first) == clock.now()
    status_beat = _heartbeat_at(cm, node)
    assert status_beat == clock.now()

    clock.advance(20)
    assert agent.tick() == 0  # not due yet: nothing written
    assert _lease(kube_api, namespace, node).metadata.resource_version == first.metadata.resource_version  # type: ignore[union-attr]
    for _ in range(6):  # three minutes of ticks every 30 s: the Lease follows, controlStatus stays
        clock.advance(30)
        assert agent.tick() == 0
        assert _renewed(_lease(kube_api, namespace, node)) == clock.now()
    assert _heartbeat_at(cm, node) == status_beat

    # A changed outcome is written at once (a cap the controller changed).
    cm.apply(
        NODE_TWIN,
        object_name_for_node(node),
        NodeTwin(spec=NodeTwinSpec(node_name=node, profile="eco", cpu=CPUCapSpec(package_power_cap_watts=130))),
    )
    clock.advance(1)
    assert agent.tick() == 0
    assert _heartbeat_at(cm, node) == clock.now()

    # A Lease deleted under the agent is created again at its next renewal.
    k8s.CoordinationV1Api(kube_api).delete_namespaced_lease(agent_lease_name(node), namespace)
    clock.advance(30)
    assert agent.tick() == 0
    assert _renewed(_lease(kube_api, namespace, node)) == clock.now()
