"""The Joulie charts with the real helm (lint, template) and the real kube-apiserver.

- What a user installing the charts notices: the objects and their names, the images, the agent's
  privileges and mounts per mode, the emulated agents' Node names, the RBAC rules.
- The rendered manifests are accepted by the API server (server-side apply, dryRun=All).
- The RBAC is what the services really need: the real agent, controller manager and extender code
  run against the API server as the chart's ServiceAccounts (impersonated), and get nothing more.
"""

from __future__ import annotations

import contextlib
import json
import re
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from joulie_simcluster import chart
from joulie_simcluster.agents import select_agents
from joulie_simcluster.metricnames import service_metric_names
from joulie_simcluster.nodes import render_nodes
from joulie_simcluster.spec import load_spec
from joulie_testinfra.tools import Tools

pytest_plugins = ["joulie_testinfra.fixtures"]

JOULIE = Path("charts/joulie")
SIMULATOR = Path("charts/joulie-simulator")
SMOKE_SPEC = Path("simulated-cluster/specs/smoke.yaml")
SMOKE_VALUES = Path("simulated-cluster/values/smoke-values.yaml")
EMULATED_VALUES = JOULIE / "ci/emulated-smoke-values.yaml"
POOL_VALUES = JOULIE / "ci/pool-values.yaml"
EXTENDER_VALUES = JOULIE / "ci/extender-values.yaml"
PRODUCTION_VALUES = JOULIE / "ci/production-values.yaml"  # the README's install example
NVIDIA_VALUES = JOULIE / "ci/nvidia-gpu-values.yaml"  # docs/gpu-tools.md, NVIDIA container toolkit
AMD_VALUES = JOULIE / "ci/amd-gpu-values.yaml"  # docs/gpu-tools.md, ROCm from the host
SIM_VALUES = SIMULATOR / "ci/smoke-values.yaml"
PROMETHEUS_VALUES = Path("values/prometheus-grafana.yaml")
DASHBOARD = JOULIE / "dashboards/joulie.json"
NS = chart.NAMESPACE

SMOKE_AGENT_NODES = ["intel-0", "epyc-0", "epyc-hsmp-0", "h100-nvl-0", "h100-sxm-0", "mi300x-0", "vm-0",
                     "intel-managed-0"]
VERSION_FILES = {
    ("joulie", "agent"): Path("services/agent/joulie_agent/VERSION"),
    ("joulie", "controllerManager"): Path("services/controller-manager/joulie_controller/VERSION"),
    ("joulie", "schedulerExtender"): Path("services/extender/joulie_extender/VERSION"),
    ("joulie-simulator", None): Path("services/simulator/joulie_simulator/VERSION"),
}


@pytest.fixture(scope="module", autouse=True)
def helm(test_tools: Tools) -> Path:
    """Every test here needs the real helm: a missing one fails them all, saying how to build it."""
    return chart.helm_path()


