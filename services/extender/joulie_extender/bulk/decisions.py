"""One request's filter and prioritize decisions over the cached node state. Pure: no I/O.

Both work on the cache's columns for all candidates at once (kernels.py); the per-node definitions
they equal are filtering.rejection_reason and scoring.score_node.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Protocol

import numpy as np

from joulie_extender.bulk import kernels
from joulie_extender.bulk.columns import Gathered, micros
from joulie_extender.rules.filtering import rejection_reason
from joulie_extender.rules.podmeta import eco_class, workload_kind
from joulie_extender.rules.powerest import Coefficients, extract_pod_demand
from joulie_extender.rules.scoring import ClusterContext, TwinView, marginal_watts
from joulie_extender.wire.scheduler import ExtenderArgs

_US = timedelta(microseconds=1)


class NodeState(Protocol):
    """What decisions read: the watch cache (StateCache)."""

    def twin(self, node_name: str) -> TwinView | None: ...

    def gather(self, names: list[str]) -> Gathered: ...

    def cluster_context(self, now: datetime, staleness: timedelta) -> ClusterContext: ...


def failed_nodes(args: ExtenderArgs, state: NodeState, *, now: datetime, staleness: timedelta) -> dict[str, str]:
    """Candidate node -> reason, for the nodes the pod may not use.

    The power-profile label comes from the Node objects in the request when kube-scheduler sends
    them (nodeCacheCapable: false, the freshest copy), else from the cache's Node watch.
    """
    cls = args.workload_class
    names = args.candidate_names
    g = state.gather(names)
    fresh = kernels.fresh_mask(g, micros(now), staleness // _US)
    label_eco = g.label_eco if args.nodes is None else kernels.eco_label_mask(args.nodes.profile_labels)
    codes = kernels.rejection_codes(g, cls, fresh, label_eco)
    failed: dict[str, str] = {}
    for i in np.flatnonzero(codes).tolist():
        name = names[i]
        reason = kernels.REASONS.get(int(codes[i]))
        if reason is None:  # powered down: the reason names the state, read from the twin itself
            label = args.nodes.profile_labels[i] if args.nodes is not None else None
            reason = rejection_reason(cls, state.twin(name), now=now, staleness=staleness, profile_label=label)
        if reason is not None:
            failed[name] = reason
    return failed


def node_scores(
    args: ExtenderArgs, state: NodeState, *, now: datetime, staleness: timedelta, coeffs: Coefficients
) -> dict[str, int]:
    """Candidate node -> score (0..10). Raises PodSpecError for a malformed pod."""
    cls = args.workload_class
    demand = extract_pod_demand(args.pod, cls)
    ctx = state.cluster_context(now, staleness)
    names = args.candidate_names
    g = state.gather(names)
    # Nodes of one pool share a hardware id: estimate the pod's watts once per hardware kind.
    by_hw = np.zeros(len(g.hardware))
    for hw in np.unique(g.hw_id).tolist():
        if hw >= 0:
            by_hw[hw] = marginal_watts(demand, g.hardware[hw], cls, coeffs)
    fresh = kernels.fresh_mask(g, micros(now), staleness // _US)
    result = kernels.scores(g, kernels.marginal_per_node(g, by_hw), cls, ctx, fresh,
                         workload_kind=workload_kind(args.pod), eco_class=eco_class(args.pod))
    return dict(zip(names, result.tolist(), strict=True))
