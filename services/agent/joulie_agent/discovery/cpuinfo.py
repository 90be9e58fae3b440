"""/proc/cpuinfo: model, vendor, sockets and logical CPUs. Pure: parses text.

A containerised or trimmed cpuinfo (lxcfs, a cpuset, a hand-copied fixture) lists fewer
`processor` blocks than the host has, but each block still states its package's `siblings`
(logical CPUs per package) and `cpu cores` (physical cores per package) under its `physical id`.
`host_logical_cpus` is the sum of `siblings` over the distinct packages (or of `cpu cores` when
`siblings` is absent), so discovery can tell the host's size from a partial listing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# arm64 cpuinfo has no "model name"; the implementer/part codes name the core (ARM's MIDR).
ARM_IMPLEMENTERS = {0x41: "ARM", 0x42: "Broadcom", 0x43: "Cavium", 0x46: "Fujitsu", 0x48: "HiSilicon",
                    0x4E: "NVIDIA", 0x51: "Qualcomm", 0x61: "Apple", 0xC0: "Ampere"}
ARM_PARTS = {
    (0x41, 0xD0C): "Neoverse-N1", (0x41, 0xD40): "Neoverse-V1", (0x41, 0xD49): "Neoverse-N2",
    (0x41, 0xD4F): "Neoverse-V2", (0x41, 0xD8E): "Neoverse-N3", (0x41, 0xD84): "Neoverse-V3",
    (0x41, 0xD08): "Cortex-A72", (0x41, 0xD0B): "Cortex-A76", (0xC0, 0xAC3): "Ampere-1",
    (0xC0, 0xAC4): "Ampere-1a", (0x48, 0xD01): "Kunpeng-920",
}


@dataclass
class CPUInfo:
    model_name: str = ""
    vendor_id: str = ""
    logical_cpus: int = 0
    # None when cpuinfo has no "physical id" lines (arm64, some VMs): sockets unknown.
    sockets: int | None = None
    # Sum over distinct `physical id` of `siblings` (else `cpu cores`); None when cpuinfo has neither.
    host_logical_cpus: int | None = None
    warnings: list[str] = field(default_factory=list)


def _int(value: str) -> int | None:
    try:
        return int(value, 0)
    except ValueError:
        return None


def _small_int(value: str) -> bool:
    """A count as the kernel writes it: ASCII digits only (``'²'.isdigit()`` is true) and short."""
    return value.isascii() and value.isdigit() and len(value) < 10


def parse_cpuinfo(text: str) -> CPUInfo:
    info = CPUInfo()
    physical_ids: set[str] = set()
    # Per package: the first `siblings` / `cpu cores` seen in one of its processor blocks.
    siblings: dict[str, int] = {}
    cores: dict[str, int] = {}
    current_id: str | None = None
    implementer: int | None = None
    part: int | None = None
    for raw in text.splitlines():
        key, sep, value = raw.partition(":")
        if not sep:
            continue
        key = key.strip().lower()
        value = value.strip()
        if key == "processor" and _small_int(value):
            info.logical_cpus += 1
            current_id = None
        elif key == "model name" and value and not info.model_name:
            info.model_name = value
        elif key == "vendor_id" and value and not info.vendor_id:
            info.vendor_id = value
        elif key == "physical id" and value:
            physical_ids.add(value)
            current_id = value
        elif key in ("siblings", "cpu cores") and current_id is not None and _small_int(value):
            # Both follow `physical id` within a block on x86 (the kernel's show_cpuinfo order).
            (siblings if key == "siblings" else cores).setdefault(current_id, int(value))
        elif key == "cpu implementer" and implementer is None:
            implementer = _int(value)
        elif key == "cpu part" and part is None:
            part = _int(value)
    if physical_ids:
        info.sockets = len(physical_ids)
    if siblings:
        info.host_logical_cpus = sum(siblings.values())
    elif cores:
        info.host_logical_cpus = sum(cores.values())
    if not info.model_name and implementer is not None:
        vendor = ARM_IMPLEMENTERS.get(implementer, f"implementer 0x{implementer:02x}")
        core = ARM_PARTS.get((implementer, part or -1), f"part 0x{part:03x}" if part is not None else "")
        info.model_name = f"{vendor} {core}".strip()
        if not info.vendor_id:
            info.vendor_id = vendor
    if info.logical_cpus == 0:
        info.warnings.append("cpuinfo: no 'processor' entries")
    if not info.model_name:
        info.warnings.append("cpuinfo: no 'model name'")
    return info


def normalize_vendor(value: str) -> str:
    """NFD and cpuinfo spell vendors differently; publish the cpuid vendor string."""
    upper = value.strip().upper()
    if upper in ("AMD", "AUTHENTICAMD"):
        return "AuthenticAMD"
    if upper in ("INTEL", "GENUINEINTEL"):
        return "GenuineIntel"
    return value.strip()
