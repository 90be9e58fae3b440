"""Agent liveness from the agents' heartbeat Leases, read from a watch cache, against a real kube-apiserver:
the same verdicts at the same times as from controlStatus.heartbeatAt (AGENT_LOST_AFTER after the last
renewal), and no LIST of Leases on a steady tick."""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException
from prometheus_client import CollectorRegistry

from joulie_api.backoff import Backoff
from joulie_api.kube import NODE_TWIN, JoulieClient
from joulie_api.names import (
    FIELD_MANAGER_CONTROLLER_MANAGER,
    FIELD_MANAGER_LIVENESS,
    LABEL_AGENT_HEARTBEAT,
    agent_lease_name,
    object_name_for_node,
)
from joulie_common.clock import FakeClock
from joulie_controller.controller import Controller
from joulie_controller.kube.informer import CachedCluster
from joulie_controller.kube.kube import ControllerKube, watch_cluster
from joulie_controller.kube.liveness import Liveness
from joulie_controller.kube_watch_cluster_test import make_node, requests
from joulie_controller.settings import NodeSettings, PrometheusSettings, Settings
from joulie_controller.telemetry.prometheus import PowerReader
from joulie_localcluster.controlplane import ControlPlane
from joulie_testinfra.waiting import eventually

pytest_plugins = ["joulie_testinfra.fixtures"]


def micro(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@pytest.fixture
def namespace(kube_api: k8s.ApiClient) -> Iterator[str]:
    name = f"leases-{uuid.uuid4().hex[:6]}"
    core = k8s.CoreV1Api(kube_api)
    core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=name)))
    yield name
    with contextlib.suppress(ApiException):
        core.delete_namespace(name)


def renew(api: k8s.ApiClient, ns: str, node: str, at: datetime) -> None:
    """What the agent's LeaseHeartbeat writes (joulie_agent/kube/heartbeat.py), created on 404."""
    coord = k8s.CoordinationV1Api(api)
    body = {"spec": {"holderIdentity": node, "renewTime": micro(at)}}
    merge = "application/merge-patch+json"
    try:
        coord.patch_namespaced_lease(agent_lease_name(node), ns, body, _content_type=merge)
    except ApiException as err:
        assert err.status == 404
        lease: Any = {
            "metadata": {"name": agent_lease_name(node), "labels": {LABEL_AGENT_HEARTBEAT: "true"}},
            "spec": {"holderIdentity": node},
        }
        coord.create_namespaced_lease(ns, lease)
        coord.patch_namespaced_lease(agent_lease_name(node), ns, body, _content_type=merge)


def seen_renewal(ctl: Controller, node: str, at: datetime) -> None:
    """Waits until the controller's Lease cache holds the renewal at ``at``."""

    def renewed() -> datetime | None:
        beat = (ctl.kube.heartbeats() or {}).get(node)
        return beat.renewed if beat is not None else None

    eventually(lambda: renewed() == at, timeout_s=10)


def state(cm: JoulieClient, node: str) -> str | None:
    twin = cm.get(NODE_TWIN, object_name_for_node(node))
    return twin.status.agent.state if twin and twin.status and twin.status.agent else None


def test_agent_lost_follows_the_lease_renewals_at_the_same_timing_with_no_lease_list(
    kube_api: k8s.ApiClient, control_plane: ControlPlane, namespace: str
) -> None:
    tag = uuid.uuid4().hex[:8]
    node = f"beat-{tag}"
    make_node(k8s.CoreV1Api(kube_api), node, tag)
    cluster: CachedCluster = watch_cluster(kube_api, 600.0, threading.Event(), namespace)
    try:
        cluster.wait_synced(30)
        s = Settings(
            nodes=NodeSettings(selector=f"test.joulie.io/suite={tag}"),
            prometheus=PrometheusSettings(url=""),
            pod_namespace=namespace,
        )
        assert s.heartbeat_namespace == namespace and s.agent_lost_after_s == 120
        cm = JoulieClient(kube_api, FIELD_MANAGER_CONTROLLER_MANAGER, Backoff(delays_s=(0.1, 0.2)))
        clock = FakeClock()
        ctl = Controller(
            s,
            ControllerKube(kube_api, cm, cluster=cluster, lease_namespace=namespace),
            PowerReader(s),
            clock=clock,
            liveness=Liveness(
                JoulieClient(kube_api, FIELD_MANAGER_LIVENESS), s.agent_lost_after_s, CollectorRegistry()
            ),
        )
        ctl.tick()  # creates the twin; no heartbeat yet: counted from first sight
        eventually(lambda: any(t.spec.node_name == node for t in cluster.values("twins")), timeout_s=10)

        before = requests(control_plane)
        for _ in range(6):  # a Lease renewed every 30 s for three minutes: alive throughout
            clock.advance(30)
            renew(kube_api, namespace, node, clock.now())
            seen_renewal(ctl, node, clock.now())
            ctl.tick()
            assert state(cm, node) == "alive"
        after = requests(control_plane)
        assert after.get(("LIST", "leases"), 0.0) == before.get(("LIST", "leases"), 0.0)

        last = clock.now()
        clock.advance(120)  # silent exactly AGENT_LOST_AFTER: still alive
        ctl.tick()
        assert state(cm, node) == "alive"
        clock.advance(1)  # past it: lost
        ctl.tick()
        twin = cm.get(NODE_TWIN, object_name_for_node(node))
        assert twin is not None and twin.status is not None and twin.status.agent is not None
        assert twin.status.agent.state == "agent-lost" and twin.status.agent.last_heartbeat == last

        renew(kube_api, namespace, node, clock.now())  # the agent is back
        seen_renewal(ctl, node, clock.now())
        ctl.tick()
        assert state(cm, node) == "alive"
    finally:
        cluster.close()
