"""The kubelet and kube-proxy as data: the KubeletConfiguration (cgroup v1 allowed, nothing
garbage-collects the images nobody can pull again), both command lines, the node's kubeconfig, and
the iptables chains the kubelet leaves behind. Pure: :mod:`joulie_simcluster.runtimes.kubelet.up`
starts the processes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from joulie_simcluster.runtimes.kubelet.node import POD_SUBNET, NodePaths, NodeSettings


def kubelet_config(paths: NodePaths, node: NodeSettings, ca_crt: Path) -> dict[str, Any]:
    """The KubeletConfiguration: on 127.0.0.1 only, cgroupfs under our own cgroup parent, cgroup v1
    allowed (kubelet >= 1.35 refuses it unless failCgroupV1 is false), no image garbage collection
    (nothing here can pull an image again) and eviction only when the disk is nearly full."""
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": node.ip,
        "port": node.kubelet_port,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": node.healthz_port,
        # kube-apiserver here has no kubelet client certificate (`kubectl logs` calls the kubelet as
        # nobody): anonymous requests are allowed, on the host-local node address only.
        "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False},
                           "x509": {"clientCAFile": str(ca_crt)}},
        "authorization": {"mode": "AlwaysAllow"},
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": node.cgroup_root,
        "cgroupsPerQOS": True,
        "failCgroupV1": False,
        "failSwapOn": False,
        "containerRuntimeEndpoint": f"unix://{paths.containerd_socket}",
        "enforceNodeAllocatable": ["pods"],
        "evictionHard": {"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%",
                         "nodefs.inodesFree": "1%"},
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "maxPods": 110,
        "podPidsLimit": -1,
        "resolvConf": "/etc/resolv.conf",
        "serializeImagePulls": False,
        "registerNode": True,
        "rotateCertificates": False,
        "serverTLSBootstrap": False,
        "protectKernelDefaults": False,
        "volumePluginDir": str(paths.root / "volume-plugins"),
        "podLogsDir": str(paths.pod_logs),
        "containerLogMaxSize": "10Mi",
        "containerLogMaxFiles": 2,
    }


def kubelet_argv(kubelet: str, paths: NodePaths, node: NodeSettings) -> list[str]:
    labels = ",".join(f"{k}={v}" for k, v in node.labels.items())
    return [
        kubelet,
        f"--config={paths.kubelet_config}",
        f"--kubeconfig={paths.kubeconfig}",
        f"--root-dir={paths.kubelet_root}",
        f"--cert-dir={paths.cert_dir}",
        f"--hostname-override={node.name}",
        f"--node-ip={node.ip}",
        f"--node-labels={labels}",
        "--v=1",
    ]


def kube_proxy_argv(kubeconfig: Path, node: NodeSettings, healthz_port: int, metrics_port: int) -> list[str]:
    """kube-proxy's flags (after the binary): iptables mode, health and metrics on loopback, the
    host's conntrack and route_localnet sysctls left as they are."""
    return [
        f"--kubeconfig={kubeconfig}",
        "--proxy-mode=iptables",
        f"--hostname-override={node.name}",
        f"--cluster-cidr={POD_SUBNET}",
        f"--healthz-bind-address=127.0.0.1:{healthz_port}",  # port 0 is refused
        f"--metrics-bind-address=127.0.0.1:{metrics_port}",
        "--conntrack-max-per-core=0",
        "--conntrack-tcp-timeout-established=0s",
        "--conntrack-tcp-timeout-close-wait=0s",
        "--iptables-localhost-nodeports=false",
        "--v=1",
    ]


def node_kubeconfig(url: str, ca_crt: Path, node_crt: Path, node_key: Path, node: str) -> dict[str, Any]:
    """The kubelet's credentials: a client certificate for system:node:<node> (group system:nodes),
    which the apiserver's Node authorizer limits to this node's objects."""
    user = f"system:node:{node}"
    return {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "simcluster", "cluster": {"server": url, "certificate-authority": str(ca_crt)}}],
        "users": [{"name": user, "user": {"client-certificate": str(node_crt), "client-key": str(node_key)}}],
        "contexts": [{"name": "node", "context": {"cluster": "simcluster", "user": user}}],
        "current-context": "node",
    }


# The iptables chains the kubelet makes on the host (its canary, the localnet firewall and
# kube-proxy's mode hint); down removes them, jumps first, since nothing else here uses them.
# kube-proxy's own chains go with `kube-proxy --cleanup`.
KUBELET_IPTABLES_CLEANUP: tuple[tuple[str, ...], ...] = tuple(
    (cmd, *args)
    for cmd in ("iptables", "ip6tables")
    for args in (
        ("-t", "filter", "-D", "INPUT", "-j", "KUBE-FIREWALL"),
        ("-t", "filter", "-D", "OUTPUT", "-j", "KUBE-FIREWALL"),
        ("-t", "filter", "-F", "KUBE-FIREWALL"), ("-t", "filter", "-X", "KUBE-FIREWALL"),
        *(("-t", table, op, "KUBE-KUBELET-CANARY") for table in ("filter", "nat", "mangle") for op in ("-F", "-X")),
        ("-t", "mangle", "-X", "KUBE-IPTABLES-HINT"),
    )
)
