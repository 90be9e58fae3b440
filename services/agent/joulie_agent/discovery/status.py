"""Discovery: host facts → NodeHardware.status. Pure: the shell (`hostread`) collects the facts.

Where this differs from the Go original (reference §1.3, defects D8/D9/D11/D16):
- vendor falls back to /proc/cpuinfo `vendor_id` when NFD is absent (D9);
- NFD accelerator class `pci-1200_<vendor>` and the AMD labeller's `amd.com/gpu.product-name`
  count (D8);
- psys and intel-rapl-mmio are not sockets; the cap range is per socket over its die zones (D11);
- `[N/A]` GPU limits are unknown, not 0 (D16);
- `cpu.telemetryAvailable` is true only when a package energy counter is readable;
- `totalCores` is the host's logical CPU count (`host_cores`): the sum of `siblings` (else
  `cpu cores`) per `physical id` when larger than the cpuinfo `processor` blocks; without package
  fields, the Node's `capacity.cpu` when larger; so a trimmed or containerised cpuinfo does not
  shrink the node (issue 21). The allocatable `cpu` counts only when none of those is known (it is
  reduced by reservations).
- `gpu.currentCapWatts` is absent when the node has no GPU or the cap is unknown; it is never 0
  as a stand-in for "no GPU" (the original wrote 0). The CRD's description says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from joulie_agent.discovery import cpufreq, powercap
from joulie_agent.discovery.catalog import Catalog
from joulie_agent.discovery.cpuinfo import CPUInfo, normalize_vendor, parse_cpuinfo
from joulie_agent.discovery.gputools import Inventory
from joulie_api.generated.nodehardware import (
    CPUCapRange,
    CPUFrequencyLandmarks,
    CPUHardware,
    DiscoveryQuality,
    GPUCapRange,
    GPUHardware,
    HardwareCapabilities,
    HardwareCatalogKey,
    InventoryExactness,
    InventoryResolution,
    NodeHardwareStatus,
)
from joulie_api.names import (
    LABEL_AMD_GPU_FAMILY,
    LABEL_AMD_GPU_PRODUCT,
    LABEL_GPU_PRODUCT,
    LABEL_HW_CPU_SOCKETS,
    LABEL_NFD_CPU_MODEL,
    LABEL_NFD_CPU_SOCKETS,
    LABEL_NVIDIA_GPU_PRODUCT,
)
from joulie_api.quantity import QuantityError, parse_quantity

LABEL_NFD_CPU_VENDOR = "feature.node.kubernetes.io/cpu-vendor"
LABEL_NFD_CPU_VENDOR_ID = "feature.node.kubernetes.io/cpu-model.vendor_id"
LABEL_AMD_GPU_PRODUCT_NAME = "amd.com/gpu.product-name"
PCI_VENDORS = {"10de": "nvidia", "1002": "amd", "8086": "intel"}
# Display (0300, 0302) and processing accelerator (1200) classes; the original ignored 1200 (D8).
PCI_GPU_CLASSES = ("", "0300_", "0302_", "1200_")
GPU_RESOURCE_NAMES = ("nvidia.com/gpu", "nvidia.com/gpu.shared", "amd.com/gpu", "gpu.intel.com/i915")

WARN_CPU_MODEL = "cpu model not recognized"
WARN_GPU_MODEL = "gpu model not recognized"


@dataclass
class HostFacts:
    """Everything discovery reads from a node; None/empty means absent."""

    cpuinfo_text: str | None = None
    zones: list[powercap.Zone] = field(default_factory=list)
    policies: list[cpufreq.Policy] = field(default_factory=list)
    nvidiactl: bool = False
    gpu: Inventory | None = None
    labels: dict[str, str] = field(default_factory=dict)
    allocatable: dict[str, str] = field(default_factory=dict)
    # The Node's status.capacity (unreduced by reservations); empty when unknown.
    capacity: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def lost_facts(before: HostFacts, now: HostFacts) -> str:
    """What a rediscovery lost that the last good one read ("" when nothing): the files and tools
    of a node do not go away at runtime, so losing them is a failed read (a simulator outage
    under FUSE, a wedged driver), not new hardware (issue 23: such a rediscovery replaced good
    facts with "cpuinfo unreadable")."""
    lost: list[str] = []
    if before.cpuinfo_text is not None and now.cpuinfo_text is None:
        lost.append("/proc/cpuinfo unreadable")
    if before.zones and not now.zones:
        lost.append(f"no powercap zone readable ({len(before.zones)} before)")
    if before.policies and not now.policies:
        lost.append(f"no cpufreq policy readable ({len(before.policies)} before)")
    had_gpus = len(before.gpu.devices) if before.gpu else 0
    if had_gpus and not (now.gpu and now.gpu.devices):
        lost.append(f"no GPU answered ({had_gpus} before)")
    return "; ".join(lost)


def quantity_to_int(value: str) -> int | None:
    """A whole Kubernetes quantity ("8", "8000m"); None when not a whole count."""
    try:
        count = parse_quantity(value)
    except QuantityError:
        return None
    return int(count) if count.is_integer() else None


def is_gpu_resource(name: str) -> bool:
    return name in GPU_RESOURCE_NAMES or name.endswith("/gpu") or name.startswith("nvidia.com/mig-")


def allocatable_gpus(allocatable: dict[str, str]) -> int:
    total = 0
    for name, qty in allocatable.items():
        if is_gpu_resource(name):
            total += quantity_to_int(str(qty)) or 0
    return total


def nfd_gpu_vendors(labels: dict[str, str]) -> list[str]:
    found: list[str] = []
    for hex_id, vendor in PCI_VENDORS.items():
        for cls in PCI_GPU_CLASSES:
            if labels.get(f"feature.node.kubernetes.io/pci-{cls}{hex_id}.present") == "true" and vendor not in found:
                found.append(vendor)
    return found


def expected_gpu_vendor(labels: dict[str, str], nvidiactl: bool) -> str:
    """The GPU vendor the node's labels or device files point to: nvidia, amd or ""."""
    vendors = [v for v in nfd_gpu_vendors(labels) if v in ("nvidia", "amd")]
    if vendors:
        return vendors[0]
    if nvidiactl:
        return "nvidia"
    if any(k.startswith("amd.com/gpu") for k in labels):
        return "amd"
    return ""


