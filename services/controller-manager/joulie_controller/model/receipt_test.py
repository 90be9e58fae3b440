from __future__ import annotations

import pytest

from joulie_api.receipt import parse_annotation, roll_up
from joulie_controller.model.counterfactual import conditions_for_kind, counterfactual
from joulie_controller.model.receipt import (
    IDLE_MEASURED,
    IDLE_MODEL,
    IDLE_UNKNOWN,
    Holding,
    IdleFloor,
    Ledger,
    NodeEnergy,
    Receipt,
    annotation,
    attribute,
)

GPU_NODE = NodeEnergy(
    interval_s=60.0,
    node_j=60.0 * 2900.0,
    gpu_j={0: 60 * 600.0, 1: 60 * 350.0, 2: 60 * 70.0, 3: 60 * 70.0},
    cpu_j=60.0 * 400.0,
    cores=64,
    cpu_idle_w=160.0,
    gpu_idle_w=70.0,
)
CPU_NODE = NodeEnergy(interval_s=60.0, node_j=60.0 * 700.0, cpu_j=60.0 * 500.0, cores=80, cpu_idle_w=100.0)


def test_two_pods_on_one_gpu_node_each_pay_for_their_own_boards() -> None:
    a = attribute(GPU_NODE, [Holding("ns/train", 60.0, (0,), 16), Holding("ns/infer", 60.0, (1,), 8)])
    assert a.pods["ns/train"].gpu_j == pytest.approx(60 * 600.0)
    assert a.pods["ns/infer"].gpu_j == pytest.approx(60 * 350.0)
    assert a.unallocated.gpu_j == pytest.approx(2 * 60 * 70.0)  # boards 2 and 3, held by nobody
    # CPU busy by request (16 : 8), idle by allocation of all 64 cores
    busy = 60 * (400.0 - 160.0)
    assert a.pods["ns/train"].cpu_busy_j == pytest.approx(busy * 16 / 24)
    assert a.pods["ns/infer"].cpu_busy_j == pytest.approx(busy * 8 / 24)
    assert a.pods["ns/train"].cpu_idle_j == pytest.approx(60 * 160.0 * 16 / 64)
    assert a.total_j == pytest.approx(GPU_NODE.node_j, rel=1e-12)


def test_two_pods_on_one_cpu_node_split_busy_by_request_and_idle_by_allocation() -> None:
    a = attribute(CPU_NODE, [Holding("ns/a", 60.0, cpu_cores=30), Holding("ns/b", 60.0, cpu_cores=10)])
    ra, rb = a.pods["ns/a"], a.pods["ns/b"]
    assert ra.gpu_j == rb.gpu_j == 0.0
    assert ra.cpu_busy_j == pytest.approx(3 * rb.cpu_busy_j)
    assert ra.cpu_idle_j == pytest.approx(60 * 100.0 * 30 / 80)
    assert a.unallocated.cpu_idle_j == pytest.approx(60 * 100.0 * 40 / 80)
    assert ra.platform_j == pytest.approx(60 * 200.0 * 30 / 80)
    assert a.unallocated.cpu_busy_j == 0.0
    assert a.total_j == pytest.approx(CPU_NODE.node_j, rel=1e-12)


def test_the_busy_part_follows_the_cpu_time_used_where_every_pod_reports_it() -> None:
    by_use = [
        Holding("ns/a", 60.0, cpu_cores=30, cpu_used_core_s=60 * 3.0),
        Holding("ns/b", 60.0, cpu_cores=10, cpu_used_core_s=60 * 9.0),
    ]
    a = attribute(CPU_NODE, by_use)
    assert a.pods["ns/b"].cpu_busy_j == pytest.approx(3 * a.pods["ns/a"].cpu_busy_j)
    assert a.pods["ns/a"].cpu_idle_j == pytest.approx(60 * 100.0 * 30 / 80)  # idle still by allocation
    half = attribute(CPU_NODE, [by_use[0], Holding("ns/b", 60.0, cpu_cores=10)])  # one Pod unreported: requests
    assert half.pods["ns/a"].cpu_busy_j == pytest.approx(3 * half.pods["ns/b"].cpu_busy_j)


@pytest.mark.parametrize("busy_w", [0.0, 150.0, 400.0, 1200.0])
def test_a_pods_idle_share_does_not_shrink_as_the_node_gets_busier(busy_w: float) -> None:
    node = NodeEnergy(60.0, 60.0 * (100.0 + busy_w + 200.0), cpu_j=60.0 * (100.0 + busy_w), cores=80, cpu_idle_w=100.0)
    a = attribute(node, [Holding("ns/a", 60.0, cpu_cores=20), Holding("ns/b", 60.0, cpu_cores=40)])
    assert a.pods["ns/a"].cpu_idle_j == pytest.approx(60 * 100.0 * 20 / 80)
    assert a.pods["ns/a"].platform_j == pytest.approx(60 * 200.0 * 20 / 80)
    assert a.total_j == pytest.approx(node.node_j, rel=1e-12)


