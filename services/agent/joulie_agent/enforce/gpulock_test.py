"""SM clock lock scenarios on a temp node with a stand-in nvidia-smi: what the tool was told and what
controlStatus.gpu.clockLock says."""

from __future__ import annotations

from pathlib import Path

from joulie_agent.enforce.gpuenforce_test import nvidia_node
from joulie_agent.enforce.node import NodeController
from joulie_agent.enforce.node_test import controller
from joulie_agent.fixtures import testtrees
from joulie_api.generated.nodetwin import GPUCapSpec, GPUClockLock, GPUPowerCap, NodeTwinSpec
from joulie_common.clock import FakeClock


def locked(max_mhz: float | None = None, pct: float | None = None, cap_w: float | None = None) -> NodeTwinSpec:
    return NodeTwinSpec(
        node_name="n1",
        profile="eco",
        gpu=GPUCapSpec(
            clock_lock=GPUClockLock(max_mhz=max_mhz, pct_of_max=pct),
            power_cap=GPUPowerCap(cap_watts_per_gpu=cap_w) if cap_w else None,
        ),
    )


def lock_calls(calls: list[str]) -> list[str]:
    return [x for x in calls if "-lgc" in x or "-rgc" in x]


def test_a_lock_is_set_on_every_board_in_one_call_and_reported_as_the_boards_read_it(tmp_path: Path) -> None:
    c, gpus = nvidia_node(tmp_path)
    out = c.reconcile_gpu(locked(max_mhz=1500))
    assert lock_calls(gpus.calls()) == ["-i 0,1,2,3,4,5,6,7 -lgc 345,1500"]
    assert [gpus.lock(i) for i in range(8)] == ["345,1500"] * 8
    assert out.lock is not None and (out.lock.result, out.lock.locked_max_mhz) == ("applied", 1500)
    assert out.lock.message == "applied SM clock lock 1500 MHz (1500 MHz) on 8 devices"
    # The cap is untouched: no cap in the spec.
    assert (out.result, out.message) == ("none", "no GPU cap intent")
    status = out.status(FakeClock()).clock_lock
    assert status is not None and (status.result, status.locked_max_mhz) == ("applied", 1500)
    c.reconcile_gpu(locked(max_mhz=1500))
    assert len(lock_calls(gpus.calls())) == 1  # unchanged: not written again


def test_a_percentage_lock_is_rounded_down_to_a_supported_clock_beside_a_cap(tmp_path: Path) -> None:
    c, gpus = nvidia_node(tmp_path)
    out = c.reconcile_gpu(locked(pct=70, cap_w=400))
    assert lock_calls(gpus.calls()) == ["-i 0,1,2,3,4,5,6,7 -lgc 345,1380"]  # 70 % of 1980 = 1386
    assert out.lock is not None and out.lock.locked_max_mhz == 1380
    assert (out.result, [gpus.limit_w(i) for i in range(8)]) == ("applied", [400.0] * 8)


def test_a_lock_lost_by_a_device_reset_is_drift_and_is_applied_again(tmp_path: Path) -> None:
    clock = FakeClock()
    c, gpus = nvidia_node(tmp_path, clock=clock)
    assert c.reconcile_gpu(locked(max_mhz=1500)).lock == c.reconcile_gpu(locked(max_mhz=1500)).lock
    (gpus.state / "gpu5" / "lock").unlink()  # the board was reset: its lock is gone
    clock.advance(61)  # the next verify reads the boards
    out = c.reconcile_gpu(locked(max_mhz=1500))
    assert out.lock is not None and out.lock.result == "applied"
    assert out.lock.drift == "gpu 5 SM clock lock 1500 MHz lost (no longer limited by a clock setting); re-applied"
    assert lock_calls(gpus.calls())[-1] == "-i 5 -lgc 345,1500" and gpus.lock(5) == "345,1500"
    assert out.status(clock).clock_lock is not None and out.status(clock).clock_lock.drift == out.lock.drift  # type: ignore[union-attr]
    clock.advance(61)
    again = c.reconcile_gpu(locked(max_mhz=1500)).lock
    assert again is not None and again.drift == ""  # held since


