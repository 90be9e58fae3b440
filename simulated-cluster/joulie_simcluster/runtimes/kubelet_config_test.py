from __future__ import annotations

import hashlib
import json
import tarfile
import tomllib
from pathlib import Path

import pytest

from joulie_simcluster.runtimes import kubelet_images as ki
from joulie_simcluster.runtimes.kubelet_config import (
    AgentPod,
    KubeletFailure,
    NodePaths,
    NodeSettings,
    PodPlan,
    cgroup_mounts,
    cgroup_problems,
    chart_values,
    cni_conflist,
    container_id,
    containerd_config,
    fakesmi_wrapper,
    host_problems,
    kube_proxy_argv,
    kubelet_argv,
    kubelet_config,
    missing_capabilities,
    mounted_v1_controllers,
    node_ip,
    pod_env,
    pod_line,
    pod_process_name,
    snapshotter_for,
    task_pids,
    toml_text,
    v1_hierarchies,
)

PATHS = NodePaths.under(Path("/state/kl"))
NODE = NodeSettings(name="kl-node", cluster="kl", kubelet_port=10250, healthz_port=10248,
                    sandbox_image="joulie.local/pause:v1.35.4", runc="/usr/sbin/runc", cni_bin_dir="/usr/lib/cni")

# What this project's machines show: cgroup v1, cpu and cpuacct on separate hierarchies, no hugetlb.
PROC_CGROUPS = """#subsys_name\thierarchy\tnum_cgroups\tenabled
cpuset\t3\t1\t1
cpu\t1\t1\t1
cpuacct\t2\t1\t1
blkio\t7\t1\t1
memory\t4\t1\t1
devices\t5\t1\t1
freezer\t6\t1\t1
pids\t8\t1\t1
"""
PROC_MOUNTS = """tmpfs /sys/fs/cgroup tmpfs rw,relatime,mode=755 0 0
cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0
cgroup /sys/fs/cgroup/cpuacct cgroup rw,relatime,cpuacct 0 0
cgroup /sys/fs/cgroup/cpuset cgroup rw,relatime,cpuset 0 0
cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0
cgroup /sys/fs/cgroup/devices cgroup rw,relatime,devices 0 0
cgroup /sys/fs/cgroup/freezer cgroup rw,relatime,freezer 0 0
cgroup /sys/fs/cgroup/blkio cgroup rw,relatime,blkio 0 0
cgroup /sys/fs/cgroup/pids cgroup rw,relatime,pids 0 0
cgroup /sys/fs/cgroup/systemd cgroup rw,relatime,name=systemd 0 0
cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0
"""
# Every capability but CAP_SYS_RESOURCE (bit 24) in the bounding set.
STATUS_NO_SYS_RESOURCE = "CapInh:\t0000000000000000\nCapEff:\t000001fffeffffff\nCapBnd:\t000001fffeffffff\n"


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


def test_kubelet_config_allows_cgroup_v1_on_cgroupfs_and_never_collects_images() -> None:
    cfg = kubelet_config(PATHS, NODE, Path("/state/kl/pki/ca.crt"))
    assert cfg["failCgroupV1"] is False and cfg["cgroupDriver"] == "cgroupfs"
    assert cfg["cgroupRoot"] == "/joulie-kl"
    assert cfg["containerRuntimeEndpoint"] == "unix:///state/kl/kubelet/containerd/containerd.sock"
    assert cfg["imageGCHighThresholdPercent"] == 100 and cfg["imageGCLowThresholdPercent"] < 100
    assert (cfg["address"], cfg["port"], cfg["readOnlyPort"]) == (node_ip("kl"), 10250, 0)
    assert cfg["healthzBindAddress"] == "127.0.0.1"


def test_kubelet_argv_names_the_node_and_labels_it_for_the_infrastructure_pods() -> None:
    argv = kubelet_argv("/bin/kubelet", PATHS, NODE)
    assert argv[0] == "/bin/kubelet"
    assert "--hostname-override=kl-node" in argv and f"--node-ip={node_ip('kl')}" in argv
    assert "--node-labels=joulie.io/infra=true,joulie.io/hwemu-host=true" in argv
    assert "--root-dir=/state/kl/kubelet/root" in argv


