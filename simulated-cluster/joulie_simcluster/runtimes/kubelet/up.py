"""``up`` on the kubelet runtime: the process runtime's real control plane plus one real node.

The host is checked first (root, binaries, cgroup controllers, capabilities): a
:class:`~joulie_simcluster.runtimes.kubelet.node.KubeletFailure` names every missing piece. Then
etcd, kube-apiserver with kube-controller-manager (Deployments and DaemonSets need it, and the
ServiceAccount admission that gives Pods their tokens is on only with it), kube-scheduler (the
extender at a port of its own, where a hostNetwork extender Pod listens), KWOK and Prometheus start
as the process runtime starts them; then containerd (rootful, its own root, state and socket under
``<state>/kubelet``, cgroupfs), the sandbox image built from ``bootstrap-tools.sh pause`` and the
debootstrap base of ``ci/images`` (made first when not cached) imported, and the kubelet as ``<name>-node``
with a ``system:node`` client certificate signed by the cluster CA. Once that Node is Ready the
spec's fake Nodes (KWOK) are applied as the process runtime applies them.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import json
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from joulie_localcluster.controlplane import ControlPlane, start_control_plane
from joulie_localcluster.kwok import start_kwok
from joulie_localcluster.procs import ManagedProcess, ProcessFailedError, free_port
from joulie_localcluster.prometheus import Prometheus, start_prometheus
from joulie_localcluster.scheduler import ExtenderConfig, start_scheduler
from joulie_localcluster.tools import ToolMissingError, Tools, cache_dir, load_tools
from joulie_simcluster import telemetry
from joulie_simcluster.context import Context, RenderedSpec
from joulie_simcluster.runtimes.kube import FIELD_MANAGER, apply_nodes, core_api, node_ready
from joulie_simcluster.runtimes.kubelet.agentnodes import (
    CLUSTER_KEY,
    agent_node_count,
    agent_node_settings,
    choose_agent_nodes,
    real_node_object,
)
from joulie_simcluster.runtimes.kubelet.containerd import (
    base_rootfs_tarball,
    ctr,
    has_image,
    import_image,
    import_service_images,
    make_base_rootfs,
)
from joulie_simcluster.runtimes.kubelet.containerd_config import (
    cni_conflist,
    containerd_argv,
    containerd_config,
    toml_text,
)
from joulie_simcluster.runtimes.kubelet.credentials import write_node_cert
from joulie_simcluster.runtimes.kubelet.down import clean_node, down_kubelet
from joulie_simcluster.runtimes.kubelet.host import (
    add_node_ip,
    check_host,
    kube_proxy_tool,
    node_tools,
    read_host_file,
    remove_node_ip,
)
from joulie_simcluster.runtimes.kubelet.host_checks import (
    BASE_ROOTFS_BUILDER,
    image_inputs,
    snapshotter_for,
    v1_hierarchies,
)
from joulie_simcluster.runtimes.kubelet.images import (
    SERVICE_COMPONENTS,
    build_base_archive,
    build_pause_archive,
    pex_in_dist,
)
from joulie_simcluster.runtimes.kubelet.node import (
    MAX_KUBELET_NODES,
    KubeletFailure,
    NodePaths,
    NodeSettings,
    node_ip,
    node_name,
)
from joulie_simcluster.runtimes.kubelet.node_config import kubelet_argv, kubelet_config, node_kubeconfig
from joulie_simcluster.runtimes.kubelet.node_processes import group_rss_kib, start_kube_proxy, start_node_lifecycle
from joulie_simcluster.runtimes.runtime import KUBELET, RECORD_KEY
from joulie_simcluster.state import StateDir, pid_key
from joulie_simcluster.timing import duration

NODE_READY_TIMEOUT_S = 180.0


@dataclass(frozen=True)
class _Prerequisites:
    """What ``up`` found before starting anything."""

    host: dict[str, str]  # the host binaries by name
    kubelet_bin: Path
    pause_bin: Path
    k8s_version: str
    tools: Tools
    paths: NodePaths
    agent_nodes: tuple[str, ...] = ()
    """The spec Nodes real kubelets take over (SIMCLUSTER_KUBELET_NODES > 1), in index order 1, 2."""


@dataclass(frozen=True)
class _Ports:
    extender: int
    simulator: int


@dataclass(frozen=True)
class _Started:
    """What the start steps brought up, and how long each part took (seconds)."""

    cp: ControlPlane
    prom: Prometheus
    node: NodeSettings
    t_cp: float
    t_images: float
    t_node: float
    agents: tuple[NodeSettings, ...] = ()
    t_agents: float = 0.0


def up_kubelet(ctx: Context, rendered: RenderedSpec, *, crd_dir: Path, telemetry_mode: str) -> str:
    """Brings up the control plane, the kubelet node and the spec's fake Nodes; returns the summary."""
    pre = _check_prerequisites(ctx, crd_dir, telemetry_mode)
    count = agent_node_count(ctx.settings.kubelet_nodes)
    if count:
        agents = choose_agent_nodes(rendered.spec, rendered.nodes, count)
        pre = dataclasses.replace(pre, agent_nodes=tuple(agents))
        ctx.progress(f"SIMCLUSTER_KUBELET_NODES={ctx.settings.kubelet_nodes}: agent nodes {', '.join(agents)} "
                     "(real kubelets under these spec Nodes' names, the agent DaemonSet on them)")
    _start_afresh(ctx.state, pre.paths, ctx.progress)
    ports = _Ports(extender=free_port(), simulator=free_port())
    env: dict[str, str] = {}  # cluster.env: the images the start records first
    started = _start_guarded(ctx, pre, functools.partial(_start_everything, ctx, pre, ports, crd_dir, telemetry_mode,
                                                         env, rendered))
    _record_cluster(ctx.state, rendered, pre.paths, ports, telemetry_mode, started, env)
    return _apply_nodes_and_summarise(ctx, rendered, started, env)


