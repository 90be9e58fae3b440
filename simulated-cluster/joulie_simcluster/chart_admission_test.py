"""The chart's least privilege as the real kube-apiserver (v1.35) enforces it: the RBAC and the
ValidatingAdmissionPolicies of the every-option render applied for real, then each component's
ServiceAccount impersonated (with the node claim a bound Pod token carries) trying what it must not
do. And Pod Security "restricted" on the controller manager's and the extender's Pods. The permission
table these make: ``permissions.py`` and docs/security.md."""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from joulie_api.names import agent_lease_name
from joulie_simcluster import chart
from joulie_simcluster.chart_cases import JOULIE, NS, helm, one

pytest_plugins = ["joulie_testinfra.fixtures"]

__all__ = ["helm"]

ALL_OPTIONS = JOULIE / "ci/all-options-values.yaml"
NODE_CLAIM = "authentication.kubernetes.io/node-name"
INSTALLED = (
    "ServiceAccount",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
)


def _dynamic(api: k8s.ApiClient) -> Any:
    from kubernetes import dynamic

    return dynamic.DynamicClient(api)  # type: ignore[no-untyped-call]


def _as(control_plane: Any, service_account: str, node: str | None = None) -> k8s.ApiClient:
    api: k8s.ApiClient = control_plane.api_client()
    api.set_default_header("Impersonate-User", f"system:serviceaccount:{NS}:{service_account}")  # type: ignore[no-untyped-call]
    if node is not None:  # what a bound Pod token adds (Kubernetes 1.30+)
        api.set_default_header("Impersonate-Extra-authentication.kubernetes.io%2Fnode-name", node)  # type: ignore[no-untyped-call]
    return api


@pytest.fixture(scope="module")
def installed(kube_api: k8s.ApiClient) -> Iterator[list[dict[str, Any]]]:
    core = k8s.CoreV1Api(kube_api)
    with contextlib.suppress(ApiException):
        core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=NS)))
    client = _dynamic(kube_api)
    objs = [d for d in chart.render_chart(JOULIE, [ALL_OPTIONS]) if d["kind"] in INSTALLED]
    for doc in objs:
        resource = client.resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
        client.server_side_apply(
            resource, body=doc, namespace=doc["metadata"].get("namespace"), field_manager="helm", force_conflicts=True
        )
    yield objs
    for doc in reversed(objs):
        resource = client.resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
        with contextlib.suppress(ApiException):
            client.delete(resource, name=doc["metadata"]["name"], namespace=doc["metadata"].get("namespace"))


def _status(call: Callable[..., Any], *args: Any) -> tuple[int, str]:
    try:
        call(*args)
    except ApiException as err:
        return int(err.status), str(err.body)
    return 200, ""


def _until_denied(call: Callable[[], Any], timeout_s: float = 15) -> tuple[int, str]:
    """A new policy takes a moment to reach the API server's admission: retry until it denies."""
    deadline = time.monotonic() + timeout_s
    while True:
        status, body = _status(call)
        if status != 200 or time.monotonic() > deadline:
            return status, body
        time.sleep(0.3)


def _node(kube_api: k8s.ApiClient, name: str, labels: dict[str, str]) -> None:
    body = k8s.V1Node.from_dict({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}})
    assert body is not None
    k8s.CoreV1Api(kube_api).create_node(body)


def _twin_and_hardware(kube_api: k8s.ApiClient, node: str) -> None:
    objs = k8s.CustomObjectsApi(kube_api)
    objs.create_cluster_custom_object(
        "joulie.io",
        "v1alpha1",
        "nodetwins",
        {
            "apiVersion": "joulie.io/v1alpha1",
            "kind": "NodeTwin",
            "metadata": {"name": node},
            "spec": {"nodeName": node, "profile": "performance"},
        },
    )
    objs.create_cluster_custom_object(
        "joulie.io",
        "v1alpha1",
        "nodehardwares",
        {
            "apiVersion": "joulie.io/v1alpha1",
            "kind": "NodeHardware",
            "metadata": {"name": node},
            "spec": {"nodeName": node},
        },
    )