def test_cni_bridge_name_fits_a_linux_interface_name() -> None:
    long = NodeSettings(**{**NODE.__dict__, "cluster": "a-very-long-cluster-name"})
    bridge = cni_conflist(PATHS, long)["plugins"][0]["bridge"]
    assert len(bridge) <= 15 and bridge.startswith("jl-")


def test_cgroup_checks_name_the_missing_controller() -> None:
    assert cgroup_problems("tmpfs", PROC_CGROUPS, PROC_MOUNTS) == []
    assert set(mounted_v1_controllers(PROC_MOUNTS)) >= {"cpu", "cpuacct", "memory", "pids"}
    no_pids_mount = "\n".join(line for line in PROC_MOUNTS.splitlines() if "pids" not in line)
    assert cgroup_problems("tmpfs", PROC_CGROUPS, no_pids_mount) == [
        "cgroup controller pids is not mounted (no cgroup v1 hierarchy with it in /proc/mounts)"]
    memory_off = PROC_CGROUPS.replace("memory\t4\t1\t1", "memory\t4\t1\t0")
    assert cgroup_problems("tmpfs", memory_off, PROC_MOUNTS) == ["cgroup controller memory is not enabled (/proc/cgroups)"]
    assert cgroup_problems("cgroup2fs", "", "") == []


def test_capabilities_missing_sys_resource_is_fine_missing_sys_admin_is_named() -> None:
    assert missing_capabilities(STATUS_NO_SYS_RESOURCE) == []
    no_admin = f"{1 << 21 ^ 0x1fffeffffff:016x}"
    assert missing_capabilities(f"CapEff:\t{no_admin}\nCapBnd:\t{no_admin}\n") == ["CAP_SYS_ADMIN"]
    assert "CAP_SYS_ADMIN" in missing_capabilities("")


def test_host_problems_lists_every_missing_piece() -> None:
    problems = host_problems(uid=1000, missing_binaries=["runc"], cgroup=["cgroup controller pids is not enabled"],
                             capabilities=["CAP_SYS_ADMIN"])
    assert problems == ["containerd and the kubelet run as root (uid 0); this is uid 1000", "missing binary: runc",
                        "cgroup controller pids is not enabled",
                        "capability CAP_SYS_ADMIN is missing (CapEff/CapBnd in /proc/self/status)"]


def test_snapshotter_and_socket_length() -> None:
    assert snapshotter_for("nodev\tsysfs\n\text4\nnodev\toverlay\n") == "overlayfs"
    assert snapshotter_for("nodev\tsysfs\n\text4\n") == "native"
    with pytest.raises(KubeletFailure, match="SIMCLUSTER_DIR"):
        NodePaths.under(Path("/" + "d" * 100)).check_socket()


