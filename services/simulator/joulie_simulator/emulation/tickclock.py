"""How much time each tick of the live emulator covers. Pure (the clock is passed in).

The live loop ticks every ``--tick`` seconds of wall time, but a tick can come late: the machine is
busy, a tick's own work overran (the 1000-Node files-mode run: 0.7 s of wall time a tick at the
median, 3 s at p99). Stepped by the nominal tick length, the emulated time then falls behind the wall
clock, and every Node's energy counters advance slower than its power: that run's twins all read
~2.4 % low. Each tick therefore covers the time since the last one on the emulator's own clock (the
one a counter read extrapolates with), so the counters follow the wall clock however late the ticks.
"""

from __future__ import annotations

from collections.abc import Callable


class TickClock:
    """``covered()`` at each tick: the time since the previous tick (the nominal length for the first,
    and for the first after ``pause``, so a frozen clock's stop is not counted as time that passed)."""

    def __init__(self, tick_s: float, clock: Callable[[], float]) -> None:
        self.tick_s, self.clock = tick_s, clock
        self.last: float | None = None

    def covered(self) -> float:
        now = self.clock()
        last, self.last = self.last, now
        return self.tick_s if last is None else max(0.0, now - last)

    def pause(self) -> None:
        """The clock was frozen: the next tick starts afresh."""
        self.last = None
