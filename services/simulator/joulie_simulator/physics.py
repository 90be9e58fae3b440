"""Physics of emulated hardware: pure functions of one tick.

Formulas (one place; other modules and docs link here):

- CPU package power: ``P = P_idle + (P_max - P_idle) * util**alpha * f**beta`` with ``f`` the
  frequency scale (current kHz / cpuinfo_max kHz).
- Under a cap the package runs at the frequency that meets it,
  ``f = ((cap - P_idle) / ((P_max - P_idle) * util**alpha)) ** (1/beta)``, never below the lowest
  frequency; there, power is the model's floor, possibly above the cap (a cap below the floor is
  not met, as on hardware).
- Limits settle first order: ``x += (target - x) * min(1, dt / tau)`` (RAPL: tau = the
  constraint's time window; HSMP and GPU boards: their profile's tau). Frequency follows the
  governor's target with the profile's ramp time.
- GPU board power: ``natural = idle + (natural_max - idle) * util**gamma``, held to
  ``min(natural, max(enforced_limit, idle))``: a board cannot be capped below idle.
- A board with persistence mode off and no client (utilisation 0) loses a written limit: it
  reads the default again (the driver's state is torn down when the last client closes).
- Energy counters: ``energy_uj = (start_uj + floor(J * 1e6)) mod (max_energy_range_uj + 1)`` with
  ``max_energy_range_uj = floor((2**32 - 1) * energy_unit_nj / 1000)``, the 32-bit RAPL register
  scaled to µJ; readers add ``max_energy_range_uj`` on a wrap.
"""

from __future__ import annotations

import math

from joulie_hwprofiles.schema import CpuPhysics, GpuPhysics, Profile
from joulie_simulator.model import GpuTruth, NodeState, SocketState

MIN_FREQ_SCALE_DEFAULT = 0.35


def settle(current: float, target: float, dt_s: float, tau_s: float) -> float:
    """First-order step toward ``target``; ``tau_s <= 0`` jumps at once."""
    if tau_s <= 0 or dt_s >= tau_s:
        return target
    return current + (target - current) * (dt_s / tau_s)


def cpu_power_w(p: CpuPhysics, util: float, freq_scale: float) -> float:
    u = min(max(util, 0.0), 1.0)
    f = min(max(freq_scale, 0.0), 1.0)
    return float(p.idle_pkg_w + (p.max_pkg_w - p.idle_pkg_w) * (u**p.alpha_util) * (f**p.beta_freq))


def freq_scale_for_cap(p: CpuPhysics, util: float, cap_w: float, min_scale: float) -> float:
    """The frequency scale at which the package draws ``cap_w`` at ``util`` (clamped to [min_scale, 1])."""
    dyn = (p.max_pkg_w - p.idle_pkg_w) * (min(max(util, 0.0), 1.0) ** p.alpha_util)
    if dyn <= 0:
        return 1.0
    head = cap_w - p.idle_pkg_w
    if head <= 0:
        return min_scale
    return min(1.0, max(min_scale, float((head / dyn) ** (1.0 / p.beta_freq))))


def capped_package(p: CpuPhysics, util: float, natural_scale: float, cap_w: float, min_scale: float) -> tuple[float, float]:
    """(power W, effective frequency scale) of one package under ``cap_w`` (``inf`` = uncapped)."""
    natural = cpu_power_w(p, util, natural_scale)
    if natural <= cap_w:
        return natural, natural_scale
    floor = cpu_power_w(p, util, min_scale)
    scale = min(natural_scale, freq_scale_for_cap(p, util, cap_w, min_scale))
    return min(natural, max(cap_w, floor)), scale


def gpu_board_power_w(g: GpuPhysics, util: float, enforced_limit_w: float) -> float:
    u = min(max(util, 0.0), 1.0)
    natural = g.idle_w + (g.natural_max_w - g.idle_w) * (u**g.util_gamma)
    return float(min(natural, max(enforced_limit_w, g.idle_w)))


def max_energy_range_uj(energy_unit_nj: int) -> int:
    return ((2**32 - 1) * energy_unit_nj) // 1000


def energy_counter_uj(start_uj: int, energy_j: float, range_uj: int) -> int:
    return (start_uj + math.floor(energy_j * 1e6)) % (range_uj + 1)


def counter_delta_uj(previous_uj: int, current_uj: int, range_uj: int) -> int:
    """What a reader computes between two readings, counting one wrap."""
    return current_uj - previous_uj if current_uj >= previous_uj else current_uj + range_uj - previous_uj


