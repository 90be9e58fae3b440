"""Performance versus power cap for one device of a profile running one workload kind: the device
models (``physics.gpu``, ``physics.cpu``, ``physics.speed``) made inspectable, for the ``curve``
command, the calibration tests and docs/physics-calibration.md. Pure.

- The device: a GPU kind uses one board of the profile (cap as a share of ``gpus.max_w``; the
  lowest cap the board accepts is ``gpus.min_w``); a CPU kind one package (cap as a share of the
  RAPL long-term constraint's ``max_power_uw``, else ``physics.cpu.max_pkg_w``; the lowest cap that
  can be met is the package's draw at the lowest clock, so lower caps are clamped to it).
- The work: the kind's mean compute share and natural draw (``joulie_workload.kinds``), or
  ``util`` given. CPU busy cores run at the turbo clock the busy share allows (a performance
  governor).
- ``throughput`` is work per second over the uncapped device's, ``power_w`` the device's power
  under the cap, ``energy_per_work`` = (power / uncapped power) / throughput: device energy only
  (idle, DRAM and platform power of the node are not in it).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from joulie_hwprofiles.schema import Profile
from joulie_simulator.physics import cpu as physics_cpu
from joulie_simulator.physics import gpu as physics_gpu
from joulie_simulator.physics.speed import throughput
from joulie_workload.kinds import KINDS, SPECS, WorkloadKind


class CurveError(ValueError):
    """A request the model cannot answer (a GPU kind on a profile without GPUs, ...)."""


@dataclass(frozen=True)
class CurvePoint:
    profile: str
    kind: str
    device: str
    cap_pct: float
    """The cap asked for, % of the device's maximum limit."""
    cap_w: float
    """The cap applied (after clamping)."""
    clamped: bool
    min_cap_pct: float
    max_limit_w: float
    util: float
    compute_share: float
    clock_ratio: float
    throughput: float
    power_w: float
    uncapped_power_w: float
    energy_per_work: float

    def record(self) -> dict[str, Any]:
        return {k: (round(v, 6) if isinstance(v, float) else v) for k, v in asdict(self).items()}


def _kind(kind: str) -> WorkloadKind:
    if kind not in SPECS:
        raise CurveError(f"--class: {kind!r} is not a workload kind; valid: {', '.join(KINDS)}")
    return kind


def kinds_for(profile: Profile) -> list[str]:
    """The kinds a profile can run (GPU kinds need GPUs)."""
    return [k for k in KINDS if not SPECS[k].gpu or profile.gpus is not None]


def point(profile: Profile, kind: str, cap_pct: float, util: float | None = None) -> CurvePoint:
    spec = SPECS[_kind(kind)]
    u = spec.natural_draw.mean if util is None else min(max(util, 0.0), 1.0)
    c = spec.compute_share.mean
    if spec.gpu:
        g, board = profile.physics.gpu, profile.gpus
        if g is None or board is None:
            raise CurveError(f"--class {kind}: profile {profile.name!r} has no GPUs")
        max_w, min_w = board.max_w, board.min_w
        want_w = max_w * cap_pct / 100.0
        cap_w = max(want_w, min_w)
        uncapped = physics_gpu.natural_power_w(g, u)
        power, r = physics_gpu.capped_board(g, u, cap_w)
        device = f"gpu:{board.product}"
    else:
        cpu, cf = profile.physics.cpu, profile.cpufreq
        pc = profile.powercap
        max_w = pc.package.constraints[0].max_power_uw / 1e6 if pc is not None and pc.package.constraints else cpu.max_pkg_w
        if cf is not None:
            ac = physics_cpu.allcore_khz(cpu, cf)
            busy = physics_cpu.busy_khz(cpu, cf, math.inf, u) / ac
            lo = cf.min_khz / ac
        else:
            busy = lo = 1.0
        min_w = physics_cpu.package_power_w(cpu, u, lo)
        want_w = max_w * cap_pct / 100.0
        cap_w = max(want_w, min_w)
        uncapped = physics_cpu.package_power_w(cpu, u, busy)
        power, ratio = physics_cpu.capped_package(cpu, u, busy, lo, cap_w)
        r = ratio / busy if busy > 0 else 1.0
        device = f"cpu-package:{profile.cpu.model_name or profile.name}"
    t = throughput(r, c)
    epw = (power / uncapped) / t if uncapped > 0 else 1.0
    return CurvePoint(profile.name, kind, device, cap_pct, cap_w, want_w < min_w * (1 - 1e-9), 100.0 * min_w / max_w, max_w,
                      u, c, r, t, power, uncapped, epw)


def sweep_pcts(profile: Profile, kind: str, util: float | None = None, step_pct: float = 5.0) -> list[float]:
    """100 % down to the device's lowest cap, in ``step_pct`` steps (the lowest cap last)."""
    lo = point(profile, kind, 100.0, util).min_cap_pct
    out = [100.0 - i * step_pct for i in range(int((100.0 - lo) / step_pct) + 1)]
    if out[-1] > lo + 1e-6:
        out.append(lo)
    return out
