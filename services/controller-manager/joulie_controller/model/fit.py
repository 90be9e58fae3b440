"""Would a Pod fit a Node: the kube-scheduler predicates the power policy needs to decide a resume.

Pure, and deliberately the subset cluster-autoscaler simulates for a scale-up: resource requests
(CPU, memory, GPUs) against what the node has left, nodeSelector, required node affinity
(matchExpressions In, NotIn, Exists, DoesNotExist, Gt, Lt) and tolerations against NoSchedule /
NoExecute taints. Pod affinity, topology spread and volumes are not simulated: a Pod they keep
pending would wake a node it cannot use, then the resume timeout ends the attempt, never a loop.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from joulie_controller.model.fsm import PodInfo, Requirement, Toleration
from joulie_controller.model.hardware import NodeInfo, Taint

# PreferNoSchedule is a preference, not a predicate.
BLOCKING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})


@dataclass(frozen=True)
class Room:
    """What a node still offers Pods: cores, bytes, GPUs."""

    cpu: float
    memory_bytes: float
    gpus: int

    def minus(self, pod: PodInfo) -> Room:
        return Room(self.cpu - pod.cpu_request, self.memory_bytes - pod.memory_request_bytes,
                    self.gpus - pod.gpu_request)

    def holds(self, pod: PodInfo) -> bool:
        # Tolerances absorb float sums of millicores and bytes, nothing more.
        return (pod.cpu_request <= self.cpu + 1e-6 and pod.memory_request_bytes <= self.memory_bytes + 0.5
                and pod.gpu_request <= self.gpus)


def room_of(node: NodeInfo, bound: Iterable[PodInfo]) -> Room:
    """The node's allocatable less the requests of the Pods bound to it."""
    room = Room(node.allocatable_cpu, node.allocatable_memory_bytes, node.allocatable_gpus)
    for pod in bound:
        room = room.minus(pod)
    return room


def tolerates(tolerations: Iterable[Toleration], taint: Taint) -> bool:
    for t in tolerations:
        if t.effect and t.effect != taint.effect:
            continue
        if t.operator == "Exists":
            if not t.key or t.key == taint.key:
                return True
        elif t.key == taint.key and t.value == taint.value:
            return True
    return False


def _expression_holds(req: Requirement, labels: Mapping[str, str]) -> bool:
    value = labels.get(req.key)
    if req.operator == "In":
        return value is not None and value in req.values
    if req.operator == "NotIn":
        return value is None or value not in req.values
    if req.operator == "Exists":
        return value is not None
    if req.operator == "DoesNotExist":
        return value is None
    if req.operator in ("Gt", "Lt") and value is not None and len(req.values) == 1:
        try:
            have, want = int(value), int(req.values[0])
        except ValueError:
            return False
        return have > want if req.operator == "Gt" else have < want
    return False


def selects(pod: PodInfo, labels: Mapping[str, str]) -> bool:
    """nodeSelector (every pair) and required node affinity (any term, all its expressions)."""
    if any(labels.get(k) != v for k, v in pod.node_selector.items()):
        return False
    if not pod.required_terms:
        return True
    return any(all(_expression_holds(r, labels) for r in term) for term in pod.required_terms)


def admits(pod: PodInfo, node: NodeInfo, ignore_taints: frozenset[str] = frozenset(),
           labels: Mapping[str, str] | None = None) -> str | None:
    """None when the node's labels and taints let the Pod in (requests aside), else why not.

    `labels`: the labels to match instead of the node's (work_aware_v1 matches a capped node as the
    performance node it would become on release).
    """
    if not selects(pod, node.labels if labels is None else labels):
        return "node selector or affinity"
    for taint in node.taints:
        if taint.key in ignore_taints or taint.effect not in BLOCKING_EFFECTS:
            continue
        if not tolerates(pod.tolerations, taint):
            return f"taint {taint.key}"
    return None


def fits(pod: PodInfo, node: NodeInfo, room: Room, ignore_taints: frozenset[str] = frozenset()) -> str | None:
    """None when the Pod fits, else why not (a few words, for the decision's log line).

    `ignore_taints`: taint keys left out (the power policy's own taint on a node it would resume).
    """
    why = admits(pod, node, ignore_taints)
    if why is not None:
        return why
    if not room.holds(pod):
        return "requests"
    return None
