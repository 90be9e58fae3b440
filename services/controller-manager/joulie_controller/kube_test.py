"""The kube shell's parsing of Nodes and Pods, and the cordon patch: pure parts, no API server."""

from __future__ import annotations

from joulie_controller.fsm import Toleration
from joulie_controller.hardware import Taint
from joulie_controller.kube import node_info, pod_info, suspended_change

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
