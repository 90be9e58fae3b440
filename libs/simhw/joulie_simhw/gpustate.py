"""The emulated GPU state of one node, as the simulator writes it and fakesmi reads it.

Layout under a node's state root (``<root>/<node>/state``):

- ``gpus.json``: this module's :class:`GpuState`, rewritten by the simulator (temp file + rename)
  whenever a value changes. Readers never see a half-written file.
- ``nvml/gpu<i>/power_limit_mw``: the requested NVIDIA board limit, in milliwatts, written by
  ``nvidia-smi -pl``; the simulator reads it back on its next tick (files mode) or at once (FUSE
  mode). AMD caps are written where the kernel has them, the amdgpu hwmon ``power1_cap``
  (microwatts) under the node's sys root, named in ``hwmon``.
- ``nvml/gpu<i>/locked_clocks_mhz``: the NVIDIA board's SM clock lock as the driver keeps it,
  ``MIN,MAX`` in MHz, or ``none`` (:func:`format_locked_clocks`), written by ``nvidia-smi -lgc`` /
  ``-rgc`` and read back like the limit. The AMD equivalent is the kernel's OverDrive table,
  ``pp_od_clk_voltage`` in the GPU's PCI device directory (:func:`amd_od_file`), where ``amd-smi
  set -L sclk max MHZ`` writes ``s 1 MHZ``.
- ``tools.json``: which GPU tools the node has and their variants (:class:`ToolsManifest`).
- ``faults.json``: faults the harness injected into the node's view, ``{"schemaVersion": 1,
  "faults": ["gpu_tool_failure", ...]}``; with ``gpu_tool_failure`` the GPU tools fail, with
  ``gpu_tool_hang`` they hang until the fault is cleared.

Units are in the field names (W, mW, mJ, µW).
"""

from __future__ import annotations

import os

from joulie_simhw import jsonread
from joulie_simhw.record import asdict, field, record

# fakesmi imports this module at every GPU tool start: typing and pathlib (33 M instructions a start
# between them; the interpreter's own start is 36 M) serve annotations only, strings to Python.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any, Literal

    Vendor = Literal["nvidia", "amd"]

SCHEMA_VERSION = 1
GPU_STATE_FILE = "gpus.json"
TOOLS_FILE = "tools.json"
FAULTS_FILE = "faults.json"
FAULT_GPU_TOOL_FAILURE = "gpu_tool_failure"
FAULT_GPU_TOOL_HANG = "gpu_tool_hang"
NVIDIA_DRIVER_VERSION = "590.48.01"


class StateFormatError(ValueError):
    """A state file is missing a field or has the wrong schema version; the message names both."""


@record
class GpuDevice:
    """One GPU board as its tools report it."""

    index: int
    name: str
    uuid: str
    pci_bus_id: str
    min_limit_w: float
    max_limit_w: float
    default_limit_w: float
    limit_w: float
    enforced_limit_w: float
    draw_w: float
    util_pct: int
    energy_mj: int
    # AMD only: the hwmon directory (relative to the sys root) holding power1_cap/power1_input.
    hwmon: str = ""
    vbios_version: str = ""
    gfx_version: str = ""
    secondary_die: bool = False
    # nvidia-smi query fields this board answers with a token instead of a number, e.g. "[N/A]".
    field_tokens: dict[str, str] = field(default_factory=dict)
    # The board's supported SM clock range, MHz (NVIDIA SUPPORTED_CLOCKS graphics, AMD OD_RANGE
    # SCLK); 0 when the profile has no source for it (the tools then answer [N/A], and a lock is
    # not supported on that board).
    sm_clock_min_mhz: int = 0
    sm_clock_max_mhz: int = 0
    # The SM clock ceiling a lock holds the board at, MHz; None when not locked.
    locked_max_mhz: int | None = None
    # The board's current SM clock, MHz (nvidia-smi clocks.sm; NVML nvmlDeviceGetClockInfo); 0: not modelled.
    sm_clock_mhz: int = 0
    # DCGM's profiling fields 1002 / 1004 / 1005 (SM active, tensor pipe active, DRAM active, 0..1) as
    # `dcgmi dmon` reports them; None: the board has no reading (dcgmi answers N/A).
    sm_active: float | None = None
    tensor_active: float | None = None
    dram_active: float | None = None


