"""Whether each node's agent is alive, from its heartbeat: the renewTime of the node's agent Lease
and the reconcile time the agent reports through its OTLP push (weighed by ``heartbeats.evidence``,
issue 39), or controlStatus.heartbeatAt when that is later (an agent without Leases).

Issue 23: a dead agent's twin still said "applied" (the controller kept the twin fresh), and the
only hint was a node drawing 256 W against a 165 W cap. Now the controller manager marks a node
whose agent has been silent longer than AGENT_LOST_AFTER as ``agent-lost`` in ``status.agent``
(its own field manager, so the main status apply leaves it alone); the scheduler extender scores
such a node neutral and ``kubectl joulie`` shows it. Metrics, for the chart's alert rules
(charts/joulie/alerts): ``joulie_node_agent_lost{node}``,
``joulie_node_agent_heartbeat_age_seconds{node}``, ``joulie_node_cap_drift{node,device}`` (the
agent's controlStatus.{cpu,gpu}.drift), ``joulie_node_power_measured{node}`` (the twin has a
measured power) and ``joulie_node_twin_age_seconds{node}`` (since its lastUpdated).

A node the power policy has suspending, off or resuming shows that power state in ``status.agent``
instead (issue 36: powered-off nodes showed ``agent-lost``): its agent is silent because the node is
down, not because the agent failed. Once the node is back on, its agent has AGENT_LOST_AFTER from the
node's return to write a heartbeat.

``agent_state`` is pure; ``Liveness`` is the shell (metrics, writes on a change of state only).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Final, Literal

from prometheus_client import CollectorRegistry, Gauge

from joulie_api.generated.nodetwin import AgentLiveness, NodeTwin, NodeTwinStatus
from joulie_api.kube import NODE_TWIN, JoulieClient
from joulie_controller.kube.heartbeats import Heartbeat, evidence

log = logging.getLogger(__name__)

AgentState = Literal["alive", "agent-lost", "suspending", "off", "resuming"]
POWERED_DOWN: Final[tuple[AgentState, ...]] = ("suspending", "off", "resuming")
"""The power policy's states (power/powerstate.py) in which a silent agent is expected."""


@dataclass(frozen=True)
class Verdict:
    state: AgentState
    # Seconds since the last heartbeat, or since the twin was first seen when there is none.
    silent_s: float
    last_heartbeat: datetime | None


def agent_state(heartbeat: datetime | None, first_seen: datetime, now: datetime, lost_after_s: float,
                power_state: str | None = None, back_on: datetime | None = None) -> Verdict:
    """Alive while the last heartbeat (or, before any, the first sight of the twin) is recent enough.

    A twin that never had a heartbeat counts from when this controller first saw it, so a fresh
    install or a controller restart does not mark every node lost at once. ``power_state``: the power
    policy's state of the node (none under POWER_POLICY=none); suspending, off or resuming is the
    verdict itself. ``back_on``: when the node was last seen in one of those, from which a silent
    agent is counted too.
    """
    since = heartbeat if heartbeat is not None else first_seen
    if back_on is not None and back_on > since:
        since = back_on
    silent_s = max(0.0, (now - since).total_seconds())
    for down in POWERED_DOWN:
        if power_state == down:
            return Verdict(down, silent_s, heartbeat)
    return Verdict("agent-lost" if silent_s > lost_after_s else "alive", silent_s, heartbeat)


def _drift(twin: NodeTwin) -> dict[str, bool]:
    cs = twin.status.control_status if twin.status is not None else None
    return {"cpu": bool(cs and cs.cpu and cs.cpu.drift), "gpu": bool(cs and cs.gpu and cs.gpu.drift)}


