"""The emulated kubelets' pod-resources API over each NVIDIA node's unix socket, as an agent reads it."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from joulie_hwprofiles.schema import builtin_profile
from joulie_simulator.emulation.emulator import Emulator
from joulie_simulator.physics.model import GpuJob, Load
from joulie_simulator.serving.podresources import PodResourcesServers, pb, pb_grpc


@pytest.fixture
def served() -> Iterator[tuple[Emulator, PodResourcesServers]]:
    emu = Emulator(
        [
            ("g0", builtin_profile("nvidia-h100-sxm-4gpu")),
            ("c0", builtin_profile("intel-xeon-2s-rapl")),
            ("a0", builtin_profile("amd-instinct-mi300x-8gpu")),
        ]
    )
    with tempfile.TemporaryDirectory(prefix="pr") as d:  # a short path: unix socket paths end at 107 bytes
        servers = PodResourcesServers(emu, Path(d))
        servers.start()
        try:
            yield emu, servers
        finally:
            servers.stop()


def _list(sock: Path) -> Any:
    with grpc.insecure_channel(f"unix://{sock}") as ch:
        return pb_grpc.PodResourcesListerStub(ch).List(pb.ListPodResourcesRequest(), timeout=5)


def test_each_nvidia_node_lists_the_pods_holding_its_boards_by_uuid(
    served: tuple[Emulator, PodResourcesServers],
) -> None:
    emu, servers = served
    assert servers.nodes == ["g0"]  # a CPU node and an AMD node have no NVIDIA device plugin
    sock = servers.socket("g0")
    assert _list(sock).pod_resources == []
    emu.set_load(
        "g0",
        Load(
            gpu_util=(0.9, 0.9, 0.5),
            gpu_jobs=(
                GpuJob(0, "train-1", 0.8, "ml", "job-train-1", "work"),
                GpuJob(1, "train-1", 0.8, "ml", "job-train-1", "work"),
                GpuJob(2, "decode-7", 0.2, "serve", "job-decode-7", "work"),
            ),
        ),
    )
    uuids = [g.uuid for g in emu.nodes["g0"].state.gpus]
    got = {
        (p.namespace, p.name): [(c.name, d.resource_name, list(d.device_ids)) for c in p.containers for d in c.devices]
        for p in _list(sock).pod_resources
    }
    assert got == {
        ("ml", "job-train-1"): [("work", "nvidia.com/gpu", uuids[:2])],
        ("serve", "job-decode-7"): [("work", "nvidia.com/gpu", [uuids[2]])],
    }
    # The job ends: its Pod is no longer listed.
    emu.set_load(
        "g0", Load(gpu_util=(0.0, 0.0, 0.5), gpu_jobs=(GpuJob(2, "decode-7", 0.2, "serve", "job-decode-7", "work"),))
    )
    assert [p.name for p in _list(sock).pod_resources] == ["job-decode-7"]


def test_allocatable_get_and_the_sockets_removed_on_stop(served: tuple[Emulator, PodResourcesServers]) -> None:
    emu, servers = served
    sock = servers.socket("g0")
    with grpc.insecure_channel(f"unix://{sock}") as ch:
        stub = pb_grpc.PodResourcesListerStub(ch)
        alloc = stub.GetAllocatableResources(pb.AllocatableResourcesRequest(), timeout=5)
        assert list(alloc.devices[0].device_ids) == [g.uuid for g in emu.nodes["g0"].state.gpus]
        with pytest.raises(grpc.RpcError) as err:
            stub.Get(pb.GetPodResourcesRequest(pod_name="nope", pod_namespace="ml"), timeout=5)
        assert err.value.code() == grpc.StatusCode.NOT_FOUND
    servers.stop()
    assert not sock.exists()
