"""rocm-smi (variants ``current`` and ``legacy-agent-contract``): product name, power, caps.

Follows rocm_smi.py of rocm_smi_lib at commit 323ab1105dce for the modelled options. Text output:
two empty lines, then 90-column ``=`` spacer lines with centred titles around each section, a full
spacer line closing each section, and ``GPU[i]\\t\\t: <metric>: <value>`` lines; ``--json``:
``{"card<i>": {"<metric>": "<value>"}}`` and no spacer lines. Errors go to stderr through Python
logging (``LEVEL: message``). ``--showpowercap`` exists only in the legacy variant; the current
tool answers it with argparse's usage error (exit 2). Without the amdgpu driver the tool logs
``Driver not initialized`` and exits 0, as rocm_smi.py does.
"""

from __future__ import annotations

import argparse
import json
import math

from joulie_fakesmi.node import NodeView
from joulie_fakesmi.result import Result, not_emulated
from joulie_simhw.gpustate import GpuDevice

TOOL = "rocm-smi"
WIDTH = 90
HEADER = " ROCm System Management Interface "
FOOTER = " End of ROCm SMI Log "
VENDOR = "Advanced Micro Devices, Inc. [AMD/ATI]"

# Python logging levels, as rocm_smi.py's basicConfig(format='%(levelname)s: %(message)s') prints them.
DEBUG, WARNING, ERROR = 10, 30, 40
_LEVELS = {"NOTSET": 0, "DEBUG": DEBUG, "INFO": 20, "WARNING": WARNING, "ERROR": ERROR, "CRITICAL": 50, "FATAL": 50}
_LEVEL_NAMES = {0: "NOTSET", DEBUG: "DEBUG", 20: "INFO", WARNING: "WARNING", ERROR: "ERROR", 50: "CRITICAL"}


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
    # A string, as rocm_smi.py takes it: int() decides, and the messages repeat it as typed.
    p.add_argument("--setpoweroverdrive", metavar="WATTS")
    p.add_argument("--resetpoweroverdrive", action="store_true")
    p.add_argument("--autorespond", metavar="RESPONSE")
    p.add_argument("--loglevel", metavar="LEVEL")
    p.add_argument("--json", action="store_true")
    return p


def spacer(title: str = "") -> str:
    """printLogSpacer: the title centred in ``=`` (an odd-length title gets one ``=`` appended)."""
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


class _Run:
    """One run: what rocm_smi.py keeps in PRINT_JSON, JSON_DATA and RETCODE, and its log level."""

    def __init__(self, as_json: bool, level: int) -> None:
        self.json = as_json
        self.level = level
        self.out: list[str] = []
        self.err: list[str] = []
        self.data: dict[str, dict[str, str]] = {}
        self.retcode = 0

    def log(self, level: int, msg: str) -> None:
        if level >= self.level:
            self.err.append(f"{_LEVEL_NAMES[level]}: {msg}\n")

    def spacer(self, title: str = "") -> None:
        if not self.json:
            self.out.append(spacer(title))

    def print_log(self, g: GpuDevice | None, line: str) -> None:
        """printLog: ``GPU[i]\\t\\t: <line>`` (just the line without a device); under --json a
        ``metric: value`` line becomes an entry of the card."""
        if self.json:
            if g is not None and ": " in line:
                key, value = line.split(": ", 1)
                self.data.setdefault(f"card{g.index}", {})[key] = value.split(": ", 1)[0].strip()
            return
        self.out.append(line if g is None else f"GPU[{g.index}]\t\t: {line}")

    def print_err(self, g: GpuDevice, msg: str) -> None:
        """printErrLog: an ERROR log line, demoted to DEBUG under --json."""
        self.log(DEBUG if self.json else ERROR, f"GPU[{g.index}]\t: {msg}")

    def section(self, title: str, rows: list[tuple[GpuDevice, str]]) -> None:
        self.spacer(title)
        for g, line in rows:
            self.print_log(g, line)
        self.spacer()


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
    level = WARNING if ns.loglevel is None else _LEVELS.get(ns.loglevel.upper(), WARNING)
    r = _Run(ns.json, level)
    by_index = {g.index: g for g in state.gpus}
    cards: list[GpuDevice] = []
    for d in ns.device if ns.device is not None else sorted(by_index):
        if d not in by_index:
            # A warning and sys.exit(), before any output: exit 0.
            r.log(WARNING, f"No such device card{d}")
            return Result(0, stderr="".join(r.err))
        if by_index[d] not in cards:
            cards.append(by_index[d])
    if not r.json:
        r.out += ["", ""]  # print('\n')
    r.spacer(HEADER)
    # In the order rocm_smi.py's main runs them.
    if ns.showmaxpower:
        # As rocm_smi.py does: the *current* cap, floored to whole watts, under the "Max" label.
        r.section(" Power Cap ", [(g, f"Max Graphics Package Power (W): {math.floor(_cap_w(g, node))}.0") for g in cards])
    if getattr(ns, "showpowercap", False):
        rows = []
        for g in cards:
            avg = "N/A (Secondary die)" if g.secondary_die else f"{_input_w(g, node):.1f}"
            rows += [
                (g, f"Max Graphics Package Power (W): {g.max_limit_w:.1f}"),
                (g, f"Min Graphics Package Power (W): {g.min_limit_w:.1f}"),
                (g, f"Current Power Cap (W): {_cap_w(g, node):.1f}"),
                (g, f"Average Graphics Package Power (W): {avg}"),
            ]
        r.section(" Power Cap ", rows)
    if ns.showpower:
        r.section(" Power Consumption ", [(g, f"Current Socket Graphics Package Power (W): {_input_w(g, node):.1f}") for g in cards])
    if ns.showproductname:
        rows = []
        for g in cards:
            rows += [
                (g, f"Card Series: {g.name}"),
                (g, "Card Model: 0x74a1"),
                (g, f"Card Vendor: {VENDOR}"),
                (g, f"Card SKU: {_sku(g.vbios_version)}"),
                (g, "Subsystem ID: 0x74a1"),
                (g, "Device Rev: 0x00"),
                (g, f"Node ID: {g.index + 2}"),
                (g, f"GUID: {_guid(g.pci_bus_id)}"),
                (g, f"GFX Version: {g.gfx_version}"),
            ]
        r.section(" Product Info ", rows)
    for value in ([ns.setpoweroverdrive] if ns.setpoweroverdrive else []) + (["0"] if ns.resetpoweroverdrive else []):
        unmodelled = _set_power_overdrive(r, value, cards, node)
        if unmodelled is not None:
            return unmodelled
    if r.retcode and not r.json:
        r.log(DEBUG, " \t\t One or more commands failed.")
    # Every failure exits 0 unless --loglevel names another level than warning.
    if ns.loglevel is None or level == WARNING:
        r.retcode = 0
    if r.json:
        data = {card: keys for card, keys in r.data.items() if keys}
        if not data:
            r.log(WARNING, "No JSON data to report")
            return Result(r.retcode, stderr="".join(r.err))
        r.out.append(json.dumps(data))
    r.spacer(FOOTER)
    return Result(r.retcode, stdout="".join(line + "\n" for line in r.out), stderr="".join(r.err))