@record
class GpuState:
    vendor: Vendor
    driver_version: str
    persistence_mode: bool
    gpus: tuple[GpuDevice, ...]

    def to_json(self) -> str:
        body: dict[str, Any] = {"schemaVersion": SCHEMA_VERSION, **asdict(self)}
        body["gpus"] = [asdict(g) for g in self.gpus]
        return _dumps(body, indent=1, sort_keys=True)

    @staticmethod
    def from_json(text: str, source: str = GPU_STATE_FILE) -> GpuState:
        raw = _load(text, source)
        try:
            gpus = tuple(GpuDevice(**g) for g in raw["gpus"])
            return GpuState(
                vendor=raw["vendor"],
                driver_version=raw["driver_version"],
                persistence_mode=bool(raw["persistence_mode"]),
                gpus=gpus,
            )
        except (KeyError, TypeError) as e:
            raise StateFormatError(f"{source}: {e}") from e


@record
class ToolsManifest:
    """The GPU tools present on a node: name -> variant, and what each needs to run.

    ``requires`` lists the files the real tool needs (ELF loader, C libraries, NVML, a script's
    interpreter). A tool whose requirement is missing fails the way the real one would.
    """

    tools: dict[str, str]
    requires: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def to_json(self) -> str:
        body = {
            "schemaVersion": SCHEMA_VERSION,
            "tools": {k: {"variant": v, "requires": list(self.requires.get(k, ()))} for k, v in self.tools.items()},
        }
        return _dumps(body, indent=1, sort_keys=True)

    @staticmethod
    def from_json(text: str, source: str = TOOLS_FILE) -> ToolsManifest:
        raw = _load(text, source)
        try:
            tools = {k: str(v["variant"]) for k, v in raw["tools"].items()}
            requires = {k: tuple(str(p) for p in v.get("requires", [])) for k, v in raw["tools"].items()}
        except (KeyError, TypeError, AttributeError) as e:
            raise StateFormatError(f"{source}: tools: {e}") from e
        return ToolsManifest(tools=tools, requires=requires)


def nvml_limit_file(index: int) -> str:
    """Path of a GPU's writable limit file, relative to the state root."""
    return f"nvml/gpu{index}/power_limit_mw"


def nvml_locked_clocks_file(index: int) -> str:
    """Path of a GPU's SM clock lock file, relative to the state root (``nvidia-smi -lgc/-rgc``)."""
    return f"nvml/gpu{index}/locked_clocks_mhz"


UNLOCKED = "none"


def format_locked_clocks(lock: tuple[int, int] | None) -> str:
    """The lock file's text: ``MIN,MAX`` in MHz, or ``none`` when the board is not locked."""
    return f"{lock[0]},{lock[1]}\n" if lock is not None else f"{UNLOCKED}\n"


def parse_locked_clocks(text: str) -> tuple[int, int] | None:
    """``(min, max)``, or None for ``none``; a ValueError naming the text when it is neither."""
    s = text.strip()
    if s == UNLOCKED:
        return None
    parts = s.split(",")
    if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
        raise ValueError(f"{s[:40]!r} is not MIN,MAX in MHz or {UNLOCKED!r}")
    return int(parts[0]), int(parts[1])


def amd_od_file(hwmon: str) -> str:
    """The amdgpu OverDrive table of the GPU whose hwmon directory (relative to the sys root) is
    ``hwmon``: ``pp_od_clk_voltage`` in its PCI device directory, two levels above ``hwmon/hwmonN``."""
    parts = hwmon.rstrip("/").split("/")
    return "/".join([*parts[:-2], "pp_od_clk_voltage"])


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` so a concurrent reader sees the old or the new content, never a mix."""
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    import tempfile  # here: fakesmi's every run imports this module, few write (tempfile: ~8 ms of imports)

    fd, tmp = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, 0o444)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _dumps(body: dict[str, Any], indent: int | None = None, sort_keys: bool = False) -> str:
    """A state file's text. json is imported here: the writers are the simulator and the harness,
    fakesmi only reads (jsonread says what the import costs each of its starts)."""
    import json

    return json.dumps(body, indent=indent, sort_keys=sort_keys) + "\n"


def _load(text: str, source: str) -> dict[str, Any]:
    try:
        raw = jsonread.loads(text)
    except ValueError as e:  # json.JSONDecodeError
        raise StateFormatError(f"{source}: not JSON: {e}") from e
    if not isinstance(raw, dict):
        raise StateFormatError(f"{source}: expected a JSON object")
    if raw.get("schemaVersion") != SCHEMA_VERSION:
        raise StateFormatError(f"{source}: schemaVersion: got {raw.get('schemaVersion')!r}, expected {SCHEMA_VERSION}")
    return raw


def faults_json(faults: tuple[str, ...]) -> str:
    return _dumps({"schemaVersion": SCHEMA_VERSION, "faults": sorted(set(faults))})


def read_faults(text: str, source: str = FAULTS_FILE) -> tuple[str, ...]:
    raw = _load(text, source)
    faults = raw.get("faults", [])
    if not isinstance(faults, list):
        raise StateFormatError(f"{source}: faults: expected a list")
    return tuple(str(f) for f in faults)
