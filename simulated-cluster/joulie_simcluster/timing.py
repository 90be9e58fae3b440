"""Timing presets: names that map onto the real settings of every component (seed "Timing").

``ci`` is fast enough for a smoke run in minutes; ``production`` is what a real install uses, so
a nightly run in production timing exercises the defaults users get. ``SIMCLUSTER_TIMING`` picks one.

A rate window shorter than four export intervals reads too few samples for ``rate()``
(Prometheus needs two in the window, and pushes arrive late), so such a timing is refused.
"""

from __future__ import annotations

from dataclasses import dataclass


class TimingError(ValueError):
    """A timing that cannot work; the message names the setting and why."""


@dataclass(frozen=True)
class Timing:
    name: str
    sim_tick_s: float
    """Seconds per emulator tick (SIM_EMULATE_TICK): counters and physics move this often."""
    otlp_interval_s: float
    """Seconds between the simulator's OTLP pushes (the export interval)."""
    rate_window_s: float
    """NODE_POWER_RATE_WINDOW of the controller manager: the range of rate() over hw.host.energy."""
    controller_interval_s: float
    """RECONCILE_INTERVAL of the controller manager."""
    status_refresh_s: float
    """STATUS_REFRESH_INTERVAL of the controller manager."""
    agent_interval_s: float
    """RECONCILE_INTERVAL of every agent."""
    staleness_s: float
    """TWIN_STALENESS_THRESHOLD of the extender."""
    restart_backoff_s: float = 10.0
    """The supervisor's wait before restarting a process after its first crash (kubelet: 10 s),
    doubled on each further crash."""
    restart_backoff_max_s: float = 300.0
    """The supervisor's longest wait before a restart (kubelet: 5 min)."""
    restart_reset_s: float = 600.0
    """A process that ran this long before it died is restarted after the first wait again (kubelet: 10 min)."""

    power_time_scale: float = 1.0
    """The simulator's --power-time-scale: boot and shutdown last the profiles' boot_s/shutdown_s
    times this (ci: a 240 s boot takes 12 s)."""

    lease_duration_s: float = 15.0
    """LEADER_ELECTION_LEASE_DURATION of controller-manager replicas (the controller's default: 15 s):
    how long a dead leader holds the Lease before another replica takes over."""

    def validate(self) -> Timing:
        for field_name in ("sim_tick_s", "otlp_interval_s", "rate_window_s", "controller_interval_s",
                           "status_refresh_s", "agent_interval_s", "staleness_s", "restart_backoff_s",
                           "restart_backoff_max_s", "restart_reset_s", "lease_duration_s", "power_time_scale"):
            if getattr(self, field_name) <= 0:
                raise TimingError(f"timing {self.name}: {field_name} must be > 0, got {getattr(self, field_name)}")
        if self.rate_window_s < 4 * self.otlp_interval_s:
            raise TimingError(
                f"timing {self.name}: rate window {self.rate_window_s:g}s is shorter than four export intervals "
                f"(4 x {self.otlp_interval_s:g}s = {4 * self.otlp_interval_s:g}s): rate() would read too few samples"
            )
        return self

    @property
    def receipt_window_s(self) -> float:
        """RECEIPT_WINDOW of the controller manager: one rate window (at least the 10 s it allows), so each
        window's increase() reads as many samples as the measured power's rate() does."""
        return max(10.0, self.rate_window_s)

    @property
    def settle_s(self) -> float:
        """How long after a change in power before the measured power reflects it fully: one rate
        window, one controller tick and one export interval."""
        return self.rate_window_s + self.controller_interval_s + self.otlp_interval_s

    def as_env(self) -> dict[str, str]:
        return {
            "SIMCLUSTER_TIMING": self.name,
            "SIM_EMULATE_TICK": duration(self.sim_tick_s),
            "SIM_OTLP_INTERVAL": duration(self.otlp_interval_s),
            "NODE_POWER_RATE_WINDOW": duration(self.rate_window_s),
            "CONTROLLER_RECONCILE_INTERVAL": duration(self.controller_interval_s),
            "STATUS_REFRESH_INTERVAL": duration(self.status_refresh_s),
            "AGENT_RECONCILE_INTERVAL": duration(self.agent_interval_s),
            "TWIN_STALENESS_THRESHOLD": duration(self.staleness_s),
        }


def duration(seconds: float) -> str:
    """A Go-style duration the components parse: ``15s``, ``2m``, ``500ms``."""
    if seconds < 1:
        return f"{round(seconds * 1000)}ms"
    if seconds >= 60 and seconds % 60 == 0:
        return f"{int(seconds // 60)}m"
    return f"{seconds:g}s"


PRESETS: dict[str, Timing] = {
    t.name: t.validate()
    for t in (
        Timing("ci", sim_tick_s=0.5, otlp_interval_s=2, rate_window_s=12, controller_interval_s=3,
               status_refresh_s=30, agent_interval_s=3, staleness_s=60,
               # kubelet's CrashLoopBackOff compressed tenfold: a crash costs seconds, not minutes.
               restart_backoff_s=1, restart_backoff_max_s=30, restart_reset_s=60, lease_duration_s=6,
               power_time_scale=0.05),
        Timing("production", sim_tick_s=1, otlp_interval_s=15, rate_window_s=120, controller_interval_s=60,
               status_refresh_s=120, agent_interval_s=20, staleness_s=300),
    )
}


def timing(name: str) -> Timing:
    try:
        return PRESETS[name]
    except KeyError:
        raise TimingError(f"SIMCLUSTER_TIMING={name!r}: unknown timing; known: {', '.join(PRESETS)}") from None
