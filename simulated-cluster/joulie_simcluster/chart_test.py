"""The Joulie charts with the real helm (lint, template): what a user installing the charts notices:
the objects and their names, the images, the agent's privileges and mounts per mode, the emulated
agents' Node names, the RBAC rules. The same renders against the real kube-apiserver:
``chart_server_test.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from joulie_api.controller_env import CONTROLLER_ENV
from joulie_simcluster import chart
from joulie_simcluster.agents import select_agents
from joulie_simcluster.chart_cases import (  # helm: the autouse check, here too
    AMD_VALUES,
    CASES,
    DASHBOARD,
    EMULATED_VALUES,
    EXTENDER_VALUES,
    JOULIE,
    NS,
    NVIDIA_VALUES,
    POOL_VALUES,
    PRODUCTION_VALUES,
    SMOKE_AGENT_NODES,
    SMOKE_SPEC,
    SMOKE_VALUES,
    VERSION_FILES,
    container,
    env_of,
    helm,
    ids,
    one,
    render,
    rules,
    version,
)
from joulie_simcluster.nodes import render_nodes
from joulie_simcluster.spec import load_spec

pytest_plugins = ["joulie_testinfra.fixtures"]

__all__ = ["helm"]

# --- helm lint ----------------------------------------------------------------------------------


@pytest.mark.parametrize("values", [[], [SMOKE_VALUES], [SMOKE_VALUES, EMULATED_VALUES], [POOL_VALUES],
                                    [EXTENDER_VALUES], [PRODUCTION_VALUES], [NVIDIA_VALUES], [AMD_VALUES]],
                         ids=["defaults", "smoke", "emulated", "pool", "extender", "production", "nvidia", "amd"])
def test_lint_joulie(values: list[Path]) -> None:
    report = chart.lint_chart(JOULIE, values)
    assert "1 chart(s) linted, 0 chart(s) failed" in report


# --- helm template: what each mode installs -------------------------------------------------------

@pytest.mark.parametrize("case", list(CASES))
def test_no_object_is_rendered_twice_and_namespaced_ones_land_in_the_release_namespace(case: str) -> None:
    docs = render(case)
    keys = [(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]) for d in docs]
    assert len(keys) == len(set(keys)), f"duplicates: {sorted(k for k in keys if keys.count(k) > 1)}"
    cluster_scoped = {"CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "ValidatingAdmissionPolicy",
                      "ValidatingAdmissionPolicyBinding"}
    for d in docs:
        assert (d["metadata"].get("namespace") is None) == (d["kind"] in cluster_scoped), d["metadata"]
        if d["kind"] not in cluster_scoped:
            assert d["metadata"]["namespace"] == NS


def test_defaults_install_the_daemonset_agent_and_the_controller_manager() -> None:
    docs = render("defaults")
    workloads = [(k, n) for k, n in ids(docs) if k in ("DaemonSet", "StatefulSet", "Deployment")]
    assert workloads == [("DaemonSet", "joulie-agent"), ("Deployment", "joulie-controller-manager")]
    assert sorted(n for k, n in ids(docs) if k == "CustomResourceDefinition") == [
        "nodehardwares.joulie.io", "nodetwins.joulie.io"]
    assert not chart.find(docs, "ConfigMap")
    # The only Roles: the agents' heartbeat Leases, written by the agent, watched by the controller manager.
    assert {n: rules(r) for r in chart.find(docs, "Role") for n in [r["metadata"]["name"]]} == {
        "joulie-agent-heartbeat": {("coordination.k8s.io", "leases"): {"create", "patch"}},
        "joulie-controller-manager-agent-heartbeats": {("coordination.k8s.io", "leases"): {"list", "watch"}}}
    assert env_of(one(docs, "DaemonSet", "joulie-agent"))["POD_NAMESPACE"] == ("fieldRef", "metadata.namespace")

    ds = one(docs, "DaemonSet", "joulie-agent")
    pod = ds["spec"]["template"]["spec"]
    c = container(ds)
    assert c["image"] == f"joulie.local/joulie-agent:{version(VERSION_FILES['joulie', 'agent'])}"
    # Off the host network by default (metrics on the Pod IP); the hardening itself: chart_security_test.py.
    assert pod["hostNetwork"] is False and "dnsPolicy" not in pod
    assert c["securityContext"]["privileged"] is True
    assert pod["nodeSelector"] == {"joulie.io/managed": "true"}
    assert pod["tolerations"] == []
    assert pod["serviceAccountName"] == "joulie-agent"
    assert {"name": "host-sys", "mountPath": "/host-sys", "readOnly": True, "recursiveReadOnly": "IfPossible"} in c["volumeMounts"]
    assert {"name": "host-sys", "hostPath": {"path": "/sys", "type": "Directory"}} in pod["volumes"]
    env = env_of(ds)
    assert env["AGENT_MODE"] == "daemonset" and env["NODE_NAME"] == ("fieldRef", "spec.nodeName")
    assert env["HOST_SYS"] == "/host-sys" and env["METRICS_ADDR"] == "0.0.0.0:8080"
    assert c["args"] == ["run"]

    cm = one(docs, "Deployment", "joulie-controller-manager")
    assert container(cm)["image"] == (
        f"joulie.local/joulie-controller-manager:{version(VERSION_FILES['joulie', 'controllerManager'])}")
    cm_env = env_of(cm)
    assert cm_env["NODE_POWER_PROMETHEUS_ADDRESS"] == "http://prometheus-operated.monitoring:9090"
    assert cm_env["LEADER_ELECT"] == "false" and cm_env["POD_NAMESPACE"] == ("fieldRef", "metadata.namespace")
    assert cm_env["POLICY_TYPE"] == "static_partition" and cm_env["STATIC_HP_FRAC"] == "0.5"


def test_smoke_values_tolerate_the_managed_and_gpu_taints_and_put_every_node_in_performance_at_80() -> None:
    docs = render("smoke")
    pod = one(docs, "DaemonSet", "joulie-agent")["spec"]["template"]["spec"]
    assert pod["tolerations"] == [
        {"key": "dedicated", "operator": "Equal", "value": "managed", "effect": "NoSchedule"},
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
    ]
    env = env_of(one(docs, "Deployment", "joulie-controller-manager"))
    assert (env["POLICY_TYPE"], env["STATIC_HP_FRAC"]) == ("static_partition", "1")
    assert (env["CPU_PERFORMANCE_CAP_PCT_OF_MAX"], env["GPU_PERFORMANCE_CAP_PCT_OF_MAX"]) == ("80", "80")
    # The rest of the defaults survive the merge.
    assert env["NODE_POWER_PROMETHEUS_ADDRESS"] == "http://prometheus-operated.monitoring:9090"


def test_the_smoke_daemonset_reaches_exactly_the_nodes_the_emulated_values_list() -> None:
    ds = chart.agent_daemonset_from_chart([SMOKE_VALUES])
    eligible, excluded = select_agents(render_nodes(load_spec(SMOKE_SPEC)), ds)
    assert eligible == SMOKE_AGENT_NODES
    assert [n for n, _ in excluded] == ["arm64-managed-0"]
    assert "arch arm64 not in [amd64]" in excluded[0][1]
    assert yaml.safe_load(EMULATED_VALUES.read_text())["agent"]["emulated"]["nodes"] == eligible


def test_without_the_smoke_tolerations_the_tainted_nodes_get_no_agent() -> None:
    eligible, excluded = select_agents(render_nodes(load_spec(SMOKE_SPEC)), chart.agent_daemonset_from_chart([]))
    assert "intel-managed-0" not in eligible and "h100-nvl-0" not in eligible
    reasons = dict(excluded)
    assert "dedicated=managed:NoSchedule" in reasons["intel-managed-0"]


def test_pool_mode_renders_a_sharded_statefulset_instead_of_the_daemonset() -> None:
    docs = render("pool")
    assert not chart.find(docs, "DaemonSet")
    sts = one(docs, "StatefulSet", "joulie-agent-pool")
    assert sts["spec"]["replicas"] == 3 and sts["spec"]["serviceName"] == "joulie-agent-metrics"
    assert one(docs, "Service", "joulie-agent-metrics")["spec"]["clusterIP"] == "None"
    env = env_of(sts)
    assert env["AGENT_MODE"] == "pool" and env["POOL_NODE_SELECTOR"] == "joulie.io/managed=true"
    assert env["POOL_SHARDS"] == "3" and env["POD_NAME"] == ("fieldRef", "metadata.name")
    assert "NODE_NAME" not in env
    assert container(sts)["securityContext"]["privileged"] is False
    explicit = chart.render_chart(JOULIE, [POOL_VALUES], {"agent.pool.shards": "5"})
    assert env_of(one(explicit, "StatefulSet", "joulie-agent-pool"))["POOL_SHARDS"] == "5"


def test_emulated_mode_renders_one_unprivileged_deployment_per_listed_node() -> None:
    docs = render("emulated")
    assert not chart.find(docs, "DaemonSet") and not chart.find(docs, "StatefulSet")
    agents = [d for d in chart.find(docs, "Deployment") if d["metadata"]["name"].startswith("joulie-agent-emu-")]
    assert [d["metadata"]["name"] for d in agents] == [f"joulie-agent-emu-{i}" for i in range(8)]
    assert [env_of(d)["NODE_NAME"] for d in agents] == SMOKE_AGENT_NODES
    for d, node in zip(agents, SMOKE_AGENT_NODES, strict=True):
        pod = d["spec"]["template"]["spec"]
        c = container(d)
        env = env_of(d)
        root = f"/var/lib/joulie-hwemu/fuse/{node}"
        assert env["AGENT_MODE"] == "emulated" and env["ROOT"] == root
        assert env["HOST_SYS"] == env["HWEMU_SYS_ROOT"] == f"{root}/sys"
        assert env["HWEMU_STATE_ROOT"] == f"{root}/state"
        assert pod["hostNetwork"] is False and c["securityContext"]["privileged"] is False
        assert c["securityContext"]["allowPrivilegeEscalation"] is False
        assert c["image"] == f"joulie.local/joulie-agent:{version(VERSION_FILES['joulie', 'agent'])}"
        assert {"name": "hwemu", "mountPath": "/var/lib/joulie-hwemu", "mountPropagation": "HostToContainer"} in (
            c["volumeMounts"])
        assert pod["volumes"] == [{"name": "hwemu", "hostPath": {"path": "/var/lib/joulie-hwemu", "type": "Directory"}}]
        assert d["metadata"]["annotations"]["sim.joulie.io/node"] == node
        # Each Deployment selects its own pods only.
        assert d["spec"]["selector"]["matchLabels"]["sim.joulie.io/emulated-agent"] == d["metadata"]["name"].rsplit("-", 1)[1]
    # The agent RBAC is still there, shared by the emulated agents.
    one(docs, "ClusterRoleBinding", "joulie-agent")


def test_emulated_mode_in_files_mode_and_with_fakesmi() -> None:
    docs = chart.render_chart(JOULIE, [EMULATED_VALUES], {"agent.emulated.view": "", "agent.emulated.fakesmiHostPath":
                                                           "/opt/joulie/fakesmi"})
    d = one(docs, "Deployment", "joulie-agent-emu-2")
    assert env_of(d)["ROOT"] == "/var/lib/joulie-hwemu/epyc-hsmp-0"
    assert {"name": "fakesmi", "mountPath": "/emu/lib/fakesmi", "readOnly": True} in container(d)["volumeMounts"]
    assert {"name": "fakesmi", "hostPath": {"path": "/opt/joulie/fakesmi", "type": "File"}} in (
        d["spec"]["template"]["spec"]["volumes"])


def test_host_network_deployments_recreate_their_pods() -> None:
    """On the node's network a new Pod wants the ports the old one holds: a rolling update on one node
    would wait forever (the kubelet runtime's second deploy). Off it, the default rolling update stays."""
    off = render("defaults")
    assert "strategy" not in one(off, "Deployment", "joulie-controller-manager")["spec"]
    assert "hostNetwork" not in one(off, "Deployment", "joulie-controller-manager")["spec"]["template"]["spec"]
    assert "strategy" not in one(render("extender"), "Deployment", "joulie-scheduler-extender")["spec"]
    docs = chart.render_chart(JOULIE, [EXTENDER_VALUES], {"controllerManager.hostNetwork": "true",
                                                          "schedulerExtender.hostNetwork": "true"})
    for name in ("joulie-controller-manager", "joulie-scheduler-extender"):
        d = one(docs, "Deployment", name)
        assert d["spec"]["strategy"] == {"type": "Recreate"}, name
        pod = d["spec"]["template"]["spec"]
        assert pod["hostNetwork"] is True and pod["dnsPolicy"] == "ClusterFirstWithHostNet", name


def test_host_network_controller_replicas_go_to_different_nodes() -> None:
    """Each replica on the node's network binds the metrics port: two on one node clash (the second
    Pod never schedules), so the chart spreads them one per node; off the host network, or with one
    replica, it adds nothing."""
    def affinity(sets: dict[str, str]) -> dict[str, object]:
        d = one(chart.render_chart(JOULIE, [EXTENDER_VALUES], sets), "Deployment", "joulie-controller-manager")
        assert d["spec"]["replicas"] == int(sets.get("controllerManager.replicas", "2"))
        return dict(d["spec"]["template"]["spec"].get("affinity") or {})

    spread = affinity({"controllerManager.hostNetwork": "true"})
    assert spread["podAntiAffinity"] == {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "topologyKey": "kubernetes.io/hostname",
        "labelSelector": {"matchLabels": {"app.kubernetes.io/name": "joulie", "app.kubernetes.io/instance": "joulie",
                                          "app.kubernetes.io/component": "controller-manager"}}}]}
    assert affinity({}) == {} and affinity({"controllerManager.hostNetwork": "true", "controllerManager.replicas": "1"}) == {}
    # The operator's own affinity stays, the spread is added beside it.
    own = affinity({"controllerManager.hostNetwork": "true",
                    "controllerManager.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
                    ".nodeSelectorTerms[0].matchExpressions[0].key": "infra"})
    assert set(own) == {"nodeAffinity", "podAntiAffinity"}
    with pytest.raises(chart.ChartError, match=r"controllerManager.replicas=2 with hostNetwork: each replica binds "
                                               r"metricsPort 8081 on its node.*kubernetes.io/hostname=kl-node"):
        chart.render_chart(JOULIE, [EXTENDER_VALUES], {"controllerManager.hostNetwork": "true",
                                                       "controllerManager.nodeSelector.kubernetes\\.io/hostname": "kl-node"})


