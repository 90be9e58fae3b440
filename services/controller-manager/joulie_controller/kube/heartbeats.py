"""The agents' heartbeat Leases (coordination.k8s.io/v1, labelled joulie.io/agent-heartbeat=true), read.

Each agent renews one Lease per node it serves (``joulie_agent.kube.heartbeat``): ``holderIdentity``
is the node's name, ``renewTime`` the agent's last reconcile of it. The liveness check
(``liveness``) takes the latest renewal per node. Pure: the Lease comes as JSON from the watch
cache or a LIST (``kube``).
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


def heartbeat_of(obj: Mapping[str, Any]) -> Heartbeat | None:
    """A Lease as a heartbeat; None (skipped) without a holder or a readable renewTime (a Lease just
    created by hand, or emptied: it says nothing about an agent)."""
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        return None
    node, renewed = spec.get("holderIdentity"), spec.get("renewTime")
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
    return Heartbeat(node, t if t.tzinfo is not None else t.replace(tzinfo=UTC))


def latest_by_node(beats: Iterable[Heartbeat]) -> dict[str, datetime]:
    """The latest renewal of each node (two Leases can hold one node while an agent's node name
    changes case: the newer one counts)."""
    out: dict[str, datetime] = {}
    for b in beats:
        prev = out.get(b.node)
        if prev is None or b.renewed > prev:
            out[b.node] = b.renewed
    return out
