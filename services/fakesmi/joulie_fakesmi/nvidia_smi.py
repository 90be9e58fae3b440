"""nvidia-smi (variant ``default``): the queries, the power-limit command and the SM clock lock
(``-lgc``/``-rgc``) an agent uses.

Formats, messages and exit codes follow the real tool (nvidia-smi(1): 0 success, 2 invalid
argument, 3 not supported, 6 query unsuccessful, 9 driver not loaded, 12 NVML library not found).
"""

from __future__ import annotations

from joulie_fakesmi.node import NodeView
from joulie_fakesmi.result import Result, not_emulated
from joulie_simhw.gpustate import GpuDevice, GpuState

TOOL = "nvidia-smi"
BAD_ARGS = "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n"
NO_DRIVER = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
    "Make sure that the latest NVIDIA driver is installed and running.\n\n"
)
NO_NVML = (
    "NVIDIA-SMI couldn't find libnvidia-ml.so library in your system. Please make sure that the NVIDIA Display Driver "
    "is properly installed and present in your system.\nPlease also try adding directory that contains libnvidia-ml.so "
    "to your system PATH.\n"
)
# field -> (header unit, kind)
FIELDS: dict[str, tuple[str, str]] = {
    "index": ("", "index"),
    "name": ("", "name"),
    "uuid": ("", "uuid"),
    "pci.bus_id": ("", "bus"),
    "power.draw": ("W", "draw"),
    "power.limit": ("W", "limit"),
    "enforced.power.limit": ("W", "enforced"),
    "power.default_limit": ("W", "default"),
    "power.min_limit": ("W", "min"),
    "power.max_limit": ("W", "max"),
    "utilization.gpu": ("%", "util"),
    "persistence_mode": ("", "persistence"),
    "clocks.sm": ("MHz", "sm"),
    "clocks.current.sm": ("MHz", "sm"),
    "clocks.max.sm": ("MHz", "max_sm"),
    "clocks.max.streaming_multiprocessor": ("MHz", "max_sm"),
    # A lock below the board's maximum limits its clocks; nvidia-smi has no field for the lock itself.
    "clocks_event_reasons.applications_clocks_setting": ("", "app_clocks"),
    "clocks_throttle_reasons.applications_clocks_setting": ("", "app_clocks"),
}
# --query-supported-clocks fields -> kind (the memory clock is not modelled).
SUPPORTED_FIELDS: dict[str, str] = {"gpu_bus_id": "bus", "gpu_uuid": "uuid", "gpu_name": "name",
                                    "graphics": "graphics", "gr": "graphics"}
# NVIDIA boards list their graphics clocks in 15 MHz steps down from the maximum (an A100 lists
# 210-1410 MHz, 81 clocks); the emulated boards list theirs so, down to the profile's lowest.
CLOCK_STEP_MHZ = 15


def _value(field: str, g: GpuDevice, limit_w: float, persistence: bool, units: bool, lock: int | None = None) -> str:
    if field in g.field_tokens:
        return g.field_tokens[field]
    unit, kind = FIELDS[field]
    if kind == "sm":
        return f"{g.sm_clock_mhz}{' MHz' if units else ''}" if g.sm_clock_mhz else "[N/A]"
    if kind == "max_sm":
        return f"{g.sm_clock_max_mhz}{' MHz' if units else ''}" if g.sm_clock_max_mhz else "[N/A]"
    if kind == "app_clocks":
        if not g.sm_clock_max_mhz:
            return "[N/A]"
        return "Active" if lock is not None and lock < g.sm_clock_max_mhz else "Not Active"
    if kind == "index":
        return str(g.index)
    if kind == "name":
        return g.name
    if kind == "uuid":
        return g.uuid
    if kind == "bus":
        return g.pci_bus_id
    if kind == "persistence":
        return "Enabled" if persistence else "Disabled"
    if kind == "util":
        return f"{g.util_pct}{' %' if units else ''}"
    watts = {
        "draw": g.draw_w,
        "limit": limit_w,
        "enforced": g.enforced_limit_w,
        "default": g.default_limit_w,
        "min": g.min_limit_w,
        "max": g.max_limit_w,
    }[kind]
    return f"{watts:.2f}{' W' if units else ''}"


def _select(ids: str | None, gpus: tuple[GpuDevice, ...]) -> list[GpuDevice] | None:
    if ids is None:
        return list(gpus)
    out = []
    for ident in ids.split(","):
        ident = ident.strip()
        match = [g for g in gpus if ident in (str(g.index), g.uuid, g.pci_bus_id)]
        if not match:
            return None
        out.extend(match)
    return out


class _Args:
    """The parsed command line (a plain class: dataclasses cost each tool start more than the
    interpreter, see joulie_simhw.record)."""

    def __init__(self) -> None:
        self.ids: str | None = None
        self.query: str | None = None
        self.fmt: str | None = None
        # The action: "-L", "query", "supported", "-pl", "-lgc", "-rgc"; and its value.
        self.action = ""
        self.value = ""
        self.actions = 0


