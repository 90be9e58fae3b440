"""The installed plugin, as a workstation gets it: the wheel `pip install`ed into a fresh venv
(dependencies from the package index), then `kubectl-joulie --version` and `status` against the
real API server. Once on the oldest Python found (3.9 where installed) and once on the test's
own; once more through the krew archive's launcher.

Needs the package index: when pip cannot reach it the test skips and says so (any other pip
failure fails the test).
"""

from __future__ import annotations

import subprocess
import tarfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from kubernetes import client as k8s

from joulie_api.backoff import Backoff
from joulie_api.kube import NODE_TWIN, JoulieClient
from joulie_api.names import FIELD_MANAGER_CONTROLLER_MANAGER, object_name_for_node
from joulie_kubectl.testwheel import current_python, find_wheel, index_unreachable, install, oldest_python, pip_env
from joulie_localcluster.controlplane import ControlPlane
from joulie_localcluster.nodes import create_node

pytest_plugins = ["joulie_testinfra.fixtures"]

NODE = "wheel-node-0"
VERSION = (Path(__file__).parent / "VERSION").read_text().strip()


@pytest.fixture(scope="module")
def cluster(kube_api: k8s.ApiClient) -> Iterator[str]:
    create_node(k8s.CoreV1Api(kube_api), NODE, {}, {"cpu": "16", "memory": "64Gi", "pods": "110"})
    cm = JoulieClient(kube_api, FIELD_MANAGER_CONTROLLER_MANAGER, Backoff(delays_s=()))
    obj = object_name_for_node(NODE)
    cm.apply(NODE_TWIN, obj, {"spec": {"nodeName": NODE, "profile": "performance"}})
    cm.apply_status(NODE_TWIN, obj, {
        "schedulableClass": "performance",
        "powerMeasurement": {"source": "prometheus", "measuredNodePowerW": 321, "nodeCappedPowerW": 500},
        "lastUpdated": (datetime.now(UTC) - timedelta(seconds=5)).isoformat(),
    })
    yield NODE


def _run(exe: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = pip_env() | {"COLUMNS": "200", "TERM": "dumb"}
    return subprocess.run([str(exe), *argv], capture_output=True, text=True, timeout=120, env=env)


def _check_plugin(exe: Path, cp: ControlPlane, node: str) -> str:
    version = _run(exe, "--version")
    assert version.returncode == 0 and version.stdout.strip() == f"kubectl-joulie {VERSION}", version
    status = _run(exe, "--kubeconfig", str(cp.kubeconfig), "status")
    assert status.returncode == 0, status.stdout + status.stderr
    assert "CLUSTER ENERGY STATE" in status.stdout and node in status.stdout, status.stdout
    assert "Power: 321 W measured of 500 W capped" in status.stdout, status.stdout
    return status.stdout


def _installed(py: Path, venv: Path) -> Path:
    done = install(py, venv, find_wheel(Path.cwd()))
    if done.returncode != 0 and index_unreachable(done.stdout + done.stderr):
        pytest.skip(f"the package index is unreachable, so pip cannot fetch the wheel's dependencies:\n{done.stderr[-600:]}")
    assert done.returncode == 0, done.stdout + done.stderr
    return venv / "bin" / "kubectl-joulie"


@pytest.mark.parametrize("which", ["oldest", "current"])
def test_installed_wheel_shows_status(which: str, tmp_path: Path, control_plane: ControlPlane, cluster: str) -> None:
    py = oldest_python() if which == "oldest" else current_python()
    if py is None:
        pytest.skip("no Python 3.9 or 3.10 interpreter on this machine (looked on PATH and under ~/.pyenv/versions)")
    out = _check_plugin(_installed(py, tmp_path / "venv"), control_plane, cluster)
    print(f"{py}:\n{out}")


def test_krew_archive_launcher_installs_on_first_run(tmp_path: Path, control_plane: ControlPlane, cluster: str) -> None:
    archive = Path.cwd() / "kubectl-joulie-krew.tar.gz"
    with tarfile.open(archive) as tf:
        tf.extractall(tmp_path / "store")
    # krew links its bin into ~/.krew/bin; the launcher must find its wheel through the link.
    (tmp_path / "bin").mkdir()
    link = tmp_path / "bin" / "kubectl-joulie"
    link.symlink_to(tmp_path / "store" / "kubectl-joulie")
    env = pip_env() | {"XDG_DATA_HOME": str(tmp_path / "data"), "KUBECTL_JOULIE_PYTHON": str(current_python())}
    first = subprocess.run([str(link), "--version"], capture_output=True, text=True, timeout=600, env=env)
    if first.returncode != 0 and index_unreachable(first.stdout + first.stderr):
        pytest.skip(f"the package index is unreachable, so the launcher cannot install:\n{first.stderr[-600:]}")
    assert first.returncode == 0 and first.stdout.strip() == f"kubectl-joulie {VERSION}", first
    assert "installing" in first.stderr
    again = subprocess.run([str(link), "--kubeconfig", str(control_plane.kubeconfig), "status"],
                           capture_output=True, text=True, timeout=120, env=env | {"COLUMNS": "200"})
    assert again.returncode == 0 and "installing" not in again.stderr, again
    assert cluster in again.stdout
