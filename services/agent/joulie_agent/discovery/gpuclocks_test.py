"""nvidia-smi clock output: the supported range per board and whether a lock limits it."""

from joulie_agent.discovery.gpuclocks import (
    ClockRange,
    LockReading,
    nvidia_lock_argv,
    nvidia_unlock_argv,
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
