"""The GPU decision of one node, per group of boards: one power cap for the node (the cap is one value
per node, ``scope: perGpu``), one SM clock lock per group of boards held by the same Pods. Pure: no I/O.

Why per group: with one lock for the whole node, a compute-bound Pod's budget forbids the lock that
would save a decode Pod's energy on the other boards (docs/work-aware-caps.md, per-board clock locks).
Here the node's cap is the node-wide choice (``joblever.gpu_decision`` over every Pod, as before),
then ``gpu_decision`` runs once per group with that cap fixed, choosing the group's lock within its
own Pods' budgets; a group's rest-of-node share is the node's rest in proportion to its boards. A
board no Pod holds gets no lock.

A group is the boards of Pods that share a board (time-slicing), so one Pod's boards never sit under
two locks. Where a GPU Pod's boards are not known (no ``hw.gpu.allocation`` for it yet, or none
exported), the node is planned as before: one group, one lock over every board.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from joulie_controller.model.capmodel import CapChoice, Work, worst_slowdown
from joulie_controller.model.fsm import PodInfo, pod_key
from joulie_controller.model.lever import choose_gpu_lever, evaluate_per_work
from joulie_controller.policies.joblever import PodContext, gpu_decision
from joulie_controller.policies.plan import BoardLock, PodDecision


@dataclass(frozen=True)
class GpuGroups:
    """A node's GPU boards, where its GPU Pods run."""

    max_w: float
    min_w: float
    ref_w: float
    devices: int
    rest_w: float
    """The rest of the node's power (measured minus the GPUs' modelled draw): each group answers for
    its share of it by its share of the boards."""


@dataclass(frozen=True)
class GpuPlan:
    choice: CapChoice
    """The node's summary: its cap, the deepest lock, the worst slowdown, the saving over the node."""
    lever: str
    """none, cap, lock, cap+lock, or probe where any group probes."""
    decisions: tuple[PodDecision, ...]
    locks: tuple[BoardLock, ...]
    work_locks: tuple[float | None, ...]
    """Each work's lock ratio (None: none), in ``works`` order."""


def board_groups(
    node: str, pods: Sequence[PodInfo], boards: Mapping[tuple[str, str], tuple[int, ...]], devices: int
) -> list[tuple[tuple[int, ...], tuple[int, ...]]] | None:
    """(board indices, positions in ``pods``) per group, Pods sharing a board in one group; None when
    a Pod's boards are not known on ``node`` (or name no board the node has). Only ``(node, Pod)``
    entries are read: an allocation from another node naming the same Pod (stale, or forged) must not
    move this node's locks."""
    held: list[set[int]] = []
    for p in pods:
        mine = {b for b in boards.get((node, pod_key(p)), ()) if 0 <= b < devices}
        if not mine:
            return None
        held.append(mine)
    groups: list[tuple[set[int], set[int]]] = []
    for i, mine in enumerate(held):
        joined = [g for g in groups if g[0] & mine]
        merged = (set(mine).union(*(g[0] for g in joined)), {i}.union(*(g[1] for g in joined)))
        groups = [g for g in groups if not g[0] & mine] + [merged]
    return sorted((tuple(sorted(b)), tuple(sorted(i))) for b, i in groups)


def _common(current: Mapping[int, float], boards: Sequence[int]) -> float | None:
    """The controller's lock in force on every one of ``boards`` when it is one lock, else None."""
    locks = {current.get(b) for b in boards}
    if len(locks) != 1:
        return None
    return next(iter(locks))


