"""One node's GPU readings, taken once and shared by the power export and the cap enforcement. Shell.

Without NVML each tool call is a process start (issue 39: at 1000 emulated Nodes the GPU tools cost
more CPU than the agents). So an NVIDIA node is read with one nvidia-smi query
(``gpureading.NVIDIA_READING_QUERY``: power, limits, enforced limit, activity) and the reading is
kept: the export's power read and activity read of one cycle take the same one, and the cap
enforcement verifies against the newest reading the export took instead of starting its own
(``GPUEnforcer._inventory``). A cap write forgets the reading, so nothing read before a write is
taken for the boards after it. DCGM's ratios come from ``dcgmi`` (a tool of its own) at every
``dcgm_every``-th activity read (DCGM_EVERY, 2): the reads between return the boards without ratios,
so the export sends each ratio once, stamped when it was read, and the controller, which measures a
sample's age from its timestamp, sees the ratios up to one export interval older than before, with
their true age, never a stale value stamped new.

A tool that refuses a field of the combined query (an older nvidia-smi) is read with the separate
queries from then on, logged once; any other failure of the combined query is read again with the
separate queries, so a board that answers the inventory but not its enforced limit is still
"unverified", not "inventory failed". A hung tool is not asked twice (a timeout costs one wait).
NVML (a daemonset) and AMD nodes read as before (NVML costs no process, the AMD tools have no such
query), except that an AMD node's product names are read once, not at every reading (one tool start
of two an export).

Every call happens under ``lock``: the node's GPU tool calls run one at a time, so a reading and a
cap write never interleave.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from joulie_agent.discovery import gpureading, gputools
from joulie_agent.discovery.gpuactivity import ActivityReport
from joulie_agent.host import hostread
from joulie_agent.host.nvml import NVML
from joulie_agent.host.toolrun import Runner

log = logging.getLogger(__name__)

DCGM_EVERY = 2
"""DCGM's ratios are read at every this-many-th activity read (Settings.dcgm_every)."""

SAME_CYCLE_S = 1.0
"""A reading this young is the same cycle's: the export's power read and activity read of one node,
milliseconds apart, take one reading. Older ones are not reused for the export (its draw would be
stamped later than it was read)."""


@dataclass
class GpuReading:
    """What one read of a node's GPUs found, at ``t_s`` (monotonic seconds)."""

    t_s: float
    inventory: gputools.Inventory | None
    readback_failed: str = ""
    """Why the NVIDIA boards' enforced limits are unknown ("" when read, or not an NVIDIA node)."""
    activity: ActivityReport | None = None
    """The boards' signals read with the inventory (without DCGM's ratios); None: not read with it."""


class GpuReadings:
    """The node's latest GPU reading. Hold ``lock`` around every call."""

    def __init__(self, run: Runner, nvml: NVML | None, monotonic: Callable[[], float], dcgm_every: int = DCGM_EVERY):
        self.run = run
        self.nvml = nvml
        self.monotonic = monotonic
        self.lock = threading.Lock()
        self.latest: GpuReading | None = None
        # Why nvidia-smi refused the combined query ("" while it takes it): the separate queries since.
        self.combined_refused = ""
        # The AMD boards' product names (rocm-smi's product query) from the first reading that had them.
        self.amd_names: dict[int, str] | None = None
        self.dcgm_every = max(1, dcgm_every)
        # Activity reads with boards so far (DCGM is asked at the first and every dcgm_every-th after),
        # and the warnings of the last dcgmi call, repeated on the reads between so the node's warning
        # log does not flip at every read while dcgmi fails.
        self.activity_reads = 0
        self.dcgm_warnings: list[str] = []

    def read(self, vendor: str, max_age_s: float = 0.0) -> GpuReading:
        """The latest reading when it is younger than ``max_age_s`` (0: always a new one), else a new one."""
        now = self.monotonic()
        last = self.latest
        if last is not None and now - last.t_s <= max_age_s and max_age_s > 0:
            return last
        self.latest = self._read(vendor, now)
        return self.latest

    def newer_than(self, t_s: float | None) -> GpuReading | None:
        """The latest reading when it was taken after ``t_s`` (and after the last write), else None."""
        last = self.latest
        return last if last is not None and (t_s is None or last.t_s > t_s) else None

    def wrote(self) -> None:
        """A cap was written: no reading taken before stands for the boards now."""
        self.latest = None

    def activity(self, vendor: str, max_age_s: float = SAME_CYCLE_S) -> ActivityReport:
        """Each NVIDIA board's signals (from the reading of this cycle where it holds them) with DCGM's ratios."""
        reading = self.read(vendor, max_age_s) if vendor == "nvidia" and self.nvml is None else None
        report = reading.activity if reading is not None else None
        if report is None:
            report = hostread.nvidia_boards(self.run, self.nvml)
        if not report.boards:
            return report
        due = self.activity_reads % self.dcgm_every == 0
        self.activity_reads += 1
        if not due:
            return ActivityReport(report.boards, report.warnings + self.dcgm_warnings)
        out = hostread.with_dcgm(report, self.run)
        self.dcgm_warnings = out.warnings[len(report.warnings):]
        return out

    def _read(self, vendor: str, now: float) -> GpuReading:
        if vendor == "nvidia" and self.nvml is None and not self.combined_refused:
            res = self.run(gpureading.NVIDIA_READING_QUERY)
            if res.ok:
                nv = gpureading.parse_nvidia_reading(res.output)
                return GpuReading(now, nv.inventory, "; ".join(nv.inventory.warnings)[:300], nv.activity)
            if res.returncode == 124:
                return GpuReading(now, gputools.Inventory("nvidia", "none", [], [f"gpu inventory: {res.describe()}"]),
                                  activity=ActivityReport([], [f"gpu activity: {res.describe()}"]))
            if res.returncode == 2 and "is not a valid field" in res.output:
                self.combined_refused = res.describe()
                log.warning("nvidia-smi refuses the combined GPU query (%s); reading with the separate queries",
                            self.combined_refused)
        inv = hostread.gpu_inventory(vendor, self.run, self.nvml, amd_names=self.amd_names)
        if self.amd_names is None and inv is not None and inv.vendor == "amd":
            # Read once: the AMD boards' models do not change while the node runs (a new board means
            # a power cycle, and a new agent); discovery reads them again with its own queries.
            self.amd_names = {d.index: d.name for d in inv.devices if d.name} or None
        failed = ""
        if inv is not None and inv.vendor == "nvidia" and inv.devices:
            failed = hostread.read_enforced(inv, self.run, self.nvml)
        return GpuReading(now, inv, failed)
