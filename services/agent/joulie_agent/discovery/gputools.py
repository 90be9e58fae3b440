"""GPU tool output: nvidia-smi CSV, rocm-smi JSON (legacy and current), amd-smi JSON. Pure.

The exact argv the agent runs lives here too, so a test can check the strings a fake tool or a
corpus capture must answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

NVIDIA_QUERY_FIELDS = "index,power.min_limit,power.max_limit,power.limit,power.draw,name"
NVIDIA_QUERY = ["nvidia-smi", f"--query-gpu={NVIDIA_QUERY_FIELDS}", "--format=csv,noheader,nounits"]
# The limit the board actually enforces. `power.limit` is only the one last requested: a driver that
# tears its state down (persistence mode off, no client) or a reset goes back to the default while
# `power.limit` may still read the request. A query of its own, so captures of NVIDIA_QUERY stay valid.
NVIDIA_ENFORCED_QUERY = ["nvidia-smi", "--query-gpu=index,enforced.power.limit", "--format=csv,noheader,nounits"]
# The limit a board powers on with (what "uncapped" means to the policies), also its own query: the
# original one predates it and its captures stay valid.
NVIDIA_DEFAULT_QUERY = ["nvidia-smi", "--query-gpu=index,power.default_limit", "--format=csv,noheader,nounits"]
AMDSMI_LIMITS = ["amd-smi", "static", "--limit", "--json"]
ROCMSMI_LEGACY_QUERY = ["rocm-smi", "--showpowercap", "--showproductname", "--json"]
ROCMSMI_PRODUCT_QUERY = ["rocm-smi", "--showproductname", "--json"]


@dataclass(frozen=True)
class GPUDevice:
    """One GPU as a tool or NVML reports it; watts, None when the tool says N/A."""

    index: int
    name: str = ""
    min_w: float | None = None
    max_w: float | None = None
    current_cap_w: float | None = None
    default_w: float | None = None
    draw_w: float | None = None
    # What the device enforces when the source says so apart from the requested limit (NVML
    # nvmlDeviceGetEnforcedPowerLimit, nvidia-smi enforced.power.limit); None: not read.
    enforced_w: float | None = None


@dataclass
class Inventory:
    vendor: str  # nvidia | amd
    source: str  # nvml | nvidia-smi | amd-smi | rocm-smi
    devices: list[GPUDevice] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # amd-smi 7.2 addresses the cap as "ppt0"; 7.1 takes the watts alone.
    amdsmi_ppt: bool = False


_NUMBER = re.compile(r"^\s*([+-]?\d+(?:\.\d+)?)\s*(?:[mµu]?W)?\s*$")


def parse_watts(value: Any) -> float | None:
    """A watts value from a tool: number, "300.00", "300 W", {"value": 300, "unit": "W"}; else None."""
    if isinstance(value, dict):
        unit = str(value.get("unit", "W")).strip()
        w = parse_watts(value.get("value"))
        if w is None:
            return None
        return w / 1000 if unit == "mW" else w / 1e6 if unit in ("uW", "µW") else w
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        m = _NUMBER.match(value.strip().strip('"'))
        return float(m.group(1)) if m else None
    return None


def nvidia_rows(text: str, least: int, warnings: list[str]) -> Iterator[tuple[int, list[str]]]:
    """(board index, fields) of each row of an nvidia-smi ``--format=csv,noheader`` answer with at
    least ``least`` fields; a row that is short or whose index is no integer is left out, with a
    warning naming its line appended to ``warnings``."""
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        fields = [f.strip().strip('"').strip() for f in line.split(",")]
        if len(fields) < least:
            warnings.append(f"nvidia-smi: line {lineno}: expected {least} fields, got {len(fields)}: {line[:80]!r}")
            continue
        try:
            # ASCII digits only; int() also refuses a number of more digits than Python converts.
            index = int(fields[0]) if fields[0].isascii() and fields[0].isdigit() else None
        except ValueError:
            index = None
        if index is None:
            warnings.append(f"nvidia-smi: line {lineno}: index {fields[0][:20]!r} is not an integer")
            continue
        yield index, fields


def parse_nvidia_csv(text: str) -> Inventory:
    """Rows of NVIDIA_QUERY output. `[N/A]`/`Not Supported` limits are unknown, not 0 (defect D16)."""
    inv = Inventory("nvidia", "nvidia-smi")
    for index, fields in nvidia_rows(text, 6, inv.warnings):
        min_w, max_w, limit_w, draw_w = (parse_watts(f) for f in fields[1:5])
        inv.devices.append(GPUDevice(index=index, name=",".join(fields[5:]), min_w=min_w, max_w=max_w,
                                     current_cap_w=limit_w, draw_w=draw_w))
    return inv


def parse_nvidia_enforced(text: str) -> tuple[dict[int, float], list[str]]:
    """Rows of NVIDIA_ENFORCED_QUERY output: ({index: enforced watts}, warnings naming the line)."""
    return parse_nvidia_index_watts(text, "enforced.power.limit")


def parse_nvidia_default(text: str) -> tuple[dict[int, float], list[str]]:
    """Rows of NVIDIA_DEFAULT_QUERY output: ({index: default limit watts}, warnings naming the line)."""
    return parse_nvidia_index_watts(text, "power.default_limit")


def parse_nvidia_index_watts(text: str, field_name: str) -> tuple[dict[int, float], list[str]]:
    """Rows of an ``index,<field_name>`` nvidia-smi query; `[N/A]` rows are left out (unknown)."""
    out: dict[int, float] = {}
    warnings: list[str] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        fields = [f.strip().strip('"').strip() for f in line.split(",")]
        if len(fields) != 2:
            warnings.append(f"nvidia-smi {field_name}: line {lineno}: expected 2 fields, got "
                            f"{len(fields)}: {line[:80]!r}")
            continue
        try:
            index = int(fields[0])
        except ValueError:
            warnings.append(f"nvidia-smi {field_name}: line {lineno}: index {fields[0][:20]!r} is not an "
                            "integer")
            continue
        w = parse_watts(fields[1])
        if w is not None:
            out[index] = w
    return out, warnings


def _json(text: str, tool: str, inv: Inventory) -> Any:
    # Tools may print log lines before the JSON document.
    start = min((i for i in (text.find("{"), text.find("[")) if i >= 0), default=-1)
    if start < 0:
        inv.warnings.append(f"{tool}: output is not JSON: {text.strip()[:80]!r}")
        return None
    try:
        return json.loads(text[start:])
    except ValueError as err:
        inv.warnings.append(f"{tool}: output is not JSON ({err}): {text.strip()[:80]!r}")
        return None


def parse_amdsmi_limits(text: str) -> Inventory:
    """`amd-smi static --limit --json`: a list (or {"gpu_data": [...]}) of {gpu, limit}.

    7.1 reports limit.{max_power,min_power,socket_power}; 7.2 nests them per power domain as
    limit.ppt0.{max_power_limit,min_power_limit,socket_power_limit}.
    """
    inv = Inventory("amd", "amd-smi")
    doc = _json(text, "amd-smi", inv)
    if doc is None:
        return inv
    items = doc.get("gpu_data", doc) if isinstance(doc, dict) else doc
    if isinstance(items, dict):
        items = [items]
    if not isinstance(items, list):
        inv.warnings.append("amd-smi: expected a list of GPUs")
        return inv
    for pos, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        index = item.get("gpu", pos)
        index = index if isinstance(index, int) else pos
        limit = item.get("limit")
        if not isinstance(limit, dict):
            inv.devices.append(GPUDevice(index=index))
            continue
        if isinstance(limit.get("ppt0"), dict):
            inv.amdsmi_ppt = True
            ppt = limit["ppt0"]
            mx, mn, cur = ppt.get("max_power_limit"), ppt.get("min_power_limit"), ppt.get("socket_power_limit")
        else:
            mx, mn, cur = limit.get("max_power"), limit.get("min_power"), limit.get("socket_power")
        inv.devices.append(GPUDevice(index=index, min_w=parse_watts(mn), max_w=parse_watts(mx),
                                     current_cap_w=parse_watts(cur)))
    inv.devices.sort(key=lambda d: d.index)
    return inv


def parse_rocmsmi(text: str) -> Inventory:
    """rocm-smi --json output with `card<N>` keys.

    Model from `Card Series` (the product name; the original took `Card SKU`, a VBIOS segment,
    defect D4). Limits from the legacy `--showpowercap` keys when present; `N/A (Secondary die)`
    and other non-numbers are unknown.
    """
    inv = Inventory("amd", "rocm-smi")
    doc = _json(text, "rocm-smi", inv)
    if not isinstance(doc, dict):
        return inv
    for key, card in doc.items():
        m = re.fullmatch(r"card([0-9]{1,6})", key)
        if not m or not isinstance(card, dict):
            continue
        name = str(card.get("Card Series") or card.get("Card series") or card.get("Card Model") or "").strip()
        inv.devices.append(GPUDevice(
            index=int(m.group(1)), name=name,
            min_w=parse_watts(card.get("Min Graphics Package Power (W)")),
            max_w=parse_watts(card.get("Max Graphics Package Power (W)")),
            current_cap_w=parse_watts(card.get("Current Power Cap (W)")),
            draw_w=parse_watts(card.get("Average Graphics Package Power (W)")),
        ))
    inv.devices.sort(key=lambda d: d.index)
    return inv


def rocmsmi_rejected_flag(text: str) -> bool:
    """Current rocm-smi has no --showpowercap: argparse says so (defect D1 of the original)."""
    return "unrecognized arguments" in text


def merge_names(inv: Inventory, names: Mapping[int, str]) -> None:
    inv.devices = [d if d.name or d.index not in names else replace(d, name=names[d.index]) for d in inv.devices]


def nvidia_set_argv(indices: Sequence[int], watts: float) -> list[str]:
    """One call for every board given: ``-i`` takes a comma-separated list, and nvidia-smi checks
    every selected board before it writes any (a refusal writes none)."""
    return ["nvidia-smi", "-i", ",".join(str(i) for i in indices), "-pl", str(round(watts))]


def rocmsmi_set_argv(index: int, watts: float) -> list[str]:
    # --autorespond answers the out-of-spec prompt; without it the tool reads EOF (defect D3).
    return ["rocm-smi", "-d", str(index), "--setpoweroverdrive", str(round(watts)), "--autorespond", "y"]


def amdsmi_set_argv(indices: Sequence[int], watts: float, ppt: bool) -> list[str]:
    """One call for every board given (``-g`` takes several indices)."""
    target = ["ppt0", str(round(watts))] if ppt else [str(round(watts))]
    return ["amd-smi", "set", "-g", *(str(i) for i in indices), "-o", *target]


def rocmsmi_set_succeeded(output: str) -> bool:
    """rocm-smi exits 0 on a refused set (secondary die, defect D2): read the output instead."""
    return "Successfully set" in output


def rocmsmi_failure_reason(output: str) -> str:
    """The line of a refused rocm-smi set that says why, skipping its `=== ... ===` banners."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip() and not ln.strip().startswith("=")]
    return lines[-1] if lines else "(rocm-smi printed no reason)"


def amdsmi_set_failed(output: str) -> bool:
    low = output.lower()
    return any(s in low for s in ("unable to set", "not_supported", "error", "exception", "invalid"))
