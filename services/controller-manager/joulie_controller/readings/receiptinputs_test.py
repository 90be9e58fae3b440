"""The receipts' Prometheus inputs: the queries per naming, and query results into each node's energy."""

from __future__ import annotations

import pytest

from joulie_controller.model.receipt import Holding, attribute
from joulie_controller.readings.promql import MetricNaming
from joulie_controller.readings.receiptinputs import (
    Allocation,
    NodeFacts,
    node_energies,
    pod_allocations,
    pod_cpu_seconds,
    receipt_queries,
    window_range,
)

Q = receipt_queries(MetricNaming.from_setting("underscore-suffixes"), "k8s.node.name", "1m")


def test_queries_read_the_energy_counters_raw_samples_the_allocations_and_the_pods_cpu_time() -> None:
    q = receipt_queries(MetricNaming.from_setting("underscore-suffixes"), "k8s.node.name", "1m", "125000ms")
    # Raw samples (a range selector, no increase()): the window's energy is taken between samples.
    assert q.host_energy_j == "hw_host_energy_joules_total[125000ms]"
    assert q.device_energy_j == 'hw_energy_joules_total{hw_type=~"cpu|gpu"}[125000ms]'
    assert q.pod_cpu_s == 'sum by (namespace, pod) (increase(container_cpu_usage_seconds_total{container!=""}[1m]))'
    assert q.allocation == (
        "max by (k8s_node_name, k8s_namespace_name, k8s_pod_name, hw_id) (max_over_time(hw_gpu_allocation_ratio[1m]))"
    )
    utf8 = receipt_queries(MetricNaming.from_setting("utf8"), "k8s.node.name", "1m")
    assert utf8.device_energy_j == '{"hw.energy", "hw.type"=~"cpu|gpu"}[1m]'


def _row(node: str, value: str, typ: str = "", hwid: str = "") -> tuple[dict[str, str], float]:
    metric = {"k8s_node_name": node, **({"hw_type": typ, "hw_id": hwid} if typ else {})}
    return metric, float(value)


def test_results_become_each_nodes_energy_and_the_books_close() -> None:
    host = [_row("gpu-0", "60000"), _row("cpu-0", "NaN"), _row("elsewhere", "5")]
    devices = [
        _row("gpu-0", "24000", "gpu", "gpu-0"),
        _row("gpu-0", "4200", "gpu", "gpu-1"),
        _row("gpu-0", "6000", "cpu", "package-0"),
        _row("gpu-0", "6000", "cpu", "package-1"),
        _row("gpu-0", "7", "gpu", "GPU-uuid"),
        _row("cpu-0", "900", "cpu", "package-0"),
    ]
    facts = {"gpu-0": NodeFacts(64, 160.0, 70.0), "cpu-0": NodeFacts(80, 80.0, 0.0)}
    energy, problems = node_energies(host, devices, Q, 60.0, facts)
    assert set(energy) == {"gpu-0"}  # cpu-0's meter is unreadable: left out whole
    e = energy["gpu-0"]
    assert e.gpu_j == {0: 24000.0, 1: 4200.0} and e.cpu_j == 12000.0 and e.cores == 64
    assert [p.split(":")[0] for p in problems] == ["cpu-0", "gpu-0"] and "gpu-<index>" in problems[1]
    split = attribute(e, [Holding("ml/train", 60.0, (0,), 8)])
    assert split.pods["ml/train"].gpu_j == 24000.0
    assert split.total_j == pytest.approx(60000.0)


def test_pod_cpu_time_is_keyed_by_namespace_and_name() -> None:
    result = [
        {"metric": {"namespace": "ml", "pod": "train"}, "value": [0, "420.5"]},
        {"metric": {"namespace": "ml"}, "value": [0, "1"]},
        {"metric": {"namespace": "x", "pod": "y"}, "value": [0, "-1"]},
    ]
    assert pod_cpu_seconds(result) == {"ml/train": 420.5}


def test_allocations_name_each_pods_boards_on_each_node() -> None:
    def row(node: str, pod: str, hwid: str, value: str = "1") -> dict[str, object]:
        metric = {"k8s_node_name": node, "k8s_namespace_name": "ml", "k8s_pod_name": pod, "hw_id": hwid}
        return {"metric": metric, "value": [0, value]}

    got = pod_allocations(
        [row("g1", "a", "gpu-1"), row("g1", "a", "gpu-0"), row("g2", "b", "gpu-2"), row("g1", "c", "gpu-3", "0")], Q
    )
    assert got == [
        Allocation("g1", "ml/a", "gpu-0"),
        Allocation("g1", "ml/a", "gpu-1"),
        Allocation("g2", "ml/b", "gpu-2"),
    ]


def test_the_energy_read_covers_the_whole_window_billed() -> None:
    # The controller closes a window at its first tick past RECEIPT_WINDOW: 20.4 s, not 20 s.
    assert window_range(20.4) == "20400ms" and window_range(60.0) == "60000ms"
    assert window_range(0.0) == "1ms"
    assert (
        "[20400ms]"
        in receipt_queries(
            MetricNaming.from_setting("underscore-suffixes"), "k8s.node.name", window_range(20.4)
        ).allocation
    )
