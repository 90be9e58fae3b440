"""Watts from energy counters (RAPL ``energy_uj``, AMD energy), averaged over a window long enough
to be right. Pure.

A counter read twice within less than its own update period says 0 W, then a whole period's
energy over a fraction of it: issue 23 (defect 5) saw an emulated EPYC socket at 0, 918, 1672 and
2614 W while it drew ~290 W. The files-mode emulator updates ``energy_uj`` once per tick (1 s),
and the agent reads it at every reconcile, which a NodeTwin watch event can bring sub-second
after the previous one. Real counters update every ~1 ms, but a short window still amplifies
their quantisation. So an estimate is made only over at least ``min_window_s``; readings in
between keep the last estimate (and the window's start). The error is then at most one update
period over the window (1 s over >= 5 s for the emulator; ~1 ms for hardware).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from joulie_agent.discovery.powercap import energy_delta_uj

# Seconds of counter history one estimate spans at least (see the module docstring).
MIN_WINDOW_S = 5.0


@dataclass
class WindowedPowerMeter:
    """Watts per zone from successive energy readings: wrap-corrected, over >= ``min_window_s``."""

    min_window_s: float = MIN_WINDOW_S
    # Start of the current window per zone: (monotonic seconds, counter µJ).
    start: dict[str, tuple[float, int]] = field(default_factory=dict)
    # Last estimate per zone, watts.
    watts: dict[str, float] = field(default_factory=dict)

    def update(self, now_s: float, readings: dict[str, int], ranges_uj: dict[str, int | None]) -> dict[str, float]:
        """The estimate of every zone read that has one (the last, when the window is still open)."""
        for zid, uj in readings.items():
            begun = self.start.get(zid)
            if begun is None or now_s < begun[0]:
                self.start[zid] = (now_s, uj)
                continue
            if now_s - begun[0] < self.min_window_s:
                continue
            self.start[zid] = (now_s, uj)
            delta = energy_delta_uj(begun[1], uj, ranges_uj.get(zid))
            if delta is None:  # went back with no known range: a reset, no estimate until the next window
                self.watts.pop(zid, None)
                continue
            self.watts[zid] = delta / 1e6 / (now_s - begun[0])
        return {z: self.watts[z] for z in readings if z in self.watts}
