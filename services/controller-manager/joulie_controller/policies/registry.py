"""The policy registry: POLICY_TYPE -> policy. A new policy is one module in this package (a class
with ``plan(PolicyInput) -> PolicyPlan``, see ``plan.Policy``) and one entry here; its POLICY_TYPE is
also one of ``settings.POLICIES``, which the settings parser checks (a test keeps the two equal)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from joulie_controller.policies.plan import Policy, PolicyInput, PolicyNode, PolicyPlan
from joulie_controller.policies.powerbudget import ClusterPowerBudget
from joulie_controller.policies.queueaware import QueueAware
from joulie_controller.policies.ruleswap import RuleSwap
from joulie_controller.policies.static import StaticPartition
from joulie_controller.policies.workaware import WorkAware
from joulie_controller.settings import Settings

DEFAULT: Final = "static_partition"

REGISTRY: Final[Mapping[str, Policy]] = {
    "static_partition": StaticPartition(),
    "queue_aware_v1": QueueAware(),
    "rule_swap_v1": RuleSwap(),
    "cluster_power_budget": ClusterPowerBudget(),
    "work_aware_v1": WorkAware(),
}
"""POLICY_TYPE -> policy. settings.POLICIES lists the same names (a test keeps them equal)."""


def plan(
    policy_type: str, nodes: Sequence[PolicyNode], perf_pods: int, now_unix_s: float, s: Settings,
    inp: PolicyInput | None = None,
) -> PolicyPlan:
    """The plan of ``policy_type`` (an unknown name falls back to static_partition, as the original)."""
    policy = REGISTRY.get(policy_type, REGISTRY[DEFAULT])
    return policy.plan(inp if inp is not None else PolicyInput(nodes, perf_pods, now_unix_s, s))
