"""SM clock lock scenarios on a temp node with a stand-in nvidia-smi: what the tool was told and what
controlStatus.gpu.clockLock says."""

from __future__ import annotations

from pathlib import Path

from joulie_agent.enforce.gpuenforce_test import nvidia_node
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
    assert not [x for x in gpus.calls() if "clocks" in x or "-lgc" in x or "-rgc" in x]


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


def test_a_lock_on_an_amd_node_is_refused_with_the_reason(tmp_path: Path) -> None:
    testtrees.cpuinfo(tmp_path)
    gpus = testtrees.fake_amd(tmp_path, tools=("amd-smi", "rocm-smi"))
    c = controller(
        tmp_path,
        gpus.bin_dir,
        labels={"feature.node.kubernetes.io/pci-1002.present": "true"},
        allocatable={"amd.com/gpu": "8"},
    )
    out = c.reconcile_gpu(locked(max_mhz=1500)).lock
    assert (
        out is not None and out.result == "blocked" and "on amd GPUs is not supported by the agent yet" in out.message
    )
    assert not [x for x in gpus.calls() if "-L" in x.split() or "clk" in x]
