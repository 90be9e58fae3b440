"""``kubectl joulie power``: per node, its power state and why it is warm or asleep, from the NodeTwin's
status.power (the reason sorted by ``joulie_api.powerreason``). Pure: no I/O, time comes in."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from joulie_api import powerreason
from joulie_kubectl.model import _get, _num, _time


@dataclass(frozen=True)
class PowerRow:
    """One node's power state and why (``kubectl joulie power``), from its NodeTwin's status.power."""

    node: str
    state: str
    since: datetime | None
    cause: str
    """What the reason names: forecast, floor, rate limit, power cycles, Pending Pods, idle, BMC, operator."""
    cycles_left: int | None
    target: str | None
    """The warm pool's target the reason states (forecast), e.g. "24 cores / 0 GPUs"."""
    boots: int
    reason: str
    error: str


def power_rows(twins: Iterable[Mapping[str, Any]]) -> list[PowerRow]:
    """Every node the power policy manages (a twin with status.power), by node name."""
    rows = []
    for twin in twins:
        power = _get(twin, "status", "power")
        if not isinstance(power, Mapping) or not power.get("state"):
            continue
        reason = str(power.get("reason") or "")
        node = str(_get(twin, "spec", "nodeName") or _get(twin, "metadata", "name") or "?")
        rows.append(
            PowerRow(
                node,
                str(power["state"]),
                _time(power.get("since")),
                powerreason.cause(reason),
                powerreason.cycles_left(reason),
                powerreason.warm_target(reason),
                int(_num(power.get("boots")) or 0),
                reason,
                str(power.get("error") or ""),
            )
        )
    return sorted(rows, key=lambda r: r.node)
