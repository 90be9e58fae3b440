"""The agent's heartbeat: one coordination.k8s.io/v1 Lease per node it serves, renewed as kubelets do.

Until issue 39 the heartbeat was NodeTwin ``status.controlStatus.heartbeatAt``, rewritten every
AGENT_HEARTBEAT by server-side apply: at 1000 Nodes 33 applies a second of a NodeTwin with its
managedFields, each one an event to every NodeTwin watcher (the controller manager and every pool
agent). A Lease renewal is one small merge patch that only the controller manager's Lease watch sees.

The Lease is ``joulie-agent-<node's object name>`` in AGENT_LEASE_NAMESPACE, labelled
``joulie.io/agent-heartbeat=true`` (the controller manager watches that label only), with
``spec.holderIdentity`` the node's name and ``spec.renewTime`` the time of the agent's last
reconcile of the node. It is renewed from the reconcile loop, not from a timer of its own, so a
loop that is stuck stops renewing: the Lease says the agent works, not merely that it runs.
Renewal is a merge patch with no read before it (no resourceVersion: the agent is the Lease's only
writer); the first one, answered 404, creates the Lease and patches it again.

Issue 39: a renewal every AGENT_HEARTBEAT (30 s) was 33 patches a second at 1000 Nodes. While the
agent's OTLP push of the node succeeds, the push carries the node's last reconcile time
(``joulie.agent.reconcile.time``), which the controller manager reads every tick: the Lease is then
renewed only every AGENT_LEASE_RENEW (10 min), and stays the proof that only an agent can write (a
pushed time is believed only while the Lease is within its duration). Whenever the node is not
being pushed (no endpoint, a failed export, a node with nothing to export) it is renewed every
AGENT_HEARTBEAT as before. Each renewal writes ``leaseDurationSeconds``: the interval in force plus
``slack_s`` (a reconcile may come that much late), the promise the controller holds the agent to.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Final

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from joulie_api.names import LABEL_AGENT_HEARTBEAT
from joulie_api.names import agent_lease_name as lease_name

MERGE_PATCH: Final = "application/merge-patch+json"


def micro_time(t: datetime) -> str:
    """Kubernetes MicroTime: RFC 3339 with exactly six fractional digits, in UTC."""
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def lease_body(namespace: str, node: str) -> dict[str, Any]:
    """The Lease as created: without its renewTime, which the renewal right after it stamps (the
    client turns a create's body into its typed V1Lease, whose times it cannot write as MicroTime)."""
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": lease_name(node), "namespace": namespace, "labels": {LABEL_AGENT_HEARTBEAT: "true"}},
        "spec": {"holderIdentity": node},
    }


def renewal(node: str, now: datetime, duration_s: float) -> dict[str, Any]:
    """The merge patch of a renewal (holderIdentity again: a Lease someone emptied is repaired)."""
    return {
        "spec": {"holderIdentity": node, "renewTime": micro_time(now), "leaseDurationSeconds": math.ceil(duration_s)}
    }


class LeaseHeartbeat:
    """Renews each node's Lease at most once per ``renew_s``, or per ``pushed_renew_s`` while
    ``pushed(node)`` says its reconcile time is being pushed; raises the API's error when it fails."""

    def __init__(
        self,
        api: k8s.ApiClient,
        namespace: str,
        renew_s: float,
        now: Callable[[], datetime],
        monotonic: Callable[[], float],
        pushed_renew_s: float | None = None,
        pushed: Callable[[str], bool] = lambda node: False,
        slack_s: float = 40.0,
    ) -> None:
        self.coord = k8s.CoordinationV1Api(api)
        self.namespace, self.renew_s = namespace, renew_s
        self.pushed_renew_s = max(renew_s, pushed_renew_s if pushed_renew_s is not None else renew_s)
        self.pushed, self.slack_s = pushed, slack_s
        self.now, self.monotonic = now, monotonic
        self.renewed_at: dict[str, float] = {}
        # The leaseDurationSeconds each node's last renewal wrote: a move to the rare interval renews
        # at once, or the short promise would lapse before the next renewal (and the node be lost).
        self.promised_s: dict[str, float] = {}

    def interval_s(self, node: str) -> float:
        """How often ``node``'s Lease is renewed now."""
        return self.pushed_renew_s if self.pushed(node) else self.renew_s

    def due(self, node: str) -> bool:
        last = self.renewed_at.get(node)
        interval = self.interval_s(node)
        return (
            last is None
            or self.monotonic() - last >= interval
            or self.promised_s.get(node, 0.0) < interval + self.slack_s
        )

    def renew(self, node: str) -> bool:
        """Renew (or create) ``node``'s Lease when due; False when it was not due."""
        if not self.due(node):
            return False
        now = self.now()
        name = lease_name(node)
        duration_s = self.interval_s(node) + self.slack_s
        try:
            self._patch(name, node, now, duration_s)
        except ApiException as err:
            if err.status != 404:
                raise
            try:
                body: Any = lease_body(self.namespace, node)
                self.coord.create_namespaced_lease(self.namespace, body, _preload_content=False)
            except ApiException as created:
                if created.status != 409:  # 409: created meanwhile (an agent's replacement starting)
                    raise
            self._patch(name, node, now, duration_s)
        self.renewed_at[node] = self.monotonic()
        self.promised_s[node] = duration_s
        return True

    def _patch(self, name: str, node: str, now: datetime, duration_s: float) -> None:
        self.coord.patch_namespaced_lease(
            name, self.namespace, renewal(node, now, duration_s), _content_type=MERGE_PATCH, _preload_content=False
        )

    def forget(self, node: str) -> None:
        """A node this agent no longer serves (its Lease is left to expire: the controller says lost
        only if the node's twin is still there)."""
        self.renewed_at.pop(node, None)
        self.promised_s.pop(node, None)
