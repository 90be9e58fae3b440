"""Leader election's log under a throttled API server: one line per change, not per Lease read."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from joulie_common.clock import FakeClock
from joulie_controller.kube.leader import LeaderElector


class ThrottledLeases:
    """CoordinationV1Api answering 429 to the first ``refusals`` Lease reads, then a free Lease."""

    def __init__(self, refusals: int):
        self.refusals = refusals
        self.reads = 0
        self.patches: list[dict[str, Any]] = []

    def read_namespaced_lease(self, name: str, namespace: str) -> k8s.V1Lease:
        self.reads += 1
        if self.reads <= self.refusals:
            err = ApiException(status=429, reason="Too Many Requests")
            err.headers = {"Retry-After": "1"}
            err.body = '{"kind": "Status", "message": "injected"}'
            raise err
        return k8s.V1Lease(metadata=k8s.V1ObjectMeta(name=name, namespace=namespace, resource_version="7"),
                           spec=k8s.V1LeaseSpec(holder_identity=""))

    def patch_namespaced_lease(self, name: str, namespace: str, body: dict[str, Any], **_: Any) -> None:
        self.patches.append(body)


def test_a_throttled_lease_read_logs_once_when_it_starts_and_once_when_it_ends(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Issue 23, api-throttle: leader election logged a warning per Lease read (every renewal).
    clock = FakeClock()
    elector = LeaderElector(k8s.ApiClient(), "joulie-system", "joulie-controller", "replica-a", 15, clock)
    leases = ThrottledLeases(refusals=20)
    elector.coord = leases  # type: ignore[assignment]
    with caplog.at_level(logging.INFO, logger="joulie_controller.kube.leader"):
        for _ in range(20):
            assert elector.try_acquire() is False
            clock.advance(5)
        assert elector.try_acquire() is True
    lines = [r.getMessage() for r in caplog.records if "reading lease" in r.getMessage()]
    assert len(lines) == 2, lines
    assert lines[0].startswith("leader election: reading lease joulie-system/joulie-controller failing (")
    assert "HTTP 429 Too Many Requests: injected" in lines[0]
    assert lines[1].startswith("leader election: reading lease joulie-system/joulie-controller works again after "
                               "100 s (20 failed tries")
    assert leases.patches and elector.is_leader
