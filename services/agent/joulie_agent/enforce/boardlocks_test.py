"""Per-board SM clock locks (spec.gpu.clockLocks beside the node-wide clockLock) on a temp 8-board
node with a stand-in nvidia-smi: what each board was told, and what controlStatus says per board."""

from __future__ import annotations

from pathlib import Path

from joulie_agent.discovery.catalog import load_catalog
from joulie_agent.enforce.gpuenforce_nvml_test import LockingNVML
from joulie_agent.enforce.gpuenforce_test import nvidia_node
from joulie_agent.enforce.gpulock_test import amd_lock_calls, amd_node, lock_calls
from joulie_agent.enforce.node import NodeController
from joulie_agent.fixtures import testtrees
from joulie_agent.host.hostread import HostPaths
from joulie_agent.host.nvml import open_nvml
from joulie_agent.host.toolrun import make_runner
from joulie_api.generated.nodetwin import GPUBoardClockLock, GPUCapSpec, GPUClockLock, NodeTwinSpec
from joulie_common.clock import FakeClock


def spec(entries: list[tuple[list[int], float]], node_pct: float | None = None) -> NodeTwinSpec:
    """``entries``: (boards, maxMhz); ``node_pct``: the node-wide lock, % of max."""
    return NodeTwinSpec(
        node_name="n1",
        profile="eco",
        gpu=GPUCapSpec(
            clock_lock=GPUClockLock(pct_of_max=node_pct) if node_pct is not None else None,
            clock_locks=[GPUBoardClockLock(gpus=g, max_mhz=mhz) for g, mhz in entries] or None,
        ),
    )


def test_each_board_takes_the_lower_of_its_entry_and_the_operators_node_wide_lock(tmp_path: Path) -> None:
    c, gpus = nvidia_node(tmp_path)
    # The node-wide 80 % of 1980 MHz is 1584, held as 1575; entry 1 asks above it, so it loses there.
    out = c.reconcile_gpu(spec([([0, 1, 2, 3], 1200), ([4, 5], 1700)], node_pct=80))
    assert [gpus.lock(i) for i in range(8)] == ["345,1200"] * 4 + ["345,1575"] * 4
    assert sorted(lock_calls(gpus.calls())) == ["-i 0,1,2,3 -lgc 345,1200", "-i 4,5,6,7 -lgc 345,1575"]
    lock = out.lock
    assert lock is not None and (lock.result, lock.locked_max_mhz) == ("applied", 1200)
    assert lock.message == (
        "applied SM clock lock 1200-1575 MHz (clockLock 80 % of max; clockLocks[0] 1200 MHz; "
        "clockLocks[1] 1700 MHz) on 8 devices"
    )
    assert [(b.index, b.result, b.source, b.locked_max_mhz) for b in lock.boards] == [
        (i, "applied", "clockLocks[0]", 1200) for i in range(4)
    ] + [(i, "applied", "clockLock", 1575) for i in range(4, 8)]
    status = out.status(FakeClock()).clock_lock
    assert status is not None and status.boards is not None
    assert [(b.index, b.result, b.source, b.locked_max_mhz) for b in status.boards][:1] == [
        (0, "applied", "clockLocks[0]", 1200)
    ]
    # A board that leaves its entry falls back to the node-wide lock: set again, not released.
    out = c.reconcile_gpu(spec([([4, 5], 1700)], node_pct=80))
    assert [gpus.lock(i) for i in range(8)] == ["345,1575"] * 8
    assert lock_calls(gpus.calls())[-1] == "-i 0,1,2,3 -lgc 345,1575"
    assert out.lock is not None and {b.result for b in out.lock.boards} == {"applied"}