def test_a_board_held_for_part_of_the_interval_bills_its_idle_rest_to_unallocated() -> None:
    node = NodeEnergy(
        60.0,
        60.0 * 1000.0,
        gpu_j={0: 20 * 500.0 + 40 * 70.0},
        cpu_j=60.0 * 300.0,
        cores=32,
        cpu_idle_w=100.0,
        gpu_idle_w=70.0,
    )
    a = attribute(node, [Holding("ns/late", 20.0, (0,), 4)])
    assert a.pods["ns/late"].gpu_j == pytest.approx(20 * 500.0)
    assert a.unallocated.gpu_j == pytest.approx(40 * 70.0)
    assert a.pods["ns/late"].held_s == 20.0


@pytest.mark.parametrize(
    "holdings",
    [
        [],
        [Holding("a/x", 60.0, (0, 1, 2, 3), 64)],
        [Holding("a/x", 10.0, (0,), 100), Holding("b/y", 59.0, (0, 1), 3)],  # overcommitted cores, a shared board
    ],
)
def test_receipts_and_unallocated_add_up_to_the_node_meter(holdings: list[Holding]) -> None:
    a = attribute(GPU_NODE, holdings)
    assert a.total_j == pytest.approx(GPU_NODE.node_j, rel=1e-12)
    assert all(r.total_j >= 0 for r in a.pods.values())


def test_the_ledger_keeps_a_running_total_and_closes_over_intervals() -> None:
    led = Ledger()
    for held in (60.0, 60.0, 30.0):
        node = NodeEnergy(60.0, 60.0 * 700.0, cpu_j=60.0 * 500.0, cores=80, cpu_idle_w=100.0)
        led.add("n1", node, attribute(node, [Holding("ns/a", held, cpu_cores=80)]))
    assert led.pods["ns/a"].held_s == 150.0
    assert led.pods["ns/a"].total_j > 2 * 60.0 * 600.0
    assert led.closure_error() < 1e-12
    # The roll-up an operator reports by (joulie_api.receipt, shared with kubectl joulie receipts).
    by_ns, total = roll_up(
        [
            ("ns", annotation(led.pods["ns/a"], "n", False, "m", "")),
            ("ns", annotation(Receipt(gpu_j=5.0), "n", True, "m", "")),
        ]
    )
    assert by_ns["ns"].energy_j["gpu"] == pytest.approx(led.pods["ns/a"].gpu_j + 5.0)
    assert (by_ns["ns"].pods, by_ns["ns"].running, total.total_j) == (2, 1, by_ns["ns"].total_j)


def test_an_uncapped_pod_saved_nothing_and_a_capped_one_saved_energy_for_time() -> None:
    r = Receipt(gpu_j=60 * 350.0, cpu_busy_j=600.0, cpu_idle_j=900.0, platform_j=3000.0, held_s=60.0)
    free = counterfactual(r, conditions_for_kind("gpu-training", "gpu", 400.0, 400.0, 400.0))
    assert free.saved_j == 0.0 and free.added_s == 0.0
    capped = counterfactual(r, conditions_for_kind("gpu-training", "gpu", 280.0, 400.0, 400.0))
    assert capped.added_s > 0
    assert capped.saved_low_j <= capped.saved_j <= capped.saved_high_j
    assert capped.saved_high_j > 0
    compute_bound = counterfactual(r, conditions_for_kind("no-such-kind", "gpu", 280.0, 400.0, 400.0))
    assert compute_bound.added_s > capped.added_s  # c = 1 loses the most time to the same cap


def test_a_clock_lock_without_a_cap_saves_energy_and_adds_time_on_the_receipt() -> None:
    """Issue 35's lever may lock the SM clock and leave the power limit at its default: the receipt's
    counterfactual must see the lock, or a decode job locked at 60 % shows nothing saved."""
    r = Receipt(gpu_j=60 * 250.0, cpu_busy_j=600.0, cpu_idle_j=900.0, platform_j=3000.0, held_s=60.0)
    unlocked = counterfactual(r, conditions_for_kind("gpu-inference", "gpu", 310.0, 310.0, 400.0))
    assert unlocked.saved_j == 0.0 and unlocked.added_s == 0.0
    locked = counterfactual(r, conditions_for_kind("gpu-inference", "gpu", 310.0, 310.0, 400.0, lock_ratio=0.6))
    assert locked.added_s > 0 and locked.saved_j > 0  # memory-bound work: most of the power for a little time
    deeper = counterfactual(r, conditions_for_kind("gpu-inference", "gpu", 310.0, 310.0, 400.0, lock_ratio=0.4))
    assert deeper.added_s > locked.added_s


