"""S18: the controller's receipt counters over its windows against the node meters and the per-Pod truth."""

from __future__ import annotations

from dataclasses import replace

from joulie_simcluster.smoke.receiptaccuracy import (
    Books,
    TruthAt,
    compose_truth,
    parse_books,
    parse_truth,
    receipt_accuracy,
    truth_instants,
)

METRICS = """\
# TYPE joulie_pod_energy_joules counter
joulie_pod_energy_joules_total{k8s_namespace_name="sim",k8s_pod_name="a",k8s_node_name="g1",joulie_energy_device="gpu"} 900.0
joulie_pod_energy_joules_total{k8s_namespace_name="sim",k8s_pod_name="a",k8s_node_name="g1",joulie_energy_device="platform"} 100.0
joulie_pod_energy_joules_total{k8s_namespace_name="sim",k8s_pod_name="b",k8s_node_name="g1",joulie_energy_device="gpu"} 300.0
# TYPE joulie_node_energy_unallocated_joules counter
joulie_node_energy_unallocated_joules_total{k8s_node_name="g1"} 200.0
# TYPE joulie_receipt_window_end_timestamp_seconds gauge
joulie_receipt_window_end_timestamp_seconds 1000.5
# TYPE joulie_receipt_cpu_idle_watts gauge
joulie_receipt_cpu_idle_watts{k8s_node_name="g1",source="measured"} 80.0
joulie_receipt_cpu_idle_watts{k8s_node_name="vm",source="unknown"} 0.0
# TYPE joulie_receipt_meter_end_timestamp_seconds gauge
joulie_receipt_meter_end_timestamp_seconds{k8s_node_name="g1"} 998.25
"""


def books(end: float, a: float, b: float, unalloc: float, node: str = "g1") -> Books:
    return Books(end, {"sim/a": (node, a), "sim/b": (node, b)}, {node: unalloc})


def truth(a: float, b: float, metered: float, node: str = "g1") -> TruthAt:
    return TruthAt({"sim/a": (node, a), "sim/b": (node, b)}, {node: metered})


def test_the_controllers_counters_are_read_by_pod_and_node() -> None:
    got = parse_books(METRICS)
    assert got.window_end_s == 1000.5 and got.pods == {"sim/a": ("g1", 1000.0), "sim/b": ("g1", 300.0)}
    assert got.unallocated == {"g1": 200.0} and got.idle_unknown == {"vm"} and got.meter_end == {"g1": 998.25}
    doc = {"pods": {"sim/a": {"node": "g1", "heldS": 3, "energyJ": {"gpu": 5.0, "cpuBusy": 1.0, "cpuIdle": 0, "platform": 2}}},
           "nodes": {"g1": {"meteredJ": 50.0}}}
    assert parse_truth(doc) == TruthAt({"sim/a": ("g1", 8.0)}, {"g1": 50.0})


def test_receipts_that_close_on_the_meter_and_match_the_truth_pass_and_say_by_how_much() -> None:
    # Over the span: a 1000 J (truth 990), b 400 J (truth 404), unallocated 100: 1500 J against a 1505 J meter.
    r = receipt_accuracy(books(100.0, 5_000, 2_000, 1_000), books(130.0, 6_000, 2_400, 1_100),
                         truth(4_000, 1_600, 9_000), truth(4_990, 2_004, 10_505), {"g1"}, set(), ["g1"])
    assert r.status == "pass", r.observed
    assert "closure on 1 Nodes mean 0.33 %" in r.observed and "worst +1.01 % (sim/a)" in r.observed
    assert "g1: a +1.01 %, b -0.99 %" in r.observed and "over 30.0s" in r.observed
    # The node read 0.33 % low: what the split itself adds is a's error beyond that.
    assert "closure by Node: g1 -0.33 %" in r.observed and "split (Pod less its Node's reading)" in r.observed
    assert "worst +1.35 % (sim/a)" in r.observed