def _check_prerequisites(ctx: Context, crd_dir: Path, telemetry_mode: str) -> _Prerequisites:
    try:
        telemetry.mode(telemetry_mode)
    except telemetry.TelemetryError as e:
        raise KubeletFailure(str(e)) from e
    host = check_host()
    kubelet_bin, pause_bin, k8s_version = node_tools()
    try:
        tools = load_tools()
    except ToolMissingError as e:
        raise KubeletFailure(str(e)) from e
    if not crd_dir.is_dir():
        raise KubeletFailure(f"CRD directory {crd_dir} not found (run from the repository root or pass --crds)")
    paths = NodePaths.under(ctx.state.root)
    paths.check_socket()
    # The images' inputs before anything starts: a fresh machine gets its base made here, or the
    # exact command, never a deploy that finds no images.
    missing = [c for c in SERVICE_COMPONENTS if not pex_in_dist(ctx.settings.dist, c).is_file()]
    if image_inputs(base_rootfs_tarball() is not None, missing, Path(BASE_ROOTFS_BUILDER).is_file(), str(cache_dir())):
        make_base_rootfs(ctx.progress)
    return _Prerequisites(host, kubelet_bin, pause_bin, k8s_version, tools, paths)


def _start_afresh(state: StateDir, paths: NodePaths, progress: Callable[[str], None]) -> None:
    """A recorded cluster stopped, the old control plane's data and the node's files gone."""
    state.root.mkdir(parents=True, exist_ok=True)
    if state.read_cluster_env() is not None:
        progress(f"a cluster is recorded in {state.root}: stopping it first (the kubelet runtime always starts afresh)")
        down_kubelet(state, keep=True, progress=progress)
    for stale in ("etcd-data", "pki", "tsdb"):
        shutil.rmtree(state.root / stale, ignore_errors=True)
    # Each node starts afresh but for containerd's root: its content store keeps the imported images.
    for node_paths in [paths, *(NodePaths.under(state.root, i) for i in range(1, MAX_KUBELET_NODES))]:
        if node_paths.root.is_dir():
            for entry in node_paths.root.iterdir():
                if entry.name != "containerd":
                    shutil.rmtree(entry, ignore_errors=True) if entry.is_dir() else entry.unlink()
            shutil.rmtree(node_paths.containerd_state, ignore_errors=True)
    state.logs.mkdir(parents=True, exist_ok=True)


def _start_guarded(ctx: Context, pre: _Prerequisites,
                   start: Callable[[list[Callable[[], None]]], _Started]) -> _Started:
    """`start` with the stop of each group it starts recorded: on a failure those stop, and the node's
    mounts, cgroups and address go, before the failure is raised (a process failure as a KubeletFailure)."""
    stops: list[Callable[[], None]] = []

    def undo() -> None:
        for stop in stops:
            stop()
        clean_node(pre.paths, NodeSettings.cgroup_root_of(ctx.settings.name), ctx.progress)
        remove_node_ip(node_ip(ctx.settings.name))
        for i in range(1, len(pre.agent_nodes) + 1):
            clean_node(NodePaths.under(ctx.state.root, i), NodeSettings.cgroup_root_of(ctx.settings.name, i), ctx.progress)
            remove_node_ip(node_ip(ctx.settings.name, i))

    try:
        return start(stops)
    except (ProcessFailedError, ToolMissingError, OSError, subprocess.TimeoutExpired) as e:
        undo()
        raise KubeletFailure(f"starting the kubelet runtime failed: {e}") from e
    except BaseException:
        undo()
        raise


