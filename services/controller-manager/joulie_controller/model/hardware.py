"""What the controller knows about a node's hardware: from its NodeHardware, else from node labels.

Pure: takes parsed objects and label maps, returns views. Malformed values become "unknown"
(with a problem string naming the field), never an exception.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

from joulie_api.generated.nodehardware import NodeHardware
from joulie_api.names import (
    LABEL_AMD_GPU_FAMILY,
    LABEL_AMD_GPU_PRODUCT,
    LABEL_GPU_PRODUCT,
    LABEL_HW_CPU_MODEL,
    LABEL_HW_CPU_SOCKETS,
    LABEL_HW_GPU_COUNT,
    LABEL_HW_GPU_MODEL,
    LABEL_NFD_CPU_MODEL,
    LABEL_NFD_CPU_SOCKETS,
    LABEL_NVIDIA_GPU_PRODUCT,
)
from joulie_controller.model.twin import HardwareBudget

DEFAULT_GPU_PRODUCT_LABEL_KEYS: tuple[str, ...] = (
    LABEL_GPU_PRODUCT,
    LABEL_NVIDIA_GPU_PRODUCT,
    LABEL_AMD_GPU_PRODUCT,
    LABEL_AMD_GPU_FAMILY,
)


@dataclass(frozen=True)
class Taint:
    key: str
    value: str = ""
    effect: str = "NoSchedule"


@dataclass(frozen=True)
class NodeInfo:
    """The fields of a Node the controller reads."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    unschedulable: bool = False
    allocatable_gpus: int = 0
    capacity_cpu: int = 0
    annotations: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    allocatable_cpu: float = 0.0
    """Cores the Node offers Pods (status.allocatable.cpu)."""
    allocatable_memory_bytes: float = 0.0
    """Bytes the Node offers Pods (status.allocatable.memory)."""
    ready: bool = True
    """The Node's Ready condition is True."""


@dataclass(frozen=True)
class HardwareView:
    cpu_model: str = ""
    cpu_sockets: int = 0
    cpu_cores: int = 0
    cpu_min_w_per_socket: float = 0.0
    cpu_max_w_per_socket: float = 0.0
    gpu_model: str = ""
    gpu_count: int = 0
    gpu_min_w: float = 0.0
    gpu_max_w: float = 0.0
    gpu_default_w: float = 0.0
    """The boards' default power limit (NodeHardware capRangePerGpu.defaultWatts; 0 = unknown)."""
    from_cr: bool = False
    problems: tuple[str, ...] = ()

    @property
    def known(self) -> bool:
        return bool(self.cpu_model or self.gpu_model or self.cpu_max_w_per_socket or self.gpu_max_w)

    def family(self, node_name: str) -> str:
        """Hardware family key for per-family slot allocation."""
        if self.gpu_count > 0:
            return f"gpu:{self.gpu_model or 'unknown-gpu'}"
        if not self.known:
            return f"unknown:{node_name}"
        return f"cpu:{self.cpu_model or 'unknown-cpu'}"

    def budget(self) -> HardwareBudget:
        return self._budget

    @cached_property
    def _budget(self) -> HardwareBudget:
        # Built once per view: a view is immutable, reused across ticks (reconcile/reuse.py), and a
        # tick asks for its budget several times a node.
        return HardwareBudget(
            cpu_max_w_per_socket=self.cpu_max_w_per_socket,
            cpu_sockets=self.cpu_sockets,
            gpu_max_w_per_gpu=self.gpu_max_w,
            gpu_count=self.gpu_count,
        )


def _watts(value: float | None, where: str, problems: list[str]) -> float:
    if value is None:
        return 0.0
    if not math.isfinite(value) or value < 0:
        problems.append(f"{where}={value!r} is not a finite non-negative number of watts; ignored")
        return 0.0
    return float(value)