def test_emulated_agents_on_the_host_network_each_have_their_own_metrics_port(tmp_path: Path) -> None:
    values = tmp_path / "hostnet.yaml"
    values.write_text(yaml.safe_dump({"agent": {"mode": "emulated", "env": {"RECONCILE_INTERVAL": "5s", "X": "agent"},
                                                "emulated": {"hostNetwork": True, "view": "", "nodes": [
        {"name": "intel-0", "metricsPort": 31001, "env": {"HWEMU_HOST_ROOT": "/t/intel-0", "X": "own"}},
        {"name": "vm-0", "metricsPort": 31002}]}}}))
    docs = chart.render_chart(JOULIE, [values])
    for i, (node, port) in enumerate([("intel-0", 31001), ("vm-0", 31002)]):
        d = one(docs, "Deployment", f"joulie-agent-emu-{i}")
        pod, env = d["spec"]["template"]["spec"], env_of(d)
        assert pod["hostNetwork"] is True and pod["dnsPolicy"] == "ClusterFirstWithHostNet"
        assert container(d)["securityContext"]["privileged"] is False
        assert env["METRICS_ADDR"] == f"0.0.0.0:{port}" and container(d)["ports"] == [{"name": "metrics", "containerPort": port}]
        assert [e["name"] for e in container(d)["env"]].count("METRICS_ADDR") == 1
        assert env["ROOT"] == f"/var/lib/joulie-hwemu/{node}" and env["RECONCILE_INTERVAL"] == "5s"
        assert d["spec"]["strategy"] == {"type": "Recreate"}
    first, second = env_of(one(docs, "Deployment", "joulie-agent-emu-0")), env_of(one(docs, "Deployment", "joulie-agent-emu-1"))
    assert (first["HWEMU_HOST_ROOT"], first["X"]) == ("/t/intel-0", "own")  # an entry's env over agent.env
    assert "HWEMU_HOST_ROOT" not in second and second["X"] == "agent"
    # Off the host network every agent keeps the chart's metrics port.
    plain = one(chart.render_chart(JOULIE, [EMULATED_VALUES]), "Deployment", "joulie-agent-emu-0")
    assert env_of(plain)["METRICS_ADDR"] == "0.0.0.0:8080" and container(plain)["ports"][0]["containerPort"] == 8080


