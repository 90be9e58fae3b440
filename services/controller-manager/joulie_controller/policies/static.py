"""Policy static_partition: a fixed share of the nodes (STATIC_HP_FRAC) runs performance."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from joulie_controller.policies.plan import PolicyInput, PolicyNode, PolicyPlan, clamp01, performance_set, round_half_up

STATIC_PARTITION: Final = "static-partition-v1"


def static_partition(nodes: Sequence[PolicyNode], hp_frac: float) -> PolicyPlan:
    hp = round_half_up(len(nodes) * clamp01(hp_frac))
    return PolicyPlan(STATIC_PARTITION, performance_set(nodes, hp))


class StaticPartition:
    """POLICY_TYPE=static_partition: round(N x STATIC_HP_FRAC) performance nodes."""

    def plan(self, inp: PolicyInput) -> PolicyPlan:
        return static_partition(inp.nodes, inp.settings.policy.static_hp_frac)
