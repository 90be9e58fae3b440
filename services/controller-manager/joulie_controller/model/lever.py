"""The lever per GPU group: a power cap, an SM clock lock, or both, whichever gives the lowest node
energy per unit of work within every work's own slowdown budget. Pure: no I/O.

A cap limits power and the board finds the clock that fits (``capmodel.gpu_board``); a lock limits
the clock and the power follows: a board running work of draw ``u`` at clock ratio ``r`` draws
``idle + (max - idle) * u * (f + (1 - f) * r**k)`` (``capmodel.GPU_MODEL``: the same device model the
cap uses and ``jobestimate`` inverts). Under both, the lower of the two clocks wins. The speed at
ratio ``r`` is ``capmodel.throughput(r, c)``.

Why a lock as well as a cap: work that draws little (decode-like serving, memory-bound, ``u`` well
under the default limit) is never held by a cap above its draw, so a cap saves nothing unless it is
set deep enough to bind, where it also bites any other work on the board. A lock slows the clock
whatever the draw: memory-bound work (low ``c``) loses little speed while the clock-following power
falls as ``r**k``. Compute-bound work (``c >= COMPUTE_BOUND_SHARE``) is left fast, as ``choose_cap``
leaves it: it loses nearly as much speed as either lever saves power.

The grid: caps from the reference limit down to the board's minimum in ``step_pct`` steps (as
``choose_cap``), lock ratios from 1.0 (no lock) down to ``GPU_MODEL.min_clock_ratio`` in 2.5 % steps.
Slowdown grows monotonically as either lever deepens, so each row stops at the first setting over a
budget and the search stops at the first lock that is over a budget on its own.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from joulie_controller.model.capmodel import (
    COMPUTE_BOUND_SHARE,
    GPU_MODEL,
    MIN_SAVING,
    CapChoice,
    DeviceModel,
    Outcome,
    Work,
    gpu_board,
    over_budget,
    throughput,
    worst_slowdown,
)

LOCK_STEP_PCT: Final = 2.5
"""Lock ratios are tried in steps of 2.5 % of the board's maximum SM clock (boards lock in ~15 MHz
steps, 1 % of an H100's 1980 MHz, so every step is a clock the board supports once rounded down)."""


LOCK_HYSTERESIS: Final = 0.02
"""A lock in force one step from the best is kept while its energy per work is within 2 % of the best's
(``choose_gpu_lever``): one 2.5 % clock step costs memory-bound work about 1 % of its energy."""


def gpu_board_locked(
    limit_w: float, max_w: float, natural_draw: float, lock_ratio: float, m: DeviceModel = GPU_MODEL
) -> tuple[float, float]:
    """(power W, clock ratio) of a board under ``limit_w`` and an SM clock lock at ``lock_ratio``."""
    power, r = gpu_board(limit_w, max_w, natural_draw, m)
    lock = max(m.min_clock_ratio, min(1.0, lock_ratio))
    if lock >= r:
        return power, r
    idle = m.idle_frac * max_w
    u = min(max(natural_draw, 0.0), 1.0)
    f = m.fixed_dynamic_frac
    return idle + (max_w - idle) * u * (f + (1.0 - f) * lock**m.clock_power_exponent), lock


def evaluate_locked(works: Sequence[Work], max_w: float, limit_w: float, lock_ratio: float) -> Outcome:
    """The GPU group running ``works`` under ``limit_w`` per board and a lock at ``lock_ratio``."""
    power = 0.0
    speeds = []
    for w in works:
        p, r = gpu_board_locked(limit_w, max_w, w.prior.natural_draw, lock_ratio)
        power += p * w.share
        speeds.append(throughput(r, w.prior.compute_share))
    return Outcome(power, tuple(speeds))


def evaluate_per_work(works: Sequence[Work], max_w: float, limit_w: float, locks: Sequence[float | None]) -> Outcome:
    """The GPU group running ``works`` under ``limit_w`` per board, each work's boards under its own
    lock ratio (``locks[i]``, None: no lock): per-board locks on one node."""
    power = 0.0
    speeds = []
    for i, w in enumerate(works):
        lock = locks[i] if i < len(locks) else None
        p, r = gpu_board_locked(limit_w, max_w, w.prior.natural_draw, lock if lock is not None else 1.0)
        power += p * w.share
        speeds.append(throughput(r, w.prior.compute_share))
    return Outcome(power, tuple(speeds))