def _start_everything(ctx: Context, pre: _Prerequisites, ports: _Ports, crd_dir: Path, telemetry_mode: str,
                      env: dict[str, str], rendered: RenderedSpec, stops: list[Callable[[], None]]) -> _Started:
    """The control plane, containerd, the images, the kubelet and (when built) kube-proxy, in order;
    then each agent node."""
    cp, prom, t_cp = _start_control_plane(ctx, pre.tools, ports, crd_dir, telemetry_mode, stops)
    node = _start_containerd(ctx, pre, cp)
    t_images = _import_images(ctx, pre, node, env)
    t_node = _start_kubelet(ctx, pre, cp, node)
    _start_kube_proxy_if_built(ctx, cp, node)
    t0 = time.monotonic()
    by_name = {n["metadata"]["name"]: n for n in rendered.nodes}
    agents = tuple(_start_agent_node(ctx, pre, cp, node, i, name, by_name[name])
                   for i, name in enumerate(pre.agent_nodes, start=1))
    return _Started(cp, prom, node, t_cp, t_images, t_node, agents, time.monotonic() - t0)


def _start_control_plane(ctx: Context, tools: Tools, ports: _Ports, crd_dir: Path, telemetry_mode: str,
                         stops: list[Callable[[], None]]) -> tuple[ControlPlane, Prometheus, float]:
    """etcd, kube-apiserver, kube-controller-manager, kube-scheduler (calling the extender's port),
    KWOK, Prometheus and the node lifecycle controller; returns them and the seconds they took."""
    state, progress, timing = ctx.state, ctx.progress, ctx.settings.timing
    t0 = time.monotonic()
    progress(f"starting etcd, kube-apiserver and kube-controller-manager (CRDs from {crd_dir})")
    cp = start_control_plane(tools, state.root, crd_dir=crd_dir, timeout_s=120, controller_manager=True)
    stops.append(cp.stop)
    progress(f"kube-apiserver ready at {cp.url} ({cp.ready_s:.1f}s), kube-controller-manager serving")
    start_scheduler(tools, cp, timeout_s=60, extender=ExtenderConfig(
        url_prefix=f"http://127.0.0.1:{ports.extender}", weight=5, node_cache_capable=True))
    start_kwok(tools, cp, timeout_s=60)
    prom = start_prometheus(tools, state.root, cp.group, telemetry.mode(telemetry_mode).prometheus_settings(
        f"127.0.0.1:{ports.simulator}", duration(timing.otlp_interval_s)), timeout_s=60)
    start_node_lifecycle(tools, cp, state)
    progress(f"kube-scheduler, kwok, prometheus and the node lifecycle controller ready ({time.monotonic() - t0:.1f}s)")
    return cp, prom, time.monotonic() - t0


def _start_containerd(ctx: Context, pre: _Prerequisites, cp: ControlPlane) -> NodeSettings:
    """The node's settings chosen, containerd's configuration and CNI network written, containerd serving."""
    snapshotter = snapshotter_for(read_host_file("/proc/filesystems"))
    node = NodeSettings(
        name=node_name(ctx.settings.name), cluster=ctx.settings.name, kubelet_port=free_port(),
        healthz_port=free_port(), sandbox_image=f"joulie.local/pause:{pre.k8s_version}", runc=pre.host["runc"],
        cni_bin_dir="/usr/lib/cni", snapshotter=snapshotter)
    _run_containerd(ctx, pre, cp, pre.paths, node)
    return node


def _proc_name(base: str, node: NodeSettings) -> str:
    """The process's name in cluster.env: ``kubelet``, ``containerd`` for the first node, ``kubelet-<i>`` … after."""
    return base if node.index == 0 else f"{base}-{node.index}"


