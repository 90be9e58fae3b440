"""The workload runner's calls to the API server, against a stand-in that counts them."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest
from kubernetes import client as k8s

from joulie_hwprofiles.schema import builtin_profile
from joulie_simulator.workload.kube.runner import WorkloadRunner, pb, speed_of
from joulie_workload.trace import Job


class CountingCore:
    """The pod calls of the runner against a cluster where every pod is bound to node-a at once."""

    def __init__(self) -> None:
        self.lists = 0
        self.created: list[k8s.V1Pod] = []
        self.others: list[k8s.V1Pod] = []

    def create_namespaced_pod(self, namespace: str, pod: k8s.V1Pod) -> k8s.V1Pod:
        self.created.append(pod)
        return pod

    def list_pod_for_all_namespaces(self, label_selector: str, field_selector: str = "",
                                    _preload_content: bool = True) -> Any:
        if "!=" in label_selector:  # the Pods that are not the workload's (runner._list_others)
            return k8s.V1PodList(items=list(self.others))
        self.lists += 1
        items = [k8s.V1Pod(metadata=p.metadata, spec=k8s.V1PodSpec(containers=[], node_name="node-a")) for p in self.created]
        if _preload_content:
            return k8s.V1PodList(items=items)
        body = k8s.ApiClient().sanitize_for_serialization(k8s.V1PodList(items=items))  # type: ignore[no-untyped-call]
        return SimpleNamespace(data=json.dumps(body).encode())  # the raw answer, as _preload_content=False gives


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


# Issue 34: serving phases and clock locks on the live cluster (gRPC SetNodeLoad / NodeTruth).

NVL = "nvidia-h100-nvl-8gpu"
PHASES = [
    {"name": "prefill", "timeShare": 0.2, "sensitivity": {"gpu": 0.9}, "utilization": {"gpu": 0.95}},
    {"name": "decode", "timeShare": 0.8, "sensitivity": {"gpu": 0.14}, "utilization": {"gpu": 0.3}},
]


def serving_job(phased: bool) -> Job:
    rec = {"jobId": "j", "submitTimeOffsetSec": 0, "requests": {"cpu": 1, "gpu": 1}, "work": {"gpuUnits": 1000.0},
           "sensitivity": {"cpu": 0.0, "gpu": 0.292}, "utilization": {"gpu": 0.43}}
    return Job.model_validate({**rec, **({"phases": PHASES} if phased else {})})


def nvl_truth(lock_mhz: float | None = None) -> Any:
    gpus = [pb.GpuTruth(index=i, cap_w=400.0, util=0.9, lock_max_mhz=lock_mhz if i == 0 else None) for i in range(8)]
    return pb.NodeTruth(node="node-a", profile=NVL, cpu_freq_mhz=2000.0, gpus=gpus)


class RecordingEmulator:
    """The emulator's gRPC stub: one NVL node, every SetNodeLoad kept."""

    def __init__(self) -> None:
        self.loads: list[Any] = []

    def ListNodes(self, request: Any, timeout: float) -> Any:
        return pb.ListNodesResponse(nodes=[nvl_truth()])

    def SetNodeLoad(self, request: Any, timeout: float) -> Any:
        self.loads.append(request.load)
        return nvl_truth()


def _sent_load(phased: bool) -> Any:
    runner = WorkloadRunner(k8s.ApiClient(), "127.0.0.1:1", [serving_job(phased)], "c", tick_s=0.001, log=lambda _: None)
    runner.core = CountingCore()  # type: ignore[assignment]
    emulator = RecordingEmulator()
    runner.stub = emulator
    try:
        runner.tick()  # submits, binds on node-a, sends node-a's load
        assert runner.record.bound == {"j": "node-a"} and emulator.loads
        return emulator.loads[-1]
    finally:
        runner.close()


def test_the_runner_sends_a_phased_jobs_phases_for_its_board_and_none_for_an_unphased_job() -> None:
    phased = _sent_load(phased=True)
    assert list(phased.gpu_util)[:2] == [0.43, 0.0]
    boards = [[(p.share, p.compute_share, p.draw) for p in b.phases] for b in phased.gpu_phases]
    assert boards[0] == [(0.2, 0.9, 0.95), (0.8, 0.14, 0.3)] and all(b == [] for b in boards[1:])
    flat = _sent_load(phased=False)
    assert list(flat.gpu_util)[:2] == [0.43, 0.0] and len(flat.gpu_phases) == 0


def test_speed_of_slows_a_board_under_a_clock_lock_as_speed_from_state_does() -> None:
    """A lock at half the NVL's 1785 MHz maximum halves a board's clock; the board without one runs
    at its cap's clock."""
    locked, free = speed_of(nvl_truth(lock_mhz=892.5)), speed_of(nvl_truth())
    assert locked.gpu_locks[:2] == (0.5, 1.0) and free.gpu_locks[0] == 1.0
    assert locked.gpus[0] < free.gpus[0] and locked.gpus[1] == free.gpus[1] == free.gpus[0]


