"""The controller against a real kube-apiserver (with the Joulie CRDs) and KWOK nodes and pods.

Each test labels its own nodes and uses that label as NODE_SELECTOR, so tests sharing the session's
control plane do not see each other's nodes.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from joulie_api.backoff import Backoff
from joulie_api.generated.nodetwin import ControlStatus, CPUControlStatus, NodeTwinStatus
from joulie_api.kube import NODE_TWIN, JoulieClient, KubeWriteError
from joulie_api.names import FIELD_MANAGER_AGENT, FIELD_MANAGER_CONTROLLER_MANAGER, GROUP, PLURAL_NODE_TWIN, VERSION
from joulie_common.clock import FakeClock
from joulie_controller.controller import Controller
from joulie_controller.kube.kube import ControllerKube
from joulie_controller.kube.leader import LeaderElector
from joulie_controller.settings import (
    LeaderSettings,
    NodeSettings,
    PolicySettings,
    PrometheusSettings,
    ReconcileSettings,
    Settings,
    SuspendSettings,
)
from joulie_controller.telemetry.prometheus import PowerReader
from joulie_localcluster.kwok import KWOK_TAINT_KEY
from joulie_localcluster.nodes import create_node
from joulie_localcluster.procs import ManagedProcess
from joulie_testinfra.waiting import eventually

pytest_plugins = ["joulie_testinfra.fixtures"]

PROFILE = "joulie.io/power-profile"
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)



def fake_clock() -> FakeClock:
    return FakeClock(t=0.0, start=T0)


@pytest.fixture
def suite(kube_api: k8s.ApiClient) -> Iterator[str]:
    """A label value that marks this test's nodes; the nodes and twins are deleted afterwards."""
    tag = uuid.uuid4().hex[:8]
    yield tag
    core = k8s.CoreV1Api(kube_api)
    custom = k8s.CustomObjectsApi(kube_api)
    for name in suite_nodes(core, tag):
        core.delete_node(name)
        try:
            custom.delete_cluster_custom_object(GROUP, VERSION, PLURAL_NODE_TWIN, name)
        except ApiException as exc:
            if exc.status != 404:  # a test may leave a node without a twin on purpose
                raise


def suite_nodes(core: k8s.CoreV1Api, tag: str) -> list[str]:
    return [n.metadata.name for n in core.list_node(label_selector=f"test.joulie.io/suite={tag}").items
            if n.metadata and n.metadata.name]


def node_meta(core: k8s.CoreV1Api, name: str) -> k8s.V1ObjectMeta:
    meta = core.read_node(name).metadata
    assert meta is not None
    return meta


def make_node(core: k8s.CoreV1Api, name: str, tag: str, kwok: bool = False,
              labels: dict[str, str] | None = None) -> None:
    create_node(core, name, {"test.joulie.io/suite": tag, "joulie.io/hw.cpu-model": "epyc", **(labels or {})},
                {"cpu": "32", "memory": "64Gi", "pods": "110"}, kwok=kwok)


def controller(api: k8s.ApiClient, tag: str, clock: FakeClock, elector: LeaderElector | None = None,
               **overrides: Any) -> Controller:
    s = Settings(nodes=NodeSettings(selector=f"test.joulie.io/suite={tag}"),
                 prometheus=PrometheusSettings(url=""),
                 **overrides)
    shell = ControllerKube(api, JoulieClient(api, FIELD_MANAGER_CONTROLLER_MANAGER, Backoff(delays_s=(0.1, 0.2))))
    return Controller(s, shell, PowerReader(s), elector=elector, clock=clock)


def twin_raw(api: k8s.ApiClient, name: str) -> dict[str, Any]:
    obj = k8s.CustomObjectsApi(api).get_cluster_custom_object(GROUP, VERSION, PLURAL_NODE_TWIN, name)
    assert isinstance(obj, dict)
    return obj


def fields_of(obj: dict[str, Any], manager: str) -> list[dict[str, Any]]:
    return [m for m in obj["metadata"].get("managedFields", []) if m["manager"] == manager]


