from __future__ import annotations

from pathlib import Path

import pytest

from joulie_simcluster.nodes import KWOK_NODE_ANNOTATION, KWOK_TAINT_KEY, render_nodes
from joulie_simcluster.runtimes.kubelet.agentnodes import (
    AGENT_NODE_LABEL,
    CLUSTER_KEY,
    agent_node_count,
    agent_node_indexes,
    agent_node_settings,
    agent_nodes_of,
    choose_agent_nodes,
    daemonset_values,
    real_node_object,
)
from joulie_simcluster.runtimes.kubelet.containerd_config import cni_conflist
from joulie_simcluster.runtimes.kubelet.node import KubeletFailure, NodePaths, NodeSettings
from joulie_simcluster.runtimes.kubelet.node_config import kubelet_argv, kubelet_config
from joulie_simcluster.spec import load_spec

SMOKE = load_spec(Path("simulated-cluster/specs/smoke.yaml"))
NODES = render_nodes(SMOKE)
INFRA = NodeSettings(name="kl-node", cluster="kl", kubelet_port=10250, healthz_port=10248,
                     sandbox_image="joulie.local/pause:v1.35.4", runc="/usr/sbin/runc", cni_bin_dir="/usr/lib/cni")


def test_agent_nodes_are_the_cpu_capping_amd64_nodes_in_spec_order() -> None:
    # Not epyc-0 (energy counters only), epyc-hsmp-0 (its cap is hwmon, read-only in the DaemonSet), the GPU
    # nodes, vm-0 (no powercap) or arm64-managed-0 (amd64 images).
    assert choose_agent_nodes(SMOKE, NODES, 1) == ["intel-0"]
    assert choose_agent_nodes(SMOKE, NODES, 2) == ["intel-0", "intel-managed-0"]


def test_more_agent_nodes_than_the_spec_has_is_refused_naming_the_candidates() -> None:
    with pytest.raises(KubeletFailure, match="spec smoke has 2: intel-0, intel-managed-0"):
        choose_agent_nodes(SMOKE, NODES, 3)


@pytest.mark.parametrize(("setting", "agents"), [(1, 0), (2, 1), (3, 2)])
def test_the_first_kubelet_node_is_the_infrastructure_node(setting: int, agents: int) -> None:
    assert agent_node_count(setting) == agents


def test_more_than_three_kubelet_nodes_is_refused() -> None:
    with pytest.raises(KubeletFailure, match="1 to 3"):
        agent_node_count(4)


def test_a_real_node_keeps_the_spec_but_leaves_kwok_out() -> None:
    managed = next(n for n in NODES if n["metadata"]["name"] == "intel-managed-0")
    real = real_node_object(managed)
    assert KWOK_NODE_ANNOTATION not in real["metadata"]["annotations"]
    assert [t["key"] for t in real["spec"]["taints"]] == ["dedicated"]  # the spec's own taint stays
    assert real["metadata"]["labels"][AGENT_NODE_LABEL] == "true"
    assert real["metadata"]["labels"]["joulie.io/managed"] == "true"
    assert "status" not in real
    # The spec's object itself is left as it was (apply_nodes still renders it for KWOK elsewhere).
    assert any(t["key"] == KWOK_TAINT_KEY for t in managed["spec"]["taints"])


def test_each_agent_node_has_its_own_address_ports_cgroup_bridge_and_directory() -> None:
    nodes = [INFRA, *(agent_node_settings(INFRA, i, n, 20000 + i, 21000 + i)
                      for i, n in enumerate(["intel-0", "intel-managed-0"], start=1))]
    for field in ("ip", "cgroup_root", "bridge", "pod_subnet", "kubelet_port", "healthz_port", "name"):
        values = [getattr(n, field) for n in nodes]
        assert len(set(values)) == 3, (field, values)
    assert all(len(n.bridge) <= 15 for n in nodes)
    paths = [NodePaths.under(Path("/state/kl"), i) for i in range(3)]
    assert [p.root.name for p in paths] == ["kubelet", "kubelet-1", "kubelet-2"]
    assert len({p.containerd_socket for p in paths}) == 3
    agent = nodes[1]
    argv = kubelet_argv("/bin/kubelet", paths[1], agent)
    assert "--hostname-override=intel-0" in argv and f"--node-ip={agent.ip}" in argv
    assert f"--node-labels={AGENT_NODE_LABEL}=true" in argv  # not joulie.io/infra: no controller manager here
    cfg = kubelet_config(paths[1], agent, Path("/ca.crt"))
    assert cfg["cgroupRoot"] == "/joulie-kl-1" and cfg["address"] == agent.ip
    assert cfg["containerRuntimeEndpoint"] == "unix:///state/kl/kubelet-1/containerd/containerd.sock"
    net = cni_conflist(paths[1], agent)
    assert net["plugins"][0]["ipam"]["ranges"] == [[{"subnet": "10.88.1.0/24"}]]
    assert net["plugins"][0]["bridge"] == agent.bridge != INFRA.bridge


def test_the_first_node_keeps_its_names_and_addresses() -> None:
    # What a one-node cluster had before agent nodes existed: an upgrade finds the same paths and names.
    assert (INFRA.cgroup_root, INFRA.bridge, INFRA.pod_subnet) == ("/joulie-kl", "jl-kl", "10.88.0.0/24")
    assert NodePaths.under(Path("/s")).root == Path("/s/kubelet")


def test_cluster_env_names_the_agent_nodes_in_index_order() -> None:
    env = {CLUSTER_KEY: "intel-0,intel-managed-0"}
    assert agent_nodes_of(env) == ["intel-0", "intel-managed-0"]
    assert agent_node_indexes(env) == [1, 2]
    assert agent_nodes_of({}) == [] and agent_node_indexes({}) == []


def test_daemonset_values_run_the_production_mode_on_the_agent_nodes_only() -> None:
    v = daemonset_values({"repository": "joulie.local/joulie-agent", "tag": "dev-1", "pullPolicy": "Never"},
                         {"KUBERNETES_SERVICE_HOST": "127.0.0.1"}, Path("/state/kl/hwemu"), 24000)
    assert v["mode"] == "daemonset" and v["metricsPort"] == 24000
    ds = v["daemonset"]
    assert ds["nodeSelector"] == {AGENT_NODE_LABEL: "true"}  # no DaemonSet Pod on the fake Nodes
    assert ds["hostNetwork"] is True and ds["metricsOnHostIP"] is True and ds["privileged"] is False
    assert (ds["hostSys"], ds["hostSysSubPathExpr"]) == ("/state/kl/hwemu", "$(NODE_NAME)/sys")
    assert v["env"]["ROOT"] == "/emu-node" and v["env"]["KUBERNETES_SERVICE_HOST"] == "127.0.0.1"
    assert v["extraVolumeMounts"][0]["subPathExpr"] == "$(NODE_NAME)" and v["extraVolumeMounts"][0]["readOnly"]
