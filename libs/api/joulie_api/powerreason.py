"""Why a node is warm or asleep, from the power policy's status.power.reason (issue 37).

The controller (``joulie_controller.power``) writes one reason per node in words an operator reads; this
module sorts a reason into the cause it names, for ``kubectl joulie power`` and anyone else who reads
NodeTwins without the controller's code. It lives in joulie_api so that the controller's tests hold
every reason the policy writes to a cause here (a reason reworded there cannot drift out of kubectl).
Python 3.9, no dependencies (the kubectl wheel ships it).
"""

from __future__ import annotations

import re

CAUSE_OPERATOR = "operator"
CAUSE_BMC = "BMC"
CAUSE_RATE_LIMIT = "rate limit"
CAUSE_CYCLES = "power cycles"
CAUSE_FLOOR = "floor"
CAUSE_FORECAST = "forecast"
CAUSE_DEMAND = "Pending Pods"
CAUSE_IDLE = "idle"
CAUSE_OTHER = "-"

# Most specific first: a resumed node's reason quotes the reason it was resumed for
# ("resumed in 4m: resumed ahead of demand (forecast): ...").
_MARKERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (CAUSE_OPERATOR, ("cleared by an operator",)),
    (
        CAUSE_BMC,
        (
            "BMC refused",
            "not back within RESUME_TIMEOUT",
            "not off within SUSPEND_TIMEOUT",
            "powered on outside Joulie",
        ),
    ),
    (CAUSE_RATE_LIMIT, ("POWER_RAMP_LIMIT_W_PER_S=", "(rate limit)")),
    (CAUSE_CYCLES, ("MAX_POWER_CYCLES_PER_DAY=",)),
    (CAUSE_FLOOR, ("the floor of pool", "under its floor", "SUSPEND_MIN_POWERED=")),
    (CAUSE_FORECAST, ("(forecast)",)),
    (CAUSE_DEMAND, ("Pending Pod", "arrived before the power-off")),
    (CAUSE_IDLE, ("no workload Pods for",)),
)
_CYCLES_LEFT = re.compile(r"\((\d+) cycles left\)|(\d+) power cycles left today")
_TARGET = re.compile(r"keeps (\S+) cores / (\d+) GPUs free")


def cause(reason: str) -> str:
    """The cause a status.power.reason names (one of the ``CAUSE_*``); ``CAUSE_OTHER`` when none."""
    for name, markers in _MARKERS:
        if any(m in reason for m in markers):
            return name
    return CAUSE_OTHER


def cycles_left(reason: str) -> int | None:
    """The power cycles left today that the reason states (MAX_POWER_CYCLES_PER_DAY set), else None."""
    m = _CYCLES_LEFT.search(reason)
    if m is None:
        return None
    return int(m.group(1) or m.group(2))


def warm_target(reason: str) -> str | None:
    """The warm pool's target a forecast reason states ("24 cores / 0 GPUs"), else None."""
    m = _TARGET.search(reason)
    return None if m is None else f"{m.group(1)} cores / {m.group(2)} GPUs"
