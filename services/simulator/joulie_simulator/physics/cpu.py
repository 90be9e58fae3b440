"""A CPU package under a RAPL/HSMP limit: the clock its busy cores run at, and the power it draws.

Why per busy core: a governor (intel_pstate/HWP, schedutil, amd-pstate) raises the clock of the
cores that have work and lets idle ones sleep, so a half-loaded socket runs its busy cores fast,
not every core at half speed; and turbo gives fewer busy cores a higher clock. A package limit
then lowers the busy cores' clock (and voltage) until the package meets it.

Formulas (one place; ``physics.node.step_node`` and the ``curve`` command use them). ``u`` is the share
of the socket's cores that are busy, ``f`` the busy cores' clock, ``f_ac`` the all-core turbo
clock (``allcore_turbo_khz``, default the cpufreq maximum), ``f_max`` the cpufreq maximum (one
core's turbo), ``k`` the ``freq_power_exponent`` (``f * V(f)**2`` over the DVFS range):

- turbo: ``f_turbo(u) = f_max - (f_max - f_ac) * u`` (one busy core at ``f_max``, all at ``f_ac``)
- busy clock uncapped: ``f_gov = min(governor target for a busy core, f_turbo(u))``
- package power: ``P(u, f) = idle_pkg + u * (max_pkg - idle_pkg) * (f / f_ac)**k``, so every
  core busy at the all-core turbo draws ``max_pkg`` (the profile's TDP)
- under a limit ``L``: ``f = f_ac * ((L - idle_pkg) / (u * (max_pkg - idle_pkg)))**(1/k)``, clamped
  to ``[cpufreq min, f_gov]``; power ``min(P(u, f_gov), max(L, P(u, f_min)))``: below the lowest
  clock's draw the limit is not met
- a node without cpufreq runs at ``f = f_ac`` always (no DVFS to model).

DRAM (``dram_w_per_socket``) and the rest of the platform (``platform_other_w``: fans, board,
NICs, power-supply loss) are constant per node and come from the profile's ``physics`` section.
"""

from __future__ import annotations

from joulie_hwprofiles.schema import CpufreqSpec, CpuPhysics


def allcore_khz(p: CpuPhysics, cf: CpufreqSpec | None) -> float:
    if cf is None:
        return 0.0
    return float(p.allcore_turbo_khz or cf.max_khz)


def turbo_khz(p: CpuPhysics, cf: CpufreqSpec, util: float) -> float:
    """The highest clock ``util`` busy share of the cores can turbo to."""
    u = min(max(util, 0.0), 1.0)
    ac = allcore_khz(p, cf)
    return float(cf.max_khz - (cf.max_khz - ac) * u)


def busy_khz(p: CpuPhysics, cf: CpufreqSpec, target_khz: float, util: float) -> float:
    """The busy cores' clock with no limit: the governor's target, at most what turbo allows."""
    return max(float(cf.min_khz), min(target_khz, turbo_khz(p, cf, util)))


def package_power_w(p: CpuPhysics, util: float, freq_ratio: float) -> float:
    """Package power with ``util`` of the cores busy at ``freq_ratio`` x the all-core turbo clock."""
    u = min(max(util, 0.0), 1.0)
    return float(p.idle_pkg_w + u * (p.max_pkg_w - p.idle_pkg_w) * max(freq_ratio, 0.0) ** p.freq_power_exponent)


def capped_package(p: CpuPhysics, util: float, busy_ratio: float, min_ratio: float, cap_w: float) -> tuple[float, float]:
    """(power W, busy-core clock as a ratio of the all-core turbo) under ``cap_w`` (``inf``: none).

    ``busy_ratio`` is the uncapped busy clock, ``min_ratio`` the lowest clock, both over ``f_ac``."""
    natural = package_power_w(p, util, busy_ratio)
    if natural <= cap_w:
        return natural, busy_ratio
    u = min(max(util, 0.0), 1.0)
    dyn = u * (p.max_pkg_w - p.idle_pkg_w)
    head = cap_w - p.idle_pkg_w
    if dyn <= 0:
        return natural, busy_ratio
    ratio = min_ratio if head <= 0 else (head / dyn) ** (1.0 / p.freq_power_exponent)
    ratio = min(busy_ratio, max(min_ratio, ratio))
    floor = package_power_w(p, util, min_ratio)
    return min(natural, max(cap_w, floor)), ratio