def step_node(profile: Profile, state: NodeState, dt_s: float) -> NodeState:
    """Advance one node by ``dt_s`` seconds: frequencies, settled caps, powers and energy ledgers.

    Runs for every node on every tick: objects are built positionally rather than with
    ``dataclasses.replace``, and a node's constants are looked up once."""
    phys = profile.physics
    cpu = phys.cpu
    util = state.load.cpu_util
    cf = profile.cpufreq
    max_khz = cf.max_khz if cf else 0
    min_khz = cf.min_khz if cf else 0
    min_scale = (cf.min_khz / cf.max_khz) if cf else MIN_FREQ_SCALE_DEFAULT
    ramp_s = cpu.freq_ramp_s
    hsmp_tau_s = phys.hsmp_settle_tau_s
    dram_w = phys.dram_w_per_socket
    sockets: list[SocketState] = []
    for s in state.sockets:
        if cf is None:
            cur_khz, natural_scale = 0.0, 1.0
        else:
            target = s.freq_base_khz + s.freq_per_util_khz * util
            cur_khz = settle(s.cur_khz, target, dt_s, ramp_s)
            natural_scale = cur_khz / max_khz
        cap_w = math.inf
        rapl_settled = s.rapl_settled_w
        if s.rapl_requested_w is not None:
            rapl_settled = settle(rapl_settled, s.rapl_requested_w, dt_s, s.rapl_tau_s)
            cap_w = min(cap_w, rapl_settled)
        if s.rapl_short_w is not None:
            cap_w = min(cap_w, s.rapl_short_w)
        hsmp_settled = s.hsmp_settled_w
        if s.hsmp_requested_w is not None:
            hsmp_settled = settle(hsmp_settled, s.hsmp_requested_w, dt_s, hsmp_tau_s)
            cap_w = min(cap_w, hsmp_settled)
        power, scale = capped_package(cpu, util, natural_scale, cap_w, min_scale)
        if cf:
            eff_khz = max(scale * max_khz, min_khz)
            eff_khz = min(eff_khz, cur_khz)
        else:
            eff_khz = 0.0
        sockets.append(
            SocketState(
                s.socket,
                s.freq_base_khz,
                s.freq_per_util_khz,
                cur_khz,
                eff_khz,
                s.rapl_requested_w,
                s.rapl_tau_s,
                s.rapl_short_w,
                rapl_settled,
                s.hsmp_requested_w,
                hsmp_settled,
                power,
                s.energy_j + power * dt_s,
                s.dram_energy_j + dram_w * dt_s,
            )
        )
    gpus: list[GpuTruth] = []
    if profile.gpus is not None and phys.gpu is not None:
        spec = profile.gpus
        gphys = phys.gpu
        loads = state.load.gpu_util
        n_loads = len(loads)
        tau_s = gphys.cap_settle_tau_s
        lo_w, hi_w, default_w, persistent = spec.min_w, spec.max_w, spec.default_w, spec.persistence_mode
        for g in state.gpus:
            u = loads[g.index] if g.index < n_loads else 0.0
            limit_w = g.limit_w
            if not persistent and u <= 0 and limit_w != default_w:
                # Persistence mode off and no client holds the board: the driver tears its state
                # down and the limit is back at the default when the next client opens it.
                limit_w = default_w
            target = min(max(limit_w, lo_w), hi_w)
            enforced = settle(g.enforced_w, target, dt_s, tau_s)
            power = gpu_board_power_w(gphys, u, enforced)
            gpus.append(GpuTruth(g.index, g.uuid, limit_w, enforced, power, u, g.energy_j + power * dt_s))
    host_w = sum(s.power_w for s in sockets) + dram_w * len(sockets) + sum(g.power_w for g in gpus) + phys.platform_other_w
    return NodeState(
        state.name,
        state.profile,
        state.tick + 1,
        state.time_s + dt_s,
        state.load,
        state.zones,
        tuple(sockets),
        state.pol_min_khz,
        state.pol_max_khz,
        state.pol_governor,
        state.pol_epp,
        state.boost,
        state.hsmp_cap_uw,
        tuple(gpus),
        host_w,
        state.host_energy_j + host_w * dt_s,
        state.platform_energy_j + phys.platform_other_w * dt_s,
        state.faults,
    )


def step_all(profiles: dict[str, Profile], states: dict[str, NodeState], dt_s: float) -> dict[str, NodeState]:
    """One tick for every node (keyed by node name; ``profiles`` by node name too)."""
    return {name: step_node(profiles[name], st, dt_s) for name, st in states.items()}
