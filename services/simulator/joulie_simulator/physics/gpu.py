"""A GPU board under a power limit: the clock it can sustain, the power it draws, the work it does.

Why a clock and not a duty cycle: a board enforces its limit by lowering the SM clock (and with it
the voltage), so the watts a cap removes come out of a term that falls faster than the clock, and
work that waits on memory barely notices a slower clock. Published measurements show exactly that
(docs/physics-calibration.md); a model that removed work in proportion to watts could not.

Formulas (one place; the engine, the ``curve`` command and the docs link here). ``u`` is the work's
natural draw as a share of the board's dynamic range, ``r`` the SM clock over its maximum:

- natural power (uncapped): ``P_nat = idle + (natural_max - idle) * u**gamma``; ``D = P_nat - idle``
- power at clock ``r``: ``P(r) = idle + D * (m + (1 - m) * s(r))``, with ``m`` the share of the
  dynamic power that does not follow the SM clock (HBM, I/O: ``fixed_dynamic_frac``) and
  ``s(r) = r**k`` down to the clock ``v`` (``vmin_clock_ratio``) where the voltage reaches its floor,
  ``s(r) = r * v**(k-1)`` below it (``k``, ``clock_power_exponent``, stands for ``f * V(f)**2``
  while the voltage scales; at the voltage floor only ``f`` is left)
- clock under a limit ``L``: ``s(r) = (L - idle - D*m) / (D*(1-m))`` solved for ``r``, clamped to
  ``[min_clock_ratio, 1]``; a limit at or above ``P_nat`` leaves ``r = 1`` (a cap that never binds
  changes nothing)
- power under the limit: ``min(P_nat, max(L, P(min_clock_ratio)))`` — below the lowest clock's draw
  the limit is not met, as on hardware (never below idle)
- the work done at clock ``r``: :func:`joulie_simulator.physics.speed.throughput`
"""

from __future__ import annotations

from joulie_hwprofiles.schema import GpuPhysics


def natural_power_w(g: GpuPhysics, util: float) -> float:
    """What a board draws running work of natural draw ``util`` with no limit in the way."""
    u = min(max(util, 0.0), 1.0)
    return float(g.idle_w + (g.natural_max_w - g.idle_w) * u**g.util_gamma)


def power_at_clock_w(g: GpuPhysics, util: float, clock_ratio: float) -> float:
    dyn = natural_power_w(g, util) - g.idle_w
    m = g.fixed_dynamic_frac
    return float(g.idle_w + dyn * (m + (1.0 - m) * _scaled(g, clock_ratio)))


def _scaled(g: GpuPhysics, r: float) -> float:
    v, k = g.vmin_clock_ratio, g.clock_power_exponent
    return float(r**k if r >= v else r * v ** (k - 1.0))


def clock_ratio_for_limit(g: GpuPhysics, util: float, limit_w: float) -> float:
    """The SM clock (share of its maximum) a board sustains under ``limit_w`` running ``util``."""
    natural = natural_power_w(g, util)
    if limit_w >= natural:
        return 1.0
    dyn = natural - g.idle_w
    m = g.fixed_dynamic_frac
    scaled = dyn * (1.0 - m)
    head = limit_w - g.idle_w - dyn * m
    lo = g.min_clock_ratio
    if scaled <= 0:
        return 1.0
    if head <= 0:
        return lo
    share = head / scaled
    v, k = g.vmin_clock_ratio, g.clock_power_exponent
    r = share ** (1.0 / k) if share >= v**k else share / v ** (k - 1.0)
    return float(min(1.0, max(lo, r)))


def capped_board(g: GpuPhysics, util: float, limit_w: float) -> tuple[float, float]:
    """(power W, clock ratio) of one board running ``util`` under an enforced ``limit_w``."""
    natural = natural_power_w(g, util)
    if limit_w >= natural:
        return natural, 1.0
    r = clock_ratio_for_limit(g, util, limit_w)
    floor = power_at_clock_w(g, util, g.min_clock_ratio)
    return min(natural, max(limit_w, floor, g.idle_w)), r

