"""The extender's public surface, pure part: what the products (the simulated cluster, the benchmark, the
acceptance tests) may import of its scoring model. It imports no I/O (the pure-core contract covers it);
the caches are in ``shell_api``. Everything else in ``joulie_extender`` is internal and may move.

The scoring model the benchmark replays: the pod's demand and class, the node's hardware and twin views,
the cluster context, the marginal watts and the node score (exactly what ``/prioritize`` computes).
"""

from __future__ import annotations

from joulie_extender.rules.podmeta import eco_class, workload_kind
from joulie_extender.rules.powerest import Coefficients, HardwareInfo, PodDemand, extract_pod_demand
from joulie_extender.rules.scoring import (
    ClusterContext,
    ScoreBreakdown,
    TwinView,
    cluster_context,
    marginal_watts,
    score_node,
)
from joulie_extender.wire.scheduler import workload_class
from joulie_extender.wire.views import hardware_info, twin_view

__all__ = [
    "ClusterContext",
    "Coefficients",
    "HardwareInfo",
    "PodDemand",
    "ScoreBreakdown",
    "TwinView",
    "cluster_context",
    "eco_class",
    "extract_pod_demand",
    "hardware_info",
    "marginal_watts",
    "score_node",
    "twin_view",
    "workload_class",
    "workload_kind",
]
