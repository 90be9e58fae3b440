"""Reads NodeTwin, NodeHardware, Nodes (allocatable only) and Pods (their energy receipts too) through the
kubeconfig context."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubernetes import client as k8s

from joulie_api.kube import response_json
from joulie_api.kubeconfig import api_client as kubeconfig_client
from joulie_api.names import GROUP, PLURAL_NODE_HARDWARE, PLURAL_NODE_TWIN, VERSION

TIMEOUT_S = 10


@dataclass(frozen=True)
class ClusterState:
    twins: list[dict[str, Any]]
    hardware: list[dict[str, Any]]
    nodes: list[dict[str, Any]]
    pods: list[dict[str, Any]]


def api_client(kubeconfig: str | None, context: str | None) -> k8s.ApiClient:
    # A kubectl plugin runs where kubectl does: never as a Pod's service account.
    return kubeconfig_client(kubeconfig, context=context, in_cluster=False)


def _items(resp: Any) -> list[dict[str, Any]]:
    items = response_json(resp).get("items") or []
    return [i for i in items if isinstance(i, dict)]


def read_state(api: k8s.ApiClient) -> ClusterState:
    custom, core = k8s.CustomObjectsApi(api), k8s.CoreV1Api(api)
    opts: dict[str, Any] = {"_preload_content": False, "_request_timeout": TIMEOUT_S}
    return ClusterState(
        twins=_items(custom.list_cluster_custom_object(GROUP, VERSION, PLURAL_NODE_TWIN, **opts)),
        hardware=_items(custom.list_cluster_custom_object(GROUP, VERSION, PLURAL_NODE_HARDWARE, **opts)),
        nodes=_items(core.list_node(**opts)),
        pods=_items(core.list_pod_for_all_namespaces(field_selector="status.phase!=Succeeded,status.phase!=Failed", **opts)),
    )


def read_pods(api: k8s.ApiClient, namespace: str | None, name: str | None = None) -> list[dict[str, Any]]:
    """Pods of every phase (a finished Pod carries the final receipt): one namespace, or all (None); one
    Pod when ``name`` is given (an empty list when it does not exist)."""
    core = k8s.CoreV1Api(api)
    opts: dict[str, Any] = {"_preload_content": False, "_request_timeout": TIMEOUT_S}
    if name is not None:
        return _items(core.list_namespaced_pod(namespace or "default", field_selector=f"metadata.name={name}", **opts))
    if namespace is None:
        return _items(core.list_pod_for_all_namespaces(**opts))
    return _items(core.list_namespaced_pod(namespace, **opts))
