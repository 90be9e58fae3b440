"""Workload classification, node power states and the downgrade guard. Pure: no I/O."""

from __future__ import annotations

import enum
import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Final

from joulie_api.names import (
    ANNOTATION_WORKLOAD_CLASS,
    LABEL_POWER_PROFILE,
    LABEL_WORKLOAD_KIND,
    PROFILE_ECO,
    PROFILE_PERFORMANCE,
    WORKLOAD_CLASS_PERFORMANCE,
)


class State(str, enum.Enum):
    ACTIVE_PERFORMANCE = "ActivePerformance"
    DRAINING_PERFORMANCE = "DrainingPerformance"
    ACTIVE_ECO = "ActiveEco"
    UNKNOWN = "Unknown"


class WorkloadClass(str, enum.Enum):
    PERFORMANCE = "performance"
    ECO = "eco"
    GENERAL = "general"
    UNKNOWN = "unknown"
    """A constraint on the power-profile label we cannot interpret; treated as performance in guards."""


DEFAULT_SCHEDULER: Final = "default-scheduler"
"""spec.schedulerName when a Pod names none (the API server's default)."""
ANY_NAMESPACE: Final = "*"
"""TRUSTED_NAMESPACES entry trusting every namespace: the behaviour before issue 36."""

# Pods in these phases hold no node: a Pending pod has not started, a finished one is done.
NOT_RUNNING_PHASES: Final = frozenset({"Pending", "Succeeded", "Failed"})


@dataclass(frozen=True)
class Requirement:
    """One node-selector requirement: key, operator and values (a required node-affinity expression)."""

    key: str
    operator: str
    values: tuple[str, ...] = ()


@dataclass(frozen=True)
class Toleration:
    """One toleration of a Pod (spec.tolerations); an empty key with operator Exists tolerates every taint."""

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""


@dataclass(frozen=True)
class PodInfo:
    """The fields of a pod the policy reads (the kube shell keeps nothing else)."""

    namespace: str
    name: str
    node_name: str = ""
    phase: str = "Running"
    deleting: bool = False
    annotations: Mapping[str, str] = field(default_factory=dict)
    node_selector: Mapping[str, str] = field(default_factory=dict)
    required_terms: tuple[tuple[Requirement, ...], ...] = ()
    """Required node-affinity terms (ORed), each a tuple of expressions (ANDed)."""
    labels: Mapping[str, str] = field(default_factory=dict)
    cpu_request: float = 0.0
    """Cores requested, summed over the containers."""
    gpu_request: int = 0
    """GPUs requested (nvidia.com/gpu, amd.com/gpu), summed over the containers."""
    memory_request_bytes: float = 0.0
    """Memory requested, bytes, summed over the containers."""
    tolerations: tuple[Toleration, ...] = ()
    daemonset: bool = False
    """Owned by a DaemonSet (ownerReferences kind DaemonSet): runs on every node, so it never keeps
    a node powered (the power policy)."""
    scheduler_name: str = DEFAULT_SCHEDULER
    """spec.schedulerName: only a Pod for a scheduler the controller serves (SCHEDULER_NAMES) may
    wake or release a node."""
    unschedulable: bool = False
    """The scheduler tried and gave up (condition PodScheduled=False, reason Unschedulable): only
    such a Pending Pod wakes or releases a node, not one still queued, gated or never tried."""
    started_at: float | None = None
    """status.startTime, Unix seconds (when the kubelet took the Pod on); None before."""
    uid: str = ""
    """metadata.uid: tells a Pod from a later one of the same name (the energy receipts key on it)."""

    @functools.cached_property
    def excludes_eco(self) -> bool:
        """Whether the pod must not run on an eco node (``excludes_eco``), worked out once per Pod
        object: the watch cache keeps a Pod's object until the Pod changes, so a tick at 100 000 Pods
        classifies only the ones that did (cached_property writes the instance's __dict__, which a
        frozen dataclass allows; equality and hashing still read the fields alone)."""
        return classify_pod(self) in (WorkloadClass.PERFORMANCE, WorkloadClass.UNKNOWN)

    @property
    def workload_kind(self) -> str:
        """The Pod's workload kind (label, else annotation joulie.io/workload-kind); "" when it names none."""
        return (self.labels.get(LABEL_WORKLOAD_KIND) or self.annotations.get(LABEL_WORKLOAD_KIND) or "").strip()


