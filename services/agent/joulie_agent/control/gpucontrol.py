"""GPU cap decisions: per-GPU target watts from NodeTwin.spec.gpu.powerCap. Pure."""

from __future__ import annotations

from dataclasses import dataclass

from joulie_agent.discovery.gputools import GPUDevice
from joulie_api.generated.nodetwin import GPUPowerCap

# A GPU whose limit is within this of the target is left alone (tools round to whole watts).
UNCHANGED_TOLERANCE_W = 0.5


@dataclass(frozen=True)
class GPUPlan:
    """targets: watts per GPU index; or a blocked reason."""

    targets: dict[int, float]
    blocked: str = ""


def plan_gpu_caps(cap: GPUPowerCap, devices: list[GPUDevice]) -> GPUPlan:
    """Each GPU gets W, or pct of its own maximum raised to its minimum (the original took the
    minimum over GPUs; on a mixed node that under-capped the larger ones)."""
    if not devices:
        return GPUPlan({}, "no GPU devices found by NVML or the GPU tools")
    targets: dict[int, float] = {}
    if cap.cap_watts_per_gpu is not None:
        w = float(cap.cap_watts_per_gpu)
        for d in devices:
            if d.min_w is not None and w < d.min_w:
                return GPUPlan({}, f"requested cap {w:.1f}W below min {d.min_w:.1f}W on gpu {d.index}")
            if d.max_w is not None and d.max_w > 0 and w > d.max_w:
                return GPUPlan({}, f"requested cap {w:.1f}W above max {d.max_w:.1f}W on gpu {d.index}")
            targets[d.index] = w
        return GPUPlan(targets)
    if cap.cap_pct_of_max is not None:
        pct = min(100.0, float(cap.cap_pct_of_max))
        for d in devices:
            if d.max_w is None or d.max_w <= 0:
                return GPUPlan({}, "cannot resolve capPctOfMax without device max power limits")
            targets[d.index] = max(d.min_w or 0.0, pct / 100 * d.max_w)
        return GPUPlan(targets)
    return GPUPlan({}, "")


def nvml_limit_mw(watts: float) -> int:
    """The milliwatts NVML takes for a target in watts (nvmlDeviceSetPowerManagementLimit)."""
    return round(watts * 1000)


def changed_targets(plan: GPUPlan, devices: list[GPUDevice]) -> dict[int, float]:
    """The GPUs whose current limit differs from the target (skip unchanged writes)."""
    current = {d.index: d.current_cap_w for d in devices}
    return {i: w for i, w in plan.targets.items()
            if current.get(i) is None or abs((current[i] or 0.0) - w) > UNCHANGED_TOLERANCE_W}
