"""The k3s runtime of simcluster: one privileged k3s server in Docker (seed "Architecture").

The container ``$SIMCLUSTER_NAME`` runs the k3s image pinned in ``versions.env`` (``K3S_IMAGE``,
``K3S_VERSION``). Its kubelet is the only real Node, ``<name>-infra`` (``joulie.io/infra=true``,
``joulie.io/hwemu-host=true``). The k3s state and the hwemu trees live in the named volumes
``<name>-k3s`` and ``<name>-hwemu``; in ``fuse`` mode the container gets ``/dev/fuse`` and the hwemu
root is made a shared mount in it. The only published port is the API server's, on 127.0.0.1 at a
port Docker picks; the kubeconfig is ``$SIMCLUSTER_DIR/kubeconfig`` with its server rewritten to it.

The container as data (argv, pod capacity, cgroup v1, inotify, kubeconfig, import plan) is
:mod:`joulie_simcluster.runtimes.k3s_config`; this module (:func:`up_k3s`, :func:`down_k3s`) drives
the ``docker`` CLI with it. Where the k3s image is not
in the engine and cannot be pulled, :func:`up_k3s` stops with a :class:`K3sFailure` naming the image
and how to provide it (see K3S.md).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import shutil
import subprocess
import tarfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kubernetes import client as k8s

from joulie_simcluster.context import Context, RenderedSpec
from joulie_simcluster.progress import Progress
from joulie_simcluster.runtimes import process
from joulie_simcluster.runtimes.k3s_config import (
    AIRGAP_BUNDLE,
    AIRGAP_DIR,
    API_PORT,
    HWEMU_ROOT,
    K3S_DATA,
    KUBECONFIG_IN_CONTAINER,
    LABEL_MAX_PODS,
    K3sFailure,
    ServerConfig,
    airgap_imported,
    container_args,
    host_cgroup_fs_type,
    import_argv,
    import_images,
    import_plan,
    inotify_limit_hint,
    inotify_warning,
    is_cgroup_v1,
    load_pin,
    pod_capacity,
    published_port,
    read_inotify_limit,
    rewrite_kubeconfig,
    run_argv,
    shared_mount_argv,
)
from joulie_simcluster.runtimes.kube import apply_nodes, core_api, list_nodes, node_ready
from joulie_simcluster.runtimes.runtime import K3S, RECORD_KEY, StopDeployed, UpRequest
from joulie_simcluster.settings import HwemuMode
from joulie_simcluster.state import StateDir

# --- the docker CLI ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Docker:
    cli: str
    host: str | None = None  # None: DOCKER_HOST or the CLI's default socket

    def argv(self, *args: str) -> list[str]:
        return [self.cli, *(["-H", self.host] if self.host else []), *args]

    def run(self, *args: str, input_bytes: bytes | None = None, timeout: float | None = 120) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(self.argv(*args), input=input_bytes, capture_output=True, timeout=timeout)

    def out(self, *args: str) -> tuple[int, str]:
        r = self.run(*args)
        return r.returncode, (r.stdout + r.stderr).decode(errors="replace")

    @property
    def where(self) -> str:
        return self.host or os.environ.get("DOCKER_HOST") or "the default socket unix:///var/run/docker.sock"


def find_docker(host: str | None = None) -> Docker:
    cli = shutil.which("docker")
    if cli is None:
        raise K3sFailure("the k3s runtime needs Docker: the docker CLI is not on PATH (Debian: apt-get install docker.io)")
    return Docker(cli, host)


def check_engine(docker: Docker) -> str:
    """The engine's version; a K3sFailure naming DOCKER_HOST when no engine answers."""
    rc, out = docker.out("version", "--format", "{{.Server.Version}}")
    if rc != 0:
        raise K3sFailure(
            f"no Docker engine answers at {docker.where} (DOCKER_HOST={os.environ.get('DOCKER_HOST', '')!r}): "
            f"{out.strip()[-400:]}. Start dockerd (or point DOCKER_HOST at a running engine); "
            "the k3s runtime needs one that may run --privileged containers"
        )
    return out.strip()


def missing_image_message(image: str, pull_error: str, where: str) -> str:
    return (
        f"the k3s image {image} (K3S_IMAGE in versions.env) is not in the Docker engine at {where}, and "
        f"`docker pull {image}` failed: {pull_error.strip()[-400:]}. Provide it: on a machine with registry "
        f"access `docker pull {image} && docker save {image} -o k3s-image.tar`, then here "
        f"`docker load -i k3s-image.tar`; or give the engine a registry mirror (dockerd --registry-mirror or "
        "/etc/docker/daemon.json \"registry-mirrors\") that serves it. The k3s system images (pause, CoreDNS, "
        "local-path) come from the release's air-gap bundle k3s-airgap-images-amd64.tar.zst, put in "
        "$SIMCLUSTER_DIR/images/, when the cluster cannot pull them either"
    )


