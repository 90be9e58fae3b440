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
"""

from __future__ import annotations

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


def renewal(node: str, now: datetime) -> dict[str, Any]:
    """The merge patch of a renewal (holderIdentity again: a Lease someone emptied is repaired)."""
    return {"spec": {"holderIdentity": node, "renewTime": micro_time(now)}}


class LeaseHeartbeat:
    """Renews each node's Lease at most once per ``renew_s``; raises the API's error when it fails."""

    def __init__(
        self,
        api: k8s.ApiClient,
        namespace: str,
        renew_s: float,
        now: Callable[[], datetime],
        monotonic: Callable[[], float],
    ) -> None:
        self.coord = k8s.CoordinationV1Api(api)
        self.namespace, self.renew_s = namespace, renew_s
        self.now, self.monotonic = now, monotonic
        self.renewed_at: dict[str, float] = {}

    def due(self, node: str) -> bool:
        last = self.renewed_at.get(node)
        return last is None or self.monotonic() - last >= self.renew_s

    def renew(self, node: str) -> bool:
        """Renew (or create) ``node``'s Lease when due; False when it was not due."""
        if not self.due(node):
            return False
        now = self.now()
        name = lease_name(node)
        try:
            self._patch(name, node, now)
        except ApiException as err:
            if err.status != 404:
                raise
            try:
                body: Any = lease_body(self.namespace, node)
                self.coord.create_namespaced_lease(self.namespace, body, _preload_content=False)
            except ApiException as created:
                if created.status != 409:  # 409: created meanwhile (an agent's replacement starting)
                    raise
            self._patch(name, node, now)
        self.renewed_at[node] = self.monotonic()
        return True

    def _patch(self, name: str, node: str, now: datetime) -> None:
        self.coord.patch_namespaced_lease(
            name, self.namespace, renewal(node, now), _content_type=MERGE_PATCH, _preload_content=False
        )

    def forget(self, node: str) -> None:
        """A node this agent no longer serves (its Lease is left to expire: the controller says lost
        only if the node's twin is still there)."""
        self.renewed_at.pop(node, None)
