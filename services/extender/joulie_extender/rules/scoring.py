"""Node scores for a pod, 0..10 as kube-scheduler expects from an extender.

Pure: no I/O, time comes in as an argument. The formula (reference §5.5) works on a 0..100
scale, like the Go original:

    headroom  = min(100, (capped_w - (measured_w + marginal_w)) / capped_w * 100)   if capped_w > 0
              = twin.predictedPowerHeadroomScore                                     otherwise
    trend     = -clamp(node_trend_w_per_min / (2 if |cluster_trend| > 500 W/min else 6), -25, 25)
    score100  = headroom * 0.7 + (100 - cooling_stress) * 0.15 + trend
              + 10                         standard pod on an eco node          (profile bonus)
                                           (under work-aware-v1, the placement bonus instead, below)
              - perf_pressure * 0.3        standard pod on a performance node   (pressure relief)
    score     = round_half_up(clamp(score100, 0, 100) / 10)                     -> 0..10

    perf_pressure = mean(100 - headroom) over fresh performance twins (0 if none)
    cluster_trend = sum of powerTrendWPerMin over fresh twins with a power measurement

Under the work-aware policy (the twin's spec.policy.name is work-aware-v1) placement is soft and
the profile bonus becomes a placement bonus by what caps can do for the pod (its
``joulie.io/workload-kind`` label and class): +10 on an eco node for memory-bound kinds
(gpu-inference, cpu-memory) and eco-class pods, whose caps there save energy at little slowdown;
+10 on a performance node for compute-bound cpu-compute, which no cap helps (so it does not hold an
eco node's CPU uncapped for the memory-bound work sharing it).

A missing twin or a stale one (lastUpdated missing or older than the threshold) scores
NEUTRAL_SCORE (5) and is left out of the cluster aggregates.

A fresh twin whose node is not powered on (status.power.state suspending, off, failed or resuming:
the power policy, docs/suspend-resume.md) scores 0, the lowest, and is left out of the aggregates:
a resuming node ranks after every powered one (filtering.py also rejects the first three). A
stale twin stays neutral whatever its power state says, as for every other field.

Difference from the original: it returned score100 truncated to an int (0..100), but
kube-scheduler expects 0..MaxExtenderPriority (10) and multiplies by weight x 10, so the
original's score counted ten times its intended weight. We divide by 10 and round.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final, NamedTuple

from joulie_extender.rules.powerest import (
    Coefficients,
    HardwareInfo,
    PodDemand,
    estimate_marginal_impact,
)

MAX_EXTENDER_PRIORITY: Final = 10
NEUTRAL_SCORE: Final = 5
NEUTRAL_SCORE_100: Final = 50.0

WORKLOAD_STANDARD: Final = "standard"
CLASS_ECO: Final = "eco"
CLASS_PERFORMANCE: Final = "performance"
CLASS_DRAINING: Final = "draining"

HEADROOM_WEIGHT: Final = 0.7
COOLING_WEIGHT: Final = 0.15
PROFILE_BONUS: Final = 10.0
PRESSURE_RELIEF_WEIGHT: Final = 0.3
WORK_AWARE_POLICY: Final = "work-aware-v1"
PLACEMENT_BONUS: Final = 10.0
KINDS_FOR_ECO: Final = frozenset({"gpu-inference", "cpu-memory"})
KINDS_FOR_PERFORMANCE: Final = frozenset({"cpu-compute"})
POWER_ON: Final = "on"
POWERED_DOWN_STATES: Final = frozenset({"suspending", "off", "failed"})
"""Power states in which a node takes no Pod (the filter rejects it); resuming is on its way back."""
TREND_CAP: Final = 25.0
TREND_BUSY_CLUSTER_W_PER_MIN: Final = 500.0


@dataclass(frozen=True)
class TwinView:
    """What scoring reads from a NodeTwin. Scores are 0..100; watts and W/min as named."""

    node_name: str
    schedulable_class: str = "unknown"
    headroom_score: float | None = None
    cooling_stress_score: float | None = None
    has_power_measurement: bool = False
    measured_power_w: float = 0.0
    capped_power_w: float = 0.0
    node_tdp_w: float = 0.0
    power_trend_w_per_min: float = 0.0
    last_updated: datetime | None = None
    draining: bool = False
    policy_name: str = ""
    """The twin's spec.policy.name: which policy set its caps."""
    power_state: str = POWER_ON
    """The twin's status.power.state: on (also when absent), suspending, off, resuming or failed."""

    @property
    def effective_class(self) -> str:
        """The class scheduling sees: draining (status or spec) wins over the profile."""
        return CLASS_DRAINING if self.draining else self.schedulable_class


def is_stale(twin: TwinView, now: datetime, threshold: timedelta) -> bool:
    """A twin without lastUpdated, or older than `threshold`, says nothing reliable about now."""
    return twin.last_updated is None or now - twin.last_updated > threshold


@dataclass(frozen=True)
class ClusterContext:
    """Aggregates over all fresh twins, computed once per request (or snapshot)."""

    perf_pressure: float = 0.0
    cluster_trend_w_per_min: float = 0.0


