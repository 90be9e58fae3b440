"""GPU SM clocks as the tools report them: the supported range and whether a lock holds. Pure.

NVIDIA keeps no readable copy of a locked range: NVML's ``nvmlDeviceSetGpuLockedClocks`` has no
getter and ``nvidia-smi --help-query-gpu`` lists no lock field. What the board does report is the
clocks event reason ``applications_clocks_setting`` ("GPU clocks are limited by applications clocks
setting", NVML ``nvmlClocksEventReasonApplicationsClocksSetting``, bit 0x2), which a lock below the
board's maximum sets; that is the read-back.

AMD reports the gfx clock's soft maximum itself (``amd-smi metric --clock``: ``max_clk``), which is
the read-back; but that is the current ceiling, so once a board is locked it no longer says the
board's true maximum. The supported range comes from the OverDrive table instead
(``/sys/class/drm/cardN/device/pp_od_clk_voltage``, section ``OD_RANGE``, line ``SCLK: MIN MAX``),
which lists what OverDrive accepts whatever the current soft limits are. amdgpu takes any MHz in
that range, so every MHz between its ends is a supported clock.

The exact argv the agent runs lives here too, so a test can check the strings a stand-in tool must
answer.
"""

from __future__ import annotations

import json
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


def parse_amd_od_range(text: str) -> tuple[int, int] | None:
    """The ``SCLK`` line of the ``OD_RANGE:`` section of amdgpu's ``pp_od_clk_voltage``, e.g.
    ``SCLK:     500Mhz       2100Mhz``: (lowest, highest) MHz; None when the table has none."""
    in_range = False
    for line in text.splitlines():
        s = line.strip()
        if s.endswith(":") and s.startswith("OD_"):
            in_range = s == "OD_RANGE:"
            continue
        if in_range and s.upper().startswith("SCLK:"):
            ends = [_mhz(w.upper().replace("MHZ", "")) for w in s.split()[1:]]
            if len(ends) == 2 and ends[0] is not None and ends[1] is not None and ends[0] <= ends[1]:
                return ends[0], ends[1]
    return None


def amd_range(index: int, od_text: str) -> ClockRange | None:
    """One AMD board's supported SM clocks from its OverDrive table: every MHz of ``OD_RANGE``."""
    ends = parse_amd_od_range(od_text)
    return ClockRange(index, tuple(range(ends[0], ends[1] + 1))) if ends else None


AMDSMI_CLOCKS = ["amd-smi", "metric", "--clock", "--json"]


def parse_amdsmi_clocks(text: str) -> ClockReport:
    """``amd-smi metric --clock --json``: each board's gfx soft maximum (``clock.gfx_0.max_clk``,
    ``{"value", "unit"}``), a list or ``{"gpu_data": [...]}``; "N/A" says nothing."""
    out = ClockReport()
    try:
        doc = json.loads(text)
    except ValueError as err:
        out.warnings.append(f"amd-smi metric --clock: output is not JSON ({err}): {text.strip()[:80]!r}")
        return out
    items = doc.get("gpu_data", doc) if isinstance(doc, dict) else doc
    if not isinstance(items, list):
        out.warnings.append("amd-smi metric --clock: expected a list of GPUs")
        return out
    for pos, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        index = item.get("gpu", pos)
        index = index if isinstance(index, int) else pos
        gfx = (item.get("clock") or {}).get("gfx_0") if isinstance(item.get("clock"), dict) else None
        mx = gfx.get("max_clk") if isinstance(gfx, dict) else None
        value = mx.get("value") if isinstance(mx, dict) else None
        out.readings[index] = LockReading(index, max_mhz=value if isinstance(value, int) else None)
    return out


def amdsmi_lock_argv(indices: Sequence[int], max_mhz: int) -> list[str]:
    """The gfx clock's soft maximum on every board given; a release sets it back to the top of the
    board's ``OD_RANGE`` (``amd-smi reset --clocks`` would reset every clock domain and OverDrive,
    more than the agent set)."""
    return ["amd-smi", "set", "-g", *(str(i) for i in indices), "-L", "sclk", "max", str(max_mhz)]


def amdsmi_lock_failed(output: str) -> str:
    """amd-smi exits 0 whatever happened: the first CLK_LIMIT line that is not a success ("" when
    every board took it or already had it)."""
    for line in output.splitlines():
        _, _, msg = line.strip().partition("CLK_LIMIT:")
        msg = msg.strip()
        if msg and not msg.startswith(("Successfully changed", "Clock limit is already set")):
            return msg
    return ""