def pod_key(pod: PodInfo) -> str:
    """"namespace/name": how per-Pod data (telemetry samples, estimates, decisions) names a Pod."""
    return f"{pod.namespace}/{pod.name}"


def trusted(pod: PodInfo, namespaces: Iterable[str]) -> bool:
    """Whether the Pod's own word on its class and kind counts: its namespace is one an operator
    listed (TRUSTED_NAMESPACES), or the list holds ``*``."""
    allowed = set(namespaces)
    return ANY_NAMESPACE in allowed or pod.namespace in allowed


def as_general(pod: PodInfo) -> PodInfo:
    """The Pod as an untrusted tenant's: no class annotation, no kind, no constraint on the power
    profile, so it counts as general work of no kind (capped by the budget like the rest). A Pod
    that says none of it is returned as it is: most untrusted Pods, and a copy of each of 100 000
    Pods cost work_aware_v1's tick 1.7 CPU s."""
    if not _claims_class(pod):
        return pod
    return replace(
        pod,
        annotations={k: v for k, v in pod.annotations.items()
                     if k not in (ANNOTATION_WORKLOAD_CLASS, LABEL_WORKLOAD_KIND)},
        labels={k: v for k, v in pod.labels.items() if k != LABEL_WORKLOAD_KIND},
        node_selector={k: v for k, v in pod.node_selector.items() if k != LABEL_POWER_PROFILE},
        required_terms=tuple(tuple(r for r in term if r.key != LABEL_POWER_PROFILE) for term in pod.required_terms),
    )


def _claims_class(pod: PodInfo) -> bool:
    """Whether the Pod says anything ``as_general`` takes away."""
    return (ANNOTATION_WORKLOAD_CLASS in pod.annotations or LABEL_WORKLOAD_KIND in pod.annotations
            or LABEL_WORKLOAD_KIND in pod.labels or LABEL_POWER_PROFILE in pod.node_selector
            or any(r.key == LABEL_POWER_PROFILE for term in pod.required_terms for r in term))


def tenant_view(pods: Iterable[PodInfo], namespaces: Iterable[str]) -> list[PodInfo]:
    """The Pods as the policy may believe them: trusted ones as they are, the rest ``as_general``."""
    allowed = set(namespaces)
    if ANY_NAMESPACE in allowed:
        return list(pods)
    return [p if p.namespace in allowed else as_general(p) for p in pods]


def assignment_state(profile: str, draining: bool) -> State:
    if draining:
        return State.DRAINING_PERFORMANCE
    if profile == PROFILE_PERFORMANCE:
        return State.ACTIVE_PERFORMANCE
    if profile == PROFILE_ECO:
        return State.ACTIVE_ECO
    return State.UNKNOWN


def _classify_requirement(req: Requirement) -> WorkloadClass | None:
    if req.key != LABEL_POWER_PROFILE:
        return None
    values = {v.strip() for v in req.values}
    perf, eco = PROFILE_PERFORMANCE in values, PROFILE_ECO in values
    if req.operator == "In":
        if perf and not eco:
            return WorkloadClass.PERFORMANCE
        if eco and not perf:
            return WorkloadClass.ECO
        if perf and eco:
            return WorkloadClass.GENERAL
        return WorkloadClass.UNKNOWN  # only profiles no node ever carries
    if req.operator == "NotIn":
        if eco and not perf:
            return WorkloadClass.PERFORMANCE
        if perf and not eco:
            return WorkloadClass.ECO
        if perf and eco:
            return WorkloadClass.UNKNOWN  # fits no managed node
        return WorkloadClass.GENERAL
    if req.operator == "Exists":
        return WorkloadClass.GENERAL
    return WorkloadClass.UNKNOWN  # DoesNotExist, Gt, Lt: not a shape Joulie understands


