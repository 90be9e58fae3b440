"""The suspend check's evaluation (pure): each check fails on what it is about, and the wake Pod fits only its node."""

from __future__ import annotations

from joulie_simcluster.smoke.suspend import Observed, evaluate, wake_pod

GOOD = {"cordoned": 21.0, "off": 25.0, "not-ready": 26.0, "pod-created": 27.0, "power-on": 30.0, "on": 43.0,
        "ready": 44.0, "uncordoned": 47.0, "pod-running": 49.0}


def observed(**kw: object) -> Observed:
    base = dict(node="xeon-1", timeline=dict(GOOD), standby_w=8.0, expected_standby_w=8.0,
                agent_stopped_while_off=True, agent_running_after_boot=True)
    base.update(kw)
    return Observed(**base)  # type: ignore[arg-type]


def failed(o: Observed) -> list[str]:
    return [name for name, ok, _ in evaluate(o) if not ok]


def test_a_full_cycle_passes_every_check() -> None:
    assert failed(observed()) == []


def test_each_check_fails_on_its_own_evidence() -> None:
    assert failed(observed(timeline={})) == ["idle-node-cordoned", "powered-off-through-bmc",
                                             "off-node-not-ready-agent-stopped", "resumed-for-pending-pod",
                                             "pod-runs-on-resumed-node"]
    assert failed(observed(standby_w=156.0)) == ["draws-standby-power"]
    assert failed(observed(standby_w=None)) == ["draws-standby-power"]
    assert failed(observed(agent_stopped_while_off=False)) == ["off-node-not-ready-agent-stopped"]
    no_boot = {k: v for k, v in GOOD.items() if k not in ("power-on", "on", "ready", "uncordoned", "pod-running")}
    assert failed(observed(timeline=no_boot)) == ["resumed-for-pending-pod", "pod-runs-on-resumed-node"]
    # Powered on before any Pod asked for it: not a resume for the Pod.
    assert "resumed-for-pending-pod" in failed(observed(timeline={**GOOD, "power-on": 26.5}))
    assert failed(observed(other_node_stayed_on=False)) == ["floor-kept"]


def test_the_wake_pod_fits_only_its_node_and_does_not_tolerate_the_suspend_taint() -> None:
    pod = wake_pod("xeon-1")
    assert pod["spec"]["nodeSelector"] == {"kubernetes.io/hostname": "xeon-1"}
    assert [t["key"] for t in pod["spec"]["tolerations"]] == ["kwok.x-k8s.io/node"]
