"""Live receipts: Pods seen over windows, split, summed, and written when changed."""

from __future__ import annotations

import json

import pytest

from joulie_api.generated.nodetwin import NodeTwinSpec
from joulie_api.receipt import parse_annotation
from joulie_controller.model.fsm import PodInfo
from joulie_controller.model.hardware import HardwareView
from joulie_controller.model.receipt import NodeEnergy
from joulie_controller.readings.gpuplausibility import NodeGpus
from joulie_controller.readings.receiptinputs import Allocation
from joulie_controller.reconcile.receiptboards import believed_boards
from joulie_controller.reconcile.receipts import ReceiptBook, Window, conditions


def pod(name: str, node: str, cores: float = 4.0, phase: str = "Running", gpus: int = 0) -> PodInfo:
    return PodInfo("team", name, node_name=node, phase=phase, cpu_request=cores, gpu_request=gpus)


def cpu_node(node_j: float, cpu_j: float, t: float = 60.0) -> NodeEnergy:
    return NodeEnergy(t, node_j, {}, cpu_j, 32.0, 100.0, 0.0)


def test_two_cpu_pods_sharing_a_node_split_it_and_the_books_close() -> None:
    book = ReceiptBook()
    assert book.see([pod("a", "n1", 8), pod("b", "n1", 8), pod("wait", "", phase="Pending")], 0.0, {}) == []
    got = book.close(Window(0.0, 60.0, {"n1": cpu_node(30_000, 12_000)}), "t1")
    assert [w.pod for w in got.writes] == ["team/a", "team/b"]
    a = parse_annotation(got.writes[0].annotation)
    assert (a.state, a.node, a.held_s, a.updated) == ("running", "n1", 60.0, "t1")
    billed = sum(r.total_j for _, r in got.parts.values()) + got.unallocated["n1"].total_j
    assert billed == pytest.approx(30_000)
    # Same requests, no CPU time: the same bill; a quarter of the cores each of idle, half unallocated.
    assert got.parts["team/a"][1].total_j == pytest.approx(got.parts["team/b"][1].total_j)
    assert got.parts["team/a"][1].cpu_idle_j == pytest.approx(6000 * 8 / 32)
    for w in got.writes:
        book.wrote(w)

    # b finishes 15 s into the next window; a uses three times b's CPU time.
    assert book.see([pod("a", "n1", 8)], 120.0, {}) == ["team/b"]
    book.finish("team/b", 75.0)
    got = book.close(
        Window(60.0, 120.0, {"n1": cpu_node(28_000, 10_000)}, cpu_used={"team/a": 300.0, "team/b": 100.0}), "t2"
    )
    states = {w.pod: parse_annotation(w.annotation) for w in got.writes}
    assert states["team/b"].state == "finished" and states["team/b"].held_s == pytest.approx(75.0)
    assert got.parts["team/a"][1].cpu_busy_j == pytest.approx(3 * got.parts["team/b"][1].cpu_busy_j)
    assert book.ledger.closure_error() < 1e-12
    for w in got.writes:
        book.wrote(w)
    assert "team/b" not in book.spans and "team/b" not in book.ledger.pods


def test_an_unchanged_receipt_is_not_written_again() -> None:
    book = ReceiptBook()
    book.see([pod("a", "n1")], 0.0, {"team/a": -30.0})
    first = book.close(Window(0.0, 60.0, {"n1": cpu_node(30_000, 12_000)}), "t1").writes
    assert parse_annotation(first[0].annotation).held_s == 60.0  # started before the window: all of it
    book.wrote(first[0])
    # The node's meter missing from the next window: nothing billed, nothing to write, the node named.
    book.see([pod("a", "n1")], 120.0, {})
    again = book.close(Window(60.0, 120.0, {}), "t2")
    assert again.writes == [] and again.skipped == ["n1"]


def test_a_gpu_pod_is_billed_its_boards_and_the_rest_is_unallocated() -> None:
    book = ReceiptBook()
    book.see([pod("train", "g1", 16, gpus=2)], 0.0, {"team/train": 0.0})
    energy = NodeEnergy(60.0, 200_000, {0: 40_000, 1: 38_000, 2: 5_000, 3: 5_000}, 30_000, 64.0, 120.0, 80.0)
    got = book.close(Window(0.0, 60.0, {"g1": energy}, gpus={("g1", "team/train"): (0, 1)}), "t1")
    train = got.parts["team/train"][1]
    assert train.gpu_j == pytest.approx(78_000)
    assert got.unallocated["g1"].gpu_j == pytest.approx(10_000)
    assert train.total_j + got.unallocated["g1"].total_j == pytest.approx(200_000)
    body = json.loads(got.writes[0].annotation)
    assert body["energyJ"]["gpu"] == 78_000.0


