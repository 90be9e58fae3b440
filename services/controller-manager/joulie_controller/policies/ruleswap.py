"""Policy rule_swap_v1 (debug): one node alternates to eco every RECONCILE_INTERVAL."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from joulie_controller.policies.plan import PolicyInput, PolicyNode, PolicyPlan

RULE_SWAP: Final = "rule-swap-v1"


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


class RuleSwap:
    """POLICY_TYPE=rule_swap_v1."""

    def plan(self, inp: PolicyInput) -> PolicyPlan:
        return rule_swap(inp.nodes, inp.now_unix_s, inp.settings.reconcile.interval_s)
