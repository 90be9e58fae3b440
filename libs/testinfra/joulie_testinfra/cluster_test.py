"""The test control plane is the real thing: KWOK nodes, kube-scheduler binding, CRD validation, SSA."""

from __future__ import annotations

import uuid
from typing import Any, cast

import pytest
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from joulie_api.backoff import Backoff
from joulie_api.generated.nodetwin import (
    ControlStatus,
    CPUControlStatus,
    NodeTwin,
    NodeTwinSpec,
    NodeTwinStatus,
    PowerMeasurement,
)
from joulie_api.kube import NODE_TWIN, JoulieClient, KubeWriteError
from joulie_api.names import FIELD_MANAGER_AGENT, FIELD_MANAGER_CONTROLLER_MANAGER, GROUP, PLURAL_NODE_TWIN, VERSION
from joulie_localcluster.controlplane import ControlPlane
from joulie_localcluster.kwok import KWOK_TAINT_KEY
from joulie_localcluster.nodes import node_body
from joulie_localcluster.procs import ManagedProcess
from joulie_testinfra.waiting import eventually

pytest_plugins = ["joulie_testinfra.fixtures"]




def fake_node(name: str) -> k8s.V1Node:
    node = k8s.V1Node.from_dict(node_body(name, {"kubernetes.io/hostname": name, "type": "kwok"},
                                          {"cpu": "32", "memory": "256Gi", "pods": "110"}, kwok=True))
    assert node is not None
    return node


def node_ready(core: k8s.CoreV1Api, name: str) -> bool:
    node = core.read_node(name)
    conds = node.status.conditions if node.status and node.status.conditions else []
    return any(c.type == "Ready" and c.status == "True" for c in conds)


def test_control_plane_is_ready_within_30_s(control_plane: ControlPlane) -> None:
    assert control_plane.ready_s <= 30
    status, body = control_plane.get("/apis/joulie.io/v1alpha1")
    assert status == 200
    assert {"nodehardwares", "nodetwins"} <= {r for r in body.split('"') if r in ("nodehardwares", "nodetwins")}


def test_kwok_node_becomes_ready(kube_api: k8s.ApiClient, kwok: ManagedProcess) -> None:
    core = k8s.CoreV1Api(kube_api)
    name = f"kwok-ready-{uuid.uuid4().hex[:6]}"
    core.create_node(fake_node(name))
    eventually(lambda: node_ready(core, name), what=f"node {name} Ready")


def test_pod_is_bound_by_kube_scheduler_and_runs(
    kube_api: k8s.ApiClient, kwok: ManagedProcess, scheduler: ManagedProcess
) -> None:
    core = k8s.CoreV1Api(kube_api)
    node = f"kwok-sched-{uuid.uuid4().hex[:6]}"
    core.create_node(fake_node(node))
    eventually(lambda: node_ready(core, node), what=f"node {node} Ready")
    pod = k8s.V1Pod.from_dict({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"p-{uuid.uuid4().hex[:6]}", "namespace": "default"},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": node},
            "tolerations": [{"key": KWOK_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [{"name": "work", "image": "fake", "resources": {"requests": {"cpu": "1"}}}],
        },
    })
    assert pod is not None and pod.metadata is not None and pod.metadata.name is not None
    name = pod.metadata.name
    core.create_namespaced_pod("default", pod)

    def bound_node() -> str | None:
        spec = core.read_namespaced_pod(name, "default").spec
        return spec.node_name if spec else None

    def running() -> bool:
        status = core.read_namespaced_pod(name, "default").status
        return status is not None and status.phase == "Running"

    assert eventually(bound_node, what=f"pod {name} bound") == node
    eventually(running, what=f"pod {name} Running")


def test_a_pod_asking_gpus_tolerates_the_gpu_nodes_taint_as_on_a_gpu_cluster(kube_api: k8s.ApiClient) -> None:
    # ExtendedResourceToleration: without it no trace job asking GPUs could reach the tainted GPU Nodes.
    core = k8s.CoreV1Api(kube_api)

    def admitted(requests: dict[str, str]) -> list[tuple[str, str, str]]:
        pod = k8s.V1Pod.from_dict({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"gpu-{uuid.uuid4().hex[:6]}"},
            "spec": {"containers": [{"name": "w", "image": "fake", "resources": {"requests": requests, "limits": requests}}]},
        })
        assert pod is not None
        spec = core.create_namespaced_pod("default", pod, dry_run="All").spec
        assert spec is not None
        return [(str(t.key), str(t.operator), str(t.effect)) for t in spec.tolerations or [] if t.key and "gpu" in t.key]

    assert admitted({"cpu": "1", "nvidia.com/gpu": "2"}) == [("nvidia.com/gpu", "Exists", "NoSchedule")]
    assert admitted({"cpu": "1", "amd.com/gpu": "1"}) == [("amd.com/gpu", "Exists", "NoSchedule")]
    assert admitted({"cpu": "1"}) == []


def test_nodetwin_violating_the_schema_is_rejected_with_the_field(kube_api: k8s.ApiClient) -> None:
    api = k8s.CustomObjectsApi(kube_api)
    bad = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "NodeTwin",
        "metadata": {"name": "bad-profile"},
        "spec": {"nodeName": "bad-profile", "profile": "turbo", "cpu": {"packagePowerCapPctOfMax": 150}},
    }
    with pytest.raises(ApiException) as err:
        api.create_cluster_custom_object(GROUP, VERSION, PLURAL_NODE_TWIN, bad)
    assert err.value.status == 422
    body = err.value.body or ""
    assert "spec.profile" in body and "turbo" in body
    assert "spec.cpu.packagePowerCapPctOfMax" in body


