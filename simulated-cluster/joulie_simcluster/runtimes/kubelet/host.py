"""The host under the kubelet node: its checks (root, binaries, cgroup controllers, capabilities,
read here and judged by :mod:`~joulie_simcluster.runtimes.kubelet.host_checks`), the optional tools
of the bootstrap (kubelet, kube-proxy, pause), the node's address on ``lo``, and the mounts the node
and the agent Pods need (a shared mount of the simulator's trees; what is mounted under a path).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from joulie_localcluster.tools import manifest_path, parse_env_file
from joulie_simcluster.runtimes.kubelet.host_checks import cgroup_problems, host_problems, missing_capabilities
from joulie_simcluster.runtimes.kubelet.node import KubeletFailure

HOST_BINARIES = ("containerd", "containerd-shim-runc-v2", "runc", "ctr")


def read_host_file(path: str) -> str:
    """A host file's text (/proc/...), empty when it cannot be read."""
    try:
        return Path(path).read_text()
    except OSError:
        return ""


# --- host checks ------------------------------------------------------------------------------


def check_host() -> dict[str, str]:
    """The host binaries by name; a KubeletFailure naming every missing piece otherwise."""
    found = {b: shutil.which(b) or "" for b in HOST_BINARIES}
    fs_type = subprocess.run(["stat", "-fc", "%T", "/sys/fs/cgroup"], capture_output=True, text=True).stdout.strip()
    problems = host_problems(
        uid=os.geteuid(),
        missing_binaries=[f"{b} (Debian: ci/install-system-packages --kubelet)" for b, p in found.items() if not p],
        cgroup=cgroup_problems(fs_type, read_host_file("/proc/cgroups"), read_host_file("/proc/mounts")),
        capabilities=missing_capabilities(read_host_file("/proc/self/status")),
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
    """The node's address on lo (node.node_ip says why)."""
    if _lo_has(ip):
        return
    r = subprocess.run(["ip", "addr", "add", f"{ip}/32", "dev", "lo"], capture_output=True, text=True)
    if r.returncode != 0:
        raise KubeletFailure(f"cannot give the node its address ({ip}/32 on lo): {r.stderr.strip()} (needs CAP_NET_ADMIN)")


def remove_node_ip(ip: str) -> None:
    if _lo_has(ip):
        subprocess.run(["ip", "addr", "del", f"{ip}/32", "dev", "lo"], capture_output=True)


# --- mounts -------------------------------------------------------------------------------------


def mounts_under(root: Path) -> list[str]:
    """Mount points at or under `root` (/proc/mounts)."""
    out = []
    for line in read_host_file("/proc/mounts").splitlines():
        parts = line.split()
        if len(parts) >= 2:
            target = parts[1].replace("\\040", " ")
            if target == str(root) or target.startswith(str(root) + "/"):
                out.append(target)
    return out


def _mount_points() -> set[str]:
    out = set()
    for line in read_host_file("/proc/self/mountinfo").splitlines():
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