@pytest.mark.parametrize(("values", "sets", "message"), [
    ([], {"agent.mode": "emulated", "agent.emulated.hostNetwork": "true", "agent.emulated.nodes[0]": "vm-0"},
     "agent.emulated.nodes[0] (vm-0): agent.emulated.hostNetwork=true needs a metricsPort per entry"),
    ([], {"agent.mode": "emulated"}, "agent.mode=emulated needs agent.emulated.nodes"),
    ([], {"agent.mode": "kubelet"}, "agent.mode=kubelet: expected one of daemonset, pool, emulated, none"),
    ([], {"agent.image.tag": ""}, "agent.image.tag is required"),
    ([EXTENDER_VALUES], {"controllerManager.leaderElection.enabled": "false"},
     "controllerManager.replicas > 1 needs controllerManager.leaderElection.enabled=true"),
    ([Path("no/such-values.yaml")], {}, "values file no/such-values.yaml: not found"),
])
def test_bad_values_are_refused_with_the_field_named(values: list[Path], sets: dict[str, str], message: str) -> None:
    with pytest.raises(chart.ChartError) as err:
        chart.render_chart(JOULIE, values, sets)
    assert message in str(err.value)
    if values and values[0].exists():
        assert str(values[0]) in str(err.value)


def test_a_node_listed_twice_or_unnamed_is_refused(tmp_path: Path) -> None:
    twice = tmp_path / "twice.yaml"
    twice.write_text(yaml.safe_dump({"agent": {"mode": "emulated", "emulated": {"nodes": ["intel-0", "vm-0", "intel-0"]}}}))
    with pytest.raises(chart.ChartError) as err:
        chart.render_chart(JOULIE, [twice])
    assert 'agent.emulated.nodes[2]: node "intel-0" is listed twice' in str(err.value) and str(twice) in str(err.value)
    unnamed = tmp_path / "unnamed.yaml"
    unnamed.write_text(yaml.safe_dump({"agent": {"mode": "emulated", "emulated": {"nodes": ["vm-0", {"labels": {}}]}}}))
    with pytest.raises(chart.ChartError, match=r"agent.emulated.nodes\[1\]: a Node name is required"):
        chart.render_chart(JOULIE, [unnamed])


