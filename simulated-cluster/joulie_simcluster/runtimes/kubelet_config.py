"""The kubelet runtime's one real node as data: where its files live under the state directory, the
containerd configuration (rootful, its own root, state and socket, cgroupfs, the locally built
sandbox image), the CNI network list containerd needs to call the node's network ready, the
KubeletConfiguration (cgroup v1 allowed, nothing garbage-collects the images nobody can pull again)
and both command lines, and the host checks that name the missing piece (root, binaries, cgroup
controllers, capabilities, overlayfs) before anything starts. Pure: the caller reads the host files
and passes their text in; :mod:`joulie_simcluster.runtimes.kubelet` starts the processes.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from joulie_simcluster.errors import RuntimeFailure

# Under the state directory: everything of the node (containerd's root holds the image layers).
NODE_DIR = "kubelet"
# A unix socket path must fit in sun_path (108 bytes with the NUL).
MAX_SOCKET_PATH = 107

# cgroup v1 controllers the kubelet's cgroupfs manager and runc write to (hugetlb, net_cls and the
# others are optional: the kubelet tolerates their absence, containerd tolerates missing hugetlb).
REQUIRED_CGROUP_CONTROLLERS = ("cpu", "cpuacct", "cpuset", "memory", "pids", "devices", "freezer")

# Linux capability numbers (linux/capability.h) the node needs in the bounding set: mounts of
# rootfs, volumes and namespaces (SYS_ADMIN), the containers' users (SETUID/SETGID), chroot/pivot
# (SYS_CHROOT), device nodes (MKNOD), veth/bridge setup (NET_ADMIN), files owned by others (CHOWN,
# DAC_OVERRIDE, FOWNER), signalling containers (KILL).
REQUIRED_CAPABILITIES: Mapping[str, int] = {
    "CAP_CHOWN": 0, "CAP_DAC_OVERRIDE": 1, "CAP_FOWNER": 3, "CAP_KILL": 5, "CAP_SETGID": 6, "CAP_SETUID": 7,
    "CAP_NET_ADMIN": 12, "CAP_SYS_CHROOT": 18, "CAP_SYS_ADMIN": 21, "CAP_MKNOD": 27,
}
# Missing from the bounding set on some machines (why `docker run --privileged` fails there). Not
# needed: containerd's restrict_oom_score_adj keeps every container's oom_score_adj at or above its
# own, and runc sets no rlimit above the hard one.
CAP_SYS_RESOURCE = 24

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


def node_ip(cluster: str) -> str:
    """10.89.X.Y from the cluster's name, the same every time (Y in 1..254)."""
    h = hashlib.sha256(cluster.encode()).digest()
    return f"{NODE_IP_NET}.{h[0]}.{1 + h[1] % 254}"


class KubeletFailure(RuntimeFailure):
    """The kubelet runtime cannot go on; the message names the missing piece."""


@dataclass(frozen=True)
class NodePaths:
    """Every file and directory of the node, under ``<state>/kubelet``."""

    root: Path

    @classmethod
    def under(cls, state_root: Path) -> NodePaths:
        return cls(state_root / NODE_DIR)

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

    @property
    def cgroup_root(self) -> str:
        return self.cgroup_root_of(self.cluster)

    @property
    def ip(self) -> str:
        return node_ip(self.cluster)

    @staticmethod
    def cgroup_root_of(cluster: str) -> str:
        """The kubelet's cgroup parent: ours alone, so down removes exactly what this node made."""
        return f"/joulie-{cluster}"


# --- containerd -----------------------------------------------------------------------------------


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)  # a TOML basic string is a JSON string for what we write
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"no TOML form for {value!r}")


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def toml_text(data: Mapping[str, Any]) -> str:
    """Nested mappings of str/int/bool/lists as TOML: plain keys first, then one [table] per mapping."""
    lines: list[str] = []

    def emit(table: Mapping[str, Any], path: list[str]) -> None:
        plain = [(k, v) for k, v in table.items() if not isinstance(v, Mapping)]
        nested = [(k, v) for k, v in table.items() if isinstance(v, Mapping)]
        if path and (plain or not nested):
            lines.append("[" + ".".join(_toml_key(p) for p in path) + "]")
        for k, v in plain:
            lines.append(f"{_toml_key(k)} = {_toml_value(v)}")
        for k, v in nested:
            emit(v, [*path, k])

    emit(data, [])
    return "\n".join(lines) + "\n"


