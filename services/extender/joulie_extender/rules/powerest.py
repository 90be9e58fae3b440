"""How many watts a pod adds to a node: the pod's demand and its marginal power estimate.

Pure: no I/O. Formula (reference §5.6, the Go original's `pkg/scheduler/powerest`):

    cpu_max_w = hardware.cpu_max_watts_total, or max(150, cores * 3.5) when unknown
    share     = clamp(pod_cpu_cores / max(cores, 1), 0, 1)
    cpu_w     = cpu_max_w * cpu_util_coeff * share * clamp(1 + mem_gib * 0.01, 1, 1.3)
    gpu_w     = pod_gpus * per_gpu_max_w * (0.85 performance | 0.65 otherwise)   (GPU nodes only)
    delta_w   = cpu_w + gpu_w          (0 when the node's hardware is unknown)

Differences from the original, on purpose:
- Requests and limits follow Kubernetes' own rule: a resource's request defaults to its limit,
  and init containers count as max(sum of containers, largest init container), for CPU and
  memory as well as GPUs (the original counted only init-container GPUs).
- Quantities use the full Kubernetes grammar (`quantity.py`).
- A pod cannot use more GPUs than the node has: the GPU count is capped at the node's count.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from joulie_api.quantity import parse_quantity

WORKLOAD_PERFORMANCE: Final = "performance"

# Extended resources that carry GPUs, in lookup order; the key tells the vendor.
GPU_RESOURCES: Final = (("nvidia.com/gpu", "nvidia"), ("amd.com/gpu", "amd"), ("gpu.intel.com/i915", "intel"))

GIB: Final = float(2**30)


@dataclass(frozen=True)
class Coefficients:
    """Marginal power model constants. Only the three utilisation coefficients are configurable.

    Units: `*_util_coeff` are fractions of the hardware maximum (0..1); `mem_power_coeff_per_gib`
    is a fractional increase of CPU power per GiB requested; watts are per CPU package set or
    per GPU as named.
    """

    cpu_util_coeff: float = 0.7
    mem_power_coeff_per_gib: float = 0.01
    mem_power_cap: float = 1.3
    gpu_util_coeff_standard: float = 0.65
    gpu_util_coeff_performance: float = 0.85
    cpu_watts_per_core_fallback: float = 3.5
    cpu_max_watts_floor_fallback: float = 150.0
    gpu_max_watts_fallback_nvidia: float = 350.0
    gpu_max_watts_fallback_amd: float = 400.0
    gpu_max_watts_fallback_generic: float = 350.0


@dataclass(frozen=True)
class PodDemand:
    """What a pod asks for: CPU in cores, memory in bytes, whole GPUs and their vendor."""

    cpu_cores: float
    memory_bytes: float
    gpu_count: int
    gpu_vendor: str = ""


@dataclass(frozen=True)
class HardwareInfo:
    """A node's power-relevant hardware, from its NodeHardware (watts are node totals unless named)."""

    cpu_max_watts_total: float = 0.0
    cpu_total_cores: int = 0
    gpu_present: bool = False
    gpu_count: int = 0
    gpu_max_watts_per_gpu: float = 0.0
    gpu_vendor: str = ""
    memory_bytes: int = 0


@dataclass(frozen=True)
class MarginalImpact:
    cpu_w: float
    gpu_w: float

    @property
    def total_w(self) -> float:
        return self.cpu_w + self.gpu_w


class PodSpecError(ValueError):
    """A pod whose resources cannot be read; the message names the container and field."""


def _clamp(x: float, lo: float, hi: float) -> float:
    return lo if x < lo else hi if x > hi else x


def _resource(resources: Mapping[str, Any], key: str, where: str) -> float:
    """requests[key], else limits[key] (Kubernetes defaults a missing request to the limit)."""
    for section in ("requests", "limits"):
        values = resources.get(section)
        if isinstance(values, Mapping) and values.get(key) is not None:
            try:
                return parse_quantity(values[key])
            except ValueError as err:
                raise PodSpecError(f"{where}.resources.{section}[{key!r}]: {err}") from None
    return 0.0


def _container_demand(container: object, where: str) -> tuple[float, float, int, str]:
    if not isinstance(container, Mapping):
        raise PodSpecError(f"{where}: expected an object, got {type(container).__name__}")
    resources = container.get("resources") or {}
    if not isinstance(resources, Mapping):
        raise PodSpecError(f"{where}.resources: expected an object")
    cpu = _resource(resources, "cpu", where)
    mem = _resource(resources, "memory", where)
    for key, vendor in GPU_RESOURCES:
        gpus = _resource(resources, key, where)
        if gpus > 0:
            return cpu, mem, int(gpus), vendor
    return cpu, mem, 0, ""