def test_agent_daemonset_from_chart_says_when_the_values_render_no_daemonset() -> None:
    with pytest.raises(chart.ChartError, match=r"expected one DaemonSet joulie-agent .*found 0; workloads rendered: "
                                               r"Deployment/joulie-controller-manager; StatefulSet/joulie-agent-pool"):
        chart.agent_daemonset_from_chart([POOL_VALUES])


def test_mode_none_renders_no_agent() -> None:
    docs = render("none")
    # The controller manager still watches heartbeat Leases (agents may be installed apart).
    assert not [n for _, n in ids(docs) if "agent" in n and not n.startswith("joulie-controller-manager-")]
    assert [n for k, n in ids(docs) if k == "Deployment"] == ["joulie-controller-manager"]


def test_extender_leader_election_and_dashboard() -> None:
    docs = render("extender")
    x = one(docs, "Deployment", "joulie-scheduler-extender")
    assert container(x)["image"] == f"joulie.local/joulie-extender:{version(VERSION_FILES['joulie', 'schedulerExtender'])}"
    assert env_of(x)["EXTENDER_ADDR"] == "0.0.0.0:9876"
    assert x["spec"]["template"]["spec"]["hostNetwork"] is False
    svc = one(docs, "Service", "joulie-scheduler-extender")
    assert svc["spec"]["clusterIP"] == "10.96.0.76"
    assert svc["spec"]["ports"] == [{"name": "http", "port": 9876, "targetPort": "http"}]
    assert svc["spec"]["selector"] == x["spec"]["selector"]["matchLabels"]

    cm = one(docs, "Deployment", "joulie-controller-manager")
    assert cm["spec"]["replicas"] == 2 and env_of(cm)["LEADER_ELECT"] == "true"
    role = one(docs, "Role", "joulie-controller-manager-leader-election")
    assert rules(role) == {("coordination.k8s.io", "leases"): {"get", "create", "patch"}}
    binding = one(docs, "RoleBinding", "joulie-controller-manager-leader-election")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "joulie-controller-manager", "namespace": NS}]

    dash = one(docs, "ConfigMap", "joulie-grafana-dashboard")
    assert dash["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(dash["data"]["joulie.json"]) == json.loads(DASHBOARD.read_text())

    hostnet = one(render("extender-hostnet"), "Deployment", "joulie-scheduler-extender")["spec"]["template"]["spec"]
    assert hostnet["hostNetwork"] is True and hostnet["dnsPolicy"] == "ClusterFirstWithHostNet"


def test_the_bmc_secrets_role_comes_only_with_a_power_policy() -> None:
    """The Redfish driver lists the BMC Secrets of the release namespace: a Role there, not a
    ClusterRole, and only when POWER_POLICY is not none (docs/suspend-resume.md)."""
    for case in ("defaults", "extender", "production"):
        assert not [n for k, n in ids(render(case)) if "bmc-secrets" in n], case
    docs = render("power-policy")
    role = one(docs, "Role", "joulie-controller-manager-bmc-secrets")
    assert role["metadata"]["namespace"] == NS
    assert rules(role) == {("", "secrets"): {"list"}}  # joulie_redfish.kube.read_directory lists, never gets
    binding = one(docs, "RoleBinding", "joulie-controller-manager-bmc-secrets")
    assert binding["roleRef"]["name"] == "joulie-controller-manager-bmc-secrets"
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "joulie-controller-manager", "namespace": NS}]
    assert env_of(one(docs, "Deployment", "joulie-controller-manager"))["POWER_POLICY"] == "idle_suspend_v1"


