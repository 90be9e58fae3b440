"""What every policy shares: what it reads (``PolicyInput``), what it returns (``PolicyPlan``, with
per-node caps ``NodeCaps``), the ``Policy`` protocol each policy module implements, and the
family-aware choice of performance nodes (``performance_set``). Pure: no I/O, no clock (time is an
argument).

Every policy returns a `PolicyPlan`: the set of performance nodes (every other eligible node is
eco), the name written to `spec.policy.name`, and optional per-node eco cap overrides (the cluster
power budget policy sets one eco percentage; the work-aware policy sets each node's caps from the
work on it, with the reason).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from joulie_api.names import PROFILE_PERFORMANCE
from joulie_controller.model.fsm import PodInfo
from joulie_controller.model.hardware import HardwareView, NodeInfo
from joulie_controller.model.jobestimate import JobEstimate
from joulie_controller.settings import Settings


@dataclass(frozen=True)
class PolicyNode:
    name: str
    hardware: HardwareView
    current_profile: str
    """The node's current power-profile label (performance, eco or unknown)."""
    info: NodeInfo | None = None
    """The Node's labels and taints, for whether a Pending Pod may go there (None: not known, any may)."""


@dataclass(frozen=True)
class PolicyPlan:
    policy_name: str
    performance: frozenset[str]
    eco_cap_pct: Mapping[str, float] = field(default_factory=dict)
    """Per-node eco cap (CPU and GPU, % of max) overriding the settings; empty for most policies."""
    notes: tuple[str, ...] = ()
    node_caps: Mapping[str, NodeCaps] = field(default_factory=dict)
    """Per-node caps chosen from the work on the node (work-aware policy); they win over eco_cap_pct."""
    budget_shed_w: float = 0.0
    """The watts the power budget's caps are set to hold back (work-aware policy): the controller
    keeps it for the next tick's ``PolicyInput.budget_shed_w``."""


@dataclass(frozen=True)
class PodDecision:
    """What the work-aware policy chose for one Pod's GPU work, and from what."""

    pod: str
    """namespace/name."""
    lever: str
    """none, cap, lock, cap+lock or probe."""
    compute_share: float
    draw: float
    observations: int
    predicted_slowdown_pct: float
    budget_pct: float
    budget_source: str
    """cluster, annotation, or "annotation ignored: …"."""


@dataclass(frozen=True)
class BoardLock:
    """One SM clock lock the controller sets on some of a node's boards (spec.gpu.clockLocks entry)."""

    gpus: tuple[int, ...]
    """Board indices (NVML's), ascending."""
    pct_of_max: float
    """% of each board's maximum SM clock."""


@dataclass(frozen=True)
class NodeCaps:
    """Caps a policy chose for one node, and why (written to NodeTwin status.capDecision)."""

    cpu_pct: float
    gpu_pct: float
    reason: str
    cpu_slowdown_pct: float = 0.0
    gpu_slowdown_pct: float = 0.0
    cpu_saving_pct: float = 0.0
    gpu_saving_pct: float = 0.0
    cpu_driver: str = ""
    gpu_driver: str = ""
    capped: bool = False
    """Whether any device is held under its reference limit (default, or maximum)."""
    cpu_capped: bool = False
    gpu_capped: bool = False
    gpu_locks: tuple[BoardLock, ...] = ()
    """The SM clock locks chosen for the node's boards, one per group of boards held by the same Pods
    (written to NodeTwin spec.gpu.clockLocks); a board in no entry is not locked by the policy."""
    gpu_work_locks: tuple[float | None, ...] = ()
    """The lock ratio (0-1) each GPU work runs under, in the GPU group's works order (None: no lock):
    what the power budget's model evaluates the boards at."""
    pods: tuple[PodDecision, ...] = ()
    """Per-Pod decisions on the node's GPU group (status.capDecision.pods)."""

    @property
    def gpu_lock_pct(self) -> float | None:
        """The deepest of the node's locks (None: none), for a one-line summary."""
        return min((b.pct_of_max for b in self.gpu_locks), default=None)


