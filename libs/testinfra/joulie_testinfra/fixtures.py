"""pytest fixtures over the real control plane, KWOK, kube-scheduler and Prometheus 3.

Use from a test module with `pytest_plugins = ["joulie_testinfra.fixtures"]` (or a conftest).
Everything is session-scoped: one control plane per test process. Processes are stopped by PID
at teardown; when a test in the session failed, the last lines of every log are printed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client as k8s

from joulie_localcluster.controlplane import ControlPlane, start_control_plane
from joulie_localcluster.kwok import start_kwok
from joulie_localcluster.procs import ManagedProcess, ProcessGroup
from joulie_localcluster.prometheus import Prometheus, start_prometheus
from joulie_localcluster.scheduler import start_scheduler
from joulie_localcluster.tools import ToolMissingError, Tools, load_tools

CRD_DIR = Path("charts/joulie/crds")
# Issue budget: the control plane with CRDs must be ready within 30 s.
CONTROL_PLANE_TIMEOUT_S = 30.0


def _report(session: pytest.Session, group: ProcessGroup, workdir: Path) -> None:
    (workdir / "processes.txt").write_text("\n".join(group.describe()) + "\n")
    if session.testsfailed:
        for p in group.procs:
            print(f"\n----- {p.name} (pid {p.proc.pid if p.proc else '-'}) last log lines: {p.log_path}")
            print(p.log_tail(60))


@pytest.fixture(scope="session")
def test_tools() -> Tools:
    try:
        return load_tools()
    except ToolMissingError as err:
        pytest.fail(str(err), pytrace=False)


@pytest.fixture(scope="session")
def control_plane(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, test_tools: Tools
) -> Iterator[ControlPlane]:
    workdir = tmp_path_factory.mktemp("control-plane")
    cp = start_control_plane(test_tools, workdir, crd_dir=CRD_DIR, timeout_s=CONTROL_PLANE_TIMEOUT_S)
    try:
        yield cp
    finally:
        _report(request.session, cp.group, workdir)
        cp.stop()


@pytest.fixture(scope="session")
def kube_api(control_plane: ControlPlane) -> k8s.ApiClient:
    return control_plane.api_client()


@pytest.fixture(scope="session")
def kwok(control_plane: ControlPlane, test_tools: Tools) -> ManagedProcess:
    return start_kwok(test_tools, control_plane)


@pytest.fixture(scope="session")
def scheduler(control_plane: ControlPlane, test_tools: Tools) -> ManagedProcess:
    return start_scheduler(test_tools, control_plane)


@pytest.fixture(scope="session")
def prometheus(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, test_tools: Tools
) -> Iterator[Prometheus]:
    workdir = tmp_path_factory.mktemp("prometheus")
    group = ProcessGroup()
    prom = start_prometheus(test_tools, workdir, group)
    try:
        yield prom
    finally:
        _report(request.session, group, workdir)
        group.stop_all()
