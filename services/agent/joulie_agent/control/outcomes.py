"""What one reconcile did about the CPU and the GPU caps: backend, result and a message, as
``NodeTwin.status.controlStatus`` reports them. Pure (no I/O): the enforcement shells
(``cpuenforce``, ``gpuenforce``) return these, ``kube.agentkube`` writes them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from joulie_api.generated.nodetwin import CPUControlStatus, GPUControlStatus
from joulie_common.clock import Clock

CPUBackend = Literal["rapl", "dvfs", "http", "none"]
GPUBackend = Literal["host-nvidia", "host-amd", "http", "none"]
Result = Literal["applied", "blocked", "error", "none"]

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
class GPUOutcome:
    backend: GPUBackend
    result: Result
    message: str
    drift: str = ""

    def status(self, clock: Clock) -> GPUControlStatus:
        return GPUControlStatus(backend=self.backend, result=self.result, message=self.message,
                                drift=self.drift or None, updated_at=clock.now())
