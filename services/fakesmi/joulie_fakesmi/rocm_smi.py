"""rocm-smi (variants ``current`` and ``legacy-agent-contract``): product name, power, caps.

Text output: 90-column ``=`` spacer lines with centred titles and ``GPU[i]\\t\\t: <metric>: <value>``
lines; ``--json``: ``{"card<i>": {"<metric>": "<value>"}}``. ``--showpowercap`` exists only in the
legacy variant; the current tool answers it with argparse's usage error (exit 2). Without the
amdgpu driver the tool logs ``Driver not initialized`` and exits 0, as rocm_smi.py does.
"""

from __future__ import annotations

import argparse
import json
import math

from joulie_fakesmi.node import NodeView
from joulie_fakesmi.result import Result
from joulie_simhw.gpustate import GpuDevice

TOOL = "rocm-smi"
WIDTH = 90
VENDOR = "Advanced Micro Devices, Inc. [AMD/ATI]"


class _ArgError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise _ArgError(message)


def _parser(variant: str) -> _Parser:
    p = _Parser(prog=TOOL, description="AMD ROCm System Management Interface", add_help=False)
    p.add_argument("-h", "--help", action="store_true")
    p.add_argument("-d", "--device", nargs="+", type=int)
    p.add_argument("--showproductname", action="store_true")
    p.add_argument("-P", "--showpower", action="store_true")
    p.add_argument("-M", "--showmaxpower", action="store_true")
    if variant == "legacy-agent-contract":
        p.add_argument("--showpowercap", action="store_true")
    p.add_argument("--setpoweroverdrive", "--setpoweroverdrive", type=float, metavar="WATTS")
    p.add_argument("--resetpoweroverdrive", action="store_true")
    p.add_argument("--autorespond")
    p.add_argument("--loglevel")
    p.add_argument("--json", action="store_true")
    return p


def spacer(title: str = "") -> str:
    if not title:
        return "=" * WIDTH
    if len(title) % 2:
        title += "="
    side = "=" * ((WIDTH - len(title)) // 2)
    return side + title + side


def _guid(bus: str) -> str:
    h = 0x811C9DC5
    for b in bus.encode():
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return str((h >> 16) ^ (h & 0xFFFF))


def _sku(vbios: str) -> str:
    parts = vbios.split("-")
    return parts[1] if len(parts) == 3 else vbios


def run(args: list[str], node: NodeView, variant: str) -> Result:
    parser = _parser(variant)
    try:
        ns = parser.parse_args(args)
    except _ArgError as e:
        return Result(2, stderr=f"{parser.format_usage()}{TOOL}: error: {e}\n")
    if ns.help:
        return Result(0, stdout=parser.format_help())
    state = node.gpus()
    if state is None or state.vendor != "amd":
        return Result(0, stderr="ERROR:root:Driver not initialized (amdgpu not found in modules)\n")
    cards = [g for g in state.gpus if ns.device is None or g.index in ns.device]
    out_of_range = [d for d in (ns.device or []) if d not in {g.index for g in state.gpus}]
    data: dict[str, dict[str, str]] = {}
    sections: list[tuple[str, list[str]]] = []
    warnings = [f"WARNING: GPU[{d}]\t: No such device\n" for d in out_of_range]

    def add(section: str, g: GpuDevice, metric: str, value: str) -> None:
        data.setdefault(f"card{g.index}", {})[metric] = value
        if not sections or sections[-1][0] != section:
            sections.append((section, []))
        sections[-1][1].append(f"GPU[{g.index}]\t\t: {metric}: {value}")

    for g in cards:
        cap_w = _cap_w(g, node)
        if ns.showproductname:
            add(" Product Info ", g, "Card Series", g.name)
            add(" Product Info ", g, "Card Model", "0x74a1")
            add(" Product Info ", g, "Card Vendor", VENDOR)
            add(" Product Info ", g, "Card SKU", _sku(g.vbios_version))
            add(" Product Info ", g, "Subsystem ID", "0x74a1")
            add(" Product Info ", g, "Device Rev", "0x00")
            add(" Product Info ", g, "Node ID", str(g.index + 2))
            add(" Product Info ", g, "GUID", _guid(g.pci_bus_id))
            add(" Product Info ", g, "GFX Version", g.gfx_version)
        if ns.showpower:
            add(" Power Consumption ", g, "Current Socket Graphics Package Power (W)", f"{_input_w(g, node):.1f}")
        if ns.showmaxpower:
            # As rocm_smi.py does: the *current* cap, floored to whole watts, under the "Max" label.
            add(" Power Cap ", g, "Max Graphics Package Power (W)", f"{math.floor(cap_w)}.0")
        if getattr(ns, "showpowercap", False):
            add(" Power Cap ", g, "Max Graphics Package Power (W)", f"{g.max_limit_w:.1f}")
            add(" Power Cap ", g, "Min Graphics Package Power (W)", f"{g.min_limit_w:.1f}")
            add(" Power Cap ", g, "Current Power Cap (W)", f"{cap_w:.1f}")
            avg = "N/A (Secondary die)" if g.secondary_die else f"{_input_w(g, node):.1f}"
            add(" Power Cap ", g, "Average Graphics Package Power (W)", avg)
    if ns.setpoweroverdrive is not None:
        return _set(ns.setpoweroverdrive, cards, node, ns.json, warnings)
    if ns.json:
        return Result(0, stdout="".join(warnings) + json.dumps(data) + "\n")
    lines = ["", "", spacer(" ROCm System Management Interface ")]
    for title, rows in sections:
        lines.append(spacer(title))
        lines.extend(rows)
    lines += [spacer(), spacer(" End of ROCm SMI Log ")]
    return Result(0, stdout="".join(warnings) + "\n".join(lines) + "\n")


def _cap_w(g: GpuDevice, node: NodeView) -> float:
    try:
        return int(node.read_sys(f"{g.hwmon}/power1_cap")) / 1e6
    except (OSError, ValueError):
        return g.limit_w


def _input_w(g: GpuDevice, node: NodeView) -> float:
    try:
        return int(node.read_sys(f"{g.hwmon}/power1_input")) / 1e6
    except (OSError, ValueError):
        return g.draw_w


def _set(watts: float, cards: list[GpuDevice], node: NodeView, as_json: bool, warnings: list[str]) -> Result:
    rows = []
    for g in cards:
        if g.secondary_die:
            continue  # rocm_smi.py skips a secondary die silently (debug log only) and still exits 0
        w = round(watts)
        if not g.min_limit_w <= w <= g.max_limit_w:
            rows.append(
                f"GPU[{g.index}]\t\t: Unable to set power to {w}W: must be within {g.min_limit_w:.0f}W and {g.max_limit_w:.0f}W"
            )
            continue
        try:
            node.write_sys(f"{g.hwmon}/power1_cap", f"{w * 1_000_000}\n")
        except OSError as e:
            rows.append(f"GPU[{g.index}]\t\t: Unable to set power to {w}W ({e.strerror})")
            continue
        rows.append(f"GPU[{g.index}]\t\t: Successfully set power to: {w}W")
    if as_json:
        return Result(0, stdout="".join(warnings) + "{}\n")
    lines = ["", "", spacer(" ROCm System Management Interface "), spacer(" Set Power Overdrive "), *rows, spacer(), spacer(" End of ROCm SMI Log ")]
    return Result(0, stdout="".join(warnings) + "\n".join(lines) + "\n")