# Issue 38: the per-Pod energy truth the runner keeps and serves to the checks.


class MeteredEmulator(RecordingEmulator):
    """An NVL node whose meters advance 10 s per reading: each board 100 W x (index + 1), packages 300 W,
    host 5 kW."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    def ListNodes(self, request: Any, timeout: float) -> Any:
        t = 10.0 * self.reads
        self.reads += 1
        truth = nvl_truth()
        for g in truth.gpus:
            g.energy_mj = int(t * 100.0 * (g.index + 1) * 1000)
        truth.host_energy_j = 5000.0 * t
        truth.at.FromNanoseconds(int(t * 1e9))
        # No RAPL zones (as on vm-0): the truth's CPU is the packages the power model composes, on every node.
        truth.packages.extend(pb.CpuPackageTruth(socket=i, power_w=150.0, energy_j=t * 150.0) for i in range(2))
        return pb.ListNodesResponse(nodes=[truth])


def test_two_pods_on_one_gpu_node_each_get_their_own_boards_energy_as_truth() -> None:
    import json
    import urllib.request

    from prometheus_client import CollectorRegistry

    from joulie_simulator.workload.kube.debugserver import TRUTH_PATH, serve
    from joulie_simulator.workload.podtruth import parse_document

    jobs = [Job.model_validate({"jobId": f"j{i}", "submitTimeOffsetSec": 0, "requests": {"cpu": 4, "gpu": i + 1},
                                "work": {"gpuUnits": 1e9}, "utilization": {"cpu": 0.5, "gpu": 0.9}}) for i in range(2)]
    runner = WorkloadRunner(k8s.ApiClient(), "127.0.0.1:1", jobs, "c", tick_s=0.001, log=lambda _: None)
    runner.core = CountingCore()  # type: ignore[assignment]
    runner.stub = MeteredEmulator()
    server = serve("127.0.0.1", 0, CollectorRegistry(), runner.truth_document)
    try:
        for _ in range(3):  # binds both (j0 on board 0, j1 on boards 1 and 2), then two 10 s readings
            runner.tick()
        url = f"http://127.0.0.1:{server.server_address[1]}{TRUTH_PATH}"
        with urllib.request.urlopen(url, timeout=5) as answer:
            doc = json.load(answer)
        truth = parse_document(doc)
        (n0, j0), (n1, j1) = truth["default/" + runner.record.created["j0"]], truth["default/" + runner.record.created["j1"]]
        assert n0 == n1 == "node-a" and j0.held_s == j1.held_s == 20.0
        assert j0.gpu_j == pytest.approx(20 * 100.0) and j1.gpu_j == pytest.approx(20 * (200.0 + 300.0))
        assert j0.cpu_busy_j == pytest.approx(j1.cpu_busy_j)  # same busy cores
        idle_w = 2 * builtin_profile(NVL).physics.cpu.idle_pkg_w
        assert j0.cpu_busy_j + j1.cpu_busy_j == pytest.approx(20 * (300.0 - idle_w))  # the packages' busy part, all
        node = doc["nodes"]["node-a"]
        assert node["meteredJ"] == pytest.approx(100_000.0)
        assert j0.total_j + j1.total_j + node["unallocatedJ"] == pytest.approx(node["meteredJ"])
    finally:
        server.shutdown()
        runner.close()


def test_the_runner_sends_every_pods_containers_with_their_busy_cores_the_others_idle() -> None:
    """The emulated kubelet's cAdvisor counts each container's CPU time from these: the job's Pod at its
    request x utilisation, a Pod that is not the workload's (the smoke's own) at 0, each container of it."""
    job = Job.model_validate({"jobId": "j", "submitTimeOffsetSec": 0, "requests": {"cpu": 4, "gpu": 1},
                              "work": {"gpuUnits": 1e9}, "utilization": {"cpu": 0.5, "gpu": 0.9}})
    runner = WorkloadRunner(k8s.ApiClient(), "127.0.0.1:1", [job], "c", tick_s=0.001, log=lambda _: None)
    core = CountingCore()
    core.others = [k8s.V1Pod(metadata=k8s.V1ObjectMeta(name="idle", namespace="smoke"),
                             spec=k8s.V1PodSpec(node_name="node-a", containers=[k8s.V1Container(name=c) for c in "ab"])),
                   k8s.V1Pod(metadata=k8s.V1ObjectMeta(name="elsewhere", namespace="smoke"),
                             spec=k8s.V1PodSpec(node_name="node-z", containers=[k8s.V1Container(name="c")]))]
    runner.core = core  # type: ignore[assignment]
    emulator = RecordingEmulator()
    runner.stub = emulator
    try:
        runner.tick()
        sent = {(j.namespace, j.pod, j.container): j.busy_cores for j in emulator.loads[-1].cpu_jobs}
        assert sent == {("default", runner.record.created["j"], "work"): pytest.approx(2.0),
                        ("smoke", "idle", "a"): 0.0, ("smoke", "idle", "b"): 0.0}
    finally:
        runner.close()


def test_a_simulator_that_lost_the_pods_containers_gets_them_again() -> None:
    """A simulator started again reports its node idle and without containers: an idle node (utilisation 0 on
    both sides) is sent its Pods again, or its cAdvisor would stop naming them and the receipts fall back to
    requests."""
    runner = WorkloadRunner(k8s.ApiClient(), "127.0.0.1:1", [], "c", tick_s=0.001, log=lambda _: None)
    core = CountingCore()
    core.others = [k8s.V1Pod(metadata=k8s.V1ObjectMeta(name="idle", namespace="smoke"),
                             spec=k8s.V1PodSpec(node_name="node-a", containers=[k8s.V1Container(name="a")]))]
    runner.core = core  # type: ignore[assignment]
    emulator = KeepingEmulator()
    runner.stub = emulator
    try:
        runner.tick()
        runner.tick()
        assert len(emulator.loads) == 1  # the emulator holds them: not sent again
        emulator.load = pb.NodeLoad()  # restarted
        runner.tick()
        assert len(emulator.loads) == 2 and [j.pod for j in emulator.loads[-1].cpu_jobs] == ["idle"]
    finally:
        runner.close()


class KeepingEmulator(RecordingEmulator):
    """Reports the load it was last sent, as the simulator does."""

    def __init__(self) -> None:
        super().__init__()
        self.load = pb.NodeLoad()

    def ListNodes(self, request: Any, timeout: float) -> Any:
        truth = nvl_truth()
        truth.load.CopyFrom(self.load)
        return pb.ListNodesResponse(nodes=[truth])

    def SetNodeLoad(self, request: Any, timeout: float) -> Any:
        self.load = request.load
        return super().SetNodeLoad(request, timeout)


class BlinkingCore(CountingCore):
    """Its LIST of the Pods that are not the workload's fails while ``down`` is set, as an API server blip does."""

    def __init__(self) -> None:
        super().__init__()
        self.down: Exception | None = None

    def list_pod_for_all_namespaces(self, label_selector: str, field_selector: str = "",
                                    _preload_content: bool = True) -> Any:
        if "!=" in label_selector and self.down is not None:
            raise self.down
        return super().list_pod_for_all_namespaces(label_selector, field_selector, _preload_content)


