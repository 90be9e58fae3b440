"""S14, the GPU SM clock lock end to end, as pure evaluations: a NodeTwin and the emulator's truth of
one Node in, what is wrong (a list of lines, empty when nothing) out. ``smoke.run`` sets the lock,
resets the device and releases the lock, and composes these into one :class:`Assertion`.

The lock is what the agent reports as the boards read it back (``controlStatus.gpu.clockLock``:
``applied`` and ``lockedMaxMhz``) and what the emulator holds (each board's ``lockMaxMhz``): the two
must agree, at or below the request and within the board's supported clocks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

LOCK_PCT = 70.0
"""The lock the smoke asks for: 70 % of each board's highest SM clock (a ceiling every profile's range holds)."""


def _lock_status(twin: Mapping[str, Any]) -> Mapping[str, Any]:
    status = twin.get("status") or {}
    lock = ((status.get("controlStatus") or {}).get("gpu") or {}).get("clockLock")
    return lock if isinstance(lock, Mapping) else {}


def reported_mhz(twin: Mapping[str, Any]) -> float | None:
    """The ceiling the agent reports the boards hold (``controlStatus.gpu.clockLock.lockedMaxMhz``)."""
    held = _lock_status(twin).get("lockedMaxMhz")
    return float(held) if isinstance(held, (int, float)) and not isinstance(held, bool) else None


def lock_held(node: str, twin: Mapping[str, Any], truth: Mapping[str, Any], pct: float = LOCK_PCT) -> list[str]:
    """The agent reports the lock applied at a ceiling every board of the emulator holds, at or below
    ``pct`` % of the board's highest clock and not below its lowest."""
    lock = _lock_status(twin)
    held = lock.get("lockedMaxMhz")
    if lock.get("result") != "applied" or not isinstance(held, (int, float)):
        return [f"{node}: controlStatus.gpu.clockLock {dict(lock) or 'absent'}, want applied with lockedMaxMhz"]
    out = []
    for g in truth.get("gpus") or []:
        top, low = float(g.get("smClockMaxMhz") or 0), float(g.get("smClockMinMhz") or 0)
        if g.get("lockMaxMhz") != held:
            out.append(
                f"{node} gpu {g.get('index')}: the emulator holds {g.get('lockMaxMhz')} MHz, the agent reports {held}"
            )
        elif not low <= held <= pct / 100 * top + 1e-6:
            out.append(f"{node} gpu {g.get('index')}: {held} MHz outside [{low:g}, {pct:g} % of {top:g}] MHz")
    if not truth.get("gpus"):
        out.append(f"{node}: the emulator's truth has no GPUs")
    return out


def lock_reapplied(node: str, twin: Mapping[str, Any], truth: Mapping[str, Any], pct: float = LOCK_PCT) -> list[str]:
    """After a device reset: the agent found the lock lost (drift), applied it again, and the boards hold it."""
    drift = str(_lock_status(twin).get("drift") or "")
    missing = (
        []
        if "lost" in drift
        else [f"{node}: controlStatus.gpu.clockLock.drift {drift or 'absent'}, want the lost lock"]
    )
    return missing + lock_held(node, twin, truth, pct)


def lock_released(node: str, twin: Mapping[str, Any], truth: Mapping[str, Any]) -> list[str]:
    """The spec dropped the lock: no board holds one and the agent reports no applied lock."""
    out = [
        f"{node} gpu {g.get('index')}: still locked at {g.get('lockMaxMhz')} MHz"
        for g in truth.get("gpus") or []
        if g.get("lockMaxMhz") is not None
    ]
    if _lock_status(twin).get("result") == "applied":
        out.append(f"{node}: controlStatus.gpu.clockLock still applied after the spec dropped it")
    return out