def ids(docs: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    return [(d["kind"], d["metadata"]["name"]) for d in docs]


def one(docs: Sequence[Mapping[str, Any]], kind: str, name: str) -> dict[str, Any]:
    found = chart.find(docs, kind, name)
    assert len(found) == 1, f"expected one {kind}/{name}, rendered: {ids(docs)}"
    return found[0]


def container(workload: Mapping[str, Any]) -> dict[str, Any]:
    containers = workload["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return dict(containers[0])


def env_of(workload: Mapping[str, Any]) -> dict[str, Any]:
    """name -> value, or the fieldRef path for downward-API entries."""
    out: dict[str, Any] = {}
    for e in container(workload).get("env") or []:
        assert e["name"] not in out, f"env {e['name']} set twice"
        out[e["name"]] = e["value"] if "value" in e else ("fieldRef", e["valueFrom"]["fieldRef"]["fieldPath"])
    return out


def rules(role: Mapping[str, Any]) -> dict[tuple[str, str], set[str]]:
    out: dict[tuple[str, str], set[str]] = {}
    for r in role["rules"]:
        for group in r["apiGroups"]:
            for res in r["resources"]:
                out.setdefault((group, res), set()).update(r["verbs"])
    return out


def version(path: Path) -> str:
    return path.read_text().strip()


# --- values and files ---------------------------------------------------------------------------


def test_default_image_tags_are_the_service_versions() -> None:
    for (chart_name, component), path in VERSION_FILES.items():
        values = yaml.safe_load((Path("charts") / chart_name / "values.yaml").read_text())
        image = values[component]["image"] if component else values["image"]
        assert str(image["tag"]) == version(path), (
            f"charts/{chart_name}/values.yaml {component + '.' if component else ''}image.tag is {image['tag']!r} "
            f"but {path} says {version(path)!r}: bump the chart pin with the service"
        )


def test_prometheus_values_match_the_settings_the_tests_use() -> None:
    from joulie_testinfra.prometheus import PrometheusSettings

    want = PrometheusSettings()
    spec = yaml.safe_load(PROMETHEUS_VALUES.read_text())["prometheus"]["prometheusSpec"]
    assert spec["enableOTLPReceiver"] is True
    assert spec["otlp"]["promoteResourceAttributes"] == want.promote_resource_attributes
    assert spec["otlp"]["translationStrategy"] == want.translation_strategy
    assert spec["tsdb"]["outOfOrderTimeWindow"] == want.out_of_order_time_window


def test_dashboard_panels_query_metrics_the_services_export() -> None:
    known = service_metric_names()
    assert "hw_host_energy_joules_total" in known and "joulie_policy_state_transitions_total" in known
    dash = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    exprs.append(dash["templating"]["list"][1]["query"]["query"])
    assert len(dash["panels"]) >= 10
    # Metric names only: the label names in by (...) and {...} are not metrics.
    metric_exprs = [re.sub(r"\b(?:by|without)\s*\([^)]*\)|\{[^}]*\}", "", e) for e in exprs]
    unknown = {m for e in metric_exprs for m in re.findall(r"\b(?:joulie|hw)_[a-z0-9_]+", e)} - known
    assert not unknown, f"dashboard queries metrics no service exports: {sorted(unknown)}"


# --- helm lint ----------------------------------------------------------------------------------


@pytest.mark.parametrize("values", [[], [SMOKE_VALUES], [SMOKE_VALUES, EMULATED_VALUES], [POOL_VALUES],
                                    [EXTENDER_VALUES], [PRODUCTION_VALUES], [NVIDIA_VALUES], [AMD_VALUES]],
                         ids=["defaults", "smoke", "emulated", "pool", "extender", "production", "nvidia", "amd"])
def test_lint_joulie(values: list[Path]) -> None:
    report = chart.lint_chart(JOULIE, values)
    assert "1 chart(s) linted, 0 chart(s) failed" in report


def test_lint_simulator() -> None:
    assert "0 chart(s) failed" in chart.lint_chart(SIMULATOR, [SIM_VALUES])
    assert "0 chart(s) failed" in chart.lint_chart(SIMULATOR, [SIM_VALUES], {"mode": "files"})


# --- helm template: what each mode installs -------------------------------------------------------

CASES: dict[str, tuple[Path, list[Path], dict[str, str]]] = {
    "defaults": (JOULIE, [], {}),
    "smoke": (JOULIE, [SMOKE_VALUES], {}),
    "pool": (JOULIE, [POOL_VALUES], {}),
    "emulated": (JOULIE, [SMOKE_VALUES, EMULATED_VALUES], {}),
    "extender": (JOULIE, [EXTENDER_VALUES], {}),
    "production": (JOULIE, [PRODUCTION_VALUES], {}),
    "extender-hostnet": (JOULIE, [EXTENDER_VALUES], {"schedulerExtender.hostNetwork": "true"}),
    "none": (JOULIE, [], {"agent.mode": "none"}),
    "power-policy": (JOULIE, [], {"controllerManager.env.POWER_POLICY": "idle_suspend_v1"}),
    "nvidia-gpu": (JOULIE, [NVIDIA_VALUES], {}),
    "amd-gpu": (JOULIE, [AMD_VALUES], {}),
    "amd-gpu-pool": (JOULIE, [AMD_VALUES], {"agent.mode": "pool"}),
    "name-override": (JOULIE, [EXTENDER_VALUES], {"nameOverride": "energy", "grafanaDashboard.enabled": "true"}),
    "simulator-fuse": (SIMULATOR, [SIM_VALUES], {}),
    "simulator-files": (SIMULATOR, [SIM_VALUES], {"mode": "files"}),
}


def render(case: str) -> list[dict[str, Any]]:
    chart_dir, values, sets = CASES[case]
    return chart.render_chart(chart_dir, values, sets or None)


@pytest.mark.parametrize("case", list(CASES))
def test_no_object_is_rendered_twice_and_namespaced_ones_land_in_the_release_namespace(case: str) -> None:
    docs = render(case)
    keys = [(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]) for d in docs]
    assert len(keys) == len(set(keys)), f"duplicates: {sorted(k for k in keys if keys.count(k) > 1)}"
    cluster_scoped = {"CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding"}
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
    assert not chart.find(docs, "Role") and not chart.find(docs, "ConfigMap")

    ds = one(docs, "DaemonSet", "joulie-agent")
    pod = ds["spec"]["template"]["spec"]
    c = container(ds)
    assert c["image"] == f"joulie.local/joulie-agent:{version(VERSION_FILES['joulie', 'agent'])}"
    assert pod["hostNetwork"] is True and pod["dnsPolicy"] == "ClusterFirstWithHostNet"
    assert c["securityContext"]["privileged"] is True
    assert pod["nodeSelector"] == {"joulie.io/managed": "true"}
    assert pod["tolerations"] == []
    assert pod["serviceAccountName"] == "joulie-agent"
    assert {"name": "host-sys", "mountPath": "/host-sys"} in c["volumeMounts"]
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
    assert not [n for _, n in ids(docs) if "agent" in n]
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
    assert rules(role) == {("", "secrets"): {"get", "list", "watch"}}
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
        ("", "pods"): {"list", "watch"},
        ("joulie.io", "nodetwins"): {"get", "list", "watch", "create", "patch"},
        ("joulie.io", "nodetwins/status"): {"get", "patch"},
        ("joulie.io", "nodehardwares"): {"get", "list", "watch"},
    }
    assert rules(one(docs, "ClusterRole", "joulie-scheduler-extender")) == {
        ("joulie.io", "nodetwins"): {"get", "list", "watch"},
        ("joulie.io", "nodehardwares"): {"get", "list", "watch"},
        ("", "nodes"): {"list", "watch"},  # the power-profile label for the eco rule (nodeCacheCapable)
    }
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
    # Host power from the BMCs: the BMC Secret mounted where BMC_SECRET_DIR says (optional: no Secret, the sum).
    assert (env["BMC_SECRET_DIR"], env["BMC_TIMEOUT"]) == ("/etc/joulie/bmc", "5s")
    assert {"name": "bmc-secret", "secret": {"secretName": "joulie-bmcs", "optional": True}} in pod["volumes"]
    assert {"name": "bmc-secret", "mountPath": "/etc/joulie/bmc", "readOnly": True} in container(ds)["volumeMounts"]
    defaults = one(render("defaults"), "DaemonSet", "joulie-agent")
    assert "runtimeClassName" not in defaults["spec"]["template"]["spec"]
    assert "POWER_EXPORT_ENDPOINT" not in env_of(defaults) and "BMC_SECRET_DIR" not in env_of(defaults)
    assert all(v["name"] != "bmc-secret" for v in defaults["spec"]["template"]["spec"].get("volumes", []))


