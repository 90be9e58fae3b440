"""The workload shell on the real control plane: Pods created, bound by kube-scheduler on KWOK
nodes, progress slowed by a RAPL cap in the emulator, Pods deleted on completion."""

from __future__ import annotations

import functools
import statistics
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as k8s
from prometheus_client import generate_latest

from joulie_api import names
from joulie_hwprofiles.nodeobject import node_object
from joulie_hwprofiles.schema import builtin_profile
from joulie_localcluster.controlplane import ControlPlane
from joulie_localcluster.kwok import KWOK_NODE_ANNOTATION, KWOK_NODE_ANNOTATION_VALUE, KWOK_TAINT_KEY
from joulie_localcluster.procs import ManagedProcess
from joulie_simulator.emulation.emulator import Emulator
from joulie_simulator.serving.grpc_api import serve
from joulie_simulator.workload.kube.runner import WorkloadRunner
from joulie_testinfra.waiting import eventually
from joulie_workload.pods import LABEL_PART_OF, PART_OF
from joulie_workload.trace import Job

pytest_plugins = ["joulie_testinfra.fixtures"]

PROFILE = "intel-xeon-2s-rapl"
RAPL_PL1 = "sys/devices/virtual/powercap/intel-rapl/intel-rapl:{s}/constraint_0_power_limit_uw"


@pytest.fixture
def emulated(control_plane: ControlPlane) -> Iterator[tuple[Emulator, str, list[str], str]]:
    suffix = uuid.uuid4().hex[:5]
    cluster = f"wl-{suffix}"
    nodes = [f"wl-fast-{suffix}", f"wl-capped-{suffix}"]
    prof = builtin_profile(PROFILE)
    emu = Emulator([(n, prof) for n in nodes], tick_s=0.2)
    server, port = serve(emu, "127.0.0.1:0")
    stop = threading.Event()

    def ticker() -> None:
        while not stop.wait(0.2):
            emu.tick(0.5)  # at least the frequency ramp time, so a load step settles in one tick

    thread = threading.Thread(target=ticker, daemon=True)
    thread.start()
    try:
        yield emu, f"127.0.0.1:{port}", nodes, cluster
    finally:
        stop.set()
        thread.join(5)
        server.stop(0)


def _node(name: str, cluster: str) -> dict[str, Any]:
    obj = node_object(builtin_profile(PROFILE), name, {names.LABEL_SIM_CLUSTER: cluster})
    obj["metadata"]["annotations"][KWOK_NODE_ANNOTATION] = KWOK_NODE_ANNOTATION_VALUE
    obj["spec"]["taints"] = [{"key": KWOK_TAINT_KEY, "value": "fake", "effect": "NoSchedule"}]
    # The typed client insists on every nodeInfo field; the kubelet (KWOK here) reports that part.
    del obj["status"]["nodeInfo"]
    return obj


def _job(jid: str) -> Job:
    # 60 of 95 allocatable cores: one job per node at a time, so three jobs use both nodes.
    return Job.model_validate({"type": "job", "jobId": jid, "submitTimeOffsetSec": 0, "class": "general",
                               "requests": {"cpu": 60}, "work": {"cpuUnits": 60 * 3.0},
                               "utilization": {"cpu": 1.0}, "sensitivity": {"cpu": 1.0}})


def test_trace_pods_are_bound_slowed_by_a_cap_and_deleted(
    kube_api: k8s.ApiClient, kwok: ManagedProcess, scheduler: ManagedProcess, emulated: tuple[Emulator, str, list[str], str]
) -> None:
    emu, addr, (fast, capped), cluster = emulated
    core = k8s.CoreV1Api(kube_api)
    for n in (fast, capped):
        node = k8s.V1Node.from_dict(_node(n, cluster))
        assert node is not None
        core.create_node(node)

    def ready(name: str) -> bool:
        status = core.read_node(name).status
        conds = (status.conditions if status else None) or []
        return any(c.type == "Ready" and c.status == "True" for c in conds)

    for n in (fast, capped):
        eventually(functools.partial(ready, n), what=f"node {n} Ready")
    for s in (0, 1):  # 60 W per package, written as the agent writes RAPL
        assert emu.write(capped, RAPL_PL1.format(s=s), b"60000000\n").ok

    jobs = [_job(f"{cluster}-job-{i}") for i in range(3)]
    runner = WorkloadRunner(kube_api, addr, jobs, cluster, tick_s=0.25, log=lambda _: None)
    seen_pods: set[str] = set()
    done = threading.Event()
    result: list[bool] = []

    def drive() -> None:
        result.append(runner.run(timeout_s=90))
        done.set()

    th = threading.Thread(target=drive, daemon=True)
    th.start()
    selector = f"{LABEL_PART_OF}={PART_OF}"

    def pods_now() -> list[Any]:
        items = core.list_namespaced_pod("default", label_selector=selector).items
        for p in items:
            meta = p.metadata
            if meta is not None and meta.name and (meta.labels or {}).get(names.ANNOTATION_WORKLOAD_CLASS) == "general":
                seen_pods.add(meta.name)
        return list(items)

    eventually(lambda: len(pods_now()) == 3, what="3 pods created")
    eventually(done.is_set, timeout_s=100, what="all jobs done")
    th.join(5)
    runner.close()
    assert result == [True], runner.record.errors

    rec = runner.record
    assert not rec.errors
    assert len(seen_pods) == 3 and set(rec.created) == {j.job_id for j in jobs}
    assert set(rec.bound.values()) == {fast, capped}, rec.bound
    assert rec.deleted == {j.job_id for j in jobs}
    eventually(lambda: [p for p in pods_now() if p.metadata.deletion_timestamp is None] == [], what="pods deleted")

    # Progress: the capped node ran its job slower than the uncapped one.
    fast_speed, capped_speed = statistics.median(rec.cpu_speeds[fast]), statistics.median(rec.cpu_speeds[capped])
    assert fast_speed == pytest.approx(1.0, abs=0.05), rec.cpu_speeds
    assert capped_speed < 0.8, rec.cpu_speeds
    durations: dict[str, list[float]] = {r.node: [] for r in runner.engine.runs.values()}
    for r in runner.engine.runs.values():
        assert r.start_s is not None and r.done_s is not None
        durations[r.node].append(r.done_s - r.start_s)
    assert max(durations[capped]) > 1.2 * max(durations[fast]), durations
    print(f"median CPU speed: uncapped {fast_speed:.2f}, capped (60 W/package) {capped_speed:.2f}; "
          f"job durations s: uncapped {sorted(round(d, 1) for d in durations[fast])}, "
          f"capped {sorted(round(d, 1) for d in durations[capped])}")

    # The emulator carried the jobs' load and is back to idle; metrics counted every job.
    assert all(emu.node(n).state.load.cpu_util == 0.0 for n in (fast, capped))
    text = generate_latest(runner.metrics.registry).decode()
    assert 'joulie_sim_job_submitted_total{class="general"} 3.0' in text
    assert f'joulie_sim_job_completed_total{{class="general",node="{capped}"}}' in text
    assert "joulie_sim_job_completion_seconds_count 3.0" in text
