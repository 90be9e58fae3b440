"""Board signals from nvidia-smi and dcgmi output, and boards matched to Pods by GPU UUID."""

from joulie_agent.discovery.gpuactivity import (
    BoardActivity,
    BoardHolder,
    DeviceHolder,
    boards_held,
    parse_dcgmi_dmon,
    parse_nvidia_activity,
    with_dcgm,
)

UUID0 = "GPU-4d2e8a4b-0f57-5c64-1b3e-7f2f0e9d1a00"
UUID1 = "GPU-9a1c3e77-2b0d-4e1f-8a6c-55d0c4b7e201"
BOARDS = [BoardActivity(0, UUID0), BoardActivity(1, UUID1)]


def test_nvidia_rows_give_ratio_utilisation_and_clocks_and_tokens_stay_unknown() -> None:
    out = parse_nvidia_activity(f"0, {UUID0}, 97, 1410, 1980\n1, {UUID1}, [N/A], [N/A], 1980\nx, y\n")
    assert out.boards == [BoardActivity(0, UUID0, 0.97, 1410.0, 1980.0), BoardActivity(1, UUID1, None, None, 1980.0)]
    assert out.warnings == ["nvidia-smi activity: line 3: expected 5 fields, got 2: 'x, y'"]


DMON = """#Entity   SMACT        TENSO        DRAMA
ID
GPU 1     0.812        N/A          0.433
GPU 0     0.000        0.000        1.700
"""


def test_dcgmi_dmon_columns_by_header_and_na_or_out_of_range_unknown() -> None:
    dcgm, warnings = parse_dcgmi_dmon(DMON)
    assert warnings == []
    assert dcgm == {1: {"sm": 0.812, "tensor": None, "dram": 0.433}, 0: {"sm": 0.0, "tensor": 0.0, "dram": None}}
    merged = with_dcgm(BOARDS, dcgm)
    assert (merged[1].sm_active, merged[1].tensor_active, merged[1].dram_active) == (0.812, None, 0.433)
    # Another field order reads by the header, not the position.
    swapped, _ = parse_dcgmi_dmon("#Entity DRAMA SMACT\nID\nGPU 0 0.25 0.5\n")
    assert swapped == {0: {"dram": 0.25, "sm": 0.5}}


def test_dcgmi_output_without_header_is_a_warning_not_numbers() -> None:
    dcgm, warnings = parse_dcgmi_dmon("Error: unable to establish a connection to the specified host: localhost\n")
    assert dcgm == {} and warnings and "no #Entity header" in warnings[0]


def test_devices_map_to_boards_by_uuid_case_and_time_slicing_replicas() -> None:
    holders = [
        DeviceHolder("ml", "train-0", "main", "nvidia.com/gpu", (UUID1.lower(),)),
        DeviceHolder("ml", "infer-a", "srv", "nvidia.com/gpu", (f"{UUID0}::0",)),
        DeviceHolder("ml", "infer-b", "srv", "nvidia.com/gpu", (f"{UUID0}::1",)),
        DeviceHolder("net", "dpdk", "c", "intel.com/sriov", ("0000:3b:00.1",)),
    ]
    held, warnings = boards_held(holders, BOARDS)
    assert held == [
        BoardHolder(0, "ml", "infer-a", "srv"),
        BoardHolder(0, "ml", "infer-b", "srv"),
        BoardHolder(1, "ml", "train-0", "main"),
    ]
    assert warnings == []


def test_unknown_or_absent_device_ids_are_warnings_never_a_guessed_board() -> None:
    holders = [
        DeviceHolder("ml", "mig", "c", "nvidia.com/gpu", ("MIG-1b2c3d4e-aaaa-bbbb-cccc-000000000000",)),
        DeviceHolder("ml", "idx", "c", "nvidia.com/gpu", ("0",)),  # a plugin set to index IDs
    ]
    held, warnings = boards_held(holders, BOARDS)
    assert held == []
    assert len(warnings) == 2 and "ml/mig (c)" in warnings[0] and "matches no GPU UUID" in warnings[1]
    # A tool that reported no UUID (absent) maps nothing either.
    held, warnings = boards_held([DeviceHolder("ml", "p", "c", "nvidia.com/gpu", (UUID0,))], [BoardActivity(0)])
    assert held == [] and len(warnings) == 1