CRI = "io.containerd.grpc.v1.cri"
# Plugins that would touch the host outside our state directory or need what is not here.
DISABLED_PLUGINS = (
    "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
    "io.containerd.snapshotter.v1.devmapper", "io.containerd.internal.v1.opt", "io.containerd.tracing.processor.v1.otlp",
)


def containerd_config(paths: NodePaths, node: NodeSettings) -> dict[str, Any]:
    """containerd 1.6 (config version 2): its own root, state and sockets, the CRI plugin with runc on
    cgroupfs, the locally imported sandbox image, our CNI directories, no SELinux or AppArmor."""
    return {
        "version": 2,
        "root": str(paths.containerd_root),
        "state": str(paths.containerd_state),
        "disabled_plugins": list(DISABLED_PLUGINS),
        "grpc": {"address": str(paths.containerd_socket)},
        "ttrpc": {"address": str(paths.containerd_socket) + ".ttrpc"},
        "debug": {"address": "", "level": "info"},
        "metrics": {"address": ""},
        "plugins": {
            CRI: {
                "sandbox_image": node.sandbox_image,
                "stream_server_address": "127.0.0.1",
                "stream_server_port": "0",
                "enable_selinux": False,
                "disable_apparmor": True,
                # The bounding set may lack CAP_SYS_RESOURCE: never ask for an oom_score_adj below ours.
                "restrict_oom_score_adj": True,
                # Pod network namespaces under our state directory, not /var/run/netns.
                "netns_mounts_under_state_dir": True,
                "tolerate_missing_hugetlb_controller": True,
                "max_concurrent_downloads": 1,
                "containerd": {
                    "snapshotter": node.snapshotter,
                    "default_runtime_name": "runc",
                    "runtimes": {"runc": {
                        "runtime_type": "io.containerd.runc.v2",
                        # runc's state under ours too (its default is /run/containerd/runc).
                        "options": {"SystemdCgroup": False, "BinaryName": node.runc,
                                    "Root": str(paths.containerd_state / "runc")},
                    }},
                },
                "cni": {"bin_dir": node.cni_bin_dir, "conf_dir": str(paths.cni_conf_dir), "max_conf_num": 1},
            },
        },
    }


def containerd_argv(containerd: str, paths: NodePaths) -> list[str]:
    return [containerd, "--config", str(paths.containerd_config)]


