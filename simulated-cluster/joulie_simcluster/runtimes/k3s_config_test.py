from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from joulie_simcluster.runtimes import k3s_config
from joulie_simcluster.runtimes.k3s_config import K3sFailure, K3sPin, ServerConfig

PIN = K3sPin("rancher/k3s:v1.34.1-k3s1", "v1.34.1+k3s1")
PIN_135 = K3sPin("rancher/k3s:v1.35.0-k3s1", "v1.35.0+k3s1")


def _after(argv: list[str], flag: str) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == flag]


def test_run_argv_is_the_seed_container() -> None:
    argv = k3s_config.run_argv(ServerConfig("joulie-sim", PIN, agents=8))
    image_at = argv.index(PIN.image)
    opts, server = argv[:image_at], argv[image_at + 1:]
    assert opts[:2] == ["run", "-d"]
    assert _after(opts, "--name") == ["joulie-sim"]
    assert "--privileged" in opts
    assert _after(opts, "-v") == ["joulie-sim-k3s:/var/lib/rancher/k3s", "joulie-sim-hwemu:/var/lib/joulie-hwemu"]
    assert _after(opts, "--device") == ["/dev/fuse"]
    # The only published port: the API server's, on 127.0.0.1, at a port Docker picks.
    assert _after(opts, "-p") == ["127.0.0.1::6443"]
    assert server == [
        "server", "--disable", "traefik", "--disable", "metrics-server", "--node-name", "joulie-sim-infra",
        "--node-label", "joulie.io/infra=true", "--node-label", "joulie.io/hwemu-host=true",
        "--kubelet-arg=max-pods=110", "--kube-apiserver-arg=enable-admission-plugins=ExtendedResourceToleration",
    ]
    assert f"{k3s_config.LABEL_MAX_PODS}=110" in _after(opts, "--label")


def test_files_mode_gets_no_fuse_device_and_the_name_follows_simcluster_name() -> None:
    argv = k3s_config.run_argv(ServerConfig("other", PIN, agents=0, hwemu="files"))
    assert "--device" not in argv
    assert _after(argv, "-v") == ["other-k3s:/var/lib/rancher/k3s", "other-hwemu:/var/lib/joulie-hwemu"]
    assert "other-infra" in argv


@pytest.mark.parametrize(("agents", "pods", "cidr"), [
    (0, 110, None), (8, 110, None), (60, 110, None), (61, 111, None), (200, 250, None),
    (201, 251, "10.64.0.0/12"), (950, 1000, "10.64.0.0/12"),
])
def test_pod_capacity(agents: int, pods: int, cidr: str | None) -> None:
    cap = k3s_config.pod_capacity(agents)
    assert (cap.max_pods, cap.cluster_cidr) == (pods, cidr)
    args = k3s_config.server_args(ServerConfig("s", PIN, agents))
    assert f"--kubelet-arg=max-pods={pods}" in args
    if cidr:
        assert _after(args, "--cluster-cidr") == [cidr]
        assert "--kube-controller-manager-arg=node-cidr-mask-size-ipv4=22" in args
    else:
        assert "--cluster-cidr" not in args


def test_beyond_1000_pods_fails_split_across_k3s_agents() -> None:
    with pytest.raises(K3sFailure, match="split across k3s agents"):
        k3s_config.pod_capacity(951)


def test_cgroup_v1_flag_only_for_k3s_135_and_later() -> None:
    assert k3s_config.is_cgroup_v1("tmpfs\n") and not k3s_config.is_cgroup_v1("cgroup2fs")
    flag = "--kubelet-arg=fail-cgroupv1=false"
    assert flag not in k3s_config.server_args(ServerConfig("s", PIN, 1, cgroup_v1=True))
    assert flag in k3s_config.server_args(ServerConfig("s", PIN_135, 1, cgroup_v1=True))
    assert flag not in k3s_config.server_args(ServerConfig("s", PIN_135, 1, cgroup_v1=False))


def test_scheduler_config_is_mounted_and_passed(tmp_path: Path) -> None:
    cfg = tmp_path / "sched.yaml"
    cfg.write_text("{}")
    argv = k3s_config.run_argv(ServerConfig("s", PIN, 1, scheduler_config=cfg))
    assert f"{cfg}:{k3s_config.SCHEDULER_CONFIG_IN_CONTAINER}:ro" in _after(argv, "-v")
    assert f"--kube-scheduler-arg=config={k3s_config.SCHEDULER_CONFIG_IN_CONTAINER}" in argv