def test_rbac_rules_are_the_least_each_component_needs() -> None:
    docs = render("extender")
    assert rules(one(docs, "ClusterRole", "joulie-agent")) == {
        ("", "nodes"): {"get", "list", "watch"},
        ("joulie.io", "nodehardwares"): {"get", "create", "patch"},
        ("joulie.io", "nodehardwares/status"): {"get", "patch"},
        ("joulie.io", "nodetwins"): {"get", "list", "watch"},
        ("joulie.io", "nodetwins/status"): {"get", "patch"},
    }
    assert rules(one(docs, "ClusterRole", "joulie-controller-manager")) == {
        ("", "nodes"): {"get", "list", "watch", "patch"},
        # patch pods (only the receipt annotation: the admission policy) and create events: ENERGY_RECEIPTS
        ("", "pods"): {"list", "watch", "patch"},
        ("", "events"): {"create"},
        ("joulie.io", "nodetwins"): {"get", "list", "watch", "create", "patch"},
        ("joulie.io", "nodetwins/status"): {"get", "patch"},
        ("joulie.io", "nodehardwares"): {"get", "list", "watch"},
    }
    assert rules(one(docs, "ClusterRole", "joulie-scheduler-extender")) == {
        ("joulie.io", "nodetwins"): {"get", "list", "watch"},
        ("joulie.io", "nodehardwares"): {"get", "list", "watch"},
        ("", "nodes"): {"list", "watch"},  # the power-profile label for the eco rule (nodeCacheCapable)
    }
    # Receipts off: the controller manager may neither change a Pod nor create an Event.
    off = chart.render_chart(JOULIE, (), {"controllerManager.env.ENERGY_RECEIPTS": "false"})
    off_rules = rules(one(off, "ClusterRole", "joulie-controller-manager"))
    assert off_rules[("", "pods")] == {"list", "watch"} and ("", "events") not in off_rules
    for name in ("joulie-agent", "joulie-controller-manager", "joulie-scheduler-extender"):
        crb = one(docs, "ClusterRoleBinding", name)
        assert crb["roleRef"]["name"] == name
        assert crb["subjects"] == [{"kind": "ServiceAccount", "name": name, "namespace": NS}]
        one(docs, "ServiceAccount", name)