def _run_containerd(ctx: Context, pre: _Prerequisites, cp: ControlPlane, paths: NodePaths, node: NodeSettings) -> None:
    state, progress = ctx.state, ctx.progress
    for d in (paths.containerd_root, paths.containerd_state, paths.cni_conf_dir, paths.cni_ipam_dir, paths.images,
              paths.kubelet_root, paths.pod_logs):
        d.mkdir(parents=True, exist_ok=True)
    paths.containerd_config.write_text(toml_text(containerd_config(paths, node)))
    (paths.cni_conf_dir / "10-joulie.conflist").write_text(json.dumps(cni_conflist(paths, node), indent=2) + "\n")
    t1 = time.monotonic()
    name = _proc_name("containerd", node)
    containerd = cp.group.add(ManagedProcess(name, containerd_argv(pre.host["containerd"], paths), state.log(name)).start())
    containerd.wait_until(lambda: ctr(paths, "version", timeout=5).returncode == 0, 60, "serving on its socket")
    progress(f"{name} {node.snapshotter} ready on {paths.containerd_socket} ({time.monotonic() - t1:.1f}s)")


def _import_images(ctx: Context, pre: _Prerequisites, node: NodeSettings, env: dict[str, str]) -> float:
    """The sandbox image, and with a cached debootstrap base the base and the chart's service images
    (their refs into `env`); returns the seconds it took."""
    paths, progress = pre.paths, ctx.progress
    t2 = time.monotonic()
    if not has_image(paths, node.sandbox_image):
        import_image(paths, build_pause_archive(pre.pause_bin, pre.k8s_version, paths.images)[1], progress)
    base = base_rootfs_tarball()
    if base is not None:
        ref = f"joulie.local/debian-base:{base.stem.removeprefix('base-')}"
        if not has_image(paths, ref):
            _, base_tar = build_base_archive(base, ref, paths.images)
            import_image(paths, base_tar, progress)
            base_tar.unlink()
        env["BASE_IMAGE"] = ref
        env.update(import_service_images(paths, base, ctx.settings.dist, progress))
    return time.monotonic() - t2


def _start_kubelet(ctx: Context, pre: _Prerequisites, cp: ControlPlane, node: NodeSettings,
                   paths: NodePaths | None = None) -> float:
    """The node's cgroup parent, address and credentials, then the kubelet until its Node is Ready;
    returns the seconds from its start to Ready."""
    state, progress, paths = ctx.state, ctx.progress, paths or pre.paths
    for mount in v1_hierarchies(read_host_file("/proc/mounts")):
        (Path(mount) / node.cgroup_root.lstrip("/")).mkdir(exist_ok=True)  # the kubelet wants it to exist
    add_node_ip(node.ip)
    write_node_cert(cp.pki.ca_crt, cp.pki.ca_key, node.name, paths.node_crt, paths.node_key)
    paths.kubeconfig.write_text(yaml.safe_dump(node_kubeconfig(cp.url, cp.pki.ca_crt, paths.node_crt,
                                                               paths.node_key, node.name)))
    paths.kubelet_config.write_text(yaml.safe_dump(kubelet_config(paths, node, cp.pki.ca_crt), sort_keys=False))
    t3 = time.monotonic()
    name = _proc_name("kubelet", node)
    kubelet = cp.group.add(ManagedProcess(name, kubelet_argv(str(pre.kubelet_bin), paths, node), state.log(name)).start())
    api = core_api(state.kubeconfig)

    def ready() -> bool:
        return node_ready(api.read_node(node.name).to_dict())

    kubelet.wait_until(ready, NODE_READY_TIMEOUT_S, f"Node {node.name} Ready")
    t_node = time.monotonic() - t3
    progress(f"{name}: Node {node.name} Ready ({t_node:.1f}s after start)")
    return t_node


def _start_agent_node(ctx: Context, pre: _Prerequisites, cp: ControlPlane, infra: NodeSettings, index: int,
                      name: str, spec_node: dict[str, Any]) -> NodeSettings:
    """Agent node `index`: its own containerd (the sandbox, the base and the agent's image imported
    into it), the spec Node applied without KWOK, then its kubelet registering under that name."""
    paths = NodePaths.under(ctx.state.root, index)
    paths.check_socket()
    node = agent_node_settings(infra, index, name, free_port(), free_port())
    _run_containerd(ctx, pre, cp, paths, node)
    if not has_image(paths, node.sandbox_image):
        import_image(paths, build_pause_archive(pre.pause_bin, pre.k8s_version, paths.images)[1], ctx.progress)
    base = base_rootfs_tarball()
    if base is not None:
        ref = f"joulie.local/debian-base:{base.stem.removeprefix('base-')}"
        if not has_image(paths, ref):
            _, base_tar = build_base_archive(base, ref, paths.images)
            import_image(paths, base_tar, ctx.progress)
            base_tar.unlink()
        import_service_images(paths, base, ctx.settings.dist, ctx.progress, components=("agent",))
    # The Node first, as the spec has it (labels, taints): the kubelet then registers into it.
    core_api(ctx.state.kubeconfig).patch_node(
        name, real_node_object(spec_node), field_manager=FIELD_MANAGER, force=True,
        _content_type="application/apply-patch+yaml")
    _start_kubelet(ctx, pre, cp, node, paths)
    return node


