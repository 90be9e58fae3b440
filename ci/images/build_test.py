"""Unit tests of the image build's pure parts: tags, recipes, mirror discovery, CLI, dockerd flags."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from images import build
from images.dockerd import DockerdPaths, dockerd_argv


def _write(p: Path, data: bytes) -> Path:
    p.write_bytes(data)
    return p


def test_tag_is_dev_plus_12_hex_of_the_pex_sha256(tmp_path: Path) -> None:
    pex = _write(tmp_path / "bin.pex", b"#!/usr/bin/env python3.11\nPK...")
    assert build.content_tag([pex]) == "dev-" + hashlib.sha256(pex.read_bytes()).hexdigest()[:12]


def test_simulator_tag_hashes_both_pexes_in_order(tmp_path: Path) -> None:
    sim = _write(tmp_path / "sim.pex", b"simulator")
    smi = _write(tmp_path / "smi.pex", b"fakesmi")
    both = build.content_tag([sim, smi])
    assert both == "dev-" + hashlib.sha256(b"simulatorfakesmi").hexdigest()[:12]
    assert both != build.content_tag([sim])
    # A new fakesmi alone gives the simulator image a new tag.
    _write(smi, b"fakesmi 2")
    assert build.content_tag([sim, smi]) != both


def test_components_images_and_pex_paths() -> None:
    assert [c.image for c in build.COMPONENTS] == [
        "joulie.local/joulie-agent",
        "joulie.local/joulie-controller-manager",
        "joulie.local/joulie-extender",
        "joulie.local/joulie-simulator",
    ]
    sim = next(c for c in build.COMPONENTS if c.name == "simulator")
    assert sim.services == ("simulator", "fakesmi")
    assert build.pex_path(Path("dist"), "controller-manager") == Path("dist/services.controller-manager/bin.pex")
    assert build.pants_target("fakesmi") == "services/fakesmi:bin"


def test_dockerfile_entrypoint_is_the_pex_and_only_the_simulator_carries_the_gpu_tools() -> None:
    agent = build.dockerfile(build.COMPONENTS[0], "joulie.local/debian-base:bookworm-x")
    assert agent.startswith("FROM joulie.local/debian-base:bookworm-x\n")
    assert 'ENTRYPOINT ["/opt/joulie/joulie-agent.pex"]' in agent
    assert "nvidia-smi" not in agent
    sim = build.dockerfile(build.COMPONENTS[3], "b")
    assert 'ENTRYPOINT ["/opt/joulie/joulie-simulator.pex"]' in sim
    assert "ln -s /opt/joulie/joulie-fakesmi.pex /usr/local/bin/fakesmi" in sim
    # The tools pass their name on: a link to the PEX would reach fakesmi as the PEX's own name.
    for tool in ("nvidia-smi", "rocm-smi", "amd-smi"):
        assert f"ln -s /opt/joulie/joulie-fakesmi.pex /usr/local/bin/{tool}" not in sim
        assert f"exec /opt/joulie/joulie-fakesmi.pex {tool} \"$@\"\\n' > /usr/local/bin/{tool}" in sim
    # Each PEX is unpacked at build time (into the fixed PEX_ROOT), not in every container.
    assert "ENV PEX_ROOT=/opt/joulie/.pex" in sim
    assert "/opt/joulie/joulie-simulator.pex --version && /opt/joulie/joulie-fakesmi.pex --version" in sim


def test_base_ref_names_its_recipe() -> None:
    a = build.base_image_ref("http://deb.debian.org/debian")
    assert a.startswith("joulie.local/debian-base:bookworm-") and len(a.rsplit("-", 1)[1]) == 12
    assert build.base_image_ref("http://mirror.example/debian") != a


def test_apt_mirror_deb822(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JOULIE_DEBIAN_MIRROR", raising=False)
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\nURIs: http://mirror.example/debian-security\nSuites: bookworm-security\nComponents: main\n\n"
        "Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates\nComponents: main\n"
    )
    assert build.apt_mirror(tmp_path) == "http://mirror.example/debian"


def test_apt_mirror_one_line_and_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JOULIE_DEBIAN_MIRROR", raising=False)
    assert build.apt_mirror(tmp_path) == build.DEFAULT_MIRROR
    (tmp_path / "sources.list").write_text(
        "# comment\ndeb-src http://src.example/debian bookworm main\ndeb [arch=amd64] http://one.example/debian bookworm main\n"
    )
    assert build.apt_mirror(tmp_path) == "http://one.example/debian"
    monkeypatch.setenv("JOULIE_DEBIAN_MIRROR", "http://override.example/debian")
    assert build.apt_mirror(tmp_path) == "http://override.example/debian"


def test_cli_components(capsys: pytest.CaptureFixture[str]) -> None:
    assert build.parse_args([]).components == ["agent", "controller-manager", "extender", "simulator"]
    args = build.parse_args(["--components", "extender, agent", "--no-package", "--dist", "d"])
    assert args.components == ["extender", "agent"] and args.package is False and args.dist == Path("d")
    with pytest.raises(SystemExit):
        build.parse_args(["--components", "agent,kepler"])
    assert "unknown ['kepler']" in capsys.readouterr().err


def test_missing_pex_names_the_package_command(tmp_path: Path) -> None:
    with pytest.raises(build.BuildError, match=r"PEX missing: .*services.simulator/bin.pex.*services/fakesmi:bin"):
        build.build_component(None, build.COMPONENTS[3], tmp_path, "base", print)  # type: ignore[arg-type]


def test_dockerd_has_no_network_of_its_own(tmp_path: Path) -> None:
    argv = dockerd_argv("/usr/sbin/dockerd", DockerdPaths(tmp_path))
    assert f"--host=unix://{tmp_path}/docker.sock" in argv
    assert f"--pidfile={tmp_path}/dockerd.pid" in argv
    for flag in ("--bridge=none", "--iptables=false", "--ip6tables=false"):
        assert flag in argv


def test_missing_engine_as_non_root_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    from images import dockerd

    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(dockerd.EngineError, match=r"dockerd is not installed and this is not root: apt-get install docker.io"):
        dockerd.ensure_engine_installed(print)
    with pytest.raises(build.BuildError, match=r"debootstrap is not installed and this is not root: apt-get install debootstrap"):
        build.ensure_debootstrap(print)


def test_dockerd_that_dies_at_start_reports_its_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from images import dockerd

    fake = tmp_path / "dockerd"
    fake.write_text("#!/bin/sh\necho 'failed to start daemon: pid file found' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setattr(dockerd, "ensure_engine_installed", lambda log: (str(fake), "/bin/false"))
    with pytest.raises(dockerd.EngineError, match=r"(?s)dockerd exited with 1 at start.*pid file found"), \
            dockerd.private_engine(print, root=tmp_path / "d"):
        pass


def test_stale_refs_are_the_same_repositorys_other_dev_tags() -> None:
    listing = "\n".join([
        "joulie.local/joulie-simulator:dev-aaaaaaaaaaaa", "joulie.local/joulie-simulator:dev-bbbbbbbbbbbb",
        "joulie.local/joulie-simulator:0.1.0", "joulie.local/joulie-agent:dev-cccccccccccc",
        "joulie.local/debian-base:bookworm-70afc38cdd4e",
    ])
    assert build.stale_refs(listing, "joulie.local/joulie-simulator", "dev-bbbbbbbbbbbb") == ["joulie.local/joulie-simulator:dev-aaaaaaaaaaaa"]
    assert build.stale_refs(listing, "joulie.local/joulie-agent", "dev-cccccccccccc") == []


def test_a_daemon_left_by_an_interrupted_build_is_stopped_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess
    import sys

    from images import dockerd

    paths = dockerd.DockerdPaths(tmp_path / "d")
    paths.root.mkdir()
    leftover = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", f"--data-root={paths.data_root}"])
    paths.pidfile.write_text(f"{leftover.pid}\n")
    fake = tmp_path / "dockerd"
    fake.write_text("#!/bin/sh\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setattr(dockerd, "ensure_engine_installed", lambda log: (str(fake), "/bin/false"))
    with pytest.raises(dockerd.EngineError, match="dockerd exited with 3 at start"), dockerd.private_engine(print, root=paths.root):
        pass
    assert leftover.wait(timeout=5) == -15  # SIGTERM, by its PID


def test_base_rootfs_only_reuses_the_cached_tarball_and_names_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """The step the kubelet runtime's up runs on a fresh machine: no engine, no PEX; a cached tarball
    is kept (debootstrap never runs)."""
    monkeypatch.setenv("JOULIE_CACHE", str(tmp_path))
    monkeypatch.setenv("JOULIE_DEBIAN_MIRROR", "http://127.0.0.1:9/debian")
    ref = build.base_image_ref("http://127.0.0.1:9/debian")
    tarball = tmp_path / "images" / f"base-{ref.rsplit(':', 1)[1]}.tar"
    tarball.parent.mkdir()
    tarball.write_bytes(b"rootfs")

    def no_run(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"ran {args}")

    monkeypatch.setattr(subprocess, "run", no_run)
    assert build.main(["--base-rootfs"]) == 0
    assert capsys.readouterr().out == f"{ref}\t{tarball}\n"


def test_base_rootfs_that_cannot_be_made_says_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("JOULIE_CACHE", str(tmp_path))
    monkeypatch.setenv("JOULIE_DEBIAN_MIRROR", "http://127.0.0.1:9/debian")
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/sbin/debootstrap")

    class Failed:
        returncode, stdout, stderr = 1, "", "E: Failed getting release file http://127.0.0.1:9/debian/dists/bookworm/Release"

    monkeypatch.setattr(subprocess, "run", lambda *a, **k: Failed())
    assert build.main(["--base-rootfs"]) == 1
    err = capsys.readouterr().err
    assert "build-images: debootstrap failed (exit 1) from http://127.0.0.1:9/debian: E: Failed getting release file" in err
    assert not list((tmp_path / "images").glob("*.tar"))  # nothing half-made is left as the base