def cluster_context(twins: Iterable[TwinView], now: datetime, threshold: timedelta) -> ClusterContext:
    pressures: list[float] = []
    trend = 0.0
    for t in twins:
        if is_stale(t, now, threshold) or t.power_state != POWER_ON:
            continue
        if t.effective_class == CLASS_PERFORMANCE:
            pressures.append(100.0 - (t.headroom_score if t.headroom_score is not None else 100.0))
        if t.has_power_measurement:
            trend += t.power_trend_w_per_min
    return ClusterContext(sum(pressures) / len(pressures) if pressures else 0.0, trend)


class ScoreBreakdown(NamedTuple):
    """A node's score and how it was made (a NamedTuple: built per node per request, so cheap)."""

    score: int
    score_100: float
    stale: bool
    headroom: float = 0.0
    marginal_w: float = 0.0
    trend_bonus: float = 0.0
    profile_bonus: float = 0.0
    pressure_relief: float = 0.0


NEUTRAL: Final = ScoreBreakdown(NEUTRAL_SCORE, NEUTRAL_SCORE_100, stale=True)
NOT_POWERED: Final = ScoreBreakdown(0, 0.0, stale=False)
"""A node suspending, off, failed or resuming: the lowest score."""


def _clamp(x: float, lo: float, hi: float) -> float:
    return lo if x < lo else hi if x > hi else x


def to_extender_score(score_100: float) -> int:
    """0..100 -> 0..10, rounding half up (so 50 -> 5 and 95 -> 10)."""
    return int(_clamp(score_100, 0.0, 100.0) / 10.0 + 0.5)


def marginal_watts(
    demand: PodDemand | None, hardware: HardwareInfo | None, workload_class: str, coeffs: Coefficients
) -> float:
    """Watts the pod adds to a node with this hardware (0 when either is unknown)."""
    if demand is None or hardware is None:
        return 0.0
    return estimate_marginal_impact(demand, hardware, workload_class, coeffs).total_w


def score_node(
    twin: TwinView | None,
    marginal_w: float,
    workload_class: str,
    ctx: ClusterContext,
    *,
    now: datetime,
    staleness: timedelta,
    workload_kind: str = "",
    eco_class: bool = False,
) -> ScoreBreakdown:
    """The node's score for a pod that adds `marginal_w` watts to it (see `marginal_watts`)."""
    if twin is None or is_stale(twin, now, staleness):
        return NEUTRAL
    if twin.power_state != POWER_ON:
        return NOT_POWERED
    if twin.capped_power_w > 0:
        headroom = min(100.0, (twin.capped_power_w - (twin.measured_power_w + marginal_w)) / twin.capped_power_w * 100.0)
    else:
        headroom = twin.headroom_score if twin.headroom_score is not None else 100.0
    cooling = twin.cooling_stress_score or 0.0
    trend_bonus = 0.0
    if twin.power_trend_w_per_min != 0:
        scale = 2.0 if abs(ctx.cluster_trend_w_per_min) > TREND_BUSY_CLUSTER_W_PER_MIN else 6.0
        trend_bonus = -_clamp(twin.power_trend_w_per_min / scale, -TREND_CAP, TREND_CAP)
    profile_bonus = pressure_relief = 0.0
    if twin.policy_name == WORK_AWARE_POLICY:
        if workload_class == WORKLOAD_STANDARD:
            profile_bonus = placement_bonus(twin.effective_class, workload_kind, eco_class)
    elif workload_class == WORKLOAD_STANDARD:
        if twin.effective_class == CLASS_ECO:
            profile_bonus = PROFILE_BONUS
        elif twin.effective_class == CLASS_PERFORMANCE:
            pressure_relief = -ctx.perf_pressure * PRESSURE_RELIEF_WEIGHT
    raw = headroom * HEADROOM_WEIGHT + (100.0 - cooling) * COOLING_WEIGHT + trend_bonus + profile_bonus + pressure_relief
    score_100 = _clamp(raw, 0.0, 100.0)
    return ScoreBreakdown(
        score=to_extender_score(score_100),
        score_100=score_100,
        stale=False,
        headroom=headroom,
        marginal_w=marginal_w,
        trend_bonus=trend_bonus,
        profile_bonus=profile_bonus,
        pressure_relief=pressure_relief,
    )


def placement_bonus(node_class: str, workload_kind: str, eco_class: bool) -> float:
    """Work-aware placement: the kind of pod each node class suits (see the module docstring)."""
    if node_class == CLASS_ECO and (eco_class or workload_kind in KINDS_FOR_ECO):
        return PLACEMENT_BONUS
    if node_class == CLASS_PERFORMANCE and workload_kind in KINDS_FOR_PERFORMANCE and not eco_class:
        return PLACEMENT_BONUS
    return 0.0


def base_score_100(twin: TwinView) -> float:
    """The pod-independent part, as the original's /debug/scoring reports it."""
    headroom = twin.headroom_score if twin.headroom_score is not None else 100.0
    return headroom * HEADROOM_WEIGHT + (100.0 - (twin.cooling_stress_score or 0.0)) * COOLING_WEIGHT