def _start_kube_proxy_if_built(ctx: Context, cp: ControlPlane, node: NodeSettings) -> None:
    proxy_bin = kube_proxy_tool()
    if proxy_bin is None:
        ctx.progress("kube-proxy not built (ci/tools/bootstrap-tools.sh kube-proxy): Service ClusterIPs are not routed")
    else:
        start_kube_proxy(proxy_bin, cp, node, ctx.state)
        ctx.progress("kube-proxy (iptables) running: Service ClusterIPs are routed on this host")


def _record_cluster(state: StateDir, rendered: RenderedSpec, paths: NodePaths, ports: _Ports, telemetry_mode: str,
                    started: _Started, env: dict[str, str]) -> None:
    """cluster.env: this runtime, the addresses, the node, every process's PID and the spec."""
    cp, node = started.cp, started.node
    procs: dict[str, ManagedProcess] = {p.name: p for p in cp.group.procs}
    env.update({
        RECORD_KEY: KUBELET,
        "API_URL": cp.url,
        "API_PORT": cp.url.rsplit(":", 1)[-1],
        "PROMETHEUS_URL": started.prom.url,
        "TELEMETRY": telemetry_mode,
        "SIMULATOR_HTTP_PORT": str(ports.simulator),
        "EXTENDER_PORT": str(ports.extender),
        "KUBECONFIG": str(state.kubeconfig),
        "NODE_NAME": node.name,
        "CONTAINERD_SOCKET": str(paths.containerd_socket),
        "KUBELET_PORT": str(node.kubelet_port),
        "NODE_CGROUP_ROOT": node.cgroup_root,
        "NODE_IP": node.ip,
        "CNI_BRIDGE": cni_conflist(paths, node)["plugins"][0]["bridge"],
        "STARTED_AT": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "SETUP_S": f"control-plane={started.t_cp:.1f} images={started.t_images:.1f} node-ready={started.t_node:.1f}",
    })
    for name, proc in procs.items():
        env[pid_key(name)] = str(proc.pid)
    if started.agents:
        # down finds each agent node's processes (PID_kubelet-<i>, PID_containerd-<i>), address,
        # cgroup parent and bridge here.
        env[CLUSTER_KEY] = ",".join(a.name for a in started.agents)
        for a in started.agents:
            env.update({f"NODE_IP_{a.index}": a.ip, f"NODE_CGROUP_ROOT_{a.index}": a.cgroup_root,
                        f"CNI_BRIDGE_{a.index}": a.bridge,
                        f"CONTAINERD_SOCKET_{a.index}": str(NodePaths.under(state.root, a.index).containerd_socket)})
    env["SPEC_NAME"] = rendered.spec.name
    state.write_cluster_env(env)


def _apply_nodes_and_summarise(ctx: Context, rendered: RenderedSpec, started: _Started, env: dict[str, str]) -> str:
    state, progress = ctx.state, ctx.progress
    rss = {n: group_rss_kib(int(env[pid_key(n)])) // 1024 for n in ("containerd", "kubelet")}
    progress(f"node memory: kubelet {rss['kubelet']} MiB, containerd {rss['containerd']} MiB RSS")
    agent_rss = sum(group_rss_kib(int(env[pid_key(f"{p}-{a.index}")])) // 1024
                    for a in started.agents for p in ("kubelet", "containerd"))
    real = [a.name for a in started.agents]
    applied, _deleted, ready_s = apply_nodes(state, rendered, progress, real=real)
    state.spec.write_text(rendered.text)
    summary = (f"simcluster up (kubelet runtime): spec {rendered.spec.name}, real Node {started.node.name} Ready, "
               f"{applied} fake Nodes applied and Ready in {ready_s:.1f}s, {progress.elapsed():.1f}s in all "
               f"(control plane {started.t_cp:.1f}s, images {started.t_images:.1f}s, node Ready {started.t_node:.1f}s; "
               f"kubelet {rss['kubelet']} MiB, containerd {rss['containerd']} MiB RSS)")
    if real:
        summary += (f"; agent nodes {', '.join(real)} Ready in {started.t_agents:.1f}s "
                    f"(their kubelets and containerds {agent_rss} MiB RSS)")
    print(summary, file=progress.out, flush=True)
    return summary