def test_a_board_dropped_from_every_entry_is_released_and_reported_so_once(tmp_path: Path) -> None:
    c, gpus = nvidia_node(tmp_path)
    c.reconcile_gpu(spec([([0, 1], 1200), ([2], 1500)]))
    assert [gpus.lock(i) for i in range(4)] == ["345,1200", "345,1200", "345,1500", None]
    out = c.reconcile_gpu(spec([([0], 1200)]))
    assert lock_calls(gpus.calls())[-1] == "-i 1,2 -rgc"
    assert [gpus.lock(i) for i in range(3)] == ["345,1200", None, None]
    lock = out.lock
    assert lock is not None and lock.result == "applied"
    assert lock.message == (
        "applied SM clock lock 1200 MHz (clockLocks[0] 1200 MHz) on 1 devices; "
        "released the SM clock lock on gpu 1, 2 (in no lock of the spec)"
    )
    assert [(b.index, b.result) for b in lock.boards] == [(0, "applied"), (1, "released"), (2, "released")]
    again = c.reconcile_gpu(spec([([0], 1200)])).lock
    assert again is not None and [(b.index, b.result) for b in again.boards] == [(0, "applied")]
    # The last entry gone and no node-wide lock: board 0 is released too, and then nothing is done.
    last = c.reconcile_gpu(spec([])).lock
    assert last is not None and (last.result, last.message) == (
        "none",
        "released the SM clock lock on 1 devices (no lock in spec)",
    )
    assert [(b.index, b.result) for b in last.boards] == [(0, "released")] and gpus.lock(0) is None
    assert c.reconcile_gpu(spec([])).lock is None


def test_a_board_that_lost_its_lock_is_drift_on_that_board_alone(tmp_path: Path) -> None:
    clock = FakeClock()
    c, gpus = nvidia_node(tmp_path, clock=clock)
    c.reconcile_gpu(spec([([0, 1], 1200), ([6], 1500)]))
    (gpus.state / "gpu1" / "lock").unlink()  # the board was reset
    clock.advance(61)
    out = c.reconcile_gpu(spec([([0, 1], 1200), ([6], 1500)]))
    assert lock_calls(gpus.calls())[-1] == "-i 1 -lgc 345,1200" and gpus.lock(1) == "345,1200"
    lock = out.lock
    assert lock is not None and lock.result == "applied"
    assert lock.drift == "gpu 1 SM clock lock 1200 MHz lost (no longer limited by a clock setting); re-applied"
    assert [(b.index, b.drift) for b in lock.boards] == [
        (0, ""),
        (1, "gpu 1 SM clock lock 1200 MHz lost (no longer limited by a clock setting)"),
        (6, ""),
    ]
    assert all(b.result == "applied" for b in lock.boards)


def test_a_refused_entry_leaves_its_boards_at_the_node_wide_lock_and_the_other_entries_in_force(
    tmp_path: Path,
) -> None:
    c, gpus = nvidia_node(tmp_path)
    out = c.reconcile_gpu(spec([([0], 300), ([1], 1200), ([9], 1200)], node_pct=80))
    assert [gpus.lock(i) for i in range(3)] == ["345,1575", "345,1200", "345,1575"]
    lock = out.lock
    assert lock is not None and lock.result == "blocked"
    refused_0 = (
        "clockLocks[0]: requested SM clock lock 300 MHz is below the lowest supported clock 345 MHz of gpu 0 "
        "(supported 345-1980 MHz)"
    )
    assert lock.message.endswith(
        f"; {refused_0}; clockLocks[2]: gpu 9 is not on this node (gpus 0, 1, 2, 3, 4, 5, 6, 7)"
    )
    board = {b.index: b for b in lock.boards}
    assert (board[0].result, board[0].message) == ("blocked", f"{refused_0}; holds clockLock 1575 MHz")
    assert (board[1].result, board[1].locked_max_mhz) == ("applied", 1200)
    assert sorted(board) == list(range(8))  # board 9 is no board of this node


def test_a_refused_node_wide_lock_leaves_the_entries_in_force(tmp_path: Path) -> None:
    c, gpus = nvidia_node(tmp_path)
    out = c.reconcile_gpu(spec([([2, 3], 1200)], node_pct=10))  # 198 MHz: below every board's range
    assert [gpus.lock(i) for i in range(4)] == [None, None, "345,1200", "345,1200"]
    lock = out.lock
    assert lock is not None and lock.result == "blocked"
    assert [(b.index, b.result) for b in lock.boards] == [
        (0, "blocked"), (1, "blocked"), (2, "applied"), (3, "applied"),
        (4, "blocked"), (5, "blocked"), (6, "blocked"), (7, "blocked"),
    ]  # fmt: skip


