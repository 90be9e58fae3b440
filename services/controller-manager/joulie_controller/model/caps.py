"""Cap computation: the CPU and GPU caps a node's NodeTwin.spec asks for. Pure: no I/O.

Caps follow the post-guard profile: a draining node keeps performance caps until its
performance pods are gone.
"""

from __future__ import annotations

from dataclasses import dataclass

from joulie_api.names import PROFILE_PERFORMANCE
from joulie_controller.model.hardware import HardwareView
from joulie_controller.settings import Settings


@dataclass(frozen=True)
class CpuCap:
    pct_of_max: float | None = None
    watts: float | None = None
    """Absolute package cap, watts per socket."""


@dataclass(frozen=True)
class GpuCap:
    pct_of_max: float
    watts_per_gpu: float | None = None


@dataclass(frozen=True)
class Caps:
    cpu: CpuCap
    gpu: GpuCap | None

    def cpu_pct_in_effect(self, hw: HardwareView) -> float:
        """The CPU cap as % of max, also in absolute mode (the twin budgets with it)."""
        if self.cpu.pct_of_max is not None:
            return self.cpu.pct_of_max
        if self.cpu.watts is not None and hw.cpu_max_w_per_socket > 0:
            return min(100.0, self.cpu.watts / hw.cpu_max_w_per_socket * 100.0)
        return 100.0

    def gpu_pct_in_effect(self) -> float:
        return self.gpu.pct_of_max if self.gpu is not None else 100.0


def _absolute_cpu_w(target_w: float, hw: HardwareView) -> float:
    if hw.cpu_max_w_per_socket > 0:
        lo = hw.cpu_min_w_per_socket if hw.cpu_min_w_per_socket > 0 else 1.0
        return max(lo, min(hw.cpu_max_w_per_socket, target_w))
    return target_w


def compute_caps(
    profile_for_caps: str, hw: HardwareView, s: Settings, eco_pct_override: float | None = None,
    work_caps: tuple[float, float] | None = None,
) -> tuple[Caps, list[str]]:
    """Caps for a node and warnings (e.g. a GPU intent disabled by a pct ≤ 0).

    GPU nodes get no CPU cap (CPU power is a few % of such a node and capping it starves the GPU
    feed): they carry PERFORMANCE_CAP_WATTS in absolute mode and 100 % otherwise, whatever the profile.
    ``work_caps`` (CPU %, GPU % of max), from the work-aware policy, replace the profile's caps,
    GPU nodes' CPU included (the policy caps a host only as far as its GPU Pods allow; a performance
    node's work caps are its reference limits: the GPUs' default, the CPU's maximum).
    """
    warnings: list[str] = []
    perf = profile_for_caps == PROFILE_PERFORMANCE
    if work_caps is not None:
        return _work_caps(hw, s, *work_caps), warnings
    gpu_node = hw.gpu_count > 0
    cfg = s.caps
    eco_pct = eco_pct_override if eco_pct_override is not None else cfg.cpu_eco_pct
    cpu_pct = cfg.cpu_performance_pct if perf else eco_pct
    if gpu_node:
        absolute = cfg.cpu_write_absolute
        cpu = CpuCap(watts=_absolute_cpu_w(cfg.performance_cap_w, hw)) if absolute else CpuCap(pct_of_max=100.0)
    elif cfg.cpu_write_absolute:
        target = cfg.performance_cap_w if perf else cfg.eco_cap_w
        if not perf and eco_pct_override is not None and hw.cpu_max_w_per_socket > 0:
            target = min(target, hw.cpu_max_w_per_socket * eco_pct_override / 100.0)
        cpu = CpuCap(watts=_absolute_cpu_w(target, hw))
    else:
        cpu = CpuCap(pct_of_max=min(100.0, cpu_pct)) if cpu_pct > 0 else CpuCap()
    gpu: GpuCap | None = None
    if gpu_node:
        gpct = cfg.gpu_performance_pct if perf else (
            eco_pct_override if eco_pct_override is not None else cfg.gpu_eco_pct)
        if gpct <= 0:
            warnings.append(f"GPU cap intent disabled: {'performance' if perf else 'eco'} GPU pct is {gpct}")
        else:
            gpct = min(100.0, gpct)
            watts: float | None = None
            if cfg.gpu_write_absolute:
                if hw.gpu_max_w > 0:
                    lo = hw.gpu_min_w if hw.gpu_min_w > 0 else 1.0
                    watts = max(lo, min(hw.gpu_max_w, gpct / 100.0 * hw.gpu_max_w))
                elif hw.gpu_model in cfg.gpu_model_caps:
                    mc = cfg.gpu_model_caps[hw.gpu_model]
                    watts = max(max(mc.min_cap_w, 1.0), min(mc.max_cap_w, gpct / 100.0 * mc.max_cap_w))
                else:
                    warnings.append(f"GPU model {hw.gpu_model or '(unknown)'} has no known power range; "
                                    "writing the percentage only")
            gpu = GpuCap(pct_of_max=gpct, watts_per_gpu=watts)
    return Caps(cpu, gpu), warnings


def _work_caps(hw: HardwareView, s: Settings, cpu_pct: float, gpu_pct: float) -> Caps:
    cpu_pct, gpu_pct = min(100.0, cpu_pct), min(100.0, gpu_pct)
    if s.caps.cpu_write_absolute and hw.cpu_max_w_per_socket > 0:
        cpu = CpuCap(watts=_absolute_cpu_w(hw.cpu_max_w_per_socket * cpu_pct / 100.0, hw))
    else:
        cpu = CpuCap(pct_of_max=cpu_pct)
    gpu: GpuCap | None = None
    if hw.gpu_count > 0:
        watts = None
        if s.caps.gpu_write_absolute and hw.gpu_max_w > 0:
            watts = max(hw.gpu_min_w if hw.gpu_min_w > 0 else 1.0, min(hw.gpu_max_w, gpu_pct / 100.0 * hw.gpu_max_w))
        gpu = GpuCap(pct_of_max=gpu_pct, watts_per_gpu=watts)
    return Caps(cpu, gpu)
