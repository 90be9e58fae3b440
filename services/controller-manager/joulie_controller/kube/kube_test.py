"""The kube shell's parsing of Nodes and Pods, and the cordon patch: pure parts, no API server."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from joulie_controller.kube import kube
from joulie_controller.kube.kube import (
    KubeListError,
    list_paged,
    node_info,
    nodes_from_page,
    pod_info,
    pods_from_page,
    suspended_change,
)
from joulie_controller.model.fsm import Toleration
from joulie_controller.model.hardware import Taint

NODE = {
    "metadata": {"name": "gpu-1", "labels": {"joulie.io/pool": "gpu"},
                 "annotations": {"joulie.io/suspend-exclude": "true"}},
    "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
    "status": {"allocatable": {"cpu": "31500m", "memory": "64Gi", "nvidia.com/gpu": "4"},
               "conditions": [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": "True"}]},
}


def test_a_node_is_read_with_what_the_power_policy_needs() -> None:
    n = node_info(NODE)
    assert (n.allocatable_cpu, n.allocatable_memory_bytes, n.allocatable_gpus, n.ready) == (31.5, 64 * 2**30, 4, True)
    assert n.taints == (Taint("nvidia.com/gpu", "present", "NoSchedule"),)
    assert n.annotations == {"joulie.io/suspend-exclude": "true"}
    assert not node_info({"metadata": {"name": "x"}, "status": {"conditions": [{"type": "Ready",
                                                                                 "status": "Unknown"}]}}).ready


def test_a_pod_is_read_with_its_requests_tolerations_and_owner() -> None:
    p = pod_info({
        "metadata": {"name": "exporter-x", "namespace": "mon", "ownerReferences": [{"kind": "DaemonSet", "name": "e"}]},
        "spec": {"containers": [{"resources": {"requests": {"cpu": "250m", "memory": "1Gi"}}},
                                {"resources": {"limits": {"nvidia.com/gpu": "1"}}}],
                 "tolerations": [{"operator": "Exists"}]},
        "status": {"phase": "Pending"},
    })
    assert (p.cpu_request, p.memory_request_bytes, p.gpu_request, p.daemonset) == (0.25, 2**30, 1, True)
    assert p.tolerations == (Toleration("", "Exists", "", ""),)
    job = pod_info({"metadata": {"name": "j", "ownerReferences": [{"kind": "Job", "name": "j"}]}, "spec": {}})
    assert not job.daemonset


def test_the_cordon_patch_adds_our_taint_and_keeps_the_others_and_the_uncordon_removes_only_ours() -> None:
    cordon = suspended_change(NODE, True)
    assert cordon["spec"]["unschedulable"] is True
    assert cordon["spec"]["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
                                        {"key": "joulie.io/suspended", "effect": "NoSchedule"}]
    cordoned = {**NODE, "spec": cordon["spec"]}
    assert suspended_change(cordoned, False) == {"spec": {"unschedulable": None, "taints": [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]}}
    assert suspended_change({"spec": {"taints": [{"key": "joulie.io/suspended", "effect": "NoSchedule"}]}},
                            False) == {"spec": {"unschedulable": None, "taints": None}}


POD = {
    "metadata": {"name": "job-1", "namespace": "b", "labels": {"app": "x"}, "annotations": {"a": "1"},
                 "deletionTimestamp": "2026-12-03T10:00:00Z",
                 "managedFields": [{"manager": "kcm", "fieldsV1": {"f:spec": {}}}]},
    "spec": {"nodeName": "n1", "nodeSelector": {"k": "v"},
             "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                 {"matchExpressions": [{"key": "joulie.io/power-profile", "operator": "NotIn", "values": ["eco"]}]}]}}},
             "containers": [{"name": "m", "image": "i", "resources": {"requests": {"cpu": "4", "memory": "16Gi"}}}],
             "tolerations": [{"key": "t", "operator": "Exists", "effect": "NoSchedule"}]},
    "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}], "podIP": "10.0.0.1"},
}


def page(items: list[Any], token: str | None = None) -> bytes:
    return json.dumps({"kind": "List", "metadata": {"continue": token} if token else {}, "items": items}).encode()


def test_a_page_decoded_by_its_fields_alone_reads_as_the_whole_objects_do() -> None:
    odd = {"metadata": {"name": "bare"}}  # a Pod with no spec or status at all
    pods, token = pods_from_page(page([POD, odd], "abc"))
    assert pods == [pod_info(POD), pod_info(odd)] and token == "abc"
    nodes, token = nodes_from_page(page([NODE]))
    assert nodes == [node_info(NODE)] and token is None


def test_a_page_of_an_unexpected_shape_takes_the_full_parse() -> None:
    body = json.dumps({"metadata": ["not", "an", "object"], "items": [POD, "not a pod"]}).encode()
    assert pods_from_page(body) == ([pod_info(POD)], None)


class Pager:
    """A LIST endpoint serving `items` in pages of `limit`, with continue tokens; `expire` tokens
    answer 410 Gone once each."""

    def __init__(self, items: list[Any], expire: set[str] | None = None) -> None:
        self.items, self.expire, self.calls = items, expire or set(), 0

    def __call__(self, *, limit: int, _continue: str | None, _preload_content: bool, **kw: Any) -> Any:
        assert not _preload_content
        self.calls += 1
        if _continue in self.expire:
            self.expire.discard(_continue)
            raise ApiException(status=410, reason="Gone")
        start = int(_continue or 0)
        end = start + limit
        token = str(end) if end < len(self.items) else None

        class Resp:
            data = page(self.items[start:end], token)
        return Resp()


def test_a_list_is_read_page_by_page_and_an_expired_token_starts_it_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kube, "LIST_PAGE_SIZE", 2)
    pods = [{**POD, "metadata": {**POD["metadata"], "name": f"p{i}"}} for i in range(5)]  # type: ignore[dict-item]
    pager = Pager(pods)
    assert [p.name for p in list_paged(pager, pods_from_page)] == [f"p{i}" for i in range(5)]
    assert pager.calls == 3
    pager = Pager(pods, expire={"4"})
    assert [p.name for p in list_paged(pager, pods_from_page)] == [f"p{i}" for i in range(5)]
    assert pager.calls == 3 + 3, "three pages, the 410, then the list again from the start"
    forever = Pager(pods)
    forever.expire = type("Always", (set,), {"__contains__": lambda self, k: k is not None, "discard": lambda *a: None})()
    with pytest.raises(KubeListError, match="410"):
        list_paged(forever, pods_from_page)


def test_a_pod_is_read_with_its_scheduler_and_whether_the_scheduler_gave_up_on_it() -> None:
    spec: dict[str, Any] = {"schedulerName": "gpu-scheduler"}
    gave_up = pod_info({"metadata": {"name": "p"}, "spec": spec, "status": {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}})
    assert gave_up.unschedulable and gave_up.scheduler_name == "gpu-scheduler"
    fresh = pod_info({"metadata": {"name": "p"}, "spec": {}, "status": {"phase": "Pending"}})
    assert not fresh.unschedulable and fresh.scheduler_name == "default-scheduler"
    gated = pod_info({"metadata": {"name": "p"}, "spec": {}, "status": {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]}})
    assert not gated.unschedulable
    body = json.dumps({"metadata": {}, "items": [{"metadata": {"name": "p"}, "spec": spec, "status": {
        "phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}}]})
    assert pods_from_page(body.encode())[0] == [gave_up]