@pytest.mark.parametrize(("part", "field", "value"), [
    ("cpu", "packagePowerCapPctOfMax", 0.001), ("cpu", "packagePowerCapWatts", 2),
    ("gpu", "powerCap.capPctOfMax", 5), ("gpu", "powerCap.capWattsPerGpu", 1),
])
def test_a_cap_below_what_hardware_accepts_is_rejected_by_the_api_server(kube_api: k8s.ApiClient, part: str,
                                                                        field: str, value: float) -> None:
    # Issue 23, defect 6a: 0.001 % was accepted and the agent applied a 0.0 W package cap.
    api = k8s.CustomObjectsApi(kube_api)
    leaf: dict[str, object] = {field.split(".")[-1]: value}
    body = {"powerCap": leaf} if part == "gpu" else leaf
    low = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "NodeTwin", "metadata": {"name": "too-low"},
           "spec": {"nodeName": "too-low", "profile": "eco", part: body}}
    with pytest.raises(ApiException) as err:
        api.create_cluster_custom_object(GROUP, VERSION, PLURAL_NODE_TWIN, low, dry_run="All")
    assert err.value.status == 422
    assert f"spec.{part}.{field}" in (err.value.body or "") and "should be greater than or equal to 10" in (
        err.value.body or "")


def test_setting_both_cpu_cap_forms_is_rejected(kube_api: k8s.ApiClient) -> None:
    api = k8s.CustomObjectsApi(kube_api)
    both = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "NodeTwin",
        "metadata": {"name": "both-caps"},
        "spec": {"nodeName": "both-caps", "profile": "eco",
                 "cpu": {"packagePowerCapWatts": 200, "packagePowerCapPctOfMax": 60}},
    }
    with pytest.raises(ApiException) as err:
        api.create_cluster_custom_object(GROUP, VERSION, PLURAL_NODE_TWIN, both)
    assert err.value.status == 422
    assert "set at most one of packagePowerCapWatts and packagePowerCapPctOfMax" in (err.value.body or "")


def test_server_side_apply_records_each_field_manager(kube_api: k8s.ApiClient) -> None:
    no_wait = Backoff(delays_s=())
    controller = JoulieClient(kube_api, FIELD_MANAGER_CONTROLLER_MANAGER, no_wait)
    agent = JoulieClient(kube_api, FIELD_MANAGER_AGENT, no_wait)
    name = "ssa-node"

    controller.apply(NODE_TWIN, name, NodeTwin(spec=NodeTwinSpec(node_name="SSA_Node", profile="eco")))
    controller.apply_status(
        NODE_TWIN, name,
        NodeTwinStatus(schedulable_class="eco",
                       power_measurement=PowerMeasurement(source="prometheus", measured_node_power_w=2150.0)),
    )
    twin = agent.apply_status(
        NODE_TWIN, name, NodeTwinStatus(control_status=ControlStatus(cpu=CPUControlStatus(backend="rapl", result="applied")))
    )
    # The server returns 2150.0 as the integer 2150; the typed read accepts it.
    assert twin.status is not None and twin.status.power_measurement is not None
    assert twin.status.power_measurement.measured_node_power_w == 2150.0
    assert twin.status.schedulable_class == "eco", "the agent's apply must not remove the controller's fields"

    raw = cast(dict[str, Any], k8s.CustomObjectsApi(kube_api).get_cluster_custom_object(GROUP, VERSION, PLURAL_NODE_TWIN, name))
    owned: dict[tuple[str, str], str] = {
        (m["manager"], m.get("subresource", "")): str(m["fieldsV1"]) for m in raw["metadata"]["managedFields"]
    }
    assert "f:spec" in owned[(FIELD_MANAGER_CONTROLLER_MANAGER, "")]
    assert "f:schedulableClass" in owned[(FIELD_MANAGER_CONTROLLER_MANAGER, "status")]
    assert "f:controlStatus" not in owned[(FIELD_MANAGER_CONTROLLER_MANAGER, "status")]
    assert "f:controlStatus" in owned[(FIELD_MANAGER_AGENT, "status")]
    assert "f:schedulableClass" not in owned[(FIELD_MANAGER_AGENT, "status")]

    # Without force, claiming a field another manager owns is a conflict naming that manager.
    with pytest.raises(KubeWriteError) as err:
        controller.apply_status(
            NODE_TWIN, name, NodeTwinStatus(control_status=ControlStatus(cpu=CPUControlStatus(backend="dvfs"))), force=False
        )
    assert err.value.status == 409
    assert FIELD_MANAGER_AGENT in str(err.value)


def test_merge_patch_with_null_deletes_a_status_field(kube_api: k8s.ApiClient) -> None:
    controller = JoulieClient(kube_api, FIELD_MANAGER_CONTROLLER_MANAGER, Backoff(delays_s=()))
    name = "merge-node"
    controller.apply(NODE_TWIN, name, NodeTwin(spec=NodeTwinSpec(node_name=name, profile="performance")))
    twin = controller.apply_status(NODE_TWIN, name, NodeTwinStatus(estimated_pue=1.2, schedulable_class="performance"))
    assert twin.status is not None and twin.status.estimated_pue == 1.2
    twin = controller.merge_patch(NODE_TWIN, name, {"status": {"estimatedPUE": None}}, subresource="status")
    assert twin.status is not None
    assert twin.status.estimated_pue is None
    assert twin.status.schedulable_class == "performance"
