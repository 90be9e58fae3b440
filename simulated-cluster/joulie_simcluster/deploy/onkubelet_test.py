import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from joulie_simcluster.deploy import components as comp
from joulie_simcluster.deploy import onkubelet
from joulie_simcluster.deploy.components_test import plan
from joulie_simcluster.deploy.processes import deployed_alive, recorded_deploy_pids
from joulie_simcluster.errors import RuntimeFailure
from joulie_simcluster.runtimes.kubelet.chart_values import chart_values, pod_ready, ports_in_values, with_live_pods
from joulie_simcluster.runtimes.pids import start_ticks


def test_the_fuse_view_is_refused_before_anything_starts() -> None:
    with pytest.raises(RuntimeFailure, match="use SIMCLUSTER_HWEMU=files"):
        onkubelet.check_mode("fuse")
    onkubelet.check_mode("files")


def test_agent_ports_stay_below_the_ephemeral_range_and_skip_taken_ones() -> None:
    taken = set()
    first = onkubelet.host_ports(["a", "b"], "/state/one", lambda port: port not in taken)
    assert all(onkubelet.PORTS_FROM <= p < onkubelet.PORTS_TO for p in first.values())
    assert first == onkubelet.host_ports(["a", "b"], "/state/one", lambda port: True)  # the same every time
    taken.add(first["a"])
    again = onkubelet.host_ports(["a", "b"], "/state/one", lambda port: port not in taken)
    assert again["a"] == first["b"] and again["b"] not in taken and len(set(again.values())) == 2
    with pytest.raises(RuntimeFailure, match="no 1 free ports"):
        onkubelet.host_ports(["a"], "/s", lambda port: False)


def test_the_simulator_and_the_workload_stay_on_the_host_the_rest_become_pods(tmp_path: Path) -> None:
    p = replace(plan(tmp_path, "files"), cluster="smoke")
    p = replace(p, ports=replace(p.ports, workload_metrics=18090))
    host, pods = onkubelet.split(comp.commands(p))
    assert [c.name for c in host] == ["simulator", "workload"]
    assert [c.name for c in pods] == ["extender", "controller-manager", "agent-h100-0", "agent-intel-0"]


def test_each_pod_gets_its_process_settings_and_reports_where_the_process_would(tmp_path: Path) -> None:
    p = plan(tmp_path, "files")
    _, pods = onkubelet.split(comp.commands(p))
    pp, urls = onkubelet.pod_plan(p, pods, "10.89.1.2")
    assert [(a.node, a.metrics_port) for a in pp.agents] == [("h100-0", 20001), ("intel-0", 20002)]
    assert pp.files_view and pp.hwemu_root == tmp_path / "hwemu" and pp.fakesmi == p.binaries["fakesmi"]
    assert pp.agent_env is not None and pp.agent_env["RECONCILE_INTERVAL"] == "3s" and pp.agent_env["GPU_TOOL_TIMEOUT"] == "60"
    assert not {"PATH", "KUBECONFIG", "ROOT", "NODE_NAME", "GPU_TOOL_PATH", "METRICS_ADDR"} & set(pp.agent_env)
    assert pp.controller_env is not None and pp.controller_env["NODE_POWER_PROMETHEUS_ADDRESS"] == "http://127.0.0.1:9090"
    assert pp.controller_metrics_port == 8081
    assert urls["agent-h100-0"] == "http://127.0.0.1:20001/metrics"
    moved, moved_urls = onkubelet.pod_plan(p, pods, "10.89.1.2", {"h100-0": 21000, "intel-0": 21001})
    assert [a.metrics_port for a in moved.agents] == [21000, 21001] and moved_urls["agent-intel-0"] == "http://127.0.0.1:21001/metrics"
    assert urls["controller-manager"] == "http://10.89.1.2:8081/metrics"
    assert urls["extender"] == "http://127.0.0.1:9876/metrics"


def test_pool_agents_and_controller_replicas_are_refused(tmp_path: Path) -> None:
    p = replace(plan(tmp_path, "files"), agent_shards=1, ports=replace(plan(tmp_path).ports, agent_metrics={"shard-0": 1}))
    with pytest.raises(RuntimeFailure, match="SIMCLUSTER_AGENT_SHARDS=0"):
        onkubelet.pod_plan(p, onkubelet.split(comp.commands(p))[1], "10.89.1.2")
    replicas = replace(plan(tmp_path, "files"), controller_replicas=2,
                       ports=replace(plan(tmp_path).ports, controller_replica_metrics=(1,)))
    with pytest.raises(RuntimeFailure, match=r"replicas=2 .* binds its metrics port on its node.* one kubelet node"):
        onkubelet.pod_plan(replicas, onkubelet.split(comp.commands(replicas))[1], "10.89.1.2")
    proxied = replace(plan(tmp_path, "files"), api_proxy=comp.ApiProxy(1, "https://127.0.0.1:2", tmp_path, tmp_path / "f",
                                                                        "python3", ""))
    with pytest.raises(RuntimeFailure, match="SIMCLUSTER_API_PROXY"):
        onkubelet.pod_plan(proxied, onkubelet.split(comp.commands(proxied))[1], "10.89.1.2")


def test_mounted_tool_delivery_puts_the_stubs_where_the_agent_pod_sees_them(tmp_path: Path) -> None:
    p = plan(tmp_path, "files")
    p.binaries["fakesmi"].parent.mkdir(parents=True)
    p.binaries["fakesmi"].write_bytes(b"PK fakesmi")
    pp, _ = onkubelet.pod_plan(p, onkubelet.split(comp.commands(p))[1], "10.89.1.2")
    onkubelet.write_tool_hosts(p, pp)
    host = tmp_path / "hwemu" / ".tool-host"
    # fakesmi where the Pods see it, and the wrapper the chart mounts at /emu/lib/fakesmi.
    assert (host / "fakesmi.pex").read_bytes() == b"PK fakesmi"
    assert f"'{host / 'fakesmi.pex'}'" in (host / "fakesmi").read_text() and (host / "fakesmi").stat().st_mode & 0o111
    assert (host / "h100-0/lib64/ld-linux-x86-64.so.2").is_file() and (host / "h100-0/usr/lib/libnvidia-ml.so.1").is_file()
    assert (host / "intel-0").is_dir() and not any((host / "intel-0").iterdir())


def test_a_pod_recreated_by_helm_upgrade_reads_as_running_and_a_dead_one_as_not() -> None:
    # deploy recorded the controller manager's first container (long gone: a PID no process has);
    # helm upgrade recreated the Pod, whose container is this test's process now.
    me = os.getpid()
    recorded = {"PID_controller-manager": "999999999", "START_controller-manager": "1",
                "POD_controller-manager": "joulie-system/joulie-controller-manager-old", "URL_controller-manager": "u",
                "PID_agent-intel-0": "999999998", "START_agent-intel-0": "1", "POD_agent-intel-0": "joulie-system/a",
                "HWEMU_MODE": "files"}
    assert not deployed_alive("controller-manager", 999999999, recorded)
    live = {"PID_controller-manager": str(me), "START_controller-manager": start_ticks(me),
            "POD_controller-manager": "joulie-system/joulie-controller-manager-new", "URL_controller-manager": "u"}
    now = with_live_pods(recorded, live)
    alive = {name: deployed_alive(name, pid, now) for name, pid in recorded_deploy_pids(now)}
    assert alive == {"controller-manager": True, "agent-intel-0": False}  # the agent has no running container
    assert now["POD_controller-manager"].endswith("-new") and now["HWEMU_MODE"] == "files"


def test_status_counts_a_pod_up_only_when_running_ready_and_not_going() -> None:
    def pod(phase: str, ready: bool, deleting: bool = False) -> dict[str, object]:
        meta = {"deletionTimestamp": "2026-12-06T00:00:00Z"} if deleting else {}
        return {"metadata": meta, "status": {"phase": phase, "containerStatuses": [{"ready": ready}]}}

    assert pod_ready(pod("Running", True))
    assert not pod_ready(pod("Running", False)) and not pod_ready(pod("Pending", False))
    assert not pod_ready(pod("Running", True, deleting=True)) and not pod_ready({"status": {"phase": "Running"}})


