"""Pure: when to restart a dead process, as kubelet's CrashLoopBackOff decides it.

Kubelet waits 10 s after a container's first crash, doubles the wait on each further crash up to
5 minutes, and forgets the crashes once a container has run 10 minutes. The timing preset
compresses these in CI (``timing.Timing.restart_backoff_s`` and friends). No I/O, no clock: the
caller passes ``now_s`` (wall seconds) in.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from joulie_simcluster.timing import Timing


@dataclass(frozen=True)
class BackoffPolicy:
    base_s: float = 10.0
    """Wait before the first restart after a crash (kubelet: 10 s)."""
    max_s: float = 300.0
    """Longest wait (kubelet: 5 min)."""
    reset_after_s: float = 600.0
    """A process that ran this long before it died starts again at `base_s` (kubelet: 10 min)."""

    def delay_s(self, crashes: int) -> float:
        """Wait before the restart that follows the `crashes`-th consecutive crash (1-based)."""
        return float(min(self.max_s, self.base_s * 2 ** max(0, crashes - 1)))


def policy_of(timing: Timing) -> BackoffPolicy:
    """The backoff of a timing preset (``restart_backoff_s``, ``restart_backoff_max_s``, ``restart_reset_s``)."""
    return BackoffPolicy(timing.restart_backoff_s, timing.restart_backoff_max_s, timing.restart_reset_s)


@dataclass
class ProcessRecord:
    """What the supervisor knows of one supervised process, kept across its restarts."""

    pid: int = 0
    started_at_s: float = 0.0
    """When the current incarnation was first seen running (or started by the supervisor)."""
    restarts: int = 0
    """Restarts the supervisor made (kubectl's RESTARTS column)."""
    crashes: int = 0
    """Consecutive crashes since the last reset: the exponent of the backoff."""
    dead_since_s: float | None = None
    restart_at_s: float | None = None
    last_exit: str = ""
    """How the last incarnation ended (``exit 1``, ``signal 9``, ``gone``)."""
    last_restart_at_s: float | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProcessRecord:
        fields = cls.__dataclass_fields__
        return cls(**{k: v for k, v in data.items() if k in fields})


Action = Literal["running", "waiting", "restart"]


def observe(record: ProcessRecord, pid: int, alive: bool, now_s: float, policy: BackoffPolicy,
            exit_reason: str = "gone") -> Action:
    """Updates `record` with one look at the process (`pid` as the state dir records it) and says
    what to do: ``running``, ``waiting`` (dead, backoff not over) or ``restart`` (now)."""
    if alive:
        if pid != record.pid:  # a new incarnation (started by us, by reload or by up)
            record.pid, record.started_at_s = pid, now_s
        record.dead_since_s = record.restart_at_s = None
        return "running"
    if record.dead_since_s is None or pid != record.pid:
        ran_s = now_s - record.started_at_s if record.pid == pid and record.started_at_s else 0.0
        record.crashes = 1 if ran_s >= policy.reset_after_s else record.crashes + 1
        record.pid, record.dead_since_s, record.last_exit = pid, now_s, exit_reason
        record.restart_at_s = now_s + policy.delay_s(record.crashes)
    assert record.restart_at_s is not None
    return "restart" if now_s >= record.restart_at_s else "waiting"


def restarted(record: ProcessRecord, pid: int, now_s: float) -> None:
    """The supervisor started `pid` for a dead incarnation."""
    record.pid, record.started_at_s, record.last_restart_at_s = pid, now_s, now_s
    record.restarts += 1
    record.dead_since_s = record.restart_at_s = None
