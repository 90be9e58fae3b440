"""Images for the kubelet node without a registry or a Docker engine: image archives in the
``docker save`` layout (``manifest.json``, the image config, one tar per layer) that
``ctr -n k8s.io images import`` reads. Nothing can be pulled on these machines, so every image a Pod
uses is made here: the sandbox (pause) image from the static binary ``bootstrap-tools.sh pause``
builds, and images from the cached debootstrap base rootfs (``ci/images``) plus files of ours.

The config and manifest are pure (:func:`image_config`, :func:`archive_manifest`); :func:`write_archive`
and :func:`file_layer` write tar files.
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PAUSE_REPOSITORY = "joulie.local/pause"
# A fixed time in every layer and config: the same inputs give the same image digests.
EPOCH = "1970-01-01T00:00:00Z"


@dataclass(frozen=True)
class LayerFile:
    """One regular file of a layer: its path in the image, its bytes' source, its mode."""

    path: str  # absolute, e.g. /pause
    source: Path
    mode: int = 0o755


def sha256_file(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def image_config(diff_ids: Sequence[str], *, entrypoint: Sequence[str], cmd: Sequence[str] = (),
                 env: Mapping[str, str] | None = None, labels: Mapping[str, str] | None = None,
                 workdir: str = "/") -> dict[str, Any]:
    """The OCI/Docker image config: linux/amd64, the layers' uncompressed sha256 digests in order."""
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", **(env or {})}
    return {
        "architecture": "amd64",
        "os": "linux",
        "created": EPOCH,
        "config": {
            "Entrypoint": list(entrypoint) or None,
            "Cmd": list(cmd) or None,
            "Env": [f"{k}={v}" for k, v in env.items()],
            "Labels": dict(labels or {}),
            "WorkingDir": workdir,
        },
        "rootfs": {"type": "layers", "diff_ids": [f"sha256:{d}" for d in diff_ids]},
        "history": [{"created": EPOCH, "created_by": "joulie_simcluster.runtimes.kubelet.images"} for _ in diff_ids],
    }


def config_bytes(config: Mapping[str, Any]) -> bytes:
    return json.dumps(config, sort_keys=True, separators=(",", ":")).encode()


def archive_manifest(ref: str, config_name: str, layer_names: Sequence[str]) -> list[dict[str, Any]]:
    """``manifest.json`` of a ``docker save`` archive holding one image tagged `ref`."""
    return [{"Config": config_name, "RepoTags": [ref], "Layers": list(layer_names)}]


def file_layer(out: Path, files: Sequence[LayerFile]) -> str:
    """Writes an uncompressed layer tar of `files` (parent directories included, root-owned, fixed
    times); returns its sha256 (the layer's diff_id)."""
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tar:
        dirs: set[str] = set()
        for f in files:
            parts = f.path.strip("/").split("/")
            for i in range(1, len(parts)):
                d = "/".join(parts[:i])
                if d not in dirs:
                    dirs.add(d)
                    info = tarfile.TarInfo(d)
                    info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, 0
                    tar.addfile(info)
            info = tarfile.TarInfo("/".join(parts))
            info.size, info.mode, info.mtime = f.source.stat().st_size, f.mode, 0
            with f.source.open("rb") as src:
                tar.addfile(info, src)
    return sha256_file(out)


def tree_layer(out: Path, tree: Path, at: str) -> str:
    """Writes an uncompressed layer tar of the directory `tree` placed at `at` in the image (its
    parents, directories, files with their modes, relative symlinks; root-owned, fixed times, sorted);
    returns its sha256."""
    def add_dirs(tar: tarfile.TarFile, path: str) -> None:
        parts = path.strip("/").split("/")
        for i in range(1, len(parts) + 1):
            info = tarfile.TarInfo("/".join(parts[:i]))
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, 0
            tar.addfile(info)

    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tar:
        add_dirs(tar, at)
        for path in sorted(tree.rglob("*")):
            name = f"{at.strip('/')}/{path.relative_to(tree).as_posix()}"
            info = tarfile.TarInfo(name)
            st = path.lstat()
            info.mode, info.mtime = st.st_mode & 0o7777, 0
            if path.is_symlink():
                info.type, info.linkname = tarfile.SYMTYPE, str(path.readlink())
                tar.addfile(info)
            elif path.is_dir():
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            elif path.is_file():
                info.size = st.st_size
                with path.open("rb") as src:
                    tar.addfile(info, src)
    return sha256_file(out)


def write_archive(out: Path, ref: str, layers: Sequence[Path], config: Mapping[str, Any]) -> str:
    """Writes the ``docker save`` archive of one image: each layer tar (uncompressed, as given) under
    ``<sha256>/layer.tar``, the config under ``<sha256>.json``. Returns the config's digest (the image ID)."""
    cfg = config_bytes(config)
    cfg_digest = hashlib.sha256(cfg).hexdigest()
    names = []
    with tarfile.open(out, "w") as tar:
        for layer in layers:
            name = f"{sha256_file(layer)}/layer.tar"
            names.append(name)
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = layer.stat().st_size, 0o644, 0
            with layer.open("rb") as src:
                tar.addfile(info, src)
        _add_bytes(tar, f"{cfg_digest}.json", cfg)
        _add_bytes(tar, "manifest.json", json.dumps(archive_manifest(ref, f"{cfg_digest}.json", names)).encode())
    return cfg_digest


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), 0o644, 0
    tar.addfile(info, io.BytesIO(data))


