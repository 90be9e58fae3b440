"""Per-board SM clock locks (NodeTwin spec.gpu.clockLocks beside the node-wide clockLock) through the
real agent loop, fakesmi's nvidia-smi and the emulator's per-board physics: what each board was set
to, what it draws, and what controlStatus.gpu.clockLock.boards says."""

from __future__ import annotations

from pathlib import Path

from joulie_acceptance.harness import Bench
from joulie_api.generated.nodetwin import GPUBoardClockLock, GPUCapSpec, GPUClockLock, NodeTwinSpec
from joulie_hwprofiles.schema import builtin_profile


def _locks(b: Bench, node_pct: float | None, entries: list[tuple[list[int], float]]) -> None:
    b.kube.spec = NodeTwinSpec(
        node_name=b.name,
        profile="eco",
        gpu=GPUCapSpec(
            clock_lock=GPUClockLock(pct_of_max=node_pct) if node_pct is not None else None,
            clock_locks=[GPUBoardClockLock(gpus=g, pct_of_max=p) for g, p in entries] or None,
        ),
    )


def _board_w(b: Bench) -> list[float]:
    return [float(g["powerW"]) for g in b.truth()["gpus"]]


def test_an_entry_locks_its_boards_lower_than_the_node_wide_lock_and_only_they_draw_less(tmp_path: Path) -> None:
    b = Bench(tmp_path, builtin_profile("nvidia-h100-nvl-8gpu"), tick_s=0.5)
    b.load(cpu=0.5, gpu=1.0)
    _locks(b, 90, [([0, 1, 2, 3], 50)])
    _, gpu = b.reconcile()
    lock = gpu.lock
    assert lock is not None and lock.result == "applied", lock
    by_board = {x.index: x for x in lock.boards}
    low, high = by_board[0].locked_max_mhz, by_board[4].locked_max_mhz
    assert low is not None and high is not None and low < high
    assert [(x.result, x.source, x.locked_max_mhz) for x in lock.boards] == [("applied", "clockLocks[0]", low)] * 4 + [
        ("applied", "clockLock", high)
    ] * 4
    files = [b.read(f"state/nvml/gpu{i}/locked_clocks_mhz").split(",")[1] for i in range(8)]
    assert files == [str(low)] * 4 + [str(high)] * 4
    b.advance(6)
    draws = _board_w(b)
    # Same load on every board: the boards held at half their clock draw less than those at 90 %.
    assert max(draws[:4]) < min(draws[4:]), draws

    # The entry and the node-wide lock dropped: every board is released and draws as much as the rest.
    _locks(b, None, [])
    _, gpu = b.reconcile()
    assert gpu.lock is not None and [x.result for x in gpu.lock.boards] == ["released"] * 8
    assert [b.read(f"state/nvml/gpu{i}/locked_clocks_mhz") for i in range(8)] == ["none"] * 8
    b.advance(6)
    released = _board_w(b)
    assert min(released[:4]) > max(draws[:4]), (released, draws)
