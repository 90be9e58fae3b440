"""Policies: how many nodes run performance, and which. Pure: no I/O, no clock (time is an argument).

Every policy returns a `PolicyPlan`: the set of performance nodes (every other eligible node is
eco), the name written to `spec.policy.name`, and optional per-node eco cap overrides (the cluster
power budget policy sets one eco percentage; the work-aware policy sets each node's caps from the
work on it, with the reason).

Policies are pluggable: a policy is a function `(PolicyInput) -> PolicyPlan` in its own module,
registered in `REGISTRY` under its POLICY_TYPE (services/controller-manager/README.md, Policies).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from joulie_api.names import PROFILE_PERFORMANCE
from joulie_controller.fsm import PodInfo
from joulie_controller.hardware import HardwareView
from joulie_controller.settings import Settings

STATIC_PARTITION = "static-partition-v1"
QUEUE_AWARE = "queue-aware-v1"
RULE_SWAP = "rule-swap-v1"
CLUSTER_POWER_BUDGET = "cluster-power-budget-v1"


@dataclass(frozen=True)
class PolicyNode:
    name: str
    hardware: HardwareView
    current_profile: str
    """The node's current power-profile label (performance, eco or unknown)."""


@dataclass(frozen=True)
class PolicyPlan:
    policy_name: str
    performance: frozenset[str]
    eco_cap_pct: Mapping[str, float] = field(default_factory=dict)
    """Per-node eco cap (CPU and GPU, % of max) overriding the settings; empty for most policies."""
    notes: tuple[str, ...] = ()
    node_caps: Mapping[str, NodeCaps] = field(default_factory=dict)
    """Per-node caps chosen from the work on the node (work-aware policy); they win over eco_cap_pct."""
    budget_shed_w: float = 0.0
    """The watts the power budget's caps are set to hold back (work-aware policy): the controller
    keeps it for the next tick's ``PolicyInput.budget_shed_w``."""


@dataclass(frozen=True)
class NodeCaps:
    """Caps a policy chose for one node, and why (written to NodeTwin status.capDecision)."""

    cpu_pct: float
    gpu_pct: float
    reason: str
    cpu_slowdown_pct: float = 0.0
    gpu_slowdown_pct: float = 0.0
    cpu_saving_pct: float = 0.0
    gpu_saving_pct: float = 0.0
    cpu_driver: str = ""
    gpu_driver: str = ""
    capped: bool = False
    """Whether any device is held under its reference limit (default, or maximum)."""
    cpu_capped: bool = False
    gpu_capped: bool = False


@dataclass(frozen=True)
class PolicyInput:
    """Everything a policy may read. Pure data: the kube shell and the benchmark fill it."""

    nodes: Sequence[PolicyNode]
    performance_pods: int
    now_unix_s: float
    settings: Settings
    pods: Sequence[PodInfo] = ()
    measured_w: Mapping[str, float] = field(default_factory=dict)
    """Measured node power by node name (nodes without a valid sample are absent)."""
    trend_w_per_min: Mapping[str, float] = field(default_factory=dict)
    budget_shed_w: float = 0.0
    """What the last tick's plan set the budget's caps to hold back (``PolicyPlan.budget_shed_w``; 0
    after a restart): measured power already has it taken off."""


def round_half_up(x: float) -> int:
    """Go's math.Round for non-negative values (Python's round() is banker's rounding)."""
    return int(math.floor(x + 0.5))


def clamp01(x: float) -> float:
    if not math.isfinite(x):
        return 0.0
    return max(0.0, min(1.0, x))


