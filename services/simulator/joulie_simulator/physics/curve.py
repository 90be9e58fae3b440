"""Performance versus power cap and SM clock lock for one device of a profile running one workload
kind: the device models (``physics.gpu``, ``physics.cpu``, ``physics.speed``) made inspectable, for
the ``curve`` command, the calibration tests and docs/physics-calibration.md. Pure.

- The device: a GPU kind uses one board of the profile (cap as a share of ``gpus.max_w``; the
  lowest cap the board accepts is ``gpus.min_w``; a clock lock as a share of ``smClockMaxMhz``,
  the lowest ``smClockMinMhz``: lower ones are clamped); a CPU kind one package (cap as a share of
  the RAPL long-term constraint's ``max_power_uw``, else ``physics.cpu.max_pkg_w``; the lowest cap
  that can be met is the package's draw at the lowest clock, so lower caps are clamped to it; no
  clock lock).
- The work: the kind's mean compute share and natural draw (``joulie_workload.kinds``), or
  ``util`` given (one-phase kinds). Aggregated ``gpu-inference`` runs its two phases at their means
  (prefill for the mean prefill time share, decode for the rest:
  ``physics.gpu.board_operating_point``). CPU busy cores run at the turbo clock the busy share
  allows (a performance governor).
- ``throughput`` is work per second over the uncapped, unlocked device's, ``power_w`` the device's
  power under the setting, ``energy_per_work`` = (power / uncapped power) / throughput: device
  energy only (idle, DRAM and platform power of the node are not in it). ``clock_ratio`` is the SM
  clock over its maximum (a phased kind: the time-weighted mean of its phases' clocks,
  ``phase_clock_ratios``).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from joulie_hwprofiles.schema import Profile
from joulie_simulator.physics import cpu as physics_cpu
from joulie_simulator.physics import gpu as physics_gpu
from joulie_simulator.physics.gpu import Phase
from joulie_simulator.physics.speed import stretch, throughput
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
    clock_pct: float = 100.0
    """The SM clock lock asked for, % of the board's maximum SM clock (100: not locked)."""
    lock_mhz: float | None = None
    """The lock applied (after clamping to the supported range); None: not locked."""
    lock_clamped: bool = False
    phase_clock_ratios: tuple[float, ...] = ()

    def record(self) -> dict[str, Any]:
        def r(v: Any) -> Any:
            return round(v, 6) if isinstance(v, float) else [r(x) for x in v] if isinstance(v, tuple) else v

        return {k: r(v) for k, v in asdict(self).items()}


def _kind(kind: str) -> WorkloadKind:
    if kind not in SPECS:
        raise CurveError(f"--class: {kind!r} is not a workload kind; valid: {', '.join(KINDS)}")
    return kind


def kinds_for(profile: Profile) -> list[str]:
    """The kinds a profile can run (GPU kinds need GPUs)."""
    return [k for k in KINDS if not SPECS[k].gpu or profile.gpus is not None]


def kind_phases(kind: str, util: float | None = None) -> tuple[Phase, ...]:
    """A GPU kind's work at its means: its phases (aggregated serving), else one phase (``util`` given: that draw)."""
    spec = SPECS[_kind(kind)]
    if spec.phases and spec.first_phase_share is not None:
        if util is not None:
            raise CurveError(f"--util: {kind} runs as phases with their own draws; --util applies to one-phase kinds")
        s = spec.first_phase_share.mean
        return tuple(Phase(share, p.compute_share.mean, p.natural_draw.mean)
                     for p, share in zip(spec.phases, (s, 1.0 - s), strict=True))
    u = spec.natural_draw.mean if util is None else min(max(util, 0.0), 1.0)
    return (Phase(1.0, spec.compute_share.mean, u),)


def point(profile: Profile, kind: str, cap_pct: float, util: float | None = None, clock_pct: float | None = None) -> CurvePoint:
    """The device at a cap of ``cap_pct`` % and, for a GPU kind, an SM clock lock at ``clock_pct`` % (None: none)."""
    spec = SPECS[_kind(kind)]
    if spec.gpu:
        return _gpu_point(profile, kind, cap_pct, util, clock_pct)
    if clock_pct is not None:
        raise CurveError(f"--clock-pct/--clock-mhz: {kind} runs on CPUs; a clock lock applies to GPU kinds")
    return _cpu_point(profile, kind, cap_pct, util)


def _gpu_point(profile: Profile, kind: str, cap_pct: float, util: float | None, clock_pct: float | None) -> CurvePoint:
    g, board = profile.physics.gpu, profile.gpus
    if g is None or board is None:
        raise CurveError(f"--class {kind}: profile {profile.name!r} has no GPUs")
    phases = kind_phases(kind, util)
    max_w, min_w = board.max_w, board.min_w
    want_w = max_w * cap_pct / 100.0
    cap_w = max(want_w, min_w)
    lock_mhz, lock_clamped = None, False
    if clock_pct is not None:
        want_mhz = board.sm_clock_max_mhz * clock_pct / 100.0
        lock_mhz = min(max(want_mhz, board.sm_clock_min_mhz), board.sm_clock_max_mhz)
        lock_clamped = want_mhz < board.sm_clock_min_mhz * (1 - 1e-9)
    op = physics_gpu.board_operating_point(g, phases, cap_w, lock_mhz / board.sm_clock_max_mhz if lock_mhz else 1.0)
    uncapped = physics_gpu.natural_board_power_w(g, phases)
    weights = [p.share * stretch(r, p.compute_share) for p, r in zip(phases, op.clock_ratios, strict=True)]
    clock = op.clock_ratios[0] if len(phases) == 1 else (
        sum(w * r for w, r in zip(weights, op.clock_ratios, strict=True)) / sum(weights))
    u = sum(p.share * p.draw for p in phases)
    c = sum(p.share * p.compute_share for p in phases)
    epw = (op.power_w / uncapped) / op.throughput if uncapped > 0 else 1.0
    return CurvePoint(profile.name, kind, f"gpu:{board.product}", cap_pct, cap_w, want_w < min_w * (1 - 1e-9),
                      100.0 * min_w / max_w, max_w, u, c, clock, op.throughput, op.power_w, uncapped, epw,
                      100.0 if clock_pct is None else clock_pct, lock_mhz, lock_clamped, op.clock_ratios)


def _cpu_point(profile: Profile, kind: str, cap_pct: float, util: float | None) -> CurvePoint:
    spec = SPECS[_kind(kind)]
    u = spec.natural_draw.mean if util is None else min(max(util, 0.0), 1.0)
    c = spec.compute_share.mean
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
    return _down_to(lo, step_pct)


def sweep_clock_pcts(profile: Profile, step_pct: float = 5.0) -> list[float]:
    """100 % of the maximum SM clock down to the lowest supported one, in ``step_pct`` steps (the lowest last)."""
    if profile.gpus is None:
        raise CurveError(f"--sweep-clock: profile {profile.name!r} has no GPUs")
    return _down_to(100.0 * profile.gpus.sm_clock_min_mhz / profile.gpus.sm_clock_max_mhz, step_pct)


def _down_to(lo: float, step_pct: float) -> list[float]:
    out = [100.0 - i * step_pct for i in range(int((100.0 - lo) / step_pct) + 1)]
    if out[-1] > lo + 1e-6:
        out.append(lo)
    return out
