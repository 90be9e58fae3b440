"""``down`` on the kubelet runtime: the Pods' logs kept (``podlogs``), every Pod sandbox deleted, the kubelet and containerd stopped,
what they left under the state directory unmounted, the node's cgroups, address, bridge and iptables
chains removed; then the process runtime's ``down`` stops the control plane."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

from joulie_simcluster.runtimes import process
from joulie_simcluster.runtimes.kubelet.agentnodes import agent_node_indexes
from joulie_simcluster.runtimes.kubelet.chart import stop_host_processes
from joulie_simcluster.runtimes.kubelet.containerd import remove_pods
from joulie_simcluster.runtimes.kubelet.host import (
    kube_proxy_tool,
    mounts_under,
    read_host_file,
    remove_node_ip,
    unshare_mount,
)
from joulie_simcluster.runtimes.kubelet.host_checks import cgroup_mounts
from joulie_simcluster.runtimes.kubelet.node import NodePaths
from joulie_simcluster.runtimes.kubelet.node_config import KUBELET_IPTABLES_CLEANUP
from joulie_simcluster.runtimes.kubelet.node_processes import NODE_PROCESSES
from joulie_simcluster.runtimes.kubelet.podlogs import save_pod_logs
from joulie_simcluster.runtimes.pids import stop_pid
from joulie_simcluster.state import StateDir, pid_key


def clean_node(paths: NodePaths, cgroup_root: str, progress: Callable[[str], None]) -> None:
    """Unmounts what the kubelet and containerd left under the node directory (deepest first) and
    removes the node's cgroups (deepest first)."""
    # containerd 1.6 puts its shims' sockets in /run/containerd/s whatever its state dir: the
    # directories go when empty (another containerd's would not be).
    for d in (Path("/run/containerd/s"), Path("/run/containerd")):
        with contextlib.suppress(OSError):
            d.rmdir()
    mounts = sorted(mounts_under(paths.root), key=len, reverse=True)
    for m in mounts:
        subprocess.run(["umount", "-l", m], capture_output=True)
    if mounts:
        progress(f"unmounted {len(mounts)} mounts under {paths.root}")
    for mount in cgroup_mounts(read_host_file("/proc/mounts")):
        top = Path(mount) / cgroup_root.lstrip("/")
        if not cgroup_root.strip("/") or not top.is_dir():
            continue
        # A cgroup directory goes with rmdir once it has no children and no processes.
        for d in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
            with contextlib.suppress(OSError):
                d.rmdir()
        try:
            top.rmdir()
        except OSError as e:
            progress(f"could not remove cgroup {top}: {e}")


def _down_agent_nodes(state: StateDir, env: Mapping[str, str], progress: Callable[[str], None]) -> int:
    """Each agent node as the first: its kubelet, its containers, its containerd, then its mounts,
    cgroups, address and bridge. Returns how many processes it stopped."""
    stopped = 0
    for i in agent_node_indexes(env):
        paths = NodePaths.under(state.root, i)
        pid = env.get(pid_key(f"kubelet-{i}"), "")
        if pid.isdigit() and stop_pid(int(pid), "kubelet"):
            stopped += 1
            progress(f"stopped kubelet-{i} (pid {pid})")
        remove_pods(paths, progress)
        pid = env.get(pid_key(f"containerd-{i}"), "")
        if pid.isdigit() and stop_pid(int(pid), NODE_PROCESSES["containerd"]):
            stopped += 1
            progress(f"stopped containerd-{i} (pid {pid})")
        clean_node(paths, env.get(f"NODE_CGROUP_ROOT_{i}", ""), progress)
        if env.get(f"NODE_IP_{i}"):
            remove_node_ip(env[f"NODE_IP_{i}"])
        if env.get(f"CNI_BRIDGE_{i}"):
            subprocess.run(["ip", "link", "del", env[f"CNI_BRIDGE_{i}"]], capture_output=True)
    return stopped


def down_kubelet(state: StateDir, *, keep: bool, progress: Callable[[str], None]) -> int:
    """Removes the node's containers, stops the kubelet, containerd and kube-controller-manager, cleans
    mounts and cgroups, then the process runtime's ``down`` stops the rest. Returns how many ran."""
    env: Mapping[str, str] = state.read_cluster_env() or {}
    paths = NodePaths.under(state.root)
    stopped = 0
    save_pod_logs(state, progress)  # first: the kubelet serves them, and the node's directory goes below
    kubelet_pid = env.get(pid_key("kubelet"), "")
    if kubelet_pid.isdigit() and stop_pid(int(kubelet_pid), "kubelet"):
        stopped += 1
        progress(f"stopped kubelet (pid {kubelet_pid})")
    remove_pods(paths, progress)
    stopped += _down_agent_nodes(state, env, progress)
    stop_host_processes(state, progress)
    unshare_mount(state.root / "hwemu")
    for proc in ("kube-proxy", "containerd", "node-lifecycle", "kube-controller-manager"):
        pid = env.get(pid_key(proc), "")
        if pid.isdigit() and stop_pid(int(pid), NODE_PROCESSES[proc]):
            stopped += 1
            progress(f"stopped {proc} (pid {pid})")
    clean_node(paths, env.get("NODE_CGROUP_ROOT", ""), progress)
    if env.get("NODE_IP"):
        remove_node_ip(env["NODE_IP"])
    if env.get("CNI_BRIDGE"):
        subprocess.run(["ip", "link", "del", env["CNI_BRIDGE"]], capture_output=True)  # absent: nothing to do
    proxy = kube_proxy_tool()
    if env.get(pid_key("kube-proxy")) and proxy is not None:
        r = subprocess.run([str(proxy), "--cleanup", "--proxy-mode=iptables"], capture_output=True, text=True, timeout=60)
        progress(f"kube-proxy --cleanup: exit {r.returncode}")
    if env.get(pid_key("kubelet")):
        for argv in KUBELET_IPTABLES_CLEANUP:  # a rule or chain already gone fails harmlessly
            subprocess.run(list(argv), capture_output=True, timeout=30)
        progress("removed the kubelet's iptables chains (KUBE-FIREWALL, KUBE-KUBELET-CANARY)")
    return stopped + process.down(state, keep=keep, progress=None)