def performance_set(nodes: Sequence[PolicyNode], hp_count: int) -> frozenset[str]:
    """Which nodes get the `hp_count` performance slots.

    Every hardware family keeps at least one performance node; remaining slots go by the
    Sainte-Laguë divisor method (largest size/(2·slots+1), exact by cross-multiplication, ties to
    the smaller family key), never more than a family has members. Inside a family, nodes that are
    performance already come first, then by name, so a reconcile at constant demand moves nothing
    and one more slot flips exactly one node (house-monotone). Independent of input order.
    """
    if not nodes:
        return frozenset()
    families: dict[str, list[PolicyNode]] = {}
    for node in nodes:
        families.setdefault(node.hardware.family(node.name), []).append(node)
    hp = max(len(families), min(hp_count, len(nodes)))
    slots = dict.fromkeys(families, 1)
    keys = sorted(families)
    for _ in range(hp - len(families)):
        best: str | None = None
        for key in keys:
            size = len(families[key])
            if slots[key] >= size:
                continue
            if best is None:
                best = key
                continue
            # size/(2s+1) > best_size/(2bs+1)  <=>  size*(2bs+1) > best_size*(2s+1)
            lhs = size * (2 * slots[best] + 1)
            rhs = len(families[best]) * (2 * slots[key] + 1)
            if lhs > rhs:
                best = key
        if best is None:
            break
        slots[best] += 1
    chosen: set[str] = set()
    for key, members in families.items():
        ranked = sorted(members, key=lambda n: (n.current_profile != PROFILE_PERFORMANCE, n.name))
        chosen.update(n.name for n in ranked[: slots[key]])
    return frozenset(chosen)


def static_partition(nodes: Sequence[PolicyNode], hp_frac: float) -> PolicyPlan:
    hp = round_half_up(len(nodes) * clamp01(hp_frac))
    return PolicyPlan(STATIC_PARTITION, performance_set(nodes, hp))


def queue_aware_count(n_nodes: int, perf_pods: int, s: Settings) -> int:
    base = round_half_up(n_nodes * clamp01(s.queue_hp_base_frac))
    per_node = s.queue_perf_per_hp_node if s.queue_perf_per_hp_node > 0 else 1
    need = math.ceil(perf_pods / per_node) if perf_pods > 0 else 0
    hp_min = max(0, s.queue_hp_min)
    hp_max = s.queue_hp_max if s.queue_hp_max > 0 else n_nodes
    hp_max = max(hp_max, hp_min)
    return max(hp_min, min(hp_max, max(base, need)))


def queue_aware(nodes: Sequence[PolicyNode], perf_pods: int, s: Settings) -> PolicyPlan:
    return PolicyPlan(QUEUE_AWARE, performance_set(nodes, queue_aware_count(len(nodes), perf_pods, s)))


