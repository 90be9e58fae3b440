"""containerd as data: the configuration (rootful, its own root, state and socket, cgroupfs, the
locally built sandbox image), its command line, and the CNI network list containerd needs to call
the node's network ready. Pure: :mod:`joulie_simcluster.runtimes.kubelet.containerd` runs it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from joulie_simcluster.runtimes.kubelet.node import NodePaths, NodeSettings


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
        "name": f"joulie-{node.cluster}" + (f"-{node.index}" if node.index else ""),
        "plugins": [
            {
                "type": "bridge",
                "bridge": node.bridge,  # one per node: two kubelets' Pods never share a bridge
                "isGateway": True,
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {"type": "host-local", "ranges": [[{"subnet": node.pod_subnet}]],
                         "routes": [{"dst": "0.0.0.0/0"}], "dataDir": str(paths.cni_ipam_dir)},
            },
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }
