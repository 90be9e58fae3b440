"""Which Pods' logs ``down`` keeps on the kubelet runtime, and under which names (issue 40: ``down``
deleted them with the node, so ``simcluster logs agent --node N`` failed afterwards)."""

from __future__ import annotations

from pathlib import Path

import pytest

from joulie_simcluster.runtimes import kube
from joulie_simcluster.runtimes.kubelet.podlogs import PodLog, pod_logs, save_pod_logs
from joulie_simcluster.state import StateDir


def test_every_pod_deploy_env_records_gets_the_log_name_simcluster_logs_reads() -> None:
    env = {"PID_simulator": "10", "COMPONENT_simulator": "simulator",
           "PID_controller-manager": "11", "POD_controller-manager": "joulie-system/joulie-controller-manager-6d9c",
           "POD_agent-intel-0": "joulie-system/joulie-agent-intel-0-7f5b", "URL_agent-intel-0": "http://x"}
    assert pod_logs(env) == [
        PodLog("joulie-system", "joulie-controller-manager-6d9c", "controller-manager.log"),
        PodLog("joulie-system", "joulie-agent-intel-0-7f5b", "agent-intel-0.log"),
    ]
    assert pod_logs(env)[1].api_path == "/api/v1/namespaces/joulie-system/pods/joulie-agent-intel-0-7f5b/log"


def test_malformed_or_process_entries_are_no_pods() -> None:
    assert pod_logs({"POD_x": "no-namespace", "POD_../etc": "ns/p", "PID_agent-a": "3"}) == []


def test_down_keeps_each_pods_log_in_logs_and_in_the_run_of_this_deploy(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state = StateDir(tmp_path / "state")
    state.write_deploy_env({"POD_agent-intel-0": "joulie-system/agent-a", "POD_controller-manager": "joulie-system/cm"})
    this, other = state.runs / "20261205T200000Z-smoke", state.runs / "20261205T210000Z-smoke"
    this.mkdir(parents=True)
    other.mkdir()
    (this / "deploy.env").write_text(state.deploy_env.read_text())  # collect() copied this deploy's record
    (other / "deploy.env").write_text("POD_agent-intel-0=joulie-system/older\n")
    answers = {"/api/v1/namespaces/joulie-system/pods/agent-a/log": (200, "agent says hi\n"),
               "/api/v1/namespaces/joulie-system/pods/cm/log": (404, "not found")}
    monkeypatch.setattr(kube, "api_get", lambda _kc, path, timeout_s: answers[path])
    said: list[str] = []
    assert save_pod_logs(state, said.append) == 1
    assert state.log("agent-intel-0").read_text() == "agent says hi\n"
    assert (this / "logs" / "agent-intel-0.log").read_text() == "agent says hi\n"
    assert not (other / "logs").exists() and not state.log("controller-manager").exists()
    assert any("joulie-system/cm not kept: HTTP 404" in s for s in said)
