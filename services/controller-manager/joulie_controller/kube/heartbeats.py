"""The agents' heartbeats, read: their Leases (coordination.k8s.io/v1, labelled
joulie.io/agent-heartbeat=true) and their reported reconcile times, weighed into one piece of
evidence per node (``evidence``). Pure: the Lease comes as JSON from the watch cache or a LIST
(``kube``), the reported times from Prometheus (``telemetry.prometheus.AgentLivenessReader``).

Each agent renews one Lease per node it serves (``joulie_agent.kube.heartbeat``): ``holderIdentity``
is the node's name, ``renewTime`` the agent's last reconcile of it, ``leaseDurationSeconds`` how
long it promises to renew within. Issue 39: a renewal every 30 s was 33 writes a second at 1000
Nodes. An agent whose OTLP push succeeds also pushes, per node, the time of its last reconcile
(``joulie.agent.reconcile.time``, which the controller manager reads every tick with the measured
power) and then renews the Lease rarely (AGENT_LEASE_RENEW, 10 min) with a duration to match; an
agent whose push fails renews every AGENT_HEARTBEAT as before.

The verdict's timing is unchanged (agent-lost AGENT_LOST_AFTER after the last reconcile) whenever
the reported time is there. Without it (no Prometheus, a failed query, no series for the node) the
Lease alone decides, allowed its own duration: a rarely renewing agent is then lost up to
``leaseDurationSeconds`` after its last renewal instead of AGENT_LOST_AFTER after its last reconcile
(slower, never falsely lost).

Forgery (issue 36): anyone who can push OTLP to Prometheus can write a reported time for any node,
while only an agent can renew a Lease. A reported time is believed only while the node's Lease is
within its duration (capped at AGENT_LIVENESS_WINDOW), and never later than now: a forged series
hides a dead agent for at most that long after its last renewal (11 min by default, 15 min at
most), and a node without a Lease is judged without reported times at all.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from joulie_api.names import LABEL_AGENT_HEARTBEAT

log = logging.getLogger(__name__)

HEARTBEAT_SELECTOR: Final = f"{LABEL_AGENT_HEARTBEAT}=true"


@dataclass(frozen=True)
class Heartbeat:
    node: str
    renewed: datetime
    duration_s: float | None = None
    """spec.leaseDurationSeconds: within how long the agent promised its next renewal (None: unsaid)."""


@dataclass(frozen=True)
class Evidence:
    """What the liveness check judges a node's agent by: its latest believed heartbeat, and how long
    a silence after it stays short of agent-lost."""

    last: datetime | None
    allowed_s: float


def evidence(
    lease: Heartbeat | None,
    reported: datetime | None,
    status: datetime | None,
    now: datetime,
    lost_after_s: float,
    trust_max_s: float,
) -> Evidence:
    """One node's evidence from its Lease, its reported reconcile time (None: no series, or none
    read this tick) and its controlStatus.heartbeatAt (see the module docstring for the rules).

    ``trust_max_s`` (AGENT_LIVENESS_WINDOW) caps the Lease's duration both as an allowance and as the
    span a reported time is believed after a renewal; it is also the window the reported time is
    read over, so a series that ends (a dead agent) stays read for as long as its Lease is believed
    and the verdict never swings back to alive when the series goes."""
    if lease is None:
        return Evidence(status, lost_after_s)  # no Lease: no reported time is believed
    # Capped, as an allowance too: a Lease promising longer than AGENT_LIVENESS_WINDOW would otherwise
    # hide a dead agent for as long as it says. An agent configured to renew that rarely is judged lost
    # between its renewals; ``Liveness`` warns of such a Lease once per node.
    own_s = min(lease.duration_s or 0.0, trust_max_s)
    last = _later(lease.renewed, status)
    assert last is not None
    if reported is not None and (now - lease.renewed).total_seconds() <= own_s:
        return Evidence(max(last, min(reported, now)), lost_after_s)
    # No reported time believed: the Lease's own promise (its next renewal by renewTime + its duration).
    promised_s = (lease.renewed - last).total_seconds() + own_s
    return Evidence(last, max(lost_after_s, promised_s))


def _later(a: datetime | None, b: datetime | None) -> datetime | None:
    return b if a is None else a if b is None else max(a, b)


def heartbeat_of(obj: Mapping[str, Any]) -> Heartbeat | None:
    """A Lease as a heartbeat; None (skipped) without a holder or a readable renewTime (a Lease just
    created by hand, or emptied: it says nothing about an agent)."""
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        return None
    node, renewed, duration = spec.get("holderIdentity"), spec.get("renewTime"), spec.get("leaseDurationSeconds")
    if not isinstance(node, str) or not node or not isinstance(renewed, str):
        return None
    try:
        t = datetime.fromisoformat(renewed)
    except ValueError:
        meta = obj.get("metadata")
        log.warning(
            "Lease %s: renewTime %r is not a time; ignored",
            meta.get("name") if isinstance(meta, Mapping) else "?",
            renewed,
        )
        return None
    duration_s = (
        float(duration) if isinstance(duration, int) and not isinstance(duration, bool) and duration > 0 else None
    )
    return Heartbeat(node, t if t.tzinfo is not None else t.replace(tzinfo=UTC), duration_s)


def latest_by_node(beats: Iterable[Heartbeat]) -> dict[str, Heartbeat]:
    """The latest renewal of each node (two Leases can hold one node while an agent's node name
    changes case: the newer one counts)."""
    out: dict[str, Heartbeat] = {}
    for b in beats:
        prev = out.get(b.node)
        if prev is None or b.renewed > prev.renewed:
            out[b.node] = b
    return out