def test_a_lock_outside_the_supported_clocks_is_refused_with_the_reason_and_nothing_is_written(tmp_path: Path) -> None:
    c, gpus = nvidia_node(tmp_path)
    out = c.reconcile_gpu(locked(max_mhz=2100))
    assert out.lock is not None and out.lock.result == "blocked"
    assert out.lock.message == (
        "requested SM clock lock 2100 MHz is above the highest supported clock 1980 MHz "
        "of gpu 0 (supported 345-1980 MHz)"
    )
    assert lock_calls(gpus.calls()) == [] and gpus.lock(0) is None
    low = c.reconcile_gpu(locked(max_mhz=300)).lock
    assert low is not None and low.result == "blocked" and "below the lowest supported clock 345 MHz" in low.message


def test_no_lock_in_the_spec_writes_and_reads_nothing_about_clocks(tmp_path: Path) -> None:
    c, gpus = nvidia_node(tmp_path)
    out = c.reconcile_gpu(
        NodeTwinSpec(node_name="n1", profile="eco", gpu=GPUCapSpec(power_cap=GPUPowerCap(cap_watts_per_gpu=300)))
    )
    assert out.lock is None and out.status(FakeClock()).clock_lock is None
    # The cap's own reading asks the SM clocks as activity signals (gpureading); no lock query, no lock write.
    lock_io = ("clocks_event_reasons", "--query-supported-clocks", "-lgc", "-rgc")
    assert not [x for x in gpus.calls() if any(s in x for s in lock_io)]


def test_a_lock_the_spec_drops_is_released(tmp_path: Path) -> None:
    c, gpus = nvidia_node(tmp_path)
    c.reconcile_gpu(locked(max_mhz=1500))
    out = c.reconcile_gpu(NodeTwinSpec(node_name="n1", profile="eco"))
    assert out.lock is not None and (out.lock.result, out.lock.message) == (
        "none",
        "released the SM clock lock on 8 devices (no lock in spec)",
    )
    assert lock_calls(gpus.calls())[-1] == "-i 0,1,2,3,4,5,6,7 -rgc" and gpus.lock(0) is None
    assert c.reconcile_gpu(NodeTwinSpec(node_name="n1", profile="eco")).lock is None  # and then nothing


def test_a_board_refusing_the_lock_is_named_and_the_others_are_locked(tmp_path: Path) -> None:
    c, gpus = nvidia_node(tmp_path)
    testtrees.write(gpus.state / "gpu2" / "nolock", "")
    out = c.reconcile_gpu(locked(max_mhz=1500))
    assert out.lock is not None and out.lock.result == "error"
    assert (
        "applied on 7 of 8 devices" in out.lock.message
        and "gpu 2: nvidia-smi -i 2 -lgc 345,1500: exit 3" in out.lock.message
    )
    assert [gpus.lock(i) for i in range(8)] == ["345,1500"] * 2 + [None] + ["345,1500"] * 5


def test_a_failed_read_back_leaves_the_lock_unverified_not_applied(tmp_path: Path) -> None:
    c, gpus = nvidia_node(tmp_path)
    c.reconcile_gpu(locked(max_mhz=1500))
    testtrees.write(gpus.state / "clocks_fail", "")
    out = c.reconcile_gpu(locked(max_mhz=1200))  # a new intent: set, then read back
    assert out.lock is not None and out.lock.result == "error"
    assert "not verified: read-back failed" in out.lock.message and "exit 15" in out.lock.message
    assert out.lock.locked_max_mhz is None


def amd_node(
    tmp_path: Path, od: bool = True, clock: FakeClock | None = None
) -> tuple[NodeController, testtrees.FakeGPUs]:
    testtrees.cpuinfo(tmp_path)
    gpus = testtrees.fake_amd(tmp_path, tools=("amd-smi", "rocm-smi"))
    if od:
        testtrees.amd_od_tables(tmp_path, lo=500, hi=2100)
    c = controller(
        tmp_path,
        gpus.bin_dir,
        labels={"feature.node.kubernetes.io/pci-1002.present": "true"},
        allocatable={"amd.com/gpu": "8"},
        clock=clock,
    )
    return c, gpus


def amd_lock_calls(calls: list[str]) -> list[str]:
    return [x for x in calls if " -L " in x]