def test_the_idle_floor_is_learnt_from_intervals_without_pods_and_replaces_the_model() -> None:
    empty = NodeEnergy(
        60.0,
        60.0 * 400.0,
        gpu_j={0: 60 * 62.0, 1: 60 * 300.0},
        cpu_j=60.0 * 80.0,
        cores=64,
        cpu_idle_w=82.5,
        gpu_idle_w=50.0,
    )
    floor = IdleFloor().learn(empty, [Holding("ns/a", 60.0, (1,), 0)])
    assert floor.cpu_w == pytest.approx(80.0) and floor.gpu_w == pytest.approx(62.0)  # board 1 was held
    busy = NodeEnergy(60.0, 60.0 * 900.0, cpu_j=60.0 * 300.0, cores=64, cpu_idle_w=82.5)
    assert floor.learn(busy, [Holding("ns/b", 60.0, cpu_cores=8)]) == floor  # cores held: no idle to see
    assert floor.apply(busy).cpu_idle_w == pytest.approx(80.0)
    assert IdleFloor().apply(busy).cpu_idle_w == 82.5


def test_pods_that_hold_cores_but_use_none_show_the_idle_floor_and_a_busy_pod_hides_it() -> None:
    node = NodeEnergy(60.0, 60.0 * 40.0, cpu_j=60.0 * 4.8, cores=8)
    idle_pods = [Holding("ns/notebook", 60.0, cpu_cores=2, cpu_used_core_s=0.5),
                 Holding("ns/wait", 30.0, cpu_cores=1, cpu_used_core_s=0.0)]
    assert IdleFloor().learn(node, idle_pods).cpu_w == pytest.approx(4.8)
    # 6 of 8 cores busy: the packages' power is not their idle.
    busy = [*idle_pods, Holding("ns/load", 60.0, cpu_cores=6, cpu_used_core_s=360.0)]
    assert IdleFloor().learn(replace_cpu(node, 19.8), busy).cpu_w is None
    # One Pod without CPU time: nobody can say the cores were idle.
    assert IdleFloor().learn(node, [*idle_pods, Holding("ns/blind", 60.0, cpu_cores=1)]).cpu_w is None


def replace_cpu(node: NodeEnergy, watts: float) -> NodeEnergy:
    return NodeEnergy(node.interval_s, node.node_j, cpu_j=node.interval_s * watts, cores=node.cores)


def test_the_cpu_idle_source_says_whether_the_receipts_know_the_idle_draw() -> None:
    no_max = NodeEnergy(60.0, 60.0 * 30.0, cpu_j=60.0 * 19.8, cores=8)  # a guest: no package maximum
    assert IdleFloor().cpu_source(no_max) == IDLE_UNKNOWN
    assert IdleFloor().cpu_source(CPU_NODE) == IDLE_MODEL
    assert IdleFloor(cpu_w=4.8).cpu_source(no_max) == IDLE_MEASURED


def test_a_finished_receipt_becomes_the_pods_annotation_with_its_method() -> None:
    r = Receipt(
        gpu_j=7.2e6,
        cpu_busy_j=1.8e5,
        cpu_idle_j=1.4e5,
        platform_j=9e5,
        held_s=3600.0,
        saved_j=3.6e5,
        saved_low_j=1.8e5,
        saved_high_j=5.4e5,
        added_s=120.0,
    )
    ann = parse_annotation(annotation(r, "gpu-0", True, "capmodel-ratio", "2026-12-05T22:00:00Z").to_annotation())
    assert ann.state == "finished" and ann.total_j == pytest.approx(r.total_j, abs=0.5)
    assert ann.saved_range_j == (1.8e5, 5.4e5) and "capmodel-ratio" in ann.method and "attribution" in ann.method


def test_idle_is_turned_into_energy_over_the_meters_own_span_not_the_window() -> None:
    # A 60 s window whose meter samples spanned 54 s: 54 s of a 5 W idle package, nothing busy.
    node = NodeEnergy(60.0, 54.0 * 10.0, cpu_j=54.0 * 5.0, cores=8, meter_span=(1003.0, 1057.0))
    assert IdleFloor().learn(node, []).cpu_w == pytest.approx(5.0)
    # The same span at 8 W: 5 W of it idle for 54 s, the rest busy (not 60 s of idle, which would leave 132 J).
    busy = NodeEnergy(60.0, 54.0 * 12.0, cpu_j=54.0 * 8.0, cores=8, cpu_idle_w=5.0, meter_span=(1003.0, 1057.0))
    billed = attribute(busy, [Holding("ns/a", 60.0, cpu_cores=8, cpu_used_core_s=180.0)])
    assert billed.pods["ns/a"].cpu_idle_j == pytest.approx(270.0) and billed.pods["ns/a"].cpu_busy_j == pytest.approx(162.0)
