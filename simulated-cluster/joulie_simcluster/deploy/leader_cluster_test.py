"""Leader election with two controller-manager replicas as ``deploy`` starts them (command lines
from ``components.controller_command``), real processes against the real kube-apiserver: one holds
the Lease; SIGKILL it and the other takes over within the lease duration."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from kubernetes import client as k8s

from joulie_localcluster.controlplane import ControlPlane
from joulie_localcluster.procs import ManagedProcess, free_port
from joulie_simcluster.deploy import components as comp
from joulie_simcluster.deploy.start import ensure_namespace
from joulie_simcluster.timing import timing

pytest_plugins = ["joulie_testinfra.fixtures"]


def eventually(cond: Callable[[], bool], timeout_s: float, what: str) -> float:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        with contextlib.suppress(Exception):
            if cond():
                return time.monotonic() - t0
        time.sleep(0.2)
    raise AssertionError(f"not within {timeout_s:.0f}s: {what}")


def leading(cmd: comp.Command) -> bool:
    with urllib.request.urlopen(cmd.metrics_url, timeout=2) as resp:
        return "joulie_policy_leader 1.0" in resp.read().decode()


@pytest.fixture
def replicas(control_plane: ControlPlane, tmp_path: Path) -> Iterator[list[tuple[comp.Command, ManagedProcess]]]:
    plan = comp.Plan(
        state=tmp_path, binaries={"controller-manager": Path("unused")}, kubeconfig=control_plane.kubeconfig,
        prometheus_url="http://127.0.0.1:1", spec_file=tmp_path / "spec.yaml", mode="files", timing=timing("ci"),
        ports=comp.Ports(0, 0, 0, free_port(), {}, controller_replica_metrics=(free_port(),)), agents=[],
        python_path_env={"PATH": os.environ["PATH"], "PYTHONPATH": os.pathsep.join(os.path.abspath(p) for p in sys.path if p)},
        controller_replicas=2,
    )
    ensure_namespace(control_plane.kubeconfig, comp.LEADER_NAMESPACE)
    started = []
    for i in range(2):
        cmd = comp.controller_command(plan, i)
        # The same command line as the released binary's, run from source.
        cmd = replace(cmd, argv=[sys.executable, "-m", "joulie_controller.cli", *cmd.argv[1:]],
                      env={**cmd.env, "NODE_POWER_SOURCE": "static"})
        started.append((cmd, ManagedProcess(cmd.name, cmd.argv, cmd.log, env=cmd.env).start()))
    try:
        yield started
    finally:
        for _, proc in started:
            proc.stop(grace_s=5)


def test_the_other_replica_takes_the_lease_when_the_leader_is_killed(
    control_plane: ControlPlane, replicas: list[tuple[comp.Command, ManagedProcess]]
) -> None:
    coord = k8s.CoordinationV1Api(control_plane.api_client())

    def holder() -> str:
        spec = coord.read_namespaced_lease("joulie-controller-manager", comp.LEADER_NAMESPACE).spec
        return str(spec.holder_identity or "") if spec else ""

    eventually(lambda: holder() in ("controller-manager", "controller-manager-1"), 60, "one replica holds the Lease")
    first = holder()
    (leader_cmd, leader), (other_cmd, other) = sorted(replicas, key=lambda r: r[0].name != first)
    eventually(lambda: leading(leader_cmd) and not leading(other_cmd), 30, f"{first} leads, the other waits")
    os.killpg(leader.pid, signal.SIGKILL)  # no release on the way out: the lease must expire
    took_s = eventually(lambda: holder() == other_cmd.name and leading(other_cmd), 60, f"{other_cmd.name} takes over")
    lease_s = timing("ci").lease_duration_s
    print(f"failover: {other_cmd.name} leads {took_s:.1f}s after {first} was killed (lease {lease_s:g}s)")
    assert took_s <= lease_s + 3 * timing("ci").controller_interval_s + 5
    assert other.alive()
    spec = coord.read_namespaced_lease("joulie-controller-manager", comp.LEADER_NAMESPACE).spec
    assert spec is not None and (spec.lease_transitions or 0) >= 1 and spec.lease_duration_seconds == int(lease_s)