def lock_ratios(min_ratio: float = GPU_MODEL.min_clock_ratio, step_pct: float = LOCK_STEP_PCT) -> list[float]:
    """1.0 (no lock), then down in ``step_pct`` steps to ``min_ratio``."""
    out: list[float] = []
    i = 0
    while True:
        r = round(1.0 - i * step_pct / 100.0, 4)
        if r < min_ratio - 1e-9:
            return out
        out.append(r)
        i += 1


def _caps(ref_pct: float, lowest_pct: float, step_pct: float) -> list[float]:
    out = [ref_pct]
    pct = math.floor((ref_pct - 1e-9) / step_pct) * step_pct
    while pct >= lowest_pct - 1e-9:
        out.append(pct)
        pct -= step_pct
    return out


@dataclass(frozen=True)
class _Group:
    """The GPU group one choice is made for: its works, boards, reference limit and the rest of the node."""

    works: Sequence[Work]
    max_w: float
    ref_w: float
    other_w: float
    tau: float

    def at(self, pct: float, lock: float) -> Outcome:
        return evaluate_locked(self.works, self.max_w, self.max_w * pct / 100.0, lock)

    def energy(self, o: Outcome) -> float:
        return (self.other_w + o.power_w) / max(o.rate(self.works), 1e-9)

    def over(self, base: Outcome, o: Outcome) -> bool:
        return over_budget(self.works, base, o, self.tau)


_Best = tuple[float, float, float, Outcome]
"""(cap % of max, lock ratio, energy per work, outcome)."""


def _search(g: _Group, base: Outcome, ref_pct: float, caps: list[float]) -> _Best:
    """The grid: every lock ratio, and under each every cap that binds, until a budget is exceeded."""
    best: _Best = (ref_pct, 1.0, g.energy(base), base)
    for lock in lock_ratios():
        at_ref = evaluate_locked(g.works, g.max_w, g.ref_w, lock)
        if g.over(base, at_ref):
            break  # this lock alone is over a budget: every deeper one is too
        if g.energy(at_ref) < best[2] * (1.0 - 1e-4):
            best = (ref_pct, lock, g.energy(at_ref), at_ref)
        # A cap above every board's draw under this lock binds nothing: start where one binds.
        top_w = max(gpu_board_locked(g.ref_w, g.max_w, w.prior.natural_draw, lock)[0] for w in g.works)
        for pct in caps[1:]:
            if g.max_w * pct / 100.0 >= top_w:
                continue
            o = g.at(pct, lock)
            if g.over(base, o):
                break  # slowdown only grows as the cap falls
            if g.energy(o) < best[2] * (1.0 - 1e-4):
                best = (pct, lock, g.energy(o), o)
    return best


def _search_locks(g: _Group, cap_pct: float) -> _Best:
    """Every lock ratio under a cap fixed for the node (``choose_gpu_lever``'s ``cap_pct``), until a
    budget is exceeded; the first row is the cap alone."""
    at_cap = g.at(cap_pct, 1.0)
    best: _Best = (cap_pct, 1.0, g.energy(at_cap), at_cap)
    base = evaluate_locked(g.works, g.max_w, g.ref_w, 1.0)
    for lock in lock_ratios()[1:]:
        o = g.at(cap_pct, lock)
        if g.over(base, o):
            break  # slowdown only grows as the lock deepens
        if g.energy(o) < best[2] * (1.0 - 1e-4):
            best = (cap_pct, lock, g.energy(o), o)
    return best


def _hold(g: _Group, base: Outcome, best: _Best, current_lock_pct: float | None) -> _Best:
    """The lock in force instead of the best when one step from it, within budget and LOCK_HYSTERESIS."""
    if current_lock_pct is None or best[1] >= 1.0:
        return best
    lock = current_lock_pct / 100.0
    if not 1e-9 < abs(lock - best[1]) <= LOCK_STEP_PCT / 100.0 + 1e-9:
        return best
    held = g.at(best[0], lock)
    if g.over(base, held) or g.energy(held) >= best[2] * (1.0 + LOCK_HYSTERESIS):
        return best
    return (best[0], lock, g.energy(held), held)