def allocatable_gpu_vendor(allocatable: dict[str, str]) -> str:
    for name, qty in allocatable.items():
        if is_gpu_resource(name) and (quantity_to_int(str(qty)) or 0) > 0:
            return {"nvidia.com": "nvidia", "amd.com": "amd", "gpu.intel.com": "intel"}.get(name.split("/")[0], "")
    return ""


def host_cores(info: CPUInfo, capacity: dict[str, str], allocatable: dict[str, str]) -> tuple[int, list[str]]:
    """The host's logical CPU count and the warnings explaining where a partial cpuinfo was overruled.

    Per-package `siblings` speak for the whole host even in a trimmed cpuinfo, so they win; the
    Node's capacity.cpu is used only when cpuinfo states no packages (or nothing at all).
    """
    listed = info.logical_cpus
    host = info.host_logical_cpus or 0
    capacity_cpu = quantity_to_int(capacity.get("cpu", "")) or 0
    warnings: list[str] = []
    if host:
        best = max(listed, host)
        if best > listed:
            warnings.append(f"cpuinfo lists {listed} processors but siblings per physical id gives {best}: "
                            "cpuinfo is partial")
        if capacity_cpu and capacity_cpu != best:
            warnings.append(f"Node capacity.cpu {capacity_cpu} differs from cpuinfo's {best}; cpuinfo kept")
        return best, warnings
    if listed and capacity_cpu > listed:
        warnings.append(f"cpuinfo lists {listed} processors but Node capacity.cpu gives {capacity_cpu}: "
                        "cpuinfo is partial")
        return capacity_cpu, warnings
    if listed or capacity_cpu:
        return listed or capacity_cpu, warnings
    return quantity_to_int(allocatable.get("cpu", "")) or 0, warnings


CATALOG_CPU_CAP = "cpu.capRange"
CATALOG_GPU_CAP = "gpu.capRangePerGpu"


