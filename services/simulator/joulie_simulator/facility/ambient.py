"""Outdoor ambient temperature over the day: one sinusoid (base, amplitude, period, phase).

The default is the benchmark's and the original simulator's (reference joulie-node-sim.md §3.1.4):
``T = 22 + 8 sin(2 pi t / 24 h)`` degC, t the emulated seconds since the start. A control may shift
it (``offset_c``, e.g. a heat wave of +6 degC) or pin it (``fixed_c``), which is how an ambient
step is injected; both are inputs here, held by the shell.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

DAY_S = 86400.0


@dataclass(frozen=True)
class AmbientProfile:
    base_c: float = 22.0
    """Daily mean, degC."""
    amplitude_c: float = 8.0
    """Half the day's swing, degC (0: constant)."""
    period_s: float = DAY_S
    """Length of one cycle, s (> 0)."""
    phase_s: float = 0.0
    """Seconds into the cycle at t = 0 (0: starting at the mean, rising)."""

    def __post_init__(self) -> None:
        if not self.period_s > 0:
            raise ValueError(f"ambient period_s: {self.period_s} must be > 0")
        if not all(math.isfinite(v) for v in (self.base_c, self.amplitude_c, self.phase_s)):
            raise ValueError("ambient base_c, amplitude_c and phase_s must be finite")


def ambient_c(profile: AmbientProfile, t_s: float, offset_c: float = 0.0, fixed_c: float | None = None) -> float:
    """Outdoor ambient at emulated time ``t_s``: ``fixed_c`` when pinned, else the profile plus ``offset_c``."""
    if fixed_c is not None:
        return fixed_c
    return profile.base_c + profile.amplitude_c * math.sin(2 * math.pi * (t_s + profile.phase_s) / profile.period_s) + offset_c
