"""Write skipping and the reconcile loop's error accounting, without a cluster."""

from joulie_agent.kube.agentkube import SkipUnchanged


def test_unchanged_payload_is_skipped_until_the_rewrite_interval() -> None:
    s = SkipUnchanged(max_age_s=300)
    assert s.due("n1", {"a": 1}, 0)
    s.done("n1", {"a": 1}, 0)
    assert not s.due("n1", {"a": 1}, 299)
    assert s.due("n1", {"a": 2}, 10)
    assert s.due("n1", {"a": 1}, 300)
    assert s.due("n2", {"a": 1}, 10)


def test_control_status_is_rewritten_every_heartbeat_with_its_time() -> None:
    from typing import Any

    from joulie_agent.control.outcomes import CPUOutcome, GPUOutcome
    from joulie_agent.kube.agentkube import AgentKube
    from joulie_common.clock import FakeClock

    class Client:
        def __init__(self) -> None:
            self.writes: list[Any] = []

        def apply_status(self, resource: Any, name: str, status: Any) -> None:
            self.writes.append(status)

    client, clock = Client(), FakeClock()
    kube = AgentKube(client, clock, rewrite_s=300, heartbeat_s=30)  # type: ignore[arg-type]
    cpu, gpu = CPUOutcome("rapl", "applied", "x"), GPUOutcome("none", "none", "no GPU cap intent")
    assert kube.write_control_status("n1", cpu, gpu)
    clock.advance(29)
    assert not kube.write_control_status("n1", cpu, gpu)  # unchanged, heartbeat not due
    clock.advance(1)
    assert kube.write_control_status("n1", cpu, gpu)
    beats = [w.control_status.heartbeat_at for w in client.writes]
    assert beats[0] is not None and beats[1] is not None and (beats[1] - beats[0]).total_seconds() == 30


def twin_event(kind: str, name: str, generation: int) -> dict[str, object]:
    return {"type": kind, "object": {"metadata": {"name": name, "generation": generation, "resourceVersion": "7"}}}


def test_only_a_spec_change_of_an_owned_twin_wakes_the_loop() -> None:
    from joulie_agent.kube.twinwatch import TwinSpecChanges

    changes = TwinSpecChanges(owned=lambda name: name.startswith("mine"))
    assert changes.wakes(twin_event("ADDED", "mine-1", 1))  # first sight: enforce it
    assert not changes.wakes(twin_event("MODIFIED", "mine-1", 1))  # a status write: same generation
    assert not changes.wakes(twin_event("ADDED", "mine-1", 1))  # the same twin listed again by a restart
    assert not changes.wakes(twin_event("MODIFIED", "theirs-1", 5))  # another shard's twin
    assert changes.wakes(twin_event("MODIFIED", "mine-1", 2))  # the spec changed
    assert not changes.wakes({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "9"}}})
    assert changes.wakes(twin_event("DELETED", "mine-1", 2))
    assert not changes.wakes(twin_event("DELETED", "mine-1", 2))