def test_conditions_follow_the_twin_and_a_cap_claims_a_saving() -> None:
    book = ReceiptBook()
    book.see([pod("train", "g1", 16, gpus=1)], 0.0, {})
    views = {"g1": HardwareView(cpu_cores=64, cpu_max_w_per_socket=300, gpu_count=4, gpu_max_w=700, gpu_default_w=700)}
    capped = NodeTwinSpec.model_validate(
        {"nodeName": "g1", "profile": "eco", "gpu": {"powerCap": {"scope": "perGpu", "capPctOfMax": 60}}}
    )
    cond = conditions(book.spans, {("g1", "team/train"): (0,)}, {"g1": capped}, views, {})
    assert cond["team/train"].limit_w == pytest.approx(420) and cond["team/train"].ref_w == 700
    energy = NodeEnergy(60.0, 60_000, {0: 25_000}, 10_000, 64.0, 120.0, 80.0)
    got = book.close(Window(0.0, 60.0, {"g1": energy}, gpus={("g1", "team/train"): (0,)}, conditions=cond), "t1")
    r = got.parts["team/train"][1]
    assert r.saved_low_j <= r.saved_j <= r.saved_high_j and r.added_s > 0
    # No cap in force: nothing saved, no time added.
    free = conditions(book.spans, {("g1", "team/train"): (0,)}, {}, views, {})
    assert free["team/train"].limit_w == free["team/train"].ref_w


def test_a_pods_counterfactual_takes_the_lock_on_its_own_boards_not_its_neighbours() -> None:
    book = ReceiptBook()
    book.see([pod("decode", "g1", 8, gpus=2), pod("train", "g1", 8, gpus=2)], 0.0, {})
    views = {"g1": HardwareView(cpu_cores=64, cpu_max_w_per_socket=300, gpu_count=4, gpu_max_w=700, gpu_default_w=700)}
    locked = NodeTwinSpec.model_validate(
        {"nodeName": "g1", "profile": "eco", "gpu": {"clockLocks": [{"gpus": [0, 1], "pctOfMax": 60}]}}
    )
    boards = {("g1", "team/decode"): (0, 1), ("g1", "team/train"): (2, 3)}
    cond = conditions(book.spans, boards, {"g1": locked}, views, {})
    assert cond["team/decode"].lock_ratio == pytest.approx(0.6)
    assert cond["team/train"].lock_ratio == 1.0


def test_a_pod_created_again_under_its_name_inside_a_window_gets_a_receipt_of_its_own() -> None:
    book = ReceiptBook()
    first = PodInfo("team", "a", node_name="n1", cpu_request=8, uid="u1")
    book.see([first], 0.0, {"team/a": 0.0})
    for w in book.close(Window(0.0, 60.0, {"n1": cpu_node(30_000, 12_000)}), "t1").writes:
        book.wrote(w)
    # Deleted at 90 s, created again (same name, same node) at 100 s: the tick sees only the new one.
    second = PodInfo("team", "a", node_name="n1", cpu_request=8, uid="u2")
    assert book.see([second], 110.0, {"team/a": 100.0}) == ["u1"]
    book.finish("u1", 90.0)
    got = book.close(Window(60.0, 120.0, {"n1": cpu_node(30_000, 12_000)}), "t2")
    by_uid = {w.uid: (w.pod, parse_annotation(w.annotation)) for w in got.writes}
    assert by_uid["u1"][0] == by_uid["u2"][0] == "team/a"
    assert by_uid["u1"][1].state == "finished" and by_uid["u1"][1].held_s == pytest.approx(90.0)
    assert by_uid["u2"][1].state == "running" and by_uid["u2"][1].held_s == pytest.approx(20.0)
    # The metrics name Pods by name: the two parts of this window add up under it.
    assert got.parts["team/a"][1].held_s == pytest.approx(30.0 + 20.0)
    for w in got.writes:
        book.wrote(w)
    assert set(book.spans) == {"u2"}


def test_a_finished_pod_billed_nothing_is_named_by_its_name_not_its_uid() -> None:
    book = ReceiptBook()
    p = PodInfo("team", "a", node_name="n1", phase="Running", cpu_request=4.0, uid="u-123")
    book.see([p], 0.0, {"team/a": 0.0})
    (gone,) = book.see([], 30.0, {})
    book.finish(gone, 30.0)
    assert book.finished_unbilled(60.0) == ["team/a"]
    assert book.spans == {}


