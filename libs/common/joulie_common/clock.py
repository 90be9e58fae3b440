"""One clock: monotonic seconds for control loops and intervals, wall time (UTC) for timestamps.

Code that needs time takes a :class:`Clock` (or, where only seconds matter, its bound
``monotonic``), so tests move time by hand with :class:`FakeClock` instead of sleeping.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final, Protocol


class Clock(Protocol):
    def monotonic(self) -> float: ...

    def now(self) -> datetime: ...


@dataclass(frozen=True)
class SystemClock:
    """The machine's clocks. ``whole_seconds`` drops microseconds from ``now()``: for timestamps
    written into status fields (RFC 3339 seconds); leases need the full precision."""

    whole_seconds: bool = False

    def monotonic(self) -> float:
        return time.monotonic()

    def now(self) -> datetime:
        t = datetime.now(UTC)
        return t.replace(microsecond=0) if self.whole_seconds else t


@dataclass
class FakeClock:
    """A clock tests move by hand: ``now()`` is ``start`` plus ``t`` seconds."""

    t: float = 1000.0
    start: datetime = datetime(2026, 1, 1, tzinfo=UTC)

    def monotonic(self) -> float:
        return self.t

    def now(self) -> datetime:
        return self.start + timedelta(seconds=self.t)

    def advance(self, seconds: float) -> None:
        self.t += seconds


# The default for every `clock` parameter (a default argument is evaluated once anyway).
SYSTEM_CLOCK: Final = SystemClock()
