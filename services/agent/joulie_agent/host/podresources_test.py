"""The pod-resources client against a real gRPC server on a unix socket, as the kubelet serves it."""

from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pytest

from joulie_agent.discovery.gpuactivity import DeviceHolder
from joulie_agent.host.podresources import PodResourcesClient, PodResourcesError, pb, pb_grpc

UUID0 = "GPU-4d2e8a4b-0f57-5c64-1b3e-7f2f0e9d1a00"


class Kubelet(pb_grpc.PodResourcesListerServicer):  # type: ignore[misc]
    def __init__(self) -> None:
        self.pods: list[Any] = []
        self.fail: grpc.StatusCode | None = None

    def List(self, request: Any, context: grpc.ServicerContext) -> Any:
        if self.fail is not None:
            context.abort(self.fail, "kubelet says no")
        return pb.ListPodResourcesResponse(pod_resources=self.pods)


@pytest.fixture
def kubelet(tmp_path: Path) -> Iterator[tuple[Kubelet, Path]]:
    sock = tmp_path / "pod-resources" / "kubelet.sock"
    sock.parent.mkdir()
    servicer = Kubelet()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    pb_grpc.add_PodResourcesListerServicer_to_server(servicer, server)
    server.add_insecure_port(f"unix://{sock}")
    server.start()
    try:
        yield servicer, sock
    finally:
        server.stop(None)


def test_list_gives_each_containers_devices(kubelet: tuple[Kubelet, Path]) -> None:
    servicer, sock = kubelet
    servicer.pods = [
        pb.PodResources(
            name="train-0",
            namespace="ml",
            containers=[
                pb.ContainerResources(
                    name="main",
                    devices=[
                        pb.ContainerDevices(resource_name="nvidia.com/gpu", device_ids=[UUID0, "GPU-other"]),
                    ],
                    cpu_ids=[2, 3],
                ),
                pb.ContainerResources(name="sidecar"),  # holds nothing: not listed
            ],
        ),
        pb.PodResources(name="web", namespace="default", containers=[pb.ContainerResources(name="nginx")]),
    ]
    client = PodResourcesClient(sock)
    try:
        assert client.list() == [DeviceHolder("ml", "train-0", "main", "nvidia.com/gpu", (UUID0, "GPU-other"))]
        servicer.pods = []
        assert client.list() == []  # the same channel, a fresh answer
    finally:
        client.close()


def test_the_wire_is_the_kubelets_method_path(kubelet: tuple[Kubelet, Path]) -> None:
    # A client that knows only the kubelet's method name (no generated stub) gets the answer.
    servicer, sock = kubelet
    servicer.pods = [pb.PodResources(name="p", namespace="n")]
    with grpc.insecure_channel(f"unix://{sock}") as ch:
        call = ch.unary_unary("/v1.PodResourcesLister/List", request_serializer=None, response_deserializer=None)
        raw = call(b"", timeout=2)
    assert pb.ListPodResourcesResponse.FromString(raw).pod_resources[0].name == "p"


def test_a_kubelet_error_or_no_socket_is_an_error_naming_the_socket(
    kubelet: tuple[Kubelet, Path], tmp_path: Path
) -> None:
    servicer, sock = kubelet
    servicer.fail = grpc.StatusCode.UNAVAILABLE
    client = PodResourcesClient(sock)
    with pytest.raises(PodResourcesError, match=r"kubelet.sock: List: UNAVAILABLE: kubelet says no"):
        client.list()
    client.close()
    with pytest.raises(PodResourcesError, match="no such socket"):
        PodResourcesClient(tmp_path / "absent.sock").list()


def test_a_kubelet_that_does_not_answer_costs_the_timeout_not_a_hang(tmp_path: Path) -> None:
    import socket

    sock = tmp_path / "mute.sock"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(sock))
    listener.listen(1)  # accepts the connection, never speaks HTTP/2
    try:
        with pytest.raises(PodResourcesError, match="DEADLINE_EXCEEDED"):
            PodResourcesClient(sock, timeout_s=0.5).list()
    finally:
        listener.close()


def test_a_kubelet_restarted_on_the_same_socket_is_read_at_the_next_call(tmp_path: Path) -> None:
    sock = tmp_path / "kubelet.sock"

    def serve(pods: list[Any]) -> grpc.Server:
        servicer = Kubelet()
        servicer.pods = pods
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
        pb_grpc.add_PodResourcesListerServicer_to_server(servicer, server)
        server.add_insecure_port(f"unix://{sock}")
        server.start()
        return server

    client = PodResourcesClient(sock, timeout_s=1.0)
    server = serve([])
    assert client.list() == []
    server.stop(None)
    with pytest.raises(PodResourcesError):
        client.list()
    server = serve(
        [
            pb.PodResources(
                name="p",
                namespace="n",
                containers=[
                    pb.ContainerResources(
                        name="c", devices=[pb.ContainerDevices(resource_name="nvidia.com/gpu", device_ids=[UUID0])]
                    )
                ],
            )
        ]
    )
    try:
        assert [h.pod for h in client.list()] == ["p"]
    finally:
        client.close()
        server.stop(None)
