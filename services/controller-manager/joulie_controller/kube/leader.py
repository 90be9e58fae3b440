"""Shell: leader election on a coordination.k8s.io Lease, so two replicas never both write.

`try_acquire()` is called once per tick before any write: it creates the Lease, renews it while
we hold it, or takes it over once the holder has not renewed for `lease_duration_s`. Every update
carries the resourceVersion we read, so two replicas racing for an expired lease cannot both win
(the loser gets a 409 Conflict). The clock is injected.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from joulie_api.outage import Outage
from joulie_common.clock import SYSTEM_CLOCK, Clock

log = logging.getLogger(__name__)

def _rv(lease: k8s.V1Lease) -> str:
    return str(lease.metadata.resource_version if lease.metadata else "")


def micro_time(t: datetime) -> str:
    """Kubernetes MicroTime: RFC 3339 with exactly six fractional digits, in UTC."""
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(self, api: k8s.ApiClient, namespace: str, name: str, identity: str, lease_duration_s: float,
                 clock: Clock = SYSTEM_CLOCK):
        self.coord = k8s.CoordinationV1Api(api)
        self.namespace, self.name, self.identity = namespace, name, identity
        self.lease_duration_s = max(1, int(lease_duration_s))
        self.clock = clock
        self.is_leader = False
        # Reading the Lease fails while the API server throttles (429) or is down: one line when
        # it starts and one when it answers again, not a warning per renewal (issue 23, api-throttle).
        self.lease_reads = Outage(f"leader election: reading lease {namespace}/{name}", log, clock.monotonic)

    def _patch(self, resource_version: str, holder: str, now: datetime | None, acquire: datetime | None,
               transitions: int) -> None:
        """Merge patch carrying the resourceVersion we read: a 409 if anyone wrote in between."""
        body = {
            "metadata": {"resourceVersion": resource_version},
            "spec": {
                "holderIdentity": holder,
                "leaseDurationSeconds": self.lease_duration_s,
                "acquireTime": micro_time(acquire) if acquire else None,
                "renewTime": micro_time(now) if now else None,
                "leaseTransitions": transitions,
            },
        }
        self.coord.patch_namespaced_lease(self.name, self.namespace, body,
                                          _content_type="application/merge-patch+json")

    def try_acquire(self) -> bool:
        now = self.clock.now()
        try:
            lease = self.coord.read_namespaced_lease(self.name, self.namespace)
        except ApiException as exc:
            if exc.status != 404:
                self.lease_reads.failed(exc)
                return self._set(False)
            self.lease_reads.ok()
            # Created without times (the typed client cannot write MicroTime), then stamped below
            # with the resourceVersion the create returned; a racing replica gets a 409 either way.
            body = k8s.V1Lease(metadata=k8s.V1ObjectMeta(name=self.name, namespace=self.namespace),
                               spec=k8s.V1LeaseSpec(holder_identity=self.identity,
                                                    lease_duration_seconds=self.lease_duration_s,
                                                    lease_transitions=0))
            try:
                lease = self.coord.create_namespaced_lease(self.namespace, body)
            except ApiException as create_exc:
                if create_exc.status == 409:  # another replica created it first
                    return self._set(False)
                raise
            return self._stamp(_rv(lease), now, now, 0)
        self.lease_reads.ok()
        spec = lease.spec or k8s.V1LeaseSpec()
        holder = spec.holder_identity or ""
        renewed = spec.renew_time
        duration = spec.lease_duration_seconds or self.lease_duration_s
        expired = renewed is None or now >= renewed + timedelta(seconds=duration)
        if holder not in ("", self.identity) and not expired:
            return self._set(False)
        mine = holder == self.identity and self.is_leader
        acquire = spec.acquire_time if mine and spec.acquire_time else now
        transitions = (spec.lease_transitions or 0) + (0 if mine or holder in ("", self.identity) else 1)
        return self._stamp(_rv(lease), now, acquire, transitions)

    def _stamp(self, resource_version: str, now: datetime, acquire: datetime, transitions: int) -> bool:
        try:
            self._patch(resource_version, self.identity, now, acquire, transitions)
        except ApiException as exc:
            if exc.status == 409:  # someone else renewed or took it between our read and write
                return self._set(False)
            raise
        return self._set(True)

    def release(self) -> None:
        """Give the lease up on shutdown so the other replica takes over without waiting it out."""
        if not self.is_leader:
            return
        try:
            lease = self.coord.read_namespaced_lease(self.name, self.namespace)
            if lease.spec and lease.spec.holder_identity == self.identity:
                self._patch(_rv(lease), "", None, None, lease.spec.lease_transitions or 0)
        except ApiException as exc:
            log.warning("leader election: releasing lease failed: HTTP %s", exc.status)
        self.is_leader = False

    def _set(self, leader: bool) -> bool:
        if leader != self.is_leader:
            log.info("leader election: %s lease %s/%s as %s", "acquired" if leader else "lost or waiting for",
                     self.namespace, self.name, self.identity)
        self.is_leader = leader
        return leader