def classify_pod(pod: PodInfo) -> WorkloadClass:
    """performance if anything pins the pod to performance (conservative: one matching term is enough),
    else unknown if any constraint on the profile label is uninterpretable, else eco, else general."""
    if pod.annotations.get(ANNOTATION_WORKLOAD_CLASS, "").strip() == WORKLOAD_CLASS_PERFORMANCE:
        return WorkloadClass.PERFORMANCE
    found: set[WorkloadClass] = set()
    selected = pod.node_selector.get(LABEL_POWER_PROFILE)
    if selected is not None:
        found.add(_classify_requirement(Requirement(LABEL_POWER_PROFILE, "In", (selected,))) or WorkloadClass.UNKNOWN)
    for term in pod.required_terms:
        for req in term:
            cls = _classify_requirement(req)
            if cls is not None:
                found.add(cls)
    for cls in (WorkloadClass.PERFORMANCE, WorkloadClass.UNKNOWN, WorkloadClass.ECO):
        if cls in found:
            return cls
    return WorkloadClass.GENERAL


def is_running(pod: PodInfo) -> bool:
    return bool(pod.node_name) and not pod.deleting and pod.phase not in NOT_RUNNING_PHASES


def excludes_eco(pod: PodInfo) -> bool:
    """Whether the pod must not run on an eco node (unknown constraints count, for safety)."""
    return pod.excludes_eco


def count_performance_pods(pods: Iterable[PodInfo]) -> dict[str, int]:
    """Running performance-sensitive pods per node name."""
    return count_performance_pods_of_tenants(pods, ())[0]


def count_performance_pods_of_tenants(pods: Iterable[PodInfo],
                                      namespaces: Iterable[str]) -> tuple[dict[str, int], dict[str, int]]:
    """``count_performance_pods(pods)`` and ``count_performance_pods(tenant_view(pods, namespaces))``, in
    one walk over the Pods. A Pod seen ``as_general`` keeps nothing that could make it performance
    or unknown, so the tenant view's count is the count of the trusted Pods alone: the view itself
    copied every untrusted Pod (and classified the copy) every tick, and at 100 000 Pods two walks and
    the copies cost more than the rest of the tick's Pod work."""
    allowed = frozenset(namespaces)
    everyone = ANY_NAMESPACE in allowed
    counts: dict[str, int] = {}
    trusted_counts: dict[str, int] = {}
    for pod in pods:
        # is_running and excludes_eco, inlined: this runs for every Pod every tick.
        if not pod.node_name or pod.deleting or pod.phase in NOT_RUNNING_PHASES or not pod.excludes_eco:
            continue
        node = pod.node_name
        counts[node] = counts.get(node, 0) + 1
        if everyone or pod.namespace in allowed:
            trusted_counts[node] = trusted_counts.get(node, 0) + 1
    return counts, trusted_counts


@dataclass(frozen=True)
class GuardedProfile:
    profile: str
    draining: bool
    state: State
    performance_pods: int


def guard_downgrade(desired_profile: str, current_state: State, performance_pods: int) -> GuardedProfile:
    """Hold a performance→eco move while performance-sensitive pods still run on the node.

    The node is published as eco (label and spec.profile, so no new performance pod lands there)
    but marked draining, and keeps performance caps until the pods are gone. A node that already is
    ActiveEco is not put back into draining by a pod pinned there by nodeName: eco caps were already
    in effect, and draining would flap the class for no protection gained.
    """
    if desired_profile != PROFILE_ECO:
        profile = desired_profile if desired_profile == PROFILE_PERFORMANCE else "unknown"
        return GuardedProfile(profile, False, assignment_state(profile, False), performance_pods)
    draining = performance_pods > 0 and current_state != State.ACTIVE_ECO
    return GuardedProfile(PROFILE_ECO, draining, assignment_state(PROFILE_ECO, draining), performance_pods)


def transition_result(previous: State, new: State) -> str | None:
    """'applied' for a committed state change, 'deferred' when a downgrade starts being held back.

    Deferred is counted once, when the node enters DrainingPerformance, not on every tick it stays
    there (the original counted every tick, which made the counter a clock).
    """
    if State.UNKNOWN in (previous, new) or previous == new:
        return None
    if new == State.DRAINING_PERFORMANCE:
        return "deferred"
    return "applied"

