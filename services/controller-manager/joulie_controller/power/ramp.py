"""The power ramp limit (POWER_RAMP_LIMIT_W_PER_S, issue 37): resumes spaced so that the boot power
the facility sees switched on rises no faster than it accepts.

Pure. A site's feed, UPS or generator takes a load step of so many watts per second; many nodes
resumed on one tick (a burst, a warm pool refilled, a floor restored) step on all their boot draw at
once. Slurm leaves this to ResumeRate, a count of nodes, which is blind to how much each node draws.

The rule is a token bucket in watts:
- each power-on is a step of the node's predicted boot draw: its TDP (``PowerNode.rank_w``), the most
  it can draw. The controller reads no boot draw from the hardware, so it plans on the upper bound: a
  real boot (fans and POST, no workload) draws less, and the real ramp is gentler than the one planned.
  A node whose TDP is unknown (no NodeHardware, no hardware profile) is a step of 0 W: never held back;
- the bucket refills at the limit, up to the largest step of the managed nodes (``burst_w``): after a
  rest any one node may power on at once, and the boot power switched on within any ``t`` seconds stays
  under ``limit * t`` plus one node's step;
- a power-on whose step exceeds what the bucket holds waits; its node's status says until when.

Every power-on counts (a retried one too: its boot draws the same), but only the resumes the policy
chooses (for Pending Pods, the floor, the warm pool) wait for the bucket; a retry after a BMC's
refusal is bounded by RESUME_RETRIES and its backoff, and was admitted once already.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta


@dataclass(frozen=True)
class RampBucket:
    """The bucket after the last power-on: the watts it held then (``None``: never drawn, full)."""

    room_w: float | None = None
    at: datetime | None = None

    def room(self, now: datetime, limit_w_per_s: float, burst_w: float) -> float:
        """The boot power (W) that may be switched on at ``now``; infinite when the limit is off (0)."""
        if limit_w_per_s <= 0:
            return math.inf
        if self.room_w is None or self.at is None:
            return burst_w
        return min(burst_w, self.room_w + limit_w_per_s * max(0.0, (now - self.at).total_seconds()))

    def after(self, now: datetime, steps_w: Sequence[float], limit_w_per_s: float, burst_w: float) -> RampBucket:
        """The bucket once the power-ons of ``now`` (their boot draws ``steps_w``) are switched on."""
        if limit_w_per_s <= 0:
            return RampBucket()
        if not steps_w:
            return self
        return RampBucket(self.room(now, limit_w_per_s, burst_w) - sum(steps_w), now)


def ready_at(room_w: float, watts: float, now: datetime, limit_w_per_s: float) -> datetime:
    """When a step of ``watts`` fits the bucket that holds ``room_w`` now (``now`` if it fits already)."""
    if watts <= room_w or limit_w_per_s <= 0:
        return now
    return now + timedelta(seconds=math.ceil((watts - room_w) / limit_w_per_s))