@dataclass(frozen=True)
class PolicyInput:
    """Everything a policy may read. Pure data: the kube shell and the benchmark fill it."""

    nodes: Sequence[PolicyNode]
    performance_pods: int
    now_unix_s: float
    settings: Settings
    pods: Sequence[PodInfo] = ()
    measured_w: Mapping[str, float] = field(default_factory=dict)
    """Measured node power by node name (nodes without a valid sample are absent)."""
    trend_w_per_min: Mapping[str, float] = field(default_factory=dict)
    trend_span_s: Mapping[str, float] = field(default_factory=dict)
    """How long each node's trend has been seen (s). A forecast extrapolates a trend no further ahead
    than that: two samples seconds apart at start-up say nothing of the next two minutes (issue 36:
    every deploy sent the budget's caps to the floor for ~12 s on a start-up ramp). Absent: the horizon."""
    budget_shed_w: float = 0.0
    """What the last tick's plan set the budget's caps to hold back (``PolicyPlan.budget_shed_w``; 0
    after a restart): measured power already has it taken off."""
    gpu_locks: Mapping[str, Mapping[int, float]] = field(default_factory=dict)
    """The SM clock locks the controller set and each node's NodeTwin holds, by node name and board
    index (% of max; absent: none of the controller's): the work-aware policy keeps a group's lock while
    it is as good."""
    gpu_boards: Mapping[tuple[str, str], tuple[int, ...]] = field(default_factory=dict)
    """The boards each running GPU Pod holds, by (node, "namespace/name") (``hw.gpu.allocation``); only
    the Pod's own node's entry counts. A node one of whose GPU Pods is absent here is planned as one
    group of boards with one lock on all of them."""
    job_estimates: Mapping[str, JobEstimate] = field(default_factory=dict)
    """Each running GPU Pod's estimate by "namespace/name" (from telemetry, kept across ticks); a
    Pod absent here, or with no observations, is planned from its kind's prior."""
    agent_lost: frozenset[str] = frozenset()
    """Nodes whose NodeTwin says ``status.agent.state: agent-lost``: no agent applies a cap there, so
    the budget does not count on lowering one (its measured power still counts)."""


class Policy(Protocol):
    """A policy: one tick's plan from everything it may read. One module per policy, registered in
    ``registry.REGISTRY`` under its POLICY_TYPE."""

    def plan(self, inp: PolicyInput) -> PolicyPlan: ...


def round_half_up(x: float) -> int:
    """Go's math.Round for non-negative values (Python's round() is banker's rounding)."""
    return int(math.floor(x + 0.5))


def clamp01(x: float) -> float:
    if not math.isfinite(x):
        return 0.0
    return max(0.0, min(1.0, x))


def performance_set(nodes: Sequence[PolicyNode], hp_count: int) -> frozenset[str]:
    """Which nodes get the `hp_count` performance slots.

    Every hardware family keeps at least one performance node; remaining slots go by the
    Sainte-Laguë divisor method (largest size/(2·slots+1), exact by cross-multiplication, ties to
    the smaller family key), never more than a family has members. Inside a family, nodes that are
    performance already come first, then by name, so a reconcile at constant demand moves nothing
    and one more slot flips exactly one node (house-monotone). Independent of input order.
    """
    if not nodes:
        return frozenset()
    families: dict[str, list[PolicyNode]] = {}
    for node in nodes:
        families.setdefault(node.hardware.family(node.name), []).append(node)
    hp = max(len(families), min(hp_count, len(nodes)))
    slots = dict.fromkeys(families, 1)
    keys = sorted(families)
    for _ in range(hp - len(families)):
        best: str | None = None
        for key in keys:
            size = len(families[key])
            if slots[key] >= size:
                continue
            if best is None:
                best = key
                continue
            # size/(2s+1) > best_size/(2bs+1)  <=>  size*(2bs+1) > best_size*(2s+1)
            lhs = size * (2 * slots[best] + 1)
            rhs = len(families[best]) * (2 * slots[key] + 1)
            if lhs > rhs:
                best = key
        if best is None:
            break
        slots[best] += 1
    chosen: set[str] = set()
    for key, members in families.items():
        ranked = sorted(members, key=lambda n: (n.current_profile != PROFILE_PERFORMANCE, n.name))
        chosen.update(n.name for n in ranked[: slots[key]])
    return frozenset(chosen)