@pytest.fixture
def nodes(kube_api: k8s.ApiClient) -> Iterator[tuple[str, str, str]]:
    run = uuid.uuid4().hex[:6]
    a, b, cp = f"node-a-{run}", f"node-b-{run}", f"cp-{run}"
    _node(kube_api, a, {"joulie.io/managed": "true"})
    _node(kube_api, b, {"joulie.io/managed": "true"})
    _node(kube_api, cp, {"joulie.io/managed": "true", "node-role.kubernetes.io/control-plane": ""})
    for n in (a, b):
        _twin_and_hardware(kube_api, n)
    yield a, b, cp
    for n in (a, b, cp):
        with contextlib.suppress(ApiException):
            k8s.CoreV1Api(kube_api).delete_node(n)
    for plural in ("nodetwins", "nodehardwares"):
        for n in (a, b):
            with contextlib.suppress(ApiException):
                k8s.CustomObjectsApi(kube_api).delete_cluster_custom_object("joulie.io", "v1alpha1", plural, n)


CONTROL_STATUS = {"status": {"controlStatus": {"cpu": {"result": "applied"}}}}


def _patch_twin_status(api: k8s.ApiClient, name: str) -> Callable[[], Any]:
    return lambda: k8s.CustomObjectsApi(api).patch_cluster_custom_object_status(
        "joulie.io", "v1alpha1", "nodetwins", name, CONTROL_STATUS
    )


def test_an_agent_writes_only_its_own_nodes_objects(
    control_plane: Any, installed: list[dict[str, Any]], nodes: tuple[str, str, str]
) -> None:
    a, b, _ = nodes
    agent_a = _as(control_plane, "joulie-agent", node=a)
    status, body = _until_denied(_patch_twin_status(agent_a, b))
    assert status == 403 and f"the agent of node {a} may write only its own node" in body, body
    assert _status(_patch_twin_status(agent_a, a))[0] == 200
    hw = {"status": {"cpu": {"vendor": "Intel"}}}
    assert (
        _status(
            lambda: k8s.CustomObjectsApi(agent_a).patch_cluster_custom_object_status(
                "joulie.io", "v1alpha1", "nodehardwares", b, hw
            )
        )[0]
        == 403
    )
    # Retargeting B's object at A does not pass either (the old object is checked too).
    assert (
        _status(
            lambda: k8s.CustomObjectsApi(agent_a).patch_cluster_custom_object(
                "joulie.io", "v1alpha1", "nodehardwares", b, {"spec": {"nodeName": a}}
            )
        )[0]
        == 403
    )
    # A token without the node claim writes nothing.
    status, body = _status(_patch_twin_status(_as(control_plane, "joulie-agent"), a))
    assert status == 403 and "carries no node claim" in body, body


def _lease(node: str, holder: str, name: str | None = None) -> Any:
    """A heartbeat Lease as the agent writes it (joulie_agent/kube/heartbeat.py)."""
    return {
        "metadata": {"name": name or agent_lease_name(node), "labels": {"joulie.io/agent-heartbeat": "true"}},
        "spec": {"holderIdentity": holder},  # created without renewTime, as the agent does (the client cannot write MicroTime)
    }


