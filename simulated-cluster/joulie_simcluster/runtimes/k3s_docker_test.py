"""The k3s runtime against a real Docker engine, up to the boundary of a machine without a registry.

Starts a private dockerd (ci/images/dockerd.py) with a fresh data root, so the k3s image is surely
not in it, and calls :func:`joulie_simcluster.runtimes.k3s.up_k3s` for the smoke spec's eight agents. Here nothing
can be pulled: up_k3s must stop at the k3s image with a message naming it (K3S_IMAGE of
versions.env) and how to provide it, with no container or volume created and no kubeconfig or
cluster.env written. Needs root (dockerd; apt-get install docker.io when missing).

Where `docker pull rancher/k3s` works, up_k3s goes past this boundary; the test then removes what
it created and is skipped (it covers the no-registry boundary only; see simulated-cluster/K3S.md).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from images.dockerd import private_engine
from joulie_simcluster.context import RenderedSpec
from joulie_simcluster.progress import Progress
from joulie_simcluster.runtimes import k3s, k3s_config
from joulie_simcluster.runtimes.k3s import K3sOptions
from joulie_simcluster.runtimes.k3s_config import K3sFailure
from joulie_simcluster.spec import parse_spec
from joulie_simcluster.state import StateDir

VERSIONS = Path("versions.env")
SPEC_TEXT = "name: k3s-boundary\npools:\n  - {name: intel, profile: intel-xeon-2s-rapl, count: 1}\n"


@pytest.fixture
def engine_root() -> Iterator[Path]:
    """A short root: containerd's socket under the exec root must fit a unix socket path."""
    root = Path(tempfile.mkdtemp(prefix="jk3s-", dir="/tmp"))
    try:
        yield root
    finally:
        # A dockerd that failed at start leaves its data root mounted.
        subprocess.run(["umount", str(root / "data")], capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


def test_up_k3s_stops_at_the_missing_k3s_image_and_says_how_to_provide_it(tmp_path: Path, engine_root: Path) -> None:
    pin = k3s_config.load_pin(VERSIONS)
    assert pin.image == "rancher/k3s:v1.34.1-k3s1"
    state = StateDir(tmp_path / "state")
    name = "joulie-sim-k3s-boundary"
    spec = parse_spec({"name": "k3s-boundary", "pools": [{"name": "intel", "profile": "intel-xeon-2s-rapl", "count": 1}]}, "test")
    with private_engine(print, root=engine_root) as engine:
        host = engine.paths.host
        try:
            k3s.up_k3s(state, RenderedSpec.of(spec, SPEC_TEXT),
                       K3sOptions(name=name, agents=8, versions_file=VERSIONS, docker_host=host, hwemu="files",
                                  start_timeout_s=60, ready_timeout_s=10), Progress())
        except K3sFailure as e:
            msg = str(e)
            if "is not in the Docker engine" not in msg:
                k3s.down_k3s(state, name=name, docker_host=host)
                pytest.skip(f"the k3s image could be pulled here; past the no-registry boundary: {msg[:300]}")
        else:
            k3s.down_k3s(state, name=name, docker_host=host)
            pytest.skip("the k3s image could be pulled and the cluster came up: past the no-registry boundary")
        print(msg)
        assert msg.startswith("the k3s image rancher/k3s:v1.34.1-k3s1 (K3S_IMAGE in versions.env) is not in the Docker engine")
        assert host in msg
        assert f"docker pull {pin.image}` failed" in msg
        assert "docker load -i" in msg and "registry mirror" in msg
        # Nothing was created or written.
        assert engine.docker("ps", "-aq").stdout.decode().strip() == ""
        assert engine.docker("volume", "ls", "-q").stdout.decode().strip() == ""
        assert not state.kubeconfig.exists() and not state.cluster_env.exists()
        # The engine is reachable the way up_k3s reached it, and the image is really absent.
        assert k3s.check_engine(k3s.find_docker(host))
        assert engine.docker("image", "inspect", pin.image, check=False).returncode != 0
    # The daemon started for this check is gone again.
    assert subprocess.run(["pgrep", "-f", "--", "--data-root=" + str(engine.paths.data_root)], capture_output=True).returncode != 0


def test_no_engine_at_docker_host_is_named(tmp_path: Path) -> None:
    state = StateDir(tmp_path / "state")
    spec = parse_spec({"name": "k3s-boundary", "pools": []}, "test")
    host = f"unix://{tmp_path}/no-engine.sock"
    with pytest.raises(K3sFailure, match="no Docker engine answers at unix://") as exc:
        k3s.up_k3s(state, RenderedSpec.of(spec), K3sOptions(name="joulie-sim-none", agents=0, versions_file=VERSIONS,
                                                            docker_host=host, hwemu="files"))
    assert "no-engine.sock" in str(exc.value) and "DOCKER_HOST" in str(exc.value)
