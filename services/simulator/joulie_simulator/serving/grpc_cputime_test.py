"""Issue 38 over gRPC: the Pods' containers in SetNodeLoad counted as CPU time on /metrics/cadvisor, and the
CPU packages in NodeTruth on a node without RAPL."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families

from joulie.sim.v1 import emulator_pb2 as _pb2
from joulie.sim.v1 import emulator_pb2_grpc as _pb2_grpc
from joulie_hwprofiles.schema import builtin_profile
from joulie_simulator.emulation.emulator import Emulator
from joulie_simulator.serving.grpc_api import serve
from joulie_simulator.serving.http_debug import DebugServer

pb: Any = _pb2
pb_grpc: Any = _pb2_grpc


@pytest.fixture
def emu() -> Emulator:
    return Emulator([("vm-0", builtin_profile("vm-no-powercap"))], clock=lambda: 0.0)


@pytest.fixture
def stub(emu: Emulator) -> Iterator[Any]:
    server, port = serve(emu)
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield pb_grpc.EmulatorServiceStub(channel)
    finally:
        channel.close()
        server.stop(0)


def _cadvisor(emu: Emulator) -> dict[tuple[str, str, str, str], float]:
    server = DebugServer(emu)
    server.start()
    try:
        with urllib.request.urlopen(f"{server.url}/metrics/cadvisor", timeout=5) as answer:
            text = answer.read().decode()
    finally:
        server.stop()
    return {
        (s.labels["node"], s.labels["namespace"], s.labels["pod"], s.labels.get("container", "")): s.value
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if s.name == "container_cpu_usage_seconds_total"
    }


def test_each_containers_busy_cores_become_its_cpu_time_on_the_emulators_ticks(emu: Emulator, stub: Any) -> None:
    jobs = [
        pb.CpuJob(namespace="default", pod="load", container="work", busy_cores=6.0),
        pb.CpuJob(namespace="smoke", pod="idle", container="sleep", busy_cores=0.0),
    ]
    t = stub.SetNodeLoad(pb.SetNodeLoadRequest(node="vm-0", load=pb.NodeLoad(cpu_util=0.75, cpu_jobs=jobs)))
    assert [(j.pod, j.busy_cores) for j in t.load.cpu_jobs] == [("load", 6.0), ("idle", 0.0)]  # the runner compares
    emu.tick(2.0)
    emu.tick(2.0)
    got = _cadvisor(emu)
    assert got[("vm-0", "default", "load", "work")] == pytest.approx(24.0)  # 6 cores x 4 s
    assert got[("vm-0", "smoke", "idle", "sleep")] == 0.0  # listed, idle: the node's Pods all report
    assert got[("vm-0", "default", "load", "")] == pytest.approx(24.0)  # the Pod's cgroup, as cAdvisor has it
    stub.SetNodeLoad(pb.SetNodeLoadRequest(node="vm-0", load=pb.NodeLoad(cpu_util=0.0, cpu_jobs=jobs[1:])))
    emu.tick(2.0)
    assert ("vm-0", "default", "load", "work") not in _cadvisor(emu)  # a stopped container's series go


def test_a_cpu_job_without_its_pod_or_with_negative_cores_is_refused(emu: Emulator, stub: Any) -> None:
    for bad in (
        pb.CpuJob(namespace="default", container="work", busy_cores=1.0),
        pb.CpuJob(namespace="default", pod="p", container="work", busy_cores=-1.0),
    ):
        with pytest.raises(grpc.RpcError) as refused:
            stub.SetNodeLoad(pb.SetNodeLoadRequest(node="vm-0", load=pb.NodeLoad(cpu_jobs=[bad])))
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "cpu_jobs" in (
            refused.value.details() or ""
        )
    assert emu.node("vm-0").state.load.cpu_jobs == ()


def test_a_node_without_rapl_reports_its_packages_as_the_power_model_composes_them(emu: Emulator, stub: Any) -> None:
    stub.SetNodeLoad(pb.SetNodeLoadRequest(node="vm-0", load=pb.NodeLoad(cpu_util=0.5)))
    emu.tick(5.0)
    t = stub.GetNode(pb.GetNodeRequest(node="vm-0"))
    truth = emu.truth("vm-0")
    assert len(t.cpu_zones) == 0 and len(t.packages) == len(truth["packages"]) > 0
    assert [p.energy_j for p in t.packages] == [p["energyJ"] for p in truth["packages"]]
    assert sum(p.energy_j for p in t.packages) > 0
