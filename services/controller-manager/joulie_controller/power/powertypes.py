"""The power policy's values (issue 20, 37): what goes into ``powerstate.decide`` and what comes out.

Pure data, apart so the policy's steps (``powerstate``, ``warmpool``) read as steps.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from joulie_controller.model.fsm import PodInfo
from joulie_controller.model.hardware import NodeInfo
from joulie_controller.power.refusal import Refusal
from joulie_controller.power.warmpool import WarmNeed

PowerState = Literal["on", "suspending", "off", "resuming", "failed"]
DesiredPower = Literal["on", "off"]
BmcState = Literal["on", "off", "powering-on", "powering-off", "unknown"]
ActionKind = Literal["cordon", "off", "on", "uncordon", "fail"]


@dataclass(frozen=True)
class BmcReading:
    """What a node's BMC said this tick. A node with no reading has no BMC and is never suspended."""

    state: BmcState
    error: str | None = None
    """The BMC's last error (unreachable, refused credentials), never a credential."""
    refused: Refusal | None = None
    """The last off/on the BMC refused, until one succeeds or the node settles on or off (kept by the shell)."""

    def problem(self) -> str | None:
        """What status.power.error shows: the reading's error, else the refused action."""
        return self.error or (self.refused.text() if self.refused is not None else None)


@dataclass(frozen=True)
class PowerStatus:
    """NodeTwin status.power."""

    state: PowerState = "on"
    since: datetime | None = None
    reason: str = ""
    boots: int = 0
    """Resumes completed."""
    error: str | None = None


@dataclass(frozen=True)
class PowerAction:
    """One thing to do to one node. cordon: cordon and taint joulie.io/suspended:NoSchedule;
    uncordon: remove the taint and uncordon; off: graceful power-off through the BMC; on: power-on;
    fail: nothing to carry out (the node stays cordoned), logged with its reason."""

    node: str
    action: ActionKind
    reason: str


@dataclass(frozen=True)
class PowerNode:
    info: NodeInfo
    status: PowerStatus
    """The previous status.power (state on, no since, for a node never seen)."""
    desired: DesiredPower = "on"
    """The previous spec.power.state: off once the policy has asked the BMC to power the node off."""
    rank_w: float = 0.0
    """What the node draws idle, or a proxy (its TDP): of the nodes a resume could wake, the lowest first."""


@dataclass(frozen=True)
class PowerInput:
    now: datetime
    nodes: Sequence[PowerNode]
    pods: Sequence[PodInfo]
    bmc: Mapping[str, BmcReading]
    idle_since: Mapping[str, datetime]
    """Since when each powered node has had no workload Pod (kept between ticks by the caller)."""
    warm: Mapping[str, WarmNeed] = field(default_factory=dict)
    """forecast_suspend_v1: each pool's warm-pool need (``warmpool.warm_need``); empty: reactive."""
    recent: Mapping[str, int] = field(default_factory=dict)
    """Actions of each kind ("on", "cordon") decided in the last minute (SUSPEND_RATE, RESUME_RATE)."""
    cycles: Mapping[str, int] = field(default_factory=dict)
    """Power-offs of each node in the last FORECAST_DAY (MAX_POWER_CYCLES_PER_DAY; kept by the caller)."""
    ramp_room_w: float = math.inf
    """The boot power (W) POWER_RAMP_LIMIT_W_PER_S lets the policy switch on this tick (``ramp.py``;
    each power-on a step of its node's ``rank_w``); infinite: no limit."""


@dataclass(frozen=True)
class PowerDecision:
    actions: list[PowerAction]
    status: dict[str, PowerStatus]
    """Every node's new status.power (empty under POWER_POLICY=none)."""
    desired: dict[str, DesiredPower]
    """Every node's new spec.power.state."""
    idle_since: dict[str, datetime]
    notes: list[str]
