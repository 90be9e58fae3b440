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

Serving phases and the SM clock lock (:func:`board_operating_point`). A board's busy time may be a
mix of phases (LLM serving: compute-bound prefill bursts between memory-bound decode steps,
interleaved far below a tick), each ``Phase(share, compute_share c, draw u)`` with ``share`` its
part of the busy time at full clock. Per phase:

- under a limit each phase finds its own clock, ``r_cap = clock_ratio_for_limit(u)``: a cap
  throttles the high-draw phase (the bursts) and leaves a phase drawing less than the limit alone;
- under a lock at ``lock_ratio`` (locked SM clock over the maximum) the phase runs at
  ``r = min(r_cap, lock_ratio)``: a lock at or above the clock the phase runs at anyway changes
  nothing, a lower one slows every phase; with both, the lower clock wins. Locked below
  ``r_cap`` the phase draws ``P(r)`` (below the limit); a lock may go below the lowest clock the
  power controller throttles to (``min_clock_ratio``), down to the board's lowest supported clock;
- the phase's time stretches by ``stretch_i = c_i / r_i + 1 - c_i`` (``physics.speed``).

The board then spends ``w_i = share_i * stretch_i`` in each phase: its power is the
``w``-weighted mean of the phases' powers and its throughput ``sum(share_i) / sum(w_i)``
(relative to the same work with no limit and no lock). One phase with no lock gives exactly
:func:`capped_board` and :func:`joulie_simulator.physics.speed.throughput`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from joulie_hwprofiles.schema import GpuPhysics
from joulie_simulator.physics.speed import stretch


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



@dataclass(frozen=True)
class Phase:
    """A part of a board's busy time: ``share`` of it at full clock, compute share ``c``, natural draw ``u``."""

    share: float
    compute_share: float
    draw: float


@dataclass(frozen=True)
class OperatingPoint:
    """What a board does running a mix of phases under a limit and a lock."""

    power_w: float
    clock_ratios: tuple[float, ...]
    """Per phase, the SM clock over its maximum."""
    throughput: float
    """Work per second over the same work's with no limit and no lock, in (0, 1]."""
    phase_powers_w: tuple[float, ...]


def phase_point(g: GpuPhysics, draw: float, limit_w: float, lock_ratio: float = 1.0) -> tuple[float, float]:
    """(power W, clock ratio) of one phase of natural draw ``draw`` under ``limit_w`` and a lock at ``lock_ratio``."""
    power, r = capped_board(g, draw, limit_w)
    if lock_ratio >= r:
        return power, r
    locked = max(lock_ratio, 1e-6)
    return power_at_clock_w(g, draw, locked), locked


def board_operating_point(
    g: GpuPhysics, phases: Sequence[Phase], limit_w: float, lock_ratio: float = 1.0
) -> OperatingPoint:
    """The board's power, per-phase clocks and throughput (module docstring: serving phases and the lock)."""
    if not phases:
        raise ValueError("board_operating_point: a board's work has at least one phase")
    points = [phase_point(g, p.draw, limit_w, lock_ratio) for p in phases]
    weights = [p.share * stretch(r, p.compute_share) for p, (_, r) in zip(phases, points, strict=True)]
    total = sum(weights)
    if len(phases) == 1:
        # One phase: its own power, and throughput exactly speed.throughput (share 1 -> 1 / stretch).
        power = points[0][0]
    else:
        power = sum(w * pw for w, (pw, _) in zip(weights, points, strict=True)) / total
    return OperatingPoint(
        power_w=power,
        clock_ratios=tuple(r for _, r in points),
        throughput=sum(p.share for p in phases) / total,
        phase_powers_w=tuple(pw for pw, _ in points),
    )


def natural_board_power_w(g: GpuPhysics, phases: Sequence[Phase]) -> float:
    """What a board running ``phases`` draws with no limit and no lock (share-weighted: every phase at full clock)."""
    total = sum(p.share for p in phases)
    return sum(p.share * natural_power_w(g, p.draw) for p in phases) / total