def cni_conflist(paths: NodePaths, node: NodeSettings) -> dict[str, Any]:
    """One bridge network of our own (bridge ``jl-<cluster>``, at most 15 characters) with host-local
    IPAM under the state directory. containerd reports the node's network ready once it has loaded a
    network list; only Pods without hostNetwork call the plugins."""
    return {
        "cniVersion": "1.0.0",
        "name": f"joulie-{node.cluster}",
        "plugins": [
            {
                "type": "bridge",
                "bridge": f"jl-{node.cluster}"[:15],
                "isGateway": True,
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {"type": "host-local", "ranges": [[{"subnet": POD_SUBNET}]],
                         "routes": [{"dst": "0.0.0.0/0"}], "dataDir": str(paths.cni_ipam_dir)},
            },
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }


# --- kubelet --------------------------------------------------------------------------------------


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
    labels = ",".join(f"{k}={v}" for k, v in NODE_LABELS.items())
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


# --- the chart ------------------------------------------------------------------------------------


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
    emulated agent), None for a Pod that is none of them."""
    meta = pod.get("metadata") or {}
    component = POD_COMPONENTS.get((meta.get("labels") or {}).get("app.kubernetes.io/component", ""))
    if component == "agent":
        node = (meta.get("annotations") or {}).get("sim.joulie.io/node")
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


# --- host checks ----------------------------------------------------------------------------------


def cgroup_v1_controllers(proc_cgroups: str) -> set[str]:
    """Enabled controllers from /proc/cgroups (``#subsys_name hierarchy num_cgroups enabled``)."""
    out = set()
    for line in proc_cgroups.splitlines():
        parts = line.split()
        if len(parts) == 4 and not line.startswith("#") and parts[3] == "1":
            out.add(parts[0])
    return out


def mounted_v1_controllers(proc_mounts: str) -> dict[str, str]:
    """controller -> mount point of every cgroup v1 hierarchy in /proc/mounts (``cpu,cpuacct`` gives two)."""
    out: dict[str, str] = {}
    for line in proc_mounts.splitlines():
        parts = line.split()
        if len(parts) >= 4 and parts[2] == "cgroup":
            for opt in parts[3].split(","):
                if opt in REQUIRED_CGROUP_CONTROLLERS or opt in ("hugetlb", "net_cls", "net_prio", "perf_event", "blkio",
                                                                 "rdma", "misc"):
                    out[opt] = parts[1]
    return out


def v1_hierarchies(proc_mounts: str) -> list[str]:
    """Mount points of every cgroup v1 hierarchy, named ones (``name=systemd``) too: the kubelet wants
    its cgroup parent to exist in each."""
    return [parts[1] for parts in (line.split() for line in proc_mounts.splitlines())
            if len(parts) >= 3 and parts[2] == "cgroup"]


def cgroup_mounts(proc_mounts: str) -> list[str]:
    """Every cgroup hierarchy's mount point, v1 and v2 (a hybrid host's ``unified`` one too, where
    runc also makes the node's cgroups): where down looks for the node's cgroup parent."""
    return [parts[1] for parts in (line.split() for line in proc_mounts.splitlines())
            if len(parts) >= 3 and parts[2] in ("cgroup", "cgroup2")]


def cgroup_problems(fs_type: str, proc_cgroups: str, proc_mounts: str) -> list[str]:
    """What keeps the kubelet's cgroupfs manager from working; empty when nothing does. On cgroup v2
    (fs type cgroup2fs) the kubelet needs no v1 mounts; on v1 every required controller must be
    enabled and mounted."""
    if fs_type == "cgroup2fs":
        return []
    enabled = cgroup_v1_controllers(proc_cgroups)
    mounted = mounted_v1_controllers(proc_mounts)
    problems = []
    for c in REQUIRED_CGROUP_CONTROLLERS:
        if c not in enabled:
            problems.append(f"cgroup controller {c} is not enabled (/proc/cgroups)")
        elif c not in mounted:
            problems.append(f"cgroup controller {c} is not mounted (no cgroup v1 hierarchy with it in /proc/mounts)")
    return problems


def capability_set(proc_status: str, field: str = "CapBnd") -> int:
    """The capability mask of ``CapBnd:``/``CapEff:`` in /proc/self/status (0 when absent)."""
    for line in proc_status.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == field:
            return int(value.strip(), 16)
    return 0


def missing_capabilities(proc_status: str) -> list[str]:
    """Required capabilities missing from the effective or the bounding set."""
    eff, bnd = capability_set(proc_status, "CapEff"), capability_set(proc_status, "CapBnd")
    return [name for name, bit in REQUIRED_CAPABILITIES.items() if not (eff >> bit) & 1 or not (bnd >> bit) & 1]


def snapshotter_for(proc_filesystems: str) -> str:
    """overlayfs where the kernel has it (layers shared, fast), else the native (copying) snapshotter."""
    names = {line.split()[-1] for line in proc_filesystems.splitlines() if line.strip()}
    return "overlayfs" if "overlay" in names else "native"


def host_problems(
    *, uid: int, missing_binaries: Sequence[str], cgroup: Sequence[str], capabilities: Sequence[str],
) -> list[str]:
    """Every reason this host cannot run the node, each naming the missing piece."""
    problems = []
    if uid != 0:
        problems.append(f"containerd and the kubelet run as root (uid 0); this is uid {uid}")
    problems += [f"missing binary: {b}" for b in missing_binaries]
    problems += list(cgroup)
    problems += [f"capability {c} is missing (CapEff/CapBnd in /proc/self/status)" for c in capabilities]
    return problems
