"""Issue 39: the heartbeat Lease is renewed every AGENT_HEARTBEAT unless the node's reconcile time is
being pushed, then every AGENT_LEASE_RENEW; each renewal promises (leaseDurationSeconds) what it keeps."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

from joulie_agent.kube.heartbeat import LeaseHeartbeat


class Coord:
    def __init__(self) -> None:
        self.patches: list[dict[str, Any]] = []

    def patch_namespaced_lease(self, name: str, namespace: str, body: dict[str, Any], **_: Any) -> None:
        self.patches.append(body["spec"])


T0 = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


def run(pushed_between: tuple[float, float], until_s: float) -> list[tuple[float, int]]:
    """(time, promised duration) of each renewal by a reconcile every 20 s."""
    t = [0.0]
    hb = LeaseHeartbeat(None, "joulie", 30.0, lambda: T0 + timedelta(seconds=t[0]), lambda: t[0],  # type: ignore[arg-type]
                        pushed_renew_s=600.0, pushed=lambda node: pushed_between[0] <= t[0] < pushed_between[1],
                        slack_s=40.0)
    coord = Coord()
    hb.coord = coord  # type: ignore[assignment]
    out = []
    while t[0] <= until_s:
        if hb.renew("n1"):
            out.append((t[0], int(coord.patches[-1]["leaseDurationSeconds"])))
        t[0] += 20.0
    return out


def test_without_a_push_the_lease_is_renewed_every_heartbeat() -> None:
    renewals = run((1e9, 1e9), 600)
    assert [t for t, _ in renewals] == [0, 40, 80, 120, 160, 200, 240, 280, 320, 360, 400, 440, 480, 520, 560, 600]
    assert {d for _, d in renewals} == {70}


def test_while_pushed_it_is_renewed_every_ten_minutes_and_at_once_when_the_push_starts_or_stops() -> None:
    renewals = run((100, 2000), 2200)
    # 0..80 every 40 s; the push starts at 100: renewed then with the long promise (the short one
    # would lapse); then every 600 s; the push stops at 2000: renewed at once, every 40 s again.
    assert renewals == [(0, 70), (40, 70), (80, 70), (100, 640), (700, 640), (1300, 640), (1900, 640),
                        (2000, 70), (2040, 70), (2080, 70), (2120, 70), (2160, 70), (2200, 70)]
    # at 1000 Nodes: one renewal per node per 600 s is 1.7 patches a second (30 s: 33)
    pushed = [t for t, _ in renewals if 100 <= t < 2000]
    assert all(b - a == 600 for a, b in itertools.pairwise(pushed))
