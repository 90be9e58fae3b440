"""The emulated kubelets' pod-resources API: ``v1.PodResourcesLister`` per emulated NVIDIA node. Shell.

A real node's kubelet serves ``proto/kubelet/podresources/v1`` on
``/var/lib/kubelet/pod-resources/kubelet.sock``; the agent reads it to know which Pod holds which GPU.
Here each emulated node with NVIDIA boards gets the same service on its own unix socket,
``<root>/<node>/pod-resources/kubelet.sock`` (``emulate --pod-resources-root``, outside the node's
tree: a FUSE view cannot hold a socket), answering from the workload runner's allocation
(``NodeLoad.gpu_jobs``): each Pod's container holds ``nvidia.com/gpu`` devices whose IDs are the
boards' UUIDs, as the NVIDIA device plugin sets them, the UUIDs the emulated nvidia-smi reports.

What differs from a kubelet: only Pods holding a board are listed (a kubelet lists every Pod, with
its CPU ids and memory where its managers assign them); ``GetAllocatableResources`` lists the node's
boards; ``Get`` answers NOT_FOUND for a Pod that holds no board. A server is one gRPC server per node
sharing one small thread pool.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
from kubelet.podresources.v1 import api_pb2 as _pb2
from kubelet.podresources.v1 import api_pb2_grpc as _pb2_grpc

from joulie_simulator.emulation import emulator as em

pb: Any = _pb2
pb_grpc: Any = _pb2_grpc

RESOURCE = "nvidia.com/gpu"
SOCKET = "pod-resources/kubelet.sock"

log = logging.getLogger(__name__)


def pod_resources(emu: em.Emulator, node: str) -> list[Any]:
    """The node's Pods that hold boards, as PodResources messages (one container each, as allocated)."""
    st = emu.nodes[node].state
    uuids = {g.index: g.uuid for g in st.gpus}
    pods: dict[tuple[str, str], dict[str, list[str]]] = {}
    for j in sorted(st.load.gpu_jobs, key=lambda j: j.index):
        if not j.pod or j.index not in uuids:
            continue
        pods.setdefault((j.namespace, j.pod), {}).setdefault(j.container, []).append(uuids[j.index])
    return [
        pb.PodResources(
            name=name,
            namespace=ns,
            containers=[
                pb.ContainerResources(name=c, devices=[pb.ContainerDevices(resource_name=RESOURCE, device_ids=ids)])
                for c, ids in containers.items()
            ],
        )
        for (ns, name), containers in pods.items()
    ]


class _Kubelet(_pb2_grpc.PodResourcesListerServicer):
    def __init__(self, emu: em.Emulator, node: str) -> None:
        self.emu, self.node = emu, node

    def List(self, request: Any, context: grpc.ServicerContext) -> Any:
        return pb.ListPodResourcesResponse(pod_resources=pod_resources(self.emu, self.node))

    def GetAllocatableResources(self, request: Any, context: grpc.ServicerContext) -> Any:
        boards = [g.uuid for g in self.emu.nodes[self.node].state.gpus]
        return pb.AllocatableResourcesResponse(devices=[pb.ContainerDevices(resource_name=RESOURCE, device_ids=boards)])

    def Get(self, request: Any, context: grpc.ServicerContext) -> Any:
        for p in pod_resources(self.emu, self.node):
            if (p.namespace, p.name) == (request.pod_namespace, request.pod_name):
                return pb.GetPodResourcesResponse(pod_resources=p)
        context.abort(grpc.StatusCode.NOT_FOUND, f"pod {request.pod_namespace}/{request.pod_name} not found")


class PodResourcesServers:
    """One pod-resources server per emulated NVIDIA node under ``root``."""

    def __init__(self, emu: em.Emulator, root: Path, nodes: Iterable[str] | None = None, workers: int = 4) -> None:
        self.emu, self.root = emu, root
        names = (
            nodes
            if nodes is not None
            else [
                n.name for n in emu.nodes.values() if n.profile.gpus is not None and n.profile.gpus.vendor == "nvidia"
            ]
        )
        self.nodes = list(names)
        self._pool = futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="pod-resources")
        self._servers: list[grpc.Server] = []

    def socket(self, node: str) -> Path:
        return self.root / node / SOCKET

    def start(self) -> None:
        for node in self.nodes:
            path = self.socket(node)
            path.parent.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(FileNotFoundError):
                path.unlink()  # a socket left by a simulator that was killed
            server = grpc.server(self._pool)
            pb_grpc.add_PodResourcesListerServicer_to_server(_Kubelet(self.emu, node), server)
            if server.add_insecure_port(f"unix://{path}") == 0:
                raise OSError(f"pod-resources: cannot listen on {path}")
            server.start()
            self._servers.append(server)

    def stop(self) -> None:
        for server in self._servers:
            server.stop(None)
        self._servers.clear()
        self._pool.shutdown(wait=False)
        for node in self.nodes:
            with contextlib.suppress(OSError):
                self.socket(node).unlink()