def test_an_amd_pool_mounts_rocm_and_ships_a_catalog_entry_the_agent_accepts(tmp_path: Path) -> None:
    from joulie_agent.catalog import load_catalog

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


def test_simulator_in_fuse_mode_is_privileged_with_dev_fuse_and_a_shared_mount() -> None:
    docs = render("simulator-fuse")
    assert sorted(ids(docs)) == sorted([
        ("ServiceAccount", "joulie-simulator"), ("ClusterRole", "joulie-simulator"),
        ("ClusterRoleBinding", "joulie-simulator"), ("ConfigMap", "joulie-simulator-spec"),
        ("Deployment", "joulie-telemetry-sim"), ("Service", "joulie-telemetry-sim")])
    d = one(docs, "Deployment", "joulie-telemetry-sim")
    c = container(d)
    assert c["image"] == f"joulie.local/joulie-simulator:{version(VERSION_FILES['joulie-simulator', None])}"
    assert c["args"][:5] == ["emulate", "--spec=/etc/joulie-sim/spec.yaml", "--root=/var/lib/joulie-hwemu",
                             "--mode=fuse", "--tick=1"]
    assert "--http=0.0.0.0:18080" in c["args"]
    assert "--otlp-endpoint=http://prometheus-operated.monitoring:9090/api/v1/otlp/v1/metrics" in c["args"]
    assert c["securityContext"]["privileged"] is True
    mounts = {m["name"]: m for m in c["volumeMounts"]}
    assert mounts["hwemu"] == {"name": "hwemu", "mountPath": "/var/lib/joulie-hwemu", "mountPropagation": "Bidirectional"}
    assert mounts["dev-fuse"]["mountPath"] == "/dev/fuse"
    vols = {v["name"]: v for v in d["spec"]["template"]["spec"]["volumes"]}
    assert vols["dev-fuse"]["hostPath"] == {"path": "/dev/fuse", "type": "CharDevice"}
    assert d["spec"]["strategy"] == {"type": "Recreate"} and d["spec"]["replicas"] == 1
    svc = one(docs, "Service", "joulie-telemetry-sim")
    assert {"name": "http", "port": 80, "targetPort": "http"} in svc["spec"]["ports"]
    assert {"name": "http", "containerPort": 18080} in c["ports"]
    spec = yaml.safe_load(one(docs, "ConfigMap", "joulie-simulator-spec")["data"]["spec.yaml"])
    assert spec == yaml.safe_load(SIM_VALUES.read_text())["spec"]
    assert [p["name"] for p in spec["pools"]] == [p.name for p in load_spec(SMOKE_SPEC).pools]
    assert rules(one(docs, "ClusterRole", "joulie-simulator")) == {
        ("", "nodes"): {"get", "list", "watch"}, ("", "pods"): {"get", "list", "watch", "create", "delete"}}