def test_an_api_blip_listing_the_other_pods_keeps_the_last_list_and_the_tick_sends_its_loads() -> None:
    lines: list[str] = []
    clock = [0.0]
    job = Job.model_validate({"jobId": "j", "submitTimeOffsetSec": 0, "requests": {"cpu": 4, "gpu": 1},
                              "work": {"gpuUnits": 1e9}, "utilization": {"cpu": 0.5, "gpu": 0.9}})
    runner = WorkloadRunner(k8s.ApiClient(), "127.0.0.1:1", [job], "c", tick_s=0.001, clock=lambda: clock[0],
                            log=lines.append)
    core = BlinkingCore()
    core.others = [k8s.V1Pod(metadata=k8s.V1ObjectMeta(name="idle", namespace="smoke"),
                             spec=k8s.V1PodSpec(node_name="node-a", containers=[k8s.V1Container(name="a")]))]
    runner.core = core  # type: ignore[assignment]
    emulator = RecordingEmulator()
    runner.stub = emulator
    try:
        runner.tick()
        assert ("smoke", "idle") in {(j.namespace, j.pod) for j in emulator.loads[-1].cpu_jobs}
        core.down = k8s.ApiException(status=503, reason="Service Unavailable")
        core.others = []
        for _ in range(3):  # the stand-in reports no load back: each tick sends it, the idle Pod still in it
            clock[0] += 11.0
            sent = len(emulator.loads)
            runner.tick()
            assert len(emulator.loads) == sent + 1
            assert ("smoke", "idle") in {(j.namespace, j.pod) for j in emulator.loads[-1].cpu_jobs}
        core.down = OSError("connection refused")
        clock[0] += 11.0
        runner.tick()
        assert len(lines) == 1 and "503" in lines[0], lines  # once for the whole outage
        core.down = None
        clock[0] += 11.0
        runner.tick()
        assert ("smoke", "idle") not in {(j.namespace, j.pod) for j in emulator.loads[-1].cpu_jobs}
        assert lines[1:] == ["workload: listing the Pods that are not the workload's again"]
    finally:
        runner.close()

