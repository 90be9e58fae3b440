"""What one reconcile did about the CPU and the GPU caps: backend, result and a message, as
``NodeTwin.status.controlStatus`` reports them. Pure (no I/O): the enforcement shells
(``cpuenforce``, ``gpuenforce``) return these, ``kube.agentkube`` writes them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from joulie_api.generated.nodetwin import (
    CPUControlStatus,
    GPUBoardClockLockStatus,
    GPUClockLockStatus,
    GPUControlStatus,
)
from joulie_common.clock import Clock

CPUBackend = Literal["rapl", "dvfs", "http", "none"]
GPUBackend = Literal["host-nvidia", "host-amd", "http", "none"]
Result = Literal["applied", "blocked", "error", "none"]
BoardResult = Literal["applied", "released", "blocked", "error", "none"]

MSG_NO_CPU_BACKEND = "RAPL unavailable, no cpufreq host control, and no HTTP control backend"


@dataclass(frozen=True)
class CPUOutcome:
    backend: CPUBackend
    result: Result
    message: str
    # What the device enforced differently from the intent at this check (re-applied); "" if nothing.
    drift: str = ""

    def status(self, clock: Clock) -> CPUControlStatus:
        return CPUControlStatus(backend=self.backend, result=self.result, message=self.message,
                                drift=self.drift or None, updated_at=clock.now())


@dataclass(frozen=True)
class BoardOutcome:
    """One board's SM clock lock (``controlStatus.gpu.clockLock.boards[]``)."""

    index: int
    result: BoardResult
    # The lock the board takes: "clockLock" (node-wide) or "clockLocks[N]"; "" after a release.
    source: str = ""
    locked_max_mhz: int | None = None
    message: str = ""
    drift: str = ""

    def status(self) -> GPUBoardClockLockStatus:
        return GPUBoardClockLockStatus(index=self.index, result=self.result, source=self.source or None,
                                       locked_max_mhz=self.locked_max_mhz, message=self.message or None,
                                       drift=self.drift[:512] or None)


@dataclass(frozen=True)
class LockOutcome:
    """What one reconcile did about the SM clock lock (``controlStatus.gpu.clockLock``)."""

    result: Result
    message: str
    # The ceiling every board reports holding (the lowest when they differ); None unless all do.
    locked_max_mhz: int | None = None
    drift: str = ""
    boards: tuple[BoardOutcome, ...] = ()

    def status(self) -> GPUClockLockStatus:
        return GPUClockLockStatus(result=self.result, message=self.message, locked_max_mhz=self.locked_max_mhz,
                                  drift=self.drift or None, boards=[b.status() for b in self.boards] or None)


@dataclass(frozen=True)
class GPUOutcome:
    backend: GPUBackend
    result: Result
    message: str
    drift: str = ""
    # The SM clock lock; None when the spec has none and nothing was released.
    lock: LockOutcome | None = None

    def status(self, clock: Clock) -> GPUControlStatus:
        return GPUControlStatus(backend=self.backend, result=self.result, message=self.message,
                                drift=self.drift or None, updated_at=clock.now(),
                                clock_lock=self.lock.status() if self.lock is not None else None)