def test_an_agent_writes_only_its_own_heartbeat_lease_and_never_the_leader_lease(
    kube_api: k8s.ApiClient, control_plane: Any, installed: list[dict[str, Any]]
) -> None:
    run = uuid.uuid4().hex[:6]
    a, b = f"node-a.{run}", f"node-b.{run}"  # the dot: the Lease name has a dash there
    admin = k8s.CoordinationV1Api(kube_api)
    leader = f"leader-{run}"
    leader_lease: Any = {"metadata": {"name": leader}, "spec": {"holderIdentity": "cm-0"}}
    admin.create_namespaced_lease(NS, leader_lease)
    admin.create_namespaced_lease(NS, _lease(b, b))
    agent_a = k8s.CoordinationV1Api(_as(control_plane, "joulie-agent", node=a))
    try:
        status, body = _until_denied(lambda: agent_a.create_namespaced_lease(NS, _lease(b, a, f"joulie-agent-x{run}")))
        assert status == 403 and f"may write only its own heartbeat Lease, joulie-agent-node-a-{run}" in body, body
        assert _status(lambda: agent_a.create_namespaced_lease(NS, _lease(a, a)))[0] == 200
        renewal = {"spec": {"holderIdentity": a, "renewTime": "2026-12-06T00:00:30.000000Z"}}
        merge = "application/merge-patch+json"
        assert _status(lambda: agent_a.patch_namespaced_lease(agent_lease_name(a), NS, renewal,
                                                              _content_type=merge))[0] == 200
        # Its own Lease held by another node, another node's Lease, the leader Lease: each refused.
        other = {"spec": {"holderIdentity": b}}
        assert _status(lambda: agent_a.patch_namespaced_lease(agent_lease_name(a), NS, other,
                                                              _content_type=merge))[0] == 403
        assert _status(lambda: agent_a.patch_namespaced_lease(agent_lease_name(b), NS, renewal,
                                                              _content_type=merge))[0] == 403
        status, body = _status(lambda: agent_a.patch_namespaced_lease(leader, NS, {"spec": {"holderIdentity": a}},
                                                                      _content_type=merge))
        assert status == 403 and "only its heartbeat Leases (named joulie-agent-*)" in body, body
        # RBAC: the agent cannot read Leases; the controller manager lists and watches them, writes none of the agents'.
        assert _status(lambda: agent_a.list_namespaced_lease(NS))[0] == 403
        ctl = k8s.CoordinationV1Api(_as(control_plane, "joulie-controller-manager"))
        listed = ctl.list_namespaced_lease(NS, label_selector="joulie.io/agent-heartbeat=true")
        assert {agent_lease_name(a), agent_lease_name(b)} <= {x.metadata.name for x in listed.items if x.metadata}
    finally:
        for name in (leader, agent_lease_name(a), agent_lease_name(b)):
            with contextlib.suppress(ApiException):
                admin.delete_namespaced_lease(name, NS)


def _label(api: k8s.ApiClient, node: str, key: str) -> Callable[[], Any]:
    return lambda: k8s.CoreV1Api(api).patch_node(node, {"metadata": {"labels": {key: "eco"}}})


def test_the_controller_changes_only_its_own_node_fields(
    kube_api: k8s.ApiClient, control_plane: Any, installed: list[dict[str, Any]], nodes: tuple[str, str, str]
) -> None:
    a, _, cp = nodes
    ctl = _as(control_plane, "joulie-controller-manager")
    status, body = _until_denied(_label(ctl, cp, "joulie.io/power-profile"))
    assert status == 403 and "may not change a control-plane Node" in body, body
    assert _status(_label(ctl, a, "joulie.io/power-profile"))[0] == 200
    status, body = _status(_label(ctl, a, "team"))
    assert status == 403 and "only Node labels under joulie.io/" in body, body
    # Cordon and the joulie.io/suspended taint: allowed; any other taint or field: not.
    suspend = {"spec": {"unschedulable": True, "taints": [{"key": "joulie.io/suspended", "effect": "NoSchedule"}]}}
    assert _status(lambda: k8s.CoreV1Api(ctl).patch_node(a, suspend))[0] == 200
    other = {
        "spec": {
            "taints": [
                {"key": "joulie.io/suspended", "effect": "NoSchedule"},
                {"key": "dedicated", "value": "x", "effect": "NoExecute"},
            ]
        }
    }
    status, body = _status(lambda: k8s.CoreV1Api(ctl).patch_node(a, other))
    assert status == 403 and "only the joulie.io/suspended taint" in body, body
    status, body = _status(lambda: k8s.CoreV1Api(ctl).patch_node(a, {"spec": {"providerID": "aws://x"}}))
    assert status == 403, body
    # An administrator is not limited by the policy.
    assert _status(_label(kube_api, cp, "team"))[0] == 200


