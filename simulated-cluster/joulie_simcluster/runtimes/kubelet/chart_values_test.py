from __future__ import annotations

from pathlib import Path

from joulie_simcluster.runtimes.kubelet.chart_values import (
    AgentPod,
    PodPlan,
    chart_values,
    container_id,
    fakesmi_wrapper,
    pod_env,
    pod_line,
    pod_process_name,
    task_pids,
)

CLUSTER_ENV = {"API_PORT": "6443", "NODE_IP": "10.89.1.2", "PROMETHEUS_URL": "http://127.0.0.1:9090", "EXTENDER_PORT": "9876",
               "IMAGE_CONTROLLER_MANAGER": "joulie.local/joulie-controller-manager:dev-0123456789ab",
               "IMAGE_EXTENDER": "joulie.local/joulie-extender:dev-ba9876543210"}


def test_chart_values_use_the_imported_images_and_reach_the_api_on_loopback() -> None:
    v = chart_values(CLUSTER_ENV, "kl-node")
    cm, x = v["controllerManager"], v["schedulerExtender"]
    assert cm["image"] == {"repository": "joulie.local/joulie-controller-manager", "tag": "dev-0123456789ab",
                           "pullPolicy": "Never"}
    assert cm["hostNetwork"] is True and cm["nodeSelector"] == {"kubernetes.io/hostname": "kl-node"}
    assert cm["env"]["KUBERNETES_SERVICE_HOST"] == "127.0.0.1" and cm["env"]["KUBERNETES_SERVICE_PORT"] == "6443"
    assert cm["env"]["NODE_POWER_PROMETHEUS_ADDRESS"] == "http://127.0.0.1:9090"
    assert cm["env"]["METRICS_ADDR"] == "10.89.1.2:8081" and cm["metricsPort"] == 8081
    assert (x["enabled"], x["hostNetwork"], x["port"], x["nodeName"]) == (True, True, 9876, "kl-node")
    assert x["image"]["tag"] == "dev-ba9876543210" and v["agent"]["mode"] == "none"


def test_chart_values_with_the_pods_give_each_agent_its_port_tree_and_tool_host() -> None:
    env = {**CLUSTER_ENV, "IMAGE_AGENT": "joulie.local/joulie-agent:dev-aaaaaaaaaaaa"}
    pods = PodPlan(hwemu_root=Path("/s/hwemu"), files_view=True, fakesmi=Path("/s/bin/fakesmi.pex"),
                   agents=[AgentPod("intel-0", 31001), AgentPod("vm-0", 31002)],
                   agent_env={"RECONCILE_INTERVAL": "2s", "KUBERNETES_SERVICE_HOST": "elsewhere"},
                   controller_env={"RECONCILE_INTERVAL": "3s", "METRICS_ADDR": "0.0.0.0:1"}, controller_metrics_port=40000,
                   extender_env={"TWIN_STALENESS_THRESHOLD": "30s"})
    v = chart_values(env, "kl-node", pods)
    a = v["agent"]
    assert a["mode"] == "emulated" and a["image"]["tag"] == "dev-aaaaaaaaaaaa" and a["image"]["pullPolicy"] == "Never"
    assert a["env"]["RECONCILE_INTERVAL"] == "2s" and a["env"]["KUBERNETES_SERVICE_HOST"] == "127.0.0.1"
    e = a["emulated"]
    assert (e["hostNetwork"], e["hostRoot"], e["view"]) == (True, "/s/hwemu", "")
    assert e["fakesmiHostPath"] == "/s/hwemu/.tool-host/fakesmi" and pods.fakesmi_pex == Path("/s/hwemu/.tool-host/fakesmi.pex")
    assert e["nodes"] == [{"name": "intel-0", "metricsPort": 31001, "env": {"HWEMU_HOST_ROOT": "/s/hwemu/.tool-host/intel-0"}},
                          {"name": "vm-0", "metricsPort": 31002, "env": {"HWEMU_HOST_ROOT": "/s/hwemu/.tool-host/vm-0"}}]
    assert e["nodeSelector"] == {"kubernetes.io/hostname": "kl-node"}
    cm = v["controllerManager"]
    # The process runtime's settings, but the metrics address on the node's and this deploy's port.
    assert cm["env"]["RECONCILE_INTERVAL"] == "3s" and cm["env"]["METRICS_ADDR"] == "10.89.1.2:40000" and cm["metricsPort"] == 40000
    assert v["schedulerExtender"]["env"]["TWIN_STALENESS_THRESHOLD"] == "30s"
    fuse = chart_values(env, "kl-node", PodPlan(Path("/s/hwemu"), False, Path("/f"), [AgentPod("vm-0", 1)]))
    assert fuse["agent"]["emulated"]["view"] == "fuse"