def _set_power_overdrive(r: _Run, value: str, cards: list[GpuDevice], node: NodeView) -> Result | None:
    """setPowerOverDrive; ``value`` "0" is --resetpoweroverdrive (back to the default cap). Failures
    log and set RETCODE; ``None`` unless the run meets what is not modelled (the prompt)."""
    try:
        watts = int(value)
    except ValueError as e:
        r.print_log(None, "Unable to set Power OverDrive")
        r.log(ERROR, f"{value} is not an integer")
        r.err.append(f'Traceback (most recent call last):\n  File "rocm_smi.py", in setPowerOverDrive\nValueError: {e}\n')
        r.retcode = 1
        return None
    r.spacer(" Reset GPU Power OverDrive " if watts == 0 else " Set GPU Power OverDrive ")
    for g in cards:
        if g.secondary_die:
            r.log(DEBUG, "Unavailable for secondary die.")
            continue
        current_uw = _sys_uw(node, g, "power1_cap")
        if current_uw is None:
            r.log(DEBUG, "Unable to retireive current power cap.")  # sic
            current_uw = 0
        default_uw = _sys_uw_or(node, g, "power1_cap_default", g.default_limit_w)
        new_uw = default_uw if watts == 0 else watts * 1_000_000
        max_uw = _sys_uw_or(node, g, "power1_cap_max", g.max_limit_w)
        min_uw = _sys_uw_or(node, g, "power1_cap_min", g.min_limit_w)
        # The range check compares the typed watts, so a reset (0) fails on a board whose minimum is above 0, as it does for real.
        if watts > max_uw / 1e6:
            r.print_err(g, "Unable to set Power OverDrive")
            r.log(ERROR, f"GPU[{g.index}]\t\t: Value cannot be greater than: {int(max_uw / 1e6)}W ")
            r.retcode = 1
            continue
        if watts < min_uw / 1e6:
            r.print_err(g, "Unable to set Power OverDrive")
            r.log(ERROR, f"GPU[{g.index}]\t\t: Value cannot be less than: {int(min_uw / 1e6)}W ")
            r.retcode = 1
            continue
        if new_uw == current_uw:
            r.print_log(g, f"Max power was already at: {new_uw / 1000000}W")
        if new_uw > max(current_uw, default_uw):
            return not_emulated(TOOL, "out-of-spec confirmation prompt (a cap above the current and default caps)")
        try:
            node.write_sys(f"{g.hwmon}/power1_cap", f"{new_uw}\n")
        except OSError:
            r.print_err(g, "Unable to reset Power OverDrive to default" if watts == 0 else f"Unable to set Power OverDrive to {value}W")
            continue
        if r.json:
            continue
        got_uw = _sys_uw(node, g, "power1_cap") or 0
        if watts == 0:
            r.print_log(g, f"Successfully reset Power OverDrive to: {int(got_uw / 1000000)}W")
        elif got_uw == new_uw:
            r.print_log(g, f"Successfully set power to: {value}W")
        else:
            r.print_err(g, f"Unable set power to: {value}W, current value is {int(got_uw / 1000000)}W")
    r.spacer()
    return None


def _sys_uw(node: NodeView, g: GpuDevice, attr: str) -> int | None:
    """A hwmon attribute in microwatts; None when unreadable."""
    try:
        return int(node.read_sys(f"{g.hwmon}/{attr}"))
    except (OSError, ValueError):
        return None


def _sys_uw_or(node: NodeView, g: GpuDevice, attr: str, fallback_w: float) -> int:
    uw = _sys_uw(node, g, attr)
    return round(fallback_w * 1_000_000) if uw is None else uw


def _cap_w(g: GpuDevice, node: NodeView) -> float:
    return _sys_uw_or(node, g, "power1_cap", g.limit_w) / 1e6


def _input_w(g: GpuDevice, node: NodeView) -> float:
    return _sys_uw_or(node, g, "power1_input", g.draw_w) / 1e6
