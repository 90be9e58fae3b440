"""Per-service images from the service PEXes, on a local Debian base, with a private dockerd.

    ./pants run ci/images:build                       # package the PEXes, build all four images
    ./pants run ci/images:build -- --verify           # ... and start each once with --version
    ./pants run ci/images:build -- --no-package --dist dist --components agent,extender
    ./pants run ci/images:build -- --save out/images --json out/images/images.json
    PYTHONPATH=ci python3 -m images.build --base-rootfs   # only the base's rootfs tarball (no engine)

Nothing is pulled. The base is ``debootstrap --variant=minbase bookworm`` with Debian's Python
3.11 (``python3``, what the PEXes run on) and FUSE 3 (the simulator's views), imported once as
``joulie.local/debian-base:bookworm-<12 hex of its recipe>`` and kept, with its rootfs tarball,
under ``$JOULIE_CACHE`` (default ``~/.cache/joulie``). Each image is the base plus the PEX(es),
entrypoint the PEX, tagged ``joulie.local/joulie-<component>:dev-<first 12 hex of the sha256 of
its PEX bytes>`` (the simulator image carries fakesmi too, behind nvidia-smi, rocm-smi and
amd-smi scripts: its hash runs over the simulator PEX then the fakesmi PEX). The same PEX gives the
same tag; the base is not part of the tag.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from images.dockerd import Engine, EngineError, Log, apt_install, cache_dir, private_engine

REGISTRY = "joulie.local"
SUITE = "bookworm"
VARIANT = "minbase"
# python3 is 3.11.2 on bookworm (the PEXes' interpreter constraint is ==3.11.*); fuse3 gives
# fusermount3 and libfuse3 for the simulator's FUSE views.
BASE_PACKAGES = ("python3", "fuse3", "libfuse3-3")
DEFAULT_MIRROR = "http://deb.debian.org/debian"
FAKESMI_TOOLS = ("nvidia-smi", "rocm-smi", "amd-smi")


@dataclass(frozen=True)
class Component:
    name: str  # image joulie-<name>
    services: tuple[str, ...]  # services/<svc>:bin, the first one is the entrypoint

    @property
    def image(self) -> str:
        return f"{REGISTRY}/joulie-{self.name}"

    @property
    def entry_service(self) -> str:
        return self.services[0]


COMPONENTS: tuple[Component, ...] = (
    Component("agent", ("agent",)),
    Component("controller-manager", ("controller-manager",)),
    Component("extender", ("extender",)),
    Component("simulator", ("simulator", "fakesmi")),
)


class BuildError(RuntimeError):
    pass


def pants_target(service: str) -> str:
    return f"services/{service}:bin"


def pex_path(dist: Path, service: str) -> Path:
    """Where ``./pants package services/<svc>:bin`` writes the PEX."""
    return dist / f"services.{service}" / "bin.pex"


def pex_file_name(service: str) -> str:
    return f"joulie-{service}.pex"


def content_tag(pexes: Sequence[Path]) -> str:
    """``dev-`` + the first 12 hex of the sha256 over the PEX bytes, in order."""
    h = hashlib.sha256()
    for p in pexes:
        with open(p, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    return "dev-" + h.hexdigest()[:12]


def base_image_ref(mirror: str) -> str:
    recipe = f"{SUITE}|{VARIANT}|{','.join(BASE_PACKAGES)}|{mirror}"
    return f"{REGISTRY}/debian-base:{SUITE}-{hashlib.sha256(recipe.encode()).hexdigest()[:12]}"


def dockerfile(component: Component, base: str) -> str:
    """The image recipe: the base, the PEX(es) under /opt/joulie, entrypoint the first PEX.

    PEX_ROOT is fixed and each PEX runs once at build time (``--version``) so its dependencies
    are unpacked into the image, not into every container at start.
    """
    lines = [
        f"FROM {base}",
        "ENV PEX_ROOT=/opt/joulie/.pex PYTHONDONTWRITEBYTECODE=1",
    ]
    for svc in component.services:
        lines.append(f"COPY {pex_file_name(svc)} /opt/joulie/{pex_file_name(svc)}")
    runs = [f"/opt/joulie/{pex_file_name(svc)} --version" for svc in component.services]
    if "fakesmi" in component.services:
        target = f"/opt/joulie/{pex_file_name('fakesmi')}"
        # The GPU tools are scripts passing their name, not links: a PEX re-executes itself, so a
        # link named nvidia-smi reaches fakesmi as the PEX's own name and it answers with its usage.
        runs.append(f"ln -s {target} /usr/local/bin/fakesmi")
        runs += [f"printf '#!/bin/sh\\nexec {target} {tool} \"$@\"\\n' > /usr/local/bin/{tool}" for tool in FAKESMI_TOOLS]
        runs.append("chmod 755 " + " ".join(f"/usr/local/bin/{tool}" for tool in FAKESMI_TOOLS))
    runs.append("chmod -R a+rX /opt/joulie")
    lines.append("RUN " + " && ".join(runs))
    lines.append(f'LABEL io.joulie.component="{component.name}" io.joulie.services="{",".join(component.services)}"')
    lines.append(f'ENTRYPOINT ["/opt/joulie/{pex_file_name(component.entry_service)}"]')
    return "\n".join(lines) + "\n"


def apt_mirror(etc_apt: Path = Path("/etc/apt")) -> str:
    """The Debian mirror this machine's apt uses for bookworm (deb822 or one-line sources)."""
    override = os.environ.get("JOULIE_DEBIAN_MIRROR")
    if override:
        return override
    files = sorted((etc_apt / "sources.list.d").glob("*.sources")) if (etc_apt / "sources.list.d").is_dir() else []
    for f in files:
        for stanza in re.split(r"\n\s*\n", f.read_text(errors="replace")):
            fields: dict[str, str] = {}
            for line in stanza.splitlines():
                key, sep, value = line.partition(":")
                if sep and not line.startswith((" ", "\t", "#")):
                    fields[key.strip().lower()] = value.strip()
            if SUITE in fields.get("suites", "").split() and "deb" in fields.get("types", "deb").split():
                uris = fields.get("uris", "").split()
                if uris:
                    return uris[0]
    one_line = etc_apt / "sources.list"
    if one_line.is_file():
        for line in one_line.read_text(errors="replace").splitlines():
            parts = re.sub(r"\[[^]]*\]", "", line).split()
            if len(parts) >= 3 and parts[0] == "deb" and parts[2] == SUITE:
                return parts[1]
    return DEFAULT_MIRROR


