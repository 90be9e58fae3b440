"""The chart on the kubelet node as data: the values this runtime sets over the chart's (the imported
images, every component on the node's network, the emulated agents as Pods with the process
runtime's settings), the fakesmi wrapper the agent Pods run, and how a chart Pod maps back to the
process runtime's name of its component (``kubectl``-like lines, containerd task PIDs). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Environment of the process runtime's commands that stays on the host: the host's paths and
# interpreter settings, and what the chart sets itself per Pod (kubeconfig, node, tree, metrics
# address, the host's GPU tool wrappers).
HOST_ONLY_ENV = frozenset({"PATH", "HOME", "PEX_ROOT", "JOULIE_CACHE", "SSL_CERT_FILE", "KUBECONFIG", "METRICS_ADDR",
                           "GPU_TOOL_PATH", "AGENT_MODE", "NODE_NAME", "ROOT", "LEADER_ELECT", "POD_NAMESPACE",
                           "POD_NAME", "HWEMU_HOST_ROOT", "HWEMU_SYS_ROOT", "HWEMU_STATE_ROOT"})
# Where each emulated agent's fakesmi finds the files its GPU tools require (the process runtime's
# agents/<node>/host): under the simulator's root, the one host directory the agent Pods mount.
TOOL_HOST_DIR = ".tool-host"


def fakesmi_wrapper(pex: Path) -> str:
    """What the agent Pods find at /emu/lib/fakesmi, where the trees' ``bin/<tool>`` links point: a
    shell script passing the name it was called by. The fakesmi PEX itself cannot stand there: a PEX
    re-executes itself, so a link named nvidia-smi reaches it as ``bin.pex`` and it answers with its
    usage (exit 2). `pex` is a path the Pods see (under the simulator's root, their hostPath)."""
    return ("#!/bin/sh\n# Written by the simcluster kubelet runtime: fakesmi for the GPU tools' links.\n"
            'tool=$(basename "$0")\n'
            f'[ "$tool" = fakesmi ] && exec /usr/bin/env python3.11 \'{pex}\' "$@"\n'
            f'exec /usr/bin/env python3.11 \'{pex}\' "$tool" "$@"\n')


def pod_env(env: Mapping[str, str]) -> dict[str, str]:
    """A process-runtime command's environment as a Pod's: without what stays on the host."""
    return {k: v for k, v in env.items() if k not in HOST_ONLY_ENV}


@dataclass(frozen=True)
class AgentPod:
    """One emulated agent as a Pod on the node's network: its Node and its own metrics port."""

    node: str
    metrics_port: int


@dataclass(frozen=True)
class PodPlan:
    """What the chart installs on the kubelet node, from the process runtime's plan of the same deploy:
    the same settings (each component's environment), the simulator's trees and fakesmi on the host."""

    hwemu_root: Path
    files_view: bool
    """True: plain trees (SIMCLUSTER_HWEMU=files) at <hwemu_root>/<node>; False: the FUSE view under fuse/."""
    fakesmi: Path
    agents: Sequence[AgentPod] = ()
    agent_env: Mapping[str, str] | None = None
    controller_env: Mapping[str, str] | None = None
    controller_metrics_port: int = 8081
    extender_env: Mapping[str, str] | None = None

    def tool_host(self, node: str) -> Path:
        return self.hwemu_root / TOOL_HOST_DIR / node

    @property
    def fakesmi_pex(self) -> Path:
        """The fakesmi PEX where the Pods see it (under their hostPath)."""
        return self.hwemu_root / TOOL_HOST_DIR / "fakesmi.pex"

    @property
    def fakesmi_wrapper(self) -> Path:
        """:func:`fakesmi_wrapper` on the host: the chart's ``agent.emulated.fakesmiHostPath``."""
        return self.hwemu_root / TOOL_HOST_DIR / "fakesmi"


def chart_values(env: Mapping[str, str], node: str, pods: PodPlan | None = None) -> dict[str, Any]:
    """Values over the chart's (and the caller's) for this runtime, from cluster.env: the images
    imported into containerd (never pulled), every component on the node's network (kube-apiserver
    and Prometheus listen on 127.0.0.1 only; KUBERNETES_SERVICE_HOST/PORT: the kubernetes Service's
    endpoint is the apiserver's loopback address, which no Pod network reaches), the extender at the
    port kube-scheduler calls. With `pods`, the emulated agents (one per agent Node, each with its own
    metrics port, reading its tree through a hostPath of the simulator's root) and every component's
    settings as the process runtime gives them; without, no agent."""
    api = {"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": env["API_PORT"]}

    def image(component: str) -> dict[str, str]:
        repository, _, tag = env[f"IMAGE_{component.upper().replace('-', '_')}"].rpartition(":")
        return {"repository": repository, "tag": tag, "pullPolicy": "Never"}

    on_node = {"kubernetes.io/hostname": node}
    cm_port = pods.controller_metrics_port if pods else 8081
    values: dict[str, Any] = {
        "agent": {"mode": "none"},
        "controllerManager": {
            "image": image("controller-manager"),
            "hostNetwork": True,
            "nodeSelector": on_node,
            "metricsPort": cm_port,
            # On the host's network: metrics on the node's address only (the Service's endpoint), not 0.0.0.0.
            "env": {**((pods.controller_env or {}) if pods else {}), **api,
                    "NODE_POWER_PROMETHEUS_ADDRESS": env["PROMETHEUS_URL"], "METRICS_ADDR": f"{env['NODE_IP']}:{cm_port}"},
        },
        "schedulerExtender": {
            "enabled": True, "hostNetwork": True, "port": int(env["EXTENDER_PORT"]), "nodeName": node,
            "image": image("extender"), "env": {**((pods.extender_env or {}) if pods else {}), **api},
        },
    }
    if pods is not None and pods.agents:
        values["agent"] = {
            "mode": "emulated",
            "image": image("agent"),
            "env": {**(pods.agent_env or {}), **api},
            "emulated": {
                "hostNetwork": True,
                "hostRoot": str(pods.hwemu_root),
                "view": "" if pods.files_view else "fuse",
                "fakesmiHostPath": str(pods.fakesmi_wrapper),
                "nodeSelector": on_node,
                "nodes": [{"name": a.node, "metricsPort": a.metrics_port,
                           "env": {"HWEMU_HOST_ROOT": str(pods.tool_host(a.node))}} for a in pods.agents],
            },
        }
    return values


# The chart's app.kubernetes.io/component of each Pod, as the process runtime names the process.
POD_COMPONENTS: Mapping[str, str] = {"controller-manager": "controller-manager", "scheduler-extender": "extender",
                                     "agent": "agent"}


def pod_process_name(pod: Mapping[str, Any]) -> str | None:
    """The process runtime's name of the component a chart Pod runs (``agent-<node>`` for an
    emulated agent or a DaemonSet's agent scheduled on <node>), None for a Pod that is none of them."""
    meta = pod.get("metadata") or {}
    component = POD_COMPONENTS.get((meta.get("labels") or {}).get("app.kubernetes.io/component", ""))
    if component == "agent":
        node = (meta.get("annotations") or {}).get("sim.joulie.io/node")
        if not node and any(o.get("kind") == "DaemonSet" for o in meta.get("ownerReferences") or []):
            node = (pod.get("spec") or {}).get("nodeName")  # the DaemonSet's agent: its node's (agent nodes)
        return f"agent-{node}" if node else None
    return component


def container_id(pod: Mapping[str, Any]) -> str | None:
    """The running container's containerd id (its task id), None until it runs."""
    for c in (pod.get("status") or {}).get("containerStatuses") or []:
        cid = str(c.get("containerID") or "")
        if "running" in (c.get("state") or {}) and cid.startswith("containerd://"):
            return cid.removeprefix("containerd://")
    return None


def task_pids(ctr_tasks_ls: str) -> dict[str, int]:
    """`ctr tasks ls` (TASK PID STATUS) as task id -> PID of the running ones."""
    out = {}
    for line in ctr_tasks_ls.splitlines()[1:]:
        parts = line.split()
        if len(parts) >= 3 and parts[1].isdigit() and parts[2] == "RUNNING":
            out[parts[0]] = int(parts[1])
    return out


def pod_line(pod: Mapping[str, Any]) -> str:
    """One Pod as ``kubectl get pods -o wide`` shows it: name, ready/containers, phase, restarts, IP, node."""
    status, spec = pod.get("status") or {}, pod.get("spec") or {}
    statuses = status.get("containerStatuses") or []
    ready = sum(1 for c in statuses if c.get("ready"))
    restarts = sum(int(c.get("restartCount", 0)) for c in statuses)
    containers = len(spec.get("containers") or [])
    name = (pod.get("metadata") or {}).get("name", "?")
    return (f"{name:<48} {ready}/{containers}  {status.get('phase', '?'):<9} restarts {restarts}  "
            f"ip {status.get('podIP', '-')}  node {spec.get('nodeName', '-')}")


def with_live_pods(env: Mapping[str, str], live: Mapping[str, str]) -> dict[str, str]:
    """deploy.env as the Pods run now: `live` (:func:`record_pods`' entries, read afresh) replaces
    the PID_/START_/POD_ of each component it holds. A Pod its Deployment recreated (``helm
    upgrade``, a rollback) has a new container and PID; read against the deploy's record it would
    look dead. A component without a running container now keeps its old record, which reads as
    not running, as it is."""
    out = dict(env)
    for key, value in live.items():
        if key.startswith(("PID_", "START_", "POD_")):
            out[key] = value
    return out


def pod_ready(pod: Mapping[str, Any]) -> bool:
    """Running, not being deleted, and every container ready (what ``status`` counts as up)."""
    status = pod.get("status") or {}
    statuses = status.get("containerStatuses") or []
    return (status.get("phase") == "Running" and not (pod.get("metadata") or {}).get("deletionTimestamp")
            and bool(statuses) and all(c.get("ready") for c in statuses))


def ports_in_values(values: Mapping[str, Any] | None) -> dict[str, int]:
    """The host ports a :func:`chart_values` result gave, by the process runtime's component name
    (``agent-<node>``, ``controller-manager``); {} for none (no earlier deploy)."""
    if not values:
        return {}
    out: dict[str, int] = {}
    agent = values.get("agent") or {}
    for entry in (agent.get("emulated") or {}).get("nodes") or [] if agent.get("mode") == "emulated" else []:
        if isinstance(entry, Mapping) and entry.get("name") and entry.get("metricsPort"):
            out[f"agent-{entry['name']}"] = int(entry["metricsPort"])
    cm = values.get("controllerManager") or {}
    if cm.get("metricsPort"):
        out["controller-manager"] = int(cm["metricsPort"])
    return out
