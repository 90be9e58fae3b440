"""Per-Pod energy truth: each Pod its own boards, its busy cores' energy, its allocation's idle and platform."""

from __future__ import annotations

import pytest

from joulie_simulator.workload.podtruth import (
    HISTORY,
    Holder,
    Meters,
    NodeShape,
    PodTruth,
    TruthFormatError,
    parse_document,
)

GPU_NODE = NodeShape(cores=64.0, boards=4, idle_cpu_w=100.0)


def test_two_pods_on_different_boards_of_one_gpu_node_each_pay_their_own_boards() -> None:
    truth = PodTruth()
    holders = [Holder("ml/a", 16.0, 16.0, (0,)), Holder("ml/b", 16.0, 4.0, (2, 3))]
    truth.read("g1", Meters(0.0, 0.0, (0.0,) * 4, 0.0), GPU_NODE, holders)
    # 10 s: boards 0..3 drew 400, 60, 300, 250 W; packages 250 W (100 W of it idle); host 2000 W.
    truth.read("g1", Meters(10.0, 20_000.0, (4_000.0, 600.0, 3_000.0, 2_500.0), 2_500.0), GPU_NODE, holders)
    a, b = truth.pods["ml/a"], truth.pods["ml/b"]
    assert (a.gpu_j, b.gpu_j) == (4_000.0, 5_500.0)  # board 1 is nobody's
    assert a.cpu_busy_j == pytest.approx(1_500 * 16 / 20) and b.cpu_busy_j == pytest.approx(1_500 * 4 / 20)
    assert a.cpu_idle_j == b.cpu_idle_j == pytest.approx(1_000 * 16 / 64)  # idle by request, not by use
    rest = 20_000 - 10_100 - 2_500
    assert a.platform_j == pytest.approx(rest * (0.5 * 16 / 64 + 0.5 * 1 / 4))
    assert b.platform_j == pytest.approx(rest * (0.5 * 16 / 64 + 0.5 * 2 / 4))
    # The books close: the Pods and the unallocated part add up to the node meter.
    assert a.total_j + b.total_j + truth.unallocated_j["g1"] == pytest.approx(truth.metered_j["g1"]) == 20_000.0
    assert truth.unallocated_j["g1"] >= 600.0  # the free board at least


def test_two_pods_on_one_cpu_node_split_the_busy_part_by_use_and_a_meter_reset_bills_nothing() -> None:
    shape = NodeShape(cores=32.0, boards=0, idle_cpu_w=60.0)
    truth = PodTruth()
    holders = [Holder("etl/x", 8.0, 8.0), Holder("etl/y", 8.0, 2.0)]
    truth.read("c1", Meters(100.0, 1_000.0, (), 500.0), shape, holders)
    truth.read("c1", Meters(110.0, 4_000.0, (), 2_100.0), shape, holders)
    x, y = truth.pods["etl/x"], truth.pods["etl/y"]
    assert x.cpu_busy_j == pytest.approx(4 * y.cpu_busy_j) and x.cpu_busy_j + y.cpu_busy_j == pytest.approx(1_000.0)
    assert x.platform_j == y.platform_j == pytest.approx(1_400.0 * 8 / 32) and x.held_s == 10.0
    # The emulator lost its meters (restart): the interval is not billed; counting resumes after it.
    truth.read("c1", Meters(120.0, 50.0, (), 20.0), shape, holders)
    assert truth.pods["etl/x"] == x
    truth.read("c1", Meters(130.0, 3_050.0, (), 1_620.0), shape, holders)
    assert truth.pods["etl/x"].held_s == 20.0
    got = parse_document(truth.document())
    assert got["etl/x"][0] == "c1" and got["etl/x"][1].total_j == pytest.approx(truth.pods["etl/x"].total_j)
    with pytest.raises(TruthFormatError, match="etl/x"):
        parse_document({"pods": {"etl/x": {"node": "c1"}}})


def test_the_truth_at_a_past_instant_lies_between_the_readings_around_it() -> None:
    shape = NodeShape(cores=32.0, boards=0, idle_cpu_w=60.0)
    truth = PodTruth()
    h = [Holder("etl/x", 16.0, 16.0)]
    for t in range(4):  # 1 kW host, 500 W packages, steady
        truth.read("c1", Meters(100.0 + 10 * t, 1_000.0 * 10 * t, (), 500.0 * 10 * t), shape, h)
    mid = truth.at(115.0)
    assert mid.metered_j["c1"] == pytest.approx(15_000.0)
    assert mid.pods["etl/x"].held_s == pytest.approx(15.0)
    assert (truth.at(130.0).pods["etl/x"] - mid.pods["etl/x"]).total_j == pytest.approx(
        truth.pods["etl/x"].scaled(0.5).total_j
    )
    assert "etl/x" not in truth.at(100.0).pods and truth.at(100.0).metered_j["c1"] == 0.0
    with pytest.raises(TruthFormatError, match="after the last reading"):
        truth.at(131.0)


def test_a_pod_that_stopped_long_ago_keeps_only_its_total() -> None:
    shape = NodeShape(cores=32.0, boards=0, idle_cpu_w=60.0)
    truth = PodTruth()
    for t in range(HISTORY + 40):  # x runs for 10 s, then the node runs empty (pruned every 10 s)
        holders = [Holder("etl/x", 16.0, 16.0)] if t <= 10 else []
        truth.read("c1", Meters(float(t), 1_000.0 * t, (), 500.0 * t), shape, holders)
    assert len(truth.pod_history["etl/x"]) == 1 and truth.pod_history["etl/x"][0][0] == 10.0
    assert truth.at(float(HISTORY)).pods["etl/x"] == truth.pods["etl/x"]
