from __future__ import annotations

from pathlib import Path

import pytest

from joulie_simcluster.runtimes.kubelet.host_checks import (
    cgroup_mounts,
    cgroup_problems,
    host_problems,
    image_inputs,
    missing_capabilities,
    mounted_v1_controllers,
    snapshotter_for,
    v1_hierarchies,
)
from joulie_simcluster.runtimes.kubelet.node import KubeletFailure, NodePaths

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


def test_down_looks_for_the_node_cgroups_in_every_hierarchy_the_unified_one_too() -> None:
    mounts = cgroup_mounts(PROC_MOUNTS)
    assert "/sys/fs/cgroup/unified" in mounts and "/sys/fs/cgroup/systemd" in mounts
    assert "/sys/fs/cgroup" not in mounts  # the tmpfs holding them
    assert set(v1_hierarchies(PROC_MOUNTS)) == set(mounts) - {"/sys/fs/cgroup/unified"}


def test_a_fresh_machine_gets_its_base_made_at_up_or_the_exact_commands() -> None:
    cache = "/root/.cache/joulie"
    # Empty images cache, the builder here: up makes the base first (ci/images' step).
    assert image_inputs(False, [], True, cache) is True
    assert image_inputs(True, [], True, cache) is False and image_inputs(True, [], False, cache) is False
    with pytest.raises(KubeletFailure) as err:
        image_inputs(False, [], False, cache)
    assert f"not cached ({cache}/images/base-bookworm-*.tar)" in str(err.value)
    assert "PYTHONPATH=ci python3 -m images.build --base-rootfs" in str(err.value)
    with pytest.raises(KubeletFailure) as err:
        image_inputs(True, ["agent", "extender"], True, cache)
    assert "no PEX for agent, extender: run ./pants package services/agent:bin services/extender:bin" in str(err.value)
    with pytest.raises(KubeletFailure) as err:  # every missing piece at once
        image_inputs(False, ["agent"], False, cache)
    assert "services/agent:bin" in str(err.value) and "--base-rootfs" in str(err.value)
