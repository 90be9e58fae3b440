"""What the power policy learns from the cluster between ticks (issue 37): the arrivals the demand
forecast reads, each pool's timed resumes (the warm pool's boot time) and each node's power-offs
(MAX_POWER_CYCLES_PER_DAY).

Pure, kept in the controller's memory (a restart starts afresh, as the trends do). An arrival is a
workload Pod's first sighting (to within one reconcile; what any cluster shows, whatever the Pod's
creationTimestamp says after a controller restart), recorded once the Pod is bound: a GPU Pod in the pool of
its node (whose GPUs it used), a Pod that requests no GPU in ``ANY_POOL`` (any pool's cores serve it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Final

from joulie_api.names import POWER_ON, POWER_RESUMING
from joulie_controller.model.fsm import PodInfo
from joulie_controller.power.forecast import Arrival, prune
from joulie_controller.power.powertypes import PowerDecision, PowerStatus
from joulie_controller.power.ramp import RampBucket
from joulie_controller.power.warmpool import ANY_POOL
from joulie_controller.settings import SuspendSettings

RATE_WINDOW_S: Final = 60.0
"""SUSPEND_RATE and RESUME_RATE are per minute."""
BOOT_WEIGHT: Final = 0.5
"""A new timed resume's weight in the pool's boot time (the rest: the earlier ones)."""


@dataclass
class PowerHistory:
    arrivals: list[Arrival] = field(default_factory=list)
    first_seen: dict[str, datetime] = field(default_factory=dict)
    """Each live workload Pod's first sighting (namespace/name)."""
    recorded: set[str] = field(default_factory=set)
    """Live Pods already counted as an arrival."""
    observed_since: datetime | None = None
    boot_s: dict[str, float] = field(default_factory=dict)
    """Each pool's boot time as timed on its resumes (power-on to on and Ready)."""
    power_offs: dict[str, list[datetime]] = field(default_factory=dict)
    actions: list[tuple[datetime, str]] = field(default_factory=list)
    """The power-ons and cordons of the last minute (SUSPEND_RATE, RESUME_RATE)."""
    ramp: RampBucket = field(default_factory=RampBucket)
    """POWER_RAMP_LIMIT_W_PER_S's bucket after the last power-on (ramp.py)."""

    def observe_pods(
        self, now: datetime, pods: Sequence[PodInfo], pool_of_node: Mapping[str, str], s: SuspendSettings
    ) -> None:
        """Record the workload Pods first seen bound; forget the Pods gone and arrivals past the history."""
        if self.observed_since is None:
            self.observed_since = now
        live: set[str] = set()
        for pod in pods:
            if pod.daemonset or pod.phase in ("Succeeded", "Failed"):
                continue
            key = f"{pod.namespace}/{pod.name}"
            live.add(key)
            seen = self.first_seen.setdefault(key, now)
            pool = pool_of_node.get(pod.node_name) if pod.node_name else None
            if pool is not None and pod.gpu_request <= 0:
                pool = ANY_POOL  # cores, which any pool serves (warmpool.py)
            if pool is not None and key not in self.recorded:
                self.recorded.add(key)
                self.arrivals.append(Arrival(seen, pool, pod.cpu_request, pod.gpu_request))
        for gone in [k for k in self.first_seen if k not in live]:
            del self.first_seen[gone]
            self.recorded.discard(gone)
        self.arrivals = prune(self.arrivals, now, s)

    def observe_power(
        self,
        now: datetime,
        before: Mapping[str, PowerStatus],
        decision: PowerDecision,
        pool_of_node: Mapping[str, str],
        s: SuspendSettings,
    ) -> None:
        """Time the resumes that completed and count the power-offs asked, this tick."""
        for node, st in decision.status.items():
            old = before.get(node)
            if old is not None and old.state == POWER_RESUMING and st.state == POWER_ON and old.since is not None:
                took = (now - old.since).total_seconds()
                for pool in (pool_of_node.get(node, ""), ANY_POOL):  # ANY_POOL: the last boots of any pool
                    prev = self.boot_s.get(pool)
                    self.boot_s[pool] = took if prev is None else BOOT_WEIGHT * took + (1 - BOOT_WEIGHT) * prev
        for a in decision.actions:
            if a.action == "off":
                self.power_offs.setdefault(a.node, []).append(now)
            if a.action in ("on", "cordon"):
                self.actions.append((now, a.action))
        for node, times in self.power_offs.items():
            self.power_offs[node] = [t for t in times if (now - t).total_seconds() < s.forecast_day_s]

    def ramp_room(self, now: datetime, boot_w: Mapping[str, float], s: SuspendSettings) -> float:
        """The boot power the ramp limit lets the policy switch on at ``now`` (``boot_w``: each node's step)."""
        return self.ramp.room(now, s.ramp_limit_w_per_sec, max(boot_w.values(), default=0.0))

    def observe_ramp(
        self, now: datetime, decision: PowerDecision, boot_w: Mapping[str, float], s: SuspendSettings
    ) -> None:
        """Draw this tick's power-ons (retries too: each boot draws its step) from the ramp's bucket."""
        steps = [boot_w.get(a.node, 0.0) for a in decision.actions if a.action == "on"]
        self.ramp = self.ramp.after(now, steps, s.ramp_limit_w_per_sec, max(boot_w.values(), default=0.0))

    def recent(self, now: datetime) -> dict[str, int]:
        """Power-ons and cordons decided in the minute before ``now`` (a tick a minute earlier is outside)."""
        self.actions = [(t, kind) for t, kind in self.actions if (now - t).total_seconds() < RATE_WINDOW_S]
        out: dict[str, int] = {}
        for _, kind in self.actions:
            out[kind] = out.get(kind, 0) + 1
        return out

    def cycles(self) -> dict[str, int]:
        return {node: len(times) for node, times in self.power_offs.items() if times}

    def boot_of(self, pool: str, s: SuspendSettings) -> float:
        return self.boot_s.get(pool, s.boot_estimate_s)
