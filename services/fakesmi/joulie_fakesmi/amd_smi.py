"""amd-smi (variants ``7.1`` and ``7.2``): ``static --limit --json``, ``metric --power --json``,
``metric --clock --json``, ``set --power-cap``, ``set --clk-limit sclk max``. JSON is
``{"gpu_data": [...]}`` indented by 4; values ``{"value", "unit"}``. Messages of ``set --clk-limit``
as amd-smi's ``set_gpu`` writes them (amdsmi_commands.py).
"""

from __future__ import annotations

import json

from joulie_fakesmi.node import NodeView
from joulie_fakesmi.result import Result, not_emulated
from joulie_simhw.gpustate import GpuDevice, amd_od_file

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any  # annotations only: typing costs each tool start 16 M instructions

TOOL = "amd-smi"


def _w(v: float) -> dict[str, Any]:
    return {"value": int(v), "unit": "W"}


def _cap_w(g: GpuDevice, node: NodeView) -> float:
    try:
        return int(node.read_sys(f"{g.hwmon}/power1_cap")) / 1e6
    except (OSError, ValueError):
        return g.limit_w


def sclk_limits(g: GpuDevice, node: NodeView) -> tuple[int, int]:
    """The gfx clock's soft (minimum, maximum), MHz, from the OverDrive table (``OD_SCLK`` 0 and 1);
    a command written there and not yet applied (``s 1 MHZ``, files mode before the next tick)
    counts as applied; without the file, gpus.json's lock or the board's maximum."""
    lo, hi = g.sm_clock_min_mhz, g.locked_max_mhz or g.sm_clock_max_mhz
    try:
        text = node.read_sys(amd_od_file(g.hwmon))
    except OSError:
        return lo, hi
    words = text.split()
    if words[:2] == ["s", "1"] and len(words) == 3 and words[2].isdigit():
        return lo, int(words[2])
    if words[:1] == ["r"]:
        return lo, g.sm_clock_max_mhz
    for line in text.splitlines():
        level, _, mhz = line.partition(":")
        if level.strip() in ("0", "1") and mhz.strip().lower().endswith("mhz") and mhz.strip()[:-3].isdigit():
            if level.strip() == "0":
                lo = int(mhz.strip()[:-3])
            else:
                hi = int(mhz.strip()[:-3])
    return lo, hi


def _mhz(v: int) -> dict[str, Any]:
    return {"value": v, "unit": "MHz"}


def _set_clk_limit(rest: list[str], cards: list[GpuDevice], node: NodeView) -> Result:
    """``set -L/--clk-limit sclk max MHZ`` as amd-smi's set_gpu does it: checked against the soft
    minimum, "already set" when equal, the driver's INVAL outside the OverDrive range; exit 0."""
    i = rest.index("-L") if "-L" in rest else rest.index("--clk-limit")
    clk, lim, val = (rest[i + 1 : i + 4] + ["", "", ""])[:3]
    if (clk, lim) != ("sclk", "max"):
        return not_emulated(TOOL, f"set --clk-limit {clk} {lim} (only sclk max is modelled)")
    if not val.isdigit():
        return Result(1, stdout="amdsmi_cli_exceptions.AmdSmiInvalidParameterValueException: Invalid value for clock limit. Error code: -5\n")
    mhz = int(val)
    out = []
    for g in cards:
        lo, hi = sclk_limits(g, node)
        if not g.sm_clock_max_mhz or mhz > g.sm_clock_max_mhz:
            msg = f"[AMDSMI_STATUS_INVAL] Unable to set max of sclk to {mhz}MHz"
        elif mhz < lo:
            msg = f"Cannot set sclk max value less than min ({lo}MHz)"
        elif mhz == hi:
            msg = f"Clock limit is already set to {mhz}MHz"
        else:
            node.write_sys(amd_od_file(g.hwmon), f"s 1 {mhz}\n")
            msg = f"Successfully changed max of sclk to {mhz}MHz"
        out.append(f"GPU: {g.index}\n    CLK_LIMIT: {msg}\n")
    return Result(0, stdout="".join(out))


def _metric_clock(cards: list[GpuDevice], node: NodeView) -> Result:
    """``metric --clock --json``: the gfx clock's soft limits (gfx_0; the current clock and the other
    clock domains are not modelled and say N/A or are left out)."""
    data = []
    for g in cards:
        if g.sm_clock_max_mhz:
            lo, hi = sclk_limits(g, node)
            gfx: dict[str, Any] = {"clk": "N/A", "min_clk": _mhz(lo), "max_clk": _mhz(hi), "clk_locked": "N/A", "deep_sleep": "N/A"}
        else:
            gfx = dict.fromkeys(("clk", "min_clk", "max_clk", "clk_locked", "deep_sleep"), "N/A")
        data.append({"gpu": g.index, "clock": {"gfx_0": gfx}})
    return Result(0, stdout=json.dumps({"gpu_data": data}, indent=4) + "\n")


