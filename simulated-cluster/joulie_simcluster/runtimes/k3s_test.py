from __future__ import annotations

from pathlib import Path

import pytest

from joulie_simcluster.runtimes import k3s
from joulie_simcluster.runtimes.k3s_config import K3sFailure, K3sPin

PIN = K3sPin("rancher/k3s:v1.34.1-k3s1", "v1.34.1+k3s1")


def test_missing_image_message_says_what_is_missing_and_how_to_provide_it() -> None:
    msg = k3s.missing_image_message(PIN.image, "dial tcp: lookup registry-1.docker.io: no such host", "unix:///x.sock")
    assert "rancher/k3s:v1.34.1-k3s1" in msg and "unix:///x.sock" in msg
    assert "docker load -i" in msg and "registry mirror" in msg and "k3s-airgap-images-amd64" in msg
    assert "no such host" in msg


def test_no_engine_names_docker_host(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/none.sock")
    fake = tmp_path / "docker"
    fake.write_text("#!/bin/sh\necho 'Cannot connect to the Docker daemon' >&2\nexit 1\n")
    fake.chmod(0o755)
    with pytest.raises(K3sFailure, match="DOCKER_HOST") as exc:
        k3s.check_engine(k3s.Docker(str(fake)))
    assert "Cannot connect to the Docker daemon" in str(exc.value) and "none.sock" in str(exc.value)


def test_default_airgap_bundle_is_the_state_dirs_images(tmp_path: Path) -> None:
    from joulie_simcluster.state import StateDir

    state = StateDir(tmp_path)
    assert k3s.default_airgap_bundle(state) is None
    (tmp_path / "images").mkdir()
    bundle = tmp_path / "images" / "k3s-airgap-images-amd64.tar.zst"
    bundle.write_bytes(b"x")
    assert k3s.default_airgap_bundle(state) == bundle
