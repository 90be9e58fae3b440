"""Per-GPU signals from Prometheus: the queries per naming, and range-vector results into samples by Pod."""

from __future__ import annotations

import pytest

from joulie_controller.readings.gpusignals import (
    ALLOCATION,
    boards_by_pod,
    gpu_queries,
    parse_allocation,
    parse_signal,
    samples_by_pod,
)
from joulie_controller.readings.promql import MetricNaming

Q = gpu_queries(MetricNaming.from_setting("underscore-suffixes"), "k8s.node.name", True, 180)
NOW = 1_000_000.0


def test_one_range_query_per_signal_each_picking_the_gpu_series() -> None:
    assert Q.by_field["power_w"] == 'hw_power_watts{hw_type=~"gpu"}[180s]'
    assert Q.by_field["clock_hz"] == "hw_gpu_speed_hertz[180s]"
    assert Q.by_field["clock_max_hz"] == 'hw_gpu_speed_limit_hertz{hw_limit_type=~"max|"}[180s]'
    assert Q.by_field["utilization"] == 'hw_gpu_utilization_ratio{hw_gpu_task=~"general|"}[180s]'
    assert Q.by_field[ALLOCATION] == "hw_gpu_allocation_ratio[180s]"
    assert len(Q.by_field) == 8
    utf8 = gpu_queries(MetricNaming.from_setting("utf8"), "k8s.node.name", True, 180)
    assert utf8.by_field["power_w"] == '{"hw.power", "hw.type"=~"gpu"}[180s]'
    assert (utf8.node_label, utf8.id_label, utf8.pod_label) == ("k8s.node.name", "hw.id", "k8s.pod.name")


def _series(node: str, hwid: str, points: list[tuple[float, str]], **labels: str) -> dict[str, object]:
    return {"metric": {"k8s_node_name": node, "hw_id": hwid, **labels}, "values": [[t, v] for t, v in points]}


def _alloc(node: str, hwid: str, ns: str, pod: str, at: float, value: str = "1") -> dict[str, object]:
    return _series(node, hwid, [(at, value)], k8s_namespace_name=ns, k8s_pod_name=pod)


def test_signals_join_the_boards_a_pod_holds_and_age_is_the_samples() -> None:
    alloc = parse_allocation(
        [
            _alloc("n1", "gpu-0", "ml", "train", NOW - 5),
            _alloc("n1", "gpu-1", "ml", "train", NOW - 5),
            _alloc("n2", "gpu-0", "ml", "serve", NOW - 5),
        ],
        Q,
    )
    signals = {
        "power_w": parse_signal(
            [
                _series("n1", "gpu-0", [(NOW - 70, "300"), (NOW - 10, "400")]),
                _series("n1", "gpu-1", [(NOW - 12, "380")]),
                _series("n2", "gpu-0", [(NOW - 3, "150")]),
                _series("n2", "gpu-1", [(NOW - 3, "90")]),
            ],
            Q,
        )[0],
        "clock_hz": parse_signal([_series("n1", "gpu-0", [(NOW - 10, "1.4e9")])], Q)[0],
        "clock_max_hz": parse_signal([_series("n1", "gpu-0", [(NOW - 10, "2.0e9")])], Q)[0],
        "dram_active": parse_signal([_series("n2", "gpu-0", [(NOW - 20, "0.6")])], Q)[0],
    }
    got = samples_by_pod(signals, alloc, NOW)
    assert sorted(got) == ["ml/serve", "ml/train"]
    train = got["ml/train"]
    assert [s.power_w for s in train] == [400.0, 380.0]  # the newest point; gpu-1 of n2 is nobody's
    assert train[0].clock_ratio == pytest.approx(0.7)
    assert train[1].clock_ratio is None  # no clock for that board: unknown, not guessed
    assert train[0].age_s == pytest.approx(10) and train[1].age_s == pytest.approx(12)
    (serve,) = got["ml/serve"]
    assert (serve.power_w, serve.dram_active) == (150.0, 0.6)
    assert serve.age_s == pytest.approx(20)