def test_an_amd_lock_is_set_with_amd_smi_and_read_back_as_the_soft_maximum(tmp_path: Path) -> None:
    c, gpus = amd_node(tmp_path)
    out = c.reconcile_gpu(locked(max_mhz=1500)).lock
    assert amd_lock_calls(gpus.calls()) == ["set -g 0 1 2 3 4 5 6 7 -L sclk max 1500"]
    assert [gpus.sclk_max(i) for i in range(8)] == [1500] * 8
    assert out is not None and (out.result, out.locked_max_mhz) == ("applied", 1500)
    assert out.message == "applied SM clock lock 1500 MHz (1500 MHz) on 8 devices"
    # A percentage is of the board's true maximum (OD_RANGE), not of the ceiling it is locked at now.
    out = c.reconcile_gpu(locked(pct=50)).lock
    assert out is not None and (out.result, out.locked_max_mhz) == ("applied", 1050)
    assert [gpus.sclk_max(i) for i in range(8)] == [1050] * 8


def test_an_amd_lock_lost_to_a_reset_is_drift_and_applied_again(tmp_path: Path) -> None:
    clock = FakeClock()
    c, gpus = amd_node(tmp_path, clock=clock)
    c.reconcile_gpu(locked(max_mhz=1500))
    (gpus.state / "gpu3" / "sclk").unlink()  # amd-smi reset --clocks: back to the board's maximum
    clock.advance(120)
    out = c.reconcile_gpu(locked(max_mhz=1500)).lock
    assert out is not None and out.result == "applied"
    assert out.drift == "gpu 3 SM clock lock 1500 MHz lost (at 2100 MHz); re-applied"
    assert amd_lock_calls(gpus.calls())[-1] == "set -g 3 -L sclk max 1500"
    assert gpus.sclk_max(3) == 1500


def test_an_amd_lock_outside_the_od_range_is_refused_with_a_reason_and_nothing_set(tmp_path: Path) -> None:
    c, gpus = amd_node(tmp_path)
    c.reconcile_gpu(locked(max_mhz=1500))  # locked: amd-smi's max_clk now says 1500, OD_RANGE still 2100
    out = c.reconcile_gpu(locked(max_mhz=2200)).lock
    assert out is not None and out.result == "blocked"
    assert out.message == (
        "requested SM clock lock 2200 MHz is above the highest supported clock 2100 MHz of gpu 0 "
        "(supported 500-2100 MHz)"
    )
    assert amd_lock_calls(gpus.calls()) == ["set -g 0 1 2 3 4 5 6 7 -L sclk max 1500"]
    assert c.reconcile_gpu(locked(max_mhz=2000)).lock.result == "applied"  # type: ignore[union-attr]


def test_an_amd_lock_dropped_from_the_spec_is_released_to_the_boards_maximum(tmp_path: Path) -> None:
    c, gpus = amd_node(tmp_path)
    c.reconcile_gpu(locked(max_mhz=1500))
    out = c.reconcile_gpu(NodeTwinSpec(node_name="n1", profile="eco")).lock
    assert out is not None and out.result == "none" and "released" in out.message
    assert amd_lock_calls(gpus.calls())[-1] == "set -g 0 1 2 3 4 5 6 7 -L sclk max 2100"
    assert [gpus.sclk_max(i) for i in range(8)] == [2100] * 8


def test_an_amd_node_without_a_lock_in_the_spec_reads_and_writes_no_clock(tmp_path: Path) -> None:
    c, gpus = amd_node(tmp_path)
    out = c.reconcile_gpu(NodeTwinSpec(node_name="n1", profile="eco"))
    assert out.lock is None
    assert not [x for x in gpus.calls() if "clock" in x or " -L " in x]


def test_an_amd_node_without_od_tables_refuses_the_lock_with_the_reason(tmp_path: Path) -> None:
    c, gpus = amd_node(tmp_path, od=False)
    out = c.reconcile_gpu(locked(max_mhz=1500)).lock
    assert out is not None and out.result == "blocked"
    assert out.message == "gpu 0 reports no supported SM clocks: a clock lock is not supported on it"
    assert amd_lock_calls(gpus.calls()) == []
