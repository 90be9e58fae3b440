"""Which nodes a pod may not use. Pure: no I/O.

Rules (reference §5.4, issue 21, issue 20):
- any pod is rejected from a node whose fresh twin says it is suspending, off or failed
  (status.power.state, the power policy). Such a node is also tainted joulie.io/suspended, which
  kube-scheduler's taint plugin already honours: this rule is belt and braces. A stale twin's
  power state is not trusted, as its class is not;
- standard pods (and any class other than `performance`) pass every node;
- a performance pod is rejected from a node whose fresh twin says `eco` or `draining`
  (status.schedulableClass, or spec.scheduling.draining);
- a performance pod is rejected from a node labelled `joulie.io/power-profile=eco`, whether the
  extender holds its twin or not (start-up, a stale twin, an agent that never reported). The
  controller writes that label in the same tick as the twin's profile, and keeps it `eco` while
  the node drains, so the label alone also keeps performance pods off draining nodes;
- otherwise (no twin or a stale one, and no eco label) the node passes: missing measurements are
  never a rejection.

Difference from the original: it also rejected on a stale twin's class. A stale twin's class is
data nobody vouches for any more; the label is what the controller currently asks for.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Final

from joulie_extender.rules.scoring import CLASS_DRAINING, CLASS_ECO, POWERED_DOWN_STATES, TwinView, is_stale

WORKLOAD_PERFORMANCE: Final = "performance"
PROFILE_ECO: Final = "eco"
REASON_ECO: Final = "joulie: performance pod rejected from eco node"
REASON_DRAINING: Final = "joulie: performance pod rejected from draining node"
REASON_ECO_LABEL: Final = "joulie: performance pod rejected from node labelled joulie.io/power-profile=eco"
REASON_POWERED_DOWN: Final = "joulie: node is {state} (power policy, taint joulie.io/suspended)"


def rejection_reason(
    workload_class: str, twin: TwinView | None, *, now: datetime, staleness: timedelta,
    profile_label: str | None = None,
) -> str | None:
    """Why the pod may not run on the node, or None when it may.

    `profile_label` is the node's `joulie.io/power-profile` label value (None when absent or unknown).
    """
    fresh = twin is not None and not is_stale(twin, now, staleness)
    if twin is not None and fresh and twin.power_state in POWERED_DOWN_STATES:
        return REASON_POWERED_DOWN.format(state=twin.power_state)
    if workload_class != WORKLOAD_PERFORMANCE:
        return None
    if twin is not None and fresh:
        cls = twin.effective_class
        if cls == CLASS_DRAINING:
            return REASON_DRAINING
        if cls == CLASS_ECO:
            return REASON_ECO
    if is_eco_label(profile_label):
        return REASON_ECO_LABEL
    return None


def is_eco_label(profile_label: str | None) -> bool:
    """Whether a `joulie.io/power-profile` label value says eco (case and spaces ignored)."""
    return profile_label is not None and profile_label.strip().lower() == PROFILE_ECO