# Options that take a value: (short, long) -> the action they are.
_VALUED = {"-pl": "-pl", "--power-limit": "-pl", "-lgc": "-lgc", "--lock-gpu-clocks": "-lgc"}


def _parse(args: list[str]) -> _Args | Result:
    out = _Args()
    i = 0
    while i < len(args):
        a = args[i]
        key, eq, val = a.partition("=")
        if a in ("-h", "--help"):
            return Result(0, stdout="NVIDIA System Management Interface -- fakesmi emulation of nvidia-smi\n")
        if a in ("-L", "--list-gpus"):
            out.action, out.actions = "-L", out.actions + 1
        elif a in ("-i", "--id") and i + 1 < len(args):
            out.ids = args[i + 1]
            i += 1
        elif key == "--id" and eq:
            out.ids = val
        elif key == "--query-gpu" and eq:
            out.action, out.query, out.actions = "query", val, out.actions + 1
        elif key == "--query-supported-clocks" and eq:
            out.action, out.query, out.actions = "supported", val, out.actions + 1
        elif key == "--format" and eq:
            out.fmt = val
        elif a in _VALUED and i + 1 < len(args):
            out.action, out.value, out.actions = _VALUED[a], args[i + 1], out.actions + 1
            i += 1
        elif key in _VALUED and eq and key.startswith("--"):
            out.action, out.value, out.actions = _VALUED[key], val, out.actions + 1
        elif a in ("-rgc", "--reset-gpu-clocks"):
            out.action, out.actions = "-rgc", out.actions + 1
        elif key in ("-m", "--mode"):
            return not_emulated(TOOL, "--mode (the special modes of --lock-gpu-clocks)")
        else:
            return Result(2, stderr=BAD_ARGS)
        i += 1
    return out


def run(args: list[str], node: NodeView) -> Result:
    a = _parse(args)
    if isinstance(a, Result):
        return a
    if a.actions == 0:
        return not_emulated(TOOL, "without -L, --query-gpu, --query-supported-clocks, -pl, -lgc or -rgc (the summary table)")
    queries = a.action in ("query", "supported")
    if a.actions > 1 or (queries and a.fmt is None) or (a.fmt is not None and not queries):
        return Result(2, stderr=BAD_ARGS)
    state = node.gpus()
    if state is None:
        return Result(9, stdout=NO_DRIVER)
    selected = _select(a.ids, state.gpus)
    if not selected:
        return Result(6, stdout="No devices were found\n")
    if a.action == "-L":
        return Result(0, stdout="".join(f"GPU {g.index}: {g.name} (UUID: {g.uuid})\n" for g in selected))
    if a.action == "query":
        assert a.query is not None and a.fmt is not None
        return _query(a.query, a.fmt, selected, state, node)
    if a.action == "supported":
        assert a.query is not None and a.fmt is not None
        return _supported(a.query, a.fmt, selected)
    if a.action == "-lgc":
        return _lock(a.value, selected, state, node)
    if a.action == "-rgc":
        for g in selected:
            node.set_nvidia_lock(g.index, None)
        return Result(0, stdout="All done.\n")
    return _set_limit(a.value, selected, state, node)


def _limit_w(g: GpuDevice, node: NodeView) -> float:
    mw = node.nvidia_limit_mw(g.index)
    return mw / 1000 if mw is not None else g.limit_w


def _query(query: str, fmt: str, gpus: list[GpuDevice], state: GpuState, node: NodeView) -> Result:
    opts = [o.strip() for o in fmt.split(",")]
    if "csv" not in opts or any(o not in ("csv", "noheader", "nounits") for o in opts):
        return Result(2, stderr=BAD_ARGS)
    fields = [f.strip() for f in query.split(",") if f.strip()]
    for f in fields:
        if f not in FIELDS:
            return Result(2, stdout=f'Field "{f}" is not a valid field to query.\n\n')
    units = "nounits" not in opts
    lines = []
    if "noheader" not in opts:
        lines.append(", ".join(f"{f} [{FIELDS[f][0]}]" if FIELDS[f][0] and units else f for f in fields))
    for g in gpus:
        limit = _limit_w(g, node)
        lock = node.nvidia_lock(g.index, g.locked_max_mhz)
        lines.append(", ".join(_value(f, g, limit, state.persistence_mode, units, lock) for f in fields))
    return Result(0, stdout="".join(line + "\n" for line in lines))


