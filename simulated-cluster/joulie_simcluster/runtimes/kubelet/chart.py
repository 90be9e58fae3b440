"""The chart on the kubelet node: ``helm upgrade --install`` of charts/joulie with this runtime's
values, the release as ``helm list`` and ``kubectl get pods -o wide`` show it, and deploy.env's
record of the chart's Pods and of the deploy's host processes (stopped by PID, the FUSE view a
simulator may leave detached)."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from joulie_localcluster.tools import ToolMissingError, load_tools
from joulie_simcluster.runtimes.kube import kube_list
from joulie_simcluster.runtimes.kubelet.agentnodes import agent_node_indexes
from joulie_simcluster.runtimes.kubelet.chart_values import (
    container_id,
    pod_line,
    pod_process_name,
    pod_ready,
    task_pids,
)
from joulie_simcluster.runtimes.kubelet.containerd import ctr
from joulie_simcluster.runtimes.kubelet.host import read_host_file
from joulie_simcluster.runtimes.kubelet.node import NAMESPACE, RELEASE, KubeletFailure, NodePaths
from joulie_simcluster.runtimes.pids import start_ticks, stop_pid
from joulie_simcluster.state import StateDir

CHART_DIR = Path("charts/joulie")
POD_PREFIX = "POD_"
"""deploy.env: ``POD_<name>=<namespace>/<pod>`` for a component that runs as a Pod (its PID_<name> is
the container's first process on this host)."""


def _helm(state: StateDir) -> tuple[str, dict[str, str]]:
    try:
        helm = str(load_tools().path("helm"))
    except ToolMissingError as e:
        raise KubeletFailure(str(e)) from e
    home = state.root / "helm"
    return helm, {**os.environ, "KUBECONFIG": str(state.kubeconfig), "HELM_CONFIG_HOME": str(home),
                  "HELM_CACHE_HOME": str(home), "HELM_DATA_HOME": str(home)}


def chart_values_file(state: StateDir) -> Path:
    return NodePaths.under(state.root).root / "chart-values.yaml"


def helm_install(state: StateDir, values_files: list[Path], progress: Callable[[str], None],
                 timeout_s: float = 300.0) -> float:
    """`helm upgrade --install` of charts/joulie onto the kubelet node with `values_files` in helm's
    order (this runtime's chart-values.yaml among them), waiting for every Pod. Every hostNetwork
    Deployment is Recreate (the chart's rule), so a second install rolls on one node. Returns seconds."""
    helm, helm_env = _helm(state)
    argv = [helm, "upgrade", "--install", RELEASE, str(CHART_DIR), "-n", NAMESPACE, "--create-namespace",
            *[a for f in values_files for a in ("-f", str(f))], "--wait", "--timeout", f"{int(timeout_s)}s"]
    progress(f"helm upgrade --install {RELEASE} {CHART_DIR} -n {NAMESPACE} (values {', '.join(map(str, values_files))})")
    t0 = time.monotonic()
    r = subprocess.run(argv, capture_output=True, text=True, env=helm_env, timeout=timeout_s + 60)
    if r.returncode != 0:
        pods = "\n".join(pod_line(p) for p in kube_list(state.kubeconfig, f"/api/v1/namespaces/{NAMESPACE}/pods"))
        raise KubeletFailure(f"helm upgrade --install failed (exit {r.returncode}) after {time.monotonic() - t0:.0f}s: "
                             f"{(r.stdout + r.stderr).strip()[-1500:]}\nPods:\n{pods}")
    took = time.monotonic() - t0
    progress(f"helm upgrade --install done in {took:.1f}s")
    return took


def show_release(state: StateDir, out: Any) -> None:
    """`helm list -A` and the release's Pods as `kubectl get pods -o wide` shows them."""
    helm, helm_env = _helm(state)
    print(subprocess.run([helm, "list", "-A"], capture_output=True, text=True, env=helm_env).stdout.rstrip(), file=out)
    for pod in kube_list(state.kubeconfig, f"/api/v1/namespaces/{NAMESPACE}/pods"):
        print(pod_line(pod), file=out)


def record_pods(state: StateDir, urls: Mapping[str, str]) -> dict[str, str]:
    """deploy.env entries of the chart's Pods that run: per component (named as the process runtime
    names its process) its container's first process here (PID_, START_), COMPONENT_, URL_ from
    `urls`, POD_. The smoke's liveness, PID and memory checks then see the containers' processes."""
    pids: dict[str, int] = {}
    # Every node's containerd: the agent nodes' (SIMCLUSTER_KUBELET_NODES > 1) run the DaemonSet's Pods.
    for i in [0, *agent_node_indexes(state.read_cluster_env() or {})]:
        r = ctr(NodePaths.under(state.root, i), "tasks", "ls", timeout=30)
        if r.returncode != 0:
            raise KubeletFailure(f"ctr tasks ls failed: {(r.stdout + r.stderr).strip()[-400:]}")
        pids.update(task_pids(r.stdout))
    out: dict[str, str] = {}
    for pod in kube_list(state.kubeconfig, f"/api/v1/namespaces/{NAMESPACE}/pods"):
        name, cid = pod_process_name(pod), container_id(pod)
        if name is None or cid is None or cid not in pids or (pod.get("metadata") or {}).get("deletionTimestamp"):
            continue
        pid = pids[cid]
        out.update({f"PID_{name}": str(pid), f"START_{name}": start_ticks(pid),
                    f"COMPONENT_{name}": "agent" if name.startswith("agent-") else name,
                    f"URL_{name}": urls.get(name, ""), f"{POD_PREFIX}{name}": f"{NAMESPACE}/{pod['metadata']['name']}"})
    return out


def release_pods(state: StateDir) -> list[dict[str, Any]]:
    """The release's Pods as the API lists them now."""
    return kube_list(state.kubeconfig, f"/api/v1/namespaces/{NAMESPACE}/pods")


def held_by_release(state: StateDir) -> set[str]:
    """The components (named as the process runtime names its process) whose Pod of the release
    exists and is not going: they hold their host ports now."""
    return {name for pod in release_pods(state)
            if (name := pod_process_name(pod)) and not (pod.get("metadata") or {}).get("deletionTimestamp")}


def print_pods(state: StateDir, out: Any) -> bool:
    """``status``'s Pod lines (``kubectl get pods -o wide``: ready, phase, restarts, IP, node) of the
    release. True when every Pod is Running and ready; False too when none could be listed."""
    try:
        pods = release_pods(state)
    except Exception as e:  # - status reports, never raises
        print(f"pods ({NAMESPACE}): cannot list: {e}", file=out)
        return False
    print(f"pods ({NAMESPACE}): {len(pods)}", file=out)
    for pod in pods:
        print("  " + pod_line(pod), file=out)
    return all(pod_ready(p) for p in pods)


def stop_host_processes(state: StateDir, progress: Callable[[str], None]) -> None:
    """The deploy's processes on the host (the simulator, the workload runner): deploy.env's PIDs that
    are no Pod's; then the FUSE view a simulator may leave. The Pods went with their containers."""
    env = state.read_deploy_env() or {}
    pods = {k.removeprefix(POD_PREFIX) for k in env if k.startswith(POD_PREFIX)}
    for key, value in reversed(list(env.items())):
        name = key.removeprefix("PID_")
        if (key.startswith("PID_") and name not in pods and value.isdigit()
                and start_ticks(int(value)) == env.get(f"START_{name}") and stop_pid(int(value), None, grace_s=8)):
            progress(f"stopped {name} (pid {value})")
    mountpoint = state.root / "hwemu" / "fuse"
    for _ in range(10):
        if f" {mountpoint} " not in read_host_file("/proc/self/mounts"):
            break
        subprocess.run(["fusermount3", "-u", "-z", str(mountpoint)], capture_output=True)
    state.deploy_env.unlink(missing_ok=True)
