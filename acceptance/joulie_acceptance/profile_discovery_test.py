"""The agent's discovery on the four profiles of the seed's cluster (issue 22): the Xeon Gold 6530 host
with RAPL, the EPYC 9534 host with energy counters only, the H100 SXM 4-GPU and the L40S 4-GPU nodes.

Each profile is rendered by the real emulator and discovered by the real agent (with fakesmi as its
``nvidia-smi``): the test pins what a user reads in ``NodeHardware.status`` — vendor, catalog key,
sockets, whether CPU/GPU caps can be enforced, the cap range the policies will use, the GPU count.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from joulie_acceptance.harness import Bench
from joulie_hwprofiles.schema import builtin_profile


def _discover(tmp_path: Path, name: str) -> dict[str, object]:
    b = Bench(tmp_path, builtin_profile(name))
    b.load(cpu=0.5, gpu=0.5)
    b.advance(1)
    b.reconcile()
    status = b.hardware.model_dump(by_alias=True, exclude_none=True, mode="json")
    print(f"{name}: {json.dumps(status, sort_keys=True)}")  # shown with -s: the status as published
    return status


def test_xeon_6530_host_is_discovered_with_rapl_and_a_270_w_per_socket_range(tmp_path: Path) -> None:
    st = _discover(tmp_path, "intel-xeon-6530-2s-rapl")
    cpu = st["cpu"]
    assert isinstance(cpu, dict)
    assert (cpu["vendor"], cpu["model"], cpu["sockets"], cpu["totalCores"]) == ("GenuineIntel", "INTEL_XEON_GOLD_6530", 2, 128)
    assert cpu["controlAvailable"] is True and cpu["telemetryAvailable"] is True
    assert cpu["driverFamily"] == "intel_pstate"
    assert cpu["capRange"]["maxWattsPerSocket"] == 270
    assert st["gpu"]["count"] == 0  # type: ignore[index]


def test_epyc_9534_energy_only_host_has_telemetry_but_no_cpu_cap_control(tmp_path: Path) -> None:
    st = _discover(tmp_path, "amd-epyc-9534-2s-energy-only")
    cpu = st["cpu"]
    assert isinstance(cpu, dict)
    assert (cpu["vendor"], cpu["model"], cpu["sockets"], cpu["totalCores"]) == ("AuthenticAMD", "AMD_EPYC_9534", 2, 256)
    # Energy counters present (telemetry); no powercap constraint, so the cap range published is the
    # hardware catalog's (cTDP 240-300 W, issue 21: headroom and a place in the power budget) and says
    # so; the CPU is still capped through the acpi-cpufreq P-state table (DVFS) only.
    assert cpu["telemetryAvailable"] is True
    assert cpu["capRange"] == {"type": "package", "minWattsPerSocket": 240.0, "maxWattsPerSocket": 300.0}
    assert st["inventoryResolution"]["catalogFacts"] == ["cpu.capRange"]  # type: ignore[index]
    assert cpu["driverFamily"] == "acpi-cpufreq"
    assert cpu["landmarks"] == {"maxBoostMHz": 2450.0, "minFreqMHz": 1500.0}
    assert st["capabilities"]["cpuTelemetry"] is True  # type: ignore[index]


def test_h100_sxm_4gpu_node_has_four_boards_with_a_200_to_700_w_range(tmp_path: Path) -> None:
    st = _discover(tmp_path, "nvidia-h100-sxm-4gpu")
    gpu = st["gpu"]
    assert isinstance(gpu, dict)
    assert (gpu["vendor"], gpu["model"], gpu["count"]) == ("nvidia", "NVIDIA_H100_SXM", 4)
    assert gpu["controlAvailable"] is True and gpu["telemetryAvailable"] is True
    assert (gpu["capRangePerGpu"]["minWatts"], gpu["capRangePerGpu"]["maxWatts"]) == (200, 700)
    assert st["cpu"]["model"] == "INTEL_XEON_GOLD_6530"  # type: ignore[index]


def test_l40s_4gpu_node_has_four_boards_with_a_100_to_350_w_range_on_an_energy_only_host(tmp_path: Path) -> None:
    st = _discover(tmp_path, "nvidia-l40s-4gpu")
    gpu = st["gpu"]
    assert isinstance(gpu, dict)
    assert (gpu["vendor"], gpu["model"], gpu["count"]) == ("nvidia", "NVIDIA_L40S", 4)
    assert gpu["controlAvailable"] is True
    assert (gpu["capRangePerGpu"]["minWatts"], gpu["capRangePerGpu"]["maxWatts"]) == (100, 350)
    assert st["cpu"]["model"] == "AMD_EPYC_9534"  # type: ignore[index]
    assert st["cpu"]["capRange"]["maxWattsPerSocket"] == 300.0  # type: ignore[index]  # the catalog's (issue 21)


@pytest.mark.parametrize("name", ["intel-xeon-6530-2s-rapl", "amd-epyc-9534-2s-energy-only",
                                  "nvidia-h100-sxm-4gpu", "nvidia-l40s-4gpu"])
def test_discovery_quality_has_no_warnings(tmp_path: Path, name: str) -> None:
    st = _discover(tmp_path, name)
    assert st["quality"]["warnings"] == [], st["quality"]  # type: ignore[index]