def test_an_nvidia_pool_gets_the_toolkit_runtime_and_exports_power() -> None:
    docs = render("nvidia-gpu")
    ds = one(docs, "DaemonSet", "joulie-agent")
    pod = ds["spec"]["template"]["spec"]
    assert pod["runtimeClassName"] == "nvidia"
    env = env_of(ds)
    assert (env["NVIDIA_VISIBLE_DEVICES"], env["NVIDIA_DRIVER_CAPABILITIES"]) == ("all", "utility")
    assert env["POWER_EXPORT_ENDPOINT"] == "http://prometheus-operated.monitoring:9090/api/v1/otlp/v1/metrics"
    assert env["POWER_EXPORT_INTERVAL"] == "10s" and env["AGENT_MODE"] == "daemonset"
    assert "HARDWARE_CATALOG_EXTRA" not in env and not chart.find(docs, "ConfigMap")
    # Host power from the BMCs: the read-only account's Secret mounted where BMC_SECRET_DIR says
    # (optional: no Secret, the sum).
    assert (env["BMC_SECRET_DIR"], env["BMC_TIMEOUT"]) == ("/etc/joulie/bmc", "5s")
    assert {"name": "bmc-readonly", "secret": {"secretName": "joulie-bmc-readonly", "optional": True}} in pod["volumes"]
    assert {"name": "bmc-readonly", "mountPath": "/etc/joulie/bmc", "readOnly": True} in container(ds)["volumeMounts"]
    defaults = one(render("defaults"), "DaemonSet", "joulie-agent")
    assert "runtimeClassName" not in defaults["spec"]["template"]["spec"]
    assert "POWER_EXPORT_ENDPOINT" not in env_of(defaults) and "BMC_SECRET_DIR" not in env_of(defaults)
    assert all(v["name"] != "bmc-readonly" for v in defaults["spec"]["template"]["spec"].get("volumes", []))


