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


def choose_gpu_lever(
    works: Sequence[Work],
    max_w: float,
    min_w: float,
    other_w: float,
    tau: float,
    ref_w: float | None = None,
    step_pct: float = 2.5,
    current_lock_pct: float | None = None,
) -> CapChoice:
    """The cap (% of ``max_w``) and lock (% of the maximum clock, or None) with the lowest node energy
    per unit of work, ``(other_w + group power) / work rate`` as ``choose_cap``, whose predicted
    slowdown against the reference (the default limit ``ref_w``, no lock) stays within each work's
    own budget (``Work.tau``, else ``tau``). Nothing is chosen when it would save under MIN_SAVING.

    ``current_lock_pct``, the lock the boards hold now: kept while it is one step from the best, within
    every budget and its energy within LOCK_HYSTERESIS of the best's (an estimate moving by its noise
    would otherwise move the lock a step up and down, each move a spec write and a clock set on every
    board)."""
    ref = min(max_w, ref_w) if ref_w is not None and ref_w > 0 else max_w
    ref_pct = round(ref / max_w * 100.0, 1) if max_w > 0 else 100.0
    if max_w <= 0 or not works:
        return CapChoice(ref_pct, 0.0, 0.0, "no work on the device" if max_w > 0 else "no cap range")
    for w in works:
        if w.prior.compute_share >= COMPUTE_BOUND_SHARE:
            return CapChoice(
                ref_pct,
                0.0,
                0.0,
                f"{w.name} ({w.kind or 'no kind'}) is not capped",
                slowdowns=tuple(0.0 for _ in works),
            )
    base_o = evaluate_locked(works, max_w, ref, 1.0)

    def energy(o: Outcome) -> float:
        return (other_w + o.power_w) / max(o.rate(works), 1e-9)

    base = energy(base_o)
    best = (ref_pct, 1.0, base, base_o)
    caps = _caps(ref_pct, max(min_w, 0.0) / max_w * 100.0, step_pct)
    for lock in lock_ratios():
        at_ref = evaluate_locked(works, max_w, ref, lock)
        if over_budget(works, base_o, at_ref, tau):
            break  # this lock alone is over a budget: every deeper one is too
        if energy(at_ref) < best[2] * (1.0 - 1e-4):
            best = (ref_pct, lock, energy(at_ref), at_ref)
        # A cap above every board's draw under this lock binds nothing: start where one binds.
        top_w = max(gpu_board_locked(ref, max_w, w.prior.natural_draw, lock)[0] for w in works)
        for pct in caps[1:]:
            if max_w * pct / 100.0 >= top_w:
                continue
            o = evaluate_locked(works, max_w, max_w * pct / 100.0, lock)
            if over_budget(works, base_o, o, tau):
                break  # slowdown only grows as the cap falls
            e = energy(o)
            if e < best[2] * (1.0 - 1e-4):
                best = (pct, lock, e, o)
    if (
        current_lock_pct is not None
        and best[1] < 1.0
        and 1e-9 < abs(current_lock_pct / 100.0 - best[1]) <= (LOCK_STEP_PCT / 100.0 + 1e-9)
    ):
        held = evaluate_locked(works, max_w, max_w * best[0] / 100.0, current_lock_pct / 100.0)
        if not over_budget(works, base_o, held, tau) and energy(held) < best[2] * (1.0 + LOCK_HYSTERESIS):
            best = (best[0], current_lock_pct / 100.0, energy(held), held)
    pct, lock, e, o = best
    saving = 1.0 - e / base if base > 0 and math.isfinite(e) else 0.0
    slowdowns = tuple(a / max(b, 1e-9) - 1.0 for a, b in zip(base_o.speeds, o.speeds, strict=True))
    sd, driver = worst_slowdown(works, base_o, o)
    if (pct < ref_pct or lock < 1.0) and saving < MIN_SAVING:
        return CapChoice(
            ref_pct,
            0.0,
            0.0,
            f"no cap or clock lock saves {MIN_SAVING * 100:g} % within each " f"Pod's slowdown budget ({driver})",
            slowdowns=tuple(0.0 for _ in works),
        )
    if pct >= ref_pct and lock >= 1.0:
        return CapChoice(
            ref_pct,
            0.0,
            0.0,
            "no cap or clock lock saves energy within each Pod's slowdown budget",
            slowdowns=tuple(0.0 for _ in works),
        )
    return CapChoice(
        round(pct, 1),
        max(0.0, sd),
        saving,
        driver,
        capped=pct < ref_pct,
        lock_pct=round(lock * 100.0, 1) if lock < 1.0 else None,
        slowdowns=slowdowns,
    )
