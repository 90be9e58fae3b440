"""The OpenTelemetry hardware semantic conventions over the emulator's truth: which components a
node reports, with their ``hw.type`` and ``hw.id``. Pure; shared by the OTLP push and /metrics."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple


class Component(NamedTuple):
    hw_type: str
    hw_id: str
    energy_j: float
    power_w: float


def components(truth: Mapping[str, Any]) -> list[Component]:
    """CPU packages (``cpu``, ``package-N``), DRAM zones (``memory``, ``dram-N``), GPUs (``gpu``, ``gpu-N``)."""
    out = [Component("cpu", f"package-{p['socket']}", p["energyJ"], p["powerW"]) for p in truth["packages"]]
    out += [Component("memory", f"dram-{z['path'].split(':')[1]}", z["energyJ"], z["powerW"])
            for z in truth["zones"] if z["name"] == "dram"]
    out += [Component("gpu", f"gpu-{g['index']}", g["energyJ"], g["powerW"]) for g in truth["gpus"]]
    return out


def telemetry_gap(emu_node: Any) -> bool:
    """A node under a ``telemetry_gap`` fault reports nothing; nor does one that is not powered on
    (off, booting, shutting down: its agent does not run)."""
    return getattr(emu_node, "power", "on") != "on" or any(f.kind == "telemetry_gap" for f in emu_node.faults)
