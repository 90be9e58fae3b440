"""The process runtime end to end: real etcd, kube-apiserver, kube-scheduler and KWOK.

The CLI runs as a child process, as a user runs it, so the test also shows the cluster outlives it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from joulie_api import names
from joulie_simcluster.runtimes.kube import core_api, list_nodes, node_name, node_ready
from joulie_simcluster.runtimes.pids import pid_alive
from joulie_simcluster.state import PROCESSES, StateDir, pid_key, recorded_pids

SMOKE = Path("simulated-cluster/specs/smoke.yaml")


def simcluster(state: Path, *args: str, keep: bool = False, telemetry: str = "otlp") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SIMCLUSTER_DIR": str(state), "PYTHONPATH": os.pathsep.join(sys.path),
           "SIMCLUSTER_TELEMETRY": telemetry}
    env.pop("SIMCLUSTER_KEEP", None)
    if keep:
        env["SIMCLUSTER_KEEP"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "joulie_simcluster.cli", *args], env=env, capture_output=True, text=True, timeout=180
    )


@pytest.fixture
def state(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "state"
    try:
        yield root
    finally:
        simcluster(root, "down")
        # Belt and braces: nothing this test started may survive it.
        env = StateDir(root).read_cluster_env() or {}
        for proc, pid in recorded_pids(env):
            if pid_alive(pid, proc):
                os.killpg(pid, 9)


def test_up_reuse_shrink_status_down(state: Path, tmp_path: Path) -> None:
    # A previous cluster's Prometheus data (another telemetry mode's series) must not be read again.
    (state / "tsdb").mkdir(parents=True)
    (state / "tsdb" / "from-an-earlier-run").touch()
    started = time.monotonic()
    r = simcluster(state, "up", "--spec", str(SMOKE))
    up_s = time.monotonic() - started
    assert r.returncode == 0, r.stdout + r.stderr
    print(r.stdout, f"up from nothing to 9 Ready Nodes: {up_s:.1f}s", sep="\n")
    assert "simcluster up: spec smoke, 9 Nodes applied, 0 deleted" in r.stdout
    assert "[" in r.stdout.splitlines()[0] and "s]" in r.stdout.splitlines()[0]

    sd = StateDir(state)
    env = sd.read_cluster_env()
    assert env is not None
    pids = dict(recorded_pids(env))
    assert set(pids) == set(PROCESSES)
    assert all(pid_alive(pid, proc) for proc, pid in pids.items()), "processes must outlive the CLI"
    assert env["SPEC_NAME"] == "smoke" and env["API_URL"].startswith("https://127.0.0.1:")
    assert yaml.safe_load(sd.spec.read_text())["name"] == "smoke"
    assert all(sd.log(p).is_file() for p in PROCESSES)
    assert not (state / "tsdb" / "from-an-earlier-run").exists()

    nodes = list_nodes(core_api(sd.kubeconfig))
    assert len(nodes) == 9 and all(node_ready(n) for n in nodes)
    by_name = {node_name(n): n for n in nodes}
    assert by_name["arm64-managed-0"]["metadata"]["labels"]["kubernetes.io/arch"] == "arm64"
    for n in nodes:
        labels = n["metadata"]["labels"]
        assert labels[names.LABEL_SIM_CLUSTER] == "smoke"
        assert labels[names.LABEL_SIM_POOL] == node_name(n).rsplit("-", 1)[0]
        assert labels["joulie.io/managed"] == "true"
        assert n["metadata"]["annotations"]["kwok.x-k8s.io/node"] == "fake"
        assert {"key": "kwok.x-k8s.io/node", "value": "fake", "effect": "NoSchedule"} in n["spec"]["taints"]

    # A smaller spec (another name, too): same processes, the dropped Nodes deleted.
    small = tmp_path / "small.yaml"
    small.write_text(yaml.safe_dump({
        "name": "small",
        "pools": [
            {"name": "intel", "profile": "intel-xeon-2s-rapl", "count": 1, "labels": {"joulie.io/managed": "true"}},
            {"name": "vm", "profile": "vm-no-powercap", "count": 2},
        ],
    }))
    r = simcluster(state, "up", "--spec", str(small))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "reusing the running cluster" in r.stdout
    assert "simcluster up: spec small, 3 Nodes applied, 7 deleted" in r.stdout
    env2 = sd.read_cluster_env()
    assert env2 is not None and dict(recorded_pids(env2)) == pids
    assert env2["SPEC_NAME"] == "small"
    nodes = list_nodes(core_api(sd.kubeconfig))
    assert sorted(node_name(n) for n in nodes) == ["intel-0", "vm-0", "vm-1"]
    assert all(n["metadata"]["labels"][names.LABEL_SIM_CLUSTER] == "small" and node_ready(n) for n in nodes)

    r = simcluster(state, "status")
    assert r.returncode == 0, r.stdout + r.stderr
    print(r.stdout)
    for proc, pid in pids.items():
        assert f"{proc}" in r.stdout and f"pid {pid}" in r.stdout
    assert " ready" in r.stdout and "nodes: 3 (3 Ready)" in r.stdout

    # Another telemetry mode on the live cluster: Prometheus again, and the Collector it needs.
    r = simcluster(state, "up", "--spec", str(small), telemetry="otel-bridge")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "otelcol healthy (otel-bridge: scraping 127.0.0.1:" in r.stdout
    assert "prometheus restarted" in r.stdout and "reusing the running cluster" in r.stdout
    env3 = sd.read_cluster_env()
    assert env3 is not None and env3["TELEMETRY"] == "otel-bridge"
    col_pid = int(env3[pid_key("otelcol")])
    assert pid_alive(col_pid, "otelcol") and not pid_alive(pids["prometheus"])
    assert "/metrics/components" in (state / "otelcol.yaml").read_text()
    assert dict(recorded_pids(env3))["etcd"] == pids["etcd"]

    r = simcluster(state, "down", keep=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "stopped 6 processes" in r.stdout and "stopped otelcol" in r.stdout
    assert not any(pid_alive(pid) for pid in [*pids.values(), col_pid])
    assert not sd.cluster_env.exists() and sd.log("kube-apiserver").is_file()

    r = simcluster(state, "status")
    assert r.returncode == 1 and "no cluster recorded" in r.stdout
    r = simcluster(state, "down")
    assert r.returncode == 0 and "stopped 0 processes" in r.stdout
    assert not state.exists()


def test_a_process_that_fails_to_start_is_named_with_its_log_and_nothing_is_left(tmp_path: Path) -> None:
    real = Path(os.environ.get("JOULIE_CACHE") or Path.home() / ".cache" / "joulie") / "bin" / "tools.env"
    cache = tmp_path / "cache"
    (cache / "bin").mkdir(parents=True)
    fake = cache / "bin" / "kwok-vbroken"
    fake.write_text("#!/bin/sh\necho 'kwok: broken on purpose'\nexit 3\n")
    fake.chmod(0o755)
    lines = [ln for ln in real.read_text().splitlines() if not ln.startswith("KWOK=")]
    (cache / "bin" / "tools.env").write_text("\n".join([*lines, f"KWOK={fake}"]) + "\n")
    root = tmp_path / "state"
    env = {**os.environ, "SIMCLUSTER_DIR": str(root), "JOULIE_CACHE": str(cache), "PYTHONPATH": os.pathsep.join(sys.path)}
    r = subprocess.run(
        [sys.executable, "-m", "joulie_simcluster.cli", "up", "--spec", str(SMOKE)],
        env=env, capture_output=True, text=True, timeout=180,
    )
    assert r.returncode == 1, r.stdout + r.stderr
    assert "simcluster up: starting the control plane failed: kwok exited with code 3" in r.stderr
    assert f"{root / 'logs' / 'kwok.log'}" in r.stderr and "kwok: broken on purpose" in r.stderr
    assert StateDir(root).read_cluster_env() is None
    # etcd, kube-apiserver and kube-scheduler were started and must have been stopped again.
    for proc in ("etcd", "kube-apiserver", "kube-scheduler"):
        out = subprocess.run(["pgrep", "-f", f"{root}/"], capture_output=True, text=True).stdout.split()
        assert not [pid for pid in out if pid_alive(int(pid), proc)], f"{proc} survived a failed up"


def test_status_names_recorded_processes_that_are_gone(tmp_path: Path) -> None:
    sd = StateDir(tmp_path / "state")
    sd.write_cluster_env({"API_URL": "https://127.0.0.1:1", pid_key("etcd"): "999999999", "SPEC_NAME": "smoke"})
    r = simcluster(sd.root, "status")
    assert r.returncode == 1
    assert "etcd            pid 999999999 NOT RUNNING" in r.stdout and "NOT READY" in r.stdout