def test_managed_fields_show_controller_and_agent_apart(kube_api: k8s.ApiClient, suite: str) -> None:
    core = k8s.CoreV1Api(kube_api)
    make_node(core, f"own-{suite}", suite)
    clock = fake_clock()
    ctl = controller(kube_api, suite, clock)
    assert ctl.tick().writes == 3  # spec, label, status
    agent = JoulieClient(kube_api, FIELD_MANAGER_AGENT)
    agent.apply_status(NODE_TWIN, f"own-{suite}", NodeTwinStatus(control_status=ControlStatus(
        cpu=CPUControlStatus(backend="rapl", result="applied", updated_at=T0))))
    clock.advance(600)  # force a status refresh: the controller's apply must not take controlStatus away
    assert ctl.tick().writes == 1

    obj = twin_raw(kube_api, f"own-{suite}")
    assert obj["status"]["controlStatus"]["cpu"]["result"] == "applied"
    assert obj["status"]["schedulableClass"] == "performance"
    ctl_fields = fields_of(obj, FIELD_MANAGER_CONTROLLER_MANAGER)
    agent_fields = fields_of(obj, FIELD_MANAGER_AGENT)
    ctl_status = next(m for m in ctl_fields if m.get("subresource") == "status")["fieldsV1"]["f:status"]
    assert {"f:schedulableClass", "f:powerMeasurement", "f:predictedPowerHeadroomScore", "f:effectiveCapState",
            "f:lastUpdated"} <= set(ctl_status)
    assert "f:controlStatus" not in ctl_status
    assert any("f:spec" in m["fieldsV1"] for m in ctl_fields)
    assert [m.get("subresource") for m in agent_fields] == ["status"]
    assert set(agent_fields[0]["fieldsV1"]["f:status"]) == {"f:controlStatus"}
    assert (node_meta(core, f"own-{suite}").labels or {})[PROFILE] == "performance"


def test_idle_node_twin_is_not_rewritten_across_ten_ticks(kube_api: k8s.ApiClient, suite: str) -> None:
    core = k8s.CoreV1Api(kube_api)
    for i in range(3):
        make_node(core, f"idle-{i}-{suite}", suite)
    clock = fake_clock()
    ctl = controller(kube_api, suite, clock, policy=PolicySettings(static_hp_frac=0.5))
    assert ctl.tick().writes == 9
    before = {i: twin_raw(kube_api, f"idle-{i}-{suite}")["metadata"]["resourceVersion"] for i in range(3)}
    node_rv = node_meta(core, f"idle-0-{suite}").resource_version
    for _ in range(10):
        clock.advance(5)  # 50 s in all: inside the 90-120 s status refresh period
        assert ctl.tick().writes == 0
    after = {i: twin_raw(kube_api, f"idle-{i}-{suite}")["metadata"]["resourceVersion"] for i in range(3)}
    assert after == before
    assert node_meta(core, f"idle-0-{suite}").resource_version == node_rv
    # Past STATUS_REFRESH_INTERVAL the status (lastUpdated only) is refreshed; spec and labels are not.
    clock.advance(120)
    assert ctl.tick().writes == 3
    obj = twin_raw(kube_api, f"idle-0-{suite}")
    assert obj["status"]["lastUpdated"] == "2026-03-01T12:02:50Z"
    assert obj["metadata"]["generation"] == 1  # spec untouched


def test_downgrade_guard_holds_while_a_performance_pod_runs(
    kube_api: k8s.ApiClient, kwok: ManagedProcess, suite: str
) -> None:
    core = k8s.CoreV1Api(kube_api)
    keep, drain = f"guard-a-{suite}", f"guard-b-{suite}"
    make_node(core, keep, suite, kwok=True)
    make_node(core, drain, suite, kwok=True)
    clock = fake_clock()
    controller(kube_api, suite, clock, policy=PolicySettings(static_hp_frac=1.0)).tick()
    pod_name = f"trainer-{suite}"
    pod = k8s.V1Pod.from_dict({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": pod_name},
        "spec": {"nodeName": drain, "nodeSelector": {PROFILE: "performance"},
                 "containers": [{"name": "c", "image": "fake"}],
                 "tolerations": [{"key": KWOK_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}]}})
    assert pod is not None
    core.create_namespaced_pod("default", pod)

    def running() -> bool:
        status = core.read_namespaced_pod(pod_name, "default").status
        return status is not None and status.phase == "Running"

    eventually(running, what="pod Running")

    # floor: one performance node (the first)
    eco = controller(kube_api, suite, clock, policy=PolicySettings(static_hp_frac=0.0))
    for _ in range(3):
        clock.advance(10)
        eco.tick()
        obj = twin_raw(kube_api, drain)
        assert obj["spec"]["profile"] == "eco" and obj["spec"]["scheduling"]["draining"] is True
        assert obj["spec"]["cpu"] == {"packagePowerCapPctOfMax": 100}  # performance caps while draining
        assert obj["status"]["schedulableClass"] == "draining"
        assert (node_meta(core, drain).labels or {})[PROFILE] == "eco"
    assert twin_raw(kube_api, keep)["spec"]["profile"] == "performance"
    deferred = eco.metrics.registry.get_sample_value("joulie_policy_state_transitions_total", {
        "node": drain, "from_state": "ActivePerformance", "to_state": "ActiveEco", "result": "deferred"})
    assert deferred == 1  # counted once, not once per tick

    core.delete_namespaced_pod(pod_name, "default", grace_period_seconds=0)
    eventually(lambda: not [p for p in core.list_namespaced_pod("default").items
                            if p.metadata and p.metadata.name == pod_name], what="pod deleted")
    clock.advance(10)
    eco.tick()
    obj = twin_raw(kube_api, drain)
    assert obj["spec"]["scheduling"]["draining"] is False
    assert obj["spec"]["cpu"] == {"packagePowerCapPctOfMax": 60}
    assert obj["status"]["schedulableClass"] == "eco"


