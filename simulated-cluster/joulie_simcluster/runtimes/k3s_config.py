"""The k3s runtime's container as data: the pinned image and version, the pod capacity the emulated
agents need, the host checks (cgroup v1, inotify), the ``docker run`` and k3s server arguments, the
kubeconfig rewritten to the published port and the image import plan. Pure but for reading two host
files; :mod:`joulie_simcluster.runtimes.k3s` drives the docker CLI with it.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from joulie_localcluster.controlplane import EXTENDED_RESOURCE_TOLERATION
from joulie_localcluster.tools import parse_env_file
from joulie_simcluster.errors import RuntimeFailure
from joulie_simcluster.settings import HwemuMode

K3S_DATA = "/var/lib/rancher/k3s"
HWEMU_ROOT = "/var/lib/joulie-hwemu"
AIRGAP_DIR = f"{K3S_DATA}/agent/images"  # k3s imports every tarball here as containerd starts
AIRGAP_BUNDLE = "k3s-airgap-images-amd64"
KUBECONFIG_IN_CONTAINER = "/etc/rancher/k3s/k3s.yaml"
API_PORT = 6443
IMPORT_ATTEMPTS = 3

# Pod capacity (seed "Requirements"): agents + 50, at least 110; a /24 per Node holds 250 pods, a /22
# (cluster CIDR 10.64.0.0/12) 1000; beyond that the agents must be split across k3s agents.
POD_HEADROOM = 50
MIN_MAX_PODS = 110
MAX_PODS_PER_24 = 250
MAX_PODS_LIMIT = 1000
LARGE_CLUSTER_CIDR = "10.64.0.0/12"
LARGE_NODE_CIDR_MASK = 22

# inotify instances the infra kubelet's pods share with the host's own programs: an estimate of what
# k3s, containerd, the infrastructure pods (KWOK, Prometheus, the simulator, the controller manager,
# the extender, CoreDNS, local-path) and the host itself hold, plus one per emulated agent's pod.
INOTIFY_RESERVED = 48
INOTIFY_LIMIT_FILE = Path("/proc/sys/fs/inotify/max_user_instances")

# Labels on the container: which cluster it is and the pod capacity it was created for.
LABEL_CLUSTER = "sim.joulie.io/simcluster"
LABEL_MAX_PODS = "sim.joulie.io/max-pods"


class K3sFailure(RuntimeFailure):
    """The k3s runtime cannot go on; the message says what is missing and how to provide it."""


# --- the pinned k3s -----------------------------------------------------------------------------

_VERSION_RE = re.compile(r"^v(\d+)\.(\d+)\.(\d+)[+-]k3s(\d+)$")


def parse_k3s_version(version: str) -> tuple[int, int, int]:
    """``v1.34.1+k3s1`` (or the image tag's ``v1.34.1-k3s1``) -> (1, 34, 1)."""
    m = _VERSION_RE.match(version)
    if not m:
        raise K3sFailure(f"not a k3s version: {version!r} (expected like v1.34.1+k3s1)")
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


@dataclass(frozen=True)
class K3sPin:
    image: str
    version: str

    @property
    def minor(self) -> tuple[int, int]:
        major, minor, _ = parse_k3s_version(self.version)
        return major, minor


def load_pin(versions_file: Path) -> K3sPin:
    """K3S_IMAGE and K3S_VERSION from versions.env; the image tag must be the version."""
    try:
        env = parse_env_file(versions_file.read_text(), source=str(versions_file))
    except OSError as e:
        raise K3sFailure(f"{versions_file}: cannot read: {e.strerror} (run from the repository root)") from e
    missing = [k for k in ("K3S_IMAGE", "K3S_VERSION") if not env.get(k)]
    if missing:
        raise K3sFailure(f"{versions_file}: {', '.join(missing)} not set")
    pin = K3sPin(env["K3S_IMAGE"], env["K3S_VERSION"])
    parse_k3s_version(pin.version)
    tag = pin.image.rsplit(":", 1)[-1] if ":" in pin.image.rsplit("/", 1)[-1] else ""
    if tag != pin.version.replace("+", "-"):
        raise K3sFailure(f"{versions_file}: K3S_IMAGE={pin.image} is not tagged with K3S_VERSION={pin.version}")
    return pin


# --- host checks ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PodCapacity:
    max_pods: int
    cluster_cidr: str | None = None  # None: k3s's default (10.42.0.0/16, a /24 per Node)
    node_cidr_mask: int | None = None


def pod_capacity(agents: int) -> PodCapacity:
    """The infra kubelet's capacity for `agents` emulated agents (each one a pod on it)."""
    if agents < 0:
        raise ValueError(f"agents must be >= 0, got {agents}")
    pods = max(MIN_MAX_PODS, agents + POD_HEADROOM)
    if pods > MAX_PODS_LIMIT:
        raise K3sFailure(
            f"{agents} emulated agents need {pods} pods on the infra Node, more than one k3s kubelet holds "
            f"({MAX_PODS_LIMIT} with a /{LARGE_NODE_CIDR_MASK} per Node): split across k3s agents"
        )
    if pods > MAX_PODS_PER_24:
        return PodCapacity(pods, LARGE_CLUSTER_CIDR, LARGE_NODE_CIDR_MASK)
    return PodCapacity(pods)


def is_cgroup_v1(fs_type: str) -> bool:
    """``stat -fc %T /sys/fs/cgroup`` prints tmpfs on cgroup v1 (cgroup2fs on v2)."""
    return fs_type.strip() == "tmpfs"


def host_cgroup_fs_type() -> str:
    r = subprocess.run(["stat", "-fc", "%T", "/sys/fs/cgroup"], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else ""


def inotify_needed(agents: int) -> int:
    return INOTIFY_RESERVED + agents


def read_inotify_limit(path: Path = INOTIFY_LIMIT_FILE) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def inotify_limit_hint(limit: int | None) -> str:
    now = "unknown" if limit is None else str(limit)
    return (
        f"fs.inotify.max_user_instances is {now} on this host; every pod of the cluster runs on the one "
        "infra kubelet and shares it with the host's own programs, and a k3s that gets no instance exits "
        "as it starts. The harness never changes host settings: check it with "
        "`sysctl fs.inotify.max_user_instances` and raise it by hand before a large run"
    )


def inotify_warning(agents: int, limit: int | None) -> str | None:
    """The warning for `agents` emulated agents under the host's limit, or None when they fit."""
    need = inotify_needed(agents)
    if limit is None or need <= limit:
        return None
    return (
        f"WARNING: {agents} emulated agents need about {need} inotify instances, more than "
        f"fs.inotify.max_user_instances={limit}. " + inotify_limit_hint(limit)
        + f" (for example `sysctl -w fs.inotify.max_user_instances={max(512, 2 * need)}`)"
    )


# --- the container ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ServerConfig:
    name: str
    pin: K3sPin
    agents: int
    hwemu: HwemuMode = "fuse"
    cgroup_v1: bool = False
    # A kube-scheduler configuration (the extender's), mounted read-only and passed to k3s.
    scheduler_config: Path | None = None

    @property
    def node_name(self) -> str:
        return f"{self.name}-infra"

    @property
    def volumes(self) -> tuple[str, str]:
        return f"{self.name}-k3s", f"{self.name}-hwemu"


SCHEDULER_CONFIG_IN_CONTAINER = "/etc/joulie/scheduler-config.yaml"


def server_args(cfg: ServerConfig) -> list[str]:
    """The k3s server's own arguments."""
    cap = pod_capacity(cfg.agents)
    args = [
        "server",
        "--disable", "traefik",
        "--disable", "metrics-server",
        "--node-name", cfg.node_name,
        "--node-label", "joulie.io/infra=true",
        "--node-label", "joulie.io/hwemu-host=true",
        f"--kubelet-arg=max-pods={cap.max_pods}",
        # As the process runtime's kube-apiserver: GPU-asking Pods tolerate the GPU Nodes' taint.
        f"--kube-apiserver-arg=enable-admission-plugins={EXTENDED_RESOURCE_TOLERATION}",
    ]
    if cap.cluster_cidr is not None:
        args += ["--cluster-cidr", cap.cluster_cidr, f"--kube-controller-manager-arg=node-cidr-mask-size-ipv4={cap.node_cidr_mask}"]
    if cfg.cgroup_v1 and cfg.pin.minor >= (1, 35):
        args.append("--kubelet-arg=fail-cgroupv1=false")
    if cfg.scheduler_config is not None:
        args.append(f"--kube-scheduler-arg=config={SCHEDULER_CONFIG_IN_CONTAINER}")
    return args


def container_args(cfg: ServerConfig) -> list[str]:
    """``docker run -d`` / ``docker create`` arguments after the verb: the options, image and k3s args."""
    k3s_vol, hwemu_vol = cfg.volumes
    args = [
        "--name", cfg.name,
        "--hostname", cfg.node_name,
        "--privileged",
        "--label", f"{LABEL_CLUSTER}={cfg.name}",
        "--label", f"{LABEL_MAX_PODS}={pod_capacity(cfg.agents).max_pods}",
        "--tmpfs", "/run",
        "--tmpfs", "/var/run",
        "-v", f"{k3s_vol}:{K3S_DATA}",
        "-v", f"{hwemu_vol}:{HWEMU_ROOT}",
        "-p", f"127.0.0.1::{API_PORT}",
    ]
    if cfg.hwemu == "fuse":
        args += ["--device", "/dev/fuse"]
    if cfg.scheduler_config is not None:
        args += ["-v", f"{cfg.scheduler_config.resolve()}:{SCHEDULER_CONFIG_IN_CONTAINER}:ro"]
    return [*args, cfg.pin.image, *server_args(cfg)]


def run_argv(cfg: ServerConfig) -> list[str]:
    return ["run", "-d", *container_args(cfg)]


def shared_mount_argv(name: str) -> list[str]:
    """Makes the hwemu root a shared mount in the container (FUSE views reach the agents' pods)."""
    return ["exec", name, "mount", "--make-rshared", HWEMU_ROOT]


def import_argv(name: str) -> list[str]:
    """Imports one image tarball (stdin) into the cluster's containerd."""
    return ["exec", "-i", name, "k3s", "ctr", "-n", "k8s.io", "images", "import", "-"]


def import_plan(refs: Sequence[str]) -> list[str]:
    """The images to import, one at a time, in order, each once."""
    out: list[str] = []
    for ref in refs:
        if not ref or ref.strip() != ref:
            raise ValueError(f"not an image reference: {ref!r}")
        if ref not in out:
            out.append(ref)
    return out


def airgap_imported(k3s_log: str, bundles: Sequence[str]) -> bool:
    """Whether k3s has logged the import of every air-gap bundle (``Imported images from <path>``)."""
    return all(f"Imported images from {AIRGAP_DIR}/{b}" in k3s_log for b in bundles)


def published_port(docker_port_output: str) -> int:
    """The host port of ``docker port <name> 6443/tcp`` (``127.0.0.1:32768``)."""
    for line in docker_port_output.splitlines():
        host, sep, port = line.strip().rpartition(":")
        if sep and host == "127.0.0.1" and port.isdigit():
            return int(port)
    raise K3sFailure(f"the API server is not published on 127.0.0.1: docker port printed {docker_port_output.strip()!r}")


def rewrite_kubeconfig(text: str, port: int) -> str:
    """k3s's kubeconfig with every cluster's server at ``https://127.0.0.1:<port>``."""
    cfg = yaml.safe_load(text)
    clusters = cfg.get("clusters") if isinstance(cfg, dict) else None
    if not clusters:
        raise K3sFailure("the k3s kubeconfig names no cluster")
    for entry in clusters:
        entry["cluster"]["server"] = f"https://127.0.0.1:{port}"
    return str(yaml.safe_dump(cfg, sort_keys=False))


def import_images(
    refs: Sequence[str],
    import_one: Callable[[str], tuple[bool, str]],
    running: Callable[[], bool],
    progress: Callable[[str], None],
    attempts: int = IMPORT_ATTEMPTS,
) -> list[tuple[str, int]]:
    """Imports `refs` one at a time; a failed import is tried again, `attempts` times in all, while
    the container runs. Returns (ref, attempts used) per image."""
    done = []
    for ref in import_plan(refs):
        last = ""
        for attempt in range(1, attempts + 1):
            if not running():
                raise K3sFailure(f"importing {ref}: the k3s container is not running")
            ok, last = import_one(ref)
            if ok:
                progress(f"imported {ref}" + (f" (attempt {attempt})" if attempt > 1 else ""))
                done.append((ref, attempt))
                break
            progress(f"import of {ref} failed (attempt {attempt}/{attempts}): {last.strip()[-300:]}")
        else:
            raise K3sFailure(f"importing {ref} failed {attempts} times; last error: {last.strip()[-800:]}")
    return done
