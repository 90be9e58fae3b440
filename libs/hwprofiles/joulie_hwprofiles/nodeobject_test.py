from joulie_hwprofiles.nodeobject import node_object
from joulie_hwprofiles.schema import builtin_profile


def test_an_nvidia_node_advertises_its_gpus_labels_and_taint() -> None:
    node = node_object(builtin_profile("nvidia-h100-nvl-8gpu"), "gpu-0", {"sim.joulie.io/pool": "nvl"})
    labels = node["metadata"]["labels"]
    assert labels["feature.node.kubernetes.io/pci-0302_10de.present"] == "true"
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-H100-NVL"
    assert labels["sim.joulie.io/pool"] == "nvl"
    assert labels["kubernetes.io/hostname"] == "gpu-0"
    assert node["status"]["capacity"]["nvidia.com/gpu"] == "8"
    assert node["status"]["allocatable"]["cpu"] == "95"
    assert node["status"]["allocatable"]["memory"] == f"{791917286 - 4194304}Ki"
    assert {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"} in node["spec"]["taints"]


def test_an_mi300x_node_uses_the_amd_resource_and_listed_labels() -> None:
    node = node_object(builtin_profile("amd-instinct-mi300x-8gpu"), "mi-0")
    assert node["status"]["allocatable"]["amd.com/gpu"] == "8"
    assert node["metadata"]["labels"]["amd.com/gpu.family"] == "AI"
    assert node["metadata"]["labels"]["feature.node.kubernetes.io/pci-1200_1002.present"] == "true"


def test_the_managed_nodes_carry_their_taint_and_architecture() -> None:
    intel = node_object(builtin_profile("intel-managed"), "m-0")
    assert intel["spec"]["taints"] == [{"key": "dedicated", "value": "managed", "effect": "NoSchedule"}]
    arm = node_object(builtin_profile("arm64-managed"), "a-0")
    assert arm["metadata"]["labels"]["kubernetes.io/arch"] == "arm64"
    assert arm["status"]["nodeInfo"]["architecture"] == "arm64"
    assert "taints" not in arm["spec"]


def test_a_vm_has_no_gpu_resource() -> None:
    node = node_object(builtin_profile("vm-no-powercap"), "vm-0")
    assert set(node["status"]["capacity"]) == {"cpu", "memory", "pods"}
