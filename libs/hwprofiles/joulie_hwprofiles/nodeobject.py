"""The Kubernetes Node a profile implies: labels (NFD, GPU labeller), taints, capacity, allocatable.

Pure: returns a plain dict ready to serialise (the simcluster harness applies it; KWOK keeps it
Ready, so no conditions are set here).
"""

from __future__ import annotations

from typing import Any

from joulie_api import names
from joulie_hwprofiles.schema import Profile
from joulie_simhw.gpustate import NVIDIA_DRIVER_VERSION

NFD_PREFIX = "feature.node.kubernetes.io/"
ANNOTATION_PROFILE = "sim.joulie.io/profile"


def _pci_labels(profile: Profile) -> dict[str, str]:
    devices = list(profile.pci)
    if profile.gpus is not None:
        devices.append(profile.gpus.pci)
    out = {}
    for d in devices:
        cls = d.pci_class[2:6]
        # NFD's default pci whitelist: display (03), processing accelerators (12), 0b40 co-processors.
        if cls.startswith(("03", "12", "0b40")):
            out[f"{NFD_PREFIX}pci-{cls}_{d.vendor[2:]}.present"] = "true"
    return out


def _gfd_labels(profile: Profile) -> dict[str, str]:
    g = profile.gpus
    if g is None or g.vendor != "nvidia" or g.labeller != "gfd":
        return {}
    major, minor, rev = NVIDIA_DRIVER_VERSION.split(".")
    cc_major, _, cc_minor = g.compute_capability.partition(".")
    return {
        names.LABEL_NVIDIA_GPU_PRODUCT: g.product.replace(" ", "-"),
        "nvidia.com/gpu.count": str(g.count),
        "nvidia.com/gpu.replicas": "1",
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.mode": "compute",
        "nvidia.com/gpu.sharing-strategy": "none",
        "nvidia.com/mig.strategy": "none",
        "nvidia.com/gpu.family": g.architecture,
        "nvidia.com/gpu.compute.major": cc_major,
        "nvidia.com/gpu.compute.minor": cc_minor,
        "nvidia.com/gpu.memory": str(g.memory_mib),
        "nvidia.com/mig.capable": "false",
        "nvidia.com/cuda.driver-version.full": NVIDIA_DRIVER_VERSION,
        "nvidia.com/cuda.driver-version.major": major,
        "nvidia.com/cuda.driver-version.minor": minor,
        "nvidia.com/cuda.driver-version.revision": rev,
    }


def node_object(profile: Profile, name: str, extra_labels: dict[str, str] | None = None) -> dict[str, Any]:
    n = profile.node
    labels: dict[str, str] = {
        "kubernetes.io/arch": n.architecture,
        "kubernetes.io/os": "linux",
        "beta.kubernetes.io/arch": n.architecture,
        "beta.kubernetes.io/os": "linux",
    }
    labels.update(n.labels)
    labels.update(_pci_labels(profile))
    labels.update(_gfd_labels(profile))
    if not n.nfd:
        labels = {k: v for k, v in labels.items() if not k.startswith(NFD_PREFIX)}
    labels.update(extra_labels or {})
    labels["kubernetes.io/hostname"] = name
    capacity = {"cpu": str(n.cpu), "memory": f"{n.memory_ki}Ki", "pods": str(n.pods)}
    allocatable = {
        "cpu": f"{n.cpu * 1000 - n.reserved_cpu_m}m" if n.reserved_cpu_m % 1000 else str(n.cpu - n.reserved_cpu_m // 1000),
        "memory": f"{n.memory_ki - n.reserved_memory_ki}Ki",
        "pods": str(n.pods),
    }
    if profile.gpus is not None:
        res = names.RESOURCE_NVIDIA_GPU if profile.gpus.vendor == "nvidia" else names.RESOURCE_AMD_GPU
        capacity[res] = allocatable[res] = str(profile.gpus.count)
    spec: dict[str, Any] = {}
    if n.taints:
        spec["taints"] = [t.model_dump() for t in n.taints]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": dict(sorted(labels.items())), "annotations": {ANNOTATION_PROFILE: profile.name}},
        "spec": spec,
        "status": {
            "capacity": capacity,
            "allocatable": allocatable,
            "nodeInfo": {"architecture": n.architecture, "operatingSystem": "linux"},
        },
    }