def test_inotify_warning_names_the_limit_only_when_agents_exceed_it(tmp_path: Path) -> None:
    assert k3s_config.inotify_warning(8, 128) is None  # the smoke spec fits in the common default
    assert k3s_config.inotify_warning(500, None) is None  # unreadable: nothing to say
    msg = k3s_config.inotify_warning(100, 128)
    assert msg is not None
    assert "fs.inotify.max_user_instances=128" in msg
    assert "sysctl fs.inotify.max_user_instances" in msg and "never changes host settings" in msg
    limit = tmp_path / "max_user_instances"
    limit.write_text("8192\n")
    assert k3s_config.read_inotify_limit(limit) == 8192
    assert k3s_config.read_inotify_limit(tmp_path / "absent") is None


def test_load_pin_checks_the_tag_against_the_version(tmp_path: Path) -> None:
    f = tmp_path / "versions.env"
    f.write_text("# c\nK3S_IMAGE=rancher/k3s:v1.34.1-k3s1\nK3S_VERSION=v1.34.1+k3s1\n")
    assert k3s_config.load_pin(f) == PIN and PIN.minor == (1, 34)
    f.write_text("K3S_IMAGE=rancher/k3s:v1.35.0-k3s1\nK3S_VERSION=v1.34.1+k3s1\n")
    with pytest.raises(K3sFailure, match="not tagged with K3S_VERSION"):
        k3s_config.load_pin(f)
    f.write_text("KWOK_VERSION=v0.8.0\n")
    with pytest.raises(K3sFailure, match="K3S_IMAGE, K3S_VERSION not set"):
        k3s_config.load_pin(f)


def test_kubeconfig_server_is_rewritten_to_the_published_port() -> None:
    text = yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "default", "cluster": {"server": "https://127.0.0.1:6443", "certificate-authority-data": "Q0E="}}],
        "users": [{"name": "default", "user": {"client-certificate-data": "Qw==", "client-key-data": "Sw=="}}],
        "contexts": [{"name": "default", "context": {"cluster": "default", "user": "default"}}],
        "current-context": "default",
    })
    out = yaml.safe_load(k3s_config.rewrite_kubeconfig(text, 32771))
    assert out["clusters"][0]["cluster"] == {"server": "https://127.0.0.1:32771", "certificate-authority-data": "Q0E="}
    assert out["users"][0]["user"]["client-key-data"] == "Sw=="
    assert k3s_config.published_port("127.0.0.1:32771\n") == 32771
    with pytest.raises(K3sFailure, match="not published on 127.0.0.1"):
        k3s_config.published_port("0.0.0.0:32771\n")


def test_images_import_one_at_a_time_with_three_attempts() -> None:
    calls: list[str] = []
    fails = {"b": 2}

    def import_one(ref: str) -> tuple[bool, str]:
        calls.append(ref)
        if fails.get(ref, 0) > 0:
            fails[ref] -= 1
            return False, "ctr: content digest not found"
        return True, ""

    log: list[str] = []
    done = k3s_config.import_images(["a", "b", "a", "c"], import_one, lambda: True, log.append)
    assert calls == ["a", "b", "b", "b", "c"]
    assert done == [("a", 1), ("b", 3), ("c", 1)]
    fails["d"] = 3
    with pytest.raises(K3sFailure, match="importing d failed 3 times"):
        k3s_config.import_images(["d"], import_one, lambda: True, log.append)
    with pytest.raises(K3sFailure, match="not running"):
        k3s_config.import_images(["e"], import_one, lambda: False, log.append)
    assert k3s_config.import_argv("joulie-sim") == ["exec", "-i", "joulie-sim", "k3s", "ctr", "-n", "k8s.io", "images", "import", "-"]


def test_airgap_import_is_waited_for_by_its_log_line() -> None:
    bundle = "k3s-airgap-images-amd64.tar.zst"
    assert not k3s_config.airgap_imported("starting containerd\n", [bundle])
    line = f'level=info msg="Imported images from {k3s_config.AIRGAP_DIR}/{bundle} in 8.1s"'
    assert k3s_config.airgap_imported(line, [bundle]) and k3s_config.airgap_imported("", [])
