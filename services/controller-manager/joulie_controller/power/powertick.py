"""The power policy's working state for one tick and the small rules its steps share (issue 20, 37):
which pool a node is in and its floor, whether a node is excluded, tainted or powered, and the tick's
statuses, desired states, actions and the ramp limit's room as they change. Pure; ``powerstate`` runs
the steps over it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Final

from joulie_api.names import POWER_ON, POWER_RESUMING, SUSPEND_EXCLUDE, TAINT_SUSPENDED
from joulie_controller.model.fsm import PodInfo
from joulie_controller.model.hardware import NodeInfo
from joulie_controller.power.powertypes import (
    ActionKind,
    BmcReading,
    DesiredPower,
    PowerAction,
    PowerInput,
    PowerNode,
    PowerState,
    PowerStatus,
)
from joulie_controller.power.ramp import ready_at
from joulie_controller.power.refusal import Refusal
from joulie_controller.settings import Settings

DEFAULT_POOL: Final = "default"


def duration_text(seconds: float) -> str:
    """600 -> 10m, 90 -> 1m30s, 5400 -> 1h30m (as the settings are written)."""
    total = int(round(seconds))
    h, rest = divmod(total, 3600)
    m, s = divmod(rest, 60)
    text = (f"{h}h" if h else "") + (f"{m}m" if m else "") + (f"{s}s" if s or not total else "")
    return text


def excluded(info: NodeInfo) -> bool:
    return "true" in (
        info.labels.get(SUSPEND_EXCLUDE, "").strip().lower(),
        info.annotations.get(SUSPEND_EXCLUDE, "").strip().lower(),
    )


def tainted(info: NodeInfo) -> bool:
    return any(t.key == TAINT_SUSPENDED for t in info.taints)


def pool_of(info: NodeInfo, s: Settings) -> str:
    return info.labels.get(s.suspend.pool_label) or DEFAULT_POOL


def floor_of(pool: str, s: Settings) -> int:
    """The pool's floor: SUSPEND_MIN_POWERED_BY_POOL's entry for it, else SUSPEND_MIN_POWERED."""
    return dict(s.suspend.min_powered_by_pool).get(pool, s.suspend.min_powered)


def clock_text(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def pod_name(pod: PodInfo) -> str:
    return f"{pod.namespace}/{pod.name}"


class Tick:
    """The decision under construction: statuses, desired states and actions as they change."""

    def __init__(self, inp: PowerInput, ramp_limit_w_per_s: float = 0.0):
        self.now = inp.now
        self.status = {n.info.name: n.status for n in inp.nodes}
        self.desired: dict[str, DesiredPower] = {n.info.name: n.desired for n in inp.nodes}
        self.actions: list[PowerAction] = []
        self.notes: list[str] = []
        self.cpu_servers = any(n.info.allocatable_gpus == 0 for n in inp.nodes)  # servers without GPUs?
        self.ramp_room_w = inp.ramp_room_w
        self.ramp_limit = ramp_limit_w_per_s  # POWER_RAMP_LIMIT_W_PER_S, for the deferred reason

    def ramp_allows(self, n: PowerNode, why: str) -> bool:
        """Whether POWER_RAMP_LIMIT_W_PER_S lets ``n`` power on now; if not, its status says until when."""
        if n.rank_w <= self.ramp_room_w:
            return True
        until = ready_at(self.ramp_room_w, n.rank_w, self.now, self.ramp_limit)
        reason = (
            f"resume for {why} deferred at {clock_text(self.now)} until about {clock_text(until)}: "
            f"POWER_RAMP_LIMIT_W_PER_S={self.ramp_limit:g} (boot step {n.rank_w:.0f} W, ramp room "
            f"{max(0.0, self.ramp_room_w):.0f} W)"
        )
        name = n.info.name
        if not self.status[name].reason.startswith(f"resume for {why} deferred at"):
            self.status[name] = replace(self.status[name], reason=reason[:1024])
            self.notes.append(f"node {name}: {reason}")
        return False

    def ramp_take(self, n: PowerNode) -> None:
        self.ramp_room_w -= n.rank_w

    def serves_any(self, n: PowerNode) -> bool:
        """Whether the node's cores count for the Pods that request no GPU (warmpool.ANY_POOL)."""
        return n.info.allocatable_gpus == 0 or not self.cpu_servers

    def elapsed_s(self, node: str) -> float:
        since = self.status[node].since
        return 0.0 if since is None else (self.now - since).total_seconds()

    def move(self, node: str, state: PowerState, reason: str, action: ActionKind | None, *, boots: int = 0) -> None:
        old = self.status[node]
        self.status[node] = PowerStatus(state, self.now, reason[:1024], old.boots + boots, old.error)
        if action is not None:
            self.actions.append(PowerAction(node, action, reason))
        self.notes.append(
            f"node {node}: power {old.state} -> {state}" + (f" ({action})" if action else "") + f": {reason}"
        )

    def retry_on(self, node: str, refusal: Refusal, retries: int) -> None:
        """Power on again, still resuming since the first power-on (RESUME_TIMEOUT runs from there)."""
        reason = f"retry {refusal.count} of {retries} after the BMC refused power-on: {refusal.reason}"
        self.status[node] = replace(self.status[node], reason=reason[:1024])
        self.actions.append(PowerAction(node, "on", reason))
        self.notes.append(f"node {node}: power on again: {reason}")


def bmc_reads(bmc: Mapping[str, BmcReading], node: str, state: str) -> bool:
    reading = bmc.get(node)
    return reading is not None and reading.state == state


def powered_schedulable(tick: Tick, n: PowerNode) -> bool:
    """On and Ready, and schedulable or cordoned only by the policy's own cordon, which this tick's
    uncordon lifts (a node back on is the Pending Pods' node on the tick it comes back)."""
    return tick.status[n.info.name].state == POWER_ON and n.info.ready and (not n.info.unschedulable or tainted(n.info))


def powered_by_pool(tick: Tick, nodes: Sequence[PowerNode], s: Settings) -> dict[str, int]:
    powered: dict[str, int] = defaultdict(int)
    for n in nodes:
        if powered_schedulable(tick, n) or tick.status[n.info.name].state == POWER_RESUMING:
            powered[pool_of(n.info, s)] += 1
    return powered


def floor_setting(pool: str, s: Settings) -> str:
    return (
        "SUSPEND_MIN_POWERED_BY_POOL"
        if pool in dict(s.suspend.min_powered_by_pool)
        else f"SUSPEND_MIN_POWERED={s.suspend.min_powered}"
    )
