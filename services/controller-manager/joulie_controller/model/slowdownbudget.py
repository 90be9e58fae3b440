"""Each Pod's slowdown budget: the cluster's τ, or the one its owner declares. Pure: no I/O.

A Pod may declare the slowdown it accepts with the annotation ``joulie.io/max-slowdown`` ("10%", or
the fraction "0.1"). It is a tenant's word, and a larger budget lets the controller slow the Pod
more, so it is honoured only in the namespaces an operator lists (SLOWDOWN_ANNOTATION_NAMESPACES,
default none; ``*`` for all) and never above MAX_SLOWDOWN_CEILING_PCT. Any other Pod, and a Pod whose
annotation does not parse, runs at the cluster's budget (WORK_AWARE_SLOWDOWN_BUDGET_PCT), and its
decision says why the annotation was ignored.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from joulie_api.names import ANNOTATION_MAX_SLOWDOWN
from joulie_common.settingsgrammar import SettingError, parse_float, parse_percent
from joulie_controller.model.fsm import ANY_NAMESPACE, PodInfo

SOURCE_CLUSTER: Final = "cluster"
SOURCE_ANNOTATION: Final = "annotation"


@dataclass(frozen=True)
class SlowdownBudget:
    tau: float
    """The slowdown the Pod may be given, as a share (0.1 = 10 % longer)."""
    source: str
    """cluster, annotation, annotation (held to the ceiling …), or "annotation ignored: …"."""


def parse_max_slowdown(raw: str) -> float:
    """The annotation's value as a share: "10%" -> 0.1, "0.1" -> 0.1 (a bare number is a fraction, 0 to 1)."""
    name = ANNOTATION_MAX_SLOWDOWN
    if raw.strip().endswith("%"):
        return parse_percent(name, raw, lo=0.0, hi=100.0) / 100.0
    try:
        return parse_float(name, raw, lo=0.0, hi=1.0)
    except SettingError:
        raise SettingError(name, raw, 'a percentage such as "10%" or a fraction from 0 to 1 such as "0.1"') from None


def pod_budget(pod: PodInfo, cluster_pct: float, namespaces: Sequence[str], ceiling_pct: float) -> SlowdownBudget:
    """The Pod's budget: its annotation where allowed and valid, bounded by the ceiling; else the cluster's."""
    cluster = SlowdownBudget(max(0.0, cluster_pct) / 100.0, SOURCE_CLUSTER)
    raw = pod.annotations.get(ANNOTATION_MAX_SLOWDOWN)
    if raw is None:
        return cluster
    if ANY_NAMESPACE not in namespaces and pod.namespace not in namespaces:
        return SlowdownBudget(
            cluster.tau, f"annotation ignored: namespace {pod.namespace} is not in " f"SLOWDOWN_ANNOTATION_NAMESPACES"
        )
    try:
        tau = parse_max_slowdown(raw)
    except SettingError as e:
        return SlowdownBudget(cluster.tau, f"annotation ignored: {e}")
    ceiling = max(0.0, ceiling_pct) / 100.0
    if tau > ceiling + 1e-12:
        return SlowdownBudget(
            ceiling, f"{SOURCE_ANNOTATION} ({tau * 100:g} % held to MAX_SLOWDOWN_CEILING_PCT=" f"{ceiling_pct:g})"
        )
    return SlowdownBudget(tau, SOURCE_ANNOTATION)
