"""One request's filter and prioritize decisions over the cached node state. Pure: no I/O."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Protocol

from joulie_extender.filtering import rejection_reason
from joulie_extender.podmeta import eco_class, workload_kind
from joulie_extender.powerest import Coefficients, HardwareInfo, extract_pod_demand
from joulie_extender.scoring import ClusterContext, ScoreBreakdown, TwinView, marginal_watts, score_node
from joulie_extender.views import profile_label_of
from joulie_extender.wire import ExtenderArgs


class NodeState(Protocol):
    """What decisions read: the watch cache, or a fixture in tests."""

    def twin(self, node_name: str) -> TwinView | None: ...

    def hardware(self, node_name: str) -> HardwareInfo | None: ...

    def profile_label(self, node_name: str) -> str | None: ...

    def cluster_context(self, now: datetime, staleness: timedelta) -> ClusterContext: ...


def failed_nodes(args: ExtenderArgs, state: NodeState, *, now: datetime, staleness: timedelta) -> dict[str, str]:
    """Candidate node -> reason, for the nodes the pod may not use.

    The power-profile label comes from the Node objects in the request when kube-scheduler sends
    them (nodeCacheCapable: false, the freshest copy), else from the cache's Node watch.
    """
    cls = args.workload_class
    failed: dict[str, str] = {}
    request_labels = (
        {n["metadata"]["name"]: profile_label_of(n) for n in args.nodes} if args.nodes is not None else None
    )
    for name in args.candidate_names:
        label = request_labels.get(name) if request_labels is not None else state.profile_label(name)
        reason = rejection_reason(cls, state.twin(name), now=now, staleness=staleness, profile_label=label)
        if reason is not None:
            failed[name] = reason
    return failed


def node_scores(
    args: ExtenderArgs, state: NodeState, *, now: datetime, staleness: timedelta, coeffs: Coefficients
) -> dict[str, ScoreBreakdown]:
    """Candidate node -> score (0..10) with its breakdown. Raises PodSpecError for a malformed pod."""
    cls = args.workload_class
    demand = extract_pod_demand(args.pod, cls)
    ctx = state.cluster_context(now, staleness)
    kind, eco = workload_kind(args.pod), eco_class(args.pod)
    # Nodes of one pool share a HardwareInfo value: estimate the pod's watts once per hardware kind.
    watts: dict[HardwareInfo | None, float] = {}
    scores: dict[str, ScoreBreakdown] = {}
    for name in args.candidate_names:
        hw = state.hardware(name)
        marginal_w = watts.get(hw)
        if marginal_w is None:
            marginal_w = watts[hw] = marginal_watts(demand, hw, cls, coeffs)
        scores[name] = score_node(state.twin(name), marginal_w, cls, ctx, now=now, staleness=staleness,
                                   workload_kind=kind, eco_class=eco)
    return scores