@dataclass
class Built:
    component: str
    ref: str
    repository: str
    tag: str
    size_bytes: int
    services: list[str]
    seconds: float


def human_size(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def package(repo: Path, services: Sequence[str], log: Log) -> None:
    targets = [pants_target(s) for s in services]
    log(f"[images] ./pants package {' '.join(targets)}")
    env = {**os.environ, "PANTS_CONCURRENT": "True"}  # may run inside `./pants run`, which holds pantsd
    r = subprocess.run(["./pants", "package", *targets], cwd=repo, env=env)
    if r.returncode != 0:
        raise BuildError(f"./pants package failed (exit {r.returncode})")


def ensure_debootstrap(log: Log) -> str:
    return apt_install("debootstrap", "debootstrap", log, BuildError)


def ensure_base_rootfs(log: Log) -> tuple[str, Path]:
    """The base's ref and its debootstrap rootfs tarball under the cache, made when missing (no
    engine needed: the simulated cluster's kubelet runtime imports it into containerd itself)."""
    mirror = apt_mirror()
    ref = base_image_ref(mirror)
    cache = cache_dir() / "images"
    cache.mkdir(parents=True, exist_ok=True)
    tarball = cache / f"base-{ref.rsplit(':', 1)[1]}.tar"
    if tarball.is_file():
        return ref, tarball
    debootstrap = ensure_debootstrap(log)
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(dir=cache, prefix="rootfs-") as tmp:
        rootfs = Path(tmp) / "rootfs"
        argv = [debootstrap, f"--variant={VARIANT}", f"--include={','.join(BASE_PACKAGES)}", SUITE, str(rootfs), mirror]
        log(f"[images] {' '.join(argv)}")
        r = subprocess.run(argv, capture_output=True, text=True)
        if r.returncode != 0:
            raise BuildError(f"debootstrap failed (exit {r.returncode}) from {mirror}: {(r.stdout + r.stderr).strip()[-1200:]}")
        for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for p in (rootfs / junk).glob("*"):
                if p.is_file():
                    p.unlink()
        partial = tarball.with_suffix(".tar.partial")
        subprocess.run(["tar", "-C", str(rootfs), "--numeric-owner", "-cf", str(partial), "."], check=True)
        partial.rename(tarball)
    log(f"[images] debootstrap {SUITE} ({VARIANT} + {' '.join(BASE_PACKAGES)}): {time.monotonic() - t0:.0f}s, {human_size(tarball.stat().st_size)}")
    return ref, tarball


def ensure_base(engine: Engine, log: Log) -> str:
    """The base image, from the engine, else from the cached rootfs tarball, else debootstrap."""
    ref = base_image_ref(apt_mirror())
    if engine.docker("image", "inspect", ref, check=False).returncode == 0:
        log(f"[images] base {ref}: cached in the engine")
        return ref
    ref, tarball = ensure_base_rootfs(log)
    t0 = time.monotonic()
    engine.docker("import", "--change", "ENV LANG=C.UTF-8", str(tarball), ref)
    py = engine.docker("run", "--rm", "--network", "none", ref, "python3", "--version").stdout.decode().strip()
    if not py.startswith("Python 3.11."):
        raise BuildError(f"base {ref} has {py!r}; the service PEXes need Python 3.11")
    log(f"[images] base {ref}: imported in {time.monotonic() - t0:.0f}s ({py})")
    return ref


def image_size(engine: Engine, ref: str) -> int:
    return int(engine.docker("image", "inspect", "--format", "{{.Size}}", ref).stdout.decode().strip())


def build_component(engine: Engine, component: Component, dist: Path, base: str, log: Log, rebuild: bool = False) -> Built:
    pexes = [pex_path(dist, s) for s in component.services]
    missing = [str(p) for p in pexes if not p.is_file()]
    if missing:
        raise BuildError(f"{component.name}: PEX missing: {', '.join(missing)} (run ./pants package {' '.join(pants_target(s) for s in component.services)})")
    tag = content_tag(pexes)
    ref = f"{component.image}:{tag}"
    t0 = time.monotonic()
    exists = engine.docker("image", "inspect", ref, check=False).returncode == 0
    if exists and rebuild:
        engine.docker("rmi", ref)
        exists = False
    if exists:
        log(f"[images] {ref}: already built from these PEXes")
    else:
        with tempfile.TemporaryDirectory(prefix="joulie-image-") as tmp:
            ctx = Path(tmp)
            for svc, p in zip(component.services, pexes, strict=True):
                shutil.copyfile(p, ctx / pex_file_name(svc))
                (ctx / pex_file_name(svc)).chmod(0o755)
            (ctx / "Dockerfile").write_text(dockerfile(component, base))
            r = subprocess.run(
                [engine.cli, "-H", engine.paths.host, "build", "--network", "none", "--force-rm", "-t", ref, str(ctx)],
                env={**os.environ, "DOCKER_BUILDKIT": "0"},
                capture_output=True,
                text=True,
            )
            if r.returncode != 0:
                raise BuildError(f"docker build {ref} failed (exit {r.returncode}):\n{(r.stdout + r.stderr).strip()[-2000:]}")
    return Built(component.name, ref, component.image, tag, image_size(engine, ref), list(component.services), round(time.monotonic() - t0, 1))


def stale_refs(listing: str, repository: str, keep: str) -> list[str]:
    """From ``docker images --format {{.Repository}}:{{.Tag}}``: this repository's other dev- tags."""
    out = []
    for ref in listing.split():
        repo, _, tag = ref.rpartition(":")
        if repo == repository and tag.startswith("dev-") and tag != keep:
            out.append(ref)
    return out


def prune(engine: Engine, built: Sequence[Built], log: Log) -> None:
    """Drop the superseded dev- images of the components just built (the engine is a cache)."""
    listing = engine.docker("images", "--format", "{{.Repository}}:{{.Tag}}").stdout.decode()
    old = [ref for b in built for ref in stale_refs(listing, b.repository, b.tag)]
    if old:
        engine.docker("rmi", *old)
        log(f"[images] removed {len(old)} superseded image(s): {' '.join(old)}")


def run_version(engine: Engine, ref: str, entrypoint: str | None = None) -> str:
    """``docker run --rm --network none <ref> --version``: the one line the service prints."""
    args = ["run", "--rm", "--network", "none"]
    if entrypoint:
        args += ["--entrypoint", entrypoint]
    r = engine.docker(*args, ref, "--version", check=False)
    out = (r.stdout or b"").decode(errors="replace").strip()
    if r.returncode != 0:
        raise BuildError(f"{ref} --version exit {r.returncode}: {out} {(r.stderr or b'').decode(errors='replace').strip()[-800:]}")
    return out


def verify(engine: Engine, built: Sequence[Built], log: Log) -> list[str]:
    """Start every image once with --version (the simulator image also as fakesmi); the lines."""
    lines = []
    for b in built:
        lines.append(run_version(engine, b.ref))
        if "fakesmi" in b.services:
            lines.append(run_version(engine, b.ref, entrypoint="fakesmi"))
    for line in lines:
        log(f"[images] --version: {line}")
    return lines


def find_repo(start: Path) -> Path:
    for d in (start, *start.parents):
        if (d / "pants.toml").is_file():
            return d
    raise BuildError(f"no pants.toml at or above {start}: run from the repository")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="build-images", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--components", default=",".join(c.name for c in COMPONENTS), help="comma-separated (default all: %(default)s)")
    p.add_argument("--dist", type=Path, default=Path("dist"), help="where ./pants package puts the PEXes (default %(default)s)")
    p.add_argument("--no-package", dest="package", action="store_false", help="use the PEXes already under --dist")
    p.add_argument("--verify", action="store_true", help="start each image once with --version")
    p.add_argument("--rebuild", action="store_true", help="build even when an image of that tag exists")
    p.add_argument("--keep-old", dest="prune", action="store_false", help="keep superseded dev- images of these components")
    p.add_argument("--save", type=Path, help="docker save each image to DIR/joulie-<component>.tar")
    p.add_argument("--json", type=Path, help="write the built images (ref, tag, size) as JSON")
    p.add_argument("--base-rootfs", action="store_true",
                   help="only make the Debian base's rootfs tarball under $JOULIE_CACHE/images (no engine, no PEX); "
                        "what the simulated cluster's kubelet runtime imports")
    args = p.parse_args(argv)
    known = {c.name for c in COMPONENTS}
    wanted = [c.strip() for c in args.components.split(",") if c.strip()]
    unknown = [c for c in wanted if c not in known]
    if unknown or not wanted:
        p.error(f"--components: unknown {unknown or 'empty'}; known: {', '.join(sorted(known))}")
    args.components = wanted
    return args


def build(args: argparse.Namespace, log: Log = lambda m: print(m, flush=True)) -> list[Built]:
    comps = [c for c in COMPONENTS if c.name in args.components]
    if args.package:
        repo = find_repo(Path.cwd())
        package(repo, [s for c in comps for s in c.services], log)
        dist = args.dist if args.dist.is_absolute() else repo / args.dist
    else:
        dist = args.dist.resolve()
    built: list[Built] = []
    with private_engine(log) as engine:
        base = ensure_base(engine, log)
        for c in comps:
            b = build_component(engine, c, dist, base, log, rebuild=args.rebuild)
            built.append(b)
            log(f"[images] built {b.ref}  {human_size(b.size_bytes)}  ({b.seconds:.0f}s)")
        if args.prune:
            prune(engine, built, log)
        if args.verify:
            verify(engine, built, log)
        if args.save:
            args.save.mkdir(parents=True, exist_ok=True)
            for b in built:
                engine.docker("save", "-o", str(args.save / f"joulie-{b.component}.tar"), b.ref)
            log(f"[images] saved {len(built)} image tarballs under {args.save}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps([asdict(b) for b in built], indent=2) + "\n")
    print()
    for b in built:
        print(f"{b.ref}\t{human_size(b.size_bytes)}")
    return built


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        if args.base_rootfs:
            ref, tarball = ensure_base_rootfs(lambda m: print(m, file=sys.stderr, flush=True))
            print(f"{ref}\t{tarball}")
            return 0
        build(args)
    except (BuildError, EngineError) as e:
        print(f"build-images: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