def gpu_plan(
    works: Sequence[Work],
    pods: Sequence[PodInfo],
    ctx: PodContext,
    g: GpuGroups,
    tau: float,
    boards: Mapping[tuple[str, str], tuple[int, ...]],
    current: Mapping[int, float],
    node_name: str,
) -> GpuPlan:
    """The node's cap and each group's lock (``works[i]`` is ``pods[i]``'s work); ``boards`` by (node,
    Pod), of which only ``node_name``'s are read."""
    all_boards = tuple(range(g.devices))
    used = sum(w.share for w in works) / g.devices if g.devices > 0 else 0.0
    other = g.rest_w * min(1.0, used)
    groups = board_groups(node_name, pods, boards, g.devices)
    if groups is None:  # a Pod's boards unknown: one lock over every board, as a node-wide lock
        node, lever, decisions = gpu_decision(
            works, pods, ctx, g.max_w, g.min_w, other, tau, g.ref_w, _common(current, all_boards)
        )
        ratio = node.lock_pct / 100.0 if node.lock_pct is not None else None
        locks = (BoardLock(all_boards, node.lock_pct),) if node.lock_pct is not None else ()
        return GpuPlan(node, lever, decisions, locks, tuple(ratio for _ in works))
    # The node's cap: the node-wide choice over every Pod (each within its budget under it).
    cap = choose_gpu_lever(works, g.max_w, g.min_w, other, tau, g.ref_w).pct_of_max
    per_work: list[float | None] = [None] * len(works)
    by_pos: dict[int, PodDecision] = {}
    locks_out: list[BoardLock] = []
    choices: list[CapChoice] = []
    levers: list[str] = []
    for held, pos in groups:
        gw, gp = [works[i] for i in pos], [pods[i] for i in pos]
        c, lv, ds = gpu_decision(
            gw,
            gp,
            ctx,
            g.max_w,
            g.min_w,
            g.rest_w * len(held) / g.devices,
            tau,
            g.ref_w,
            _common(current, held),
            cap_pct=cap,
        )
        choices.append(c)
        levers.append(lv)
        for i, d in zip(pos, ds, strict=True):
            by_pos[i] = d
            per_work[i] = c.lock_pct / 100.0 if c.lock_pct is not None else None
        if c.lock_pct is not None:
            locks_out.append(BoardLock(held, c.lock_pct))
    summary = _summary(works, g, cap, per_work, choices)
    lever = "probe" if "probe" in levers else summary.lever
    return GpuPlan(summary, lever, tuple(by_pos[i] for i in range(len(works))), tuple(locks_out), tuple(per_work))


def _summary(
    works: Sequence[Work], g: GpuGroups, cap: float, locks: Sequence[float | None], choices: Sequence[CapChoice]
) -> CapChoice:
    """The node's GPU choice from its groups': the cap, the deepest lock, the worst slowdown and its
    driver, and the node's saving of energy per work against every board at its reference."""
    ref_pct = round(min(g.ref_w, g.max_w) / g.max_w * 100.0, 1)
    capped = cap < ref_pct - 1e-9
    base = evaluate_per_work(works, g.max_w, g.ref_w, [None] * len(works))
    at = evaluate_per_work(works, g.max_w, g.max_w * cap / 100.0 if capped else g.ref_w, locks)
    used = sum(w.share for w in works) / g.devices if g.devices > 0 else 0.0
    other = g.rest_w * min(1.0, used)
    base_e = (other + base.power_w) / max(base.rate(works), 1e-9)
    e = (other + at.power_w) / max(at.rate(works), 1e-9)
    sd, driver = worst_slowdown(works, base, at)
    if not capped and all(c.lock_pct is None for c in choices):
        driver = choices[0].driver if len(choices) == 1 else "no cap or clock lock saves energy on any group of boards"
    slowdowns = tuple(a / max(b, 1e-9) - 1.0 for a, b in zip(base.speeds, at.speeds, strict=True))
    deepest = min((c.lock_pct for c in choices if c.lock_pct is not None), default=None)
    return CapChoice(
        cap if capped else ref_pct,
        max(0.0, sd),
        1.0 - e / base_e if base_e > 0 else 0.0,
        driver,
        capped=capped,
        lock_pct=deepest,
        slowdowns=slowdowns,
    )