def _gpus(args: list[str], gpus: tuple[GpuDevice, ...]) -> list[GpuDevice] | None:
    if "-g" not in args and "--gpu" not in args:
        return list(gpus)
    i = args.index("-g") if "-g" in args else args.index("--gpu")
    picked = []
    for a in args[i + 1 :]:
        if a.startswith("-"):
            break
        if a == "all":
            return list(gpus)
        if not a.isdigit() or int(a) >= len(gpus):
            return None
        picked.append(gpus[int(a)])
    return picked


def run(args: list[str], node: NodeView, variant: str) -> Result:
    if not args:
        return not_emulated(TOOL, "without a subcommand")
    sub, rest = args[0].lower(), args[1:]
    state = node.gpus()
    if state is None or state.vendor != "amd":
        return Result(1, stdout="amdsmi_cli_exceptions.AmdSmiLibraryException: Unable to initialize amdsmi library. Error code: -1\n")
    cards = _gpus(rest, state.gpus)
    if cards is None:
        return Result(1, stdout="amdsmi_cli_exceptions.AmdSmiDeviceNotFoundException: Device not found. Error code: -3\n")
    if sub == "static" and "--limit" in rest and "--json" in rest:
        data = []
        for g in cards:
            cap = _cap_w(g, node)
            if variant == "7.1":
                limit: dict[str, Any] = {"max_power": _w(g.max_limit_w), "min_power": _w(g.min_limit_w), "socket_power": _w(cap)}
            else:
                limit = {
                    "ppt0": {"max_power_limit": _w(g.max_limit_w), "min_power_limit": _w(g.min_limit_w), "socket_power_limit": _w(cap)},
                    "ppt1": "N/A",
                    "ptl_state": "N/A",
                    "ptl_format": "N/A",
                }
            limit.update({"slowdown_edge_temperature": "N/A", "shutdown_edge_temperature": "N/A"})
            data.append({"gpu": g.index, "limit": limit})
        return Result(0, stdout=json.dumps({"gpu_data": data}, indent=4) + "\n")
    if sub == "metric" and "--power" in rest and "--json" in rest:
        data = []
        for g in cards:
            try:
                watts = int(node.read_sys(f"{g.hwmon}/power1_input")) / 1e6
            except (OSError, ValueError):
                watts = g.draw_w
            power = {"socket_power": _w(watts), "gfx_voltage": "N/A", "soc_voltage": "N/A", "mem_voltage": "N/A", "throttle_status": "N/A", "power_management": "ENABLED"}
            data.append({"gpu": g.index, "power": power})
        return Result(0, stdout=json.dumps({"gpu_data": data}, indent=4) + "\n")
    if sub == "metric" and "--clock" in rest and "--json" in rest:
        return _metric_clock(cards, node)
    if sub == "set" and ("-L" in rest or "--clk-limit" in rest):
        return _set_clk_limit(rest, cards, node)
    if sub == "set" and ("-o" in rest or "--power-cap" in rest):
        i = rest.index("-o") if "-o" in rest else rest.index("--power-cap")
        vals = rest[i + 1 : i + 3] if variant != "7.1" else rest[i + 1 : i + 2]
        try:
            watts = int(vals[-1])
        except (ValueError, IndexError):
            return Result(1, stdout="amdsmi_cli_exceptions.AmdSmiInvalidParameterValueException: Invalid value for power cap. Error code: -5\n")
        out = []
        for g in cards:
            current = _cap_w(g, node)
            if not g.min_limit_w <= watts <= g.max_limit_w:
                out.append(f"GPU: {g.index}\n    POWERCAP: [AMDSMI_STATUS_INVAL] Unable to set power cap to {watts} W\n")
            elif round(current) == watts:
                out.append(f"GPU: {g.index}\n    POWERCAP: Power cap is already set to {watts} W\n")
            else:
                node.write_sys(f"{g.hwmon}/power1_cap", f"{watts * 1_000_000}\n")
                out.append(f"GPU: {g.index}\n    POWERCAP: Successfully set power cap to {watts} W\n")
        return Result(0, stdout="".join(out))
    known = {"version", "list", "static", "firmware", "bad-pages", "metric", "process", "event", "topology", "set", "reset", "monitor", "xgmi", "partition", "ras", "node"}
    if sub not in known:
        return Result(1, stdout=f"amdsmi_cli_exceptions.AmdSmiInvalidCommandException: Command '{sub}' is invalid. Run 'amd-smi -h' for more info. Error code: -10\n")
    return not_emulated(TOOL, " ".join(args))