def _cpu(facts: HostFacts, info: CPUInfo, catalog: Catalog) -> tuple[CPUHardware, str, str, list[str]]:
    labels = facts.labels
    warnings = list(info.warnings)
    raw_model = labels.get(LABEL_NFD_CPU_MODEL, "").strip() or info.model_name
    vendor_label = labels.get(LABEL_NFD_CPU_VENDOR) or labels.get(LABEL_NFD_CPU_VENDOR_ID) or ""
    vendor = normalize_vendor(vendor_label or info.vendor_id)

    sockets: int | None = None
    for key in (LABEL_NFD_CPU_SOCKETS, LABEL_HW_CPU_SOCKETS):
        if labels.get(key):
            sockets = quantity_to_int(labels[key])
            if sockets is None or sockets < 1:
                warnings.append(f"label {key}={labels[key]!r} is not a positive integer")
                sockets = None
            else:
                break
    if sockets is None:
        sockets = info.sockets
    if sockets is None:
        pkg_indexes = {z.package_index for z in powercap.package_zones(facts.zones)}
        sockets = len(pkg_indexes) or 1
    total, core_warnings = host_cores(info, facts.capacity, facts.allocatable)
    warnings += core_warnings

    cap_range = powercap.socket_cap_range_w(facts.zones)
    writable_pl1 = [z for z in powercap.package_zones(facts.zones)
                    if (c := z.long_term()) is not None and c.limit_is_file]
    driver = next((p.driver for p in sorted(facts.policies, key=lambda p: p.index) if p.driver), "")
    dvfs = bool(cpufreq.controllable(facts.policies))
    marks = cpufreq.landmarks(facts.policies)
    res = catalog.resolve_cpu(raw_model)
    if raw_model and res.exactness != "exact":
        warnings.append(WARN_CPU_MODEL)
    from_catalog: list[str] = []
    published = catalog.cpu_facts.get(res.key) if res.exactness == "exact" else None
    if cap_range is None and not writable_pl1 and published is not None and published.cap_max_w is not None:
        # No RAPL constraint to take a range from (energy counters only, perhaps DVFS): the datasheet's
        # range gives the node a headroom and a place in the power budget (issue 21). Control never
        # uses it (cpucontrol.published_cap_range_w skips catalog facts), so a percent cap stays a
        # percent for DVFS to interpret, as without the range.
        cap_range = (published.cap_min_w or 0.0, published.cap_max_w)
        from_catalog.append(CATALOG_CPU_CAP)
    cpu = CPUHardware(
        raw_model=raw_model,
        model=res.key if res.exactness == "exact" else "",
        vendor=vendor,
        sockets=sockets,
        total_cores=total,
        cores_per_socket=total // sockets if sockets else 0,
        driver_family=driver,
        cap_range=CPUCapRange(type="package", min_watts_per_socket=cap_range[0], max_watts_per_socket=cap_range[1])
        if cap_range else None,
        landmarks=CPUFrequencyLandmarks(min_freq_m_hz=marks.min_mhz, nominal_freq_m_hz=marks.nominal_mhz,
                                        max_boost_m_hz=marks.max_boost_mhz) if marks else None,
        control_available=bool(writable_pl1) or dvfs,
        telemetry_available=bool(powercap.energy_zones(facts.zones)),
        warnings=warnings,
    )
    return cpu, res.key, res.exactness, from_catalog