def test_the_fakesmi_wrapper_passes_the_name_it_was_called_by() -> None:
    text = fakesmi_wrapper(Path("/s/hwemu/.tool-host/fakesmi.pex"))
    assert text.startswith("#!/bin/sh\n") and 'tool=$(basename "$0")' in text
    assert text.endswith("exec /usr/bin/env python3.11 '/s/hwemu/.tool-host/fakesmi.pex' \"$tool\" \"$@\"\n")
    assert "[ \"$tool\" = fakesmi ] && exec /usr/bin/env python3.11 '/s/hwemu/.tool-host/fakesmi.pex' \"$@\"" in text


def test_pod_env_leaves_the_host_paths_behind() -> None:
    env = {"PATH": "/usr/bin", "HOME": "/root", "PEX_ROOT": "/p", "KUBECONFIG": "/k", "METRICS_ADDR": "127.0.0.1:1",
           "GPU_TOOL_PATH": "/t", "NODE_NAME": "n", "ROOT": "/r", "HWEMU_HOST_ROOT": "/h", "RECONCILE_INTERVAL": "2s",
           "GPU_TOOL_TIMEOUT": "15", "LANG": "C.UTF-8"}
    assert pod_env(env) == {"RECONCILE_INTERVAL": "2s", "GPU_TOOL_TIMEOUT": "15", "LANG": "C.UTF-8"}


def test_a_chart_pod_is_named_as_the_process_runtime_names_its_process() -> None:
    def pod(component: str, node: str | None = None) -> dict[str, object]:
        meta: dict[str, object] = {"labels": {"app.kubernetes.io/component": component}}
        if node:
            meta["annotations"] = {"sim.joulie.io/node": node}
        return {"metadata": meta}

    assert pod_process_name(pod("agent", "intel-0")) == "agent-intel-0"
    assert pod_process_name(pod("agent")) is None
    assert pod_process_name(pod("controller-manager")) == "controller-manager"
    assert pod_process_name(pod("scheduler-extender")) == "extender"
    assert pod_process_name(pod("something-else")) is None and pod_process_name({}) is None


def test_a_daemonset_agent_is_named_after_the_node_it_was_scheduled_on() -> None:
    # The agent DaemonSet on the agent nodes (SIMCLUSTER_KUBELET_NODES > 1): no emulated-Node annotation.
    ds_pod = {"metadata": {"labels": {"app.kubernetes.io/component": "agent"}, "ownerReferences": [{"kind": "DaemonSet"}]},
              "spec": {"nodeName": "intel-0"}}
    assert pod_process_name(ds_pod) == "agent-intel-0"
    unscheduled = {**ds_pod, "spec": {}}
    assert pod_process_name(unscheduled) is None


def test_the_running_container_and_its_task_pid() -> None:
    running = {"status": {"containerStatuses": [{"containerID": "containerd://abc", "state": {"running": {}}}]}}
    waiting = {"status": {"containerStatuses": [{"containerID": "containerd://old", "state": {"waiting": {}}}]}}
    assert container_id(running) == "abc" and container_id(waiting) is None and container_id({}) is None
    listing = "TASK    PID     STATUS\nabc     4242    RUNNING\ndef     4343    STOPPED\nghi     0       CREATED\n"
    assert task_pids(listing) == {"abc": 4242}


def test_pod_line_reads_like_kubectl_wide() -> None:
    pod = {"metadata": {"name": "joulie-extender-1"}, "spec": {"containers": [{}], "nodeName": "kl-node"},
           "status": {"phase": "Running", "podIP": "10.89.1.2",
                      "containerStatuses": [{"ready": True, "restartCount": 2}]}}
    line = pod_line(pod)
    assert line.split() == ["joulie-extender-1", "1/1", "Running", "restarts", "2", "ip", "10.89.1.2", "node", "kl-node"]
    assert pod_line({}).split()[:3] == ["?", "0/0", "?"]
