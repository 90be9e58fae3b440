"""Whether Prometheus' rate() windows hold enough samples again after it was down or restarted. Pure.

Issue 23 (prometheus-kill): right after a Prometheus restart the twins read a power far below the
truth for a tick. rate() over NODE_POWER_RATE_WINDOW extrapolates from the samples inside the
window; after a restart the window holds a gap (the pushes refused while it was down, the WAL tail
a SIGKILL loses) or, on an empty TSDB, only the few samples since: measured with Prometheus 3.16
and a 300 W counter pushed every 2 s over a 12 s window, 55 W from a fresh TSDB and 210-250 W after a
SIGKILL and restart, climbing back over one window. A reading that low is no measurement: until one
whole window has passed since Prometheus last failed to answer or restarted (its
/api/v1/status/runtimeinfo ``startTime`` changed), every node is "no data" (neutral, as for stale
data), never a low or 0 W number.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class RateWarmup:
    """When rate() over ``window_s`` is trustworthy again; times are monotonic seconds."""

    window_s: float
    ready_at_s: float = 0.0
    start_time: str | None = None
    """Prometheus' startTime as last read; a different one is a restart."""

    def failed(self, now_s: float) -> None:
        """Prometheus did not answer (down, frozen, refusing): its windows miss the samples since."""
        self.ready_at_s = max(self.ready_at_s, now_s + self.window_s)

    def started(self, start_time: str, now_s: float) -> None:
        """Prometheus says when it started; a change since the last reading is a restart."""
        if self.start_time is not None and start_time != self.start_time:
            self.ready_at_s = max(self.ready_at_s, now_s + self.window_s)
        self.start_time = start_time

    def remaining_s(self, now_s: float) -> float:
        """Seconds until a whole window has passed since the last failure or restart (0: ready)."""
        return max(0.0, self.ready_at_s - now_s)