def test_two_pods_of_one_name_in_a_window_share_its_cpu_time_instead_of_each_reading_all_of_it() -> None:
    book = ReceiptBook()
    old = PodInfo("team", "a", node_name="n1", cpu_request=8, uid="u1")
    neighbour = PodInfo("team", "c", node_name="n1", cpu_request=8, uid="u3")
    book.see([old, neighbour], 0.0, {"u1": 0.0, "u3": 0.0})
    # a is deleted at 30 s and created again under its name at once; cAdvisor names both "team/a".
    new = PodInfo("team", "a", node_name="n1", cpu_request=8, uid="u2")
    assert book.see([new, neighbour], 45.0, {"u2": 30.0}) == ["u1"]
    book.finish("u1", 30.0)
    cpu_time = {"team/a": 300.0, "team/c": 300.0}  # the name used as much CPU time as its neighbour
    got = book.close(Window(0.0, 60.0, {"n1": cpu_node(30_000, 12_000)}, cpu_used=cpu_time), "t1")
    a, c = got.parts["team/a"][1], got.parts["team/c"][1]
    assert a.cpu_busy_j == pytest.approx(c.cpu_busy_j)  # the name's CPU time counted once, not twice
    u1, u2 = book.ledger.pods["u1"], book.ledger.pods["u2"]
    assert u1.cpu_busy_j == pytest.approx(u2.cpu_busy_j)  # 30 s each of the name's 60 s
    assert book.ledger.closure_error() < 1e-12


def test_refused_allocations_bill_nobody_and_the_rest_of_the_node_stands() -> None:
    book = ReceiptBook()
    book.see([pod("train", "g1", 16, gpus=1), pod("other", "g2", 16, gpus=1)], 0.0, {"team/train": 0.0})
    allocations = [
        Allocation("g1", "team/train", "gpu-0"),
        Allocation("g1", "team/train", "gpu-7"),  # g1 has 4 boards: forged
        Allocation("g1", "team/other", "gpu-1"),  # other runs on g2, not g1
        Allocation("g2", "team/other", "gpu-1"),
    ]
    on = {s.node: {s.pod} for s in book.spans.values()}
    gpus, refused = believed_boards(allocations, {"g1": NodeGpus(4, 700.0), "g2": NodeGpus(4, 700.0)}, on)
    assert gpus == {("g1", "team/train"): (0,), ("g2", "team/other"): (1,)}
    assert [(r.allocation.hwid, r.kind) for r in refused] == [("gpu-7", "unlisted-board"), ("gpu-1", "pod-not-on-node")]
    boards = {0: 40_000.0, 1: 30_000.0, 2: 5_000.0, 3: 5_000.0}
    energy = {n: NodeEnergy(60.0, 200_000, boards, 30_000, 64.0, 120.0, 80.0) for n in ("g1", "g2")}
    got = book.close(Window(0.0, 60.0, energy, gpus=gpus), "t1")
    train, other = got.parts["team/train"][1], got.parts["team/other"][1]
    assert train.gpu_j == pytest.approx(40_000) and other.gpu_j == pytest.approx(30_000)
    assert got.unallocated["g1"].gpu_j == pytest.approx(40_000)  # board 1 (refused) and the unheld 2, 3
    # Billed as one board, not two: train's platform share is other's, each holding one board on its node.
    assert train.platform_j == pytest.approx(other.platform_j)


def test_each_window_says_the_cpu_idle_it_billed_and_where_it_came_from() -> None:
    book = ReceiptBook()
    book.see([pod("load", "vm", 6), pod("idle", "vm", 1), pod("busy", "n1", 8)], 0.0, {})
    guest = NodeEnergy(60.0, 60.0 * 30.0, {}, 60.0 * 19.8, 8.0, 0.0, 0.0)  # no package maximum: no model
    got = book.close(Window(0.0, 60.0, {"vm": guest, "n1": cpu_node(30_000, 12_000)},
                            cpu_used={"team/load": 360.0, "team/idle": 0.0, "team/busy": 400.0}), "t1")
    assert got.cpu_idle == {"vm": (0.0, "unknown"), "n1": (100.0, "model")}
    # The load finishes; the idle Pod holds its core and uses none: the floor is measured from then on.
    book.see([pod("idle", "vm", 1)], 120.0, {})
    book.finish("team/load", 60.0)
    idle = NodeEnergy(60.0, 60.0 * 10.0, {}, 60.0 * 4.8, 8.0, 0.0, 0.0)
    got = book.close(Window(60.0, 120.0, {"vm": idle}, cpu_used={"team/idle": 0.1}), "t2")
    assert got.cpu_idle["vm"][1] == "measured" and got.cpu_idle["vm"][0] == pytest.approx(4.8)
