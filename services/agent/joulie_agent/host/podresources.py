"""The kubelet's pod-resources API on its unix socket: which container holds which device. Shell.

``v1.PodResourcesLister/List`` (``proto/kubelet/podresources/v1``), the API the kubelet serves at
``/var/lib/kubelet/pod-resources/kubelet.sock`` (the DaemonSet mounts that directory read-only; a
pool agent reads one socket per emulated node). One call per export interval, with a deadline: a
kubelet that does not answer costs the interval's allocation points, never a hung export.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import grpc
from kubelet.podresources.v1 import api_pb2 as _pb2
from kubelet.podresources.v1 import api_pb2_grpc as _pb2_grpc

from joulie_agent.discovery.gpuactivity import DeviceHolder

pb: Any = _pb2
pb_grpc: Any = _pb2_grpc

DEFAULT_SOCKET = "/var/lib/kubelet/pod-resources/kubelet.sock"
TIMEOUT_S = 2.0
# The kubelet caps List answers at 16 MiB (podresources.DefaultPodResourcesMaxSize); so does the client.
MAX_MESSAGE_BYTES = 16 * 1024 * 1024

log = logging.getLogger(__name__)


class PodResourcesError(Exception):
    """The socket is absent or the kubelet did not answer; the message names the socket and why."""


class PodResourcesClient:
    """A channel to one node's socket, opened on first use and kept."""

    def __init__(self, socket: Path, timeout_s: float = TIMEOUT_S):
        self.socket = socket
        self.timeout_s = timeout_s
        self._channel: grpc.Channel | None = None

    def list(self) -> list[DeviceHolder]:
        """Every container's devices (only containers that hold some)."""
        if not self.socket.exists():
            raise PodResourcesError(
                f"pod-resources: {self.socket}: no such socket (is the kubelet's " "pod-resources directory mounted?)"
            )
        if self._channel is None:
            self._channel = grpc.insecure_channel(
                f"unix://{self.socket}", options=[("grpc.max_receive_message_length", MAX_MESSAGE_BYTES)]
            )
        try:
            resp = pb_grpc.PodResourcesListerStub(self._channel).List(
                pb.ListPodResourcesRequest(), timeout=self.timeout_s
            )
        except grpc.RpcError as err:
            code = err.code().name if isinstance(err, grpc.Call) else "UNKNOWN"
            details = err.details() if isinstance(err, grpc.Call) else str(err)
            raise PodResourcesError(f"pod-resources: {self.socket}: List: {code}: {details}") from err
        return holders(resp)

    def close(self) -> None:
        if self._channel is not None:
            self._channel.close()
            self._channel = None


def holders(resp: Any) -> list[DeviceHolder]:
    """The devices of a ListPodResourcesResponse, one entry per container and resource."""
    return [
        DeviceHolder(p.namespace, p.name, c.name, d.resource_name, tuple(d.device_ids))
        for p in resp.pod_resources
        for c in p.containers
        for d in c.devices
        if d.device_ids
    ]