def test_a_service_image_carries_the_unpacked_pex_root_as_its_last_layer(tmp_path: Path) -> None:
    base = tmp_path / "base.tar"
    with tarfile.open(base, "w") as tar:
        tar.addfile(tarfile.TarInfo("etc"))
    pex = tmp_path / "bin.pex"
    pex.write_bytes(b"PK pex")
    unpacked = tmp_path / "pexroot"
    (unpacked / "unzipped_pexes" / "abc").mkdir(parents=True)
    (unpacked / "unzipped_pexes" / "abc" / "__main__.py").write_text("print()")
    (unpacked / "unzipped_pexes" / "abc" / "__main__.py").chmod(0o644)
    (unpacked / "unzipped_pexes" / "abc" / "dep").symlink_to("../../installed_wheels/x")
    ref, archive = ki.build_service_archive(base, "agent", pex, tmp_path / "out", unpacked)
    assert ref == f"joulie.local/joulie-agent:dev-{hashlib.sha256(b'PK pex').hexdigest()[:12]}"
    with tarfile.open(archive) as tar:
        [entry] = json.loads(tar.extractfile("manifest.json").read())  # type: ignore[union-attr]
        config = json.loads(tar.extractfile(entry["Config"]).read())  # type: ignore[union-attr]
        last = tar.extractfile(entry["Layers"][-1]).read()  # type: ignore[union-attr]
    assert len(entry["Layers"]) == len(config["rootfs"]["diff_ids"]) == 3
    assert f"PEX_ROOT={ki.PEX_ROOT}" in config["config"]["Env"]
    (tmp_path / "last.tar").write_bytes(last)
    with tarfile.open(tmp_path / "last.tar") as tar:
        names = tar.getnames()
        main = tar.getmember("opt/joulie/.pex/unzipped_pexes/abc/__main__.py")
        link = tar.getmember("opt/joulie/.pex/unzipped_pexes/abc/dep")
    assert names[:3] == ["opt", "opt/joulie", "opt/joulie/.pex"] and main.mode == 0o644 and main.mtime == 0
    assert link.issym() and link.linkname == "../../installed_wheels/x"
    # Without an unpacked root: the base and the PEX alone.
    _, plain = ki.build_service_archive(base, "agent", pex, tmp_path / "out2")
    with tarfile.open(plain) as tar:
        assert len(json.loads(tar.extractfile("manifest.json").read())[0]["Layers"]) == 2  # type: ignore[union-attr]


def test_image_archive_is_a_docker_save_layout_with_matching_digests(tmp_path: Path) -> None:
    binary = tmp_path / "pause"
    binary.write_bytes(b"\x7fELF not really")
    ref, archive = ki.build_pause_archive(binary, "v1.35.4", tmp_path / "out")
    assert ref == "joulie.local/pause:v1.35.4"
    with tarfile.open(archive) as tar:
        manifest = json.loads(tar.extractfile("manifest.json").read())  # type: ignore[union-attr]
        [entry] = manifest
        assert entry["RepoTags"] == [ref]
        config_bytes = tar.extractfile(entry["Config"]).read()  # type: ignore[union-attr]
        assert entry["Config"] == hashlib.sha256(config_bytes).hexdigest() + ".json"
        config = json.loads(config_bytes)
        layer = tar.extractfile(entry["Layers"][0]).read()  # type: ignore[union-attr]
    assert config["rootfs"]["diff_ids"] == [f"sha256:{hashlib.sha256(layer).hexdigest()}"]
    assert config["config"]["Entrypoint"] == ["/pause"] and config["architecture"] == "amd64"
    (tmp_path / "layer.tar").write_bytes(layer)
    with tarfile.open(tmp_path / "layer.tar") as tar:
        member = tar.getmember("pause")
        assert member.mode == 0o755 and tar.extractfile(member).read() == binary.read_bytes()  # type: ignore[union-attr]
    # The same inputs give the same image (fixed times, sorted config).
    again = ki.build_pause_archive(binary, "v1.35.4", tmp_path / "again")[1]
    assert hashlib.sha256(again.read_bytes()).digest() == hashlib.sha256(archive.read_bytes()).digest()


def test_node_ip_is_stable_per_cluster_and_never_loopback() -> None:
    assert node_ip("kl") == node_ip("kl") != node_ip("other")
    a, b, c, d = (int(x) for x in node_ip("kl").split("."))
    assert (a, b) == (10, 89) and 0 <= c <= 255 and 1 <= d <= 254
    assert kubelet_config(PATHS, NODE, Path("/ca.crt"))["address"] == NODE.ip == node_ip("kl")


CLUSTER_ENV = {"API_PORT": "6443", "NODE_IP": "10.89.1.2", "PROMETHEUS_URL": "http://127.0.0.1:9090", "EXTENDER_PORT": "9876",
               "IMAGE_CONTROLLER_MANAGER": "joulie.local/joulie-controller-manager:dev-0123456789ab",
               "IMAGE_EXTENDER": "joulie.local/joulie-extender:dev-ba9876543210"}


