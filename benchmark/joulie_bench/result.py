"""What one run measured (``RunResult``): energy, by device kind and idle against dynamic, to
completion and in the open regime's window; makespan, slowdowns and waits; power-state figures."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from joulie_bench.receipts import ReceiptRow, ReceiptSummary
from joulie_bench.stats import percentile

DEVICE_KINDS = ("cpu", "gpu", "other")
"""How the IT power splits: CPU packages (RAPL), GPU boards, and the rest of the host (DRAM, platform)."""


@dataclass
class RunResult:
    policy: str
    seed: int
    it_energy_kwh: float
    facility_energy_kwh: float
    makespan_s: float
    jobs_total: int
    jobs_completed: int
    p95_slowdown: float
    mean_it_power_w: float
    reconciles: int
    cap_writes: int
    end_s: float
    """Virtual time the run stopped (the tick after the last completion)."""
    idle_it_w: float
    """Cluster IT power once idle after the run (caps as the policy left them)."""
    idle_pue: float
    slowdowns: list[float] = field(default_factory=list)
    window_it_energy_kwh: float = 0.0
    """IT energy over the seed's common window (see ``extend_to_window``)."""
    window_facility_energy_kwh: float = 0.0
    jobs_per_node: dict[str, int] = field(default_factory=dict)
    """Completed jobs by the node they ran on (where the policy and scoring put the work)."""
    first_submit_s: float = 0.0
    completions: list[tuple[float, float]] = field(default_factory=list)
    """``(done_s, slowdown)`` of every completed job, by completion time (the open regime's window
    counts the jobs done by a given time)."""
    energy_by_kind_kwh: dict[str, float] = field(default_factory=dict)
    """IT energy to completion by device kind (``DEVICE_KINDS``: CPU packages, GPU boards, the rest)."""
    open_start_s: float = 0.0
    open_end_s: float = 0.0
    """The open regime's window: warm-up over, to the last arrival (``OPEN_WARMUP_FRAC``)."""
    open_it_energy_kwh: float = 0.0
    open_facility_energy_kwh: float = 0.0
    open_work_h: float = 0.0
    """Work done inside the window, in ideal job-hours (each job's progress x its ideal runtime)."""
    waits_s: list[float] = field(default_factory=list)
    """Every started job's queueing delay: start - submit (resumes add to it)."""
    boots: int = 0
    """Nodes powered on from off during the run (resumes)."""
    node_hours_off: float = 0.0
    """Node-hours spent powered off (standby) during the run."""
    cpu_utilisation: float = 0.0
    """Allocated CPU over the run: sum(job CPU request x running time) / (cluster CPUs x run span)."""
    gpu_utilisation: float = 0.0
    idle_by_kind_kwh: dict[str, float] = field(default_factory=dict)
    """The idle baseline actually paid, by device kind, to completion: each node's idle power
    (unloaded, uncapped, boards at their default limit) for every tick it was powered (booting and
    shutting down included), its standby power (as "other") while off. Dynamic = energy - idle (may
    dip below 0 where a cap holds a device under its uncapped idle draw). A's minus a suspend arm's
    idle is the energy suspend saved from idle."""
    variant: str = "calibrated"
    """The physics variant the emulator ran (``joulie_simulator.api.VARIANTS``)."""
    run_s: dict[str, float] = field(default_factory=dict)
    """Each completed job's running time (done - start, waiting excluded), by job id: against the same
    job's under A, the slowdown the arm's caps added (``taushare``)."""
    open_gpu_utilisation: float = 0.0
    """Allocated GPU inside the open window (warm-up over to the last arrival): the steady state's share."""
    receipts: list[ReceiptRow] = field(default_factory=list)
    """Each finished job's energy receipt (what the controller could compute) against the emulator's truth."""
    receipt_summary: ReceiptSummary | None = None

    @property
    def idle_energy_kwh(self) -> float:
        return sum(self.idle_by_kind_kwh.values())

    @property
    def dynamic_energy_kwh(self) -> float:
        return self.it_energy_kwh - self.idle_energy_kwh

    @property
    def energy_per_job_kwh(self) -> float:
        """Facility energy to completion per completed job."""
        return self.facility_energy_kwh / self.jobs_completed if self.jobs_completed else math.nan

    @property
    def open_window_s(self) -> float:
        return max(0.0, self.open_end_s - self.open_start_s)

    def open_slowdowns(self) -> list[float]:
        """Slowdowns of the jobs completed inside the open window."""
        return [sd for done, sd in self.completions if self.open_start_s <= done <= self.open_end_s]

    def wait_pct(self, q: float) -> float:
        return percentile(self.waits_s, q)

    @property
    def mean_wait_s(self) -> float:
        return sum(self.waits_s) / len(self.waits_s) if self.waits_s else 0.0

    def slowdown_pct(self, q: float) -> float:
        return percentile([sd for _, sd in self.completions], q)

    def extend_to_window(self, window_end_s: float) -> None:
        """Energy up to ``window_end_s`` (the seed's longest run): a run that finished earlier sits idle
        for the rest, drawing ``idle_it_w`` (nodes are not powered off)."""
        tail_s = max(0.0, window_end_s - self.end_s)
        self.window_it_energy_kwh = self.it_energy_kwh + self.idle_it_w * tail_s / 3.6e6
        self.window_facility_energy_kwh = self.facility_energy_kwh + self.idle_it_w * self.idle_pue * tail_s / 3.6e6