def test_an_amd_pool_mounts_rocm_and_ships_a_catalog_entry_the_agent_accepts(tmp_path: Path) -> None:
    from joulie_agent.api import load_catalog

    docs = render("amd-gpu")
    ds = one(docs, "DaemonSet", "joulie-amd-agent")
    pod = ds["spec"]["template"]["spec"]
    assert {"name": "rocm", "hostPath": {"path": "/opt/rocm", "type": "Directory"}} in pod["volumes"]
    assert {"name": "hardware-catalog", "configMap": {"name": "joulie-amd-hardware-catalog"}} in pod["volumes"]
    mounts = container(ds)["volumeMounts"]
    assert {"name": "rocm", "mountPath": "/opt/rocm", "readOnly": True} in mounts
    assert {"name": "hardware-catalog", "mountPath": "/etc/joulie/hardware-catalog", "readOnly": True} in mounts
    env = env_of(ds)
    assert env["GPU_TOOL_PATH"].startswith("/opt/rocm/bin:") and env["LD_LIBRARY_PATH"] == "/opt/rocm/lib"
    assert env["HARDWARE_CATALOG_EXTRA"] == "/etc/joulie/hardware-catalog/extra.yaml"
    cm = one(docs, "ConfigMap", "joulie-amd-hardware-catalog")
    extra = tmp_path / "extra.yaml"
    extra.write_text(cm["data"]["extra.yaml"])
    cat = load_catalog(extra=extra)
    assert cat.resolve_gpu("AMD Instinct MI325X").key == "AMD_INSTINCT_MI325X"
    assert cat.gpu_facts["AMD_INSTINCT_MI325X"].cap_max_w == 1000.0
    # The pool agents get the same delivery.
    sts = one(render("amd-gpu-pool"), "StatefulSet", "joulie-amd-agent-pool")
    assert {"name": "rocm", "mountPath": "/opt/rocm", "readOnly": True} in container(sts)["volumeMounts"]
    assert env_of(sts)["LD_LIBRARY_PATH"] == "/opt/rocm/lib"


