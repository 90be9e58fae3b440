"""Node objects for tests against a real API server: one way to make them, KWOK-managed or not."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubernetes import client as k8s

from joulie_localcluster.kwok import KWOK_NODE_ANNOTATION, KWOK_NODE_ANNOTATION_VALUE, KWOK_TAINT_KEY


def node_body(name: str, labels: Mapping[str, str], allocatable: Mapping[str, str], *, kwok: bool = False) -> dict[str, Any]:
    """A Node with ``allocatable`` as its capacity too. ``kwok``: KWOK keeps it Ready, and its
    taint keeps off every Pod that does not tolerate it."""
    meta: dict[str, Any] = {"name": name, "labels": dict(labels)}
    spec: dict[str, Any] = {}
    if kwok:
        meta["annotations"] = {KWOK_NODE_ANNOTATION: KWOK_NODE_ANNOTATION_VALUE}
        spec["taints"] = [{"key": KWOK_TAINT_KEY, "value": "fake", "effect": "NoSchedule"}]
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": spec,
            "status": {"allocatable": dict(allocatable), "capacity": dict(allocatable)}}


def create_node(core: k8s.CoreV1Api, name: str, labels: Mapping[str, str], allocatable: Mapping[str, str], *,
                kwok: bool = False) -> None:
    node = k8s.V1Node.from_dict(node_body(name, labels, allocatable, kwok=kwok))
    assert node is not None
    core.create_node(node)
