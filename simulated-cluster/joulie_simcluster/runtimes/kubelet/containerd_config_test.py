from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from joulie_simcluster.runtimes.kubelet.containerd_config import cni_conflist, containerd_config, toml_text
from joulie_simcluster.runtimes.kubelet.node import NodePaths, NodeSettings

PATHS = NodePaths.under(Path("/state/kl"))
NODE = NodeSettings(name="kl-node", cluster="kl", kubelet_port=10250, healthz_port=10248,
                    sandbox_image="joulie.local/pause:v1.35.4", runc="/usr/sbin/runc", cni_bin_dir="/usr/lib/cni")


def test_containerd_config_is_toml_with_everything_under_the_node_dir() -> None:
    cfg = tomllib.loads(toml_text(containerd_config(PATHS, NODE)))
    assert cfg["version"] == 2
    assert cfg["root"] == "/state/kl/kubelet/containerd/root" and cfg["state"] == "/state/kl/kubelet/containerd/state"
    assert cfg["grpc"]["address"] == "/state/kl/kubelet/containerd/containerd.sock"
    cri = cfg["plugins"]["io.containerd.grpc.v1.cri"]
    assert cri["sandbox_image"] == "joulie.local/pause:v1.35.4"
    assert cri["restrict_oom_score_adj"] is True and cri["netns_mounts_under_state_dir"] is True
    runc = cri["containerd"]["runtimes"]["runc"]
    assert runc["runtime_type"] == "io.containerd.runc.v2"
    assert runc["options"] == {"SystemdCgroup": False, "BinaryName": "/usr/sbin/runc",
                               "Root": "/state/kl/kubelet/containerd/state/runc"}
    assert cri["cni"]["conf_dir"] == "/state/kl/kubelet/cni/net.d"
    assert "io.containerd.internal.v1.opt" in cfg["disabled_plugins"]


def test_toml_text_quotes_dotted_keys_and_refuses_what_it_cannot_write() -> None:
    assert tomllib.loads(toml_text({"a": {"x.y": {"k": "v\"q", "n": [1, 2], "b": False}}})) == {
        "a": {"x.y": {"k": "v\"q", "n": [1, 2], "b": False}}}
    with pytest.raises(TypeError):
        toml_text({"f": 1.5})


def test_cni_bridge_name_fits_a_linux_interface_name() -> None:
    long = NodeSettings(**{**NODE.__dict__, "cluster": "a-very-long-cluster-name"})
    bridge = cni_conflist(PATHS, long)["plugins"][0]["bridge"]
    assert len(bridge) <= 15 and bridge.startswith("jl-")