def test_stale_signals_and_allocations_are_dropped_not_guessed() -> None:
    alloc = parse_allocation(
        [_alloc("n1", "gpu-0", "ml", "a", NOW - 5), _alloc("n1", "gpu-1", "ml", "b", NOW - 400)], Q
    )
    signals = {
        "power_w": parse_signal(
            [_series("n1", "gpu-0", [(NOW - 200, "400")]), _series("n1", "gpu-1", [(NOW - 5, "400")])], Q
        )[0],
        "sm_active": parse_signal([_series("n1", "gpu-0", [(NOW - 30, "0.9")])], Q)[0],
    }
    got = samples_by_pod(signals, alloc, NOW, max_age_s=180)
    assert list(got) == ["ml/a"]  # b's allocation is stale: the board is nobody's
    (a,) = got["ml/a"]
    assert (a.power_w, a.sm_active) == (None, 0.9)
    assert a.age_s == pytest.approx(30)
    # Nothing fresh at all: no sample (the estimate stays where it was).
    assert (
        samples_by_pod({"power_w": signals["power_w"]}, {k: v for k, v in alloc.items() if k[1] == "gpu-0"}, NOW, 180)
        == {}
    )


def test_each_pods_boards_come_from_its_fresh_allocation_points() -> None:
    alloc = parse_allocation(
        [
            _alloc("n1", "gpu-3", "ml", "a", NOW - 5),
            _alloc("n1", "gpu-1", "ml", "a", NOW - 5),
            _alloc("n1", "gpu-2", "ml", "b", NOW - 400),  # stale: b's boards are unknown
            _alloc("n1", "nvswitch-0", "ml", "c", NOW - 5),  # not a board
        ],
        Q,
    )
    assert boards_by_pod(alloc, NOW, max_age_s=180) == {("n1", "ml/a"): (1, 3)}


def test_a_pod_names_boards_on_two_nodes_stay_apart_by_node() -> None:
    alloc = parse_allocation([_alloc("n1", "gpu-0", "ml", "a", NOW - 5), _alloc("n2", "gpu-5", "ml", "a", NOW - 5)], Q)
    assert boards_by_pod(alloc, NOW, max_age_s=180) == {("n1", "ml/a"): (0,), ("n2", "ml/a"): (5,)}


def test_a_board_handed_over_goes_to_the_newer_holder_and_released_boards_to_nobody() -> None:
    alloc = parse_allocation(
        [
            _alloc("n1", "gpu-0", "ml", "old", NOW - 60),
            _alloc("n1", "gpu-0", "ml", "new", NOW - 2),
            _alloc("n1", "gpu-1", "ml", "gone", NOW - 2, value="0"),
        ],
        Q,
    )
    assert {b: pod for b, (pod, _) in alloc.items()} == {("n1", "gpu-0"): "ml/new"}


def test_garbage_is_named_and_left_out() -> None:
    got, problems = parse_signal(
        [
            _series("n1", "gpu-0", [(NOW, "NaN")]),
            {"metric": {"hw_id": "gpu-0"}, "values": []},
            _series("n1", "gpu-1", [(NOW, "oops"), (NOW - 1, "0.5")]),
        ],
        Q,
    )
    assert got == {("n1", "gpu-1"): got[("n1", "gpu-1")]} and got[("n1", "gpu-1")].value == 0.5
    assert any("n1 gpu-0: no finite sample" in p for p in problems)
    assert any("expected a node" in p for p in problems)


def test_unpromoted_node_attribute_joins_by_the_exporter() -> None:
    q = gpu_queries(MetricNaming.from_setting("underscore-suffixes"), "k8s.node.name", False, 180)
    row = {
        "metric": {"job": "agent", "instance": "n1", "hw_id": "gpu-0", "k8s_namespace_name": "ml", "k8s_pod_name": "p"},
        "values": [[NOW - 1, "1"]],
    }
    alloc = parse_allocation([row], q)
    power, _ = parse_signal(
        [{"metric": {"job": "agent", "instance": "n1", "hw_id": "gpu-0"}, "values": [[NOW - 1, "250"]]}], q
    )
    assert samples_by_pod({"power_w": power}, alloc, NOW)["ml/p"][0].power_w == 250.0
