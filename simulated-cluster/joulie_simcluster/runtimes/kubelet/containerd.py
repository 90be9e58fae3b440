"""containerd of the kubelet node, driven through ``ctr``: images imported from archives (the sandbox,
the debootstrap base, the chart's services from their PEXes, never pulled), and every container of
the node removed at ``down``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from joulie_localcluster.tools import cache_dir
from joulie_simcluster.runtimes.kubelet.host_checks import BASE_ROOTFS_COMMAND
from joulie_simcluster.runtimes.kubelet.images import (
    SERVICE_COMPONENTS,
    build_service_archive,
    pex_in_dist,
    service_ref,
)
from joulie_simcluster.runtimes.kubelet.node import KubeletFailure, NodePaths

IMPORT_TIMEOUT_S = 600.0


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


def make_base_rootfs(progress: Callable[[str], None], timeout_s: float = 1800.0) -> Path:
    """Runs ``ci/images``' step that makes the Debian base rootfs tarball (BASE_ROOTFS_COMMAND, from
    the repository root) and returns the tarball; a KubeletFailure with its output and the command
    to run by hand when it fails."""
    progress(f"no Debian base rootfs cached: making it ({BASE_ROOTFS_COMMAND}; debootstrap, a few minutes, once per machine)")
    t0 = time.monotonic()
    try:
        r = subprocess.run([sys.executable, "-m", "images.build", "--base-rootfs"], capture_output=True, text=True,
                           timeout=timeout_s, env={**os.environ, "PYTHONPATH": "ci"})
    except subprocess.TimeoutExpired as e:
        raise KubeletFailure(f"making the Debian base rootfs took over {timeout_s:.0f}s; run it by hand: "
                             f"{BASE_ROOTFS_COMMAND}") from e
    base = base_rootfs_tarball()
    if r.returncode != 0 or base is None:
        raise KubeletFailure(f"making the Debian base rootfs failed (exit {r.returncode}): "
                             f"{(r.stdout + r.stderr).strip()[-1200:]}\nrun it by hand from the repository root: {BASE_ROOTFS_COMMAND}")
    progress(f"Debian base rootfs {base} made in {time.monotonic() - t0:.0f}s")
    return base


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


def import_service_images(paths: NodePaths, base: Path, dist: Path, progress: Callable[[str], None],
                          components: Sequence[str] = SERVICE_COMPONENTS) -> dict[str, str]:
    """The chart's images from the PEXes in `dist` (SIMCLUSTER_DIST), those that are there (of
    `components`: an agent node imports the agent's alone); cluster.env keys IMAGE_<COMPONENT> name
    each imported ref."""
    out = {}
    for component in components:
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


def remove_pods(paths: NodePaths, progress: Callable[[str], None]) -> None:
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