def test_a_pod_off_its_truth_or_a_node_off_its_meter_fails_and_is_named() -> None:
    a, b = books(100.0, 5_000, 2_000, 1_000), books(130.0, 6_000, 2_400, 1_100)
    off_pod = receipt_accuracy(a, b, truth(4_000, 1_600, 9_000), truth(4_900, 2_100, 10_500), {"g1"}, set(), [])
    assert off_pod.status == "fail" and "sim/a: receipt +11.11 % off its truth" in off_pod.observed
    off_meter = receipt_accuracy(a, b, truth(4_000, 1_600, 9_000), truth(5_000, 2_000, 10_600), {"g1"}, set(), [])
    assert off_meter.status == "fail" and "g1: receipts + unallocated -6.25 % off its meter" in off_meter.observed


def test_pods_whose_boards_nothing_maps_are_shown_apart_and_no_window_closing_fails() -> None:
    a, b = books(100.0, 5_000, 2_000, 1_000), books(130.0, 5_100, 2_040, 1_960)
    r = receipt_accuracy(a, b, truth(4_000, 1_600, 9_000), truth(5_000, 2_000, 10_100), {"g1"}, {"g1"}, [])
    assert r.status == "pass" and "not judged (no hw.gpu.allocation" in r.observed and "sim/a -90.00 %" in r.observed
    same = receipt_accuracy(a, a, truth(1, 1, 1), truth(1, 1, 1), {"g1"}, set(), [])
    assert same.status == "fail" and "no receipt window closed" in same.observed


def test_pods_on_a_node_whose_cpu_idle_the_controller_does_not_know_are_shown_apart_not_judged() -> None:
    a = books(100.0, 5_000, 2_000, 1_000)
    b = Books(130.0, {"sim/a": ("g1", 6_050), "sim/b": ("g1", 2_350)}, {"g1": 1_100}, {"g1"})
    r = receipt_accuracy(a, b, truth(4_000, 1_600, 9_000), truth(5_000, 2_000, 10_500), {"g1"}, set(), [])
    assert r.status == "pass", r.observed
    assert "not judged (the controller knows no CPU idle draw" in r.observed and "sim/a +5.00 %" in r.observed
    # The node's closure is still judged.
    assert "closure on 1 Nodes" in r.observed
    known = replace(b, idle_unknown=set())
    r = receipt_accuracy(a, known, truth(4_000, 1_600, 9_000), truth(5_000, 2_000, 10_500), {"g1"}, set(), [])
    assert r.status == "fail" and "sim/a: receipt +5.00 % off its truth" in r.observed


def test_the_step_takes_the_counters_of_a_close_once_they_have_settled() -> None:
    from joulie_simcluster.smoke.receiptaccuracystep import next_close

    pages = iter([METRICS.replace("1000.5", "990.0"), METRICS, METRICS])
    got = next_close("http://cm/metrics", 995.0, 10.0, read=lambda _: next(pages))
    assert got.window_end_s == 1000.5 and got.unallocated == {"g1": 200.0}


def test_each_nodes_truth_is_read_where_its_counted_meter_samples_end() -> None:
    books = Books(100.0, {"sim/a": ("g1", 1.0), "sim/c": ("g2", 1.0)}, {"g1": 0.0, "g2": 0.0}, meter_end={"g1": 98.5})
    assert truth_instants(books) == {"g1": 98.5, "g2": 100.0}
    asked: list[float] = []

    def truth(at: float) -> TruthAt:
        asked.append(at)
        return TruthAt({"sim/a": ("g1", at), "sim/c": ("g2", 10 * at)}, {"g1": at, "g2": 10 * at})

    def with_stray(at: float) -> TruthAt:
        t = truth(at)
        return TruthAt({**t.pods, "sim/x": ("g3", at)}, {**t.metered, "g3": at})

    got = compose_truth(truth_instants(books), with_stray, books.window_end_s)
    # g3 is in no counter of the controller's: read at the close, so its Pod is still judged (and fails).
    assert got == TruthAt({"sim/a": ("g1", 98.5), "sim/c": ("g2", 1000.0), "sim/x": ("g3", 100.0)},
                          {"g1": 98.5, "g2": 1000.0, "g3": 100.0})
    assert asked == [98.5, 100.0]
