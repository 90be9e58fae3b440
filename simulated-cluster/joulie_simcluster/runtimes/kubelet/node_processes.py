"""The processes the kubelet node adds to the process runtime's control plane: the node lifecycle
controller, kube-proxy, and their names as cluster.env records them; and the memory a process
group holds (the node's summary line)."""

from __future__ import annotations

import os
from pathlib import Path

from joulie_common.procstatus import rss_kib
from joulie_localcluster.controlplane import ControlPlane
from joulie_localcluster.procs import ManagedProcess, free_port
from joulie_localcluster.tools import Tools
from joulie_simcluster.runtimes.kubelet.node import NodeSettings
from joulie_simcluster.runtimes.kubelet.node_config import kube_proxy_argv
from joulie_simcluster.state import StateDir

# Processes of this runtime beyond the process runtime's PROCESSES, in start order.
# (argv0 of node-lifecycle is kube-controller-manager's: it is stopped as that tool.)
NODE_PROCESSES = {"kube-controller-manager": "kube-controller-manager", "node-lifecycle": "kube-controller-manager",
                  "containerd": "containerd", "kubelet": "kubelet", "kube-proxy": "kube-proxy"}


def start_node_lifecycle(tools: Tools, cp: ControlPlane, state: StateDir) -> ManagedProcess:
    """A second kube-controller-manager running only the node lifecycle controller. The control
    plane's own runs without it (the process runtime's fake Nodes need none), but the
    TaintNodesByCondition admission, on with it, gives every new Node the not-ready NoSchedule taint,
    and only this controller lifts it once the Node is Ready."""
    proc = cp.group.add(ManagedProcess("node-lifecycle", [
        str(tools.path("kube-controller-manager")),
        f"--kubeconfig={cp.kubeconfig}",
        f"--authentication-kubeconfig={cp.kubeconfig}",
        f"--authorization-kubeconfig={cp.kubeconfig}",
        "--bind-address=127.0.0.1",
        f"--secure-port={free_port()}",
        "--leader-elect=false",
        "--controllers=nodelifecycle",
        "--v=1",
    ], state.log("node-lifecycle")).start())
    proc.wait_until(lambda: "Controller detected that zone is now in new state" in proc.log_tail(200) or
                    "Starting node controller" in proc.log_tail(200), 60, "running the node lifecycle controller")
    return proc


def start_kube_proxy(binary: Path, cp: ControlPlane, node: NodeSettings, state: StateDir) -> ManagedProcess:
    """kube-proxy in iptables mode for the node: ClusterIPs of the chart's Services reach the Pods
    (its rules are removed again at down with ``kube-proxy --cleanup``)."""
    proc = cp.group.add(ManagedProcess("kube-proxy", [str(binary), *kube_proxy_argv(cp.kubeconfig, node, free_port(), free_port())],
                                       state.log("kube-proxy")).start())
    proc.wait_until(lambda: "Starting endpoint slice config controller" in proc.log_tail(300)
                    or "Caches are synced" in proc.log_tail(300), 60, "syncing its rules")
    return proc


def group_rss_kib(pid: int) -> int:
    """RSS of a process and of every process in its process group (containerd's shims are not in it)."""
    total = 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.getpgid(int(entry.name)) == pid:
                    total += rss_kib(int(entry.name))
            except OSError:
                continue
    return total
