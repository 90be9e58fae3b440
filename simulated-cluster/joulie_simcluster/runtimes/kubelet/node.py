"""The kubelet runtime's one real node, named: where its files live under the state directory
(:class:`NodePaths`), what the runtime chose for it (:class:`NodeSettings`: name, ports, cgroup
parent, images, binaries), its address, the chart's release and namespace, and the failure every
step of this runtime raises. Pure.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from joulie_simcluster.errors import RuntimeFailure

# Under the state directory: everything of the node (containerd's root holds the image layers).
NODE_DIR = "kubelet"
# A unix socket path must fit in sun_path (108 bytes with the NUL).
MAX_SOCKET_PATH = 107

# Labels of the real node (the k3s runtime's infra node carries the same): where the hwemu trees
# live and where the infrastructure Pods (simulator, controller manager, extender) may run.
NODE_LABELS: Mapping[str, str] = {"joulie.io/infra": "true", "joulie.io/hwemu-host": "true"}
# The CNI bridge network, for Pods without hostNetwork (hostNetwork Pods never call CNI).
POD_SUBNET = "10.88.0.0/24"


# The node's own address, on the loopback interface: the kubelet refuses a loopback address (127/8)
# as its node IP, and with none the Node has no address: no `kubectl logs`, and hostNetwork Pods get
# no IP for their probes. This machine kind has no dummy interfaces (no kernel module), so the
# address goes on `lo`: local to the host, like 127.0.0.1.
NODE_IP_NET = "10.89"
# The chart's release, namespace and the Deployment that needs the host's network here.
RELEASE = "joulie"
NAMESPACE = "joulie-system"


def node_name(cluster: str) -> str:
    """The real node's name: ``<SIMCLUSTER_NAME>-node``."""
    return f"{cluster}-node"


def node_ip(cluster: str, index: int = 0) -> str:
    """10.89.X.Y from the cluster's name, the same every time (Y in 1..254); node `index` (the agent
    nodes of SIMCLUSTER_KUBELET_NODES, 1..) takes the next Y, so each kubelet has its own address."""
    h = hashlib.sha256(cluster.encode()).digest()
    return f"{NODE_IP_NET}.{h[0]}.{1 + (h[1] + index) % 254}"


MAX_KUBELET_NODES = 3
"""SIMCLUSTER_KUBELET_NODES at most: each further node is a kubelet and a containerd (≈ 150 MiB, and
its own import of the agent image)."""


def node_dir(index: int) -> str:
    """The node's directory under the state dir: ``kubelet`` for the first (the infrastructure node),
    ``kubelet-<i>`` for each agent node."""
    return NODE_DIR if index == 0 else f"{NODE_DIR}-{index}"


class KubeletFailure(RuntimeFailure):
    """The kubelet runtime cannot go on; the message names the missing piece."""


FUSE_REFUSED = ("SIMCLUSTER_HWEMU=fuse: the kubelet runtime deploys the files view only, the one its smoke passes with "
                "(simulated-cluster/KUBELET.md); use SIMCLUSTER_HWEMU=files")


def check_mode(mode: str) -> None:
    """The FUSE view is refused before anything starts (``up``, ``deploy``, a smoke), naming files mode:
    the agent Pods did start on it (the shared mount carries the view into them) but no smoke has
    passed with it yet, and ``up`` used to build the whole node before ``deploy`` refused it."""
    if mode == "fuse":
        raise KubeletFailure(FUSE_REFUSED)


@dataclass(frozen=True)
class NodePaths:
    """Every file and directory of the node, under ``<state>/kubelet``."""

    root: Path

    @classmethod
    def under(cls, state_root: Path, index: int = 0) -> NodePaths:
        return cls(state_root / node_dir(index))

    @property
    def containerd_root(self) -> Path:
        return self.root / "containerd" / "root"

    @property
    def containerd_state(self) -> Path:
        return self.root / "containerd" / "state"

    @property
    def containerd_socket(self) -> Path:
        return self.root / "containerd" / "containerd.sock"

    @property
    def containerd_config(self) -> Path:
        return self.root / "containerd" / "config.toml"

    @property
    def cni_conf_dir(self) -> Path:
        return self.root / "cni" / "net.d"

    @property
    def cni_ipam_dir(self) -> Path:
        return self.root / "cni" / "ipam"

    @property
    def kubelet_root(self) -> Path:
        return self.root / "root"

    @property
    def kubelet_config(self) -> Path:
        return self.root / "kubelet-config.yaml"

    @property
    def kubeconfig(self) -> Path:
        return self.root / "kubelet.kubeconfig"

    @property
    def cert_dir(self) -> Path:
        return self.root / "pki"

    @property
    def node_crt(self) -> Path:
        return self.cert_dir / "node.crt"

    @property
    def node_key(self) -> Path:
        return self.cert_dir / "node.key"

    @property
    def pod_logs(self) -> Path:
        return self.root / "pod-logs"

    @property
    def images(self) -> Path:
        return self.root / "images"

    def check_socket(self) -> None:
        n = len(str(self.containerd_socket))
        if n > MAX_SOCKET_PATH:
            raise KubeletFailure(
                f"containerd's socket path {self.containerd_socket} is {n} bytes, more than a unix socket "
                f"takes ({MAX_SOCKET_PATH}); set SIMCLUSTER_DIR to a shorter directory")


@dataclass(frozen=True)
class NodeSettings:
    """What the runtime chose for this node: name, ports, cgroup parent, images, binaries."""

    name: str  # the Node's name
    cluster: str  # SIMCLUSTER_NAME: the cgroup parent, CNI network and node IP derive from it
    kubelet_port: int
    healthz_port: int
    sandbox_image: str
    runc: str
    cni_bin_dir: str  # where the CNI plugins are (Debian: /usr/lib/cni); may be missing
    snapshotter: str = "overlayfs"
    index: int = 0
    """0: the infrastructure node; 1..: an agent node (SIMCLUSTER_KUBELET_NODES), named as a spec Node."""
    labels: Mapping[str, str] = field(default_factory=lambda: dict(NODE_LABELS))
    """The kubelet's --node-labels."""

    @property
    def cgroup_root(self) -> str:
        return self.cgroup_root_of(self.cluster, self.index)

    @property
    def ip(self) -> str:
        return node_ip(self.cluster, self.index)

    @property
    def pod_subnet(self) -> str:
        """The CNI bridge's subnet: 10.88.<index>.0/24, one per node (each has its own bridge)."""
        return POD_SUBNET if self.index == 0 else f"10.88.{self.index}.0/24"

    @property
    def bridge(self) -> str:
        """The CNI bridge's name (at most 15 characters): jl-<cluster>, jl<i>-<cluster> for agent nodes."""
        return (f"jl-{self.cluster}" if self.index == 0 else f"jl{self.index}-{self.cluster}")[:15]

    @staticmethod
    def cgroup_root_of(cluster: str, index: int = 0) -> str:
        """The kubelet's cgroup parent: ours alone, so down removes exactly what this node made."""
        return f"/joulie-{cluster}" if index == 0 else f"/joulie-{cluster}-{index}"
