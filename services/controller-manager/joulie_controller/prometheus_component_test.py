"""Measured power from a real Prometheus 3 (OTLP receiver) into NodeTwin.status on a real API server."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client as k8s
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource

from joulie_api.generated.nodehardware import NodeHardware
from joulie_api.kube import NODE_HARDWARE, JoulieClient
from joulie_api.names import FIELD_MANAGER_AGENT
from joulie_controller.kube_cluster_test import controller, fake_clock, make_node, suite_nodes, twin_raw
from joulie_controller.settings import FacilitySettings, NodeSettings, PolicySettings, PrometheusSettings, Settings
from joulie_controller.telemetry.prometheus import FacilityReader, PowerReader
from joulie_localcluster.procs import ProcessGroup
from joulie_localcluster.prometheus import Prometheus, start_prometheus
from joulie_localcluster.prometheus import PrometheusSettings as ServerSettings
from joulie_localcluster.tools import Tools

pytest_plugins = ["joulie_testinfra.fixtures"]


def push(url: str, node: str, *, energy_step_j: float | None = None, power_w: float | None = None,
         pushes: int = 3, components_w: dict[str, float] | None = None) -> None:
    """Export hw.host.energy (a counter growing by energy_step_j per push) and/or hw.host.power for one node."""
    energy = {"j": 10_000.0}

    def observe_energy(_: CallbackOptions) -> list[Observation]:
        energy["j"] += energy_step_j or 0.0
        return [Observation(energy["j"])]

    def observe_power(_: CallbackOptions) -> list[Observation]:
        return [Observation(power_w if power_w is not None else 0.0)]

    reader = PeriodicExportingMetricReader(OTLPMetricExporter(endpoint=url, timeout=5), export_interval_millis=60_000)
    provider = MeterProvider(
        resource=Resource.create({"service.name": "joulie-sim", "service.instance.id": node,
                                  "k8s.node.name": node, "host.name": node}),
        metric_readers=[reader])
    meter = provider.get_meter("joulie-test")
    if energy_step_j is not None:
        meter.create_observable_counter("hw.host.energy", callbacks=[observe_energy], unit="J")
    if power_w is not None:
        meter.create_observable_gauge("hw.host.power", callbacks=[observe_power], unit="W")
    if components_w:
        points = [Observation(w, {"hw.type": kind, "hw.id": f"{kind}0"}) for kind, w in components_w.items()]
        meter.create_observable_gauge("hw.power", callbacks=[lambda _: points], unit="W")
    try:
        for _ in range(pushes):
            assert reader.force_flush(timeout_millis=5000)
            time.sleep(1.0)
    finally:
        provider.shutdown()


def wait_for(prom: Prometheus, promql: str, timeout_s: float = 20) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if prom.query(promql):
            return
        time.sleep(0.5)
    raise AssertionError(f"{promql} never returned data")


@pytest.fixture
def suite(kube_api: k8s.ApiClient) -> Iterator[str]:
    tag = uuid.uuid4().hex[:8]
    yield tag
    core = k8s.CoreV1Api(kube_api)
    for name in suite_nodes(core, tag):
        core.delete_node(name)


def test_measured_power_reaches_the_twin_and_garbage_is_rejected(
    kube_api: k8s.ApiClient, prometheus: Prometheus, suite: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    core = k8s.CoreV1Api(kube_api)
    counter_node, gauge_node, silent, negative, parts = (
        f"{p}-{suite}" for p in ("counter", "gauge", "silent", "neg", "parts"))
    for n in (counter_node, gauge_node, silent, negative, parts):
        make_node(core, n, suite)
    push(prometheus.otlp_metrics_url, parts, components_w={"cpu": 150.0, "gpu": 250.0}, pushes=1)
    push(prometheus.otlp_metrics_url, counter_node, energy_step_j=500.0)
    push(prometheus.otlp_metrics_url, gauge_node, power_w=420.0, pushes=1)
    push(prometheus.otlp_metrics_url, negative, power_w=-25.0, pushes=1)
    wait_for(prometheus, f'hw_host_energy_joules_total{{k8s_node_name="{counter_node}"}}')
    wait_for(prometheus, f'hw_host_power_watts{{k8s_node_name="{negative}"}}')
    wait_for(prometheus, f'hw_power_watts{{k8s_node_name="{parts}"}}')

    ctl = controller(kube_api, suite, fake_clock())
    ctl.settings = Settings(nodes=NodeSettings(selector=f"test.joulie.io/suite={suite}"),
                            prometheus=PrometheusSettings(url=prometheus.url, rate_window="1m"))
    ctl.power = PowerReader(ctl.settings)
    ctl.tick()

    def measurement(node: str) -> dict[str, float | str]:
        status = twin_raw(kube_api, node)["status"]
        pm = status["powerMeasurement"]
        assert isinstance(pm, dict)
        return pm

    counter = measurement(counter_node)
    assert counter["source"] == "prometheus"
    # rate() over a series only seconds long under-reads the 500 W pushed; the twin must carry
    # exactly what Prometheus answers for the documented query.
    direct = prometheus.query(f'sum by (k8s_node_name) (rate(hw_host_energy_joules_total{{k8s_node_name="{counter_node}"}}[1m]))')
    assert float(counter["measuredNodePowerW"]) == pytest.approx(float(direct[0]["value"][1]), abs=0.1)
    assert float(counter["measuredNodePowerW"]) > 0
    gauge = measurement(gauge_node)
    assert (gauge["source"], gauge["measuredNodePowerW"]) == ("prometheus", 420)
    # No host-scope metric: the sum of the node's component hw.power gauges.
    assert measurement(parts)["measuredNodePowerW"] == 400
    for node in (silent, negative):
        pm = measurement(node)
        assert pm["source"] == "prometheus-no-data" and "measuredNodePowerW" not in pm
        status = twin_raw(kube_api, node)["status"]
        assert (status["predictedPowerHeadroomScore"], status["predictedCoolingStressScore"]) == (50, 50)
    assert any(negative in r.getMessage() and "powerGauge" in r.getMessage() and "negative" in r.getMessage()
               for r in caplog.records)
    # NODE_POWER_SCOPE=host: component sums are not host power, so that node has no data.
    ctl.settings = Settings(nodes=NodeSettings(selector=f"test.joulie.io/suite={suite}"),
                            prometheus=PrometheusSettings(url=prometheus.url, rate_window="1m", power_scope="host"))
    ctl.power = PowerReader(ctl.settings)
    ctl.tick()
    assert measurement(parts)["source"] == "prometheus-no-data"


def test_prometheus_down_means_no_data_not_a_crash(kube_api: k8s.ApiClient, suite: str,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    core = k8s.CoreV1Api(kube_api)
    make_node(core, f"down-{suite}", suite)
    ctl = controller(kube_api, suite, fake_clock())
    ctl.settings = Settings(nodes=NodeSettings(selector=f"test.joulie.io/suite={suite}"),
                            prometheus=PrometheusSettings(url="http://127.0.0.1:9", timeout_s=1))
    ctl.power = PowerReader(ctl.settings)
    summary = ctl.tick()
    assert summary.leader and summary.failures == 0
    assert twin_raw(kube_api, f"down-{suite}")["status"]["powerMeasurement"]["source"] == "prometheus-no-data"
    assert any(r.getMessage().startswith("Prometheus (measured power; every node neutral meanwhile) failing")
               for r in caplog.records)


@pytest.mark.parametrize("utf8", [False, True], ids=["underscore", "utf8"])
def test_unpromoted_node_attribute_is_joined_from_target_info(
    test_tools: Tools, tmp_path: Path, kube_api: k8s.ApiClient, suite: str, utf8: bool
) -> None:
    # utf8: Prometheus keeps the dots, so the joined label is literally "k8s.node.name" (mode otel-labels-unpromoted).
    group = ProcessGroup()
    strategy, naming = ("NoUTF8EscapingWithSuffixes", "utf8-suffixes") if utf8 else ("UnderscoreEscapingWithSuffixes", "underscore-suffixes")
    prom = start_prometheus(test_tools, tmp_path / "prom-unpromoted", group,
                            ServerSettings(promote_resource_attributes=[], translation_strategy=strategy))
    try:
        node = f"unpromoted-{'utf8-' if utf8 else ''}{suite}"
        make_node(k8s.CoreV1Api(kube_api), node, suite)
        push(prom.otlp_metrics_url, node, power_w=333.0, pushes=1)
        label = '"k8s.node.name"' if utf8 else "k8s_node_name"
        wait_for(prom, f'target_info{{{label}="{node}"}}')
        power = '{"hw.host.power_watts"' if utf8 else "hw_host_power_watts{"
        assert not prom.query(f'{power}{", " if utf8 else ""}{label}="{node}"}}')  # really not promoted
        assert prom.query(f"{power}}}")  # but there, under this spelling
        for promoted, expected in ((True, "prometheus-no-data"), (False, "prometheus")):
            ctl = controller(kube_api, suite, fake_clock())
            ctl.settings = Settings(nodes=NodeSettings(selector=f"test.joulie.io/suite={suite}"),
                                    prometheus=PrometheusSettings(url=prom.url, node_attribute_promoted=promoted, metric_naming=naming))
            ctl.power = PowerReader(ctl.settings)
            ctl.tick()
            pm = twin_raw(kube_api, node)["status"]["powerMeasurement"]
            assert pm["source"] == expected
        assert pm["measuredNodePowerW"] == 333
    finally:
        group.stop_all()


def push_facility(url: str) -> None:
    reader = PeriodicExportingMetricReader(OTLPMetricExporter(endpoint=url, timeout=5), export_interval_millis=60_000)
    provider = MeterProvider(resource=Resource.create({"service.name": "joulie-facility",
                                                       "service.instance.id": "dc1"}), metric_readers=[reader])
    meter = provider.get_meter("joulie-test")

    def gauge(name: str, unit: str, points: list[tuple[float, dict[str, str]]]) -> None:
        def cb(_: CallbackOptions) -> list[Observation]:
            return [Observation(v, attrs) for v, attrs in points]
        meter.create_observable_gauge(name, callbacks=[cb], unit=unit)

    gauge("joulie.facility.ambient.temperature", "Cel", [(18.0, {})])
    gauge("joulie.facility.it.power", "W", [(40_000.0, {})])
    gauge("joulie.facility.cooling.power", "W", [(10_000.0, {})])
    gauge("joulie.cooling_zone.ambient.temperature", "Cel", [(45.0, {"joulie.cooling_zone": "hot-aisle"})])
    gauge("joulie.rack.power", "W", [(25_000.0, {"joulie.rack": "r7"})])
    try:
        assert reader.force_flush(timeout_millis=5000)
    finally:
        provider.shutdown()


def test_facility_readings_shape_the_twin(kube_api: k8s.ApiClient, prometheus: Prometheus, suite: str,
                                          caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    core = k8s.CoreV1Api(kube_api)
    hot, plain = f"hot-{suite}", f"plain-{suite}"
    make_node(core, hot, suite, labels={"joulie.io/cooling-zone": "hot-aisle", "joulie.io/rack": "r7"})
    make_node(core, plain, suite)
    for node in (hot, plain):
        push(prometheus.otlp_metrics_url, node, power_w=300.0, pushes=1)
    push_facility(prometheus.otlp_metrics_url)
    wait_for(prometheus, 'joulie_rack_power_watts{joulie_rack="r7"}')
    wait_for(prometheus, f'hw_host_power_watts{{k8s_node_name="{plain}"}}')
    # Each node's agent publishes 2 x 300 W sockets.
    agent = JoulieClient(kube_api, FIELD_MANAGER_AGENT)
    for node in (hot, plain):
        agent.apply(NODE_HARDWARE, node, NodeHardware.model_validate({"spec": {"nodeName": node}}))
        agent.apply_status(NODE_HARDWARE, node, {"cpu": {"model": "epyc", "sockets": 2,
                                                         "capRange": {"maxWattsPerSocket": 300}}})
    s = Settings(nodes=NodeSettings(selector=f"test.joulie.io/suite={suite}"),
                 prometheus=PrometheusSettings(url=prometheus.url),
                 facility=FacilitySettings(enabled=True),
                 policy=PolicySettings(static_hp_frac=1.0))
    ctl = controller(kube_api, suite, fake_clock())
    ctl.settings, ctl.power, ctl.facility_reader = s, PowerReader(s), FacilityReader(s)
    ctl.tick()

    hot_status = twin_raw(kube_api, hot)["status"]
    plain_status = twin_raw(kube_api, plain)["status"]
    assert hot_status["predictedCoolingStressScore"] == 100  # 300/600 W at the zone's 45 °C (x2)
    assert plain_status["predictedCoolingStressScore"] == pytest.approx(48.1, abs=0.05)  # 0.5 / 1.04 at 18 °C
    assert hot_status["predictedPsuStressScore"] == 50  # rack r7: 25 kW of 50 kW
    assert plain_status["predictedPsuStressScore"] == 80  # no rack: facility IT power 40 kW
    line = next(r.getMessage() for r in caplog.records if r.getMessage().startswith("[facility]"))
    assert "ambient=18.0" in line and "pue=1.250" in line
    get = ctl.metrics.registry.get_sample_value
    assert get("joulie_twin_facility_pue") == 1.25
    assert get("joulie_twin_facility_rack_power_watts", {"rack": "r7"}) == 25_000


def test_no_facility_lines_by_default(kube_api: k8s.ApiClient, suite: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    make_node(k8s.CoreV1Api(kube_api), f"nofac-{suite}", suite)
    controller(kube_api, suite, fake_clock()).tick()
    assert not [r for r in caplog.records if "[facility]" in r.getMessage()]
