"""A power action the BMC refused, and when a refused power-on is tried again (issue 37).

The shell (the controller loop) keeps each node's last refused off/on between ticks and hands it to
the policy with the node's BMC reading; the policy retries a refused power-on after a backoff that
doubles with each refusal, up to RESUME_RETRIES, then fails the node with the BMC's own answer.
Before, one refused power-on (e.g. an HTTP 500 from a busy BMC) left the node `resuming` for the
whole RESUME_TIMEOUT (15 min) and only then `failed`, with a reason that did not say the BMC refused.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from datetime import datetime
from typing import Final, Literal

from joulie_controller.settings import SuspendSettings

RefusedAction = Literal["off", "on"]
SETTLED: Final = frozenset({"on", "off"})
"""Power states with no action outstanding: a refusal recorded before is history there."""


@dataclass(frozen=True)
class Refusal:
    """The BMC refused the last ``action`` sent to the node: its answer, when, how many in a row."""

    action: RefusedAction
    reason: str
    """What the driver raised: the node, the reset and the BMC's answer (never a credential)."""
    at: datetime
    count: int = 1
    """Refusals of this action in a row (a success, or the node settling, forgets them)."""

    def text(self) -> str:
        """As NodeTwin status.power.error shows it."""
        return f"power {self.action} failed: {self.reason}"[:1024]


def refused_again(previous: Refusal | None, action: RefusedAction, reason: str, at: datetime) -> Refusal:
    """The refusal to keep after the BMC refused ``action`` once more."""
    count = previous.count + 1 if previous is not None and previous.action == action else 1
    return Refusal(action, reason[:1024], at, count)


def backoff_s(count: int, s: SuspendSettings) -> float:
    """The wait after the ``count``-th refusal in a row: RESUME_RETRY_BACKOFF, doubled each time."""
    return float(s.resume_retry_backoff_s * 2 ** max(0, count - 1))


def retry_due(refusal: Refusal, now: datetime, s: SuspendSettings) -> bool:
    return (now - refusal.at).total_seconds() >= backoff_s(refusal.count, s)


def budget_spent(refusal: Refusal, s: SuspendSettings) -> bool:
    """RESUME_RETRIES retries were refused too (1 + RESUME_RETRIES power-ons in all)."""
    return refusal.count > s.resume_retries


def forget_settled(refusals: MutableMapping[str, Refusal], states: Mapping[str, str]) -> None:
    """Drop the refusals of nodes the policy now says are on or off. A refusal belongs to the
    transition it stopped; once that is over (done, overtaken, or failed and then cleared by an
    operator) it must not block the node's next suspend (issue 37: it did until a restart)."""
    for node in [n for n in refusals if states.get(n) in SETTLED]:
        del refusals[node]