def test_simulator_in_files_mode_needs_no_privileges() -> None:
    d = one(render("simulator-files"), "Deployment", "joulie-telemetry-sim")
    c = container(d)
    assert "--mode=files" in c["args"]
    assert c["securityContext"]["privileged"] is False
    assert [m["name"] for m in c["volumeMounts"]] == ["spec", "hwemu"]
    assert "mountPropagation" not in c["volumeMounts"][1]


def test_simulator_without_a_spec_says_what_is_missing() -> None:
    with pytest.raises(chart.ChartError, match=r"spec: list the emulated Nodes"):
        chart.render_chart(SIMULATOR, [])
    with pytest.raises(chart.ChartError, match=r"mode=block: expected fuse or files"):
        chart.render_chart(SIMULATOR, [SIM_VALUES], {"mode": "block"})


# --- the real API server --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def namespace(kube_api: k8s.ApiClient) -> str:
    core = k8s.CoreV1Api(kube_api)
    try:
        core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=NS)))
    except ApiException as err:
        if err.status != 409:
            raise
    return NS


def _dynamic(api: k8s.ApiClient) -> Any:
    from kubernetes import dynamic

    return dynamic.DynamicClient(api)  # type: ignore[no-untyped-call]


# The workloads that must run privileged (host /sys writes; FUSE mounts shared with the host).
PRIVILEGED = {("DaemonSet", "joulie-agent"), ("DaemonSet", "joulie-amd-agent"), ("Deployment", "joulie-telemetry-sim")}
NOT_ALLOWED_PRIVILEGED = "securityContext.privileged: Forbidden: disallowed by cluster policy"


