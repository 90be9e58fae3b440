"""Tenants who cannot switch Joulie off (issue 36), against real components: a real kube-apiserver
with the Joulie CRDs, KWOK running the Pods, the real kube-scheduler marking Pods unschedulable, a
real Prometheus 3 taking OTLP pushes, and the controller's own kube shell and Prometheus reader
ticking in-process (the Controller object ``joulie-controller-manager run`` drives).

Each case has its control beside it (the same objects with the input trusted, or a Pod that truly
fits), so a test that passes because nothing would ever move is caught.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from joulie_api.generated.nodehardware import NodeHardware
from joulie_api.kube import NODE_HARDWARE, JoulieClient
from joulie_api.names import FIELD_MANAGER_AGENT, GROUP, PLURAL_NODE_TWIN, VERSION
from joulie_common.clock import FakeClock
from joulie_controller.controller import Controller
from joulie_controller.kube_cluster_test import controller, fake_clock, make_node, suite_nodes, twin_raw
from joulie_controller.prometheus_component_test import push, wait_for
from joulie_controller.settings import NodeSettings, PolicySettings, PrometheusSettings, Settings
from joulie_controller.telemetry.prometheus import PowerReader
from joulie_localcluster.kwok import KWOK_TAINT_KEY
from joulie_localcluster.procs import ManagedProcess
from joulie_localcluster.prometheus import Prometheus
from joulie_testinfra.waiting import eventually

pytest_plugins = ["joulie_testinfra.fixtures"]

TEAM, TENANT = "team", "tenant"
PERF = {"joulie.io/workload-class": "performance"}
MEMORY_BOUND = {"joulie.io/workload-kind": "cpu-memory"}
HONEST_W, PARTS_W = 300.0, 260.0


@pytest.fixture
def suite(kube_api: k8s.ApiClient) -> Iterator[str]:
    """A label value that marks this test's nodes; its nodes, twins and NodeHardware deleted afterwards."""
    tag = uuid.uuid4().hex[:8]
    yield tag
    core, custom = k8s.CoreV1Api(kube_api), k8s.CustomObjectsApi(kube_api)
    for name in suite_nodes(core, tag):
        core.delete_node(name)
        for plural in (PLURAL_NODE_TWIN, NODE_HARDWARE.plural):
            try:
                custom.delete_cluster_custom_object(GROUP, VERSION, plural, name)
            except ApiException as exc:
                if exc.status != 404:
                    raise


@pytest.fixture
def namespaces(kube_api: k8s.ApiClient) -> Iterator[None]:
    core = k8s.CoreV1Api(kube_api)
    for ns in (TEAM, TENANT):
        try:
            core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=ns)))
        except ApiException as exc:
            if exc.status != 409:
                raise
    yield
    for ns in (TEAM, TENANT):
        core.delete_collection_namespaced_pod(ns, grace_period_seconds=0)


def _nodes(kube_api: k8s.ApiClient, tag: str, names: tuple[str, ...]) -> list[str]:
    """KWOK nodes of 32 cores whose agent published 2 x 165 W sockets."""
    core, agent = k8s.CoreV1Api(kube_api), JoulieClient(kube_api, FIELD_MANAGER_AGENT)
    out = []
    for short in names:
        node = f"{short}-{tag}"
        make_node(core, node, tag, kwok=True)
        agent.apply(NODE_HARDWARE, node, NodeHardware.model_validate({"spec": {"nodeName": node}}))
        agent.apply_status(
            NODE_HARDWARE,
            node,
            {
                "cpu": {
                    "model": "Xeon 8260",
                    "sockets": 2,
                    "totalCores": 32,
                    "capRange": {"minWattsPerSocket": 50, "maxWattsPerSocket": 165},
                }
            },
        )
        out.append(node)
    return out


def _pod(
    name: str,
    ns: str,
    *,
    node: str | None = None,
    cpu: str = "2",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    selector: dict[str, str] | None = None,
    scheduler: str | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "fake", "resources": {"requests": {"cpu": cpu}}}],
        "tolerations": [{"key": KWOK_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}],
    }
    if node:
        spec["nodeName"] = node
    if selector:
        spec["nodeSelector"] = selector
    if scheduler:
        spec["schedulerName"] = scheduler
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "spec": spec,
        "metadata": {"name": name, "labels": labels or {}, "annotations": annotations or {}},
    }


