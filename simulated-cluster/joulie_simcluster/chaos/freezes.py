"""What the freeze faults (``apiserver-freeze``, ``agent-freeze``) showed, read from logs and
NodeTwins. Pure but for the monotonic clock: ``inject.py`` does the signals and the API calls."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

API_TIMEOUT_LINE = "Kubernetes API server did not answer"
"""What joulie_api.kubeconfig logs when a request passes its deadline (the frozen API server, seen)."""


@dataclass
class FreezeClock:
    """How long a process was held stopped: from creation to ``thawed`` (or to now)."""

    clock: Callable[[], float] = time.monotonic
    stopped: float = field(default=0.0)
    until: float | None = None

    def __post_init__(self) -> None:
        self.stopped = self.clock()

    def thawed(self) -> None:
        self.until = self.clock()

    def held_s(self) -> float:
        return (self.until if self.until is not None else self.clock()) - self.stopped


def deadline_note(controller_log: str, held_s: float) -> str:
    lines = [line for line in controller_log.splitlines() if API_TIMEOUT_LINE in line]
    first = f"; first: {lines[0][-160:]}" if lines else ""
    return f"kube-apiserver stopped {held_s:.0f} s; the controller manager logged {len(lines)} request deadline line(s){first}"


def agent_state(twin: dict[str, Any]) -> str:
    """status.agent.state of a NodeTwin as the API returns it ("" when unset)."""
    status = twin.get("status")
    agent = status.get("agent") if isinstance(status, dict) else None
    state = agent.get("state") if isinstance(agent, dict) else None
    return state if isinstance(state, str) else ""


@dataclass
class AgentLostWatch:
    """When the frozen agent's node first showed agent-lost, and the caps its NodeTwin held meanwhile."""

    node: str
    clock: Callable[[], float] = time.monotonic
    since: FreezeClock = field(init=False)
    lost_after_s: float | None = None
    specs_while_lost: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.since = FreezeClock(self.clock)

    def observe(self, twins: Iterable[dict[str, Any]]) -> None:
        for t in twins:
            if t["spec"]["nodeName"] == self.node and agent_state(t) == "agent-lost":
                if self.lost_after_s is None:
                    self.lost_after_s = self.since.held_s()
                self.specs_while_lost.add(json.dumps({k: t["spec"].get(k) for k in ("cpu", "gpu")}, sort_keys=True))

    def note(self, name: str) -> str:
        if self.lost_after_s is None:
            return f"{name} frozen: its node never showed agent-lost during the window"
        n = len(self.specs_while_lost)
        moved = "unchanged" if n <= 1 else f"changed {n - 1} time(s)"
        return f"{name} frozen: agent-lost {self.lost_after_s:.0f} s after the freeze; its NodeTwin caps {moved} while agent-lost"
