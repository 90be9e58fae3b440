"""Issue 39: an agent that pushes its reconcile time renews its Lease rarely; the verdict's timing
stays AGENT_LOST_AFTER after its last reconcile, a forged reported time cannot keep a dead agent
alive past its Lease's duration, and without the reported time the Lease alone never says lost early."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import pytest
from prometheus_client import CollectorRegistry

from joulie_api.generated.nodetwin import NodeTwin, NodeTwinSpec
from joulie_controller.kube.heartbeats import Heartbeat, evidence, heartbeat_of
from joulie_controller.kube.liveness import Liveness

T0 = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
LOST_AFTER_S = 120.0
WINDOW_S = 900.0
RARE_S = 660.0  # the Lease's duration while the agent's push succeeds (renewed every 10 min)


def at(s: float) -> datetime:
    return T0 + timedelta(seconds=s)


def twin(node: str = "n1") -> NodeTwin:
    return NodeTwin(metadata={"name": node}, spec=NodeTwinSpec(node_name=node, profile="eco"))


def verdicts(lease_at: float, reported_at: float | None, times: range, duration_s: float | None = RARE_S,
             reported_read: bool = True) -> dict[int, str]:
    """The verdict at each second of ``times`` for an agent that stopped: its last Lease renewal and
    its last reported reconcile time as given (the reported time stays read while in the window)."""
    lv = Liveness(None, LOST_AFTER_S, CollectorRegistry(), WINDOW_S)
    lv.first_seen["n1"] = T0
    lease = {"n1": Heartbeat("n1", at(lease_at), duration_s)}
    out: dict[int, str] = {}
    for t in times:
        in_window = reported_at is not None and t - reported_at <= WINDOW_S
        reported = {"n1": at(reported_at)} if in_window and reported_at is not None else {}
        out[t] = lv.check({"n1": twin()}, at(t), heartbeats=lease, reported=reported if reported_read else None)[
            "n1"].state
    return out


def first_lost(v: dict[int, str]) -> int | None:
    lost = [t for t, s in v.items() if s == "agent-lost"]
    return min(lost) if lost else None


def test_a_dead_agent_is_lost_lost_after_its_last_reconcile_though_its_lease_is_old() -> None:
    # Lease renewed at 0 (for 660 s), reconciles reported until 500 s, then the agent stops.
    v = verdicts(0, 500, range(500, 2000, 1))
    assert first_lost(v) == 621  # AGENT_LOST_AFTER after the last reconcile, as with a 30 s Lease
    # ... and it never swings back to alive: not when the Lease's duration ends, nor the series' window
    assert all(s == "agent-lost" for t, s in v.items() if t >= 621)


def test_an_alive_agent_with_a_rare_lease_stays_alive() -> None:
    lv = Liveness(None, LOST_AFTER_S, CollectorRegistry(), WINDOW_S)
    for t in range(0, 3000, 10):
        lease = Heartbeat("n1", at(t - t % 600), RARE_S)  # renewed every 10 min
        reported = at(t - t % 20)  # reconciles every 20 s, pushed
        assert lv.check({"n1": twin()}, at(t), heartbeats={"n1": lease}, reported={"n1": reported})[
            "n1"].state == "alive", t


def test_a_forged_reported_time_hides_a_dead_agent_no_longer_than_its_lease_duration() -> None:
    # The agent died at 0 (its last renewal); someone keeps pushing "now" as its reconcile time.
    lv = Liveness(None, LOST_AFTER_S, CollectorRegistry(), WINDOW_S)
    lease = {"n1": Heartbeat("n1", T0, RARE_S)}
    states: dict[int, str] = {t: lv.check({"n1": twin()}, at(t), heartbeats=lease, reported={"n1": at(t + 3600)})["n1"].state
              for t in range(0, 1200, 1)}
    # believed only while the Lease is within its duration: lost the moment that ends (its last
    # renewal is long past AGENT_LOST_AFTER by then), the forger's whole reach
    assert first_lost(states) == int(RARE_S) + 1
    # a Lease claiming a day is capped at AGENT_LIVENESS_WINDOW
    lease = {"n1": Heartbeat("n1", T0, 86400.0)}
    assert lv.check({"n1": twin()}, at(WINDOW_S + LOST_AFTER_S + 1), heartbeats=lease,
                    reported={"n1": at(99999)})["n1"].state == "agent-lost"


def test_a_node_without_a_lease_is_judged_without_reported_times() -> None:
    lv = Liveness(None, LOST_AFTER_S, CollectorRegistry(), WINDOW_S)
    lv.first_seen["n1"] = T0
    assert lv.check({"n1": twin()}, at(300), reported={"n1": at(299)})["n1"].state == "agent-lost"


def test_without_reported_times_the_lease_decides_within_its_own_duration() -> None:
    # No Prometheus (or no series for the node): an agent that renews every 10 min is not lost
    # between renewals; it is lost once a renewal is late past the Lease's duration.
    v = verdicts(0, None, range(0, 1000, 1))
    assert first_lost(v) == int(RARE_S) + 1
    v = verdicts(0, 500, range(0, 1000, 1), reported_read=False)  # the query failed: same
    assert first_lost(v) == int(RARE_S) + 1
    # a Lease renewed every AGENT_HEARTBEAT (no push: duration short) keeps AGENT_LOST_AFTER
    v = verdicts(0, None, range(0, 300, 1), duration_s=60.0)
    assert first_lost(v) == int(LOST_AFTER_S) + 1
    v = verdicts(0, None, range(0, 300, 1), duration_s=None)  # a Lease from an agent before issue 39
    assert first_lost(v) == int(LOST_AFTER_S) + 1


def test_a_reported_time_never_counts_past_now() -> None:
    e = evidence(Heartbeat("n1", T0, RARE_S), at(5000), None, at(10), LOST_AFTER_S, WINDOW_S)
    assert e.last == at(10)


def test_the_lease_duration_is_read_and_a_nonsense_one_ignored() -> None:
    def lease(duration: object) -> dict[str, object]:
        return {"spec": {"holderIdentity": "n1", "renewTime": "2026-12-03T12:00:30.000000Z",
                         "leaseDurationSeconds": duration}}

    beat = heartbeat_of(lease(660))
    assert beat is not None and beat.duration_s == 660.0
    for bad in (None, -5, 0, "660", True):
        beat = heartbeat_of(lease(bad))
        assert beat is not None and beat.duration_s is None, bad


def test_a_lost_agent_stays_lost_on_a_tick_whose_reported_times_were_not_read() -> None:
    # The agent stopped at 500 (Lease renewed at 0 for 660 s); it is lost at 621. A later tick whose
    # query failed (or whose series dropped out) must not hand the verdict back to the Lease's promise.
    lv = Liveness(None, LOST_AFTER_S, CollectorRegistry(), WINDOW_S)
    lease = {"n1": Heartbeat("n1", T0, RARE_S)}
    for t in range(500, 700):
        lv.check({"n1": twin()}, at(t), heartbeats=lease, reported={"n1": at(500)})
    assert lv.check({"n1": twin()}, at(700), heartbeats=lease, reported=None)["n1"].state == "agent-lost"
    assert lv.check({"n1": twin()}, at(701), heartbeats=lease, reported={})["n1"].state == "agent-lost"
    # the agent back (a renewal, a newer reported time) counts at once
    back = {"n1": Heartbeat("n1", at(701), RARE_S)}
    assert lv.check({"n1": twin()}, at(702), heartbeats=back, reported={"n1": at(701)})["n1"].state == "alive"


def test_a_lease_promising_past_the_window_is_warned_of_once(caplog: pytest.LogCaptureFixture) -> None:
    lv = Liveness(None, LOST_AFTER_S, CollectorRegistry(), WINDOW_S)
    lease = {"n1": Heartbeat("n1", T0, 1260.0)}  # AGENT_LEASE_RENEW=20m
    with caplog.at_level(logging.WARNING):
        for t in (0, 10, 20):
            lv.check({"n1": twin()}, at(t), heartbeats=lease, reported={"n1": at(t)})
    assert sum("past AGENT_LIVENESS_WINDOW" in r.getMessage() for r in caplog.records) == 1
