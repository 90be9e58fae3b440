"""Policy cluster_power_budget: queue-aware demand, then fewer performance nodes and lower eco caps
while the sum of capped budgets exceeds CLUSTER_POWER_BUDGET_W."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from joulie_controller.policies.plan import PolicyInput, PolicyNode, PolicyPlan, performance_set
from joulie_controller.policies.queueaware import queue_aware_count
from joulie_controller.settings import Settings

CLUSTER_POWER_BUDGET: Final = "cluster-power-budget-v1"


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
    budget = s.policy.power_budget_w
    hp = queue_aware_count(len(nodes), perf_pods, s)
    eco_pct_cpu, eco_pct_gpu = s.caps.cpu_eco_pct, s.caps.gpu_eco_pct

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
            pct = max(s.policy.budget_min_cap_pct, min(eco_pct_cpu, (budget - perf_w) / eco_tdp * 100.0))
            pct = round(pct, 1)
            overrides = {n.name: pct for n in nodes if n.name not in perf}
            eco_pct_cpu = eco_pct_gpu = pct
            total_w = total(perf)
        if total_w > budget:
            notes.append(f"budget {budget:.0f} W cannot be met: the plan needs {total_w:.0f} W at the "
                         f"{s.policy.budget_min_cap_pct:.0f}% floor with one performance node per family")
    return PolicyPlan(CLUSTER_POWER_BUDGET, perf, overrides, tuple(notes))


class ClusterPowerBudget:
    """POLICY_TYPE=cluster_power_budget."""

    def plan(self, inp: PolicyInput) -> PolicyPlan:
        return cluster_power_budget(inp.nodes, inp.performance_pods, inp.settings)
