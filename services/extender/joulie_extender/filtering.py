"""Which nodes a pod may not use. Pure: no I/O.

Rules (reference §5.4, with the issue's stricter staleness rule):
- standard pods (and any class other than `performance`) pass every node;
- a performance pod is rejected from a node whose fresh twin says `eco` or `draining`
  (status.schedulableClass, or spec.scheduling.draining);
- a node with no twin, or a stale one, always passes: missing data is never a rejection.

Difference from the original: it rejected on stale twins too, and fell back to the node label
`joulie.io/power-profile=eco` when there was no twin. Both reject on data nobody vouches for
any more, so here they pass.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Final

from joulie_extender.scoring import CLASS_DRAINING, CLASS_ECO, TwinView, is_stale

WORKLOAD_PERFORMANCE: Final = "performance"
REASON_ECO: Final = "joulie: performance pod rejected from eco node"
REASON_DRAINING: Final = "joulie: performance pod rejected from draining node"


def rejection_reason(
    workload_class: str, twin: TwinView | None, *, now: datetime, staleness: timedelta
) -> str | None:
    """Why the pod may not run on the node, or None when it may."""
    if workload_class != WORKLOAD_PERFORMANCE or twin is None or is_stale(twin, now, staleness):
        return None
    cls = twin.effective_class
    if cls == CLASS_DRAINING:
        return REASON_DRAINING
    if cls == CLASS_ECO:
        return REASON_ECO
    return None
