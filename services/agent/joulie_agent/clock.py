"""The agent's clock is the one in joulie_common.clock (monotonic seconds for control, wall time
for timestamps); this name stays for the modules that still import it from here."""

from __future__ import annotations

from joulie_common.clock import Clock, FakeClock, SystemClock

__all__ = ["Clock", "FakeClock", "SystemClock"]