def _refusal(err: Exception) -> str:
    return str(getattr(err, "body", None) or err)


def _without_privileged(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The workload unprivileged; Bidirectional propagation, which the API server allows privileged
    containers only, becomes HostToContainer."""
    copy = json.loads(json.dumps(doc))
    for c in copy["spec"]["template"]["spec"]["containers"]:
        c.get("securityContext", {}).pop("privileged", None)
        for m in c.get("volumeMounts") or []:
            if m.get("mountPropagation") == "Bidirectional":
                m["mountPropagation"] = "HostToContainer"
    return dict(copy)


@pytest.mark.parametrize("case", list(CASES))
def test_every_rendered_manifest_passes_a_server_side_dry_run(case: str, kube_api: k8s.ApiClient, namespace: str) -> None:
    """The test API server runs with kube-apiserver's default --allow-privileged=false, which refuses
    any privileged container (a real cluster that runs node agents allows them). A workload of
    PRIVILEGED refused for that reason alone is checked again without the flag, so every other field
    is still validated; any other object refused for it is an error."""
    client = _dynamic(kube_api)
    errors: list[str] = []
    docs = render(case)

    def dry_run(doc: Mapping[str, Any]) -> None:
        resource = client.resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
        client.server_side_apply(resource, body=dict(doc), namespace=doc["metadata"].get("namespace"),
                                 field_manager="helm", force_conflicts=True, dry_run="All")

    for doc in docs:
        key = (doc["kind"], doc["metadata"]["name"])
        try:
            try:
                dry_run(doc)
            except Exception as err:
                refusal = _refusal(err)
                if key not in PRIVILEGED or NOT_ALLOWED_PRIVILEGED not in refusal:
                    raise
                assert json.loads(refusal)["details"]["causes"] == [{
                    "reason": "FieldValueForbidden", "message": "Forbidden: disallowed by cluster policy",
                    "field": "spec.template.spec.containers[0].securityContext.privileged"}], refusal
                dry_run(_without_privileged(doc))
        except Exception as err:  # every refusal is collected and reported at once
            errors.append(f"{key[0]}/{key[1]}: {_refusal(err)[:600]}")
    assert not errors, f"{case}: the API server refused:\n" + "\n".join(errors)
    assert docs


def _as(control_plane: Any, service_account: str) -> k8s.ApiClient:
    api: k8s.ApiClient = control_plane.api_client()
    api.set_default_header("Impersonate-User", f"system:serviceaccount:{NS}:{service_account}")  # type: ignore[no-untyped-call]
    return api


@pytest.fixture(scope="module")
def installed_rbac(kube_api: k8s.ApiClient, namespace: str) -> Iterator[list[dict[str, Any]]]:
    """The RBAC objects of the extender render (all three components, leader election), applied for real."""
    client = _dynamic(kube_api)
    kinds = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
    objs = [d for d in render("extender") if d["kind"] in kinds]
    for doc in objs:
        resource = client.resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
        client.server_side_apply(resource, body=doc, namespace=doc["metadata"].get("namespace"),
                                 field_manager="helm", force_conflicts=True)
    yield objs
    for doc in reversed(objs):
        resource = client.resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
        client.delete(resource, name=doc["metadata"]["name"], namespace=doc["metadata"].get("namespace"))


def _make_node(kube_api: k8s.ApiClient, name: str) -> None:
    node = k8s.V1Node.from_dict({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"joulie.io/managed": "true",
                                              "feature.node.kubernetes.io/cpu-model.vendor_id": "Intel"}},
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi"}, "capacity": {"cpu": "8", "memory": "32Gi"}},
    })
    assert node is not None
    k8s.CoreV1Api(kube_api).create_node(node)


def test_the_real_components_work_with_exactly_the_chart_rbac(
        control_plane: Any, kube_api: k8s.ApiClient, installed_rbac: list[dict[str, Any]], tmp_path: Path) -> None:
    from joulie_agent import testtrees
    from joulie_agent.catalog import load_catalog
    from joulie_agent.metrics import AgentMetrics
    from joulie_agent.runner import Agent, AgentKube
    from joulie_agent.settings import Settings as AgentSettings
    from joulie_api.generated.nodetwin import NodeTwin, NodeTwinSpec
    from joulie_api.kube import NODE_HARDWARE, NODE_TWIN, JoulieClient, KubeWriteError
    from joulie_api.names import FIELD_MANAGER_AGENT, FIELD_MANAGER_CONTROLLER_MANAGER, object_name_for_node
    from joulie_common.clock import FakeClock
    from joulie_controller.controller import Controller
    from joulie_controller.kube import ControllerKube
    from joulie_controller.leader import LeaderElector
    from joulie_controller.prometheus import PowerReader
    from joulie_controller.settings import Settings as ControllerSettings
    from joulie_extender.cache import WatchCache

    node = f"rbac-{uuid.uuid4().hex[:6]}"
    _make_node(kube_api, node)
    name = object_name_for_node(node)
    try:
        # The controller manager as joulie-controller-manager: leader election in the release
        # namespace, a tick that lists nodes, pods, NodeHardware and NodeTwins and writes the spec,
        # the profile label and the status.
        cm_api = _as(control_plane, "joulie-controller-manager")
        settings = ControllerSettings(node_selector="joulie.io/managed=true", prometheus_address="", leader_elect=True,
                                      pod_namespace=NS, static_hp_frac=1.0)
        elector = LeaderElector(cm_api, NS, f"lease-{node}", "replica-a", 15)
        ctl = Controller(settings, ControllerKube(cm_api), PowerReader(settings), elector=elector)
        summary = ctl.tick()
        assert summary.leader and summary.failures == 0 and summary.writes >= 3, summary
        twin = JoulieClient(kube_api, "reader").get(NODE_TWIN, name)
        assert twin is not None and twin.spec.profile == "performance"
        meta = k8s.CoreV1Api(kube_api).read_node(node).metadata
        assert meta is not None and (meta.labels or {}).get("joulie.io/power-profile") == "performance"

        # The agent as joulie-agent: reads its Node, creates and applies NodeHardware, reads the twin,
        # applies controlStatus.
        agent_api = _as(control_plane, "joulie-agent")
        testtrees.rapl_node(tmp_path)
        clock = FakeClock()
        agent = Agent(AgentSettings(mode="daemonset", node_name=node, root=str(tmp_path)),
                      AgentKube(JoulieClient(agent_api, FIELD_MANAGER_AGENT), clock), load_catalog(), clock,
                      AgentMetrics())
        assert agent.tick() == 0
        hw = JoulieClient(kube_api, "reader").get(NODE_HARDWARE, name)
        assert hw is not None and hw.status is not None and hw.status.cpu is not None
        twin = JoulieClient(kube_api, "reader").get(NODE_TWIN, name)
        assert twin is not None and twin.status is not None and twin.status.control_status is not None
        # ...and nothing more: the agent cannot write a twin's spec nor label Nodes.
        with pytest.raises(KubeWriteError, match="403"):
            JoulieClient(agent_api, FIELD_MANAGER_AGENT).apply(
                NODE_TWIN, name, NodeTwin(spec=NodeTwinSpec(node_name=node, profile="eco")))
        with pytest.raises(KubeWriteError, match="403"):
            JoulieClient(agent_api, FIELD_MANAGER_CONTROLLER_MANAGER).patch_node_labels(node, {"x": "y"})

        # The extender as joulie-scheduler-extender: its watches (NodeTwin, NodeHardware, Node labels)
        # sync; it may not write anything.
        x_api = _as(control_plane, "joulie-scheduler-extender")
        cache = WatchCache(x_api)
        cache.start()
        try:
            assert cache.wait_synced(15), "the extender's NodeTwin/NodeHardware watches did not sync"
            assert cache.twin(node) is not None and cache.hardware(node) is not None
        finally:
            cache.stop()
        with pytest.raises(KubeWriteError, match="403"):
            JoulieClient(x_api, "joulie-extender").merge_patch(NODE_TWIN, name, {"metadata": {"labels": {"x": "y"}}})
        with pytest.raises(ApiException) as denied:
            k8s.CoreV1Api(x_api).patch_node(node, {"metadata": {"labels": {"x": "y"}}})
        assert denied.value.status == 403
    finally:
        k8s.CoreV1Api(kube_api).delete_node(node)
        for plural in ("nodetwins", "nodehardwares"):
            with contextlib.suppress(ApiException):
                k8s.CustomObjectsApi(kube_api).delete_cluster_custom_object("joulie.io", "v1alpha1", plural, name)


# --- least privilege as a table -------------------------------------------------------------------

CHART_README = JOULIE / "README.md"
Rule = tuple[str, str, str, str]  # (scope: cluster | release, API group, resource, verb)


def documented_rules(readme: Path = CHART_README) -> dict[str, set[Rule]]:
    """The README's least-privilege table: ServiceAccount -> its rules, one per verb."""
    out: dict[str, set[Rule]] = {}
    for line in readme.read_text().splitlines():
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        if len(cells) != 5 or not cells[0].startswith("joulie-"):
            continue
        sa, scope, group, resource, verbs = cells
        for verb in verbs.split(","):
            out.setdefault(sa, set()).add((scope, "" if group == "core" else group, resource, verb.strip()))
    return out


def _reviewed(control_plane: Any, service_account: str, namespace: str) -> set[tuple[str, str, str]]:
    """(API group, resource, verb) the API server says `service_account` may use in `namespace`."""
    review = k8s.AuthorizationV1Api(_as(control_plane, service_account)).create_self_subject_rules_review(
        k8s.V1SelfSubjectRulesReview(spec=k8s.V1SelfSubjectRulesReviewSpec(namespace=namespace)))
    assert review.status is not None and not review.status.incomplete, review.status
    out = set()
    for rule in review.status.resource_rules or []:
        assert not rule.resource_names, f"{service_account}: a rule limited to names {rule.resource_names}"
        for group in rule.api_groups or [""]:
            for resource in rule.resources or []:
                for verb in rule.verbs:
                    out.add((group, resource, verb))
    return out


def test_least_privilege_is_the_documented_table(control_plane: Any, installed_rbac: list[dict[str, Any]]) -> None:
    """Each ServiceAccount's rules, read back from the real API server (SelfSubjectRulesReview as
    that ServiceAccount), equal the chart README's table: cluster-wide ones seen from another
    namespace, release-namespace ones only in the release namespace, less what any identity gets."""
    documented = documented_rules()
    accounts = sorted(d["metadata"]["name"] for d in installed_rbac if d["kind"] == "ServiceAccount")
    assert accounts == sorted(documented), "every ServiceAccount of the chart has rows in the README table"
    elsewhere = "default"
    baseline = _reviewed(control_plane, "joulie-nobody", NS) | _reviewed(control_plane, "joulie-nobody", elsewhere)
    table = []
    for sa in accounts:
        cluster = _reviewed(control_plane, sa, elsewhere) - baseline
        release = _reviewed(control_plane, sa, NS) - baseline - cluster
        seen = {("cluster", *r) for r in cluster} | {("release", *r) for r in release}
        table += [f"{sa} {' '.join(r)}" for r in sorted(seen)]
        assert seen == documented[sa], (f"{sa}: the API server grants {sorted(seen - documented[sa])} beyond "
                                        f"the table and not {sorted(documented[sa] - seen)} of it")
    print("least privilege as the API server reports it:\n" + "\n".join(table))
