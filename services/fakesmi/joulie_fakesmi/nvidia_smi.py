"""nvidia-smi (variant ``default``): the queries and the power-limit command an agent uses.

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
}


def _value(field: str, g: GpuDevice, limit_w: float, persistence: bool, units: bool) -> str:
    if field in g.field_tokens:
        return g.field_tokens[field]
    unit, kind = FIELDS[field]
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


def run(args: list[str], node: NodeView) -> Result:
    ids: str | None = None
    query: str | None = None
    fmt: str | None = None
    power_limit: str | None = None
    actions = 0
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-h", "--help"):
            return Result(0, stdout="NVIDIA System Management Interface -- fakesmi emulation of nvidia-smi\n")
        if a in ("-L", "--list-gpus"):
            actions += 1
            query = "-L"
        elif a in ("-i", "--id") and i + 1 < len(args):
            ids = args[i + 1]
            i += 1
        elif a.startswith("--id="):
            ids = a.split("=", 1)[1]
        elif a.startswith("--query-gpu="):
            actions += 1
            query = a.split("=", 1)[1]
        elif a.startswith("--format="):
            fmt = a.split("=", 1)[1]
        elif a in ("-pl", "--power-limit") and i + 1 < len(args):
            actions += 1
            power_limit = args[i + 1]
            i += 1
        elif a.startswith("--power-limit="):
            actions += 1
            power_limit = a.split("=", 1)[1]
        else:
            return Result(2, stderr=BAD_ARGS)
        i += 1
    if actions == 0:
        return not_emulated(TOOL, "without -L, --query-gpu or -pl (the summary table)")
    if actions > 1 or (query not in (None, "-L") and fmt is None) or (fmt is not None and query in (None, "-L")):
        return Result(2, stderr=BAD_ARGS)
    state = node.gpus()
    if state is None:
        return Result(9, stdout=NO_DRIVER)
    selected = _select(ids, state.gpus)
    if not selected:
        return Result(6, stdout="No devices were found\n")
    if query == "-L":
        return Result(0, stdout="".join(f"GPU {g.index}: {g.name} (UUID: {g.uuid})\n" for g in selected))
    if query is not None:
        assert fmt is not None
        return _query(query, fmt, selected, state, node)
    assert power_limit is not None
    return _set_limit(power_limit, selected, state, node)


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
        lines.append(", ".join(_value(f, g, limit, state.persistence_mode, units) for f in fields))
    return Result(0, stdout="".join(line + "\n" for line in lines))


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
