from __future__ import annotations

from typing import Any

from joulie_simcluster.smoke.rollout import Sample, agents_by_node, ds_line, judge, rolled_out

NODES = ["intel-0", "intel-managed-0"]


def _sample(at: float, phase: str, agents: dict[str, str], caps_ok: bool = True) -> Sample:
    return Sample(at, phase, caps_ok, "2 caps match NodeTwin.spec" if caps_ok else "intel-0: package 0 cap 300.0 W ≠ 240.0 W",
                  True, "2 packages/GPUs at or under their caps (worst -3.00 W)", agents)


OLD = {"intel-0": "dev-1 ready", "intel-managed-0": "dev-1 ready"}
NEW = {"intel-0": "dev-1-rollout ready", "intel-managed-0": "dev-1-rollout ready"}
GAP = {"intel-0": "dev-1-rollout ready", "intel-managed-0": "none"}


def _run(during: list[Sample], after: list[Sample] | None = None) -> dict[str, tuple[bool, str]]:
    samples = [_sample(0, "before", OLD), _sample(3, "before", OLD), *during,
               *(after if after is not None else [_sample(40, "after", NEW)])]
    return {n: (ok, text) for n, ok, text in judge(samples, NODES, "dev-1-rollout", (True, "2 caps match (after 12.0s)"))}


def test_a_rollout_with_caps_held_through_a_sampled_gap_passes() -> None:
    got = _run([_sample(6, "during", GAP), _sample(9, "during", NEW)])
    assert all(ok for ok, _ in got.values()), got
    assert "1 samples with a node's agent not ready" in got["rollout-gap-sampled"][1]
    assert "intel-managed-0 none" in got["rollout-gap-sampled"][1]


def test_one_sample_without_the_caps_fails_its_phase_saying_when_and_what() -> None:
    got = _run([_sample(6, "during", GAP, caps_ok=False), _sample(9, "during", NEW)])
    ok, text = got["caps-enforced-during"]
    assert not ok and "first failing at +6.0s" in text and "300.0 W ≠ 240.0 W" in text
    assert got["caps-enforced-before"][0] and got["caps-enforced-after"][0]


def test_a_rollout_never_seen_mid_gap_proves_nothing_about_the_gap() -> None:
    got = _run([_sample(6, "during", NEW)])
    assert got["rollout-gap-sampled"] == (False, "0 samples with a node's agent not ready, caps checked in each; gaps seen on no node")


def test_a_node_left_on_the_old_tag_fails() -> None:
    got = _run([_sample(6, "during", GAP)], [_sample(40, "after", {**NEW, "intel-0": "dev-1 ready"})])
    assert not got["every-node-on-the-new-tag"][0]


def test_no_sample_in_a_phase_fails_it() -> None:
    got = {n: ok for n, ok, _ in judge([], NODES, "t", None)}
    assert got == {"one-agent-per-node": False, "caps-enforced-before": False, "caps-enforced-during": False,
                   "caps-enforced-after": False, "rollout-gap-sampled": False, "every-node-on-the-new-tag": False}


def _pod(node: str, tag: str, ready: bool, deleting: bool = False, owner: str = "DaemonSet") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": f"joulie-agent-{node}", "ownerReferences": [{"kind": owner}]}
    if deleting:
        meta["deletionTimestamp"] = "2026-12-06T00:00:00Z"
    return {"metadata": meta, "spec": {"nodeName": node, "containers": [{"image": f"joulie.local/joulie-agent:{tag}"}]},
            "status": {"phase": "Running", "containerStatuses": [{"ready": ready}]}}


def test_agents_by_node_reads_the_daemonset_pods_and_counts_a_terminating_one_as_none() -> None:
    pods = [_pod("intel-0", "dev-1", True, deleting=True), _pod("intel-0", "dev-2", False),
            _pod("intel-managed-0", "dev-1", True, deleting=True),
            _pod("kl-node", "dev-1", True, owner="ReplicaSet")]
    assert agents_by_node(pods, NODES) == {"intel-0": "dev-2 not ready", "intel-managed-0": "none"}


def test_two_running_agents_on_one_node_are_shown_and_fail_the_one_agent_check() -> None:
    pods = [_pod("intel-0", "dev-1", True), _pod("intel-0", "dev-1", True), _pod("intel-managed-0", "dev-1", True)]
    assert agents_by_node(pods, NODES) == {"intel-0": "2 agents", "intel-managed-0": "dev-1 ready"}


def _ds(tag: str, gen: int, observed: int, desired: int, updated: int, available: int) -> dict[str, Any]:
    return {"metadata": {"name": "joulie-agent", "generation": gen},
            "spec": {"template": {"spec": {"nodeSelector": {"sim.joulie.io/kubelet-node": "true"},
                                           "containers": [{"image": f"joulie.local/joulie-agent:{tag}"}]}}},
            "status": {"observedGeneration": observed, "desiredNumberScheduled": desired, "currentNumberScheduled": desired,
                       "numberReady": available, "updatedNumberScheduled": updated, "numberAvailable": available}}


def test_rolled_out_only_once_every_pod_is_updated_and_available() -> None:
    assert rolled_out(_ds("new", 2, 2, 2, 2, 2), "new")
    assert not rolled_out(_ds("new", 2, 1, 2, 2, 2), "new")  # the controller has not seen the new template
    assert not rolled_out(_ds("new", 2, 2, 2, 1, 2), "new")
    assert not rolled_out(_ds("new", 2, 2, 2, 2, 1), "new")
    assert not rolled_out(_ds("old", 2, 2, 2, 2, 2), "new")
    assert not rolled_out(_ds("new", 2, 2, 0, 0, 0), "new")  # no node at all is no rollout


def test_ds_line_reads_like_kubectl_get_ds() -> None:
    line = ds_line(_ds("new", 2, 2, 2, 1, 1))
    assert line.startswith("daemonset.apps/joulie-agent  desired 2  current 2  ready 1  up-to-date 1  available 1")
    assert "node-selector sim.joulie.io/kubelet-node=true" in line and line.endswith("joulie.local/joulie-agent:new")
