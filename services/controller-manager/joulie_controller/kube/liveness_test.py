"""Agent liveness: a node whose agent stopped writing its heartbeat is agent-lost, visibly."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest

from joulie_api.generated.nodetwin import (
    AgentLiveness,
    ControlStatus,
    GPUControlStatus,
    NodeTwin,
    NodeTwinSpec,
    NodeTwinStatus,
)
from joulie_controller.kube.heartbeats import Heartbeat
from joulie_controller.kube.liveness import AgentState, Liveness, agent_state

T0 = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


def test_silent_past_the_threshold_is_agent_lost() -> None:
    assert agent_state(T0, T0, T0 + timedelta(seconds=120), 120).state == "alive"
    v = agent_state(T0, T0, T0 + timedelta(seconds=121), 120)
    assert (v.state, v.silent_s, v.last_heartbeat) == ("agent-lost", 121, T0)


def test_without_any_heartbeat_the_clock_starts_when_the_twin_is_first_seen() -> None:
    assert agent_state(None, T0, T0 + timedelta(seconds=60), 120).state == "alive"
    assert agent_state(None, T0, T0 + timedelta(seconds=600), 120).state == "agent-lost"


class Client:
    def __init__(self) -> None:
        self.writes: list[tuple[str, NodeTwinStatus]] = []

    def apply_status(self, resource: Any, name: str, status: NodeTwinStatus) -> None:
        self.writes.append((name, status))


def _twin(beat: datetime, written: AgentState | None = None, gpu_drift: str | None = None) -> NodeTwin:
    return NodeTwin(metadata={"name": "n1"}, spec=NodeTwinSpec(node_name="n1", profile="eco"),
                    status=NodeTwinStatus(control_status=ControlStatus(heartbeat_at=beat, gpu=GPUControlStatus(
                        result="applied", drift=gpu_drift)), agent=AgentLiveness(state=written) if written else None))


def test_a_lost_agent_is_written_once_and_shown_in_metrics_and_comes_back() -> None:
    client, registry = Client(), CollectorRegistry()
    lv = Liveness(client, 120, registry)  # type: ignore[arg-type]
    assert lv.check({"n1": _twin(T0)}, T0 + timedelta(seconds=30))["n1"].state == "alive"
    assert [w[1].agent.state for w in client.writes if w[1].agent] == ["alive"]
    lv.check({"n1": _twin(T0, "alive")}, T0 + timedelta(seconds=60))  # unchanged: no write
    assert len(client.writes) == 1
    lv.check({"n1": _twin(T0, "alive", gpu_drift="gpu 4 enforces 700.0W, intent 350.0W; re-applied")},
             T0 + timedelta(seconds=300))
    name, status = client.writes[-1]
    assert name == "n1" and status.agent is not None and status.agent.state == "agent-lost"
    assert status.agent.silent_seconds == 300 and status.agent.last_heartbeat == T0
    assert status.control_status is None and status.last_updated is None  # status.agent only
    text = generate_latest(registry).decode()
    assert 'joulie_node_agent_lost{node="n1"} 1.0' in text
    assert 'joulie_node_agent_heartbeat_age_seconds{node="n1"} 300.0' in text
    assert 'joulie_node_cap_drift{device="gpu",node="n1"} 1.0' in text
    assert 'joulie_node_cap_drift{device="cpu",node="n1"} 0.0' in text
    assert 'joulie_node_power_measured{node="n1"} 0.0' in text
    lv.check({"n1": _twin(T0 + timedelta(seconds=310), "agent-lost")}, T0 + timedelta(seconds=320))
    assert client.writes[-1][1].agent.state == "alive"  # type: ignore[union-attr]
    assert 'joulie_node_agent_lost{node="n1"} 0.0' in generate_latest(registry).decode()
    lv.check({}, T0 + timedelta(seconds=330))  # twin gone: its series go too
    assert "n1" not in generate_latest(registry).decode()


def test_a_node_the_power_policy_has_off_shows_its_power_state_not_agent_lost() -> None:
    # Issue 36: powered-off nodes showed agent-lost (and the "agent lost" warning) though nothing was wrong.
    client, registry = Client(), CollectorRegistry()
    lv = Liveness(client, 120, registry)  # type: ignore[arg-type]
    lv.check({"n1": _twin(T0)}, T0 + timedelta(seconds=30), {"n1": "on"})
    for at, power in ((600, "suspending"), (900, "off"), (1200, "resuming")):
        v = lv.check({"n1": _twin(T0)}, T0 + timedelta(seconds=at), {"n1": power})["n1"]
        assert v.state == power
        assert client.writes[-1][1].agent.state == power  # type: ignore[union-attr]
        assert 'joulie_node_agent_lost{node="n1"} 0.0' in generate_latest(registry).decode()
    # Back on: the agent gets AGENT_LOST_AFTER from the node's return, not from its last heartbeat before the suspend.
    assert lv.check({"n1": _twin(T0)}, T0 + timedelta(seconds=1260), {"n1": "on"})["n1"].state == "alive"
    assert lv.check({"n1": _twin(T0)}, T0 + timedelta(seconds=1330), {"n1": "on"})["n1"].state == "agent-lost"
    # Under POWER_POLICY=none (no power states) nothing changes: a silent agent is lost.
    assert Liveness(None, 120, CollectorRegistry()).check({"n1": _twin(T0)}, T0 + timedelta(seconds=300))[
        "n1"].state == "agent-lost"


def test_a_failed_suspend_keeps_the_heartbeat_verdict() -> None:
    # failed: the node may be powered; its agent's silence still means agent-lost.
    lv = Liveness(None, 120, CollectorRegistry())
    assert lv.check({"n1": _twin(T0)}, T0 + timedelta(seconds=300), {"n1": "failed"})["n1"].state == "agent-lost"


def test_a_renewed_lease_keeps_the_agent_alive_at_the_same_timing_as_the_status_heartbeat() -> None:
    # Issue 39: agents renew a Lease every AGENT_HEARTBEAT and rewrite controlStatus only every 10 min;
    # the verdict follows the later of the two, with AGENT_LOST_AFTER unchanged.
    client, registry = Client(), CollectorRegistry()
    lv = Liveness(client, 120, registry)  # type: ignore[arg-type]
    stale_status = _twin(T0)  # controlStatus written at T0, not since
    for t in range(30, 600, 30):  # a Lease renewed every 30 s
        now = T0 + timedelta(seconds=t)
        assert lv.check({"n1": stale_status}, now, heartbeats={"n1": Heartbeat("n1", now)})["n1"].state == "alive", t
    last = T0 + timedelta(seconds=570)
    assert lv.check({"n1": stale_status}, last + timedelta(seconds=120), heartbeats={"n1": Heartbeat("n1", last)})["n1"].state == "alive"
    v = lv.check({"n1": stale_status}, last + timedelta(seconds=121), heartbeats={"n1": Heartbeat("n1", last)})["n1"]
    assert (v.state, v.silent_s, v.last_heartbeat) == ("agent-lost", 121, last)
    # a newer controlStatus heartbeat (an agent without Leases) counts as well
    assert lv.check({"n1": _twin(last + timedelta(seconds=100))}, last + timedelta(seconds=200),
                    heartbeats={"n1": Heartbeat("n1", last)})["n1"].state == "alive"


def test_heartbeat_leases_are_read_by_holder_and_the_latest_renewal_counts() -> None:
    from joulie_controller.kube.heartbeats import heartbeat_of, latest_by_node

    def lease(holder: Any, renew: Any) -> dict[str, Any]:
        return {"metadata": {"name": "joulie-agent-x"}, "spec": {"holderIdentity": holder, "renewTime": renew}}

    a = heartbeat_of(lease("n1.example", "2026-12-03T12:00:30.000000Z"))
    b = heartbeat_of(lease("n1.example", "2026-12-03T12:01:00.000000Z"))
    assert a is not None and b is not None and a.renewed == T0 + timedelta(seconds=30)
    assert latest_by_node([b, a]) == {"n1.example": b}
    assert heartbeat_of(lease("", "2026-12-03T12:00:30.000000Z")) is None  # emptied: says nothing
    assert heartbeat_of(lease("n1", None)) is None
    assert heartbeat_of(lease("n1", "yesterday")) is None
    assert heartbeat_of({"spec": None}) is None
