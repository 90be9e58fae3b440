"""The kubelet runtime of simcluster: the process runtime's real control plane plus one real node.

``up`` checks the host first (root, binaries, cgroup controllers, capabilities) and stops with a
:class:`KubeletFailure` naming every missing piece. Then it starts etcd, kube-apiserver with
kube-controller-manager (Deployments and DaemonSets need it, and the ServiceAccount admission that
gives Pods their tokens is on only with it), kube-scheduler (the extender at a port of its own,
where a hostNetwork extender Pod listens), KWOK and Prometheus as the process runtime does; then
containerd (rootful, its own root, state and socket under ``<state>/kubelet``, cgroupfs), imports
the sandbox image built from ``bootstrap-tools.sh pause`` (and the debootstrap base of
``ci/images`` when it is cached) and starts the kubelet as ``<name>-node`` with a
``system:node`` client certificate signed by the cluster CA. It waits for that Node to be Ready,
then applies the spec's fake Nodes (KWOK) as the process runtime does. ``down`` deletes every Pod
sandbox, stops the kubelet and containerd, unmounts what they left under the state directory and
removes the node's cgroups, then stops the control plane.

The node as data (paths, configurations, argv, host checks) is
:mod:`joulie_simcluster.runtimes.kubelet_config`; images without a registry,
:mod:`joulie_simcluster.runtimes.kubelet_images`. simulated-cluster/KUBELET.md says what works here.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from joulie_common.procstatus import rss_kib
from joulie_simcluster import telemetry
from joulie_simcluster.context import Context, RenderedSpec
from joulie_simcluster.runtimes import process
from joulie_simcluster.runtimes.kube import apply_nodes, core_api, kube_list, node_ready
from joulie_simcluster.runtimes.kubelet_config import (
    KUBELET_IPTABLES_CLEANUP,
    NAMESPACE,
    RELEASE,
    KubeletFailure,
    NodePaths,
    NodeSettings,
    cgroup_mounts,
    cgroup_problems,
    cni_conflist,
    container_id,
    containerd_argv,
    containerd_config,
    host_problems,
    kube_proxy_argv,
    kubelet_argv,
    kubelet_config,
    missing_capabilities,
    node_ip,
    node_kubeconfig,
    pod_line,
    pod_process_name,
    snapshotter_for,
    task_pids,
    toml_text,
    v1_hierarchies,
)
from joulie_simcluster.runtimes.kubelet_images import (
    SERVICE_COMPONENTS,
    build_base_archive,
    build_pause_archive,
    build_service_archive,
    pex_in_dist,
    service_ref,
)
from joulie_simcluster.runtimes.pids import start_ticks, stop_pid
from joulie_simcluster.state import StateDir, pid_key
from joulie_simcluster.timing import duration
from joulie_testinfra.controlplane import ControlPlane, start_control_plane
from joulie_testinfra.kwok import start_kwok
from joulie_testinfra.procs import ManagedProcess, ProcessFailedError, free_port
from joulie_testinfra.prometheus import start_prometheus
from joulie_testinfra.scheduler import ExtenderConfig, start_scheduler
from joulie_testinfra.tools import ToolMissingError, Tools, cache_dir, load_tools, manifest_path, parse_env_file

# Processes of this runtime beyond the process runtime's PROCESSES, in start order.
# (argv0 of node-lifecycle is kube-controller-manager's: it is stopped as that tool.)
NODE_PROCESSES = {"kube-controller-manager": "kube-controller-manager", "node-lifecycle": "kube-controller-manager",
                  "containerd": "containerd", "kubelet": "kubelet", "kube-proxy": "kube-proxy"}
HOST_BINARIES = ("containerd", "containerd-shim-runc-v2", "runc", "ctr")
NODE_READY_TIMEOUT_S = 180.0
IMPORT_TIMEOUT_S = 600.0


def node_name(cluster: str) -> str:
    return f"{cluster}-node"


# --- host checks ------------------------------------------------------------------------------


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def check_host() -> dict[str, str]:
    """The host binaries by name; a KubeletFailure naming every missing piece otherwise."""
    found = {b: shutil.which(b) or "" for b in HOST_BINARIES}
    fs_type = subprocess.run(["stat", "-fc", "%T", "/sys/fs/cgroup"], capture_output=True, text=True).stdout.strip()
    problems = host_problems(
        uid=os.geteuid(),
        missing_binaries=[f"{b} (Debian: ci/install-system-packages --kubelet)" for b, p in found.items() if not p],
        cgroup=cgroup_problems(fs_type, _read("/proc/cgroups"), _read("/proc/mounts")),
        capabilities=missing_capabilities(_read("/proc/self/status")),
    )
    if problems:
        raise KubeletFailure("this host cannot run the kubelet node: " + "; ".join(problems))
    return found


def node_tool(tool: str) -> Path | None:
    """An optional tool of the bootstrap (kubelet, kube-proxy, pause) at the control plane's version:
    from the manifest, else ``<bin>/<tool>-<version>`` beside kube-apiserver (a bootstrap that
    predates the optional tools rewrites the manifest without them). None when not built."""
    env = parse_env_file(manifest_path().read_text()) if manifest_path().is_file() else {}
    listed = env.get(tool.upper().replace("-", "_"), "")
    if listed and os.access(listed, os.X_OK):
        return Path(listed)
    apiserver = Path(env.get("KUBE_APISERVER", ""))
    version = apiserver.name.removeprefix("kube-apiserver-")
    candidate = apiserver.parent / f"{tool}-{version}"
    return candidate if version and os.access(candidate, os.X_OK) else None


def kube_proxy_tool() -> Path | None:
    """kube-proxy (``bootstrap-tools.sh kube-proxy``), None when not built: the node then runs
    without Service routing."""
    return node_tool("kube-proxy")


def node_tools() -> tuple[Path, Path, str]:
    """(kubelet, pause, Kubernetes version), once ``ci/tools/bootstrap-tools.sh kubelet pause`` has
    built them."""
    paths = {t: node_tool(t) for t in ("kubelet", "pause")}
    missing = [t for t, p in paths.items() if p is None]
    if missing:
        raise KubeletFailure(f"{' and '.join(missing)} not built (not in {manifest_path()} nor beside kube-apiserver); "
                             f"run: ci/tools/bootstrap-tools.sh kubelet pause")
    kubelet, pause = paths["kubelet"], paths["pause"]
    assert kubelet is not None and pause is not None
    return kubelet, pause, kubelet.name.removeprefix("kubelet-")


# --- the node's address ------------------------------------------------------------------------


def _lo_has(ip: str) -> bool:
    out = subprocess.run(["ip", "-4", "-o", "addr", "show", "dev", "lo"], capture_output=True, text=True).stdout
    return f" {ip}/32 " in out


def add_node_ip(ip: str) -> None:
    """The node's address on lo (kubelet_config.node_ip says why)."""
    if _lo_has(ip):
        return
    r = subprocess.run(["ip", "addr", "add", f"{ip}/32", "dev", "lo"], capture_output=True, text=True)
    if r.returncode != 0:
        raise KubeletFailure(f"cannot give the node its address ({ip}/32 on lo): {r.stderr.strip()} (needs CAP_NET_ADMIN)")