def pause_ref(version: str) -> str:
    return f"{PAUSE_REPOSITORY}:{version}"


def build_pause_archive(pause_bin: Path, version: str, workdir: Path) -> tuple[str, Path]:
    """The sandbox image: the static pause binary alone, at /pause. Returns (ref, archive)."""
    workdir.mkdir(parents=True, exist_ok=True)
    layer = workdir / "pause-layer.tar"
    diff_id = file_layer(layer, [LayerFile("/pause", pause_bin)])
    ref = pause_ref(version)
    out = workdir / "pause.tar"
    write_archive(out, ref, [layer], image_config([diff_id], entrypoint=["/pause"],
                                                  labels={"io.joulie.component": "pause"}))
    layer.unlink()
    return ref, out


def build_base_archive(base_rootfs_tar: Path, ref: str, workdir: Path) -> tuple[str, Path]:
    """An image of the cached debootstrap rootfs (``ci/images``' base) alone, for a first Pod."""
    workdir.mkdir(parents=True, exist_ok=True)
    out = workdir / "base.tar"
    write_archive(out, ref, [base_rootfs_tar], image_config([sha256_file(base_rootfs_tar)], entrypoint=[],
                                                            cmd=["/bin/bash"], env={"LANG": "C.UTF-8"}))
    return ref, out


# The chart's images (charts/joulie values: joulie.local/joulie-<component>): the same recipe as
# ci/images/build.py (the base, the service PEX under /opt/joulie, entrypoint the PEX, tag dev- + the
# first 12 hex of the PEX's sha256) but written straight into an archive, with no Docker engine.
# ci/images runs each PEX once at build time to unpack it into PEX_ROOT; here the PEX runs once on the
# host under the base's interpreter (/usr/bin/python3.11 of the same Debian release) into a scratch
# PEX_ROOT that becomes a layer at PEX_ROOT (kubelet.py). Without it every container's first start
# unpacks the PEX (~190 MB) into its writable layer: over a minute for ten at once on two busy cores,
# long enough for a liveness probe to restart it and start the unpacking over.
SERVICE_COMPONENTS = ("agent", "controller-manager", "extender")


def service_tag(pex: Path) -> str:
    return "dev-" + sha256_file(pex)[:12]


def service_ref(component: str, pex: Path) -> str:
    return f"joulie.local/joulie-{component}:{service_tag(pex)}"


def pex_in_dist(dist: Path, component: str) -> Path:
    """Where ``./pants package services/<component>:bin`` puts the PEX."""
    return dist / f"services.{component}" / "bin.pex"


PEX_ROOT = "/opt/joulie/.pex"


def build_service_archive(base_rootfs_tar: Path, component: str, pex: Path, workdir: Path,
                          unpacked: Path | None = None) -> tuple[str, Path]:
    """The component's image: the base rootfs layer, then /opt/joulie/joulie-<component>.pex, then
    (given) `unpacked`, the PEX_ROOT the PEX filled on its first run, at PEX_ROOT."""
    workdir.mkdir(parents=True, exist_ok=True)
    target = f"/opt/joulie/joulie-{component}.pex"
    layer = workdir / f"{component}-layer.tar"
    layers, diff_ids = [base_rootfs_tar, layer], [sha256_file(base_rootfs_tar), file_layer(layer, [LayerFile(target, pex)])]
    if unpacked is not None:
        unpack_layer = workdir / f"{component}-pexroot-layer.tar"
        layers.append(unpack_layer)
        diff_ids.append(tree_layer(unpack_layer, unpacked, PEX_ROOT))
    ref = service_ref(component, pex)
    out = workdir / f"joulie-{component}.tar"
    write_archive(out, ref, layers, image_config(
        diff_ids, entrypoint=[target],
        env={"LANG": "C.UTF-8", "PEX_ROOT": PEX_ROOT, "PYTHONDONTWRITEBYTECODE": "1"},
        labels={"io.joulie.component": component, "io.joulie.services": component}))
    for made in layers[1:]:
        made.unlink()
    return ref, out