def supported_clocks(g: GpuDevice) -> list[int]:
    """The board's graphics clocks, highest first; empty when its profile gives no range."""
    if not g.sm_clock_max_mhz:
        return []
    clocks = list(range(g.sm_clock_max_mhz, g.sm_clock_min_mhz - 1, -CLOCK_STEP_MHZ))
    return clocks if clocks[-1] == g.sm_clock_min_mhz else [*clocks, g.sm_clock_min_mhz]


def _supported(query: str, fmt: str, gpus: list[GpuDevice]) -> Result:
    """--query-supported-clocks: one row per supported graphics clock of each board."""
    opts = [o.strip() for o in fmt.split(",")]
    if "csv" not in opts or any(o not in ("csv", "noheader", "nounits") for o in opts):
        return Result(2, stderr=BAD_ARGS)
    fields = [f.strip() for f in query.split(",") if f.strip()]
    for f in fields:
        if f in ("memory", "mem"):
            return not_emulated(TOOL, "--query-supported-clocks=memory (the memory clock)")
        if f not in SUPPORTED_FIELDS:
            return Result(2, stdout=f'Field "{f}" is not a valid field to query.\n\n')
    units = "nounits" not in opts
    lines = [] if "noheader" in opts else [", ".join(f"{f} [MHz]" if SUPPORTED_FIELDS[f] == "graphics" and units
                                                     else f for f in fields)]
    for g in gpus:
        listed: list[int | None] = list(supported_clocks(g)) or [None]
        for mhz in listed:
            row = {"bus": g.pci_bus_id, "uuid": g.uuid, "name": g.name,
                   "graphics": "[N/A]" if mhz is None else f"{mhz}{' MHz' if units else ''}"}
            lines.append(", ".join(row[SUPPORTED_FIELDS[f]] for f in fields))
    return Result(0, stdout="".join(line + "\n" for line in lines))


def _lock(text: str, gpus: list[GpuDevice], state: GpuState, node: NodeView) -> Result:
    """-lgc MIN,MAX (or one value, MIN = MAX): a ceiling outside the board's range is taken and the
    driver holds the nearest clock it supports, as nvidia-smi does (it accepts above-range values);
    a floor above the board's lowest clock is not modelled."""
    parts = [p.strip() for p in text.split(",")]
    if len(parts) not in (1, 2) or not all(p.isdigit() for p in parts):
        return Result(2, stderr=BAD_ARGS)
    lo, hi = int(parts[0]), int(parts[-1])
    for g in gpus:
        if not g.sm_clock_max_mhz:
            return not_emulated(TOOL, f"-lgc on a board without a supported clock range ({g.pci_bus_id})")
        if lo > g.sm_clock_min_mhz or lo > hi:
            return not_emulated(TOOL, f"-lgc {lo},{hi}: a floor above the board's lowest clock {g.sm_clock_min_mhz} MHz "
                                "(the emulator models the ceiling only)")
    out = []
    for g in gpus:
        node.set_nvidia_lock(g.index, (lo, hi))
        out.append(f'GPU clocks set to "(gpuClkMin {lo}, gpuClkMax {hi})" for GPU {g.pci_bus_id}\n')
        if not state.persistence_mode:
            out.append(
                f"\nWarning: persistence mode is disabled on device {g.pci_bus_id}. See the Known Issues section of "
                "the nvidia-smi(1) man page for more information. Run with [--help | -h] switch to get more "
                "information on how to enable persistence mode.\n"
            )
    out.append("All done.\n")
    return Result(0, stdout="".join(out))


def _set_limit(text: str, gpus: list[GpuDevice], state: GpuState, node: NodeView) -> Result:
    try:
        watts = float(text)
    except ValueError:
        return Result(2, stderr=BAD_ARGS)
    if watts < 0:
        return Result(2, stderr=BAD_ARGS)
    out = []
    for g in gpus:
        if "power.limit" in g.field_tokens or "power.max_limit" in g.field_tokens:
            return Result(3, stdout=f"Changing power management limit is not supported for GPU: {g.pci_bus_id}.\n")
        if not g.min_limit_w <= watts <= g.max_limit_w:
            return Result(
                2,
                stdout=(
                    f"Provided power limit {watts:.2f} W is not a valid power limit which should be between "
                    f"{g.min_limit_w:.2f} W and {g.max_limit_w:.2f} W for GPU {g.pci_bus_id}\n"
                    "Terminating early due to previous errors.\n"
                ),
            )
    mw = round(watts * 1000)
    for g in gpus:
        before = _limit_w(g, node)
        node.set_nvidia_limit_mw(g.index, mw)
        out.append(f"Power limit for GPU {g.pci_bus_id} was set to {mw / 1000:.2f} W from {before:.2f} W.\n")
        if not state.persistence_mode:
            out.append(
                f"\nWarning: persistence mode is disabled on device {g.pci_bus_id}. See the Caveats section in the "
                "nvidia-smi(1) man page for more information.\n"
            )
    out.append("All done.\n")
    return Result(0, stdout="".join(out))
