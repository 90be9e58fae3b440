import json

import pytest

from joulie_simhw.gpustate import (
    GpuDevice,
    GpuState,
    StateFormatError,
    ToolsManifest,
    amd_od_file,
    format_locked_clocks,
    nvml_locked_clocks_file,
    parse_locked_clocks,
)
from joulie_simhw.record import replace


def _device() -> GpuDevice:
    return GpuDevice(
        index=0, name="Tesla T4", uuid="GPU-1", pci_bus_id="00000000:10:00.0", min_limit_w=60, max_limit_w=70,
        default_limit_w=70, limit_w=70, enforced_limit_w=70, draw_w=9.97, util_pct=0, energy_mj=0,
        field_tokens={"power.min_limit": "[N/A]"},
    )


def test_gpu_state_round_trips_through_json() -> None:
    state = GpuState(vendor="nvidia", driver_version="590.48.01", persistence_mode=True, gpus=(_device(),))
    assert GpuState.from_json(state.to_json()) == state


def test_a_state_file_of_another_schema_version_is_refused_with_the_field() -> None:
    with pytest.raises(StateFormatError, match=r"gpus.json: schemaVersion: got 2, expected 1"):
        GpuState.from_json('{"schemaVersion": 2}')


def test_tools_manifest_keeps_variants_and_requirements() -> None:
    m = ToolsManifest(tools={"rocm-smi": "current"}, requires={"rocm-smi": ("/usr/bin/python3",)})
    assert ToolsManifest.from_json(m.to_json()) == m


def test_a_state_file_without_the_clock_fields_reads_as_unlocked_with_no_supported_range() -> None:
    # gpus.json written before the SM clock lock existed: the board has no known range and no lock.
    state = GpuState(vendor="nvidia", driver_version="590.48.01", persistence_mode=True, gpus=(_device(),))
    raw = json.loads(state.to_json())
    for k in ("sm_clock_min_mhz", "sm_clock_max_mhz", "locked_max_mhz"):
        del raw["gpus"][0][k]
    g = GpuState.from_json(json.dumps(raw)).gpus[0]
    assert (g.sm_clock_min_mhz, g.sm_clock_max_mhz, g.locked_max_mhz) == (0, 0, None)


def test_a_locked_board_round_trips_and_its_lock_file_reads_back() -> None:
    g = replace(_device(), sm_clock_min_mhz=345, sm_clock_max_mhz=1980, locked_max_mhz=1500)
    state = GpuState(vendor="nvidia", driver_version="590.48.01", persistence_mode=True, gpus=(g,))
    assert GpuState.from_json(state.to_json()).gpus[0].locked_max_mhz == 1500
    assert nvml_locked_clocks_file(3) == "nvml/gpu3/locked_clocks_mhz"
    assert parse_locked_clocks(format_locked_clocks((345, 1500))) == (345, 1500)
    assert parse_locked_clocks(format_locked_clocks(None)) is None
    with pytest.raises(ValueError, match="is not MIN,MAX"):
        parse_locked_clocks("1500\n")


def test_the_amd_overdrive_table_sits_in_the_pci_device_directory_of_the_hwmon() -> None:
    hwmon = "devices/pci0000:00/0000:00:01.0/0000:10:00.0/hwmon/hwmon3"
    assert amd_od_file(hwmon) == "devices/pci0000:00/0000:00:01.0/0000:10:00.0/pp_od_clk_voltage"