def test_chart_values_use_the_imported_images_and_reach_the_api_on_loopback() -> None:
    v = chart_values(CLUSTER_ENV, "kl-node")
    cm, x = v["controllerManager"], v["schedulerExtender"]
    assert cm["image"] == {"repository": "joulie.local/joulie-controller-manager", "tag": "dev-0123456789ab",
                           "pullPolicy": "Never"}
    assert cm["hostNetwork"] is True and cm["nodeSelector"] == {"kubernetes.io/hostname": "kl-node"}
    assert cm["env"]["KUBERNETES_SERVICE_HOST"] == "127.0.0.1" and cm["env"]["KUBERNETES_SERVICE_PORT"] == "6443"
    assert cm["env"]["NODE_POWER_PROMETHEUS_ADDRESS"] == "http://127.0.0.1:9090"
    assert cm["env"]["METRICS_ADDR"] == "10.89.1.2:8081" and cm["metricsPort"] == 8081
    assert (x["enabled"], x["hostNetwork"], x["port"], x["nodeName"]) == (True, True, 9876, "kl-node")
    assert x["image"]["tag"] == "dev-ba9876543210" and v["agent"]["mode"] == "none"


def test_chart_values_with_the_pods_give_each_agent_its_port_tree_and_tool_host() -> None:
    env = {**CLUSTER_ENV, "IMAGE_AGENT": "joulie.local/joulie-agent:dev-aaaaaaaaaaaa"}
    pods = PodPlan(hwemu_root=Path("/s/hwemu"), files_view=True, fakesmi=Path("/s/bin/fakesmi.pex"),
                   agents=[AgentPod("intel-0", 31001), AgentPod("vm-0", 31002)],
                   agent_env={"RECONCILE_INTERVAL": "2s", "KUBERNETES_SERVICE_HOST": "elsewhere"},
                   controller_env={"RECONCILE_INTERVAL": "3s", "METRICS_ADDR": "0.0.0.0:1"}, controller_metrics_port=40000,
                   extender_env={"TWIN_STALENESS_THRESHOLD": "30s"})
    v = chart_values(env, "kl-node", pods)
    a = v["agent"]
    assert a["mode"] == "emulated" and a["image"]["tag"] == "dev-aaaaaaaaaaaa" and a["image"]["pullPolicy"] == "Never"
    assert a["env"]["RECONCILE_INTERVAL"] == "2s" and a["env"]["KUBERNETES_SERVICE_HOST"] == "127.0.0.1"
    e = a["emulated"]
    assert (e["hostNetwork"], e["hostRoot"], e["view"]) == (True, "/s/hwemu", "")
    assert e["fakesmiHostPath"] == "/s/hwemu/.tool-host/fakesmi" and pods.fakesmi_pex == Path("/s/hwemu/.tool-host/fakesmi.pex")
    assert e["nodes"] == [{"name": "intel-0", "metricsPort": 31001, "env": {"HWEMU_HOST_ROOT": "/s/hwemu/.tool-host/intel-0"}},
                          {"name": "vm-0", "metricsPort": 31002, "env": {"HWEMU_HOST_ROOT": "/s/hwemu/.tool-host/vm-0"}}]
    assert e["nodeSelector"] == {"kubernetes.io/hostname": "kl-node"}
    cm = v["controllerManager"]
    # The process runtime's settings, but the metrics address on the node's and this deploy's port.
    assert cm["env"]["RECONCILE_INTERVAL"] == "3s" and cm["env"]["METRICS_ADDR"] == "10.89.1.2:40000" and cm["metricsPort"] == 40000
    assert v["schedulerExtender"]["env"]["TWIN_STALENESS_THRESHOLD"] == "30s"
    fuse = chart_values(env, "kl-node", PodPlan(Path("/s/hwemu"), False, Path("/f"), [AgentPod("vm-0", 1)]))
    assert fuse["agent"]["emulated"]["view"] == "fuse"