def _gpu(facts: HostFacts, catalog: Catalog) -> tuple[GPUHardware, str, str, list[str]]:
    labels = facts.labels
    inv = facts.gpu
    warnings: list[str] = list(inv.warnings) if inv else []
    devices = inv.devices if inv else []
    count = len(devices) or allocatable_gpus(facts.allocatable)
    vendor = inv.vendor if inv and devices else (
        expected_gpu_vendor(labels, facts.nvidiactl) or allocatable_gpu_vendor(facts.allocatable) or "none")
    label_model = next((labels[k].strip() for k in (LABEL_GPU_PRODUCT, LABEL_NVIDIA_GPU_PRODUCT,
                                                      LABEL_AMD_GPU_PRODUCT_NAME, LABEL_AMD_GPU_PRODUCT,
                                                      LABEL_AMD_GPU_FAMILY) if labels.get(k, "").strip()), "")
    first = devices[0] if devices else None
    raw_model = (first.name if first and first.name else "") or (label_model if count else "")
    # A cap range is only published when every device states both bounds and they agree.
    bounds = {(d.min_w, d.max_w) for d in devices}
    cap_known = bool(devices) and all(mn is not None and mx is not None and mx > 0 for mn, mx in bounds)
    if devices and not cap_known:
        warnings.append("gpu power limits unknown; GPU caps in percent cannot be resolved")
    elif len(bounds) > 1:
        warnings.append("gpus report different power limit ranges; the range of gpu "
                        f"{first.index if first else 0} is published")
    res = catalog.resolve_gpu(raw_model) if count else catalog.resolve_gpu("")
    if count and raw_model and res.exactness != "exact":
        warnings.append(WARN_GPU_MODEL)
    cap_range: GPUCapRange | None = None
    if cap_known and first:
        cap_range = GPUCapRange(min_watts=first.min_w, max_watts=first.max_w,
                                default_watts=first.default_w if first.default_w is not None else first.max_w)
    from_catalog: list[str] = []
    published = catalog.gpu_facts.get(res.key) if count and res.exactness == "exact" else None
    if cap_range is None and published is not None and published.cap_max_w is not None:
        # e.g. an MI300X behind a rocm-smi that reports no range: the range is the datasheet's, and
        # control stays off (nothing verified the tools can set it).
        cap_range = GPUCapRange(min_watts=published.cap_min_w, max_watts=published.cap_max_w,
                                default_watts=published.tdp_w or published.cap_max_w)
        from_catalog.append(CATALOG_GPU_CAP)
    gpu = GPUHardware(
        present=True if count else None,
        raw_model=raw_model,
        model=res.key if res.exactness == "exact" else "",
        vendor=vendor if count else "none",
        count=count,
        cap_range_per_gpu=cap_range,
        # Unknown stays unset: 0 W would read as "capped to nothing" (as for [N/A] limits, D16).
        current_cap_watts=first.current_cap_w if first else None,
        control_available=cap_known,
        telemetry_available=bool(devices) or count > 0 and bool(inv),
        warnings=warnings,
    )
    exactness = res.exactness if count else "generic"
    return gpu, res.key if count else "", exactness, from_catalog


def build_status(facts: HostFacts, catalog: Catalog) -> NodeHardwareStatus:
    """The NodeHardware status for these facts (updatedAt left to the writer)."""
    info = parse_cpuinfo(facts.cpuinfo_text) if facts.cpuinfo_text is not None else CPUInfo(
        warnings=["cpuinfo: /proc/cpuinfo unreadable"])
    cpu, cpu_key, cpu_exact, cpu_catalog = _cpu(facts, info, catalog)
    gpu, gpu_key, gpu_exact, gpu_catalog = _gpu(facts, catalog)
    cpu_matched = cpu_exact == "exact"
    gpu_ok = not gpu.count or gpu_exact == "exact"
    overall: Literal["exact", "heuristic", "unavailable"]
    if cpu_matched and gpu_ok:
        overall = "exact"
    elif cpu.raw_model or gpu.raw_model:
        overall = "heuristic"
    else:
        overall = "unavailable"
    all_warnings = list(facts.warnings) + list(cpu.warnings or []) + list(gpu.warnings or [])
    return NodeHardwareStatus(
        cpu=cpu,
        gpu=gpu,
        capabilities=HardwareCapabilities(
            cpu_control=bool(cpu.control_available), cpu_telemetry=bool(cpu.telemetry_available),
            gpu_control=bool(gpu.control_available), gpu_telemetry=bool(gpu.telemetry_available)),
        inventory_resolution=InventoryResolution(
            hardware_catalog_key=HardwareCatalogKey(cpu=cpu_key, gpu=gpu_key),
            catalog_facts=(cpu_catalog + gpu_catalog) or None,
            exactness=InventoryExactness(cpu=cpu_exact if cpu.raw_model else "generic", gpu=gpu_exact)),  # type: ignore[arg-type]
        quality=DiscoveryQuality(overall=overall, warnings=all_warnings),
    )


def status_document(status: NodeHardwareStatus) -> dict[str, object]:
    """The status as the CRD spells it, without updatedAt (the golden and `discover` format)."""
    doc = status.model_dump(mode="json", by_alias=True, exclude_none=True)
    doc.pop("updatedAt", None)
    return doc


def status_json(status: NodeHardwareStatus) -> str:
    import json

    return json.dumps(status_document(status), indent=2, sort_keys=True) + "\n"
