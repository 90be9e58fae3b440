"""Per-GPU series the hardware refutes: which boards, and which Pods' estimates that holds."""

from __future__ import annotations

from joulie_api.generated.nodehardware import NodeHardware
from joulie_controller.model.hardware import NodeInfo
from joulie_controller.readings.gpuplausibility import (
    KIND_POWER,
    KIND_RATIO,
    KIND_UNLISTED,
    NodeGpus,
    gpus_by_node,
    refute,
    without_refuted,
)
from joulie_controller.readings.gpusignals import Point

NOW = 1_000_000.0
H100X4 = NodeGpus(4, 700.0)


def _p(v: float) -> Point:
    return Point(v, NOW - 5)


def test_honest_boards_pass_at_their_limits() -> None:
    signals = {
        "power_w": {("n1", "gpu-3"): _p(700.0 * 1.5)},
        "utilization": {("n1", "gpu-3"): _p(1.0)},
        "sm_active": {("n1", "gpu-0"): _p(0.0)},
    }
    alloc = {("n1", "gpu-3"): ("ml/train", _p(1)), ("n1", "gpu-0"): ("ml/train", _p(1))}
    assert refute(signals, alloc, {"n1": H100X4}, by_node=True) == {}


def test_power_far_above_the_boards_limit_or_negative_is_refuted() -> None:
    signals = {"power_w": {("n1", "gpu-0"): _p(5000.0), ("n1", "gpu-1"): _p(-3.0), ("n1", "gpu-2"): _p(1051.0)}}
    got = refute(signals, {}, {"n1": H100X4}, by_node=True)
    assert {b: r.kind for b, r in got.items()} == {
        ("n1", "gpu-0"): KIND_POWER,
        ("n1", "gpu-1"): KIND_POWER,
        ("n1", "gpu-2"): KIND_POWER,
    }
    assert "5000 W is above 1.5 x its limit 700 W" in got[("n1", "gpu-0")].reason
    # A node whose NodeHardware gives no limit: only a negative reading is refuted.
    assert set(refute(signals, {}, {"n1": NodeGpus(4, 0.0)}, by_node=True)) == {("n1", "gpu-1")}


def test_activity_ratios_outside_0_1_are_refuted_even_without_node_hardware() -> None:
    for field in ("utilization", "sm_active", "tensor_active", "dram_active"):
        for bad in (1.5, -0.01, 100.0):
            got = refute({field: {("n9", "gpu-0"): _p(bad)}}, {}, {}, by_node=True)
            assert [r.kind for r in got.values()] == [KIND_RATIO], (field, bad)
    # Boards keyed by job/instance (node attribute not promoted): the ratios are still checked.
    assert refute(
        {"sm_active": {("agent/10.0.0.1:0", "gpu-0"): _p(7.0)}}, {}, {"agent/10.0.0.1:0": H100X4}, by_node=False
    )


def test_an_allocation_naming_a_board_the_node_hardware_does_not_list_is_refuted() -> None:
    alloc = {
        ("n1", "gpu-4"): ("ml/a", _p(1)),
        ("n1", "gpu-03"): ("ml/b", _p(1)),
        ("n1", "nvme-0"): ("ml/c", _p(1)),
        ("cpu1", "gpu-0"): ("ml/d", _p(1)),
        ("n1", "gpu-3"): ("ml/e", _p(1)),
        ("unknown", "gpu-77"): ("ml/f", _p(1)),
    }
    got = refute({}, alloc, {"n1": H100X4, "cpu1": NodeGpus(0)}, by_node=True)
    assert {b: r.kind for b, r in got.items()} == {
        b: KIND_UNLISTED for b in [("n1", "gpu-4"), ("n1", "gpu-03"), ("n1", "nvme-0"), ("cpu1", "gpu-0")]
    }
    assert "lists no GPU" in got[("cpu1", "gpu-0")].reason
    # Keyed by job/instance the node's count cannot be applied.
    assert refute({}, alloc, {"n1": H100X4}, by_node=False) == {}


def test_a_pod_holding_one_refuted_board_loses_all_its_boards_others_keep_theirs() -> None:
    alloc = {
        ("n1", "gpu-0"): ("ml/train", _p(1)),
        ("n1", "gpu-1"): ("ml/train", _p(1)),
        ("n1", "gpu-2"): ("ml/serve", _p(1)),
    }
    refuted = refute({"power_w": {("n1", "gpu-1"): _p(9000.0)}}, alloc, {"n1": H100X4}, by_node=True)
    kept, held = without_refuted(alloc, refuted)
    assert kept == {("n1", "gpu-2"): ("ml/serve", _p(1))}
    assert list(held) == ["ml/train"] and held["ml/train"].kind == KIND_POWER


def test_node_gpus_come_from_node_hardware_by_node_name() -> None:
    nhw = NodeHardware.model_validate(
        {
            "apiVersion": "joulie.io/v1alpha1",
            "kind": "NodeHardware",
            "metadata": {"name": "n1"},
            "spec": {"nodeName": "n1"},
            "status": {"gpu": {"present": True, "capRangePerGpu": {"minWatts": 200, "maxWatts": 700}}},
        }
    )
    got = gpus_by_node({"n1": nhw}, [NodeInfo("n1", allocatable_gpus=8), NodeInfo("n2", allocatable_gpus=8)])
    assert got == {"n1": NodeGpus(8, 700.0)}  # count from allocatable; n2 has no NodeHardware: nothing to refute with