def _create(kube_api: k8s.ApiClient, ns: str, body: dict[str, Any]) -> None:
    pod = k8s.V1Pod.from_dict(body)
    assert pod is not None
    k8s.CoreV1Api(kube_api).create_namespaced_pod(ns, pod)


def _running(kube_api: k8s.ApiClient, ns: str, name: str) -> None:
    core = k8s.CoreV1Api(kube_api)

    def up() -> bool:
        status = core.read_namespaced_pod(name, ns).status
        return status is not None and status.phase == "Running"

    eventually(up, what=f"{ns}/{name} Running")


def _unschedulable(kube_api: k8s.ApiClient, ns: str, name: str) -> None:
    """The real kube-scheduler tried the Pod and gave up on it (PodScheduled=False, Unschedulable)."""
    core = k8s.CoreV1Api(kube_api)

    def marked() -> bool:
        status = core.read_namespaced_pod(name, ns).status
        return (
            any(
                c.type == "PodScheduled" and c.status == "False" and c.reason == "Unschedulable"
                for c in (status.conditions or [])
            )
            if status
            else False
        )

    eventually(marked, what=f"{ns}/{name} marked Unschedulable by kube-scheduler")


def _controller(
    kube_api: k8s.ApiClient, tag: str, prometheus_url: str, budget_w: float, trusted: tuple[str, ...]
) -> tuple[Controller, FakeClock]:
    clock = fake_clock()
    ctl = controller(kube_api, tag, clock)
    ctl.settings = Settings(
        nodes=NodeSettings(selector=f"test.joulie.io/suite={tag}"),
        prometheus=PrometheusSettings(url=prometheus_url, rate_window="1m"),
        policy=PolicySettings(type="work_aware_v1", queue_hp_base_frac=0.0, queue_hp_min=0, power_budget_w=budget_w),
        trusted_namespaces=trusted,
    )
    ctl.power = PowerReader(ctl.settings)
    return ctl, clock


def _cpu_cap(kube_api: k8s.ApiClient, node: str) -> float:
    cap = twin_raw(kube_api, node)["spec"]["cpu"]["packagePowerCapPctOfMax"]
    assert isinstance(cap, (int, float))
    return float(cap)


def _honest_power(prometheus: Prometheus, nodes: list[str]) -> None:
    for node in nodes:
        push(prometheus.otlp_metrics_url, node, power_w=HONEST_W, components_w={"cpu": PARTS_W}, pushes=1)
    for node in nodes:
        wait_for(prometheus, f'hw_host_power_watts{{k8s_node_name="{node}"}}')


def test_a_forged_power_reading_does_not_move_caps(
    kube_api: k8s.ApiClient, kwok: ManagedProcess, prometheus: Prometheus, suite: str, namespaces: None
) -> None:
    nodes = _nodes(kube_api, suite, ("forge-a", "forge-b", "forge-c"))
    for i, node in enumerate(nodes):
        name = f"stream-{i}-{suite}"
        _create(kube_api, TEAM, _pod(name, TEAM, node=node, cpu="26", labels=MEMORY_BOUND))
        _running(kube_api, TEAM, name)
    _honest_power(prometheus, nodes)
    ctl, clock = _controller(kube_api, suite, prometheus.url, budget_w=1200.0, trusted=(TEAM,))  # 900 W drawn
    ctl.tick()
    honest = {n: _cpu_cap(kube_api, n) for n in nodes}
    assert twin_raw(kube_api, nodes[0])["status"]["powerMeasurement"]["source"] == "prometheus"
    # The live probe's attack: 50 kW for one node, pushed as that node's own series.
    push(prometheus.otlp_metrics_url, nodes[0], power_w=50_000.0, pushes=1)
    wait_for(prometheus, f'hw_host_power_watts{{k8s_node_name="{nodes[0]}"}} > 1000')
    for _ in range(3):
        clock.advance(10)
        ctl.tick()
        assert {n: _cpu_cap(kube_api, n) for n in nodes} == honest
    pm = twin_raw(kube_api, nodes[0])["status"]["powerMeasurement"]
    assert pm["source"] == "prometheus-implausible" and "measuredNodePowerW" not in pm
    gauge = ctl.metrics.registry.get_sample_value(
        "joulie_twin_power_implausible", {"node": nodes[0], "kind": "above-ceiling"}
    )
    assert gauge == 1


