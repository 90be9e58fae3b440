"""The Joulie charts' renders (``chart_cases.CASES``) against the real kube-apiserver.

- The rendered manifests are accepted by the API server (server-side apply, dryRun=All).
- The RBAC is what the services really need: the real agent, controller manager and extender code
  run against the API server as the chart's ServiceAccounts (impersonated), and get nothing more;
  and it is the chart README's least-privilege table.
"""

from __future__ import annotations

import contextlib
import json
import threading
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from joulie_simcluster.chart_cases import CASES, JOULIE, NS, helm, render  # helm: autouse here too

pytest_plugins = ["joulie_testinfra.fixtures"]

__all__ = ["helm"]


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
    from joulie_agent.api import load_catalog
    from joulie_agent.shell_api import Agent, AgentKube, AgentMetrics
    from joulie_agent.shell_api import Settings as AgentSettings
    from joulie_agent.testing import rapl_node
    from joulie_api.generated.nodetwin import NodeTwin, NodeTwinSpec
    from joulie_api.kube import NODE_HARDWARE, NODE_TWIN, JoulieClient, KubeWriteError
    from joulie_api.names import FIELD_MANAGER_AGENT, FIELD_MANAGER_CONTROLLER_MANAGER, object_name_for_node
    from joulie_common.clock import FakeClock
    from joulie_controller.api import LeaderSettings, NodeSettings, PolicySettings, PrometheusSettings
    from joulie_controller.api import Settings as ControllerSettings
    from joulie_controller.shell_api import Controller, ControllerKube, LeaderElector, PowerReader, watch_cluster
    from joulie_extender.shell_api import WatchCache

    node = f"rbac-{uuid.uuid4().hex[:6]}"
    _make_node(kube_api, node)
    name = object_name_for_node(node)
    try:
        # The controller manager as joulie-controller-manager: leader election in the release
        # namespace, caches that list and watch nodes, pods, NodeHardware and NodeTwins, a tick that writes the spec,
        # the profile label and the status.
        cm_api = _as(control_plane, "joulie-controller-manager")
        settings = ControllerSettings(nodes=NodeSettings(selector="joulie.io/managed=true"),
                                      prometheus=PrometheusSettings(url=""), leader=LeaderSettings(elect=True),
                                      pod_namespace=NS, policy=PolicySettings(static_hp_frac=1.0))
        elector = LeaderElector(cm_api, NS, f"lease-{node}", "replica-a", 15)
        caches = watch_cluster(cm_api, 600.0, threading.Event())  # its tick reads these (WATCH_CLUSTER)
        try:
            caches.wait_synced(15)
            ctl = Controller(settings, ControllerKube(cm_api, cluster=caches), PowerReader(settings), elector=elector)
            summary = ctl.tick()
        finally:
            caches.close()
        assert summary.leader and summary.failures == 0 and summary.writes >= 3, summary
        twin = JoulieClient(kube_api, "reader").get(NODE_TWIN, name)
        assert twin is not None and twin.spec.profile == "performance"
        meta = k8s.CoreV1Api(kube_api).read_node(node).metadata
        assert meta is not None and (meta.labels or {}).get("joulie.io/power-profile") == "performance"

        # The agent as joulie-agent: reads its Node, creates and applies NodeHardware, reads the twin,
        # applies controlStatus.
        agent_api = _as(control_plane, "joulie-agent")
        rapl_node(tmp_path)
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
