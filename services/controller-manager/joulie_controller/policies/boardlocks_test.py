"""work_aware_v1 per group of boards: one cap for the node, a clock lock per group of boards held by the
same Pods, each Pod within its own budget; free boards get no lock."""

from __future__ import annotations

from dataclasses import replace

from joulie_controller.model.fsm import PodInfo
from joulie_controller.model.jobestimate import JobEstimate, expected_sample, observe, prior_estimate
from joulie_controller.policies.boardlocks import board_groups
from joulie_controller.policies.plan import BoardLock, NodeCaps, PolicyInput
from joulie_controller.policies.registry import plan
from joulie_controller.policies.workaware_test import _nodes
from joulie_controller.settings import PolicySettings, Settings

MAX_W = 400.0


def _pod(name: str, kind: str, gpus: int) -> PodInfo:
    return PodInfo(
        "default",
        name,
        node_name="gpu-1",
        phase="Running",
        labels={"joulie.io/workload-kind": kind},
        cpu_request=4,
        gpu_request=gpus,
    )


def _seen(kind: str, c: float, u: float) -> JobEstimate:
    est = prior_estimate(kind)
    for _ in range(6):
        est = observe(est, [expected_sample(c, u, 1.0, MAX_W)] * 4, MAX_W)
    return est


def _gpu1(
    pods: list[PodInfo],
    boards: dict[str, tuple[int, ...]],
    estimates: dict[str, JobEstimate],
    locks: dict[int, float] | None = None,
    elsewhere: dict[tuple[str, str], tuple[int, ...]] | None = None,
) -> NodeCaps:
    """``boards``: the Pods' boards on gpu-1; ``elsewhere``: more allocations, keyed as the reading is."""
    s = Settings(
        policy=PolicySettings(type="work_aware_v1", queue_hp_base_frac=0.0, queue_hp_min=0),
        trusted_namespaces=("default",),
    )
    nodes = _nodes()
    # The node's measured power: the rest of the node (CPUs, platform) beside the boards' modelled draw.
    inp = PolicyInput(
        nodes,
        0,
        0.0,
        s,
        pods,
        measured_w={"gpu-1": 2500.0},
        job_estimates=estimates,
        gpu_boards={**{("gpu-1", k): v for k, v in boards.items()}, **(elsewhere or {})},
        gpu_locks={"gpu-1": locks} if locks else {},
    )
    return plan("work_aware_v1", nodes, 0, 0.0, s, inp).node_caps["gpu-1"]


DECODE, TRAIN = _pod("decode", "gpu-inference", 4), _pod("train", "gpu-training", 4)
EST = {"default/decode": _seen("gpu-inference", 0.1, 0.3), "default/train": _seen("gpu-training", 0.97, 0.9)}
EST["default/decode"] = replace(EST["default/decode"], calibrated=True)  # seen at two clocks: no probe


def test_a_decode_pod_on_boards_0_to_3_is_locked_and_the_compute_bound_pod_on_4_to_7_is_not() -> None:
    caps = _gpu1([DECODE, TRAIN], {"default/decode": (0, 1, 2, 3), "default/train": (4, 5, 6, 7)}, EST)
    assert len(caps.gpu_locks) == 1 and caps.gpu_locks[0].gpus == (0, 1, 2, 3)
    assert caps.gpu_locks[0].pct_of_max < 100.0
    decode, train = caps.pods
    assert decode.lever == "lock" and 0.0 < decode.predicted_slowdown_pct <= decode.budget_pct
    assert train.lever == "none" and train.predicted_slowdown_pct == 0.0
    assert "boards 0,1,2,3 at" in caps.reason
    # One lock for the node, as before the board map: the compute-bound Pod's budget forbids any.
    whole = _gpu1([DECODE, TRAIN], {}, EST)
    assert whole.gpu_locks == () and whole.pods[0].lever == "none"


def test_free_boards_get_no_lock_and_the_lock_in_force_is_kept_per_group() -> None:
    caps = _gpu1([DECODE], {"default/decode": (2, 3, 4, 5)}, EST)
    assert [b.gpus for b in caps.gpu_locks] == [(2, 3, 4, 5)]
    best = caps.gpu_locks[0].pct_of_max
    # One step off the best and within budget: the group keeps the lock it holds (hysteresis).
    held = _gpu1([DECODE], {"default/decode": (2, 3, 4, 5)}, EST, dict.fromkeys((2, 3, 4, 5), best + 2.5))
    assert held.gpu_locks == (BoardLock((2, 3, 4, 5), best + 2.5),)
    assert held.pods[0].predicted_slowdown_pct <= held.pods[0].budget_pct


def test_pods_sharing_a_board_are_one_group_and_an_unknown_pods_boards_mean_one_node_lock() -> None:
    a, b, c = _pod("a", "k", 2), _pod("b", "k", 1), _pod("c", "k", 1)
    boards = {("n", "default/a"): (0, 1), ("n", "default/b"): (1,), ("n", "default/c"): (5,)}
    assert board_groups("n", [a, b, c], boards, 8) == [((0, 1), (0, 1)), ((5,), (2,))]
    assert board_groups("n", [a, b, c], {("n", "default/a"): (0, 1), ("n", "default/b"): (1,)}, 8) is None
    assert board_groups("n", [a], {("n", "default/a"): (9,)}, 8) is None  # a board the node does not have


def test_a_pods_boards_read_on_another_node_neither_join_nor_stand_for_its_own() -> None:
    a, b = _pod("a", "k", 2), _pod("b", "k", 1)
    # A stale or forged allocation on node m names a's board 1, which b holds on n: read with n's, it
    # would merge a and b into one group under one lock.
    mixed = {("n", "default/a"): (0,), ("m", "default/a"): (1,), ("n", "default/b"): (1,)}
    assert board_groups("n", [a, b], mixed, 8) == [((0,), (0,)), ((1,), (1,))]
    # Boards known only on another node are not this node's: one lock over all of them, as unknown.
    assert board_groups("n", [a], {("m", "default/a"): (0, 1)}, 8) is None


def test_a_forged_allocation_from_another_node_does_not_move_this_nodes_locks() -> None:
    honest = _gpu1([DECODE], {"default/decode": (2, 3, 4, 5)}, EST)
    forged = _gpu1([DECODE], {"default/decode": (2, 3, 4, 5)}, EST, elsewhere={("gpu-2", "default/decode"): (0, 7)})
    assert forged.gpu_locks == honest.gpu_locks and [b.gpus for b in forged.gpu_locks] == [(2, 3, 4, 5)]
    # Its boards named only on another node: planned as one lock over every board of gpu-1.
    away = _gpu1([DECODE], {}, EST, elsewhere={("gpu-2", "default/decode"): (2, 3, 4, 5)})
    assert [b.gpus for b in away.gpu_locks] == [tuple(range(8))]