def choose_gpu_lever(
    works: Sequence[Work],
    max_w: float,
    min_w: float,
    other_w: float,
    tau: float,
    ref_w: float | None = None,
    step_pct: float = 2.5,
    current_lock_pct: float | None = None,
    cap_pct: float | None = None,
) -> CapChoice:
    """The cap (% of ``max_w``) and lock (% of the maximum clock, or None) with the lowest node energy
    per unit of work, ``(other_w + group power) / work rate`` as ``choose_cap``, whose predicted
    slowdown against the reference (the default limit ``ref_w``, no lock) stays within each work's
    own budget (``Work.tau``, else ``tau``). Nothing is chosen when it would save under MIN_SAVING.

    ``current_lock_pct``, the lock the boards hold now: kept while it is one step from the best, within
    every budget and its energy within LOCK_HYSTERESIS of the best's (an estimate moving by its noise
    would otherwise move the lock a step up and down, each move a spec write and a clock set on every
    board).

    ``cap_pct``: the node's cap, fixed (one group of boards among several on the node: the cap is one
    value per node, the lock one per group). Only the lock is chosen then, kept only where it saves
    MIN_SAVING against the cap alone; the choice's cap is ``cap_pct`` whatever the lock."""
    ref = min(max_w, ref_w) if ref_w is not None and ref_w > 0 else max_w
    ref_pct = round(ref / max_w * 100.0, 1) if max_w > 0 else 100.0
    if max_w <= 0 or not works:
        return CapChoice(ref_pct, 0.0, 0.0, "no work on the device" if max_w > 0 else "no cap range")
    g = _Group(works, max_w, ref, other_w, tau)
    base = evaluate_locked(works, max_w, ref, 1.0)
    if cap_pct is not None:
        return _fixed_cap(g, base, ref_pct, cap_pct, current_lock_pct)
    unchanged = tuple(0.0 for _ in works)
    for w in works:
        if w.prior.compute_share >= COMPUTE_BOUND_SHARE:
            return CapChoice(ref_pct, 0.0, 0.0, f"{w.name} ({w.kind or 'no kind'}) is not capped", slowdowns=unchanged)
    best = _search(g, base, ref_pct, _caps(ref_pct, max(min_w, 0.0) / max_w * 100.0, step_pct))
    pct, lock, e, o = _hold(g, base, best, current_lock_pct)
    base_e = g.energy(base)
    saving = 1.0 - e / base_e if base_e > 0 and math.isfinite(e) else 0.0
    sd, driver = worst_slowdown(works, base, o)
    if (pct < ref_pct or lock < 1.0) and saving < MIN_SAVING:
        why = f"no cap or clock lock saves {MIN_SAVING * 100:g} % within each Pod's slowdown budget ({driver})"
        return CapChoice(ref_pct, 0.0, 0.0, why, slowdowns=unchanged)
    if pct >= ref_pct and lock >= 1.0:
        why = "no cap or clock lock saves energy within each Pod's slowdown budget"
        return CapChoice(ref_pct, 0.0, 0.0, why, slowdowns=unchanged)
    slowdowns = tuple(a / max(b, 1e-9) - 1.0 for a, b in zip(base.speeds, o.speeds, strict=True))
    lock_pct = round(lock * 100.0, 1) if lock < 1.0 else None
    return CapChoice(
        round(pct, 1), max(0.0, sd), saving, driver, capped=pct < ref_pct, lock_pct=lock_pct, slowdowns=slowdowns
    )


def _fixed_cap(g: _Group, base: Outcome, ref_pct: float, cap_pct: float, current_lock_pct: float | None) -> CapChoice:
    """``choose_gpu_lever`` with the node's cap fixed at ``cap_pct``: the lock for this group only."""
    capped = cap_pct < ref_pct - 1e-9
    pct = cap_pct if capped else ref_pct
    at_cap = g.at(pct, 1.0) if capped else base
    base_e = g.energy(base)

    def choice(lock: float, o: Outcome, why: str) -> CapChoice:
        sd, driver = worst_slowdown(g.works, base, o)
        saving = 1.0 - g.energy(o) / base_e if base_e > 0 else 0.0
        slowdowns = tuple(a / max(b, 1e-9) - 1.0 for a, b in zip(base.speeds, o.speeds, strict=True))
        lock_pct = round(lock * 100.0, 1) if lock < 1.0 else None
        return CapChoice(
            round(pct, 1), max(0.0, sd), saving, why or driver, capped=capped, lock_pct=lock_pct, slowdowns=slowdowns
        )

    for w in g.works:
        if w.prior.compute_share >= COMPUTE_BOUND_SHARE:
            return choice(1.0, at_cap, f"{w.name} ({w.kind or 'no kind'}) is not locked")
    best = _hold(g, base, _search_locks(g, pct), current_lock_pct)
    lock, e, o = best[1], best[2], best[3]
    cap_e = g.energy(at_cap)
    if lock >= 1.0 or (cap_e > 0 and 1.0 - e / cap_e < MIN_SAVING):
        return choice(1.0, at_cap, "" if capped else "no clock lock saves energy within each Pod's slowdown budget")
    return choice(lock, o, "")
