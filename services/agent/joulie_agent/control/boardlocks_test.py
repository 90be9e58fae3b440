"""Merging the node-wide SM clock lock with the per-board entries, and each board's result, on the
clocks an H100-like board lists (345-1980 MHz in 15 MHz steps)."""

from joulie_agent.control.boardlocks import BoardFacts, MergedPlan, board_outcomes, intent_key, plan_board_locks
from joulie_agent.discovery.gpuclocks import ClockRange, LockReading
from joulie_api.generated.nodetwin import GPUBoardClockLock, GPUClockLock

CLOCKS = tuple(range(345, 1981, 15))
RANGES = {i: ClockRange(i, CLOCKS) for i in range(4)}
BOARDS = [0, 1, 2, 3]


def entry(gpus: list[int], mhz: float | None = None, pct: float | None = None) -> GPUBoardClockLock:
    return GPUBoardClockLock(gpus=gpus, max_mhz=mhz, pct_of_max=pct)


def test_the_lower_clock_wins_on_each_board_whichever_lock_asks_it() -> None:
    plan = plan_board_locks(GPUClockLock(max_mhz=1500), [entry([0, 1], 1200), entry([2], 1700)], BOARDS, RANGES)
    assert plan.targets == {0: 1200, 1: 1200, 2: 1500, 3: 1500}
    assert plan.sources == {0: "clockLocks[0]", 1: "clockLocks[0]", 2: "clockLock", 3: "clockLock"}
    assert plan.floors == dict.fromkeys(BOARDS, 345) and not plan.blocked and not plan.refusals


def test_an_entry_at_the_maximum_leaves_the_node_wide_lock_and_an_equal_clock_is_the_entrys() -> None:
    plan = plan_board_locks(GPUClockLock(max_mhz=1500), [entry([0], pct=100), entry([1], 1500)], BOARDS, RANGES)
    assert (plan.targets[0], plan.sources[0]) == (1500, "clockLock")
    assert (plan.targets[1], plan.sources[1]) == (1500, "clockLocks[1]")
    alone = plan_board_locks(None, [entry([0], pct=100)], BOARDS, RANGES)
    assert alone.targets == {0: None}  # at the maximum: no lock, and the other boards are not named


def test_without_entries_the_plan_reads_as_the_node_wide_lock_did() -> None:
    plan = plan_board_locks(GPUClockLock(pct_of_max=70), [], BOARDS, RANGES)
    assert plan.asked == "70 % of max" and plan.targets == dict.fromkeys(BOARDS, 1380)
    low = plan_board_locks(GPUClockLock(max_mhz=200), [], BOARDS, RANGES)
    assert low.refusals == [
        "requested SM clock lock 200 MHz is below the lowest supported clock 345 MHz of gpu 0 (supported 345-1980 MHz)"
    ]
    assert set(low.blocked) == set(BOARDS) and low.targets == {}


def test_a_refused_lock_blocks_only_its_own_boards() -> None:
    plan = plan_board_locks(GPUClockLock(max_mhz=200), [entry([1], 1200), entry([2, 7], 1200)], BOARDS, RANGES)
    assert plan.targets == {1: 1200}
    assert set(plan.blocked) == {0, 2, 3}
    assert plan.blocked[2] == "clockLocks[1]: gpu 7 is not on this node (gpus 0, 1, 2, 3)"
    assert plan.blocked[0].startswith("clockLock: requested SM clock lock 200 MHz")


def test_the_intent_changes_with_any_entry_and_not_with_the_order_of_its_boards() -> None:
    base = intent_key(None, [entry([0, 1], 1200)])
    assert base == intent_key(None, [entry([1, 0], 1200)])
    assert base != intent_key(None, [entry([0, 1], 1215)])
    assert base != intent_key(GPUClockLock(max_mhz=1500), [entry([0, 1], 1200)])


def facts(
    readings: dict[int, LockReading],
    released: set[int] | None = None,
    failures: dict[int, str] | None = None,
    read_failed: str = "",
) -> BoardFacts:
    return BoardFacts(readings, RANGES, failures or {}, read_failed, {}, frozenset(released or ()), False)


def test_a_board_is_applied_only_when_it_reads_the_lock_back() -> None:
    plan = MergedPlan(targets={0: 1200, 1: 1200, 2: 1200}, sources=dict.fromkeys([0, 1, 2], "clockLocks[0]"))
    out = board_outcomes(plan, facts({0: LockReading(0, limited=True), 1: LockReading(1, limited=False)}))
    assert [(b.index, b.result, b.locked_max_mhz) for b in out] == [
        (0, "applied", 1200),
        (1, "error", None),
        (2, "error", None),
    ]
    assert out[1].message == "set to 1200 MHz; not limited by it after the set"
    assert out[2].message == "set to 1200 MHz; reports no clock event reasons (unverified)"
    unread = board_outcomes(plan, facts({0: LockReading(0, limited=True)}, read_failed="nvidia-smi: exit 15"))
    assert {b.result for b in unread} == {"error"} and "not verified" in unread[0].message


def test_a_release_is_reported_released_only_when_the_board_reads_unlocked() -> None:
    readings = {0: LockReading(0, limited=False), 1: LockReading(1, limited=True), 2: LockReading(2, max_mhz=1980)}
    out = board_outcomes(MergedPlan(), facts(readings, {0, 1, 2, 3}, failures={3: "gpu 3: exit 3"}))
    assert [(b.index, b.result) for b in out] == [(0, "released"), (1, "error"), (2, "released"), (3, "error")]
    assert out[1].message == "released; still limited by a clock setting after the release"
    assert out[3].message == "release failed: gpu 3: exit 3"
