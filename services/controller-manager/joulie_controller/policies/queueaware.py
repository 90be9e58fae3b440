"""Policy queue_aware_v1: as many performance nodes as the running performance Pods need, between a
base share and the QUEUE_HP_* bounds."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final

from joulie_controller.policies.plan import PolicyInput, PolicyNode, PolicyPlan, clamp01, performance_set, round_half_up
from joulie_controller.settings import Settings

QUEUE_AWARE: Final = "queue-aware-v1"


def queue_aware_count(n_nodes: int, perf_pods: int, s: Settings) -> int:
    base = round_half_up(n_nodes * clamp01(s.policy.queue_hp_base_frac))
    per_node = s.policy.queue_perf_per_hp_node if s.policy.queue_perf_per_hp_node > 0 else 1
    need = math.ceil(perf_pods / per_node) if perf_pods > 0 else 0
    hp_min = max(0, s.policy.queue_hp_min)
    hp_max = s.policy.queue_hp_max if s.policy.queue_hp_max > 0 else n_nodes
    hp_max = max(hp_max, hp_min)
    return max(hp_min, min(hp_max, max(base, need)))


def queue_aware(nodes: Sequence[PolicyNode], perf_pods: int, s: Settings) -> PolicyPlan:
    return PolicyPlan(QUEUE_AWARE, performance_set(nodes, queue_aware_count(len(nodes), perf_pods, s)))


class QueueAware:
    """POLICY_TYPE=queue_aware_v1."""

    def plan(self, inp: PolicyInput) -> PolicyPlan:
        return queue_aware(inp.nodes, inp.performance_pods, inp.settings)