def test_a_second_deploy_gives_unchanged_pods_the_same_values_so_helm_keeps_them(tmp_path: Path) -> None:
    cluster = {"API_PORT": "6443", "NODE_IP": "10.89.1.2", "PROMETHEUS_URL": "http://127.0.0.1:9090",
               "EXTENDER_PORT": "9876", "IMAGE_AGENT": "joulie.local/joulie-agent:dev-1",
               "IMAGE_CONTROLLER_MANAGER": "joulie.local/joulie-controller-manager:dev-2",
               "IMAGE_EXTENDER": "joulie.local/joulie-extender:dev-3"}
    first = plan(tmp_path, "files")
    nodes = [a.name for a in first.agents]

    def values(p: comp.Plan, previous: dict[str, int], held: set[str], bindable: Callable[[int], bool]) -> dict[str, Any]:
        ports, cm = onkubelet.choose_ports(nodes, "/state/kl", previous, held, bindable)
        pp, _ = onkubelet.pod_plan(p, onkubelet.split(comp.commands(p))[1], "10.89.1.2", ports, controller_port=cm)
        # as deploy writes chart-values.yaml and the next deploy reads it back
        return dict(yaml.safe_load(yaml.safe_dump(chart_values(cluster, "kl-node", pp), sort_keys=False)))

    v1 = values(first, {}, set(), lambda port: True)
    bound = set(ports_in_values(v1).values())  # the first deploy's Pods hold these now
    assert len(bound) == len(nodes) + 1 and all(onkubelet.PORTS_FROM <= p < onkubelet.PORTS_TO for p in bound)
    # The second deploy's plan: free_port() gave the process-runtime ports afresh.
    second = replace(first, ports=replace(first.ports, controller_metrics=first.ports.controller_metrics + 7,
                                          agent_metrics={n: p + 100 for n, p in first.ports.agent_metrics.items()}))
    everyone = {"controller-manager", *(f"agent-{n}" for n in nodes)}
    v2 = values(second, ports_in_values(v1), everyone, lambda port: port not in bound)
    assert v2 == v1
    # Without the last deploy's ports (the old rule) every port moved: every Pod's spec changed.
    moved = values(second, {}, set(), lambda port: port not in bound)
    assert set(ports_in_values(moved).values()).isdisjoint(bound)
    # A port the last deploy used that its Pod no longer holds and something else took: a new one.
    lost = f"agent-{nodes[0]}"
    taken = ports_in_values(v1)[lost]
    v3 = values(second, ports_in_values(v1), everyone - {lost}, lambda port: port not in bound)
    assert ports_in_values(v3)[lost] != taken and len(set(ports_in_values(v3).values())) == len(nodes) + 1
    assert {k: p for k, p in ports_in_values(v3).items() if k != lost} == {
        k: p for k, p in ports_in_values(v1).items() if k != lost}


def test_with_agent_nodes_the_daemonset_runs_there_alone_and_says_so() -> None:
    agents = [comp.AgentNode(n, "none") for n in ("intel-0", "epyc-0", "intel-managed-0", "h100-nvl-0")]
    said: list[str] = []
    cluster = {"KUBELET_AGENT_NODES": "intel-0,intel-managed-0"}
    chosen = onkubelet.daemonset_agents(cluster, agents, said.append)
    assert [a.name for a in chosen] == ["intel-0", "intel-managed-0"]
    assert said == ["agent DaemonSet on the agent nodes intel-0, intel-managed-0; the 2 other eligible (fake) Nodes "
                    "get no agent"]
    assert onkubelet.daemonset_agents({}, agents, said.append) == agents  # one kubelet node: every agent, as before


def test_an_agent_node_the_daemonset_does_not_reach_is_refused() -> None:
    with pytest.raises(RuntimeFailure, match="agent nodes intel-0 are not among the Nodes the agent DaemonSet reaches"):
        onkubelet.daemonset_agents({"KUBELET_AGENT_NODES": "intel-0"}, [comp.AgentNode("epyc-0", "none")], print)


def test_daemonset_agents_report_on_their_own_node_address() -> None:
    cluster = {"KUBELET_AGENT_NODES": "intel-0,intel-managed-0", "NODE_IP_1": "10.89.7.8", "NODE_IP_2": "10.89.7.9"}
    assert onkubelet.daemonset_urls(cluster, {"intel-0": 24000, "intel-managed-0": 24000}) == {
        "agent-intel-0": "http://10.89.7.8:24000/metrics", "agent-intel-managed-0": "http://10.89.7.9:24000/metrics"}