def ensure_image(docker: Docker, image: str, progress: Callable[[str], None]) -> None:
    """The image is in the engine, or is pulled once; otherwise a K3sFailure says how to provide it."""
    if docker.run("image", "inspect", image).returncode == 0:
        return
    progress(f"{image} is not in the engine: docker pull {image}")
    r = docker.run("pull", image, timeout=900)
    if r.returncode != 0:
        raise K3sFailure(missing_image_message(image, (r.stderr or r.stdout).decode(errors="replace"), docker.where))


def _inspect(docker: Docker, name: str) -> dict[str, str] | None:
    fmt = "{{.State.Status}}|{{.State.ExitCode}}|{{.Config.Image}}|{{index .Config.Labels \"" + LABEL_MAX_PODS + "\"}}"
    rc, out = docker.out("inspect", "-f", fmt, name)
    if rc != 0:
        return None
    status, code, image, max_pods = [*out.strip().split("|"), "", "", "", ""][:4]
    return {"status": status, "exit_code": code, "image": image, "max_pods": max_pods}


def _running(docker: Docker, name: str) -> bool:
    info = _inspect(docker, name)
    return info is not None and info["status"] == "running"


def _log_tail(docker: Docker, name: str, lines: int = 40) -> str:
    return docker.out("logs", "--tail", str(lines), name)[1]


