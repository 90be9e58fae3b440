"""Physics of emulated hardware: pure functions of one tick.

The device models live beside this module, one per kind of device, with their formulas:
``physics.cpu`` (a package under RAPL/HSMP: busy-core clock, turbo, power), ``physics.gpu`` (a board
under a power limit: sustained clock, power) and ``physics.speed`` (work done at a clock). This
module steps nodes with them and keeps the ledgers:

- Limits settle first order: ``x += (target - x) * min(1, dt / tau)`` (RAPL: tau = the
  constraint's time window; HSMP and GPU boards: their profile's tau). The shown frequency
  (``cur_khz``, the policies' mean) follows the governor's target with the profile's ramp time;
  under a limit it is scaled by the busy cores' clock ratio (``eff_khz``).
- Host power = packages + DRAM + GPU boards + the rest of the platform (``platform_other_w``).
- A board with persistence mode off and no client (utilisation 0) loses a written limit: it
  reads the default again (the driver's state is torn down when the last client closes).
- Energy counters: ``energy_uj = (start_uj + floor(J * 1e6)) mod (max_energy_range_uj + 1)`` with
  ``max_energy_range_uj = floor((2**32 - 1) * energy_unit_nj / 1000)``, the 32-bit RAPL register
  scaled to µJ; readers add ``max_energy_range_uj`` on a wrap.
"""

from __future__ import annotations

import math

from joulie_hwprofiles.schema import GpuPhysics, Profile
from joulie_simulator.physics import cpu as physics_cpu
from joulie_simulator.physics import gpu as physics_gpu
from joulie_simulator.physics.model import GpuTruth, NodeState, SocketState, moved

MIN_FREQ_SCALE_DEFAULT = 0.35


# A settling value within this share of its target (or within this many units of a target below 1)
# is there: a first-order step never reaches its target exactly, and a node whose values have all
# arrived steps to exactly itself, which ``steady`` needs (1e-9 of a watt or a kHz: no reading shows it).
SETTLED_WITHIN = 1e-9


def settle(current: float, target: float, dt_s: float, tau_s: float) -> float:
    """First-order step toward ``target``; ``tau_s <= 0`` jumps at once; within ``SETTLED_WITHIN``, the target."""
    if tau_s <= 0 or dt_s >= tau_s:
        return target
    step = current + (target - current) * (dt_s / tau_s)
    return target if abs(target - step) <= SETTLED_WITHIN * max(abs(target), 1.0) else step


def gpu_board_power_w(g: GpuPhysics, util: float, enforced_limit_w: float) -> float:
    """A board's power under its enforced limit (see ``physics.gpu``)."""
    return physics_gpu.capped_board(g, util, enforced_limit_w)[0]


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
    sockets = _step_sockets(profile, state, dt_s)
    gpus = _step_gpus(profile, state, dt_s)
    dram_w = phys.dram_w_per_socket
    host_w = sum(s.power_w for s in sockets) + dram_w * len(sockets) + sum(g.power_w for g in gpus) + phys.platform_other_w
    return _next_state(state, sockets, gpus, host_w, phys.platform_other_w, dt_s)


def _cpu_clock_bounds(profile: Profile, util: float) -> tuple[int, float, float, float]:
    """The node's CPU clock constants this tick: (cpuinfo_min kHz, all-core kHz, the turbo kHz this
    many busy cores reach, min / all-core); without cpufreq, ratios of 1."""
    cf = profile.cpufreq
    min_khz = cf.min_khz if cf else 0
    if cf:
        ac_khz = physics_cpu.allcore_khz(profile.physics.cpu, cf)
        turbo_limit_khz = physics_cpu.turbo_khz(profile.physics.cpu, cf, util)  # what this many busy cores can turbo to
        min_ratio = min_khz / ac_khz
    else:
        ac_khz, turbo_limit_khz, min_ratio = 1.0, 1.0, 1.0
    return min_khz, ac_khz, turbo_limit_khz, min_ratio