def test_entries_on_some_boards_only_leave_the_nodes_locked_max_unset(tmp_path: Path) -> None:
    c, gpus = nvidia_node(tmp_path)
    out = c.reconcile_gpu(spec([([0, 1], 1200)]))
    assert [gpus.lock(i) for i in range(8)] == ["345,1200"] * 2 + [None] * 6
    lock = out.lock
    # Six boards run free: the node-wide field would claim every device holds 1200 MHz.
    assert lock is not None and (lock.result, lock.locked_max_mhz) == ("applied", None)
    assert [(b.index, b.locked_max_mhz) for b in lock.boards] == [(0, 1200), (1, 1200)]
    status = out.status(FakeClock()).clock_lock
    assert status is not None and status.locked_max_mhz is None
    # Every board under a lock again: the node's field says the lowest.
    whole = c.reconcile_gpu(spec([([0, 1], 1200)], node_pct=80)).lock
    assert whole is not None and (whole.result, whole.locked_max_mhz) == ("applied", 1200)


def test_a_board_whose_entry_left_is_released_though_a_refused_node_wide_lock_names_it(tmp_path: Path) -> None:
    c, gpus = nvidia_node(tmp_path)
    c.reconcile_gpu(spec([([1], 1200)]))
    assert gpus.lock(1) == "345,1200"
    out = c.reconcile_gpu(spec([], node_pct=10))  # 198 MHz: below every board's range, refused
    assert gpus.lock(1) is None and lock_calls(gpus.calls())[-1] == "-i 1 -rgc"
    lock = out.lock
    assert lock is not None and lock.result == "blocked"
    assert "released the SM clock lock on gpu 1" in lock.message
    board = {b.index: b for b in lock.boards}
    assert (board[1].result, board[1].locked_max_mhz) == ("released", None)
    assert {board[i].result for i in range(8) if i != 1} == {"blocked"}
    # Nothing left to release: the next reconcile writes nothing.
    calls = len(lock_calls(gpus.calls()))
    again = c.reconcile_gpu(spec([], node_pct=10)).lock
    assert again is not None and len(lock_calls(gpus.calls())) == calls
    assert {b.result for b in again.boards} == {"blocked"}


def test_a_refused_change_of_the_node_wide_lock_keeps_the_one_it_set(tmp_path: Path) -> None:
    c, gpus = nvidia_node(tmp_path)
    c.reconcile_gpu(spec([], node_pct=80))
    out = c.reconcile_gpu(spec([], node_pct=10)).lock
    assert [gpus.lock(i) for i in range(8)] == ["345,1575"] * 8
    assert out is not None and out.result == "blocked" and "released" not in out.message


def test_nvml_resets_the_locked_clocks_of_a_board_that_left_its_entry(tmp_path: Path) -> None:
    testtrees.cpuinfo(tmp_path)
    lib = LockingNVML()
    c = NodeController(
        "n1", HostPaths.under(tmp_path), load_catalog(), make_runner(str(tmp_path)), open_nvml(lib), FakeClock()
    )
    c.discover({}, {})
    first = c.reconcile_gpu(spec([([0], 990)])).lock
    assert lib.locks == {0: (345, 990)} and first is not None and first.result == "applied"
    out = c.reconcile_gpu(spec([([1], 1500)])).lock
    assert lib.locks == {1: (345, 1500)} and (0,) in lib.lock_calls  # nvmlDeviceResetGpuLockedClocks on board 0
    assert out is not None and [(b.index, b.result, b.locked_max_mhz) for b in out.boards] == [
        (0, "released", None),
        (1, "applied", 1500),
    ]


def test_amd_releases_a_board_that_left_its_entry_to_the_top_of_its_range(tmp_path: Path) -> None:
    c, gpus = amd_node(tmp_path)
    c.reconcile_gpu(spec([([0, 1], 1500), ([2], 1200)]))
    assert [gpus.sclk_max(i) for i in range(4)] == [1500, 1500, 1200, 2100]
    out = c.reconcile_gpu(spec([([0, 1], 1500)])).lock
    assert amd_lock_calls(gpus.calls())[-1] == "set -g 2 -L sclk max 2100" and gpus.sclk_max(2) == 2100
    assert out is not None and [(b.index, b.result) for b in out.boards] == [
        (0, "applied"),
        (1, "applied"),
        (2, "released"),
    ]
