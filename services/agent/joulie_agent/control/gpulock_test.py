"""SM clock lock plans and drift, on the clocks an H100-like board lists."""

from joulie_agent.control.gpulock import drifted, groups, holds, label, plan_clock_lock
from joulie_agent.discovery.gpuclocks import ClockRange, LockReading
from joulie_api.generated.nodetwin import GPUClockLock

CLOCKS = tuple(range(345, 1981, 15))
RANGES = {i: ClockRange(i, CLOCKS) for i in range(2)}


def test_an_absolute_lock_is_rounded_down_to_a_supported_clock_with_the_lowest_clock_as_floor() -> None:
    plan = plan_clock_lock(GPUClockLock(max_mhz=1500), [0, 1], RANGES)
    assert (plan.blocked, plan.targets, plan.floors) == ("", {0: 1500, 1: 1500}, {0: 345, 1: 345})
    plan = plan_clock_lock(GPUClockLock(max_mhz=1510), [0, 1], RANGES)
    assert plan.targets == {0: 1500, 1: 1500}  # never above what was asked


def test_a_percentage_is_of_each_boards_maximum_rounded_down() -> None:
    small = {0: ClockRange(0, CLOCKS), 1: ClockRange(1, tuple(range(210, 1411, 15)))}
    plan = plan_clock_lock(GPUClockLock(pct_of_max=70), [0, 1], small)
    # 70 % of 1980 = 1386 -> 1380; 70 % of 1410 = 987 -> 975.
    assert plan.targets == {0: 1380, 1: 975}
    assert label(plan.targets) == "975-1380 MHz"


def test_a_lock_at_the_maximum_is_no_lock() -> None:
    plan = plan_clock_lock(GPUClockLock(pct_of_max=100), [0], RANGES)
    assert plan.targets == {0: None} and label(plan.targets) == "the maximum (no lock)"


def test_a_lock_outside_the_supported_range_is_refused_naming_the_board_and_its_range() -> None:
    low = plan_clock_lock(GPUClockLock(max_mhz=200), [0, 1], RANGES)
    assert low.targets == {} and low.blocked == (
        "requested SM clock lock 200 MHz is below the lowest supported clock 345 MHz of gpu 0 (supported 345-1980 MHz)"
    )
    high = plan_clock_lock(GPUClockLock(max_mhz=2100), [0, 1], RANGES)
    assert "2100 MHz is above the highest supported clock 1980 MHz of gpu 0" in high.blocked
    pct = plan_clock_lock(GPUClockLock(pct_of_max=10), [0], RANGES)
    assert "10 % of max = 198 MHz is below the lowest supported clock 345 MHz" in pct.blocked


def test_a_board_without_supported_clocks_and_a_lock_with_both_fields_are_refused() -> None:
    assert (
        "gpu 1 reports no supported SM clocks"
        in plan_clock_lock(GPUClockLock(max_mhz=1500), [0, 1], {0: RANGES[0]}).blocked
    )
    assert plan_clock_lock(GPUClockLock(max_mhz=1500, pct_of_max=50), [0], RANGES).blocked == (
        "clockLock: set exactly one of maxMhz and pctOfMax"
    )


def test_a_board_holds_its_lock_as_it_reports_it() -> None:
    assert holds(1500, LockReading(0, limited=True)) is True
    assert holds(1500, LockReading(0, limited=False)) is False
    assert holds(None, LockReading(0, limited=False)) is True  # no lock wanted, none limiting
    assert holds(1500, LockReading(0, max_mhz=1500)) is True
    assert holds(1500, LockReading(0, max_mhz=2100)) is False
    assert holds(1500, LockReading(0)) is None and holds(1500, None) is None
    # AMD at the maximum: the soft maximum reads the board's highest clock, known from its range.
    assert holds(None, LockReading(0, max_mhz=2100), top=2100) is True
    assert holds(None, LockReading(0, max_mhz=1500), top=2100) is False
    assert holds(None, LockReading(0, max_mhz=2100)) is None


def test_a_lock_lost_after_it_was_applied_is_drift_a_first_application_is_not() -> None:
    readings = {0: LockReading(0, limited=False), 1: LockReading(1, limited=True)}
    targets: dict[int, int | None] = {0: 1500, 1: 1500}
    assert drifted(targets, {0: 1500, 1: 1500}, readings) == {
        0: "gpu 0 SM clock lock 1500 MHz lost (no longer limited by a clock setting)"
    }
    assert drifted(targets, {}, readings) == {}
    assert drifted(targets, {0: 1380}, readings) == {}  # a new intent: applied, not drifted


def test_boards_with_the_same_lock_go_in_one_call() -> None:
    assert groups({0: 1500, 1: 1500, 2: 975, 3: None}, {0: 345, 1: 345, 2: 210, 3: 345}) == {
        (345, 1500): [0, 1],
        (210, 975): [2],
        (0, None): [3],
    }
