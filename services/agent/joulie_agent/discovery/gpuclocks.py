"""GPU SM clocks as the tools report them: the supported range and whether a lock holds. Pure.

NVIDIA keeps no readable copy of a locked range: NVML's ``nvmlDeviceSetGpuLockedClocks`` has no
getter and ``nvidia-smi --help-query-gpu`` lists no lock field. What the board does report is the
clocks event reason ``applications_clocks_setting`` ("GPU clocks are limited by applications clocks
setting", NVML ``nvmlClocksEventReasonApplicationsClocksSetting``, bit 0x2), which a lock below the
board's maximum sets; that is the read-back. (AMD reports the gfx clock's soft maximum itself,
``amd-smi metric --clock``: ``max_clk``; the agent does not lock AMD boards yet.)

The exact argv the agent runs lives here too, so a test can check the strings a stand-in tool must
answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

# One query for every board: its bus id (to match the supported-clocks rows, which carry no index),
# its maximum SM clock and whether a software clock setting (a lock) limits it.
NVIDIA_CLOCKS_QUERY = [
    "nvidia-smi",
    "--query-gpu=index,pci.bus_id,clocks.max.sm," "clocks_event_reasons.applications_clocks_setting",
    "--format=csv,noheader,nounits",
]
# Every supported graphics (SM) clock of every board, one row per clock, keyed by the bus id.
NVIDIA_SUPPORTED_QUERY = ["nvidia-smi", "--query-supported-clocks=gpu_bus_id,graphics", "--format=csv,noheader,nounits"]
# NVML: nvmlClocksEventReasonApplicationsClocksSetting.
NVML_REASON_APPLICATIONS_CLOCKS = 0x2


@dataclass(frozen=True)
class ClockRange:
    """One board's supported SM clocks, MHz, ascending (at least its lowest and highest)."""

    index: int
    clocks_mhz: tuple[int, ...]

    @property
    def min_mhz(self) -> int:
        return self.clocks_mhz[0]

    @property
    def max_mhz(self) -> int:
        return self.clocks_mhz[-1]


@dataclass(frozen=True)
class LockReading:
    """What one board says about its SM clock ceiling: ``limited`` (NVIDIA: a software clock
    setting limits the clocks), ``max_mhz`` (a source that reports the ceiling itself, as AMD's
    soft maximum); None: not said."""

    index: int
    limited: bool | None = None
    max_mhz: int | None = None


@dataclass
class ClockReport:
    """Parsed clock output: ranges and readings by GPU index, and warnings naming bad lines."""

    ranges: dict[int, ClockRange] = field(default_factory=dict)
    readings: dict[int, LockReading] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def _mhz(text: str) -> int | None:
    s = text.strip().removesuffix("MHz").strip()
    return int(s) if s.isdigit() else None


def _rows(text: str, n: int, what: str, out: ClockReport) -> list[list[str]]:
    rows = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        fields = [f.strip() for f in line.split(",")]
        if len(fields) != n:
            out.warnings.append(
                f"nvidia-smi {what}: line {lineno}: expected {n} fields, got {len(fields)}: {line[:80]!r}"
            )
            continue
        rows.append(fields)
    return rows


def parse_nvidia_clocks(clocks: str, supported: str | None) -> ClockReport:
    """NVIDIA_CLOCKS_QUERY output, and NVIDIA_SUPPORTED_QUERY output when given (the supported
    clocks do not change: read once). A board whose rows say ``[N/A]`` has no range."""
    out = ClockReport()
    bus_index: dict[str, int] = {}
    max_by_index: dict[int, int] = {}
    for index_s, bus, max_s, reason in _rows(clocks, 4, "clocks", out):
        if not index_s.isdigit():
            out.warnings.append(f"nvidia-smi clocks: index {index_s[:20]!r} is not an integer")
            continue
        i = int(index_s)
        bus_index[bus.lower()] = i
        mx = _mhz(max_s)
        if mx is not None:
            max_by_index[i] = mx
        limited = {"Active": True, "Not Active": False}.get(reason)
        out.readings[i] = LockReading(i, limited=limited)
    if supported is None:
        return out
    listed: dict[int, set[int]] = {}
    for bus, text in _rows(supported, 2, "supported clocks", out):
        i_found = bus_index.get(bus.lower())
        mhz = _mhz(text)
        if i_found is not None and mhz is not None:
            listed.setdefault(i_found, set()).add(mhz)
    for i, mhz_set in listed.items():
        # The board's maximum SM clock bounds what it lists (a listed clock above it is not reachable).
        top = max_by_index.get(i, max(mhz_set))
        usable = tuple(sorted(c for c in mhz_set if c <= top))
        if usable:
            out.ranges[i] = ClockRange(i, usable)
    return out


def nvidia_lock_argv(indices: Sequence[int], floor_mhz: int, max_mhz: int) -> list[str]:
    """One call for every board given the same lock: ``-lgc MIN,MAX`` holds the clock between the
    board's lowest clock and the ceiling (a single value would pin the clock there, idle or not)."""
    return ["nvidia-smi", "-i", ",".join(str(i) for i in indices), "-lgc", f"{floor_mhz},{max_mhz}"]


def nvidia_unlock_argv(indices: Sequence[int]) -> list[str]:
    return ["nvidia-smi", "-i", ",".join(str(i) for i in indices), "-rgc"]
