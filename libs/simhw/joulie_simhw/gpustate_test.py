import pytest

from joulie_simhw.gpustate import GpuDevice, GpuState, StateFormatError, ToolsManifest


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