def test_two_replicas_one_writer(kube_api: k8s.ApiClient, suite: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    core = k8s.CoreV1Api(kube_api)
    make_node(core, f"ha-{suite}", suite)
    clock = fake_clock()
    lease = f"joulie-cm-{suite}"
    a = controller(kube_api, suite, clock, LeaderElector(kube_api, "default", lease, "replica-a", 15, clock))
    b = controller(kube_api, suite, clock, LeaderElector(kube_api, "default", lease, "replica-b", 15, clock))
    first_a, first_b = a.tick(), b.tick()
    assert (first_a.leader, first_b.leader) == (True, False)
    assert first_a.writes == 3 and first_b.writes == 0
    for _ in range(5):
        clock.advance(5)
        assert [a.tick().leader, b.tick().leader] == [True, False]
    # Replica a dies without releasing: b waits out the lease duration, then takes over.
    clock.advance(10)
    assert not b.tick().leader
    clock.advance(6)
    assert b.tick().leader
    assert not a.tick().leader  # a came back: it must not write now
    lease_spec = k8s.CoordinationV1Api(kube_api).read_namespaced_lease(lease, "default").spec
    assert lease_spec is not None
    assert lease_spec.holder_identity == "replica-b" and lease_spec.lease_transitions == 1
    # A clean shutdown hands the lease over at once.
    assert b.elector is not None
    b.elector.release()
    assert a.tick().leader


class FailingForNode(JoulieClient):
    """The real client, except that applying one node's spec is refused by the 'server'."""

    def __init__(self, api: k8s.ApiClient, bad_object: str):
        super().__init__(api, FIELD_MANAGER_CONTROLLER_MANAGER, Backoff(delays_s=()))
        self.bad_object = bad_object

    def apply(self, resource: Any, name: str, obj: Any, *, force: bool = True) -> Any:
        if name == self.bad_object:
            raise KubeWriteError("apply", resource.kind, name, self.field_manager, 422, "spec.profile: Unsupported")
        return super().apply(resource, name, obj, force=force)


def test_a_failed_write_is_reported_and_other_nodes_still_written(
    kube_api: k8s.ApiClient, suite: str, caplog: pytest.LogCaptureFixture
) -> None:
    core = k8s.CoreV1Api(kube_api)
    good, bad = f"w-good-{suite}", f"w-bad-{suite}"
    make_node(core, good, suite)
    make_node(core, bad, suite)
    ctl = controller(kube_api, suite, fake_clock(), policy=PolicySettings(static_hp_frac=1.0))
    ctl.kube = ControllerKube(kube_api, FailingForNode(kube_api, bad))
    summary = ctl.tick()
    assert summary.failures == 1 and summary.writes == 3
    assert twin_raw(kube_api, good)["spec"]["profile"] == "performance"
    assert PROFILE not in (node_meta(core, bad).labels or {})  # label and status wait for the spec
    assert any(bad in r.getMessage() and "write failed" in r.getMessage() for r in caplog.records)
    assert ctl.metrics.registry.get_sample_value("joulie_policy_write_failures_total") == 1


class CountingInFlight(JoulieClient):
    """The real client, counting how many applies are in flight at once."""

    def __init__(self, api: k8s.ApiClient):
        super().__init__(api, FIELD_MANAGER_CONTROLLER_MANAGER, Backoff(delays_s=(0.1, 0.2)))
        self.lock = threading.Lock()
        self.in_flight = self.peak = 0

    def _counted(self, call: Callable[[], Any]) -> Any:
        with self.lock:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        try:
            time.sleep(0.02)  # a round trip to a busy API server
            return call()
        finally:
            with self.lock:
                self.in_flight -= 1

    def apply(self, resource: Any, name: str, obj: Any, *, force: bool = True) -> Any:
        return self._counted(lambda: super(CountingInFlight, self).apply(resource, name, obj, force=force))

    def apply_status(self, resource: Any, name: str, status: Any, *, force: bool = True) -> Any:
        return self._counted(lambda: super(CountingInFlight, self).apply_status(resource, name, status, force=force))


def test_nodes_are_written_in_parallel_each_in_order(kube_api: k8s.ApiClient, suite: str) -> None:
    core = k8s.CoreV1Api(kube_api)
    names = [f"par-{i:02d}-{suite}" for i in range(24)]
    for name in names:
        make_node(core, name, suite)
    ctl = controller(kube_api, suite, fake_clock(), policy=PolicySettings(static_hp_frac=0.5))
    client = CountingInFlight(kube_api)
    ctl.kube = ControllerKube(kube_api, client, write_concurrency=6)
    summary = ctl.tick()
    # Each node's status apply needs the twin its spec apply created: a node written out of order fails.
    assert (summary.failures, summary.writes) == (0, 72)
    assert 1 < client.peak <= 6
    for name in names:
        twin = twin_raw(kube_api, name)
        assert twin["spec"]["profile"] in ("performance", "eco") and twin["status"]["lastUpdated"]


def test_run_loop_stops_on_request_and_hands_the_lease_back(kube_api: k8s.ApiClient, suite: str) -> None:
    make_node(k8s.CoreV1Api(kube_api), f"loop-{suite}", suite)
    lease = f"joulie-loop-{suite}"
    ctl = controller(kube_api, suite, fake_clock(), LeaderElector(kube_api, "default", lease, "replica-a", 15),
                     reconcile=ReconcileSettings(interval_s=0.2))
    stop = threading.Event()
    thread = threading.Thread(target=ctl.run, args=(stop,))
    thread.start()
    try:
        eventually(lambda: ctl.metrics.registry.get_sample_value("joulie_policy_writes_total") == 3,
                   what="first tick written")
    finally:
        stop.set()
        thread.join(timeout=10)
    assert not thread.is_alive()
    spec = k8s.CoordinationV1Api(kube_api).read_namespaced_lease(lease, "default").spec
    assert spec is not None and not spec.holder_identity


def test_lease_is_renewed_between_ticks_longer_than_the_lease(kube_api: k8s.ApiClient, suite: str) -> None:
    make_node(k8s.CoreV1Api(kube_api), f"renew-{suite}", suite)
    lease = f"joulie-renew-{suite}"
    a = controller(kube_api, suite, fake_clock(), LeaderElector(kube_api, "default", lease, "replica-a", 2),
                   reconcile=ReconcileSettings(interval_s=60), leader=LeaderSettings(lease_duration_s=2))
    b = controller(kube_api, suite, fake_clock(), LeaderElector(kube_api, "default", lease, "replica-b", 2),
                   leader=LeaderSettings(lease_duration_s=2))
    stop = threading.Event()
    thread = threading.Thread(target=a.run, args=(stop,))
    thread.start()
    try:
        eventually(lambda: a.elector is not None and a.elector.is_leader, what="replica a leads")
        time.sleep(3.5)  # longer than the 2 s lease, much shorter than a's 60 s reconcile interval
        assert not b.tick().leader
    finally:
        stop.set()
        thread.join(timeout=10)
    assert b.tick().leader  # a released the lease on the way out


def test_crd_schema_accepts_what_the_controller_writes_and_rejects_garbage(kube_api: k8s.ApiClient,
                                                                           suite: str) -> None:
    core = k8s.CoreV1Api(kube_api)
    name = f"schema-{suite}"
    make_node(core, name, suite)
    controller(kube_api, suite, fake_clock()).tick()
    client = JoulieClient(kube_api, FIELD_MANAGER_CONTROLLER_MANAGER, Backoff(delays_s=()))
    for source in ("kepler", "utilization", "static", "http", "http-error", "http-no-endpoint", "prometheus",
                   "prometheus-no-data"):
        client.apply_status(NODE_TWIN, name, {"powerMeasurement": {"source": source}})
        assert twin_raw(kube_api, name)["status"]["powerMeasurement"]["source"] == source
    for body, field in (({"spec": {"nodeName": name, "profile": "turbo"}}, "spec.profile"),
                        ({"spec": {"nodeName": name, "profile": "eco", "cpu": {"packagePowerCapPctOfMax": 0}}},
                         "spec.cpu.packagePowerCapPctOfMax")):
        with pytest.raises(KubeWriteError, match=field.replace(".", r"\.")):
            client.apply(NODE_TWIN, name, body)
    with pytest.raises(KubeWriteError, match="predictedCoolingStressScore"):
        client.apply_status(NODE_TWIN, name, {"predictedCoolingStressScore": 140})


def test_power_policy_cordons_taints_powers_off_and_back_through_the_api_server(
    kube_api: k8s.ApiClient, kwok: ManagedProcess, suite: str
) -> None:
    """idle_suspend_v1 end to end against the real API server (the CRD takes spec.power and
    status.power; the cordon keeps KWOK's own taint), with an in-memory BMC per node."""
    from joulie_controller.power.powerdriver import InMemoryPowerDriver

    core = k8s.CoreV1Api(kube_api)
    idle, busy = f"pw-a-{suite}", f"pw-b-{suite}"
    make_node(core, idle, suite, kwok=True)
    make_node(core, busy, suite, kwok=True)
    toleration = {"key": KWOK_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}
    job = k8s.V1Pod.from_dict({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"job-{suite}"},
        "spec": {"nodeName": busy, "containers": [{"name": "c", "image": "fake",
                                                   "resources": {"requests": {"cpu": "30"}}}],
                 "tolerations": [toleration]}})
    waiting = k8s.V1Pod.from_dict({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"waiting-{suite}"},
        "spec": {"nodeSelector": {"test.joulie.io/suite": suite},
                 "containers": [{"name": "c", "image": "fake", "resources": {"requests": {"cpu": "8"}}}],
                 "tolerations": [toleration]}})
    assert job is not None and waiting is not None
    core.create_namespaced_pod("default", job)
    eventually(lambda: (core.read_namespaced_pod(f"job-{suite}", "default").status or k8s.V1PodStatus()).phase
               == "Running", what="pod Running")
    eventually(lambda: all(any(c.type == "Ready" and c.status == "True" for c in
                               (core.read_node(n).status or k8s.V1NodeStatus()).conditions or [])
                           for n in (idle, busy)), what="KWOK nodes Ready")
    driver = InMemoryPowerDriver({idle: "on", busy: "on"})
    s = Settings(nodes=NodeSettings(selector=f"test.joulie.io/suite={suite}"),
                 prometheus=PrometheusSettings(url=""),
                 suspend=SuspendSettings(power_policy="idle_suspend_v1", after_s=600))
    shell = ControllerKube(kube_api, JoulieClient(kube_api, FIELD_MANAGER_CONTROLLER_MANAGER, Backoff(delays_s=(0.1,))))
    clock = fake_clock()
    ctl = Controller(s, shell, PowerReader(s), clock=clock, power_driver=driver)

    def power(node: str) -> dict[str, Any]:
        return dict(twin_raw(kube_api, node)["status"]["power"])

    try:
        assert ctl.tick().failures == 0
        assert power(idle)["state"] == "on" and twin_raw(kube_api, idle)["spec"]["power"] == {"state": "on"}
        clock.advance(600)
        assert ctl.tick().failures == 0
        spec = core.read_node(idle).spec
        assert spec is not None and spec.unschedulable
        assert sorted(t.key for t in spec.taints or []) == sorted([KWOK_TAINT_KEY, "joulie.io/suspended"])
        assert power(idle)["state"] == "suspending" and "no workload Pods for 10m" in power(idle)["reason"]
        assert not (core.read_node(busy).spec or k8s.V1NodeSpec()).unschedulable
        clock.advance(60)
        ctl.tick()
        assert driver.calls == [(idle, "off")] and twin_raw(kube_api, idle)["spec"]["power"] == {"state": "off"}
        clock.advance(60)
        ctl.tick()
        assert power(idle)["state"] == "off"

        core.create_namespaced_pod("default", waiting)  # 8 cores: fits only the idle node (busy has 2 left)
        # What kube-scheduler writes when no powered node fits (this test runs none): only a Pod the
        # scheduler gave up on may wake a node (issue 36).
        core.patch_namespaced_pod_status(f"waiting-{suite}", "default", {"status": {"conditions": [{
            "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
            "message": "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) were unschedulable."}]}})
        clock.advance(60)
        ctl.tick()
        assert driver.calls[-1] == (idle, "on") and power(idle)["state"] == "resuming"
        clock.advance(60)
        ctl.tick()
        spec = core.read_node(idle).spec
        assert spec is not None and not spec.unschedulable and [t.key for t in spec.taints or []] == [KWOK_TAINT_KEY]
        assert (power(idle)["state"], power(idle)["boots"]) == ("on", 1)
    finally:
        for name in (f"job-{suite}", f"waiting-{suite}"):
            try:
                core.delete_namespaced_pod(name, "default", grace_period_seconds=0)
            except ApiException as exc:
                if exc.status != 404:
                    raise