def rule_swap(nodes: Sequence[PolicyNode], now_unix_s: float, interval_s: float) -> PolicyPlan:
    """Debug policy: one node (node[0] in even phases, node[1] in odd ones) is eco, the rest performance."""
    if interval_s <= 0:
        interval_s = 60.0
    phase = int(now_unix_s // interval_s) % 2
    names = sorted(n.name for n in nodes)
    if len(names) == 1:
        return PolicyPlan(RULE_SWAP, frozenset(names) if phase == 1 else frozenset())
    eco = names[phase] if len(names) > phase else None
    return PolicyPlan(RULE_SWAP, frozenset(n for n in names if n != eco))


def _budget_at(node: PolicyNode, performance: bool, cpu_pct: float, gpu_pct: float) -> float:
    b = node.hardware.budget()
    return b.capped_w(100.0, 100.0) if performance else b.capped_w(cpu_pct, gpu_pct)


def cluster_power_budget(nodes: Sequence[PolicyNode], perf_pods: int, s: Settings) -> PolicyPlan:
    """Keep the sum of node capped budgets under CLUSTER_POWER_BUDGET_W.

    1. Start from the queue-aware demand (base share, or what running performance pods need).
    2. If the plan (performance nodes at 100 %, eco at the eco caps) is over budget, take the largest
       number of performance slots that fits (`performance_set` is house-monotone, so fewer slots
       only turn performance nodes eco and the per-family split holds), down to one per family.
    3. Still over: lower the eco nodes' cap uniformly, not below CLUSTER_BUDGET_MIN_CAP_PCT.
    Nodes with unknown hardware have no budget to count; the plan says so in `notes`.
    """
    budget = s.cluster_power_budget_w
    hp = queue_aware_count(len(nodes), perf_pods, s)
    eco_pct_cpu, eco_pct_gpu = s.cpu_eco_pct, s.gpu_eco_pct

    def total(perf: frozenset[str]) -> float:
        return sum(_budget_at(n, n.name in perf, eco_pct_cpu, eco_pct_gpu) for n in nodes)

    perf = performance_set(nodes, hp)
    if total(perf) > budget:
        # The total only grows with hp (house-monotone sets; a performance node budgets ≥ an eco
        # one), so binary-search the largest hp that fits, down to the one-per-family floor.
        lo, hi = 0, hp  # total(set(lo)) may or may not fit; total(set(hi)) does not
        best = performance_set(nodes, 0)
        while lo < hi:
            mid = (lo + hi) // 2
            candidate = performance_set(nodes, mid)
            if total(candidate) <= budget:
                lo, best = mid + 1, candidate
            else:
                hi = mid
        perf = best
    notes: list[str] = []
    unknown = [n.name for n in nodes if n.hardware.budget().node_tdp_w <= 0]
    if unknown:
        notes.append(f"{len(unknown)} node(s) with unknown hardware are not counted in the budget: "
                     f"{', '.join(unknown[:5])}{'…' if len(unknown) > 5 else ''}")
    overrides: dict[str, float] = {}
    total_w = total(perf)
    if total_w > budget:
        perf_w = sum(_budget_at(n, True, 100, 100) for n in nodes if n.name in perf)
        eco_tdp = sum(n.hardware.budget().node_tdp_w for n in nodes if n.name not in perf)
        if eco_tdp > 0:
            pct = max(s.cluster_budget_min_pct, min(eco_pct_cpu, (budget - perf_w) / eco_tdp * 100.0))
            pct = round(pct, 1)
            overrides = {n.name: pct for n in nodes if n.name not in perf}
            eco_pct_cpu = eco_pct_gpu = pct
            total_w = total(perf)
        if total_w > budget:
            notes.append(f"budget {budget:.0f} W cannot be met: the plan needs {total_w:.0f} W at the "
                         f"{s.cluster_budget_min_pct:.0f}% floor with one performance node per family")
    return PolicyPlan(CLUSTER_POWER_BUDGET, perf, overrides, tuple(notes))


def _work_aware(inp: PolicyInput) -> PolicyPlan:
    from joulie_controller.workaware import work_aware  # (workaware imports this module)

    return work_aware(inp)


REGISTRY: Final[Mapping[str, Callable[[PolicyInput], PolicyPlan]]] = {
    "static_partition": lambda i: static_partition(i.nodes, i.settings.static_hp_frac),
    "queue_aware_v1": lambda i: queue_aware(i.nodes, i.performance_pods, i.settings),
    "rule_swap_v1": lambda i: rule_swap(i.nodes, i.now_unix_s, i.settings.reconcile_interval_s),
    "cluster_power_budget": lambda i: cluster_power_budget(i.nodes, i.performance_pods, i.settings),
    "work_aware_v1": _work_aware,
}
"""POLICY_TYPE -> policy. settings.POLICIES lists the same names (a test keeps them equal)."""


def plan(
    policy_type: str, nodes: Sequence[PolicyNode], perf_pods: int, now_unix_s: float, s: Settings,
    inp: PolicyInput | None = None,
) -> PolicyPlan:
    """The plan of ``policy_type`` (an unknown name falls back to static_partition, as the original)."""
    policy = REGISTRY.get(policy_type, REGISTRY["static_partition"])
    return policy(inp if inp is not None else PolicyInput(nodes, perf_pods, now_unix_s, s))