def test_name_override_renames_every_object_and_the_app_label() -> None:
    docs = render("name-override")
    named = [(d["kind"], d["metadata"]["name"]) for d in docs if d["kind"] != "CustomResourceDefinition"]
    assert named and all(n.startswith("energy-") for _, n in named), named
    ds = one(docs, "DaemonSet", "energy-agent")
    assert ds["spec"]["template"]["spec"]["serviceAccountName"] == "energy-agent"
    assert ds["spec"]["selector"]["matchLabels"]["app.kubernetes.io/name"] == "energy"
    crb = one(docs, "ClusterRoleBinding", "energy-scheduler-extender")
    assert crb["roleRef"]["name"] == "energy-scheduler-extender"
    assert crb["subjects"][0]["name"] == "energy-scheduler-extender"
    full = chart.render_chart(JOULIE, [], {"fullnameOverride": "joulie-b"})
    assert {n for k, n in ids(full) if k == "DaemonSet"} == {"joulie-b-agent"}


def test_every_power_policy_setting_is_a_chart_value_rendered_into_the_controllers_env() -> None:
    """An operator sets the power policy from values.yaml alone: every SUSPEND_*/RESUME_*/WARM_POOL_*/
    FORECAST_* setting the controller reads (joulie_api.controller_env) is there, and a --set reaches it."""
    wanted = {name for path, name in CONTROLLER_ENV.items() if path.startswith("suspend.")}
    env = env_of(one(render("defaults"), "Deployment", "joulie-controller-manager"))
    assert sorted(wanted - set(env)) == []
    assert (env["POWER_RAMP_LIMIT_W_PER_S"], env["SUSPEND_MIN_POWERED_BY_POOL"], env["WARM_POOL_WAIT_TARGET"]) == (
        "0", "", "1m")
    docs = chart.render_chart(JOULIE, [], {"controllerManager.env.POWER_RAMP_LIMIT_W_PER_S": "400",
                                       "controllerManager.env.SUSPEND_MIN_POWERED_BY_POOL": "gpu=0\\,cpu=2"})
    set_env = env_of(one(docs, "Deployment", "joulie-controller-manager"))
    assert (set_env["POWER_RAMP_LIMIT_W_PER_S"], set_env["SUSPEND_MIN_POWERED_BY_POOL"]) == ("400", "gpu=0,cpu=2")