def test_a_performance_pod_in_an_untrusted_namespace_does_not_uncap_its_node(
    kube_api: k8s.ApiClient,
    kwok: ManagedProcess,
    prometheus: Prometheus,
    suite: str,
    namespaces: None,
) -> None:
    a, b = _nodes(kube_api, suite, ("tenant-a", "tenant-b"))
    for node in (a, b):
        name = f"stream-{node}"
        _create(kube_api, TEAM, _pod(name, TEAM, node=node, cpu="26", labels=MEMORY_BOUND))
        _running(kube_api, TEAM, name)
    sneaky = f"sneaky-{suite}"
    _create(kube_api, TENANT, _pod(sneaky, TENANT, node=b, cpu="100m", labels=MEMORY_BOUND, annotations=PERF))
    _running(kube_api, TENANT, sneaky)
    # 600 W against a 100 W budget: the shed is more than one node's caps can give, so it reaches both.
    _honest_power(prometheus, [a, b])
    _controller(kube_api, suite, prometheus.url, budget_w=100.0, trusted=(TEAM,))[0].tick()
    assert _cpu_cap(kube_api, b) < 100
    assert twin_raw(kube_api, b)["spec"]["profile"] == "eco"
    # Control: the same Pod, its namespace trusted by the operator, takes its node out of the shed.
    _controller(kube_api, suite, prometheus.url, budget_w=100.0, trusted=(TEAM, TENANT))[0].tick()
    assert _cpu_cap(kube_api, b) == 100
    assert twin_raw(kube_api, b)["spec"]["profile"] == "performance"


def test_a_pending_pod_that_cannot_land_or_is_not_ours_releases_nothing(
    kube_api: k8s.ApiClient,
    kwok: ManagedProcess,
    scheduler: ManagedProcess,
    suite: str,
    namespaces: None,
) -> None:
    nodes = _nodes(kube_api, suite, ("pend-a", "pend-b", "pend-c"))
    for node in nodes:
        name = f"stream-{node}"
        _create(kube_api, TEAM, _pod(name, TEAM, node=node, cpu="26", labels=MEMORY_BOUND))
        _running(kube_api, TEAM, name)
    ctl, clock = _controller(kube_api, suite, "", budget_w=0.0, trusted=(TEAM,))
    ctl.tick()
    # One node of the family is kept performance; filled up, so a performance Pod fits on no
    # performance node. The other two are eco, their memory-bound work capped within its budget.
    kept = [n for n in nodes if twin_raw(kube_api, n)["spec"]["profile"] == "performance"]
    assert len(kept) == 1, kept
    _create(kube_api, TEAM, _pod(f"filler-{suite}", TEAM, node=kept[0], cpu="6"))
    _running(kube_api, TEAM, f"filler-{suite}")
    eco = [n for n in nodes if n not in kept]
    clock.advance(10)
    ctl.tick()
    capped = {n: _cpu_cap(kube_api, n) for n in eco}
    assert all(c < 100 for c in capped.values()), capped
    wants_perf = {"joulie.io/power-profile": "performance"}
    impossible, foreign = f"impossible-{suite}", f"foreign-{suite}"
    nowhere = {**wants_perf, "tenant.example/zone": "nowhere"}  # the live probe's impossible nodeSelector
    _create(kube_api, TEAM, _pod(impossible, TEAM, cpu="4", annotations=PERF, selector=nowhere))
    _create(
        kube_api, TEAM, _pod(foreign, TEAM, cpu="4", annotations=PERF, selector=wants_perf, scheduler="bogus-scheduler")
    )
    _unschedulable(kube_api, TEAM, impossible)
    for _ in range(3):
        clock.advance(10)
        ctl.tick()
        assert {n: _cpu_cap(kube_api, n) for n in eco} == capped
        assert all(twin_raw(kube_api, n)["spec"]["profile"] == "eco" for n in eco)
    # Control: a Pod that fits a capped node once released, and that the scheduler gave up on, releases one.
    fits = f"fits-{suite}"
    _create(kube_api, TEAM, _pod(fits, TEAM, cpu="4", annotations=PERF, selector=wants_perf))
    _unschedulable(kube_api, TEAM, fits)
    clock.advance(10)
    ctl.tick()
    released = [n for n in eco if twin_raw(kube_api, n)["spec"]["profile"] == "performance"]
    assert len(released) == 1 and _cpu_cap(kube_api, released[0]) == 100
