"""Live energy receipts on a real kube-apiserver and a real Prometheus 3: a node's meters pushed over
OTLP, two Pods running on it, the controller closing receipt windows. Each Pod is annotated with its
receipt, the receipts and the unallocated rest add up to the node meter, and a finished Pod gets its final
receipt and one Event."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes import client as k8s
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource

from joulie_api.backoff import Backoff
from joulie_api.kube import JoulieClient
from joulie_api.names import ANNOTATION_ENERGY_RECEIPT, FIELD_MANAGER_CONTROLLER_MANAGER
from joulie_api.receipt import parse_annotation
from joulie_common.clock import SYSTEM_CLOCK
from joulie_controller.controller import Controller
from joulie_controller.kube.kube import ControllerKube
from joulie_controller.kube_cluster_test import make_node, suite  # noqa: F401 (the fixture)
from joulie_controller.settings import NodeSettings, PrometheusSettings, ReconcileSettings, Settings
from joulie_controller.telemetry.prometheus import PowerReader, ReceiptReader
from joulie_localcluster.prometheus import Prometheus
from joulie_telemetry.vocabulary import NODE_ENERGY_UNALLOCATED, POD_ENERGY

pytest_plugins = ["joulie_testinfra.fixtures"]

HOST_W, CPU_W = 400.0, 150.0


@pytest.fixture
def meters(prometheus: Prometheus, suite: str) -> Iterator[str]:  # noqa: F811
    """A node whose host meter (400 W) and CPU package (150 W) are pushed every second while the test runs."""
    node = f"rcpt-{suite}"
    start = time.time()

    def counter(watts: float) -> Any:
        def cb(_: CallbackOptions) -> list[Observation]:
            attrs = {} if watts == HOST_W else {"hw.type": "cpu", "hw.id": "package-0"}
            return [Observation(1000.0 + watts * (time.time() - start), attrs)]

        return cb

    reader = PeriodicExportingMetricReader(OTLPMetricExporter(endpoint=prometheus.otlp_metrics_url, timeout=5),
                                           export_interval_millis=1000)
    provider = MeterProvider(resource=Resource.create({"service.name": "joulie-sim", "service.instance.id": node,
                                                       "k8s.node.name": node, "host.name": node}),
                             metric_readers=[reader])
    meter = provider.get_meter("joulie-test")
    meter.create_observable_counter("hw.host.energy", callbacks=[counter(HOST_W)], unit="J")
    meter.create_observable_counter("hw.energy", callbacks=[counter(CPU_W)], unit="J")
    yield node
    provider.shutdown()


def _run_pod(core: k8s.CoreV1Api, ns: str, name: str, node: str, cpu: str) -> None:
    core.create_namespaced_pod(ns, k8s.V1Pod(
        metadata=k8s.V1ObjectMeta(name=name),
        spec=k8s.V1PodSpec(node_name=node, containers=[k8s.V1Container(
            name="main", image="busybox", resources=k8s.V1ResourceRequirements(requests={"cpu": cpu}))])))
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    core.patch_namespaced_pod_status(name, ns, {"status": {"phase": "Running", "startTime": stamp}})


def _receipt(core: k8s.CoreV1Api, ns: str, name: str) -> Any:
    pod = core.read_namespaced_pod(name, ns)
    assert pod.metadata is not None
    text = (pod.metadata.annotations or {}).get(ANNOTATION_ENERGY_RECEIPT)
    return parse_annotation(text) if text else None


def test_running_pods_get_receipts_that_add_up_and_a_finished_one_its_last(
    kube_api: k8s.ApiClient, prometheus: Prometheus, meters: str, suite: str  # noqa: F811
) -> None:
    core = k8s.CoreV1Api(kube_api)
    node, ns = meters, "default"
    make_node(core, node, suite)
    a, b = f"a-{suite}", f"b-{suite}"
    _run_pod(core, ns, a, node, "8")
    _run_pod(core, ns, b, node, "8")
    settings = Settings(nodes=NodeSettings(selector=f"test.joulie.io/suite={suite}"),
                        prometheus=PrometheusSettings(url=prometheus.url, rate_window="30s"),
                        reconcile=ReconcileSettings(receipt_window_s=10))
    shell = ControllerKube(kube_api, JoulieClient(kube_api, FIELD_MANAGER_CONTROLLER_MANAGER,
                                                  Backoff(delays_s=(0.1, 0.2))))
    ctl = Controller(settings, shell, PowerReader(settings), clock=SYSTEM_CLOCK, receipts=ReceiptReader(settings))
    try:
        time.sleep(3)  # a few samples in before the window opens
        ctl.tick()  # opens the window
        assert _receipt(core, ns, a) is None
        time.sleep(11)
        ctl.tick()
        ra, rb = _receipt(core, ns, a), _receipt(core, ns, b)
        assert ra is not None and rb is not None, "no receipt annotation after a window"
        assert (ra.state, ra.node) == ("running", node) and ra.held_s == pytest.approx(rb.held_s, abs=0.5)
        assert ra.total_j > 0 and ra.total_j == pytest.approx(rb.total_j, rel=1e-3)  # same requests, same node
        get = ctl.metrics.registry.get_sample_value
        billed = sum(get(POD_ENERGY.prometheus_name(), {"k8s_namespace_name": ns, "k8s_pod_name": p,
                                                        "k8s_node_name": node, "joulie_energy_device": d}) or 0.0
                     for p in (a, b) for d in ("gpu", "cpu_busy", "cpu_idle", "platform"))
        unallocated = get(NODE_ENERGY_UNALLOCATED.prometheus_name(), {"k8s_node_name": node}) or 0.0
        metered = ctl.book.ledger.metered_j[node]
        # The node meter over the window, as Prometheus' increase() has it: about 400 W for ~11 s.
        assert metered == pytest.approx(HOST_W * (ra.held_s), rel=0.2)
        assert billed + unallocated == pytest.approx(metered, rel=1e-9)
        assert billed == pytest.approx(ra.total_j + rb.total_j, rel=1e-3)

        # b finishes inside the next window (finishedAt has whole seconds: 2 s after the close, so it is not
        # before it); that window gives it its final receipt and an Event, a keeps running.
        time.sleep(2)
        end = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        core.patch_namespaced_pod_status(b, ns, {"status": {"phase": "Succeeded", "containerStatuses": [{
            "name": "main", "image": "busybox", "imageID": "", "ready": False, "restartCount": 0,
            "state": {"terminated": {"exitCode": 0, "finishedAt": end}}}]}})
        time.sleep(9)
        ctl.tick()
        fa, fb = _receipt(core, ns, a), _receipt(core, ns, b)
        assert fb.state == "finished" and fb.total_j > rb.total_j
        assert fb.held_s < fa.held_s - 5  # it stopped being billed at its finish
        assert fa.state == "running" and fa.total_j > ra.total_j
        events = core.list_namespaced_event(ns, field_selector=f"involvedObject.name={b}").items
        assert [e.reason for e in events] == ["EnergyReceipt"]
        assert "kWh" in (events[0].message or "")
        # Nothing changed for b since: no second Event.
        time.sleep(11)
        ctl.tick()
        assert len(core.list_namespaced_event(ns, field_selector=f"involvedObject.name={b}").items) == 1
    finally:
        for p in (a, b):
            core.delete_namespaced_pod(p, ns, grace_period_seconds=0)
