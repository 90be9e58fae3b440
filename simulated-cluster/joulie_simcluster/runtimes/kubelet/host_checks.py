"""The host checks of the kubelet node, as data: what keeps this host from running it (root, the
binaries, the cgroup controllers, the capabilities), each reason naming the missing piece, and the
snapshotter the kernel allows. Pure: the caller (:mod:`joulie_simcluster.runtimes.kubelet.host`)
reads the host files and passes their text in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from joulie_simcluster.runtimes.kubelet.node import KubeletFailure

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


BASE_ROOTFS_BUILDER = "ci/images/build.py"
"""``ci/images``' builder, relative to the repository root (where ``./simcluster`` runs)."""
BASE_ROOTFS_COMMAND = "PYTHONPATH=ci python3 -m images.build --base-rootfs"
"""The one step of ``ci/images`` the node's images need: the debootstrap rootfs tarball of its Debian
base, without a Docker engine (as root; debootstrap fetches from this machine's apt mirror)."""


def image_inputs(base_cached: bool, missing_pexes: Sequence[str], builder_here: bool, cache: str) -> bool:
    """Whether ``up`` must make the Debian base rootfs first (``BASE_ROOTFS_COMMAND``) before it
    builds the chart's images; a :class:`KubeletFailure` naming each command to run when it cannot
    (a service PEX missing, or no base and no builder). Asked before anything starts, so a fresh
    machine never gets as far as ``deploy`` to be told the images are missing."""
    problems = []
    if missing_pexes:
        problems.append(f"no PEX for {', '.join(missing_pexes)}: run ./pants package "
                        + " ".join(f"services/{c}:bin" for c in missing_pexes)
                        + " (./simcluster up does, unless SIMCLUSTER_NO_BUILD=1)")
    if not base_cached and not builder_here:
        problems.append(f"the Debian base rootfs is not cached ({cache}/images/base-bookworm-*.tar) and "
                        f"{BASE_ROOTFS_BUILDER} is not here to make it: run simcluster from the repository root, "
                        f"or there: {BASE_ROOTFS_COMMAND}")
    if problems:
        raise KubeletFailure("the chart's images cannot be made: " + "; ".join(problems))
    return not base_cached
