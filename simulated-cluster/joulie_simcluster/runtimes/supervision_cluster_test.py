"""Supervision of the process runtime with the real control plane: the supervisor restarts a
killed etcd and kube-apiserver on their existing data (an object written before survives), counts
the restarts in ``simcluster status``; with no supervisor, ``up`` restarts a dead kube-apiserver on
the existing data rather than rebuilding on a fresh etcd."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes import client as k8s

from joulie_api.kubeconfig import api_client
from joulie_simcluster.runtimes.kube import api_ready
from joulie_simcluster.runtimes.pids import pid_alive
from joulie_simcluster.runtimes.runtime_cluster_test import simcluster
from joulie_simcluster.runtimes.supervision import control
from joulie_simcluster.state import StateDir, pid_key, recorded_pids

SPEC = {"name": "tiny", "pools": [{"name": "intel", "profile": "intel-xeon-2s-rapl", "count": 1,
                                   "labels": {"joulie.io/managed": "true"}}]}


def eventually(cond: Callable[[], bool], timeout_s: float, what: str) -> float:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        try:
            if cond():
                return time.monotonic() - t0
        except Exception:  # - the API is down while it restarts
            pass
        time.sleep(0.3)
    raise AssertionError(f"not within {timeout_s:.0f}s: {what}")


@pytest.fixture
def state(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "state"
    try:
        yield root
    finally:
        simcluster(root, "down")
        control.stop(StateDir(root))
        for proc, pid in recorded_pids(StateDir(root).read_cluster_env() or {}):
            if pid_alive(pid, proc):
                os.killpg(pid, 9)


def configmap(sd: StateDir) -> str:
    cm = k8s.CoreV1Api(api_client(sd.kubeconfig)).read_namespaced_config_map("survivor", "default")
    return str((cm.data or {})["written"])


def pid_of(sd: StateDir, proc: str) -> int:
    return int((sd.read_cluster_env() or {})[pid_key(proc)])


def test_the_control_plane_is_restarted_on_its_data(state: Path, tmp_path: Path) -> None:
    spec = tmp_path / "tiny.yaml"
    spec.write_text(yaml.safe_dump(SPEC))
    r = simcluster(state, "up", "--spec", str(spec))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "supervisor running (pid" in r.stdout
    sd = StateDir(state)
    k8s.CoreV1Api(api_client(sd.kubeconfig)).create_namespaced_config_map(
        "default", k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name="survivor"), data={"written": "before"}))

    for proc in ("etcd", "kube-apiserver"):
        old = pid_of(sd, proc)
        os.killpg(old, signal.SIGKILL)
        took_s = eventually(lambda p=proc, o=old: pid_of(sd, p) != o and pid_alive(pid_of(sd, p), p)  # type: ignore[misc]
                            and api_ready(sd.kubeconfig), 90, f"{proc} restarted")
        print(f"{proc}: restarted and API ready {took_s:.1f}s after SIGKILL")
        assert configmap(sd) == "before", f"{proc} came back on another etcd's data"
    assert control.restarts(sd)["etcd"] == 1 and control.restarts(sd)["kube-apiserver"] == 1
    r = simcluster(state, "status")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "supervisor: pid" in r.stdout and "running" in r.stdout
    lines = {ln.split()[0]: ln for ln in r.stdout.splitlines() if ln.startswith("  ")}
    assert "restarts 1" in lines["etcd"] and "restarts 1" in lines["kube-apiserver"]
    assert "restarts 0" in lines["kube-scheduler"]

    # No supervisor (it died with the machine's session, say): up starts the dead process again.
    assert control.stop(sd)
    etcd = pid_of(sd, "etcd")
    os.killpg(pid_of(sd, "kube-apiserver"), signal.SIGKILL)
    r = simcluster(state, "up", "--spec", str(spec))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "kube-apiserver (pid" in r.stdout and "started again on the existing data" in r.stdout
    assert "reusing the running cluster" in r.stdout and "starting one" not in r.stdout
    assert pid_of(sd, "etcd") == etcd and configmap(sd) == "before"
    assert control.read(sd) is not None and control.read(sd).running  # type: ignore[union-attr]
