from __future__ import annotations

from pathlib import Path

from joulie_simcluster.runtimes.kubelet.node import NodePaths, NodeSettings, node_ip
from joulie_simcluster.runtimes.kubelet.node_config import kube_proxy_argv, kubelet_argv, kubelet_config

PATHS = NodePaths.under(Path("/state/kl"))
NODE = NodeSettings(name="kl-node", cluster="kl", kubelet_port=10250, healthz_port=10248,
                    sandbox_image="joulie.local/pause:v1.35.4", runc="/usr/sbin/runc", cni_bin_dir="/usr/lib/cni")


def test_kubelet_config_allows_cgroup_v1_on_cgroupfs_and_never_collects_images() -> None:
    cfg = kubelet_config(PATHS, NODE, Path("/state/kl/pki/ca.crt"))
    assert cfg["failCgroupV1"] is False and cfg["cgroupDriver"] == "cgroupfs"
    assert cfg["cgroupRoot"] == "/joulie-kl"
    assert cfg["containerRuntimeEndpoint"] == "unix:///state/kl/kubelet/containerd/containerd.sock"
    assert cfg["imageGCHighThresholdPercent"] == 100 and cfg["imageGCLowThresholdPercent"] < 100
    assert (cfg["address"], cfg["port"], cfg["readOnlyPort"]) == (node_ip("kl"), 10250, 0)
    assert cfg["healthzBindAddress"] == "127.0.0.1"


def test_kubelet_argv_names_the_node_and_labels_it_for_the_infrastructure_pods() -> None:
    argv = kubelet_argv("/bin/kubelet", PATHS, NODE)
    assert argv[0] == "/bin/kubelet"
    assert "--hostname-override=kl-node" in argv and f"--node-ip={node_ip('kl')}" in argv
    assert "--node-labels=joulie.io/infra=true,joulie.io/hwemu-host=true" in argv
    assert "--root-dir=/state/kl/kubelet/root" in argv


def test_node_ip_is_stable_per_cluster_and_never_loopback() -> None:
    assert node_ip("kl") == node_ip("kl") != node_ip("other")
    a, b, c, d = (int(x) for x in node_ip("kl").split("."))
    assert (a, b) == (10, 89) and 0 <= c <= 255 and 1 <= d <= 254
    assert kubelet_config(PATHS, NODE, Path("/ca.crt"))["address"] == NODE.ip == node_ip("kl")


def test_kube_proxy_leaves_the_hosts_sysctls_alone() -> None:
    argv = kube_proxy_argv(Path("/k"), NODE, 10256, 10249)
    assert "--proxy-mode=iptables" in argv and "--hostname-override=kl-node" in argv
    assert {"--conntrack-max-per-core=0", "--iptables-localhost-nodeports=false"} <= set(argv)
    assert {"--healthz-bind-address=127.0.0.1:10256", "--metrics-bind-address=127.0.0.1:10249"} <= set(argv)