def test_the_fakesmi_wrapper_passes_the_name_it_was_called_by() -> None:
    text = fakesmi_wrapper(Path("/s/hwemu/.tool-host/fakesmi.pex"))
    assert text.startswith("#!/bin/sh\n") and 'tool=$(basename "$0")' in text
    assert text.endswith("exec /usr/bin/env python3.11 '/s/hwemu/.tool-host/fakesmi.pex' \"$tool\" \"$@\"\n")
    assert "[ \"$tool\" = fakesmi ] && exec /usr/bin/env python3.11 '/s/hwemu/.tool-host/fakesmi.pex' \"$@\"" in text


def test_pod_env_leaves_the_host_paths_behind() -> None:
    env = {"PATH": "/usr/bin", "HOME": "/root", "PEX_ROOT": "/p", "KUBECONFIG": "/k", "METRICS_ADDR": "127.0.0.1:1",
           "GPU_TOOL_PATH": "/t", "NODE_NAME": "n", "ROOT": "/r", "HWEMU_HOST_ROOT": "/h", "RECONCILE_INTERVAL": "2s",
           "GPU_TOOL_TIMEOUT": "15", "LANG": "C.UTF-8"}
    assert pod_env(env) == {"RECONCILE_INTERVAL": "2s", "GPU_TOOL_TIMEOUT": "15", "LANG": "C.UTF-8"}


def test_a_chart_pod_is_named_as_the_process_runtime_names_its_process() -> None:
    def pod(component: str, node: str | None = None) -> dict[str, object]:
        meta: dict[str, object] = {"labels": {"app.kubernetes.io/component": component}}
        if node:
            meta["annotations"] = {"sim.joulie.io/node": node}
        return {"metadata": meta}

    assert pod_process_name(pod("agent", "intel-0")) == "agent-intel-0"
    assert pod_process_name(pod("agent")) is None
    assert pod_process_name(pod("controller-manager")) == "controller-manager"
    assert pod_process_name(pod("scheduler-extender")) == "extender"
    assert pod_process_name(pod("something-else")) is None and pod_process_name({}) is None


def test_the_running_container_and_its_task_pid() -> None:
    running = {"status": {"containerStatuses": [{"containerID": "containerd://abc", "state": {"running": {}}}]}}
    waiting = {"status": {"containerStatuses": [{"containerID": "containerd://old", "state": {"waiting": {}}}]}}
    assert container_id(running) == "abc" and container_id(waiting) is None and container_id({}) is None
    listing = "TASK    PID     STATUS\nabc     4242    RUNNING\ndef     4343    STOPPED\nghi     0       CREATED\n"
    assert task_pids(listing) == {"abc": 4242}


def test_pod_line_reads_like_kubectl_wide() -> None:
    pod = {"metadata": {"name": "joulie-extender-1"}, "spec": {"containers": [{}], "nodeName": "kl-node"},
           "status": {"phase": "Running", "podIP": "10.89.1.2",
                      "containerStatuses": [{"ready": True, "restartCount": 2}]}}
    line = pod_line(pod)
    assert line.split() == ["joulie-extender-1", "1/1", "Running", "restarts", "2", "ip", "10.89.1.2", "node", "kl-node"]
    assert pod_line({}).split()[:3] == ["?", "0/0", "?"]


def test_kube_proxy_leaves_the_hosts_sysctls_alone() -> None:
    argv = kube_proxy_argv(Path("/k"), NODE, 10256, 10249)
    assert "--proxy-mode=iptables" in argv and "--hostname-override=kl-node" in argv
    assert {"--conntrack-max-per-core=0", "--iptables-localhost-nodeports=false"} <= set(argv)
    assert {"--healthz-bind-address=127.0.0.1:10256", "--metrics-bind-address=127.0.0.1:10249"} <= set(argv)


def test_down_looks_for_the_node_cgroups_in_every_hierarchy_the_unified_one_too() -> None:
    mounts = cgroup_mounts(PROC_MOUNTS)
    assert "/sys/fs/cgroup/unified" in mounts and "/sys/fs/cgroup/systemd" in mounts
    assert "/sys/fs/cgroup" not in mounts  # the tmpfs holding them
    assert set(v1_hierarchies(PROC_MOUNTS)) == set(mounts) - {"/sys/fs/cgroup/unified"}
