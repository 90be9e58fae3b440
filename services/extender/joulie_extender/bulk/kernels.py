"""Filter and score a request's candidate nodes all at once, on the cache's columns. Pure: no I/O.

These compute exactly what `rules.filtering.rejection_reason` and `rules.scoring.score_node` say for
one node (the readable definitions, with the formula in rules/scoring.py's docstring), as array
operations in the same order, so the results are equal to the last bit; decisions_test.py holds them equal on random
clusters. The one difference: a score that comes out NaN (a twin carrying NaN) is neutral here,
where the per-node code would fail the whole request (and the app would answer neutral for all).
"""

from __future__ import annotations

from typing import Final

import numpy as np

from joulie_extender.bulk.columns import (
    CLASS_DRAINING_CODE,
    CLASS_ECO_CODE,
    CLASS_PERFORMANCE_CODE,
    NO_HARDWARE,
    NO_TIME_US,
    BoolArray,
    FloatArray,
    Gathered,
    IntArray,
)
from joulie_extender.rules.filtering import (
    REASON_DRAINING,
    REASON_ECO,
    REASON_ECO_LABEL,
    WORKLOAD_PERFORMANCE,
    is_eco_label,
)
from joulie_extender.rules.scoring import (
    COOLING_WEIGHT,
    HEADROOM_WEIGHT,
    KINDS_FOR_ECO,
    KINDS_FOR_PERFORMANCE,
    NEUTRAL_SCORE,
    PLACEMENT_BONUS,
    PRESSURE_RELIEF_WEIGHT,
    PROFILE_BONUS,
    TREND_BUSY_CLUSTER_W_PER_MIN,
    TREND_CAP,
    WORKLOAD_STANDARD,
    ClusterContext,
)

POWERED_DOWN_CODE: Final = 1
DRAINING_CODE: Final = 2
ECO_CODE: Final = 3
ECO_LABEL_CODE: Final = 4
REASONS: Final = {DRAINING_CODE: REASON_DRAINING, ECO_CODE: REASON_ECO, ECO_LABEL_CODE: REASON_ECO_LABEL}
"""Rejection code -> reason; a powered-down node's reason names its state (filtering.REASON_POWERED_DOWN)."""


def fresh_mask(g: Gathered, now_us: int, staleness_us: int) -> BoolArray:
    """Twins present, with lastUpdated, not older than the threshold (scoring.is_stale negated)."""
    timed = g.has_twin & (g.updated_us != NO_TIME_US)
    age_us = now_us - np.where(timed, g.updated_us, now_us)
    fresh: BoolArray = timed & (age_us <= staleness_us)
    return fresh


def eco_label_mask(profile_labels: list[str | None]) -> BoolArray:
    """Per `joulie.io/power-profile` label value of a request's Nodes, whether it says eco
    (`filtering.is_eco_label`). A cluster has a handful of distinct values, so each is judged once,
    not once per Node."""
    eco = {value for value in set(profile_labels) if is_eco_label(value)}
    mask: BoolArray = np.fromiter(map(eco.__contains__, profile_labels), np.bool_, count=len(profile_labels))
    return mask


def rejection_codes(g: Gathered, workload_class: str, fresh: BoolArray, label_eco: BoolArray) -> IntArray:
    """Per candidate, 0 (passes) or why the pod may not use it, in rejection_reason's order."""
    codes = np.zeros(len(fresh), np.int64)
    if workload_class == WORKLOAD_PERFORMANCE:
        codes[label_eco] = ECO_LABEL_CODE
        codes[fresh & (g.eff_class == CLASS_ECO_CODE)] = ECO_CODE
        codes[fresh & (g.eff_class == CLASS_DRAINING_CODE)] = DRAINING_CODE
    codes[fresh & g.powered_down] = POWERED_DOWN_CODE
    return codes


def marginal_per_node(g: Gathered, marginal_by_hw: FloatArray) -> FloatArray:
    """Each candidate's marginal watts from its hardware id (0 for a node without hardware)."""
    if len(marginal_by_hw) == 0:
        return np.zeros(len(g.hw_id))
    known = g.hw_id != NO_HARDWARE
    return np.where(known, marginal_by_hw[np.where(known, g.hw_id, 0)], 0.0)


def scores(
    g: Gathered, marginal_w: FloatArray, workload_class: str, ctx: ClusterContext, fresh: BoolArray, *,
    workload_kind: str = "", eco_class: bool = False,
) -> IntArray:
    """Each candidate's 0..10 score for a pod adding `marginal_w` watts to it (score_node's result)."""
    capped = g.capped_w
    with np.errstate(divide="ignore", invalid="ignore"):
        by_cap = np.minimum(100.0, (capped - (g.measured_w + marginal_w)) / capped * 100.0)
    by_twin = np.where(np.isnan(g.headroom_score), 100.0, g.headroom_score)
    headroom = np.where(capped > 0, by_cap, by_twin)
    scale = 2.0 if abs(ctx.cluster_trend_w_per_min) > TREND_BUSY_CLUSTER_W_PER_MIN else 6.0
    trend = g.trend_w_per_min
    trend_bonus = np.where(trend != 0, -np.clip(trend / scale, -TREND_CAP, TREND_CAP), 0.0)
    profile_bonus: FloatArray | float = 0.0
    pressure_relief: FloatArray | float = 0.0
    if workload_class == WORKLOAD_STANDARD:
        eco_node, perf_node = g.eff_class == CLASS_ECO_CODE, g.eff_class == CLASS_PERFORMANCE_CODE
        on_eco = PLACEMENT_BONUS if eco_class or workload_kind in KINDS_FOR_ECO else 0.0
        on_perf = PLACEMENT_BONUS if workload_kind in KINDS_FOR_PERFORMANCE and not eco_class else 0.0
        placement = np.where(eco_node, on_eco, np.where(perf_node, on_perf, 0.0))
        profile_bonus = np.where(g.work_aware, placement, np.where(eco_node, PROFILE_BONUS, 0.0))
        pressure_relief = np.where(~g.work_aware & perf_node, -ctx.perf_pressure * PRESSURE_RELIEF_WEIGHT, 0.0)
    raw = headroom * HEADROOM_WEIGHT + (100.0 - g.cooling) * COOLING_WEIGHT + trend_bonus + profile_bonus + pressure_relief
    score_100 = np.clip(raw, 0.0, 100.0)
    valid = ~np.isnan(score_100)
    computed = np.floor(np.where(valid, score_100, 0.0) / 10.0 + 0.5).astype(np.int64)
    computed = np.where(valid, computed, NEUTRAL_SCORE)
    return np.where(fresh, np.where(g.power_on, computed, 0), NEUTRAL_SCORE).astype(np.int64)