def _socket_clock(
    s: SocketState, util: float, dt_s: float, ramp_s: float, min_khz: int, ac_khz: float, turbo_limit_khz: float
) -> tuple[float, float]:
    """A socket's shown frequency (settling toward the governor's target) and its busy cores'
    clock ratio to the all-core clock, before any limit."""
    target = s.freq_base_khz + s.freq_per_util_khz * util
    cur_khz = settle(s.cur_khz, target, dt_s, ramp_s)
    # A busy core runs at what the governor gives a fully busy policy, within turbo.
    busy_ratio = max(min_khz, min(s.freq_base_khz + s.freq_per_util_khz, turbo_limit_khz)) / ac_khz
    return cur_khz, busy_ratio


def _socket_cap(s: SocketState, dt_s: float, hsmp_tau_s: float) -> tuple[float, float, float]:
    """The package limit in force: (the lowest of the settled RAPL long-term, the RAPL short-term and
    the settled HSMP limit, or inf; the settled RAPL limit; the settled HSMP limit)."""
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
    return cap_w, rapl_settled, hsmp_settled


def _step_sockets(profile: Profile, state: NodeState, dt_s: float) -> list[SocketState]:
    """Every CPU package one tick on: clock, limit, power, and the package and DRAM ledgers."""
    phys = profile.physics
    cpu = phys.cpu
    util = state.load.cpu_util
    cf = profile.cpufreq
    min_khz, ac_khz, turbo_limit_khz, min_ratio = _cpu_clock_bounds(profile, util)
    ramp_s = cpu.freq_ramp_s
    hsmp_tau_s = phys.hsmp_settle_tau_s
    dram_w = phys.dram_w_per_socket
    sockets: list[SocketState] = []
    for s in state.sockets:
        if cf is None:
            cur_khz, busy_ratio = 0.0, 1.0
        else:
            cur_khz, busy_ratio = _socket_clock(s, util, dt_s, ramp_s, min_khz, ac_khz, turbo_limit_khz)
        cap_w, rapl_settled, hsmp_settled = _socket_cap(s, dt_s, hsmp_tau_s)
        power, ratio = physics_cpu.capped_package(cpu, util, busy_ratio, min_ratio, cap_w)
        # The shown frequency scales with the busy cores' clock, so shown/uncapped is their clock
        # ratio (what the engine and the workload shell read); it may fall below cpuinfo_min as
        # an aperf/mperf-derived scaling_cur_freq does under a limit.
        eff_khz = cur_khz * (ratio / busy_ratio) if cf and busy_ratio > 0 else 0.0
        sockets.append(_socket_on(s, cur_khz, eff_khz, rapl_settled, hsmp_settled, power, dram_w, dt_s))
    return sockets


def _socket_on(
    s: SocketState, cur_khz: float, eff_khz: float, rapl_settled: float, hsmp_settled: float, power: float, dram_w: float,
    dt_s: float,
) -> SocketState:
    """``s`` one tick on with these derived values, its package and DRAM ledgers moved by ``dt_s``."""
    return SocketState(
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


def _step_gpus(profile: Profile, state: NodeState, dt_s: float) -> list[GpuTruth]:
    """Every GPU board one tick on: the limit it holds, the settled enforced limit, power, ledger.

    A board runs its load's phases (``Load.gpu_phases``; none: one phase of natural draw
    ``gpu_util``) under its enforced limit and its clock lock (``lock_max_mhz`` over the profile's
    ``sm_clock_max_mhz``): ``physics.gpu.board_operating_point``."""
    gpus: list[GpuTruth] = []
    if profile.gpus is None or profile.physics.gpu is None:
        return gpus
    spec = profile.gpus
    gphys = profile.physics.gpu
    loads = state.load.gpu_util
    n_loads = len(loads)
    phases = state.load.gpu_phases
    n_phases = len(phases)
    tau_s = gphys.cap_settle_tau_s
    lo_w, hi_w, default_w, persistent = spec.min_w, spec.max_w, spec.default_w, spec.persistence_mode
    for g in state.gpus:
        u = loads[g.index] if g.index < n_loads else 0.0
        limit_w, lock_mhz = g.limit_w, g.lock_max_mhz
        if not persistent and u <= 0 and (limit_w != default_w or lock_mhz is not None):
            # Persistence mode off and no client holds the board: the driver tears its state
            # down and the limit is back at the default (and the clocks unlocked) when the next
            # client opens it.
            limit_w, lock_mhz = default_w, None
        target = min(max(limit_w, lo_w), hi_w)
        enforced = settle(g.enforced_w, target, dt_s, tau_s)
        board_phases = phases[g.index] if g.index < n_phases else ()
        if lock_mhz is None and not board_phases:
            power = physics_gpu.capped_board(gphys, u, enforced)[0]
        else:
            lock_ratio = lock_mhz / spec.sm_clock_max_mhz if lock_mhz is not None else 1.0
            work = board_phases or (physics_gpu.Phase(1.0, 1.0, u),)
            power = physics_gpu.board_operating_point(gphys, work, enforced, lock_ratio).power_w
        # The boards' activity is not physics: the emulator draws each tick's at the tools' first read (Emulator.shown).
        gpus.append(_board_on(g, limit_w, enforced, power, u, lock_mhz, dt_s))
    return gpus


def _board_on(g: GpuTruth, limit_w: float, enforced_w: float, power: float, util: float, lock_mhz: float | None,
              dt_s: float) -> GpuTruth:
    """Board ``g`` one tick on with these values, its ledger moved by ``dt_s``."""
    return GpuTruth(g.index, g.uuid, limit_w, enforced_w, power, util, g.energy_j + power * dt_s, lock_mhz, g.signals)


def _next_state(
    state: NodeState, sockets: list[SocketState], gpus: list[GpuTruth], host_w: float, platform_w: float, dt_s: float
) -> NodeState:
    """The node one tick on, with the stepped devices and the host and platform ledgers."""
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
        state.platform_energy_j + platform_w * dt_s,
        state.faults,
    )


