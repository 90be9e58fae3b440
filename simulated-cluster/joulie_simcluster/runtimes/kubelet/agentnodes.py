"""The agent nodes of ``SIMCLUSTER_KUBELET_NODES`` > 1 as data (simulated-cluster/KUBELET.md "The agent
DaemonSet"): which spec Nodes real kubelets take over, their Node objects without KWOK, each one's
settings beside the infrastructure node's, and the chart values that run the agent as the production
DaemonSet on them. Pure.

Each agent node is a kubelet with its own containerd, address, ports, cgroup parent and certificate,
registered under a spec Node's name: the DaemonSet's Pod on it gets that name as NODE_NAME (the
downward API) and reads that Node's emulated tree where a real agent reads the host's /sys.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from joulie_api import names
from joulie_hwprofiles.schema import builtin_profile
from joulie_simcluster.nodes import KWOK_NODE_ANNOTATION, KWOK_TAINT_KEY
from joulie_simcluster.runtimes.kubelet.node import MAX_KUBELET_NODES, KubeletFailure, NodeSettings
from joulie_simcluster.smoke.checks import profile_can_cap_cpu
from joulie_simcluster.spec import ClusterSpec

AGENT_NODE_LABEL = "sim.joulie.io/kubelet-node"
"""On the agent nodes (the kubelet's --node-labels and the Node applied before it registers): the
DaemonSet's nodeSelector here, so the fake Nodes (KWOK would "run" any Pod) get no DaemonSet Pod."""

NODE_ROOT_MOUNT = "/emu-node"
"""Where the agent Pod sees its Node's whole emulated tree (ROOT: /proc/cpuinfo); /sys is /host-sys."""


def choose_agent_nodes(spec: ClusterSpec, nodes: Sequence[Mapping[str, Any]], count: int) -> list[str]:
    """The first `count` spec Nodes, in spec order, an agent node can take over: managed, amd64 (the
    images), no GPU (the GPU tools want a privileged Pod, and privileged Pods cannot start on this
    project's machines) and a RAPL package cap (powercap, one of the chart's default writableSysPaths),
    so the cap checks check something. Not HSMP: its cap is hwmon's power1_cap under
    devices/platform/amd_hsmp, which the DaemonSet's default writable paths leave read-only. A
    KubeletFailure when the spec has fewer."""
    out: list[str] = []
    for node in nodes:
        meta = node.get("metadata") or {}
        labels = meta.get("labels") or {}
        if labels.get("joulie.io/managed") != "true" or labels.get("kubernetes.io/arch") != "amd64":
            continue
        profile = builtin_profile(spec.pool(labels[names.LABEL_SIM_POOL]).profile)
        if profile.gpus is None and profile.hsmp is None and profile_can_cap_cpu(profile):
            out.append(str(meta["name"]))
        if len(out) == count:
            return out
    raise KubeletFailure(
        f"SIMCLUSTER_KUBELET_NODES={count + 1} wants {count} spec Nodes for agent nodes (managed, amd64, no GPU, a "
        f"writable RAPL cap); spec {spec.name} has {len(out)}{': ' + ', '.join(out) if out else ''}")


CLUSTER_KEY = "KUBELET_AGENT_NODES"
"""cluster.env: the agent nodes' names, comma-separated, in index order (1, 2)."""


def agent_nodes_of(cluster_env: Mapping[str, str]) -> list[str]:
    """The agent nodes cluster.env records, in index order; [] with one kubelet node."""
    return [n for n in cluster_env.get(CLUSTER_KEY, "").split(",") if n]


def agent_node_indexes(cluster_env: Mapping[str, str]) -> list[int]:
    """The agent nodes' indexes (1, 2, …): their directories, processes and addresses in cluster.env."""
    return list(range(1, len(agent_nodes_of(cluster_env)) + 1))


def agent_node_count(kubelet_nodes: int) -> int:
    """The agent nodes of SIMCLUSTER_KUBELET_NODES (the first node is the infrastructure node)."""
    if not 1 <= kubelet_nodes <= MAX_KUBELET_NODES:
        raise KubeletFailure(f"SIMCLUSTER_KUBELET_NODES={kubelet_nodes}: 1 to {MAX_KUBELET_NODES}")
    return kubelet_nodes - 1


def real_node_object(node: Mapping[str, Any]) -> dict[str, Any]:
    """A spec Node as its kubelet will run it: the spec's labels, annotations and taints, without KWOK's
    annotation and taint (KWOK would take it over) and without status (the kubelet reports it),
    plus :data:`AGENT_NODE_LABEL`."""
    meta = dict(node["metadata"])
    meta["labels"] = {**(meta.get("labels") or {}), AGENT_NODE_LABEL: "true"}
    meta["annotations"] = {k: v for k, v in (meta.get("annotations") or {}).items() if k != KWOK_NODE_ANNOTATION}
    spec = dict(node.get("spec") or {})
    spec["taints"] = [t for t in spec.get("taints") or [] if t.get("key") != KWOK_TAINT_KEY]
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": spec}


def agent_node_settings(infra: NodeSettings, index: int, name: str, kubelet_port: int, healthz_port: int,
                        ) -> NodeSettings:
    """Agent node `index` (1..): the infrastructure node's binaries and images, its own name, ports,
    address, cgroup parent, bridge and labels (not joulie.io/infra: the controller manager and the
    extender stay on the first node)."""
    return dataclasses.replace(infra, name=name, index=index, kubelet_port=kubelet_port, healthz_port=healthz_port,
                               labels={AGENT_NODE_LABEL: "true"})


def daemonset_values(image: Mapping[str, str], agent_env: Mapping[str, str], hwemu_root: Path,
                     metrics_port: int) -> dict[str, Any]:
    """The chart's ``agent`` values for the production DaemonSet on the agent nodes: the values a real
    cluster takes (hostNetwork, metrics on the node's address, unprivileged for a CPU-only node group,
    the kubelet's pod-resources off: no GPU here), plus what differs because several nodes share one
    host: the simulator's root as hostSys with each node's subdirectory (``$(NODE_NAME)/sys``), and the
    node's tree as ROOT (its /proc/cpuinfo) through agent.extraVolumes."""
    return {
        "mode": "daemonset",
        "image": dict(image),
        "metricsPort": metrics_port,
        "env": {**agent_env, "ROOT": NODE_ROOT_MOUNT},
        "extraVolumes": [{"name": "emu-node", "hostPath": {"path": str(hwemu_root), "type": "Directory"}}],
        "extraVolumeMounts": [{"name": "emu-node", "mountPath": NODE_ROOT_MOUNT, "readOnly": True,
                               "subPathExpr": "$(NODE_NAME)"}],
        "daemonset": {
            "hostNetwork": True,
            "metricsOnHostIP": True,
            "privileged": False,
            "hostSys": str(hwemu_root),
            "hostSysSubPathExpr": "$(NODE_NAME)/sys",
            "nodeSelector": {AGENT_NODE_LABEL: "true"},
            "podResources": {"enabled": False},
        },
    }