def fallback_cpu_cores(workload_class: str) -> float:
    """CPU assumed for a pod that requests none: 0.5 cores for performance pods, else 0.25."""
    return 0.5 if workload_class == WORKLOAD_PERFORMANCE else 0.25


def extract_pod_demand(pod: Mapping[str, Any], workload_class: str) -> PodDemand:
    """The pod's effective requests. Raises `PodSpecError` for a malformed spec."""
    spec = pod.get("spec")
    if spec is None:
        return PodDemand(fallback_cpu_cores(workload_class), 0.0, 0)
    if not isinstance(spec, Mapping):
        raise PodSpecError("Pod.spec: expected an object")
    cpu = mem = 0.0
    gpus, vendor = 0, ""
    for section in ("containers", "initContainers"):
        containers = spec.get(section) or []
        if not isinstance(containers, list):
            raise PodSpecError(f"Pod.spec.{section}: expected a list")
        s_cpu = s_mem = 0.0
        s_gpus, s_vendor = 0, ""
        init = section == "initContainers"
        for i, container in enumerate(containers):
            c_cpu, c_mem, c_gpus, c_vendor = _container_demand(container, f"Pod.spec.{section}[{i}]")
            if init:  # init containers run one at a time: the largest one counts
                s_cpu, s_mem = max(s_cpu, c_cpu), max(s_mem, c_mem)
                if c_gpus > s_gpus:
                    s_gpus, s_vendor = c_gpus, c_vendor
            else:
                s_cpu, s_mem, s_gpus = s_cpu + c_cpu, s_mem + c_mem, s_gpus + c_gpus
                s_vendor = s_vendor or c_vendor
        cpu, mem = max(cpu, s_cpu), max(mem, s_mem)
        if s_gpus > gpus:
            gpus, vendor = s_gpus, s_vendor
    if cpu <= 0:
        cpu = fallback_cpu_cores(workload_class)
    return PodDemand(cpu, max(mem, 0.0), max(gpus, 0), vendor)


def per_gpu_max_watts(hw: HardwareInfo, pod_vendor: str, coeffs: Coefficients) -> float:
    if hw.gpu_max_watts_per_gpu > 0:
        return hw.gpu_max_watts_per_gpu
    vendor = (hw.gpu_vendor or pod_vendor).lower()
    if "nvidia" in vendor:
        return coeffs.gpu_max_watts_fallback_nvidia
    if "amd" in vendor:
        return coeffs.gpu_max_watts_fallback_amd
    return coeffs.gpu_max_watts_fallback_generic


def estimate_marginal_impact(
    demand: PodDemand, hw: HardwareInfo | None, workload_class: str, coeffs: Coefficients
) -> MarginalImpact:
    """Watts the pod adds to the node; zero when the node's hardware is unknown."""
    if hw is None:
        return MarginalImpact(0.0, 0.0)
    cores = max(hw.cpu_total_cores, 1)
    cpu_max_w = hw.cpu_max_watts_total
    if cpu_max_w <= 0:
        cpu_max_w = max(coeffs.cpu_max_watts_floor_fallback, hw.cpu_total_cores * coeffs.cpu_watts_per_core_fallback)
    share = _clamp(demand.cpu_cores / cores, 0.0, 1.0)
    mem_factor = _clamp(1.0 + demand.memory_bytes / GIB * coeffs.mem_power_coeff_per_gib, 1.0, coeffs.mem_power_cap)
    cpu_w = cpu_max_w * coeffs.cpu_util_coeff * share * mem_factor
    gpu_w = 0.0
    if demand.gpu_count > 0 and (hw.gpu_present or hw.gpu_count > 0):
        gpus = min(demand.gpu_count, hw.gpu_count) if hw.gpu_count > 0 else demand.gpu_count
        coeff = coeffs.gpu_util_coeff_performance if workload_class == WORKLOAD_PERFORMANCE else coeffs.gpu_util_coeff_standard
        gpu_w = gpus * per_gpu_max_watts(hw, demand.gpu_vendor, coeffs) * coeff
    return MarginalImpact(cpu_w, gpu_w)
