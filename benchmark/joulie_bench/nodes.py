"""The benchmark's nodes: a name and a hardware profile (``BenchNode``), and the NodeHardware the
agent would publish for one (discovery is not what this benchmark measures)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from joulie_api.generated.nodehardware import NodeHardware
from joulie_hwprofiles.schema import Profile


@dataclass(frozen=True)
class BenchNode:
    name: str
    profile: Profile

    @property
    def cpus(self) -> float:
        n = self.profile.node
        return n.cpu - n.reserved_cpu_m / 1000

    @property
    def gpus(self) -> int:
        return self.profile.gpus.count if self.profile.gpus else 0

    @property
    def cpu_max_w_per_socket(self) -> float:
        pc = self.profile.powercap
        if pc is not None and pc.package.constraints:
            return pc.package.constraints[0].max_power_uw / 1e6
        return self.profile.physics.cpu.max_pkg_w

    @property
    def tdp_w(self) -> float:
        p = self.profile
        g = p.gpus.max_w * p.gpus.count if p.gpus else 0.0
        return self.cpu_max_w_per_socket * p.cpu.sockets + p.physics.dram_w_per_socket * p.cpu.sockets + p.physics.platform_other_w + g


def node_hardware(n: BenchNode) -> NodeHardware:
    """What the agent would publish for the node (discovery is not what this benchmark measures)."""
    p = n.profile
    max_w = n.cpu_max_w_per_socket
    status: dict[str, Any] = {
        "cpu": {"model": p.cpu.model_name or p.name, "sockets": p.cpu.sockets, "totalCores": p.cpu.sockets * p.cpu.cores_per_socket,
                "capRange": {"minWattsPerSocket": round(0.3 * max_w, 1), "maxWattsPerSocket": max_w}},
        "memory": {"totalBytes": p.node.memory_ki * 1024},
    }
    if p.gpus is not None:
        status["gpu"] = {"present": True, "vendor": p.gpus.vendor, "model": p.gpus.product, "count": p.gpus.count,
                         "capRangePerGpu": {"minWatts": p.gpus.min_w, "maxWatts": p.gpus.max_w,
                                                            "defaultWatts": p.gpus.default_w}}
    return NodeHardware.model_validate({"spec": {"nodeName": n.name}, "status": status})
