"""The workload runner's calls to the API server, against a stand-in that counts them."""

from __future__ import annotations

from kubernetes import client as k8s

from joulie_simulator.workload.kube.runner import WorkloadRunner
from joulie_workload.trace import Job


class CountingCore:
    """The pod calls of the runner against a cluster where every pod is bound to node-a at once."""

    def __init__(self) -> None:
        self.lists = 0
        self.created: list[k8s.V1Pod] = []

    def create_namespaced_pod(self, namespace: str, pod: k8s.V1Pod) -> k8s.V1Pod:
        self.created.append(pod)
        return pod

    def list_pod_for_all_namespaces(self, label_selector: str) -> k8s.V1PodList:
        self.lists += 1
        items = [k8s.V1Pod(metadata=p.metadata, spec=k8s.V1PodSpec(containers=[], node_name="node-a")) for p in self.created]
        return k8s.V1PodList(items=items)


def test_the_runner_lists_pods_only_while_one_waits_for_a_node() -> None:
    jobs = [Job.model_validate({"jobId": f"j{i}", "submitTimeOffsetSec": 10 * i, "work": {"cpuUnits": 1000}}) for i in range(2)]
    runner = WorkloadRunner(k8s.ApiClient(), "127.0.0.1:1", jobs, "c", tick_s=0.001, log=lambda _: None)
    core = CountingCore()
    runner.core = core  # type: ignore[assignment]
    try:
        runner._bindings(0.0, {})  # nothing submitted yet
        assert core.lists == 0
        runner._submit(0.0)
        runner._bindings(0.0, {})  # j0 waits: listed, found bound
        assert core.lists == 1 and runner.record.bound == {"j0": "node-a"}
        for _ in range(5):  # a thousand Nodes' pods, all bound: no LIST every tick
            runner._bindings(1.0, {})
        assert core.lists == 1
        runner._submit(10.0)
        runner._bindings(10.0, {})
        assert core.lists == 2 and runner.record.bound == {"j0": "node-a", "j1": "node-a"}
    finally:
        runner.close()
