"""SM clock lock decisions: which ceiling on which board from ``spec.gpu.clockLock``, and whether each
board still holds it. Pure.

The ceiling is a clock the board supports, at or below the request (``maxMhz``, or ``pctOfMax`` of
the board's highest clock): never above what was asked. A request outside a board's supported
range is refused with the board and its range named, never clamped. The floor of the lock is the
board's lowest clock, so the lock is a ceiling and idle boards still clock down.

Whether a board holds its lock is what it reports (``gpuclocks.LockReading``): AMD reports the
soft maximum itself; NVIDIA only whether a software clock setting limits its clocks, which a
ceiling below its maximum does. A ceiling at the maximum limits nothing and holds nothing: it is
no lock (released, not set).
"""

from __future__ import annotations

from dataclasses import dataclass

from joulie_agent.discovery.gpuclocks import ClockRange, LockReading
from joulie_api.generated.nodetwin import GPUClockLock

# A board's SM clock ceiling, MHz; None: at its maximum (no lock).
Ceiling = int | None


@dataclass(frozen=True)
class LockPlan:
    """targets: the SM clock ceiling per GPU index, MHz (None: at the board's maximum, no lock);
    floors: each board's lowest clock; or a blocked reason."""

    targets: dict[int, int | None]
    floors: dict[int, int]
    blocked: str = ""
    # For the message: what was asked, e.g. "1500 MHz" or "70 % of max".
    asked: str = ""


def describe_request(lock: GPUClockLock) -> str:
    if lock.max_mhz is not None:
        return f"{lock.max_mhz:g} MHz"
    if lock.pct_of_max is not None:
        return f"{lock.pct_of_max:g} % of max"
    return "nothing"


def _at_or_below(r: ClockRange, mhz: float) -> int:
    return max(c for c in r.clocks_mhz if c <= mhz + 1e-9)


def plan_clock_lock(lock: GPUClockLock, indices: list[int], ranges: dict[int, ClockRange]) -> LockPlan:
    """Each GPU's ceiling, rounded down to a clock it supports; refused (blocked) when one board
    cannot hold the request or does not say what it supports."""
    asked = describe_request(lock)
    if (lock.max_mhz is None) == (lock.pct_of_max is None):
        return LockPlan({}, {}, "clockLock: set exactly one of maxMhz and pctOfMax", asked)
    if not indices:
        return LockPlan({}, {}, "no GPU devices found by NVML or the GPU tools", asked)
    targets: dict[int, int | None] = {}
    floors: dict[int, int] = {}
    for i in sorted(indices):
        r = ranges.get(i)
        if r is None:
            return LockPlan(
                {}, {}, f"gpu {i} reports no supported SM clocks: a clock lock is not supported on it", asked
            )
        want = float(lock.max_mhz) if lock.max_mhz is not None else float(lock.pct_of_max or 0) / 100 * r.max_mhz
        what = asked if lock.max_mhz is not None else f"{asked} = {want:.0f} MHz"
        if want < r.min_mhz:
            return LockPlan(
                {},
                {},
                f"requested SM clock lock {what} is below the lowest supported clock "
                f"{r.min_mhz} MHz of gpu {i} (supported {r.min_mhz}-{r.max_mhz} MHz)",
                asked,
            )
        if want > r.max_mhz:
            return LockPlan(
                {},
                {},
                f"requested SM clock lock {what} is above the highest supported clock "
                f"{r.max_mhz} MHz of gpu {i} (supported {r.min_mhz}-{r.max_mhz} MHz)",
                asked,
            )
        target = _at_or_below(r, want)
        targets[i] = None if target >= r.max_mhz else target
        floors[i] = r.min_mhz
    return LockPlan(targets, floors, "", asked)


def holds(target: int | None, reading: LockReading | None, top: int | None = None) -> bool | None:
    """Whether a board holds ``target`` (None: no lock), as it reports; None when it does not say.
    ``top``: the board's highest supported clock, what a soft maximum reads without a lock (AMD)."""
    if reading is None:
        return None
    if reading.max_mhz is not None:
        if target is None:
            return reading.max_mhz == top if top is not None else None
        return reading.max_mhz == target
    if reading.limited is not None:
        return reading.limited == (target is not None)
    return None


def drifted(
    targets: dict[int, int | None], applied: dict[int, int | None], readings: dict[int, LockReading]
) -> dict[int, str]:
    """{gpu index: what drifted} for boards the agent had already set to their target and that no
    longer hold it (a device reset, a driver reload, another tool)."""
    out: dict[int, str] = {}
    for i, target in sorted(targets.items()):
        if i not in applied or applied[i] != target or target is None:
            continue
        reading = readings.get(i)
        if holds(target, reading) is False:
            assert reading is not None
            now = f"at {reading.max_mhz} MHz" if reading.max_mhz is not None else "no longer limited by a clock setting"
            out[i] = f"gpu {i} SM clock lock {target} MHz lost ({now})"
    return out


def describe_drift(drift: dict[int, str]) -> str:
    if not drift:
        return ""
    items = list(drift.values())
    more = f" (+{len(items) - 4} more)" if len(items) > 4 else ""
    return f"{'; '.join(items[:4])}{more}; re-applied"


def label(targets: dict[int, int | None]) -> str:
    """The ceilings for a message: "1500 MHz", "1410-1500 MHz", "the maximum"."""
    mhz = sorted({t for t in targets.values() if t is not None})
    if not mhz:
        return "the maximum (no lock)"
    return f"{mhz[0]} MHz" if len(mhz) == 1 else f"{mhz[0]}-{mhz[-1]} MHz"


def groups(todo: dict[int, int | None], floors: dict[int, int]) -> dict[tuple[int, int | None], list[int]]:
    """Boards taking the same (floor, ceiling), for one tool call each; ceiling None is a release."""
    out: dict[tuple[int, int | None], list[int]] = {}
    for i, target in sorted(todo.items()):
        out.setdefault((floors.get(i, 0) if target is not None else 0, target), []).append(i)
    return out