def from_node_hardware(nhw: NodeHardware, allocatable_gpus: int = 0) -> HardwareView:
    """View from an agent-published NodeHardware (capRange per socket, capRangePerGpu per GPU)."""
    problems: list[str] = []
    st = nhw.status
    cpu = st.cpu if st else None
    gpu = st.gpu if st else None
    cpu_min = cpu_max = 0.0
    if cpu and cpu.cap_range:
        cpu_min = _watts(cpu.cap_range.min_watts_per_socket, "status.cpu.capRange.minWattsPerSocket", problems)
        cpu_max = _watts(cpu.cap_range.max_watts_per_socket, "status.cpu.capRange.maxWattsPerSocket", problems)
        if cpu_max and cpu_min > cpu_max:
            problems.append(
                f"status.cpu.capRange: minWattsPerSocket {cpu_min} > maxWattsPerSocket {cpu_max}; min ignored"
            )
            cpu_min = 0.0
    gpu_count = 0
    gpu_min = gpu_max = gpu_default = 0.0
    if gpu and (gpu.present or (gpu.count or 0) > 0):
        gpu_count = gpu.count or allocatable_gpus
        if gpu.cap_range_per_gpu:
            gpu_min = _watts(gpu.cap_range_per_gpu.min_watts, "status.gpu.capRangePerGpu.minWatts", problems)
            gpu_max = _watts(gpu.cap_range_per_gpu.max_watts, "status.gpu.capRangePerGpu.maxWatts", problems)
            gpu_default = _watts(gpu.cap_range_per_gpu.default_watts, "status.gpu.capRangePerGpu.defaultWatts", problems)
    return HardwareView(
        cpu_model=(cpu.model or cpu.raw_model or "") if cpu else "",
        cpu_sockets=(cpu.sockets or 0) if cpu else 0,
        cpu_cores=(cpu.total_cores or 0) if cpu else 0,
        cpu_min_w_per_socket=cpu_min,
        cpu_max_w_per_socket=cpu_max,
        gpu_model=((gpu.model or gpu.raw_model or "") if gpu else "") if gpu_count else "",
        gpu_count=gpu_count,
        gpu_min_w=gpu_min,
        gpu_max_w=gpu_max,
        gpu_default_w=gpu_default,
        from_cr=True,
        problems=tuple(problems),
    )


def _int_label(labels: Mapping[str, str], key: str, problems: list[str]) -> int:
    raw = labels.get(key)
    if raw is None:
        return 0
    try:
        value = int(raw)
    except ValueError:
        problems.append(f"label {key}={raw!r} is not an integer; ignored")
        return 0
    if value < 0:
        problems.append(f"label {key}={raw!r} is negative; ignored")
        return 0
    return value


def from_labels(node: NodeInfo, gpu_product_label_keys: tuple[str, ...] = DEFAULT_GPU_PRODUCT_LABEL_KEYS) -> HardwareView:
    """Fallback view when the node has no NodeHardware: models and counts only, no power range."""
    problems: list[str] = []
    labels = node.labels
    cpu_model = labels.get(LABEL_HW_CPU_MODEL) or labels.get(LABEL_NFD_CPU_MODEL) or ""
    sockets = _int_label(labels, LABEL_HW_CPU_SOCKETS, problems) or _int_label(labels, LABEL_NFD_CPU_SOCKETS, problems)
    gpu_model = labels.get(LABEL_HW_GPU_MODEL, "")
    if not gpu_model:
        gpu_model = next((labels[k] for k in gpu_product_label_keys if labels.get(k)), "")
    gpu_count = _int_label(labels, LABEL_HW_GPU_COUNT, problems) or node.allocatable_gpus
    return HardwareView(
        cpu_model=cpu_model,
        cpu_sockets=sockets,
        cpu_cores=node.capacity_cpu,
        gpu_model=gpu_model if gpu_count else "",
        gpu_count=gpu_count,
        problems=tuple(problems),
    )