# A tick this short could leave a settling value unmoved without its having arrived (``steady``).
STEADY_MIN_DT_S = 1e-3


def steady(old: NodeState, new: NodeState, dt_s: float) -> bool:
    """Whether ``new = step_node(profile, old, dt_s)`` changed nothing but the ledgers, the tick and the
    time: every settling value has arrived (``settle`` then returns it for any tick length), so each
    later step of ``new``, its inputs unchanged, is :func:`advance_ledgers`. Signals are not physics."""
    if dt_s < STEADY_MIN_DT_S or new.host_power_w != old.host_power_w:
        return False
    for s, o in zip(new.sockets, old.sockets, strict=True):
        if (s.cur_khz != o.cur_khz or s.eff_khz != o.eff_khz or s.power_w != o.power_w
                or s.rapl_settled_w != o.rapl_settled_w or s.hsmp_settled_w != o.hsmp_settled_w):
            return False
    for g, h in zip(new.gpus, old.gpus, strict=True):
        if g.enforced_w != h.enforced_w or g.power_w != h.power_w or g.limit_w != h.limit_w or g.lock_max_mhz != h.lock_max_mhz:
            return False
    return True


def advance_ledgers(profile: Profile, state: NodeState, dt_s: float) -> NodeState:
    """What :func:`step_node` gives for a ``steady`` node, without the physics: the same powers, each
    ledger on by its power times ``dt_s``: the same sums as ``_socket_on``, ``_board_on`` and
    ``_next_state`` add in the full step, so the same floats (``node_test``, ``steady_test``)."""
    phys = profile.physics
    dram_w = phys.dram_w_per_socket
    sockets = tuple(moved(s, {"energy_j": s.energy_j + s.power_w * dt_s, "dram_energy_j": s.dram_energy_j + dram_w * dt_s})
                    for s in state.sockets)
    gpus = tuple(moved(g, {"energy_j": g.energy_j + g.power_w * dt_s}) for g in state.gpus)
    return moved(state, {
        "tick": state.tick + 1,
        "time_s": state.time_s + dt_s,
        "sockets": sockets,
        "gpus": gpus,
        "host_energy_j": state.host_energy_j + state.host_power_w * dt_s,
        "platform_energy_j": state.platform_energy_j + phys.platform_other_w * dt_s,
    })


def step_all(profiles: dict[str, Profile], states: dict[str, NodeState], dt_s: float) -> dict[str, NodeState]:
    """One tick for every node (keyed by node name; ``profiles`` by node name too)."""
    return {name: step_node(profiles[name], st, dt_s) for name, st in states.items()}