def test_the_controller_changes_only_the_receipt_annotation_of_a_pod(
    kube_api: k8s.ApiClient, control_plane: Any, installed: list[dict[str, Any]]
) -> None:
    core = k8s.CoreV1Api(kube_api)
    name = f"job-{uuid.uuid4().hex[:6]}"
    core.create_namespaced_pod(
        "default",
        k8s.V1Pod(
            metadata=k8s.V1ObjectMeta(name=name, annotations={"team": "a"}),
            spec=k8s.V1PodSpec(containers=[k8s.V1Container(name="main", image="busybox")]),
        ),
    )
    try:
        ctl = k8s.CoreV1Api(_as(control_plane, "joulie-controller-manager"))

        def annotate(annotations: dict[str, str | None]) -> Callable[[], Any]:
            return lambda: ctl.patch_namespaced_pod(name, "default", {"metadata": {"annotations": annotations}})

        status, body = _until_denied(annotate({"team": "b"}))
        assert status == 403 and "only the joulie.io/energy-receipt annotation" in body, body
        assert _status(annotate({"joulie.io/energy-receipt": '{"v":1}'}))[0] == 200
        assert _status(annotate({"team": None}))[0] == 403  # removing another annotation: no
        status, _ = _status(lambda: ctl.patch_namespaced_pod(name, "default", {"metadata": {"labels": {"x": "y"}}}))
        assert status == 403
        # It may create Events (the finished Pod's receipt), and still may not create Pods.
        event: Any = {
            "metadata": {"generateName": "r-"},
            "involvedObject": {"kind": "Pod", "name": name, "namespace": "default"},
            "reason": "EnergyReceipt",
            "message": "m",
            "type": "Normal",
        }
        assert _status(lambda: ctl.create_namespaced_event("default", event))[0] == 200
        assert (
            _status(
                lambda: ctl.create_namespaced_pod(
                    "default",
                    k8s.V1Pod(
                        metadata=k8s.V1ObjectMeta(name=f"{name}-x"),
                        spec=k8s.V1PodSpec(containers=[k8s.V1Container(name="main", image="busybox")]),
                    ),
                )
            )[0]
            == 403
        )
    finally:
        core.delete_namespaced_pod(name, "default", grace_period_seconds=0)


def test_the_controller_lists_bmc_secrets_but_gets_none_by_name(
    kube_api: k8s.ApiClient, control_plane: Any, installed: list[dict[str, Any]]
) -> None:
    core = k8s.CoreV1Api(kube_api)
    name = f"bmc-{uuid.uuid4().hex[:6]}"
    core.create_namespaced_secret(
        NS,
        k8s.V1Secret(
            metadata=k8s.V1ObjectMeta(name=name, labels={"joulie.io/bmc-credentials": "true"}),
            string_data={"username": "u", "password": "p"},
        ),
    )
    try:
        ctl = k8s.CoreV1Api(_as(control_plane, "joulie-controller-manager"))
        listed = ctl.list_namespaced_secret(NS, label_selector="joulie.io/bmc-credentials=true")
        assert name in [s.metadata.name for s in listed.items if s.metadata is not None]
        assert _status(lambda: ctl.read_namespaced_secret(name, NS))[0] == 403
        assert _status(lambda: ctl.list_namespaced_secret("default"))[0] == 403
        for sa in ("joulie-agent", "joulie-scheduler-extender"):
            assert _status(k8s.CoreV1Api(_as(control_plane, sa)).list_namespaced_secret, NS)[0] == 403, sa
    finally:
        core.delete_namespaced_secret(name, NS)


def test_controller_and_extender_pods_pass_pod_security_restricted(kube_api: k8s.ApiClient) -> None:
    """Their Pods, as the Deployments would create them, in a namespace that enforces "restricted";
    the privileged agent is refused there (it belongs in a namespace labelled privileged)."""
    core = k8s.CoreV1Api(kube_api)
    ns = f"restricted-{uuid.uuid4().hex[:6]}"
    core.create_namespace(
        k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=ns, labels={"pod-security.kubernetes.io/enforce": "restricted"}))
    )
    try:
        docs = chart.render_chart(JOULIE, [ALL_OPTIONS], {"schedulerExtender.tls.secretName": "x"})

        def create(kind: str, name: str) -> tuple[int, str]:
            template = one(docs, kind, name)["spec"]["template"]
            pod = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name, "namespace": ns},
                "spec": template["spec"],
            }
            return _status(lambda: core.create_namespaced_pod(ns, json.loads(json.dumps(pod)), dry_run="All"))

        for name in ("joulie-controller-manager", "joulie-scheduler-extender"):
            status, body = create("Deployment", name)
            assert status == 200, f"{name}: {body}"
        status, body = create("DaemonSet", "joulie-agent")
        assert status == 403 and "violates PodSecurity" in body, body
    finally:
        core.delete_namespace(ns)