@dataclass
class Liveness:
    """Per tick: the verdict of every twin, its metrics, and a status.agent write when it changed."""

    client: JoulieClient | None
    lost_after_s: float
    registry: CollectorRegistry
    trust_max_s: float = 900.0
    """AGENT_LIVENESS_WINDOW: the most a Lease's duration counts (``heartbeats.evidence``)."""
    first_seen: dict[str, datetime] = field(default_factory=dict)
    states: dict[str, AgentState] = field(default_factory=dict)
    powered_down_at: dict[str, datetime] = field(default_factory=dict)
    """When each node was last seen suspending, off or resuming (its agent's silence counts from then)."""
    reported_seen: dict[str, datetime] = field(default_factory=dict)
    """The latest reconcile time each node's agent reported, kept across ticks: a tick whose query
    failed or whose series dropped out must not fall back to the Lease's long promise and bring a
    lost agent back (the review of issue 39)."""

    overlong_leases: set[str] = field(default_factory=set)
    """Nodes whose Lease promised longer than AGENT_LIVENESS_WINDOW, warned of once."""

    def _warn_overlong(self, node: str, lease: Heartbeat | None) -> None:
        if lease is None or lease.duration_s is None or lease.duration_s <= self.trust_max_s:
            self.overlong_leases.discard(node)
            return
        if node not in self.overlong_leases:
            self.overlong_leases.add(node)
            log.warning("node %s: its agent's Lease promises a renewal within %.0f s, past AGENT_LIVENESS_WINDOW "
                        "(%.0f s): it is judged lost between renewals; lower the agent's AGENT_LEASE_RENEW or raise "
                        "AGENT_LIVENESS_WINDOW", node, lease.duration_s, self.trust_max_s)

    def _reported(self, node: str, fresh: datetime | None) -> datetime | None:
        prev = self.reported_seen.get(node)
        if fresh is not None and (prev is None or fresh > prev):
            self.reported_seen[node] = fresh
            return fresh
        return prev

    def __post_init__(self) -> None:
        r = self.registry
        self.lost = Gauge("joulie_node_agent_lost", "1 while the node's agent is silent past AGENT_LOST_AFTER.",
                          ["node"], registry=r)
        self.age = Gauge("joulie_node_agent_heartbeat_age_seconds",
                         "Seconds since the node's agent last wrote its heartbeat.", ["node"], registry=r)
        self.drift = Gauge("joulie_node_cap_drift",
                           "1 while the agent reports the device enforcing other than the intent (re-applied).",
                           ["node", "device"], registry=r)
        self.measured = Gauge("joulie_node_power_measured", "1 while the node's twin has a measured power.",
                              ["node"], registry=r)
        self.twin_age = Gauge("joulie_node_twin_age_seconds", "Seconds since the node's twin status was written.",
                              ["node"], registry=r)

    def check(self, twins: Mapping[str, NodeTwin], now: datetime,
              power_states: Mapping[str, str] | None = None,
              heartbeats: Mapping[str, Heartbeat] | None = None,
              reported: Mapping[str, datetime] | None = None) -> dict[str, Verdict]:
        """Verdicts by node name; writes status.agent of the twins whose state changed. ``power_states``:
        the power policy's state of each node after the tick (empty under POWER_POLICY=none);
        ``heartbeats``: the last renewal of each node's agent Lease, by node name; ``reported``: the
        last reconcile time each node's agent reported through Prometheus (empty: none read)."""
        power_states = power_states or {}
        heartbeats = heartbeats or {}
        reported = reported or {}
        out: dict[str, Verdict] = {}
        seen: set[str] = set()
        for obj_name, twin in twins.items():
            node = twin.spec.node_name
            seen.add(node)
            cs = twin.status.control_status if twin.status is not None else None
            self._warn_overlong(node, heartbeats.get(node))
            ev = evidence(heartbeats.get(node), self._reported(node, reported.get(node)),
                          cs.heartbeat_at if cs is not None else None, now, self.lost_after_s, self.trust_max_s)
            heartbeat = ev.last
            power = power_states.get(node)
            if power in POWERED_DOWN:
                self.powered_down_at[node] = now
            v = agent_state(heartbeat, self.first_seen.setdefault(node, now), now, ev.allowed_s, power,
                            self.powered_down_at.get(node))
            out[node] = v
            self.lost.labels(node).set(1 if v.state == "agent-lost" else 0)
            self.age.labels(node).set(v.silent_s)
            for device, drifting in _drift(twin).items():
                self.drift.labels(node, device).set(1 if drifting else 0)
            st = twin.status
            pm = st.power_measurement if st is not None else None
            self.measured.labels(node).set(1 if pm is not None and pm.measured_node_power_w is not None else 0)
            if st is not None and st.last_updated is not None:
                self.twin_age.labels(node).set(max(0.0, (now - st.last_updated).total_seconds()))
            written = twin.status.agent.state if twin.status is not None and twin.status.agent else None
            changed = written != v.state and self._write(obj_name, v)
            if changed and "agent-lost" in (v.state, written):
                what = {"agent-lost": "lost", "alive": "back"}.get(v.state, f"silent, node {v.state} (power policy)")
                log.warning("node %s: agent %s (last heartbeat %s, %.0f s ago)", node, what,
                            heartbeat.isoformat() if heartbeat else "never", v.silent_s)
            self.states[node] = v.state
        for gone in set(self.first_seen) - seen:
            del self.first_seen[gone]
            self.reported_seen.pop(gone, None)
            self.overlong_leases.discard(gone)
            self.states.pop(gone, None)
            self.powered_down_at.pop(gone, None)
            for gauge in (self.lost, self.age, self.measured):
                gauge.remove(gone)
            with contextlib.suppress(KeyError):  # set only once the twin had a status write
                self.twin_age.remove(gone)
            for device in ("cpu", "gpu"):
                self.drift.remove(gone, device)
        return out

    def _write(self, obj_name: str, v: Verdict) -> bool:
        if self.client is None:
            return True
        status = NodeTwinStatus(agent=AgentLiveness(state=v.state, last_heartbeat=v.last_heartbeat,
                                                    silent_seconds=round(v.silent_s, 1)))
        try:
            self.client.apply_status(NODE_TWIN, obj_name, status)
        except Exception as err:  # the next tick tries again; the tick's own writes are not held up
            log.warning("NodeTwin/%s: writing status.agent failed: %s", obj_name, err)
            return False
        return True
