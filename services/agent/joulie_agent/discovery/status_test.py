"""Discovery from host facts: the host's core count from partial cpuinfo, and the GPU-less cap rule."""

from joulie_agent.discovery.catalog import load_catalog
from joulie_agent.discovery.cpuinfo import parse_cpuinfo
from joulie_agent.discovery.gputools import GPUDevice, Inventory
from joulie_agent.discovery.status import HostFacts, build_status, host_cores, status_document

CATALOG = load_catalog()


def cpuinfo(blocks: int, pkgs: int = 2, siblings: int | None = None) -> str:
    extra = f"siblings\t: {siblings}\n" if siblings is not None else ""
    return "".join(f"processor\t: {k}\nvendor_id\t: GenuineIntel\nmodel name\t: Xeon X\nphysical id\t: {k % pkgs}\n{extra}\n"
                   for k in range(blocks))


def test_full_cpuinfo_counts_its_processor_blocks() -> None:
    assert host_cores(parse_cpuinfo(cpuinfo(16, siblings=8)), {}, {"cpu": "14"}) == (16, [])


def test_partial_cpuinfo_is_overruled_by_siblings_per_physical_id() -> None:
    total, warnings = host_cores(parse_cpuinfo(cpuinfo(4, siblings=96)), {}, {})
    assert total == 192
    assert warnings == ["cpuinfo lists 4 processors but siblings per physical id gives 192: cpuinfo is partial"]


def test_siblings_win_over_a_disagreeing_node_capacity() -> None:
    total, warnings = host_cores(parse_cpuinfo(cpuinfo(8, siblings=4)), {"cpu": "1000"}, {})
    assert total == 8 and warnings == ["Node capacity.cpu 1000 differs from cpuinfo's 8; cpuinfo kept"]


def test_partial_cpuinfo_without_siblings_is_overruled_by_node_capacity() -> None:
    total, warnings = host_cores(parse_cpuinfo(cpuinfo(4)), {"cpu": "64"}, {"cpu": "62"})
    assert total == 64 and "Node capacity.cpu gives 64" in warnings[0]


def test_no_cpuinfo_falls_back_to_capacity_then_allocatable() -> None:
    empty = parse_cpuinfo("")
    assert host_cores(empty, {"cpu": "32"}, {"cpu": "30"}) == (32, [])
    assert host_cores(empty, {}, {"cpu": "30"}) == (30, [])
    assert host_cores(empty, {"cpu": "500m"}, {}) == (0, [])  # not a whole CPU count: unknown


def test_discovered_total_and_per_socket_cores_use_the_host_count() -> None:
    status = build_status(HostFacts(cpuinfo_text=cpuinfo(4, siblings=96), capacity={"cpu": "192"}), CATALOG)
    assert status.cpu is not None
    assert (status.cpu.total_cores, status.cpu.cores_per_socket, status.cpu.sockets) == (192, 96, 2)
    assert any("cpuinfo is partial" in w for w in status.quality.warnings or [])  # type: ignore[union-attr]


def test_a_gpu_less_node_publishes_no_current_cap_not_zero() -> None:
    doc = status_document(build_status(HostFacts(cpuinfo_text=cpuinfo(4)), CATALOG))
    gpu = doc["gpu"]
    assert isinstance(gpu, dict)
    assert "currentCapWatts" not in gpu and gpu["count"] == 0 and gpu["vendor"] == "none"


def test_a_gpu_with_an_unknown_cap_publishes_none_and_a_known_cap_publishes_it() -> None:
    unknown = Inventory(vendor="nvidia", source="nvml", devices=[GPUDevice(index=0, name="NVIDIA H100 80GB HBM3")])
    doc = status_document(build_status(HostFacts(cpuinfo_text=cpuinfo(4), gpu=unknown), CATALOG))
    assert "currentCapWatts" not in doc["gpu"]  # type: ignore[operator]
    known = Inventory(vendor="nvidia", source="nvml", devices=[GPUDevice(index=0, name="NVIDIA H100 80GB HBM3", min_w=200.0,
                                                          max_w=700.0, current_cap_w=500.0)])
    doc = status_document(build_status(HostFacts(cpuinfo_text=cpuinfo(4), gpu=known), CATALOG))
    assert doc["gpu"]["currentCapWatts"] == 500.0  # type: ignore[index]


EPYC = "AMD EPYC 9654 96-Core Processor"


def test_an_energy_only_epyc_gets_the_catalogs_cap_range_and_says_so() -> None:
    from joulie_agent.discovery import powercap

    text = "".join(f"processor\t: {k}\nvendor_id\t: AuthenticAMD\nmodel name\t: {EPYC}\nphysical id\t: {k % 2}\n"
                   f"siblings\t: 192\n\n" for k in range(384))
    # Package zones with energy counters and no constraints: no cap range from the node.
    zones = [powercap.Zone(f"intel-rapl:{i}", "intel-rapl", 1, f"package-{i}", energy_uj=0) for i in range(2)]
    status = build_status(HostFacts(cpuinfo_text=text, zones=zones), CATALOG)
    assert status.cpu is not None and status.cpu.cap_range is not None
    assert (status.cpu.cap_range.min_watts_per_socket, status.cpu.cap_range.max_watts_per_socket) == (320.0, 400.0)
    assert status.inventory_resolution is not None and status.inventory_resolution.catalog_facts == ["cpu.capRange"]
    assert status.cpu.control_available is False and status.cpu.telemetry_available is True


def test_a_gpu_without_a_reported_range_gets_the_catalogs_and_unknown_models_get_none() -> None:
    mi300x = Inventory(vendor="amd", source="rocm-smi", devices=[GPUDevice(index=i, name="AMD Instinct MI300X")
                                                                 for i in range(8)])
    status = build_status(HostFacts(cpuinfo_text=cpuinfo(4), gpu=mi300x), CATALOG)
    assert status.gpu is not None and status.gpu.cap_range_per_gpu is not None
    assert status.gpu.cap_range_per_gpu.max_watts == 750.0 and status.gpu.control_available is False
    assert status.inventory_resolution is not None and status.inventory_resolution.catalog_facts == ["gpu.capRangePerGpu"]
    odd = Inventory(vendor="amd", source="rocm-smi", devices=[GPUDevice(index=0, name="AMD Instinct MI999")])
    status = build_status(HostFacts(cpuinfo_text=cpuinfo(4), gpu=odd), CATALOG)
    assert status.gpu is not None and status.gpu.cap_range_per_gpu is None
    assert status.inventory_resolution is not None and status.inventory_resolution.catalog_facts is None
