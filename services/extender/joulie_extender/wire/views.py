"""NodeTwin / NodeHardware / Node objects -> the small views scoring and filtering read. Pure: no I/O."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from joulie_api.generated.nodehardware import NodeHardware
from joulie_api.generated.nodetwin import NodeTwin
from joulie_extender.rules.powerest import HardwareInfo
from joulie_extender.rules.scoring import TwinView
from joulie_extender.wire.scheduler import profile_label


def twin_view(twin: NodeTwin) -> TwinView:
    status = twin.status
    draining = bool(twin.spec.scheduling and twin.spec.scheduling.draining)
    policy = (twin.spec.policy.name or "") if twin.spec.policy else ""
    if status is None:
        return TwinView(node_name=twin.spec.node_name, schedulable_class="unknown", draining=draining, policy_name=policy)
    pm = status.power_measurement
    return TwinView(
        node_name=twin.spec.node_name,
        schedulable_class=status.schedulable_class or "unknown",
        headroom_score=status.predicted_power_headroom_score,
        cooling_stress_score=status.predicted_cooling_stress_score,
        has_power_measurement=pm is not None,
        measured_power_w=(pm.measured_node_power_w or 0.0) if pm else 0.0,
        capped_power_w=(pm.node_capped_power_w or 0.0) if pm else 0.0,
        node_tdp_w=(pm.node_tdp_w or 0.0) if pm else 0.0,
        power_trend_w_per_min=(pm.power_trend_w_per_min or 0.0) if pm else 0.0,
        # A node whose agent is lost enforces nothing we can vouch for: neutral, as a stale twin.
        last_updated=None if status.agent is not None and status.agent.state == "agent-lost" else status.last_updated,
        draining=draining or status.schedulable_class == "draining",
        policy_name=policy,
        power_state=(status.power.state or "on") if status.power is not None else "on",
    )


def hardware_info(hw: NodeHardware) -> HardwareInfo:
    status = hw.status
    if status is None:
        return HardwareInfo()
    cpu, gpu = status.cpu, status.gpu
    sockets = max(cpu.sockets or 0, 1) if cpu else 1
    per_socket = (cpu.cap_range.max_watts_per_socket or 0.0) if cpu and cpu.cap_range else 0.0
    return HardwareInfo(
        cpu_max_watts_total=per_socket * sockets,
        cpu_total_cores=(cpu.total_cores or 0) if cpu else 0,
        gpu_present=bool(gpu and (gpu.present or (gpu.count or 0) > 0)),
        gpu_count=(gpu.count or 0) if gpu else 0,
        gpu_max_watts_per_gpu=(gpu.cap_range_per_gpu.max_watts or 0.0) if gpu and gpu.cap_range_per_gpu else 0.0,
        gpu_vendor=(gpu.vendor or "") if gpu else "",
        memory_bytes=(status.memory.total_bytes or 0) if status.memory else 0,
    )


def profile_label_of(node: Mapping[str, Any]) -> str | None:
    """A Node object's `joulie.io/power-profile` label value, None when absent, empty or not a string."""
    meta = node.get("metadata")
    return profile_label(meta.get("labels") if isinstance(meta, Mapping) else None)