def remove_node_ip(ip: str) -> None:
    if _lo_has(ip):
        subprocess.run(["ip", "addr", "del", f"{ip}/32", "dev", "lo"], capture_output=True)


# --- the node's credentials -----------------------------------------------------------------------


def write_node_cert(ca_crt: Path, ca_key: Path, node: str, crt: Path, key: Path) -> None:
    """A client certificate for system:node:<node> in group system:nodes, signed by the cluster CA."""
    ca = x509.load_pem_x509_certificate(ca_crt.read_bytes())
    ca_private = serialization.load_pem_private_key(ca_key.read_bytes(), password=None)
    assert isinstance(ca_private, ec.EllipticCurvePrivateKey)
    private = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"system:node:{node}"),
                         x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:nodes")])
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(ca.subject)
            .public_key(private.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=2))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .sign(ca_private, hashes.SHA256()))
    crt.parent.mkdir(parents=True, exist_ok=True)
    crt.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key.write_bytes(private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    key.chmod(0o600)


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


# --- containerd ---------------------------------------------------------------------------------


def ctr(paths: NodePaths, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ctr", "--address", str(paths.containerd_socket), "-n", "k8s.io", *args],
                          capture_output=True, text=True, timeout=timeout)


def has_image(paths: NodePaths, ref: str) -> bool:
    r = ctr(paths, "images", "ls", "-q", timeout=30)
    return r.returncode == 0 and ref in r.stdout.split()


def import_image(paths: NodePaths, archive: Path, progress: Callable[[str], None]) -> float:
    t0 = time.monotonic()
    r = ctr(paths, "images", "import", "--no-unpack=false", str(archive), timeout=IMPORT_TIMEOUT_S)
    if r.returncode != 0:
        raise KubeletFailure(f"ctr images import {archive} failed (exit {r.returncode}): {(r.stdout + r.stderr).strip()[-800:]}")
    took = time.monotonic() - t0
    progress(f"imported {archive.name} into containerd ({took:.1f}s): {r.stdout.strip().splitlines()[-1:]}")
    return took


def base_rootfs_tarball() -> Path | None:
    """The debootstrap rootfs ``ci/images`` caches (the newest), if any."""
    found = sorted((cache_dir() / "images").glob("base-bookworm-*.tar"), key=lambda p: p.stat().st_mtime)
    return found[-1] if found else None


BASE_PYTHON = Path("/usr/bin/python3.11")
"""The base image's interpreter; on a Debian 12 host the same package, so what the PEX unpacks with it
here is what it would unpack in the container."""


def unpack_pex(pex: Path, pex_root: Path, progress: Callable[[str], None], *, clean: bool = True) -> Path | None:
    """The PEX run once (``--version``) with `pex_root` as PEX_ROOT under BASE_PYTHON: its unpacked
    code and wheels, for a layer of the image. None (the containers then unpack on their first start)
    where this host has no such interpreter or the run fails. `clean`: `pex_root` starts empty."""
    if not os.access(BASE_PYTHON, os.X_OK):
        progress(f"no {BASE_PYTHON} here: {pex.parent.name}'s containers unpack the PEX on their first start")
        return None
    if clean:
        shutil.rmtree(pex_root, ignore_errors=True)
    t0 = time.monotonic()
    r = subprocess.run([str(BASE_PYTHON), str(pex), "--version"], capture_output=True, text=True, timeout=600,
                       env={"PATH": "/usr/bin:/bin", "PEX_ROOT": str(pex_root), "PEX_PYTHON": str(BASE_PYTHON),
                            "PYTHONDONTWRITEBYTECODE": "1", "LANG": "C.UTF-8"})
    # fakesmi has no --version: its usage (exit 2) comes after the unpacking all the same.
    if r.returncode != 0 and not (r.returncode == 2 and "usage: fakesmi" in r.stderr + r.stdout):
        progress(f"unpacking {pex} failed (exit {r.returncode}: {(r.stdout + r.stderr).strip()[-300:]}); "
                 "its containers unpack it on their first start")
        if clean:
            shutil.rmtree(pex_root, ignore_errors=True)
        return None
    progress(f"unpacked {pex} for its image ({time.monotonic() - t0:.1f}s)")
    return pex_root


def _import_service_images(paths: NodePaths, base: Path, dist: Path, progress: Callable[[str], None]) -> dict[str, str]:
    """The chart's images from the PEXes in `dist` (SIMCLUSTER_DIST), those that are there; cluster.env
    keys IMAGE_<COMPONENT> name each imported ref."""
    out = {}
    for component in SERVICE_COMPONENTS:
        pex = pex_in_dist(dist, component)
        if not pex.is_file():
            progress(f"no image for {component}: {pex} is missing (./pants package services/{component}:bin)")
            continue
        ref = service_ref(component, pex)
        if not has_image(paths, ref):
            unpacked = unpack_pex(pex, paths.images / f"{component}-pexroot", progress)
            fakesmi = pex_in_dist(dist, "fakesmi")
            if component == "agent" and unpacked is not None and fakesmi.is_file():
                # The agent Pods run fakesmi (a hostPath, KUBELET.md) under the same PEX_ROOT: unpacked
                # here too, else a GPU agent's first tool call unpacks it and may outlast GPU_TOOL_TIMEOUT.
                unpack_pex(fakesmi, unpacked, progress, clean=False)
            _, archive = build_service_archive(base, component, pex, paths.images, unpacked)
            import_image(paths, archive, progress)
            archive.unlink()
            if unpacked is not None:
                shutil.rmtree(unpacked, ignore_errors=True)
        out["IMAGE_" + component.upper().replace("-", "_")] = ref
    return out


# --- up -----------------------------------------------------------------------------------------


def _group_rss_kib(pid: int) -> int:
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


def up_kubelet(ctx: Context, rendered: RenderedSpec, *, crd_dir: Path, telemetry_mode: str) -> str:
    """Brings up the control plane, the kubelet node and the spec's fake Nodes; returns the summary."""
    state, progress, timing = ctx.state, ctx.progress, ctx.settings.timing
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
    paths = NodePaths.under(state.root)
    paths.check_socket()
    state.root.mkdir(parents=True, exist_ok=True)
    if state.read_cluster_env() is not None:
        progress(f"a cluster is recorded in {state.root}: stopping it first (the kubelet runtime always starts afresh)")
        down_kubelet(state, keep=True, progress=progress)
    for stale in ("etcd-data", "pki", "tsdb"):
        shutil.rmtree(state.root / stale, ignore_errors=True)
    # The node starts afresh but for containerd's root: its content store keeps the imported images.
    if paths.root.is_dir():
        for entry in paths.root.iterdir():
            if entry.name != "containerd":
                shutil.rmtree(entry, ignore_errors=True) if entry.is_dir() else entry.unlink()
        shutil.rmtree(paths.containerd_state, ignore_errors=True)
    state.logs.mkdir(parents=True, exist_ok=True)

    extender_port, simulator_port = free_port(), free_port()
    t0 = time.monotonic()
    env: dict[str, str] = {}
    group_stop: list[Callable[[], None]] = []
    cgroup_root = NodeSettings.cgroup_root_of(ctx.settings.name)
    try:
        progress(f"starting etcd, kube-apiserver and kube-controller-manager (CRDs from {crd_dir})")
        cp = start_control_plane(tools, state.root, crd_dir=crd_dir, timeout_s=120, controller_manager=True)
        group_stop.append(cp.stop)
        progress(f"kube-apiserver ready at {cp.url} ({cp.ready_s:.1f}s), kube-controller-manager serving")
        start_scheduler(tools, cp, timeout_s=60, extender=ExtenderConfig(
            url_prefix=f"http://127.0.0.1:{extender_port}", weight=5, node_cache_capable=True))
        start_kwok(tools, cp, timeout_s=60)
        prom = start_prometheus(tools, state.root, cp.group, telemetry.mode(telemetry_mode).prometheus_settings(
            f"127.0.0.1:{simulator_port}", duration(timing.otlp_interval_s)), timeout_s=60)
        start_node_lifecycle(tools, cp, state)
        progress(f"kube-scheduler, kwok, prometheus and the node lifecycle controller ready ({time.monotonic() - t0:.1f}s)")
        t_cp = time.monotonic() - t0

        # containerd
        snapshotter = snapshotter_for(_read("/proc/filesystems"))
        node = NodeSettings(
            name=node_name(ctx.settings.name), cluster=ctx.settings.name, kubelet_port=free_port(),
            healthz_port=free_port(), sandbox_image=f"joulie.local/pause:{k8s_version}", runc=host["runc"],
            cni_bin_dir="/usr/lib/cni", snapshotter=snapshotter)
        for d in (paths.containerd_root, paths.containerd_state, paths.cni_conf_dir, paths.cni_ipam_dir, paths.images,
                  paths.kubelet_root, paths.pod_logs):
            d.mkdir(parents=True, exist_ok=True)
        paths.containerd_config.write_text(toml_text(containerd_config(paths, node)))
        (paths.cni_conf_dir / "10-joulie.conflist").write_text(json.dumps(cni_conflist(paths, node), indent=2) + "\n")
        t1 = time.monotonic()
        containerd = cp.group.add(ManagedProcess("containerd", containerd_argv(host["containerd"], paths),
                                                 state.log("containerd")).start())
        containerd.wait_until(lambda: ctr(paths, "version", timeout=5).returncode == 0, 60, "serving on its socket")
        progress(f"containerd {snapshotter} ready on {paths.containerd_socket} ({time.monotonic() - t1:.1f}s)")

        # images
        t2 = time.monotonic()
        if not has_image(paths, node.sandbox_image):
            import_image(paths, build_pause_archive(pause_bin, k8s_version, paths.images)[1], progress)
        base = base_rootfs_tarball()
        if base is not None:
            ref = f"joulie.local/debian-base:{base.stem.removeprefix('base-')}"
            if not has_image(paths, ref):
                _, base_tar = build_base_archive(base, ref, paths.images)
                import_image(paths, base_tar, progress)
                base_tar.unlink()
            env["BASE_IMAGE"] = ref
            env.update(_import_service_images(paths, base, ctx.settings.dist, progress))
        t_images = time.monotonic() - t2

        # kubelet
        for mount in v1_hierarchies(_read("/proc/mounts")):
            (Path(mount) / node.cgroup_root.lstrip("/")).mkdir(exist_ok=True)  # the kubelet wants it to exist
        add_node_ip(node.ip)
        write_node_cert(cp.pki.ca_crt, cp.pki.ca_key, node.name, paths.node_crt, paths.node_key)
        paths.kubeconfig.write_text(yaml.safe_dump(node_kubeconfig(cp.url, cp.pki.ca_crt, paths.node_crt,
                                                                   paths.node_key, node.name)))
        paths.kubelet_config.write_text(yaml.safe_dump(kubelet_config(paths, node, cp.pki.ca_crt), sort_keys=False))
        t3 = time.monotonic()
        kubelet = cp.group.add(ManagedProcess("kubelet", kubelet_argv(str(kubelet_bin), paths, node),
                                              state.log("kubelet")).start())
        api = core_api(state.kubeconfig)

        def ready() -> bool:
            return node_ready(api.read_node(node.name).to_dict())

        kubelet.wait_until(ready, NODE_READY_TIMEOUT_S, f"Node {node.name} Ready")
        t_node = time.monotonic() - t3
        progress(f"kubelet: Node {node.name} Ready ({t_node:.1f}s after start)")
        proxy_bin = kube_proxy_tool()
        if proxy_bin is None:
            progress("kube-proxy not built (ci/tools/bootstrap-tools.sh kube-proxy): Service ClusterIPs are not routed")
        else:
            start_kube_proxy(proxy_bin, cp, node, state)
            progress("kube-proxy (iptables) running: Service ClusterIPs are routed on this host")
    except (ProcessFailedError, ToolMissingError, OSError, subprocess.TimeoutExpired) as e:
        for stop in group_stop:
            stop()
        _clean_node(paths, cgroup_root, progress)
        remove_node_ip(node_ip(ctx.settings.name))
        raise KubeletFailure(f"starting the kubelet runtime failed: {e}") from e
    except BaseException:
        for stop in group_stop:
            stop()
        _clean_node(paths, cgroup_root, progress)
        remove_node_ip(node_ip(ctx.settings.name))
        raise
    procs: dict[str, ManagedProcess] = {p.name: p for p in cp.group.procs}
    env.update({
        "SIMCLUSTER_RUNTIME": "kubelet",
        "API_URL": cp.url,
        "API_PORT": cp.url.rsplit(":", 1)[-1],
        "PROMETHEUS_URL": prom.url,
        "TELEMETRY": telemetry_mode,
        "SIMULATOR_HTTP_PORT": str(simulator_port),
        "EXTENDER_PORT": str(extender_port),
        "KUBECONFIG": str(state.kubeconfig),
        "NODE_NAME": node.name,
        "CONTAINERD_SOCKET": str(paths.containerd_socket),
        "KUBELET_PORT": str(node.kubelet_port),
        "NODE_CGROUP_ROOT": node.cgroup_root,
        "NODE_IP": node.ip,
        "CNI_BRIDGE": cni_conflist(paths, node)["plugins"][0]["bridge"],
        "STARTED_AT": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "SETUP_S": f"control-plane={t_cp:.1f} images={t_images:.1f} node-ready={t_node:.1f}",
    })
    for name, proc in procs.items():
        env[pid_key(name)] = str(proc.pid)
    env["SPEC_NAME"] = rendered.spec.name
    state.write_cluster_env(env)
    rss = {n: _group_rss_kib(int(env[pid_key(n)])) // 1024 for n in ("containerd", "kubelet")}
    progress(f"node memory: kubelet {rss['kubelet']} MiB, containerd {rss['containerd']} MiB RSS")
    applied, deleted, ready_s = apply_nodes(state, rendered, progress)
    state.spec.write_text(rendered.text)
    summary = (f"simcluster up (kubelet runtime): spec {rendered.spec.name}, real Node {node.name} Ready, "
               f"{applied} fake Nodes applied and Ready in {ready_s:.1f}s, {progress.elapsed():.1f}s in all "
               f"(control plane {t_cp:.1f}s, images {t_images:.1f}s, node Ready {t_node:.1f}s; "
               f"kubelet {rss['kubelet']} MiB, containerd {rss['containerd']} MiB RSS)")
    print(summary, file=progress.out, flush=True)
    return summary


# --- down ---------------------------------------------------------------------------------------


def _remove_pods(paths: NodePaths, progress: Callable[[str], None]) -> None:
    """Kills and deletes every container containerd runs for the node (their shims exit with them)."""
    if not paths.containerd_socket.exists():
        return
    r = ctr(paths, "tasks", "ls", "-q", timeout=30)
    tasks = r.stdout.split() if r.returncode == 0 else []
    for task in tasks:
        ctr(paths, "tasks", "kill", "-s", "SIGKILL", task, timeout=30)
    for task in tasks:
        for _ in range(20):
            r = ctr(paths, "tasks", "delete", task, timeout=30)
            # containerd may clean a killed task up itself (its shim gone): "not found" is deleted too.
            if r.returncode == 0 or "not found" in r.stderr:
                break
            time.sleep(0.25)
    r = ctr(paths, "containers", "ls", "-q", timeout=30)
    containers = r.stdout.split() if r.returncode == 0 else []
    for c in containers:
        ctr(paths, "containers", "delete", c, timeout=30)
    if tasks or containers:
        progress(f"removed {len(tasks)} tasks and {len(containers)} containers of the node")


def _mounts_under(root: Path) -> list[str]:
    out = []
    for line in _read("/proc/mounts").splitlines():
        parts = line.split()
        if len(parts) >= 2:
            target = parts[1].replace("\\040", " ")
            if target == str(root) or target.startswith(str(root) + "/"):
                out.append(target)
    return out


def _clean_node(paths: NodePaths, cgroup_root: str, progress: Callable[[str], None]) -> None:
    """Unmounts what the kubelet and containerd left under the node directory (deepest first) and
    removes the node's cgroups (deepest first)."""
    # containerd 1.6 puts its shims' sockets in /run/containerd/s whatever its state dir: the
    # directories go when empty (another containerd's would not be).
    for d in (Path("/run/containerd/s"), Path("/run/containerd")):
        with contextlib.suppress(OSError):
            d.rmdir()
    mounts = sorted(_mounts_under(paths.root), key=len, reverse=True)
    for m in mounts:
        subprocess.run(["umount", "-l", m], capture_output=True)
    if mounts:
        progress(f"unmounted {len(mounts)} mounts under {paths.root}")
    for mount in cgroup_mounts(_read("/proc/mounts")):
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


def down_kubelet(state: StateDir, *, keep: bool, progress: Callable[[str], None]) -> int:
    """Removes the node's containers, stops the kubelet, containerd and kube-controller-manager, cleans
    mounts and cgroups, then the process runtime's ``down`` stops the rest. Returns how many ran."""
    env: Mapping[str, str] = state.read_cluster_env() or {}
    paths = NodePaths.under(state.root)
    stopped = 0
    kubelet_pid = env.get(pid_key("kubelet"), "")
    if kubelet_pid.isdigit() and stop_pid(int(kubelet_pid), "kubelet"):
        stopped += 1
        progress(f"stopped kubelet (pid {kubelet_pid})")
    _remove_pods(paths, progress)
    stop_host_processes(state, progress)
    unshare_mount(state.root / "hwemu")
    for proc in ("kube-proxy", "containerd", "node-lifecycle", "kube-controller-manager"):
        pid = env.get(pid_key(proc), "")
        if pid.isdigit() and stop_pid(int(pid), NODE_PROCESSES[proc]):
            stopped += 1
            progress(f"stopped {proc} (pid {pid})")
    _clean_node(paths, env.get("NODE_CGROUP_ROOT", ""), progress)
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


# --- the chart ----------------------------------------------------------------------------------

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


def _kubelet_env(state: StateDir, *images: str) -> dict[str, str]:
    env = state.read_cluster_env() or {}
    if env.get("SIMCLUSTER_RUNTIME") != "kubelet":
        raise KubeletFailure(f"no kubelet-runtime cluster in {state.root}; run SIMCLUSTER_RUNTIME=kubelet simcluster up")
    missing = [k for k in images if not env.get(k)]
    if missing:
        raise KubeletFailure(f"{', '.join(missing)} not in cluster.env: the images were not imported at up "
                             "(./pants package services/{agent,controller-manager,extender}:bin, then up again)")
    return env


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
    paths = NodePaths.under(state.root)
    r = ctr(paths, "tasks", "ls", timeout=30)
    if r.returncode != 0:
        raise KubeletFailure(f"ctr tasks ls failed: {(r.stdout + r.stderr).strip()[-400:]}")
    pids = task_pids(r.stdout)
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


def _mount_points() -> set[str]:
    out = set()
    for line in _read("/proc/self/mountinfo").splitlines():
        parts = line.split()
        if len(parts) > 4:
            out.add(parts[4].replace("\\040", " "))
    return out


def share_mount(path: Path, progress: Callable[[str], None]) -> None:
    """`path` as a mount of its own with shared propagation: the agent Pods mount it with
    HostToContainer propagation, which containerd refuses on a private mount (``path ... is mounted on
    "/" but it is not a shared or slave mount``); and a FUSE view mounted under it later (a simulator
    restart) then reaches the running Pods. Before the simulator starts: a plain bind would hide a
    view already mounted below."""
    path.mkdir(parents=True, exist_ok=True)
    if str(path) not in _mount_points():
        r = subprocess.run(["mount", "--rbind", str(path), str(path)], capture_output=True, text=True)
        if r.returncode != 0:
            raise KubeletFailure(f"mount --rbind {path} {path} failed: {r.stderr.strip()} (needs CAP_SYS_ADMIN)")
    r = subprocess.run(["mount", "--make-rshared", str(path)], capture_output=True, text=True)
    if r.returncode != 0:
        raise KubeletFailure(f"mount --make-rshared {path} failed: {r.stderr.strip()}")
    progress(f"{path} is a shared mount (the agent Pods' hostPath, HostToContainer propagation)")


def unshare_mount(path: Path) -> None:
    for _ in range(10):  # one lazy unmount per layer (a FUSE view of a killed simulator among them)
        if not any(m == str(path) or m.startswith(str(path) + "/") for m in _mount_points()):
            return
        subprocess.run(["umount", "-R", "-l", str(path)], capture_output=True)


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
        if f" {mountpoint} " not in _read("/proc/self/mounts"):
            break
        subprocess.run(["fusermount3", "-u", "-z", str(mountpoint)], capture_output=True)
    state.deploy_env.unlink(missing_ok=True)