def _copy_airgap(docker: Docker, name: str, bundle: Path) -> None:
    """Streams the bundle into the container's air-gap directory (a tar stream creates the parents)."""
    proc = subprocess.Popen(docker.argv("cp", "-", f"{name}:{K3S_DATA}"), stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stderr is not None
    try:
        with tarfile.open(fileobj=proc.stdin, mode="w|") as tar:
            for part in ("agent", "agent/images"):
                info = tarfile.TarInfo(part)
                info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, int(time.time())
                tar.addfile(info)
            tar.add(str(bundle), arcname=f"agent/images/{bundle.name}")
    except BrokenPipeError:
        pass  # docker cp stopped reading: its exit status and stderr say why
    finally:
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.close()
    err = proc.stderr.read().decode(errors="replace")
    if proc.wait() != 0:
        raise K3sFailure(f"copying {bundle} into {name}:{AIRGAP_DIR}: {err.strip()}")


def default_airgap_bundle(state: StateDir) -> Path | None:
    """``$SIMCLUSTER_DIR/images/k3s-airgap-images-amd64.tar[.zst]`` when present."""
    for suffix in (".tar.zst", ".tar"):
        path = state.root / "images" / f"{AIRGAP_BUNDLE}{suffix}"
        if path.is_file():
            return path
    return None


def _import_one(docker: Docker, name: str) -> Callable[[str], tuple[bool, str]]:
    def run(ref: str) -> tuple[bool, str]:
        save = subprocess.Popen(docker.argv("save", ref), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        imp = subprocess.run(docker.argv(*import_argv(name)), stdin=save.stdout, capture_output=True, timeout=900)
        if save.stdout is not None:
            save.stdout.close()
        save_err = save.stderr.read().decode(errors="replace") if save.stderr is not None else ""
        save_rc = save.wait()
        ok = save_rc == 0 and imp.returncode == 0
        return ok, save_err + (imp.stdout + imp.stderr).decode(errors="replace")

    return run


def _exited(docker: Docker, name: str, info: dict[str, str]) -> K3sFailure:
    return K3sFailure(
        f"the k3s container {name} stopped ({info['status']}, exit status {info['exit_code']}) as it started; "
        f"its log ends:\n{_log_tail(docker, name)}\n" + inotify_limit_hint(read_inotify_limit())
    )


def _check_running(docker: Docker, name: str) -> None:
    """While waiting on k3s: a container that stopped fails at once, with its exit status and log."""
    info = _inspect(docker, name)
    if info is None or info["status"] != "running":
        raise _exited(docker, name, info or {"status": "gone", "exit_code": "?"})


def _wait_kubeconfig(docker: Docker, name: str, timeout_s: float) -> str:
    deadline = time.monotonic() + timeout_s
    while True:
        rc, out = docker.out("exec", name, "cat", KUBECONFIG_IN_CONTAINER)
        if rc == 0 and "server:" in out:
            return out
        _check_running(docker, name)
        if time.monotonic() > deadline:
            raise K3sFailure(f"k3s wrote no kubeconfig within {timeout_s:.0f}s; its log ends:\n{_log_tail(docker, name)}")
        time.sleep(1.0)


def _wait_infra_ready(docker: Docker, state: StateDir, name: str, node: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    last = ""
    while True:
        try:
            nodes = list_nodes(core_api(state.kubeconfig), f"kubernetes.io/hostname={node}")
            if any(node_ready(n) for n in nodes):
                return
            last = f"Node {node} not Ready yet"
        except Exception as e:  # - the API server is still starting
            last = str(e)[:300]
        _check_running(docker, name)
        if time.monotonic() > deadline:
            raise K3sFailure(f"Node {node} not Ready within {timeout_s:.0f}s ({last}); k3s log ends:\n{_log_tail(docker, name)}")
        time.sleep(1.0)


def _reuse(docker: Docker, info: dict[str, str], cfg: ServerConfig, max_pods: int, progress: Callable[[str], None]) -> None:
    """The existing container, started if it stopped; refused when made for another image or fewer pods."""
    name, image = cfg.name, cfg.pin.image
    created_for = int(info["max_pods"]) if info["max_pods"].isdigit() else 0
    if info["image"] != image or created_for < max_pods:
        raise K3sFailure(
            f"the container {name} was created with {info['image']} for {created_for} pods; this run needs "
            f"{image} and {max_pods} pods. A running container is never resized: recreate it "
            f"(simcluster down, then up)"
        )
    if info["status"] != "running":
        r = docker.run("start", name)
        if r.returncode != 0:
            raise K3sFailure(f"docker start {name}: {r.stderr.decode(errors='replace').strip()}")
    progress(f"reusing the container {name}")


def _create(docker: Docker, cfg: ServerConfig, airgap_bundle: Path | None, progress: Callable[[str], None]) -> None:
    """A new container: ``docker run``, or with an air-gap bundle ``create``, copy the bundle in, ``start``."""
    name = cfg.name
    bundles = [airgap_bundle] if airgap_bundle is not None else []
    argv = ["create", *container_args(cfg)] if bundles else run_argv(cfg)
    progress("docker " + " ".join(argv))
    r = docker.run(*argv)
    if r.returncode != 0:
        docker.run("rm", "-f", name)  # a container created but not started: the next up starts clean
        raise K3sFailure(f"docker {argv[0]} {name} failed: {r.stderr.decode(errors='replace').strip()}")
    for bundle in bundles:
        _copy_airgap(docker, name, bundle)
    if bundles:
        r = docker.run("start", name)
        if r.returncode != 0:
            docker.run("rm", "-f", name)
            raise K3sFailure(f"docker start {name} failed: {r.stderr.decode(errors='replace').strip()}")


def _kubeconfig_and_infra(docker: Docker, state: StateDir, cfg: ServerConfig, timeout_s: float,
                          progress: Callable[[str], None]) -> int:
    """Writes the kubeconfig (server at the published port), waits for the infra Node, shares the hwemu
    mount in fuse mode. Returns the API's port on 127.0.0.1."""
    name = cfg.name
    kubeconfig = _wait_kubeconfig(docker, name, timeout_s)
    port = published_port(docker.out("port", name, f"{API_PORT}/tcp")[1])
    state.root.mkdir(parents=True, exist_ok=True)
    state.kubeconfig.write_text(rewrite_kubeconfig(kubeconfig, port))
    state.kubeconfig.chmod(0o600)
    progress(f"kubeconfig {state.kubeconfig} (API https://127.0.0.1:{port})")
    _wait_infra_ready(docker, state, name, cfg.node_name, timeout_s)
    progress(f"Node {cfg.node_name} Ready")
    if cfg.hwemu == "fuse":
        rc, out = docker.out(*shared_mount_argv(name))
        if rc != 0:
            raise K3sFailure(f"making {HWEMU_ROOT} a shared mount in {name} failed: {out.strip()}")
    return port


@dataclass(frozen=True)
class K3sOptions:
    """One k3s ``up``: the container and what goes into it."""

    name: str
    """The container's name (SIMCLUSTER_NAME); its volumes are ``<name>-k3s`` and ``<name>-hwemu``."""
    agents: int
    """How many emulated agents will run as pods on the infra Node (sizes max-pods and the inotify check)."""
    images: Sequence[str] = ()
    """Image references imported into the cluster's containerd, one at a time."""
    hwemu: HwemuMode = "fuse"
    versions_file: Path = Path("versions.env")
    docker_host: str | None = None
    """The engine's address; None: DOCKER_HOST or the default socket."""
    airgap_bundle: Path | None = None
    scheduler_config: Path | None = None
    start_timeout_s: float = 300
    ready_timeout_s: float = 120


def up_k3s(state: StateDir, rendered: RenderedSpec, options: K3sOptions, progress: Progress | None = None) -> str:
    """Brings the k3s cluster ``options.name`` up (or reuses its container), imports the images into its
    containerd, applies the spec's Nodes (:func:`joulie_simcluster.runtimes.kube.apply_nodes`, which
    waits until KWOK reports them Ready). Returns the summary line. Raises K3sFailure saying what is missing."""
    progress = progress or Progress()
    spec, name, agents, images, hwemu = rendered.spec, options.name, options.agents, options.images, options.hwemu
    docker_host, airgap_bundle, start_timeout_s = options.docker_host, options.airgap_bundle, options.start_timeout_s
    pin = load_pin(options.versions_file)
    cap = pod_capacity(agents)
    if hwemu == "fuse" and not Path("/dev/fuse").exists():
        raise K3sFailure("SIMCLUSTER_HWEMU=fuse needs /dev/fuse on the host (SIMCLUSTER_HWEMU=files needs none)")
    warning = inotify_warning(agents, read_inotify_limit())
    if warning:
        progress(warning)
    docker = find_docker(docker_host)
    progress(f"Docker engine {check_engine(docker)} at {docker.where}")
    ensure_image(docker, pin.image, progress)
    cfg = ServerConfig(name, pin, agents, hwemu, is_cgroup_v1(host_cgroup_fs_type()), options.scheduler_config)
    info = _inspect(docker, name)
    if info is not None:
        _reuse(docker, info, cfg, cap.max_pods, progress)
    else:
        _create(docker, cfg, airgap_bundle, progress)
    port = _kubeconfig_and_infra(docker, state, cfg, start_timeout_s, progress)
    if airgap_bundle is not None:
        deadline = time.monotonic() + start_timeout_s
        while not airgap_imported(docker.out("logs", name)[1], [airgap_bundle.name]):
            if time.monotonic() > deadline:
                raise K3sFailure(f"k3s did not import {airgap_bundle.name} within {start_timeout_s:.0f}s")
            time.sleep(1.0)
    import_images(images, _import_one(docker, name), lambda: _running(docker, name), progress)
    env = {
        RECORD_KEY: K3S,
        "CONTAINER": name,
        "K3S_IMAGE": pin.image,
        "API_URL": f"https://127.0.0.1:{port}",
        "API_PORT": str(port),
        "MAX_PODS": str(cap.max_pods),
        "KUBECONFIG": str(state.kubeconfig),
        "STARTED_AT": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "SPEC_NAME": spec.name,
    }
    if docker_host:
        env["DOCKER_HOST"] = docker_host
    state.write_cluster_env(env)
    try:
        applied, deleted, ready_s = apply_nodes(state, rendered, progress, options.ready_timeout_s)
    except k8s.ApiException as e:
        raise K3sFailure(f"applying the Nodes failed: HTTP {e.status} {e.reason}: {e.body}") from e
    state.spec.write_text(rendered.text)
    summary = (
        f"simcluster up (k3s): container {name}, spec {spec.name}, {applied} Nodes applied, {len(deleted)} deleted, "
        f"Ready in {ready_s:.1f}s, {len(import_plan(images))} images imported, API {env['API_URL']}"
    )
    progress(summary)
    return summary


def down_k3s(state: StateDir, *, name: str, docker_host: str | None = None, keep_volumes: bool = False) -> None:
    """Removes the container and (unless `keep_volumes`) its volumes; removes kubeconfig and cluster.env."""
    docker = find_docker(docker_host)
    docker.run("rm", "-f", "-v", name)
    if not keep_volumes:
        for vol in (f"{name}-k3s", f"{name}-hwemu"):
            docker.run("volume", "rm", "-f", vol)
    for path in (state.kubeconfig, state.cluster_env):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


class K3sRuntime:
    """The seed's runtime, ``up`` only (:class:`~joulie_simcluster.runtimes.runtime.Runtime`): the
    smoke runs on the process runtime, and ``status`` reads cluster.env as the process runtime does."""

    name = K3S
    components_as_pods = False
    runs_smoke = False

    def up(self, ctx: Context, rendered: RenderedSpec, request: UpRequest) -> str:
        # One privileged k3s container (simulated-cluster/K3S.md for where it stops here), its pod
        # capacity sized by the agents the chart's DaemonSet would run.
        settings = ctx.settings
        options = K3sOptions(name=settings.name, agents=request.eligible_agents(), hwemu=settings.hwemu)
        return up_k3s(ctx.state, rendered, options, ctx.progress)

    def status(self, state: StateDir) -> int:
        return process.status(state)

    def down(self, ctx: Context, stop_deployed: StopDeployed) -> None:
        down_k3s(ctx.state, name=ctx.settings.name, keep_volumes=ctx.settings.keep)
        ctx.progress(f"removed the k3s container {ctx.settings.name}")

    def release(self, state: StateDir, progress: Progress, stop_deployed: StopDeployed) -> None:
        process.ProcessRuntime().release(state, progress, stop_deployed)
