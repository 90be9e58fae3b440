"""nvidia-smi clock output: the supported range per board and whether a lock limits it."""

from joulie_agent.discovery.gpuclocks import (
    ClockRange,
    LockReading,
    amd_range,
    amdsmi_lock_argv,
    amdsmi_lock_failed,
    nvidia_lock_argv,
    nvidia_unlock_argv,
    parse_amd_od_range,
    parse_amdsmi_clocks,
    parse_nvidia_clocks,
)

CLOCKS = "0, 00000000:10:00.0, 1980, Active\n1, 00000000:11:00.0, 1980, Not Active\n2, 00000000:12:00.0, [N/A], [N/A]\n"
SUPPORTED = (
    "".join(f"00000000:1{i}:00.0, {c}\n" for i in (0, 1) for c in (1980, 1965, 345)) + "00000000:12:00.0, [N/A]\n"
)


def test_each_board_has_its_supported_clocks_and_lock_reading_by_index() -> None:
    r = parse_nvidia_clocks(CLOCKS, SUPPORTED)
    assert r.ranges == {0: ClockRange(0, (345, 1965, 1980)), 1: ClockRange(1, (345, 1965, 1980))}
    assert r.readings == {0: LockReading(0, limited=True), 1: LockReading(1, limited=False), 2: LockReading(2)}
    assert r.warnings == []


def test_without_the_supported_clocks_only_the_readings_and_garbage_lines_are_named() -> None:
    r = parse_nvidia_clocks("0, 00000000:10:00.0, 1980\nx, 00000000:11:00.0, 1980, Active\n", None)
    assert r.ranges == {} and r.readings == {}
    assert r.warnings == [
        "nvidia-smi clocks: line 1: expected 4 fields, got 3: '0, 00000000:10:00.0, 1980'",
        "nvidia-smi clocks: index 'x' is not an integer",
    ]


def test_the_lock_is_a_range_from_the_boards_lowest_clock_one_call_for_several_boards() -> None:
    assert nvidia_lock_argv([0, 1, 2], 345, 1500) == ["nvidia-smi", "-i", "0,1,2", "-lgc", "345,1500"]
    assert nvidia_unlock_argv([3]) == ["nvidia-smi", "-i", "3", "-rgc"]


# amdgpu's pp_od_clk_voltage on a locked board: OD_SCLK says the lock, OD_RANGE what OverDrive accepts.
OD_LOCKED = (
    "OD_SCLK:\n0: 500Mhz\n1: 1500Mhz\nOD_MCLK:\n1: 1300MHz\n"
    "OD_RANGE:\nSCLK:     500Mhz       2100Mhz\nMCLK:     1300Mhz       1300Mhz\n"
)


def test_the_amd_range_is_the_od_range_whatever_the_board_is_locked_at() -> None:
    assert parse_amd_od_range(OD_LOCKED) == (500, 2100)
    r = amd_range(3, OD_LOCKED)
    assert r is not None and (r.index, r.min_mhz, r.max_mhz, len(r.clocks_mhz)) == (3, 500, 2100, 1601)
    # The soft limits alone (no OD_RANGE section) say nothing about the range.
    assert parse_amd_od_range("OD_SCLK:\n0: 500Mhz\n1: 1500Mhz\n") is None
    assert amd_range(0, "s 1 1500\n") is None


def test_amd_smi_clock_readings_are_the_gfx_soft_maximum_by_index() -> None:
    text = (
        '{"gpu_data": [{"gpu": 0, "clock": {"gfx_0": {"clk": "N/A", "min_clk": {"value": 500, "unit": "MHz"}, '
        '"max_clk": {"value": 1500, "unit": "MHz"}}}}, {"gpu": 1, "clock": {"gfx_0": {"max_clk": "N/A"}}}]}'
    )
    r = parse_amdsmi_clocks(text)
    assert r.readings == {0: LockReading(0, max_mhz=1500), 1: LockReading(1)} and r.warnings == []
    bad = parse_amdsmi_clocks("Traceback")
    assert bad.readings == {} and bad.warnings[0].startswith("amd-smi metric --clock: output is not JSON")


def test_amd_smi_lock_argv_and_its_exit_0_failures_are_named() -> None:
    assert amdsmi_lock_argv([0, 2], 1500) == ["amd-smi", "set", "-g", "0", "2", "-L", "sclk", "max", "1500"]
    ok = "GPU: 0\n    CLK_LIMIT: Successfully changed max of sclk to 1500MHz\nGPU: 2\n    CLK_LIMIT: Clock limit is already set to 1500MHz\n"
    assert amdsmi_lock_failed(ok) == ""
    bad = "GPU: 0\n    CLK_LIMIT: Cannot set sclk max value less than min (500MHz)\n"
    assert amdsmi_lock_failed(bad) == "Cannot set sclk max value less than min (500MHz)"
