"""GPU enforcement scenarios (reference §2.4 A05, A06, A12, A16) on temp node trees with stand-in GPU tools.

Each test reads what a user would check on the node: the tools' recorded calls and the
controlStatus the agent reports. The CPU scenarios and the helpers are in ``node_test``.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

from joulie_agent.enforce.node import NodeController
from joulie_agent.enforce.node_test import controller, spec
from joulie_agent.fixtures import testtrees
from joulie_common.clock import FakeClock


def nvidia_node(tmp_path: Path, min_w: str = "200.00", max_w: str = "700.00",
                clock: FakeClock | None = None) -> tuple[NodeController, testtrees.FakeGPUs]:
    testtrees.cpuinfo(tmp_path)
    testtrees.write(tmp_path / "dev" / "nvidiactl", "")
    gpus = testtrees.fake_nvidia_smi(tmp_path, min_w=min_w, max_w=max_w)
    return controller(tmp_path, gpus.bin_dir, allocatable={"nvidia.com/gpu": "8"}, clock=clock), gpus


def test_a05_gpu_cap_is_set_on_every_gpu_and_not_rewritten_when_unchanged(tmp_path: Path) -> None:
    c, gpus = nvidia_node(tmp_path)
    out = c.reconcile_gpu(spec(gpu_w=250))
    assert (out.backend, out.result) == ("host-nvidia", "applied")
    assert out.message == "applied gpu cap 250.0W on 8 devices"
    assert [gpus.limit_w(i) for i in range(8)] == [250.0] * 8
    # One nvidia-smi start for the eight boards, not one per board (a tool call is a process start).
    assert ["-i 0,1,2,3,4,5,6,7 -pl 250"] == [x for x in gpus.calls() if "-pl" in x]
    c.reconcile_gpu(spec(gpu_w=250))
    assert len([x for x in gpus.calls() if "-pl" in x]) == 1


def test_a_board_refusing_the_cap_is_named_and_the_others_are_set(tmp_path: Path) -> None:
    c, gpus = nvidia_node(tmp_path)
    testtrees.write(gpus.state / "gpu3" / "locked", "")
    out = c.reconcile_gpu(spec(gpu_w=250))
    assert (out.backend, out.result) == ("host-nvidia", "error")
    assert "applied on 7 of 8 devices" in out.message
    assert "gpu 3: nvidia-smi -i 3 -pl 250: exit 3" in out.message and "not supported" in out.message
    assert [gpus.limit_w(i) for i in range(8)] == [250.0] * 3 + [700.0] + [250.0] * 4
    # The batch wrote nothing (nvidia-smi checks every board first); then one call per board.
    sets = [x for x in gpus.calls() if "-pl" in x]
    assert sets == ["-i 0,1,2,3,4,5,6,7 -pl 250"] + [f"-i {i} -pl 250" for i in range(8)]


def test_a_hung_batch_costs_one_timeout_not_one_per_board(tmp_path: Path) -> None:
    c, gpus = nvidia_node(tmp_path)
    testtrees.write(gpus.state / "hang_set", "")  # the driver hangs on a set; queries answer
    out = c.reconcile_gpu(spec(gpu_w=250))
    assert out.result == "error" and "timed out" in out.message and "applied on 0 of 8" in out.message
    assert [x for x in gpus.calls() if "-pl" in x][-1] == "-i 0,1,2,3,4,5,6,7 -pl 250"


def test_gpu_that_lost_its_limit_is_reported_as_drift_and_set_again(tmp_path: Path) -> None:
    # Issue 23, defect 1: the board went back to 700 W (persistence mode off) while power.limit
    # still read 350 W; the agent must read the enforced limit, say so and set the cap again.
    clock = FakeClock()
    c, gpus = nvidia_node(tmp_path, clock=clock)
    first = c.reconcile_gpu(spec(gpu_w=350))
    assert (first.result, first.drift) == ("applied", "")
    testtrees.write(gpus.state / "gpu4" / "enforced", "700.00")
    clock.advance(61)  # past the GPU verify interval
    out = c.reconcile_gpu(spec(gpu_w=350))
    assert (out.backend, out.result) == ("host-nvidia", "applied")
    assert out.drift == "gpu 4 enforces 700.0W, intent 350.0W; re-applied"
    assert [x for x in gpus.calls() if "-pl" in x][-1] == "-i 4 -pl 350"
    assert out.status(clock).drift == out.drift
    clock.advance(61)
    assert c.reconcile_gpu(spec(gpu_w=350)).drift == ""  # held since


def test_a_failed_enforced_limit_read_back_leaves_the_cap_unverified_not_applied(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # Issue 23: gpuenforce._read_enforced ignored a failed enforced-limit query, and the cap read
    # "applied" though nothing said what the boards enforce.
    clock = FakeClock()
    c, gpus = nvidia_node(tmp_path, clock=clock)
    assert c.reconcile_gpu(spec(gpu_w=350)).result == "applied"
    testtrees.write(gpus.state / "enforced_fail", "")
    with caplog.at_level(logging.INFO, logger="joulie_agent.enforce.gpuenforce"):
        for _ in range(3):  # three verify intervals with the query failing
            clock.advance(61)
            out = c.reconcile_gpu(spec(gpu_w=350))
            assert (out.backend, out.result) == ("host-nvidia", "error")
            assert out.message.startswith("gpu cap 350.0W set on 8 devices, enforced limit unknown (unverified): "
                                          "read-back failed: nvidia-smi --query-gpu=index,enforced.power.limit")
            assert "exit 15" in out.message
        (gpus.state / "enforced_fail").unlink()
        clock.advance(61)
        assert c.reconcile_gpu(spec(gpu_w=350)).result == "applied"
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2, lines
    assert lines[0].startswith("gpu enforced-limit read-back failed, caps unverified until it answers: nvidia-smi")
    assert lines[1] == "gpu enforced-limit read-back answers again"


def test_a_failing_gpu_inventory_is_logged_once_when_it_starts_and_once_when_it_ends(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # Issue 23, tool-timeout: the failure showed in controlStatus.gpu only, never in the log.
    clock = FakeClock()
    c, gpus = nvidia_node(tmp_path, clock=clock)
    assert c.reconcile_gpu(spec(gpu_w=350)).result == "applied"
    testtrees.write(gpus.state / "fail", "")
    with caplog.at_level(logging.INFO, logger="joulie_agent.enforce.gpuenforce"):
        for _ in range(3):
            clock.advance(61)
            out = c.reconcile_gpu(spec(gpu_w=350))
            assert (out.result, out.message[:21]) == ("error", "gpu inventory failed:")
        (gpus.state / "fail").unlink()
        clock.advance(61)
        assert c.reconcile_gpu(spec(gpu_w=350)).result == "applied"
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2, lines
    assert lines[0].startswith("gpu inventory failed, GPU caps neither set nor verified until it answers: ")
    assert "exit 9" in lines[0] and lines[1] == "gpu inventory answers again"


def test_a_limit_changed_out_of_band_is_drift_too(tmp_path: Path) -> None:
    clock = FakeClock()
    c, gpus = nvidia_node(tmp_path, clock=clock)
    c.reconcile_gpu(spec(gpu_w=300))
    testtrees.write(gpus.state / "gpu1" / "limit", "650.00")
    clock.advance(61)
    out = c.reconcile_gpu(spec(gpu_w=300))
    assert out.drift == "gpu 1 limit 650.0W, intent 300.0W; re-applied" and gpus.limit_w(1) == 300.0


def test_a_new_intent_is_not_drift(tmp_path: Path) -> None:
    c, _ = nvidia_node(tmp_path)
    c.reconcile_gpu(spec(gpu_w=300))
    assert c.reconcile_gpu(spec(gpu_w=400)).drift == ""


def test_gpu_percent_is_of_each_gpus_max(tmp_path: Path) -> None:
    c, gpus = nvidia_node(tmp_path)
    assert c.reconcile_gpu(spec(gpu_pct=50)).result == "applied"
    assert gpus.limit_w(7) == 350.0


def test_gpu_cap_outside_the_range_is_blocked_and_nothing_is_set(tmp_path: Path) -> None:
    c, gpus = nvidia_node(tmp_path)
    out = c.reconcile_gpu(spec(gpu_w=150))
    assert (out.result, out.message) == ("blocked", "requested cap 150.0W below min 200.0W on gpu 0")
    assert not [x for x in gpus.calls() if "-pl" in x]


def test_a16_unknown_limits_block_percent_caps(tmp_path: Path) -> None:
    c, _ = nvidia_node(tmp_path, min_w="[N/A]", max_w="[N/A]")
    assert c.hardware is not None and c.hardware.gpu is not None
    # The datasheet's range is published for the budget (issue 21), marked as the catalog's; control stays off.
    rng = c.hardware.gpu.cap_range_per_gpu
    assert rng is not None and (rng.min_watts, rng.max_watts) == (None, 700.0) and c.hardware.gpu.control_available is False
    assert c.hardware.inventory_resolution is not None
    assert "gpu.capRangePerGpu" in (c.hardware.inventory_resolution.catalog_facts or [])
    out = c.reconcile_gpu(spec(gpu_pct=80))
    assert (out.result, out.message) == ("blocked", "cannot resolve capPctOfMax without device max power limits")


def test_one_gpu_refusing_makes_the_result_an_error_naming_it(tmp_path: Path) -> None:
    c, gpus = nvidia_node(tmp_path)
    testtrees.write(gpus.state / "gpu3" / "locked", "")
    out = c.reconcile_gpu(spec(gpu_w=300))
    assert (out.backend, out.result) == ("host-nvidia", "error")
    assert "7 of 8" in out.message and "gpu 3" in out.message and "not supported" in out.message


def test_hanging_nvidia_smi_times_out_into_an_error_not_a_hang(tmp_path: Path) -> None:
    testtrees.cpuinfo(tmp_path)
    testtrees.write(tmp_path / "dev" / "nvidiactl", "")
    gpus = testtrees.fake_nvidia_smi(tmp_path)
    testtrees.write(gpus.state / "hang", "")
    t0 = time.monotonic()
    c = controller(tmp_path, gpus.bin_dir, allocatable={"nvidia.com/gpu": "8"}, timeout_s=0.5)
    assert c.hardware is not None and c.hardware.gpu is not None
    assert c.hardware.gpu.count == 8 and c.hardware.gpu.control_available is False
    assert any("timed out" in w for w in c.hardware.quality.warnings or [])  # type: ignore[union-attr]
    out = c.reconcile_gpu(spec(gpu_w=250))
    assert (out.result, "timed out" in out.message) == ("error", True)
    assert time.monotonic() - t0 < 5


def test_a05b_legacy_rocm_smi_sets_caps_with_autorespond(tmp_path: Path) -> None:
    testtrees.cpuinfo(tmp_path)
    gpus = testtrees.fake_amd(tmp_path, legacy=True)
    c = controller(tmp_path, gpus.bin_dir, labels={"feature.node.kubernetes.io/pci-1200_1002.present": "true"},
                   allocatable={"amd.com/gpu": "8"})
    assert c.hardware is not None and c.hardware.gpu is not None
    assert (c.hardware.gpu.raw_model, c.hardware.gpu.model) == ("AMD Instinct MI300X", "AMD_INSTINCT_MI300X")
    out = c.reconcile_gpu(spec(gpu_w=500))
    assert (out.backend, out.result) == ("host-amd", "applied")
    assert [gpus.limit_w(i) for i in range(8)] == [500.0] * 8
    assert "-d 0 --setpoweroverdrive 500 --autorespond y" in gpus.calls()


def test_a05c_secondary_die_that_ignores_the_set_is_an_error(tmp_path: Path) -> None:
    testtrees.cpuinfo(tmp_path)
    gpus = testtrees.fake_amd(tmp_path, legacy=True)
    testtrees.write(gpus.state / "gpu1" / "secondary", "")
    c = controller(tmp_path, gpus.bin_dir, allocatable={"amd.com/gpu": "8"},
                   labels={"amd.com/gpu.family": "AI"})
    out = c.reconcile_gpu(spec(gpu_w=500))
    assert (out.backend, out.result) == ("host-amd", "error")
    assert "gpu 1" in out.message and "7 of 8" in out.message
    assert gpus.limit_w(1) == 750.0


def test_a06_current_rocm_smi_lists_gpus_without_limits(tmp_path: Path) -> None:
    testtrees.cpuinfo(tmp_path)
    gpus = testtrees.fake_amd(tmp_path, legacy=False)
    c = controller(tmp_path, gpus.bin_dir, allocatable={"amd.com/gpu": "8"}, labels={"amd.com/gpu.family": "AI"})
    assert c.hardware is not None and c.hardware.gpu is not None
    assert (c.hardware.gpu.count, c.hardware.gpu.control_available) == (8, False)
    assert c.hardware.gpu.raw_model == "AMD Instinct MI300X"
    assert c.reconcile_gpu(spec(gpu_pct=80)).result == "blocked"


def test_amd_smi_caps_are_verified_by_reading_them_back(tmp_path: Path) -> None:
    testtrees.cpuinfo(tmp_path)
    gpus = testtrees.fake_amd(tmp_path, tools=("amd-smi", "rocm-smi"))
    testtrees.write(gpus.state / "gpu2" / "unsupported", "")
    c = controller(tmp_path, gpus.bin_dir, allocatable={"amd.com/gpu": "8"}, labels={"amd.com/gpu.family": "AI"})
    out = c.reconcile_gpu(spec(gpu_w=600))
    assert (out.backend, out.result) == ("host-amd", "error")
    assert "gpu 2" in out.message and "7 of 8" in out.message
    assert gpus.limit_w(0) == 600.0 and gpus.limit_w(2) == 750.0
    # One amd-smi start for the eight boards; the read-back names the one that kept its cap.
    assert "set -g 0 1 2 3 4 5 6 7 -o ppt0 600" in gpus.calls()
    assert not [x for x in gpus.calls() if x.startswith("set -g 0 -o")]


def test_a12_gpu_intent_on_a_node_without_gpus_is_blocked(tmp_path: Path) -> None:
    testtrees.cpuinfo(tmp_path)
    out = controller(tmp_path).reconcile_gpu(spec(gpu_w=250))
    assert (out.backend, out.result) == ("none", "blocked")
    assert controller(tmp_path).reconcile_gpu(None).result == "none"
